"""Run points in this process: compile (or wait for the build a background compile is
making), make the inputs, then each variant through its stages (gpubench.engine.stages: check
before timing, re-check after). gpubench.engine.worker runs this same code in a worker
process, for isolation.

Per point the order is fixed: compile → memory preflight → fresh random inputs (made in
parallel, gpubench.engine.randoms) → each variant. The reference is made once per problem and
shared by the variants and by the configurations of that problem (gpubench.engine.checking,
gpubench.engine.input_sets). A failure becomes a Result with a status and a reason; the sweep
goes on. Every result records the host time of its point's and its variant's phases
(gpubench.model.phases).
"""

from __future__ import annotations

import dataclasses
import itertools
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from gpubench.engine import audit, memory
from gpubench.engine.input_sets import (
    EarlierSet,
    problem_seed,
    same_problem,
    shapes_match,
    shares_problem,
)
from gpubench.engine.kernels import CompileCache
from gpubench.engine.randoms import ParallelRandom
from gpubench.engine.stages import PointState, VariantRun
from gpubench.errors import KernelCompileError, OutOfMemory, PointError
from gpubench.model import metrics, timing
from gpubench.model.benchmark import Benchmark, Point
from gpubench.model.notices import Compiled, CompileStopped, Notice, RanAgain
from gpubench.model.phases import SPAN, PhaseClock
from gpubench.model.results import Result, ResultSet, Status, point_key
from gpubench.model.steps import RunRecord

if TYPE_CHECKING:
    from gpubench.backends.base import Backend


class Observer(Protocol):
    """Follows a run: how many results to expect, each result the moment it finishes, and the
    point's results again once the metrics that compare its variants are in."""

    def started(self, total: int) -> None: ...

    def finished(self, result: Result) -> None: ...

    def point_finished(self, results: list[Result]) -> None: ...


class SweepRunner(Protocol):
    """What session.measure drives: a worker process on one GPU (worker.IsolatedRunner), one
    per GPU of this host (pool.DevicePool) or a Dask cluster (cluster.DaskRunner). Each
    reports through a Notifier, so observers see every kind of run alike."""

    observers: list[Observer]

    @property
    def restarts(self) -> int: ...

    @property
    def retried(self) -> list[dict[str, Any]]:
        """Variants run once more because their worker died under them (point, reason)."""
        ...

    def start(self) -> dict[str, Any]:
        """Start the workers; the environment record of the first (EnvironmentProblem)."""
        ...

    def precompile(
        self, plan: Plan, on_report: Callable[[dict[str, Any]], None], limit_s: float = 3600
    ) -> None:
        """Compile the plan's builds in the background, from the moment a worker is up (asked
        before `start`, the compile overlaps the workers' start too); the points do not wait
        for it, each waits for its own build. `on_report(report)` (a kernels.CompileReport
        dict) once the last build is done, at the latest before `run` returns."""
        ...

    def run(self, plan: Plan, previous: Iterable[Result] = ()) -> list[Result]:
        """Every (point, variant) not in `previous`, measured; the fresh results."""
        ...

    def close(self, graceful: bool = True) -> dict[str, Any]:
        """Stop the workers; their last clock, temperature and power readings."""
        ...


@dataclass
class Notifier:
    """The one path from a runner to its observers: how many results to expect, each result
    the moment it arrives, and each point's results once the metrics that compare its
    variants (with those of an earlier, resumed run: `done`) are in."""

    observers: list[Observer]
    plan: Plan
    done: dict[tuple[str, str], Result] = field(default_factory=dict)
    results: list[Result] = field(default_factory=list)

    def started(self, total: int) -> None:
        for observer in self.observers:
            observer.started(total)

    def result(self, result: Result) -> None:
        self.results.append(result)
        for observer in self.observers:
            observer.finished(result)

    def point_done(self, point: Point, variants: list[str], fresh: dict[str, Result]) -> None:
        key = point_key(point)
        group = [self.done.get((key, v)) or fresh.get(v) for v in self.plan.variants]
        finish_point(self.plan, [r for r in group if r is not None])
        for observer in self.observers:
            observer.point_finished([fresh[v] for v in variants if v in fresh])


