"""How the next configuration is chosen: built-in `exhaustive` and `random`, and Optuna's
samplers (`tpe`, the default; `cmaes`, `gp`, `qmc`) where Optuna is installed (the `tune`
extra). Every strategy proposes only configurations of the space not yet evaluated, and is
deterministic for a seed.

`tpe` learns across the problems of a space (gpubench.tune.shared_tpe): a configuration that
is fast at one size is likely fast at the next. The others search each problem on its own.

Optuna searches a box: each parameter is an integer position along its axis (the values in
order), so that CMA-ES, Gaussian processes and QMC see numbers with an order, not labels. A
proposal outside the space (a shape the constraints rule out) or already spent is moved to
the nearest configuration not yet evaluated, and the study is told the configuration that
was evaluated. A failed configuration teaches the study with twice the worst time seen (or as
a failed trial, before any time is seen).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from gpubench.errors import ConfigError, EnvironmentProblem, did_you_mean
from gpubench.tune.optuna_loader import optuna_module
from gpubench.tune.space import Problem

BUILT_IN = ("exhaustive", "random")
# Optuna sampler of each strategy, and the package it needs beside Optuna.
OPTUNA = {"tpe": None, "cmaes": "cmaes", "gp": "torch", "qmc": "scipy"}
STRATEGIES = (*BUILT_IN, *OPTUNA)
DEFAULT = "tpe"
# A failure's value for the study: this many times the worst time seen.
FAILURE_PENALTY = 2.0


class Strategy(Protocol):
    def propose(self) -> int:
        """The index of a configuration not yet evaluated."""
        ...

    def learn(self, index: int, cost: float | None) -> None:
        """The outcome of the configuration proposed: its cost (a time, an energy: lower is
        better), or None for a failure."""
        ...

    def seen(self, index: int, cost: float | None) -> None:
        """The outcome of a configuration evaluated before (a resumed search): never
        proposed again, learnt from as if proposed."""
        ...


class Ordered:
    """Configurations in a fixed order: the space's (exhaustive) or a seeded shuffle."""

    def __init__(self, order: list[int]) -> None:
        self._order = order
        self._next = 0
        self._seen: set[int] = set()

    def propose(self) -> int:
        while self._order[self._next] in self._seen:
            self._next += 1
        index = self._order[self._next]
        self._next += 1
        return index

    def learn(self, index: int, cost: float | None) -> None:
        """Nothing to learn: the order is fixed."""

    def seen(self, index: int, cost: float | None) -> None:
        self._seen.add(index)


def check_name(name: str) -> str:
    """The strategy's name, where it is one (what it needs installed: `check_installed`)."""
    if name not in STRATEGIES:
        raise ConfigError(
            f"unknown strategy {name!r}{did_you_mean(name, STRATEGIES)}; "
            f"strategies: {', '.join(STRATEGIES)}",
            source="command line",
            key="--strategy",
        )
    return name


def check_installed(name: str) -> None:
    """What the strategy needs is installed (Optuna and its sampler's own package)."""
    import importlib.util

    if name not in OPTUNA:
        return

    if importlib.util.find_spec("optuna") is None:
        raise EnvironmentProblem(
            f"the strategy {name!r} needs Optuna: pip install 'gpubench-studies[tune]' "
            "(or use --strategy random or exhaustive)"
        )
    needs = OPTUNA[name]
    if needs and importlib.util.find_spec(needs) is None:
        raise EnvironmentProblem(f"the strategy {name!r} needs {needs}: pip install {needs}")


def make(
    name: str, problems: list[Problem], seed: int, evaluations: int | None = None
) -> list[Strategy]:
    """A fresh strategy for each problem's search (one model shared by all, for `tpe`;
    `evaluations`: what the budget allows over all the problems, where it is known)."""
    check_name(name)
    check_installed(name)
    if name == "tpe":
        from gpubench.tune.shared_tpe import SharedTpe

        shared = SharedTpe(problems, seed, evaluations)
        return [shared.for_problem(number) for number in range(len(problems))]
    return [_one(name, problem, seed) for problem in problems]


def _one(name: str, problem: Problem, seed: int) -> Strategy:
    count = len(problem.configurations)
    if name == "exhaustive":
        return Ordered(list(range(count)))
    if name == "random":
        return Ordered([int(i) for i in np.random.default_rng(seed).permutation(count)])
    return OptunaStrategy(name, problem, seed)


def _sampler(optuna: Any, name: str, seed: int) -> Any:
    import warnings

    # QMC and GP are marked experimental: a warning per problem and seed says nothing new.
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    samplers = optuna.samplers
    if name == "cmaes":
        return samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False)
    if name == "gp":
        return samplers.GPSampler(seed=seed)
    return samplers.QMCSampler(seed=seed, warn_independent_sampling=False)


class OptunaStrategy:
    def __init__(self, name: str, problem: Problem, seed: int) -> None:
        self._optuna = optuna_module()
        self._names = list(problem.axes)
        distribution = self._optuna.distributions.IntDistribution
        self._box = {n: distribution(0, len(problem.axes[n]) - 1) for n in self._names}
        self._coordinates = [[int(v) for v in c] for c in problem.coordinates()]
        coordinates = np.array(self._coordinates, dtype=float).reshape(
            len(problem.configurations), len(self._names)
        )
        self._scale = np.array([max(len(problem.axes[n]) - 1, 1) for n in self._names])
        self._positions = coordinates / self._scale
        self._spent = np.zeros(len(problem.configurations), dtype=bool)
        self._worst: float | None = None
        self._study = self._optuna.create_study(
            direction="minimize", sampler=_sampler(self._optuna, name, seed)
        )

    def propose(self) -> int:
        trial = self._study.ask(self._box)
        wanted = np.array([trial.params[n] for n in self._names], dtype=float) / self._scale
        # The asked trial is closed as failed (samplers skip those): the study is told the
        # configuration evaluated instead, in learn().
        self._study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
        distance = ((self._positions - wanted) ** 2).sum(axis=1)
        distance[self._spent] = np.inf
        index = int(np.argmin(distance))
        self._spent[index] = True
        return index

    def seen(self, index: int, cost: float | None) -> None:
        self._spent[index] = True
        self.learn(index, cost)

    def learn(self, index: int, cost: float | None) -> None:
        params = dict(zip(self._names, self._coordinates[index], strict=True))
        trial_module = self._optuna.trial
        if cost is not None:
            self._worst = max(self._worst or cost, cost)
        value = cost if cost is not None else None
        if value is None and self._worst is not None:
            value = FAILURE_PENALTY * self._worst
        state = (
            trial_module.TrialState.COMPLETE if value is not None else trial_module.TrialState.FAIL
        )
        self._study.add_trial(
            trial_module.create_trial(
                params=params, distributions=self._box, value=value, state=state
            )
        )
