"""The default strategy: one TPE model learning across all the problems of a space.

Tuning budgets are small (a tenth of a problem's configurations is 6 of transpose's 55), too
small for a model of one problem to leave its random start. The sizes of a sweep share their
configurations, and what is fast at one size is usually fast at the next, so one Optuna TPE
study holds every evaluation of every problem, the problem's position among them a parameter
the study fixes when it proposes for that problem (Optuna's PartialFixedSampler). Times are
made comparable across problems by standardising each problem's log times (a large problem's
milliseconds say nothing of a small one's).

The first `START` proposals of the space (at most half of all the evaluations the space's
budget allows, so a small budget is left room to learn) are a balanced design, not random:
each is a configuration whose values were tried least so far, across all problems, so the
model starts from every variant and every value of each axis rather than from repeats.
Parameters with numbers are ordered axes; others (variants, dtypes) are categories.

Proposals of a batch are asked of one study (refit once something new was learnt, or once
a tenth more was learnt where the space is large); a proposal outside the space or already
spent is moved to the nearest configuration not yet evaluated, as for the other Optuna
strategies. Every other proposal of a problem, once the start is over, is instead the
configuration not yet evaluated here that did best at the other problems.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from gpubench.tune.optuna_loader import optuna_module
from gpubench.tune.space import Problem, sort_key, token

# Proposals of the space drawn from the balanced design before the model is used: a few more
# than the axes a sweep usually varies.
START = 8
# A failure's value: this many times the problem's worst time (the other strategies' rule).
FAILURE_PENALTY = 2.0
# A failure's standardised value where its problem has no valid time yet: well above any
# time's (they are spread about 0 with a unit deviation).
FAILURE_WITHOUT_SCALE = 3.0
PROBLEM = "problem"
# The model is refit once the evaluations grew by this fraction of those it was fit on (each
# new one, below twenty): Optuna copies every trial it is given, so a refit per evaluation
# of a large space would cost more than the search.
REFIT_EVERY = 10


class SharedTpe:
    """The model and the evaluations of every problem of one space."""

    def __init__(self, problems: list[Problem], seed: int, evaluations: int | None = None) -> None:
        self._optuna = optuna_module()
        self._seed = seed
        # The balanced start: half of a small budget at most (`evaluations`: the space's).
        self._start = START if evaluations is None else max(1, min(START, evaluations // 2))
        self._names, values = _union_axes(problems)
        self._categorical = [
            any(isinstance(v, bool) or not isinstance(v, int | float) for v in values[name])
            for name in self._names
        ]
        self._coordinates = [_coordinates(p, self._names, values) for p in problems]
        self._scale = np.array([max(len(values[n]) - 1, 1) for n in self._names], dtype=float)
        self._distributions = self._box(len(problems), values)
        self._spent = [np.zeros(len(p.configurations), dtype=bool) for p in problems]
        self._times: list[list[tuple[int, float | None]]] = [[] for _ in problems]
        self._proposed = 0
        self._studies: dict[int, Any] = {}  # per problem, until the model is refit
        self._fitted_on = 0  # evaluations the studies were built from

    def for_problem(self, number: int) -> ProblemStrategy:
        return ProblemStrategy(self, number)

    def _box(self, problems: int, values: dict[str, list[Any]]) -> dict[str, Any]:
        distributions = self._optuna.distributions
        box: dict[str, Any] = {PROBLEM: distributions.IntDistribution(0, max(problems - 1, 0))}
        for name, categorical in zip(self._names, self._categorical, strict=True):
            positions = list(range(len(values[name])))
            box[name] = (
                distributions.CategoricalDistribution(positions)
                if categorical
                else distributions.IntDistribution(0, len(positions) - 1)
            )
        return box

    def propose(self, number: int) -> int:
        if self._proposed >= self._start and int(self._spent[number].sum()) % 2 == 1:
            carried = self._carried(number)
            if carried is not None:
                self._proposed += 1
                self._spent[number][carried] = True
                return carried
        starting = self._proposed < self._start
        wanted = self._balanced(number) if starting else self._asked(number)
        self._proposed += 1
        distance = np.abs(self._coordinates[number] - wanted) / self._scale
        for axis, categorical in enumerate(self._categorical):
            if categorical:  # another category is as far as the far end of an ordered axis
                distance[:, axis] = distance[:, axis] > 0
        total = (distance**2).sum(axis=1)
        total[self._spent[number]] = np.inf
        index = int(np.argmin(total))
        self._spent[number][index] = True
        return index

    def learn(self, number: int, index: int, cost: float | None) -> None:
        self._spent[number][index] = True
        self._times[number].append((index, cost))
        learnt = sum(len(times) for times in self._times)
        if learnt - self._fitted_on >= max(1, self._fitted_on // REFIT_EVERY):
            self._studies.clear()

    def _carried(self, number: int) -> int | None:
        """The configuration not yet evaluated here that did best elsewhere (its mean
        standardised value over the other problems that measured it); None where there is
        none."""
        scores: dict[tuple[float, ...], list[float]] = {}
        for other, evaluated in enumerate(self._times):
            if other == number:
                continue
            for (index, cost), value in zip(evaluated, _standardised(evaluated), strict=True):
                if cost is None:  # a failure elsewhere is nothing to carry
                    continue
                key = tuple(self._coordinates[other][index].tolist())
                scores.setdefault(key, []).append(value)
        here = {tuple(row.tolist()): i for i, row in enumerate(self._coordinates[number])}
        ranked = sorted(scores, key=lambda key: sum(scores[key]) / len(scores[key]))
        for key in ranked:
            index = here.get(key)
            if index is not None and not self._spent[number][index]:
                return index
        return None

    def _balanced(self, number: int) -> np.ndarray:
        """The configuration whose values were tried least (over all problems), ties drawn."""
        tried: list[dict[float, int]] = [{} for _ in self._names]
        for coordinates, spent in zip(self._coordinates, self._spent, strict=True):
            for row in coordinates[spent]:
                for axis, position in enumerate(row):
                    tried[axis][position] = tried[axis].get(position, 0) + 1
        rows = self._coordinates[number]
        counts = np.array(
            [sum(tried[a].get(p, 0) for a, p in enumerate(row)) for row in rows], dtype=float
        )
        draw = np.random.default_rng([self._seed, self._proposed]).random(len(rows))
        counts = counts + 0.5 * draw  # below one try: only breaks ties
        counts[self._spent[number]] = np.inf
        return rows[int(np.argmin(counts))]

    def _asked(self, number: int) -> np.ndarray:
        study = self._studies.get(number)
        if study is None:
            study = self._studies[number] = self._study(number)
            self._fitted_on = sum(len(times) for times in self._times)
        trial = study.ask(self._distributions)
        # Closed as failed (samplers skip those): what was evaluated is told when learnt.
        study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
        return np.array([trial.params[name] for name in self._names], dtype=float)

    def _study(self, number: int) -> Any:
        optuna = self._optuna
        with warnings.catch_warnings():  # PartialFixedSampler is marked experimental
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            tpe = optuna.samplers.TPESampler(
                seed=int(np.random.default_rng([self._seed, self._proposed]).integers(2**31)),
                n_startup_trials=0,
                multivariate=True,
            )
            sampler = optuna.samplers.PartialFixedSampler({PROBLEM: number}, tpe)
        study = optuna.create_study(direction="minimize", sampler=sampler)
        trials = []
        for other, evaluated in enumerate(self._times):
            for index, value in zip(
                (i for i, _ in evaluated), _standardised(evaluated), strict=True
            ):
                params = {PROBLEM: other} | {
                    name: int(position)
                    for name, position in zip(
                        self._names, self._coordinates[other][index], strict=True
                    )
                }
                trials.append(
                    optuna.trial.create_trial(
                        params=params, distributions=self._distributions, value=value
                    )
                )
        study.add_trials(trials)
        return study


class ProblemStrategy:
    """One problem's view of the shared model: the Strategy protocol."""

    def __init__(self, shared: SharedTpe, number: int) -> None:
        self._shared = shared
        self._number = number

    def propose(self) -> int:
        return self._shared.propose(self._number)

    def learn(self, index: int, cost: float | None) -> None:
        self._shared.learn(self._number, index, cost)

    def seen(self, index: int, cost: float | None) -> None:
        self._shared.learn(self._number, index, cost)