@dataclass(frozen=True)
class Plan:
    bench: Benchmark
    points: list[Point]
    variants: tuple[str, ...]
    baseline: str
    policy: timing.TimingPolicy
    # Record one run's per-step spans (`--timeline`).
    timeline: bool = False
    # A tuning run's bar: timing stops early, the result `pruned`, where even the fastest of
    # a configuration's first samples is slower than this (gpubench.tune.live).
    give_up_above_ms: float | None = None
    # Run-time parameters the sweep file names as configuration (`tune: configuration:`):
    # points that differ only in them share one problem's data, as compile-time ones do.
    tuned: tuple[str, ...] = ()
    # The run's seed, from which each problem's inputs are drawn (input_sets.problem_seed), so
    # the workers of several GPUs measure a problem's configurations on the same data; None:
    # each point draws its own.
    run_seed: int | None = None

    @property
    def flush_l2(self) -> bool:
        if self.policy.mode == "hot":
            return False
        if self.policy.flush_l2 is None:
            return self.bench.memory_bound
        return self.policy.flush_l2

    @property
    def size(self) -> int:
        return len(self.points) * len(self.variants)

    @property
    def settings(self) -> PlanSettings:
        """The plan as it travels to a worker: everything but the suite (the worker has its
        own, loaded once) and the points (sent one at a time)."""
        names = (f.name for f in dataclasses.fields(PlanSettings))
        return PlanSettings(**{name: getattr(self, name) for name in names})


@dataclass(frozen=True)
class PlanSettings:
    variants: tuple[str, ...]
    baseline: str
    policy: timing.TimingPolicy
    timeline: bool = False
    give_up_above_ms: float | None = None
    tuned: tuple[str, ...] = ()
    run_seed: int | None = None

    def plan(self, bench: Benchmark, points: list[Point]) -> Plan:
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return Plan(bench, points, **fields)


def _first_set_seed(plan: Plan, point: Point, earlier: EarlierSet | None) -> int:
    """The seed of a point's first input set: its problem's, derived from the run's seed,
    where there is one; drawn where the suite cannot say what the problem is, in untrusted
    mode (fresh data for every point), or where the earlier point's set of the same problem
    is to be this point's second (the two sets must differ)."""
    if plan.run_seed is None or plan.policy.untrusted:
        return secrets.randbits(63)
    seed = problem_seed(plan.bench, point, plan.tuned, plan.run_seed)
    if seed is None or (
        earlier is not None
        and problem_seed(plan.bench, earlier.point, plan.tuned, plan.run_seed) == seed
    ):
        return secrets.randbits(63)
    return seed


def _compiler_excerpt(output: str, limit: int = 12) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()] or lines
    return "\n".join(errors[:limit])


@dataclass
class _PointResults:
    """The results of one point, in order: each carries the point's phases so far and is handed
    to `on_result` the moment it is made."""

    plan: Plan
    point: Point
    clock: PhaseClock
    on_result: Callable[[Result], None] | None
    out: list[Result] = field(default_factory=list)
    # Wall-clock (epoch) seconds, comparable between the workers of one sweep: when the point
    # began (its compile wait included) and when its last result so far was made.
    started: float = field(default_factory=lambda: time.time())
    last_end: float | None = None

    def emit(self, variant: str, status: Status, reason: str = "", **extra: Any) -> None:
        result = Result(
            suite=self.plan.bench.name,
            variant=variant,
            point=dict(self.point),
            status=status,
            reason=reason,
            baseline=self.plan.baseline,
            **extra,
        )
        result.phases.setdefault("point", self.clock.snapshot())
        ended = time.time()
        start = self.started if self.last_end is None else self.last_end
        result.phases[SPAN] = {"point_start": self.started, "start": start, "end": ended}
        self.last_end = ended
        self.out.append(result)
        if self.on_result:
            self.on_result(result)


