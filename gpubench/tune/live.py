"""Live tuning: a strategy's proposals measured on the GPU by the sweep engine, round by round.

One set of workers serves the whole run (started once, its compile cache warm). The problems
take rounds in turn, so the default strategy's model learns from each while searching the
others (gpubench.tune.shared_tpe). Each round the strategy proposes a batch of configurations
of one problem; their builds compile in parallel in the background while the first of them
are measured (each point waits only for its own build), with every check a sweep makes.
Configurations are ranked by the objective (gpubench.tune.objective: time, energy per run, or
the energy-delay product). Under the time objective, timing stops early where even the fastest
of a configuration's first samples is slower than the best so far plus `PRUNE_MARGIN` (the
result is `pruned`, its samples the evidence, never ranked); under the others each
configuration's energy is measured and nothing is pruned, for a configuration slow in time may
still spend the least energy. At the end the few best are measured again on fresh
inputs with the sweep's full noise target, and the winner is the best of that confirmation,
not a lucky sample of the search. Every result goes to the results log as it comes, so
`--resume` continues a run: the configurations it holds count against the budget and teach
the strategy.
"""

from __future__ import annotations

import contextlib
import dataclasses
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpubench.engine import interrupts, planning
from gpubench.engine.observed_run import Collect, ObserverFactory
from gpubench.engine.runner import SweepRunner, compile_in_background
from gpubench.engine.spread import Spread
from gpubench.host import usable_cpus
from gpubench.load.config import SweepSpec
from gpubench.model.notices import CompileStopped, LeftOutOfSearch, Notice, TuningObjective
from gpubench.model.results import Result, ResultSet, point_key
from gpubench.store import outputs
from gpubench.tune import search, strategies
from gpubench.tune.objective import Objective
from gpubench.tune.recording import CANDIDATE_STATUSES, PRUNED, Outcome
from gpubench.tune.replay import outcome_of
from gpubench.tune.search import Budget, Run, Step
from gpubench.tune.space import Problem, Space

# A configuration whose fastest sample so far is this much slower than the best median so
# far cannot win: its timing stops (the tune's own noise allowance, the replay's WITHIN).
PRUNE_MARGIN = 0.05
# The best configurations measured again at the end, the winner chosen among them.
CONFIRM_DEFAULT = 3
# Configurations per round where --batch is not given: as many as compile at once (nvcc
# processes: kernels.compile_workers), so a round's builds take about one build's time.
MAX_AUTO_BATCH = 32


@dataclass(frozen=True)
class Settings:
    strategy: str = strategies.DEFAULT
    budget: Budget = field(default_factory=lambda: Budget(percent=10))
    seed: int = 0
    batch: int | None = None  # None: auto_batch()
    confirm: int = CONFIRM_DEFAULT
    # Pruning judges time: under any other objective nothing is pruned (`prunes`).
    prune: bool = True
    objective: Objective = Objective.TIME

    @property
    def prunes(self) -> bool:
        """Whether timing stops early: a configuration slow in time may still win on energy."""
        return self.prune and not self.objective.needs_energy


@dataclass
class Round:
    """One round's outcome, for the progress line."""

    problem: Problem
    run: Run
    number: int
    evaluated: int
    seconds: float