def _standardised(evaluated: list[tuple[int, float | None]]) -> list[float]:
    """Each evaluation's log time less the problem's mean, over its deviation; a failure
    as FAILURE_PENALTY times the problem's worst time."""
    logs = [math.log(t) for _, t in evaluated if t is not None and t > 0]
    if not logs:
        return [FAILURE_WITHOUT_SCALE for _ in evaluated]
    mean = sum(logs) / len(logs)
    deviation = math.sqrt(sum((v - mean) ** 2 for v in logs) / len(logs)) or 1.0
    failed = math.log(FAILURE_PENALTY) + max(logs)
    return [
        ((math.log(t) if t is not None and t > 0 else failed) - mean) / deviation
        for _, t in evaluated
    ]


def _union_axes(problems: list[Problem]) -> tuple[list[str], dict[str, list[Any]]]:
    """Every axis of any problem, each with the values of all problems' configurations."""
    names: list[str] = []
    for problem in problems:
        names += [name for name in problem.axes if name not in names]
    values: dict[str, list[Any]] = {}
    for name in names:
        distinct = {
            token(c.get(name)): c.get(name) for problem in problems for c in problem.configurations
        }
        values[name] = sorted(distinct.values(), key=sort_key)
    return names, values


def _coordinates(problem: Problem, names: list[str], values: dict[str, list[Any]]) -> np.ndarray:
    where = {name: {token(v): i for i, v in enumerate(values[name])} for name in names}
    rows = [[where[n][token(c.get(n))] for n in names] for c in problem.configurations]
    return np.array(rows, dtype=float).reshape(len(problem.configurations), len(names))