class Runner:
    """Runs plans in this process: per point, compile and make the inputs once, then each
    variant through its stages (gpubench.engine.stages)."""

    def __init__(self, backend: Backend, observers: Iterable[Observer] = ()) -> None:
        self.backend = backend
        self.observers = list(observers)
        self.modules = CompileCache(backend)
        # The last point's state, kept until the next point takes its first set or not, and
        # the run seed of the plan that made it (a plan of another seed wants other data).
        self._last: PointState | None = None
        self._last_run_seed: int | None = None

    def run(self, plan: Plan) -> list[Result]:
        notify = Notifier(self.observers, plan)
        notify.started(plan.size)
        try:
            for point in plan.points:
                fresh = self.run_point(plan, point, plan.variants, on_result=notify.result)
                notify.point_done(point, list(plan.variants), {r.variant: r for r in fresh})
        finally:
            self.close()
        return notify.results

    def run_point(
        self,
        plan: Plan,
        point: Point,
        variants: Iterable[str],
        on_start: Callable[[str], None] | None = None,
        on_result: Callable[[Result], None] | None = None,
        on_built: Callable[[], None] | None = None,
    ) -> list[Result]:
        """Every variant of one point; stops early once a variant has crashed the context.
        `on_built` is called once the point's build is in (or known to have failed): until
        then the point may be waiting for a background compile (gpubench.engine.kernels)."""
        variants = list(variants)
        clock = PhaseClock()
        results = _PointResults(plan, point, clock, on_result)
        self._read_idle_power(plan)
        # Threads the suite starts (in its inputs or a variant) and leaves running are flagged.
        threads = audit.live_threads()
        try:
            with clock.phase("compile"):
                module = self.modules.get(plan.bench, point, tuple(plan.variants))
        except KernelCompileError as exc:
            reason = f"{exc}\n{_compiler_excerpt(exc.compiler_output)}"
            if on_built:
                on_built()
            for v in variants:
                results.emit(v, Status.COMPILE_FAILED, reason)
            return results.out
        if on_built:
            on_built()
        state = self._point_state(plan, point, clock)
        if not isinstance(state, PointState):  # why there are no inputs: (status, reason)
            for v in variants:
                results.emit(v, *state)
            return results.out
        crashed = False
        try:
            for variant in variants:
                if on_start:
                    on_start(variant)
                stages = VariantRun(plan, state, variant, module, self.backend)
                outcome = _flag_threads_left(_guarded(stages), threads)
                threads = audit.live_threads()  # one variant's threads are not the next's
                results.emit(
                    variant,
                    seed=state.seed,
                    phases={
                        "point": clock.snapshot(),
                        "variant": stages.clock.snapshot(),
                        **stages.clock.parts_snapshot(),
                    },
                    **outcome,
                )
                if outcome["status"] is Status.CRASHED:
                    crashed = True
                    break  # the context is gone: nothing else can run in this process
        finally:
            if not crashed:
                self._keep(state, plan.run_seed)
        return results.out

    def _keep(self, state: PointState, run_seed: int | None) -> None:
        """Keep a point's state for the next point (its first set may serve it; freed then),
        with the run seed of the plan that made it."""
        self._last, self._last_run_seed = state, run_seed

    def _read_idle_power(self, plan: Plan) -> None:
        """Before this worker's first point with --energy, while nothing of ours runs: the
        GPU's idle power, which its energy readings carry beside them (measured once)."""
        if plan.policy.energy:
            meter = self.backend.energy_meter()
            if meter is not None:
                meter.idle_watts()

    def close(self) -> None:
        """Free what the last point left for the next."""
        last, self._last = self._last, None
        if last is not None:
            last.free()

    def _earlier(self, plan: Plan, point: Point) -> EarlierSet | None:
        """The previous point's first set, where this point poses the same problem (and
        untrusted mode does not ask for a near copy instead); anything else of it freed."""
        last, self._last = self._last, None
        if last is None:
            return None
        if (
            last.bench is plan.bench
            and not plan.policy.untrusted
            and same_problem(plan.bench, last.point, point, plan.tuned)
        ):
            return last.hand_over()
        last.free()
        return None

    def _shared_problem(self, plan: Plan, point: Point, clock: PhaseClock) -> PointState | None:
        """The previous point's whole state (both input sets, their references, the device
        copies) where this point poses the same problem: the configurations of a problem
        are checked and timed on the same data, made and referenced once. Untrusted mode
        makes fresh data for every point instead."""
        last = self._last
        if (
            last is None
            or last.bench is not plan.bench
            or self._last_run_seed != plan.run_seed
            or plan.policy.untrusted
            or not shares_problem(plan.bench, last.point, point, plan.tuned)
        ):
            return None
        # A suite that declares its arrays (most) is held to them; one that cannot say
        # before making them (sssp: a graph's size) is held to its declared input_params,
        # which the shared problem key already compares.
        specs = plan.bench.input_specs(point)
        if specs is not None and not shapes_match(specs, last.inputs):
            return None
        self._last = None
        state = dataclasses.replace(last, point=dict(point))
        state.counted_on(clock)  # this point's host work is this point's
        return state

    def _point_state(
        self, plan: Plan, point: Point, clock: PhaseClock
    ) -> PointState | tuple[Status, str]:
        """The point's inputs (its problem's, where the point before posed it), or why there
        are none: (status, reason)."""
        shared = self._shared_problem(plan, point, clock)
        if shared is not None:
            return shared
        earlier = self._earlier(plan, point)
        too_big = self._inputs_do_not_fit(plan.bench, point)
        if too_big and earlier is not None:  # the earlier set's device copies make way
            earlier.free_device(self.backend)
            too_big = self._inputs_do_not_fit(plan.bench, point)
        if too_big:
            return Status.SKIPPED, too_big
        seed = _first_set_seed(plan, point, earlier)
        try:
            with clock.phase("inputs"):
                inputs = plan.bench.inputs(point, ParallelRandom(seed))
        except MemoryError:
            if earlier is not None:
                earlier.free_device(self.backend)
            return Status.SKIPPED, "the host ran out of memory making the inputs"
        except PointError as exc:
            if earlier is not None:
                earlier.free_device(self.backend)
            return Status.LAUNCH_FAILED, f"cannot make the inputs: {exc}"
        return PointState.make(plan, point, seed, inputs, self.backend, clock, earlier)

    # -- memory preflight ---------------------------------------------------------------------
    def _inputs_do_not_fit(self, bench: Benchmark, point: Point) -> str | None:
        specs = bench.input_specs(point)
        if not specs:
            return None
        total = sum(spec.nbytes for spec in specs.values())
        device = sum(spec.nbytes for spec in specs.values() if not spec.on_host)
        free_device, _ = self.backend.memory_info()
        need = memory.Need(device=device, host=total, what="the inputs")
        return memory.shortfall(need, free_device, memory.host_available_bytes())


