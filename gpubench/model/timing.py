"""One timing policy: warm-up, samples until a noise target or a budget, cold or hot samples,
samples taken while the GPU throttled thrown away.

The GPU time of each sample comes from the backend (CUDA events around the launches); the
host clock here only bounds how long we keep sampling, it never times the kernel.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from gpubench.model.stats import robust_noise

NOISE_CHECK_EVERY = 8
MODES = ("cold", "hot")


@dataclass(frozen=True)
class TimingPolicy:
    warmup: int = 3
    min_samples: int = 10
    max_samples: int = 1000
    # Keep sampling until this much GPU time has been measured...
    min_time_s: float = 0.05
    # ...and the robust relative noise (see stats.robust_noise) is at or below this, or the
    # budget runs out (the result is then marked `unstable`).
    target_noise: float = 0.02
    max_time_s: float = 2.0
    # cold: one run per sample, L2 flushed first (where flush_l2 says so).
    # hot: back-to-back runs per sample, the per-run average; for kernels of a few
    # microseconds, where one launch is shorter than the launch overhead.
    mode: str = "cold"
    # Hot mode: runs per sample are chosen so one sample lasts about this long.
    hot_sample_ms: float = 1.0
    # None: the suite decides (memory-bound suites flush). Ignored in hot mode.
    flush_l2: bool | None = None
    # A sample taken while the SM clock (read through NVML) is below this fraction of its
    # maximum is thrown away as throttled.
    throttle_threshold: float = 0.9
    # A variant whose check and measurement take longer than this is killed with its worker
    # and recorded `timeout` (the kernel never ended, or the machine is stuck).
    time_limit_s: float = 120.0
    # For kernels you do not trust: every timed run checked, inputs switched between two sets
    # at random before each, inputs compared after each (gpubench.engine.audit; docs/guarantees.md).
    untrusted: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def field_types(cls) -> dict[str, type]:
        hints = {"int": int, "float": float, "str": str, "bool": bool, "bool | None": bool}
        return {f.name: hints[str(f.type)] for f in fields(cls)}

    def check(self) -> list[tuple[str, str]]:
        """(field, problem) pairs for settings that cannot work."""
        problems = []
        if self.warmup < 0:
            problems.append(("warmup", "must be 0 or more"))
        if self.min_samples < 1:
            problems.append(("min_samples", "must be at least 1"))
        if self.max_samples < self.min_samples:
            problems.append(("max_samples", "must be at least min_samples"))
        if self.min_time_s < 0:
            problems.append(("min_time_s", "must be 0 or more"))
        if self.max_time_s <= 0:
            problems.append(("max_time_s", "must be positive"))
        if self.target_noise <= 0:
            problems.append(("target_noise", "must be positive"))
        if self.mode not in MODES:
            problems.append(("mode", f"must be one of {', '.join(MODES)}"))
        if self.hot_sample_ms <= 0:
            problems.append(("hot_sample_ms", "must be positive"))
        if not 0 <= self.throttle_threshold <= 1:
            problems.append(("throttle_threshold", "must be between 0 and 1"))
        if self.time_limit_s <= 0:
            problems.append(("time_limit_s", "must be positive"))
        # Bounds that no real measurement needs: a typo should not mean a week of sampling.
        for name, limit in (
            ("warmup", 100_000),
            ("min_samples", 1_000_000),
            ("max_samples", 10_000_000),
            ("min_time_s", 86_400.0),
            ("max_time_s", 86_400.0),
            ("hot_sample_ms", 60_000.0),
            ("time_limit_s", 7 * 86_400.0),
        ):
            if getattr(self, name) > limit:
                problems.append((name, f"must be at most {limit:g}"))
        return problems


@dataclass(frozen=True)
class Measurement:
    samples_ms: list[float]
    # True when the noise target was met; False when the budget stopped sampling first.
    converged: bool
    # Samples thrown away because the SM clock was below the throttle threshold.
    discarded: int = 0
    # Runs per sample (1 in cold mode).
    runs_per_sample: int = 1
    # Runs made while measuring, warm-up and discarded samples included.
    runs: int = 0
    # Median SM clock read after the kept samples (None without a clock to read).
    clock_mhz: float | None = None
    # True when the clock stayed below the throttle threshold for the first min_samples
    # samples: the GPU holds a lower clock under this load (a power or thermal cap), and the
    # samples at that clock are the figure, kept with the clock they ran at.
    clock_capped: bool = False


@dataclass
class _Samples:
    """The samples kept so far, their clocks, and the throttled ones held back."""

    floor: float | None  # clock (MHz) below which a sample is discarded; None: keep all
    min_samples: int
    runs_per_sample: int
    kept: list[float] = field(default_factory=list)
    clocks: list[float] = field(default_factory=list)  # the clock after each kept sample
    held: list[tuple[float, float]] = field(default_factory=list)  # (sample, clock) discarded
    discarded: int = 0
    capped: bool = False
    total_ms: float = 0.0

    def add(self, sample: float, clock: float | None) -> None:
        if self.floor is not None and clock is not None and clock < self.floor:
            self.discarded += 1
            self.held.append((sample, clock))
            if not self.kept and self.discarded >= self.min_samples:
                # Below the threshold throughout: a capped clock, measured as such.
                self.capped, self.floor, self.discarded = True, None, 0
                self.kept = [s for s, _ in self.held]
                self.clocks = [c for _, c in self.held]
                self.total_ms = sum(self.kept) * self.runs_per_sample
            return
        self.kept.append(sample)
        if clock is not None:
            self.clocks.append(clock)
        # A hot sample is a per-run average over runs_per_sample runs: count them all.
        self.total_ms += sample * self.runs_per_sample

    def settle_on_the_held_clock(self) -> None:
        """At the end of the budget: where most samples ran below the threshold (the clock
        fell under this load and stayed down, as a power cap holds it), the held-down samples
        are the figure, marked capped, and the few at the early clock are the ones dropped."""
        if not self.capped and len(self.held) > len(self.kept):
            self.capped, self.discarded = True, len(self.kept)
            self.kept = [s for s, _ in self.held]
            self.clocks = [c for _, c in self.held]


def measure(
    time_once_ms: Callable[[], float],
    policy: TimingPolicy,
    *,
    host_clock: Callable[[], float] = time.perf_counter,
    clock_mhz: Callable[[], float | None] | None = None,
    max_clock_mhz: float | None = None,
    runs_per_sample: int = 1,
) -> Measurement:
    """Warm up, then take samples until the stopping rule says enough.

    `clock_mhz`, if given, reads the SM clock after each sample; samples below
    `throttle_threshold × max_clock_mhz` are discarded (they still count against the budget)
    as a passing slow-down. Where every one of the first `min_samples` samples is below it,
    the clock is capped under this load, not passing: those samples are kept, every later one
    too, and the measurement says so (`clock_capped`, with the clock).
    """
    for _ in range(policy.warmup):
        time_once_ms()
    floor = policy.throttle_threshold * max_clock_mhz if clock_mhz and max_clock_mhz else None
    got = _Samples(floor, policy.min_samples, runs_per_sample)
    started = host_clock()
    attempts = 0

    def done(converged: bool) -> Measurement:
        return Measurement(
            got.kept,
            converged,
            got.discarded,
            runs_per_sample,
            (policy.warmup + attempts) * runs_per_sample,
            statistics.median(got.clocks) if got.clocks else None,
            got.capped,
        )

    while True:
        sample = time_once_ms()
        attempts += 1
        clock = clock_mhz() if clock_mhz is not None else None
        got.add(sample, clock)
        count = len(got.kept)
        # The noise estimate is O(n); checking it every few samples keeps the loop cheap.
        if (
            count >= policy.min_samples
            and got.total_ms * 1e-3 >= policy.min_time_s
            and (count % NOISE_CHECK_EVERY == 0 or count == policy.min_samples)
            and robust_noise(got.kept) <= policy.target_noise
        ):
            return done(True)
        # Out of time once min_samples samples are in, kept or held down by the clock.
        enough = max(count, len(got.held)) >= policy.min_samples
        out_of_budget = attempts >= policy.max_samples or (
            enough and host_clock() - started >= policy.max_time_s
        )
        if out_of_budget:
            # Never empty-handed: with no sample kept, every one was held down (capped).
            got.settle_on_the_held_clock()
            return done(robust_noise(got.kept) <= policy.target_noise)


def hot_runs_per_sample(one_run_ms: float, policy: TimingPolicy, cap: int = 10_000) -> int:
    """Back-to-back runs per hot sample, so that a sample lasts about `hot_sample_ms`."""
    if one_run_ms <= 0:
        return cap
    return max(1, min(cap, round(policy.hot_sample_ms / one_run_ms)))


def host_time_once_ms(
    work: Callable[[], object], host_clock: Callable[[], float] = time.perf_counter
) -> float:
    """Wall time of synchronous CPU work (a NumPy reference), in ms."""
    started = host_clock()
    work()
    return (host_clock() - started) * 1e3
