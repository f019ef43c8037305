"""One run of a sweep, from a validated spec to saved results: orchestration only.

The steps are the helpers below: the output plan, the worker and its environment, the resume
check, compiling, measuring with the results log open, then the table and the files.
"""

from __future__ import annotations

import contextlib
import itertools
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from gpubench import backends
from gpubench.engine import kernels
from gpubench.engine.input_sets import by_problem
from gpubench.engine.runner import Plan, SweepRunner
from gpubench.engine.worker import IsolatedRunner, WorkerSpec
from gpubench.errors import ConfigError
from gpubench.load import registry
from gpubench.load.config import SweepSpec
from gpubench.model import results
from gpubench.model.benchmark import Benchmark
from gpubench.model.results import point_key
from gpubench.store import outputs


def fingerprint(
    spec: SweepSpec, points: list[dict[str, Any]], environment: dict[str, Any]
) -> dict[str, Any]:
    """What must not change between a run and its resumption."""
    bench = registry.get(spec.suite_ref or spec.suite)
    declarations = bench.declaration_digest()
    return {
        "suite": spec.suite,
        "kernel_source_sha256": kernels.source_digest(bench),
        **({"declarations_sha256": declarations} if declarations else {}),
        "gpu_name": environment.get("device", {}).get("name"),
        "gpu_uuid": environment.get("gpu_uuid"),
        # A sweep over several GPUs resumes on the same ones.
        **(
            {"gpu_uuids": sorted(str(d.get("uuid")) for d in environment["devices"])}
            if len(environment.get("devices") or []) > 1
            else {}
        ),
        "points": sorted(point_key(p) for p in points),
        "variants": list(spec.variants),
        "baseline": spec.baseline,
        "timing": spec.timing.to_dict(),
    }


