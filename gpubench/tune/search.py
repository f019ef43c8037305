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
    """Evaluations per problem: a count, or a percentage of the problem's configurations."""

    count: int | None = None
    percent: float | None = None

    def for_problem(self, size: int) -> int:
        if self.percent is not None:
            return max(1, min(size, math.ceil(size * self.percent / 100 - 1e-9)))
        return min(size, self.count or 0)

    def __str__(self) -> str:
        return f"{self.percent:g}%" if self.percent is not None else str(self.count)


def parse_budget(text: str) -> Budget:
    """`25` (evaluations) or `10%` (of each problem's configurations)."""
    raw = text.strip()
    try:
        if raw.endswith("%"):
            percent = float(raw[:-1])
            if math.isfinite(percent) and 0 < percent <= 100:
                return Budget(percent=percent)
        else:
            count = int(raw)
            if count > 0:
                return Budget(count=count)
    except ValueError:
        pass
    raise ConfigError(
        f"expected a number of evaluations above 0 (25) or a percentage of the space in "
        f"(0, 100] (10%), got {text!r}",
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


def search(
    problem: Problem,
    evaluate: Callable[[Problem, int], Outcome],
    strategy: strategies.Strategy,
    evaluations: int,
    progress: Callable[[Run, Step], None] | None = None,
) -> Run:
    """`evaluations` configurations of the problem, as the strategy proposes them."""
    run = Run(problem)
    best_ms: float | None = None
    best_index: int | None = None
    for _ in range(evaluations):
        index = strategy.propose()
        outcome = evaluate(problem, index)
        strategy.learn(index, outcome.time_ms)
        if outcome.time_ms is not None and (best_ms is None or outcome.time_ms < best_ms):
            best_ms, best_index = outcome.time_ms, index
        step = Step(index, outcome, best_ms, best_index)
        run.steps.append(step)
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


def score(replay: Replay, strategy: str, budget: Budget, seeds: list[int]) -> list[ProblemScore]:
    """Each problem searched once per seed; the curves and the share of successes."""
    import numpy as np

    scores = []
    for problem in replay.space.problems:
        optimum = replay.optimum(problem)
        assert optimum is not None  # Replay refuses a problem without a valid point
        evaluations = budget.for_problem(len(problem.configurations))
        ratios = np.full((len(seeds), evaluations), np.inf)
        for row, seed in enumerate(seeds):
            made = strategies.make(strategy, problem, seed)
            run = search(problem, replay.evaluate, made, evaluations)
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
