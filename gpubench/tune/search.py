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
from gpubench.tune.space import Problem

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
    # The best time found so far, and its configuration (None before any valid one).
    best_ms: float | None
    best_index: int | None


@dataclass
class Run:
    problem: Problem
    steps: list[Step] = field(default_factory=list)

    def add(self, index: int, outcome: Outcome) -> Step:
        """The outcome of one more evaluation, the best so far updated."""
        best = self.best
        best_ms, best_index = (best.best_ms, best.best_index) if best else (None, None)
        if outcome.time_ms is not None and (best_ms is None or outcome.time_ms < best_ms):
            best_ms, best_index = outcome.time_ms, index
        step = Step(index, outcome, best_ms, best_index)
        self.steps.append(step)
        return step

    @property
    def best(self) -> Step | None:
        return self.steps[-1] if self.steps and self.steps[-1].best_index is not None else None

    def runner_up(self) -> Step | None:
        """The second-best valid configuration evaluated."""
        valid = sorted(
            (s for s in self.steps if s.outcome.time_ms is not None),
            key=lambda s: s.outcome.time_ms or 0.0,
        )
        return valid[1] if len(valid) > 1 else None


# Evaluates configurations of a problem, several at once (a round of live tuning), in order.
EvaluateMany = Callable[[Problem, list[int]], list[Outcome]]


def one_at_a_time(evaluate: Callable[[Problem, int], Outcome]) -> EvaluateMany:
    """An evaluator of one configuration as one of several."""
    return lambda problem, indices: [evaluate(problem, index) for index in indices]


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
    run = run or Run(problem)
    while len(run.steps) < evaluations and not out_of_time():
        wanted = min(batch, evaluations - len(run.steps))
        indices = [strategy.propose() for _ in range(wanted)]
        outcomes = evaluate(problem, indices)
        for index, outcome in zip(indices, outcomes, strict=True):
            strategy.learn(index, outcome.learned_ms)
            step = run.add(index, outcome)
            if progress is not None:
                progress(run, step)
    return run


@dataclass
class ProblemScore:
    label: str
    configurations: int
    optimum_ms: float
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
    """Each problem searched once per seed (`batch` proposals at a time, as live tuning
    does); the curves and the share of successes."""
    import numpy as np

    scores = []
    for problem in replay.space.problems:
        optimum = replay.optimum(problem)
        assert optimum is not None  # Replay refuses a problem without a valid point
        evaluations = budget.for_problem(len(problem.configurations))
        ratios = np.full((len(seeds), evaluations), np.inf)
        for row, seed in enumerate(seeds):
            made = strategies.make(strategy, problem, seed)
            run = search(problem, one_at_a_time(replay.evaluate), made, evaluations, batch=batch)
            for column, step in enumerate(run.steps):
                if step.best_ms is not None:
                    ratios[row, column] = step.best_ms / optimum
        final = ratios[:, -1]
        scores.append(
            ProblemScore(
                label=problem.label,
                configurations=len(problem.configurations),
                optimum_ms=optimum,
                evaluations=evaluations,
                seeds=len(seeds),
                median_ratio=[float(v) for v in np.median(ratios, axis=0)],
                within=float(np.mean(final <= 1 + WITHIN)),
            )
        )
    return scores