@dataclass
class ProblemOutcome:
    problem: Problem
    run: Run
    # The configurations measured again at the end (index, result), best first.
    confirmed: list[tuple[int, Result]] = field(default_factory=list)
    objective: Objective = Objective.TIME
    resumed: int = 0  # evaluations a resumed log held
    wall_s: float = 0.0
    # Each configuration's result in the search (a resumed log's included).
    results: dict[int, Result] = field(default_factory=dict)
    # No confirmation asked for (--confirm 0): the winner is the search's best as measured.
    unconfirmed: bool = False
    rounds: int = 0

    @property
    def winner(self) -> tuple[int, Result] | None:
        if self.confirmed:
            return self.confirmed[0]
        best = self.run.best
        if self.unconfirmed and best is not None and best.best_index is not None:
            return best.best_index, self.results[best.best_index]
        return None

    @property
    def margin(self) -> float | None:
        """How much the confirmed runner-up's cost exceeds the winner's."""
        if len(self.confirmed) < 2:
            return None
        best, second = (self.objective.cost(r) for _, r in self.confirmed[:2])
        return second / best - 1 if best and second else None

    def count(self, status: str) -> int:
        return sum(step.outcome.status == status for step in self.run.steps)

    @property
    def failed(self) -> int:
        return sum(
            not step.outcome.valid and step.outcome.status not in (PRUNED, *CANDIDATE_STATUSES)
            for step in self.run.steps
        )

    @property
    def unranked(self) -> int:
        """Verified and timed, but without the energy reading the objective ranks by."""
        return sum(
            not step.outcome.valid and step.outcome.status in CANDIDATE_STATUSES
            for step in self.run.steps
        )


@dataclass
class LiveOutcome:
    bench: Any
    space: Space
    result_set: ResultSet
    files: outputs.OutputPlan
    problems: list[ProblemOutcome]
    interrupted: bool
    wall_s: float


def auto_batch(spread: Spread) -> int:
    """Configurations per round: as many as compile at once, at least two per GPU."""

    from gpubench.engine import kernels

    workers = kernels.compile_workers() or min(MAX_AUTO_BATCH, usable_cpus())
    gpus = len(spread.devices) if isinstance(spread.devices, list) else 1
    return max(workers, 2 * gpus, 1)


def tune(
    spec: SweepSpec,
    request: outputs.OutputRequest,
    spread: Spread,
    settings: Settings,
    note: Callable[[Notice], None],
    observers: Sequence[ObserverFactory] = (outputs.results_log,),
    on_step: Callable[[Run, Step], None] | None = None,
    on_round: Callable[[Round], None] | None = None,
    on_problem: Callable[[ProblemOutcome], None] | None = None,
) -> LiveOutcome:
    """Search each problem of the sweep on the GPU (see the module's docstring); each step,
    round and finished problem told to the callbacks as it comes."""
    started = time.perf_counter()
    plan = _plan(spec, request, spread, settings, note)
    space = _space(plan, spec, note)
    strategies.check_installed(settings.strategy)
    batch = settings.batch or auto_batch(spread)
    runner = spread.runner(plan.suite, plan.backend)
    environment = runner.start()
    interrupted = False
    # Before the search: an interrupt keeps what each problem found.
    outcomes = [
        ProblemOutcome(problem, Run(problem), objective=settings.objective)
        for problem in space.problems
    ]
    try:
        stamp = plan.checked_fingerprint(environment)
        note(plan.starting(environment))
        result_set = plan.result_set(environment, {})
        header = plan.log_header(stamp, environment)
        rounds = _Rounds(runner, plan, note, settings.objective)
        with contextlib.ExitStack() as entered:
            runner.observers = _observers(entered, plan, header, result_set, observers)
            try:
                with interrupts.terminate_as_interrupt():
                    _search(rounds, outcomes, settings, batch, plan.previous, on_step, on_round)
                    for outcome in outcomes:
                        _confirm(rounds, outcome, settings.confirm, on_problem)
            except KeyboardInterrupt:
                interrupts.ignore_interrupts()
                interrupted = True
    finally:
        end = runner.close(graceful=not interrupted)
    result_set.environment["end"] = end
    result_set.environment["worker_restarts"] = runner.restarts
    _latest_only(result_set)
    return LiveOutcome(
        plan.bench,
        space,
        result_set,
        plan.files,
        outcomes,
        interrupted,
        time.perf_counter() - started,
    )


