"""The search loop: a strategy spends a budget of evaluations on one problem; and the score of
a strategy over many seeds against the exhaustive optimum a replay knows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from gpubench.errors import ConfigError
from gpubench.tune import strategies
from gpubench.tune.replay import Outcome, Replay
from gpubench.tune.space import Problem, Space

# A run counts as a success when its best is within this share of the exhaustive optimum.
WITHIN = 0.05


@dataclass(frozen=True)
class Budget:
    """What one problem's search may spend: evaluations (a count, or a percentage of its
    configurations), or seconds of wall time (live tuning only)."""

    count: int | None = None
    percent: float | None = None
    seconds: float | None = None

    def for_problem(self, size: int) -> int:
        """The most evaluations: the count or percentage, or every configuration where the
        budget is time."""
        if self.percent is not None:
            return max(1, min(size, math.ceil(size * self.percent / 100 - 1e-9)))
        if self.seconds is not None:
            return size
        return min(size, self.count or 0)

    def for_space(self, problems: list[Problem]) -> int:
        """The most evaluations over all the problems of a space."""
        return sum(self.for_problem(len(problem.configurations)) for problem in problems)

    def __str__(self) -> str:
        if self.percent is not None:
            return f"{self.percent:g}%"
        if self.seconds is not None:
            return f"{self.seconds:g}s"
        return str(self.count)


# A time budget's longest: a week, past which a typo is likelier than a plan.
MAX_BUDGET_S = 7 * 86_400.0


def parse_budget(text: str) -> Budget:
    """`25` (evaluations), `10%` (of each problem's configurations), or `90s` / `5m` (wall
    time per problem)."""
    raw = text.strip()
    try:
        if raw.endswith("%"):
            percent = float(raw[:-1])
            if math.isfinite(percent) and 0 < percent <= 100:
                return Budget(percent=percent)
        elif raw[-1:] in ("s", "m"):
            seconds = float(raw[:-1]) * (60 if raw.endswith("m") else 1)
            if math.isfinite(seconds) and 0 < seconds <= MAX_BUDGET_S:
                return Budget(seconds=seconds)
        else:
            count = int(raw)
            if count > 0:
                return Budget(count=count)
    except ValueError:
        pass
    raise ConfigError(
        f"expected a number of evaluations above 0 (25), a percentage of the space in "
        f"(0, 100] (10%) or a wall time per problem (90s, 5m), got {text!r}",
        source="command line",
        key="--budget",
    )


@dataclass
class Step:
    index: int
    outcome: Outcome
    # The least cost found so far, and its configuration (None before any valid one).
    best_cost: float | None
    best_index: int | None


@dataclass
class Run:
    problem: Problem
    steps: list[Step] = field(default_factory=list)

    def add(self, index: int, outcome: Outcome) -> Step:
        """The outcome of one more evaluation, the best so far updated."""
        best = self.best
        best_cost, best_index = (best.best_cost, best.best_index) if best else (None, None)
        if outcome.cost is not None and (best_cost is None or outcome.cost < best_cost):
            best_cost, best_index = outcome.cost, index
        step = Step(index, outcome, best_cost, best_index)
        self.steps.append(step)
        return step

    @property
    def best(self) -> Step | None:
        return self.steps[-1] if self.steps and self.steps[-1].best_index is not None else None

    def runner_up(self) -> Step | None:
        """The second-best valid configuration evaluated."""
        valid = sorted(
            (s for s in self.steps if s.outcome.cost is not None),
            key=lambda s: s.outcome.cost or 0.0,
        )
        return valid[1] if len(valid) > 1 else None


# Evaluates configurations of a problem, several at once (a round of live tuning), in order.
EvaluateMany = Callable[[Problem, list[int]], list[Outcome]]


def one_at_a_time(evaluate: Callable[[Problem, int], Outcome]) -> EvaluateMany:
    """An evaluator of one configuration as one of several."""
    return lambda problem, indices: [evaluate(problem, index) for index in indices]


@dataclass
class Search:
    """One problem's search: its strategy, its budget and what it has spent."""

    problem: Problem
    strategy: strategies.Strategy
    evaluations: int
    run: Run
    # A wall-time budget: no new batch once this problem's own batches took this long.
    seconds: float | None = None
    spent_s: float = 0.0

    @property
    def done(self) -> bool:
        out_of_time = self.seconds is not None and self.spent_s >= self.seconds
        return out_of_time or len(self.run.steps) >= self.evaluations

    def step(
        self,
        evaluate: EvaluateMany,
        batch: int,
        progress: Callable[[Run, Step], None] | None = None,
    ) -> None:
        """One batch: proposed whole, evaluated, then learnt from in order."""
        import time

        started = time.perf_counter()
        wanted = min(batch, self.evaluations - len(self.run.steps))
        indices = [self.strategy.propose() for _ in range(wanted)]
        outcomes = evaluate(self.problem, indices)
        for index, outcome in zip(indices, outcomes, strict=True):
            self.strategy.learn(index, outcome.learned)
            step = self.run.add(index, outcome)
            if progress is not None:
                progress(self.run, step)
        self.spent_s += time.perf_counter() - started