def _flag_threads_left(outcome: dict[str, Any], before: set[Any]) -> dict[str, Any]:
    """A measured outcome is implausible when the suite left host threads running: work
    they do is outside every timed interval."""
    if not outcome["status"].is_measured:
        return outcome
    left = audit.threads_left_behind(before)
    if not left:
        return outcome
    energy_keys = {m.key for m in metrics.ENERGY_METRICS}
    return {
        **{k: v for k, v in outcome.items() if k != "energy"},  # energy stands with the time
        "metrics": {k: v for k, v in outcome.get("metrics", {}).items() if k not in energy_keys},
        "status": Status.IMPLAUSIBLE,
        "reason": f"left host threads running ({', '.join(left)}): work they do is "
        "outside every timed interval",
    }


def _guarded(stages: VariantRun) -> dict[str, Any]:
    """The variant's outcome; running out of memory or a point the suite cannot run are
    clean results, never a crash."""
    try:
        return stages.run()
    except (OutOfMemory, MemoryError) as exc:
        # What the preflight could not foresee.
        return {"status": Status.SKIPPED, "reason": f"out of memory: {exc}"}
    except PointError as exc:
        return {"status": Status.LAUNCH_FAILED, "reason": f"the suite cannot run this point: {exc}"}


def finish_point(plan: Plan, results: list[Result]) -> None:
    """The metrics that compare the variants of one point, once all of them are in."""
    add_relative_metrics(results, plan.baseline, plan.bench.vendor_reference)
    plan.bench.point_metrics(results)


def add_relative_metrics(results: list[Result], baseline: str, vendor: str | None) -> None:
    """Speedup versus the baseline and % of the vendor library at the same point; only
    between verified, measured results."""

    def measured(name: str | None) -> Result | None:
        return next((r for r in results if r.variant == name and r.status.is_measured), None)

    base, reference = measured(baseline), measured(vendor)
    for r in results:
        if not r.status.is_measured or not r.median_ms:
            continue
        if base is not None:
            r.metrics[metrics.SPEEDUP.key] = metrics.speedup(base.median_ms, r.median_ms)
        if reference is not None:
            r.metrics[metrics.PCT_OF_VENDOR.key] = 100.0 * metrics.speedup(
                reference.median_ms, r.median_ms
            )


__all__ = ["Notifier", "Observer", "Plan", "PlanSettings", "RunRecord", "Runner", "SweepRunner",
           "add_relative_metrics", "finish_point", "point_key"]  # fmt: skip


def compile_in_background(
    runner: SweepRunner, plan: Plan, note: Callable[[Notice], None]
) -> dict[str, Any]:
    """Start compiling every distinct build of the sweep in the background (each point waits
    only for its own); the report, filled in and noted when compiling ends (empty if the
    sweep stops first)."""
    report: dict[str, Any] = {}

    def compiled(finished: dict[str, Any]) -> None:
        report.update(finished)
        if "error" in report:
            last = report["error"].strip().splitlines()[-1:] or ["?"]
            note(CompileStopped(last[0]))
        else:
            note(Compiled(dict(report)))

    runner.precompile(plan, compiled)
    return report


def note_retries(
    retried: list[dict[str, Any]], result_set: ResultSet, note: Callable[[Notice], None]
) -> None:
    """Variants whose worker died under them and ran once more: in the environment record,
    and one notice per point and cause (a Dask worker's death reruns a whole point's
    variants)."""
    if not retried:
        return
    result_set.environment["worker_retries"] = retried
    for (_, reason), group in itertools.groupby(
        retried, key=lambda entry: (point_key(entry["point"]), entry["reason"])
    ):
        entries = list(group)
        note(RanAgain([entry["variant"] for entry in entries], entries[0]["point"], reason))
