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
from typing import TYPE_CHECKING

from gpubench.model import energy

if TYPE_CHECKING:
    from gpubench.backends.base import Backend, BoundRun, EnergyMeter

# GPU time per call of back-to-back runs, and the most runs one call (one graph) may hold.
CALL_MS = 50.0
MAX_RUNS_PER_CALL = 4096
# GPU time of back-to-back runs before the meter starts, so the window opens at this load's
# power rather than the timing loop's (its L2 flushes and its wait per batch draw less).
SETTLE_MS = 250.0


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
    settled_ms = 0.0
    while settled_ms < SETTLE_MS:  # the graph captured and the power settled, unmetered
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