def _plan(
    spec: SweepSpec,
    request: outputs.OutputRequest,
    spread: Spread,
    settings: Settings,
    note: Callable[[Notice], None],
) -> planning.SweepPlan:
    """The sweep's plan as the objective measures it: with each configuration's energy where
    the objective ranks by it (said in a notice, with pruning off); its record (the results
    files' `spec`) names the objective."""
    if settings.objective.needs_energy:
        note(TuningObjective(settings.objective.value, settings.objective.noun))
        if not spec.timing.energy:
            timing = dataclasses.replace(spec.timing, energy=True)
            spec = dataclasses.replace(spec, timing=timing)
    plan = planning.plan_sweep(spec, request, None, spread.backend, local=not spread.scheduler)
    for line in plan.notes:
        note(line)
    record = {**plan.record, "tune": {"objective": settings.objective.value}}
    return dataclasses.replace(plan, record=record)


def _space(plan: planning.SweepPlan, spec: SweepSpec, note: Callable[[Notice], None]) -> Space:
    """The space the plan's points make, the variants left out of it told."""
    from gpubench.tune import space as spaces

    entries = [(point, variant) for point in plan.points for variant in plan.run.variants]
    space = spaces.of_suite(plan.bench, entries, spec.source, spec.baseline, spec.tuned)
    if space.left_out:
        note(LeftOutOfSearch(space.left_out))
    return space


def _latest_only(result_set: ResultSet) -> None:
    """One result per configuration, as the log reads back: a confirmation replaces the
    search's."""
    latest = {(point_key(r.point), r.variant): r for r in result_set.results}
    result_set.results[:] = list(latest.values())


def _confirm(
    rounds: _Rounds,
    outcome: ProblemOutcome,
    count: int,
    on_problem: Callable[[ProblemOutcome], None] | None,
) -> None:
    """The problem's best measured again (none with --confirm 0), then told."""
    outcome.confirmed = rounds.confirm(outcome.problem, outcome.run, count)
    outcome.unconfirmed = count == 0
    if on_problem is not None:
        on_problem(outcome)


def _observers(
    entered: contextlib.ExitStack,
    plan: planning.SweepPlan,
    header: dict[str, Any],
    result_set: ResultSet,
    observers: Sequence[ObserverFactory],
) -> list[Any]:
    """What follows every result of the run: the result set, and each observer made (the
    results log by default), entered until the run ends."""
    following: list[Any] = [Collect(result_set)]
    for make in observers:
        made = make(plan.files, header)
        if made is not None:
            following.append(entered.enter_context(made))
    return following


def _search(
    rounds: _Rounds,
    outcomes: list[ProblemOutcome],
    settings: Settings,
    batch: int,
    previous: list[Result],
    on_step: Callable[[Run, Step], None] | None,
    on_round: Callable[[Round], None] | None,
) -> None:
    """Every problem searched, a round of each in turn (the strategy learns across them),
    each from what a resumed log holds of it."""
    problems = [outcome.problem for outcome in outcomes]
    evaluations = settings.budget.for_space(problems)
    made = strategies.make(settings.strategy, problems, settings.seed, evaluations)
    earlier = {(point_key(r.point), r.variant): r for r in previous}
    searches = [
        _resumed(outcome, strategy, settings, earlier)
        for outcome, strategy in zip(outcomes, made, strict=True)
    ]
    by_problem = {id(outcome.problem): outcome for outcome in outcomes}

    def evaluate(problem: Problem, indices: list[int]) -> list[Any]:
        outcome = by_problem[id(problem)]
        best = outcome.run.best
        bar = best.best_cost * (1 + PRUNE_MARGIN) if best and settings.prunes else None
        began = time.perf_counter()
        results = rounds.measure(problem, indices, bar)
        outcome.results.update((i, r) for i, r in zip(indices, results, strict=True) if r)
        outcome.rounds += 1
        if on_round is not None:
            seconds = time.perf_counter() - began
            on_round(Round(problem, outcome.run, outcome.rounds, len(indices), seconds))
        return [
            outcome_of(r, settings.objective) if r is not None else Outcome("not_measured")
            for r in results
        ]

    search.interleave(searches, evaluate, batch, on_step)
    for outcome, one in zip(outcomes, searches, strict=True):
        outcome.wall_s = one.spent_s


