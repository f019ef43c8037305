"""Energy of one run from a meter's trace: NVML's total-energy counter read over a window of
back-to-back runs, its idle power beside it, and the cross-check against its power samples.

The counter moves in steps (every 100 ms on the H100 and H200 with driver 580), so the energy
of an arbitrary stretch of time is not known to better than a step at each end. Only whole
update intervals that lie inside the window are used: the average power over them is the
window's power, and a run's energy is that power times the window's time over its runs.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from itertools import pairwise
from typing import Any

from gpubench.model.stats import robust_noise

# Fewer whole counter intervals than this inside a window give no figure: the power of a
# single interval has no spread to judge it by.
MIN_INTERVALS = 2


@dataclass
class EnergyTrace:
    """What a meter saw over one window, on its own clock (seconds)."""

    # (time, counter in mJ) at each change of the counter, in order.
    ticks: list[tuple[float, float]] = field(default_factory=list)
    # (time, instantaneous power in W), in order.
    power: list[tuple[float, float]] = field(default_factory=list)
    # The SM clock (MHz) and the GPU's temperature (°C) read during the window.
    clocks_mhz: list[float] = field(default_factory=list)
    temperatures_c: list[float] = field(default_factory=list)
    # Why the meter stopped reading before the window ended, where it did: what it read is
    # then no figure for the whole window.
    failed: str | None = None


@dataclass(frozen=True)
class EnergyReading:
    """The energy of one run, measured over a window of back-to-back runs."""

    # The window's average power times its time, over its runs.
    joules_per_run: float
    # The counter's energy over whole update intervals inside the window, over their time.
    average_watts: float
    # The GPU's power with nothing of ours running (measured once per worker), and a run's
    # energy above it: what the kernel itself costs beyond keeping the board on.
    idle_watts: float | None
    above_idle_joules_per_run: float | None
    # The median SM clock and GPU temperature read during the window: the same runs draw more
    # power on a warmer board (7% more energy at 7 °C warmer, matmul 4096 on the H200).
    sm_clock_mhz: float | None
    temperature_c: float | None
    # Host seconds of the window, runs made in it, and their GPU time per run (CUDA events).
    window_s: float
    runs: int
    time_per_run_ms: float
    # The GPU's share of the window spent in runs (the rest: the host between calls).
    duty: float
    # Whole counter intervals used, their median length, and the robust relative spread of
    # their powers (0.7413 × IQR / median, as a timing's noise).
    intervals: int
    counter_period_ms: float
    noise: float
    # The cross-check: the counter's joules over those intervals, and NVML's instantaneous
    # power samples integrated over the same time (None without samples).
    counter_joules: float
    sampled_joules: float | None

    def to_dict(self) -> dict[str, Any]:
        # Non-finite figures (a noise of no spread to judge) become null where JSON is written.
        return asdict(self)

    @property
    def cross_check(self) -> float | None:
        """Sampled over counted joules, minus one (None without samples)."""
        if self.sampled_joules is None or self.counter_joules <= 0:
            return None
        return self.sampled_joules / self.counter_joules - 1.0


def whole_intervals(
    ticks: list[tuple[float, float]], start: float, end: float
) -> list[tuple[float, float]]:
    """The ticks from the first to the last that fall inside [start, end]: the intervals
    between consecutive ones lie wholly inside the window."""
    return [(t, e) for t, e in ticks if start <= t <= end]


def reading(
    trace: EnergyTrace,
    start: float,
    end: float,
    runs: int,
    gpu_ms: float,
    idle_watts: float | None,
) -> EnergyReading | str:
    """The reading of a window from `start` to `end` (the meter's clock) in which `runs`
    back-to-back runs took `gpu_ms` of GPU time; or why there is none."""
    if trace.failed:
        return trace.failed
    if runs < 1 or gpu_ms <= 0 or end <= start:
        return "the window held no run"
    inside = whole_intervals(trace.ticks, start, end)
    intervals = len(inside) - 1
    if intervals < MIN_INTERVALS:
        return (
            f"the energy counter changed {len(inside)} time(s) inside the {end - start:.2f} s "
            f"window: at least {MIN_INTERVALS + 1} are needed (lengthen timing.energy_window_s)"
        )
    (first_t, first_e), (last_t, last_e) = inside[0], inside[-1]
    if last_e < first_e or last_t <= first_t:
        return "the energy counter went backwards inside the window"
    counter_joules = (last_e - first_e) / 1000.0
    watts = _watts(inside)
    powers = [(e1 - e0) / 1000.0 / (t1 - t0) for (t0, e0), (t1, e1) in pairwise(inside) if t1 > t0]
    window_s = end - start
    per_run = watts * window_s / runs
    above = None if idle_watts is None else (watts - idle_watts) * window_s / runs
    return EnergyReading(
        joules_per_run=per_run,
        average_watts=watts,
        idle_watts=idle_watts,
        above_idle_joules_per_run=above,
        sm_clock_mhz=statistics.median(trace.clocks_mhz) if trace.clocks_mhz else None,
        temperature_c=statistics.median(trace.temperatures_c) if trace.temperatures_c else None,
        window_s=window_s,
        runs=runs,
        time_per_run_ms=gpu_ms / runs,
        duty=min(1.0, gpu_ms / 1000.0 / window_s),
        intervals=intervals,
        counter_period_ms=1000.0 * statistics.median(b[0] - a[0] for a, b in pairwise(inside)),
        noise=robust_noise(powers),
        counter_joules=counter_joules,
        sampled_joules=integrate(trace.power, first_t, last_t),
    )


def integrate(samples: list[tuple[float, float]], start: float, end: float) -> float | None:
    """Joules from power samples (time s, W) over [start, end]: each sample's power held
    until the next one (the last one's to the end); None where no sample covers the start."""
    held = [(t, w) for t, w in samples if t <= start]
    within = [(t, w) for t, w in samples if start < t < end]
    if not held:
        return None
    steps = [(start, held[-1][1]), *within, (end, 0.0)]
    return sum(w * (t1 - t0) for (t0, w), (t1, _) in pairwise(steps))


def idle_watts(trace: EnergyTrace, start: float, end: float) -> float | None:
    """The average power over the whole counter intervals inside an idle stretch."""
    inside = whole_intervals(trace.ticks, start, end)
    if len(inside) < 2 or inside[-1][0] <= inside[0][0]:
        return None
    return _watts(inside)


def _watts(inside: list[tuple[float, float]]) -> float:
    """The counter's joules from the first tick to the last, over their time."""
    (first_t, first_e), (last_t, last_e) = inside[0], inside[-1]
    return (last_e - first_e) / 1000.0 / (last_t - first_t)


def energy_metrics(reading: dict[str, Any], work: dict[str, int] | None) -> dict[str, float]:
    """The metrics of an energy reading (gpubench.model.metrics declares them): the energy of
    one run in mJ, the average power, and the work done per joule."""
    from gpubench.model import metrics

    joules = reading["joules_per_run"]
    values = {metrics.ENERGY.key: joules * 1000.0, metrics.POWER.key: reading["average_watts"]}
    if joules > 0 and work:
        if work.get("flops"):
            values[metrics.GFLOP_PER_J.key] = work["flops"] / joules / 1e9
        if work.get("bytes_moved"):
            values[metrics.GB_PER_J.key] = work["bytes_moved"] / joules / 1e9
    return values
