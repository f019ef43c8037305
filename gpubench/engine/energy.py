"""The energy of one run (`--energy`): after a variant is timed, a window of back-to-back
runs while the backend's meter reads the GPU's energy counter in the background
(gpubench.backends.nvml), turned into a reading by gpubench.model.energy.

The runs go in calls of about CALL_MS of GPU time each (one CUDA graph where the steps allow),
so the host's turn between calls is a small share of the window; in-out buffers are restored
before each call, as hot-mode timing does (a run that iterates to convergence, which hot mode
refuses, goes one run per call). What the window ran is re-checked afterwards with
the rest of the timed runs (stages.VariantRun.recheck).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gpubench.engine import audit
from gpubench.model import energy

if TYPE_CHECKING:
    from gpubench.backends.base import Backend, BoundRun, EnergyMeter

# GPU time per call of back-to-back runs, and the most runs one call (one graph) may hold.
CALL_MS = 50.0
MAX_RUNS_PER_CALL = 4096
# GPU time of back-to-back runs before the meter starts, so the window opens at this load's
# power rather than the timing loop's (its L2 flushes and its wait per batch draw less); the
# settling ends after SETTLE_LIMIT_S of the meter's clock whatever the events say.
SETTLE_MS = 250.0
SETTLE_LIMIT_S = 2.0
# Back to back a run may be faster than timed one by one, but not twice as fast where neither
# a warm L2 nor the launch can explain it: a kernel that does less work when launched back to
# back gets no energy figure. Measured on the H200: runs of 0.25 ms and more, moving at least
# 4 x the L2, were 0-5.4% faster back to back; runs of 2-20 µs, whose cold samples pay the
# launch and an L2 flush that a graph of runs does not, 15-70% faster (ratios 0.30-0.85).
WINDOW_FASTER_LIMIT = 0.5
# The ratio is judged where it can be: runs that move at least this many L2s of bytes, or
# unflushed runs of at least WINDOW_JUDGED_MS (the launch a few percent of them).
WINDOW_JUDGED_L2S = 4
WINDOW_JUDGED_MS = 0.05


def runs_per_call(run_ms: float) -> int:
    """How many back-to-back runs make one call of about CALL_MS."""
    if not run_ms > 0:
        return 1
    return max(1, min(MAX_RUNS_PER_CALL, math.ceil(CALL_MS / run_ms)))


def measure_energy(
    backend: Backend,
    meter: EnergyMeter,
    bound: BoundRun,
    run_ms: float,
    window_s: float,
    before_each: Callable[[], None],
    one_at_a_time: bool = False,
) -> energy.EnergyReading | str:
    """The energy of one run of `bound` (timed at `run_ms`), over a window of `window_s`;
    or why there is no reading. `one_at_a_time`: a call is one run, `before_each` before
    every run (a run that iterates to convergence would start from the last one's answer)."""
    idle = meter.idle_watts()
    per_call = 1 if one_at_a_time else runs_per_call(run_ms)
    settled_ms, began = 0.0, meter.now()
    # The graph captured and the power settled, unmetered.
    while settled_ms < SETTLE_MS and meter.now() - began < SETTLE_LIMIT_S:
        before_each()
        settled_ms += backend.time_hot_ms(bound, per_call) * per_call
    runs, gpu_ms = 0, 0.0
    meter.start()
    try:
        start = meter.now()
        while runs == 0 or meter.now() - start < window_s:
            before_each()
            gpu_ms += backend.time_hot_ms(bound, per_call) * per_call
            runs += per_call
        end = meter.now()
    finally:
        trace = meter.stop()
    return energy.reading(trace, start, end, runs, gpu_ms, idle)


def window_verdict(
    reading: energy.EnergyReading, run_ms: float, work: Any, device: Any, flushed: bool
) -> tuple[str | None, str | None]:
    """What the window's own time says: (why the result cannot stand, why its energy cannot),
    either None. The window's runs are not audited one by one as timed runs are; their time
    per run is held to the hardware's ceilings, and where a warm L2 and the launch cannot
    explain a difference (`judged`), to the timed median (`flushed`: its samples flushed L2)."""
    impossible = audit.speed_of_light(work, reading.time_per_run_ms, device, 0)
    if impossible:
        return f"faster than the hardware allows in the energy window: {impossible}", None
    if judged(run_ms, work, device, flushed) and (
        reading.time_per_run_ms < WINDOW_FASTER_LIMIT * run_ms
    ):
        return None, (
            f"back to back the runs took {reading.time_per_run_ms:.4g} ms each against a "
            f"timed median of {run_ms:.4g} ms: not the work that was timed, so no energy figure"
        )
    return None, None


def judged(run_ms: float, work: Any, device: Any, flushed: bool) -> bool:
    """Whether a window much faster than the timed median means less work: the run moves
    several L2s of bytes (a warm L2 saves little), or was timed unflushed and long enough that
    the launch is a few percent of it."""
    moves = getattr(work, "bytes_moved", 0) or 0
    l2 = getattr(device, "l2_bytes", 0) or 0
    if l2 and moves >= WINDOW_JUDGED_L2S * l2:
        return True
    return not flushed and run_ms >= WINDOW_JUDGED_MS