def _resumed(
    outcome: ProblemOutcome,
    strategy: strategies.Strategy,
    settings: Settings,
    earlier: dict[tuple[str, str], Result],
) -> search.Search:
    """The problem's search, holding (and its strategy told) what a resumed log holds."""
    problem, run = outcome.problem, outcome.run
    for index, (point, variant) in enumerate(problem.entries):
        found = earlier.get((point_key(point), variant))
        if found is not None:
            outcome.results[index] = found
            earlier_outcome = outcome_of(found, settings.objective)
            strategy.seen(index, earlier_outcome.learned)
            run.add(index, earlier_outcome)
            outcome.resumed += 1
    evaluations = settings.budget.for_problem(len(problem.configurations))
    return search.Search(problem, strategy, evaluations, run, settings.budget.seconds)


class _Rounds:
    """Rounds of configurations measured by one runner: each a plan of just those points."""

    def __init__(
        self,
        runner: SweepRunner,
        plan: planning.SweepPlan,
        note: Any,
        objective: Objective = Objective.TIME,
    ) -> None:
        self.runner = runner
        self.plan = plan
        self.objective = objective
        # A round's compile report is no news (the round's line says what it took); a
        # compile that stopped is.
        self.note = lambda notice: note(notice) if isinstance(notice, CompileStopped) else None

    def measure(
        self,
        problem: Problem,
        indices: list[int],
        bar_ms: float | None = None,
        run_seed: int | None = None,
    ) -> list[Result | None]:
        """The result of each configuration (None where the run left none: interrupted), on
        the data of the plan's run seed, or of `run_seed` where given."""
        bench = self.plan.bench
        reference = getattr(bench, "reference_variant", None)
        by_variant: dict[str, list[dict[str, Any]]] = {}
        for index in indices:
            point, variant = problem.entries[index]
            by_variant.setdefault(variant, []).append(point)
        found: dict[tuple[str, str], Result] = {}
        for variant, points in by_variant.items():
            # A kernel file's variants are checked against its reference variant's outputs:
            # it runs first at each point.
            variants = (reference, variant) if reference and reference != variant else (variant,)
            sub = dataclasses.replace(
                self.plan.run, points=points, variants=variants, give_up_above_ms=bar_ms
            )
            if run_seed is not None:
                sub = dataclasses.replace(sub, run_seed=run_seed)
            compile_in_background(self.runner, sub, self.note)
            for result in self.runner.run(sub):
                found[(point_key(result.point), result.variant)] = result
        return [found.get((point_key(p), v)) for p, v in (problem.entries[i] for i in indices)]

    def confirm(self, problem: Problem, run: Run, count: int) -> list[tuple[int, Result]]:
        """The `count` best configurations by the objective measured again (no early stop),
        best first by the objective; one whose confirmation is no candidate (it failed, its
        timing cannot stand, or it has no energy reading to rank) is left out."""
        valid = sorted(
            {s.index: s.outcome.cost for s in run.steps if s.outcome.cost}.items(),
            key=lambda item: item[1],
        )
        chosen = [index for index, _ in valid[:count]]
        if not chosen:
            return []
        # On fresh inputs: a seed of its own, so a configuration that was lucky on the search's
        # data (sssp's sources) must win again on other data.
        results = self.measure(problem, chosen, run_seed=secrets.randbits(63))
        timed = [
            (outcome_of(r, self.objective).cost, i, r)
            for i, r in zip(chosen, results, strict=True)
            if r is not None
        ]
        candidates = [(cost, i, r) for cost, i, r in timed if cost is not None]
        return [(i, r) for _, i, r in sorted(candidates, key=lambda item: item[0])]
