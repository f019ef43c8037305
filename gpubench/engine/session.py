"""One run of a sweep, from a validated spec to its results: orchestration only.

The spec is planned once (gpubench.engine.planning); then the runner starts (gpubench.engine.
spread), compiles begin in the background, the resume check, the points measured with the
observers the caller plugged in (gpubench.engine.observed_run: the results log by default), profiled
where asked, and the results sorted.
Showing and keeping them is the caller's (gpubench.cli.outcome).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gpubench import backends
from gpubench.engine import interrupts, planning, spawned
from gpubench.engine.interrupts import ignore_interrupts, protect_outputs
from gpubench.engine.observed_run import ObserverFactory, run_observed
from gpubench.engine.runner import compile_in_background, note_retries
from gpubench.engine.spread import Spread
from gpubench.engine.worker import IsolatedRunner, WorkerSpec
from gpubench.load.config import SweepSpec
from gpubench.model import results
from gpubench.model.benchmark import Benchmark
from gpubench.model.notices import Notice
from gpubench.store import outputs

__all__ = ["Spread", "SweepOutcome", "ignore_interrupts", "measure", "protect_outputs", "quiet"]

# The caller's ear: each notice (gpubench.model.notices) as it comes; report.notices words them.
Note = Callable[[Notice], None]


def quiet(notice: Notice) -> None:
    """The default Note: a library caller that passes none hears nothing."""


@dataclass
class SweepOutcome:
    """What a sweep measured: the results in the sweep's order (a resumed log's first), those
    measured by this run, whether it was interrupted, the output plan it followed (the log it
    wrote; the files its caller is asked to write), its wall time and when it began (wall-clock
    seconds: the results' spans count from it)."""

    bench: Benchmark
    result_set: results.ResultSet
    files: outputs.OutputPlan
    fresh: list[results.Result]
    interrupted: bool
    wall_s: float
    started_at: float = 0.0


def measure(
    spec: SweepSpec,
    request: outputs.OutputRequest,
    spread: Spread,
    note: Note = quiet,
    observers: Sequence[ObserverFactory] = (outputs.results_log,),
) -> SweepOutcome:
    """Run a sweep: plan it (the spec is read there, once), compile in the background, measure
    every point with the `observers` made and following the results as they come (the results
    log, outputs.results_log, unless the caller leaves it out; a progress bar), then sort. It
    shows nothing: what it has to say goes to `note`, a notice at a time."""
    started, started_at = time.perf_counter(), time.time()
    handlers = interrupts.handlers()  # given back on return, even after an interrupt
    plan = planning.plan_sweep(
        spec, request, spread.shard, spread.backend, local=not spread.scheduler
    )
    for line in plan.notes:
        note(line)
    runner = spread.runner(plan.suite, plan.backend)
    report = compile_in_background(runner, plan.to_compile, note)  # from the first worker up
    environment = runner.start()
    spawned.discard()  # a worker started ahead that the runner did not take holds a GPU
    interrupted = False
    try:
        stamp = plan.checked_fingerprint(environment)  # a resumed log's must match
        note(plan.starting(environment))
        result_set = plan.result_set(environment, report)
        header = plan.log_header(stamp, environment)
        interrupted = run_observed(runner, plan, result_set, header, observers)
    finally:
        # After Ctrl-C (or SIGTERM) the worker may be stuck in a kernel: kill it at once
        # instead of waiting for it to say goodbye.
        end = runner.close(graceful=not interrupted)
    if request.profile and not interrupted:
        from gpubench.engine import profiling

        spawned.wait_for_stopped()  # the profiler's process gets the GPU to itself
        profiling.profile_plan(plan, result_set, spread.first_device, note)
    with protect_outputs():  # a second Ctrl-C must not cost the results
        result_set.environment["end"] = end
        result_set.environment["worker_restarts"] = runner.restarts
        note_retries(runner.retried, result_set, note)
        result_set.sort_in_order_of(plan.points, plan.run.variants)
    interrupts.restore(handlers)  # a library caller's Ctrl-C works again
    fresh = [r for r in result_set.results if not any(r is p for p in plan.previous)]
    wall_s = time.perf_counter() - started
    return SweepOutcome(plan.bench, result_set, plan.files, fresh, interrupted, wall_s, started_at)


def probe_environment(suite: str, device: int, backend: str | None = None) -> dict[str, Any]:
    """The environment record of a worker on `device` (its GPU's UUID, ...), then stop it."""
    spec = WorkerSpec.for_suite(suite, device, backend)
    backends.preflight(spec.backend, source=backends.source_of(backend))
    runner = IsolatedRunner(spec)
    try:
        return runner.start()
    finally:
        runner.close()
        spawned.wait_for_stopped()  # its GPU released before whatever the caller starts next