def interleave(
    searches: list[Search],
    evaluate: EvaluateMany,
    batch: int = 1,
    progress: Callable[[Run, Step], None] | None = None,
    stop: Callable[[], bool] = lambda: False,
) -> None:
    """Each unfinished search one batch in turn, problem after problem, until all are done
    (or `stop()`): the problems' strategies learn from each other's (a shared model) as the
    searches go, not only after one problem is over."""
    while True:
        pending = [one for one in searches if not one.done]
        if not pending:
            return
        for one in pending:
            if stop():
                return
            one.step(evaluate, batch, progress)


def search(
    problem: Problem,
    evaluate: EvaluateMany,
    strategy: strategies.Strategy,
    evaluations: int,
    progress: Callable[[Run, Step], None] | None = None,
    batch: int = 1,
    run: Run | None = None,
    out_of_time: Callable[[], bool] = lambda: False,
) -> Run:
    """Up to `evaluations` configurations of the problem (counting those `run` holds from an
    earlier, resumed search), as the strategy proposes them: `batch` at a time, each batch
    evaluated before the strategy learns its outcomes; no new batch once `out_of_time()`."""
    one = Search(problem, strategy, evaluations, run or Run(problem))
    interleave([one], evaluate, batch, progress, out_of_time)
    return one.run


@dataclass
class ProblemScore:
    label: str
    configurations: int
    optimum: float
    evaluations: int
    seeds: int
    # Per evaluation (1..evaluations): the median over seeds of best found / optimum (inf
    # where the median seed had found no valid configuration yet).
    median_ratio: list[float]
    # The share of seeds whose best at the budget is within WITHIN of the optimum.
    within: float


def score(
    replay: Replay, strategy: str, budget: Budget, seeds: list[int], batch: int = 1
) -> list[ProblemScore]:
    """The space searched once per seed, its problems in turn (`batch` proposals at a time,
    as live tuning does); each problem's curve and share of successes."""
    import numpy as np

    problems = replay.space.problems
    sizes = [budget.for_problem(len(problem.configurations)) for problem in problems]
    optima = [replay.optimum(problem) or math.inf for problem in problems]  # never None
    ratios = [np.full((len(seeds), evaluations), np.inf) for evaluations in sizes]
    for row, seed in enumerate(seeds):
        found = searches(replay.space, strategy, budget, seed)
        interleave(found, one_at_a_time(replay.evaluate), batch)
        for number, one in enumerate(found):
            for column, step in enumerate(one.run.steps):
                if step.best_cost is not None:
                    ratios[number][row, column] = step.best_cost / optima[number]
    scores = []
    for problem, evaluations, table, optimum in zip(problems, sizes, ratios, optima, strict=True):
        final = table[:, -1]
        scores.append(
            ProblemScore(
                label=problem.label,
                configurations=len(problem.configurations),
                optimum=optimum,
                evaluations=evaluations,
                seeds=len(seeds),
                median_ratio=[float(v) for v in np.median(table, axis=0)],
                within=float(np.mean(final <= 1 + WITHIN)),
            )
        )
    return scores


def searches(space: Space, strategy: str, budget: Budget, seed: int) -> list[Search]:
    """A fresh search of each problem of the space, their strategies made together."""
    sizes = [budget.for_problem(len(problem.configurations)) for problem in space.problems]
    made = strategies.make(strategy, space.problems, seed, budget.for_space(space.problems))
    return [
        Search(problem, one, size, Run(problem))
        for problem, one, size in zip(space.problems, made, sizes, strict=True)
    ]