def differences(before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    out = []
    for key in sorted(set(before) | set(now)):
        if before.get(key) != now.get(key):
            if key == "points":
                gone = set(before.get(key) or []) - set(now.get(key) or [])
                new = set(now.get(key) or []) - set(before.get(key) or [])
                out.append(f"points: {len(gone)} no longer in the sweep, {len(new)} new")
            else:
                out.append(f"{key}: {before.get(key)!r} in the log, {now.get(key)!r} now")
    return out


@dataclass(frozen=True)
class Spread:
    """Where the points run: one GPU (`device`), several of this host (`devices`: indices or
    "all"), a Dask cluster (`scheduler` address); which of them (`shard`: I of N); and on
    which backend (`backend`, --backend; None: GPUBENCH_BACKEND or the default)."""

    device: int = 0
    devices: list[int] | str | None = None
    scheduler: str | None = None
    shard: tuple[int, int] | None = None
    backend: str | None = None

    @property
    def backend_source(self) -> str:
        """Where the backend's name came from, for the line that refuses a bad one."""
        return backends.source_of(self.backend)

    def runner(self, suite: str, backend: str) -> SweepRunner:
        if self.scheduler:
            from gpubench.engine.cluster import DaskRunner

            return DaskRunner(self.scheduler, suite, backend)
        if self.devices == "all" or (self.devices and len(self.devices) > 1):
            from gpubench.engine.pool import DevicePool

            return DevicePool(suite, self.devices, backend)
        index = self.devices[0] if self.devices else self.device
        return IsolatedRunner(WorkerSpec(suite, index, backend))


def shard_points(
    points: list[dict[str, Any]], shard: tuple[int, int] | None, source: str
) -> list[dict[str, Any]]:
    """Every N-th point from the I-th (0-based): the shards of N jobs cover the sweep once."""
    if shard is None:
        return points
    index, count = shard
    mine = points[index::count]
    if not mine:
        raise ConfigError(
            f"shard {index}/{count} has no points (the sweep has {len(points)})",
            source=source,
            key="--shard",
        )
    return mine


Note = Callable[[str], None]


def quiet(text: str) -> None:
    """The default Note: a library caller that passes none hears nothing."""


@dataclass
class SweepOutcome:
    """What a sweep measured: the results in the sweep's order (a resumed log's first), those
    measured by this run, whether it was interrupted, the output plan it followed (the log it
    wrote; the files its caller is asked to write) and its wall time."""

    bench: Benchmark
    result_set: results.ResultSet
    files: outputs.OutputPlan
    fresh: list[results.Result]
    interrupted: bool
    wall_s: float


def measure(
    spec: SweepSpec,
    request: outputs.OutputRequest,
    spread: Spread,
    note: Note = quiet,
    progress: Callable[[], contextlib.AbstractContextManager[Any]] | None = None,
) -> SweepOutcome:
    """Run a sweep: compile, measure every point with its results log open, then sort. It
    shows nothing: its messages go to `note`, one line each, and `progress` (a context
    manager that is an observer) follows the results as they come."""
    started = time.perf_counter()
    handlers = _signal_handlers()  # given back on return, even after an interrupt
    bench = registry.get(spec.suite_ref or spec.suite)
    points = shard_points(spec.points(bench), spread.shard, spec.source)
    suite, backend = spec.suite_ref or spec.suite, backends.selected(spread.backend)
    # The command first (a usage error is exit 2 on any machine), then the machine.
    kernels.check_settings()
    previous_header, previous = results.load_jsonl(request.resume) if request.resume else ({}, [])
    outputs.plan(spec, request, dry=True)
    backends.preflight(backend, local=not spread.scheduler, source=spread.backend_source)
    files = outputs.plan(spec, request)
    if files.kept:
        note(f"the earlier log is kept as {files.kept}")
    runner = spread.runner(suite, backend)
    plan = _plan(bench, points, spec, timeline=files.timeline is not None)
    report = _precompile(runner, plan, note)  # in the background, from the first worker's start
    environment = runner.start()
    interrupted = False
    try:
        stamp = fingerprint(spec, points, environment)
        if spread.shard:
            stamp["shard"] = f"{spread.shard[0]}/{spread.shard[1]}"
        if files.resume:
            _check_resumable(previous_header, stamp, files)
        note(_announcement(environment, points, spec, files, len(previous)))
        result_set = results.ResultSet(
            suite=bench.name, environment=environment, spec=spec.to_dict(), compile_report=report
        )
        result_set.results.extend(previous)
        header = {
            "fingerprint": stamp,
            "suite": bench.name,
            "spec": spec.to_dict(),
            "environment": environment,
        }
        interrupted = _measure(runner, plan, result_set, files, header, previous, progress)
    finally:
        # After Ctrl-C (or SIGTERM) the worker may be stuck in a kernel: kill it at once
        # instead of waiting for it to say goodbye.
        end = runner.close(graceful=not interrupted)
    if request.profile and not interrupted:
        _profile(spec, bench, result_set, spread, note)
    with protect_outputs():  # a second Ctrl-C must not cost the results
        result_set.environment["end"] = end
        result_set.environment["worker_restarts"] = runner.restarts
        _note_retries(runner.retried, result_set, note)
        _sort(result_set, points, spec.variants)
    _restore_signal_handlers(handlers)  # a library caller's Ctrl-C works again
    fresh = [r for r in result_set.results if not any(r is p for p in previous)]
    return SweepOutcome(bench, result_set, files, fresh, interrupted, time.perf_counter() - started)


def _profile(
    spec: SweepSpec, bench: Benchmark, result_set: results.ResultSet, spread: Spread, note: Note
) -> None:
    from gpubench.engine import profiling

    kernel_variants = {v.name for v in bench.variants if v.kind == "kernel"}
    device = spread.devices[0] if isinstance(spread.devices, list) else spread.device
    backend = backends.selected(spread.backend)
    profiling.profile_results(
        spec.to_dict(), result_set.results, kernel_variants, device, note, backend
    )


def _plan(bench: Benchmark, points: list[dict[str, Any]], spec: SweepSpec, timeline: bool) -> Plan:
    """The points in the order they run: the configurations of one problem together, so that
    they share its inputs and references (the table keeps the sweep's order)."""
    return Plan(
        bench, by_problem(bench, points), spec.variants, spec.baseline, spec.timing, timeline
    )


def _note_retries(retried: list[dict[str, Any]], result_set: results.ResultSet, note: Note) -> None:
    """Variants whose worker died under them and ran once more: in the environment record,
    and one note each."""
    if not retried:
        return
    result_set.environment["worker_retries"] = retried
    # One note per point and cause: a Dask worker's death reruns a whole point's variants.
    for (_, reason), group in itertools.groupby(
        retried, key=lambda entry: (point_key(entry["point"]), entry["reason"])
    ):
        entries = list(group)
        variants = [entry["variant"] for entry in entries]
        at = ", ".join(f"{k}={v}" for k, v in entries[0]["point"].items())
        were = "was" if len(variants) == 1 else "were"
        note(
            f"note: {', '.join(variants)} at {at} {were} run once more on a fresh worker: {reason}"
        )


def _precompile(runner: SweepRunner, plan: Plan, note: Note) -> dict[str, Any]:
    """Start compiling every distinct build of the sweep in the background (each point waits
    only for its own); the report, filled in and noted when compiling ends (empty if the
    sweep stops first)."""
    report: dict[str, Any] = {}

    def compiled(finished: dict[str, Any]) -> None:
        report.update(finished)
        note(
            f"compiled {report['configurations']} configuration(s) in {report['seconds']:.1f} s"
            f": {report['compiled']} new, {report['cached']} cached, {report['failed']} failed "
            f"({report['workers']} in parallel)"
        )

    runner.precompile(plan, compiled)
    return report


def _signal_handlers() -> dict[int, Any]:
    return {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}


def _restore_signal_handlers(handlers: dict[int, Any]) -> None:
    with contextlib.suppress(ValueError, TypeError):  # not the main thread; a C handler
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def ignore_interrupts() -> None:
    """Ctrl-C and SIGTERM ignored from here (the main thread only; elsewhere nothing)."""
    with contextlib.suppress(ValueError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


@contextlib.contextmanager
def protect_outputs() -> Iterator[None]:
    """Ignore Ctrl-C and SIGTERM while the results are gathered or written (after an
    interrupt the command line keeps them ignored until it exits with 130: an impatient
    second Ctrl-C must not turn into a traceback)."""
    previous = _signal_handlers()
    ignore_interrupts()  # not the main thread: nothing to protect
    try:
        yield
    finally:
        _restore_signal_handlers(previous)


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (a CI job cancelled, `kill`) is handled like Ctrl-C: exit 130, outputs written."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _check_resumable(
    header: dict[str, Any], stamp: dict[str, Any], files: outputs.OutputPlan
) -> None:
    changed = differences(header.get("fingerprint", {}), stamp)
    if changed and not files.force:
        raise ConfigError(
            "the sweep, the kernel source or the GPU differ from the log; "
            "use --force to resume anyway: " + "; ".join(changed),
            source=files.log,
        )


def probe_environment(suite: str, device: int, backend: str | None = None) -> dict[str, Any]:
    """The environment record of a worker on `device` (its GPU's UUID, ...), then stop it."""
    spec = WorkerSpec.for_suite(suite, device, backend)
    backends.preflight(spec.backend, source=backends.source_of(backend))
    runner = IsolatedRunner(spec)
    try:
        return runner.start()
    finally:
        runner.close()


def _announcement(
    environment: dict[str, Any],
    points: list[dict[str, Any]],
    spec: SweepSpec,
    files: outputs.OutputPlan,
    already: int,
) -> str:
    """The sweep's first line: the GPU, the points and variants, a resumption."""
    dev = environment["device"]
    peak = dev.get("peak_bandwidth_gbps")
    devices = environment.get("devices") or []
    names = sorted({str(d.get("name")) for d in devices})
    on = f" · on {len(devices)} GPUs" + (f" of {len(names)} models" if len(names) > 1 else "")
    return (
        f"{dev['name']} ({dev['arch']}, {dev['sm_count']} SMs, peak DRAM "
        f"{f'{peak:,.0f} GB/s' if peak else 'unknown'}) · {len(points)} point(s) × "
        f"{len(spec.variants)} variant(s)"
        + (on if len(devices) > 1 else "")
        + (f" · resuming: {already} result(s) already in {files.log}" if already else "")
    )


def _measure(
    runner: SweepRunner,
    plan: Plan,
    result_set: results.ResultSet,
    files: outputs.OutputPlan,
    header: dict[str, Any],
    previous: list[results.Result],
    progress: Callable[[], contextlib.AbstractContextManager[Any]] | None,
) -> bool:
    """Run the plan with the log open; True if interrupted (what finished is kept)."""
    log = results.JsonLinesLog(files.log, header=header, append=files.resume) if files.log else None

    class Collect:
        def started(self, total: int) -> None: ...

        def finished(self, result: results.Result) -> None:
            result_set.results.append(result)

        def point_finished(self, results: list[results.Result]) -> None: ...

    runner.observers = [Collect(), *([log] if log else [])]
    try:
        with _terminate_as_interrupt():
            if progress is not None and files.progress:
                with progress() as bar:
                    runner.observers.append(bar)
                    runner.run(plan, previous)
            else:
                runner.run(plan, previous)
    except KeyboardInterrupt:
        # Until measure returns, further Ctrl-C or SIGTERM are ignored: the worker is killed
        # and the results gathered in a second or two (the command line then keeps them
        # ignored to its exit: ignore_interrupts).
        ignore_interrupts()
        return True
    finally:
        if log:
            log.close()
    return False


def _sort(
    result_set: results.ResultSet, points: list[dict[str, Any]], variants: tuple[str, ...]
) -> None:
    # A resumed log's results at points or of variants no longer in the sweep come first.
    order = {point_key(p): i for i, p in enumerate(points)}
    variant_order = {v: i for i, v in enumerate(variants)}
    result_set.results.sort(
        key=lambda r: (order.get(point_key(r.point), -1), variant_order.get(r.variant, -1))
    )
