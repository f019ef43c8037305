"""One timing policy: warm-up, samples until a noise target or a budget (or until the target is
plainly out of reach), cold or hot samples, samples taken while the GPU throttled thrown away.

The GPU time of each sample comes from the backend (CUDA events around the launches); the
host clock here only bounds how long we keep sampling, it never times the kernel.

Cold samples come in batches (`measure_batches`): the backend enqueues several samples back to
back, each its own flushed interval between its own events, and waits once, so the GPU is not
left idle while the host reads a sample, the clock and the stopping rule. Where batches are
short on the GPU, the next is enqueued before the wait for the one in flight (`Ahead`), so the
GPU goes from one batch straight into the next. The rule still sees every sample in order and
stops where the one-by-one loop would; `LoopTime` says where the loop's time went.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from gpubench.model.stats import robust_noise

NOISE_CHECK_EVERY = 8
# A noise estimate far enough above the target that more samples cannot bring it down stops
# sampling (`unstable`): robust_noise estimates the spread of the samples, which more samples
# pin down but do not shrink. Its relative standard error is about c/sqrt(n), c = 1.17 for
# normal or lognormal samples, 1.3-1.7 for skewed, exponential-tailed or bimodal ones
# (simulated); OUT_OF_REACH_SE takes 2.0, and the estimate must stand OUT_OF_REACH_SIGMAS of
# those above the target: 1.42x the target at 200 kept samples, 1.30x at 400, 1.21x at 800.
# Checked at 200 kept samples and each doubling: each check costs a sort of the samples.
OUT_OF_REACH_FIRST = 200
OUT_OF_REACH_SE = 2.0
OUT_OF_REACH_SIGMAS = 3.0
MIN_ENERGY_WINDOW_S = 0.3
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
    # Energy per run beside the time (gpubench.engine.energy): NVML's energy counter over a
    # window of back-to-back runs of this long, after timing, for every verified result.
    energy: bool = False
    energy_window_s: float = 1.0

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
        if not self.energy_window_s >= MIN_ENERGY_WINDOW_S:  # NaN too
            # The counter moves every 100 ms: a shorter window holds too few whole intervals.
            problems.append(("energy_window_s", f"must be at least {MIN_ENERGY_WINDOW_S:g}"))
        # Bounds that no real measurement needs: a typo should not mean a week of sampling.
        for name, limit in (
            ("warmup", 100_000),
            ("min_samples", 1_000_000),
            ("max_samples", 10_000_000),
            ("min_time_s", 86_400.0),
            ("max_time_s", 86_400.0),
            ("hot_sample_ms", 60_000.0),
            ("time_limit_s", 7 * 86_400.0),
            ("energy_window_s", 3_600.0),
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
    # Where the loop's time went (GPU time from the events, the host's own work).
    loop: LoopTime | None = None
    # True when sampling stopped early because even the fastest sample was slower than
    # `give_up_above_ms` (a tuning run's best so far, with its margin): the samples are the
    # evidence, the figure is not a result to rank.
    gave_up: bool = False


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
    give_up_above_ms: float | None = None,
) -> Measurement:
    """Warm up, then take samples one at a time until the stopping rule says enough
    (`measure_batches` with batches of one: the SM clock read after every sample).

    `clock_mhz`, if given, reads the SM clock after each sample; samples below
    `throttle_threshold × max_clock_mhz` are discarded (they still count against the budget)
    as a passing slow-down. Where every one of the first `min_samples` samples is below it,
    the clock is capped under this load, not passing: those samples are kept, every later one
    too, and the measurement says so (`clock_capped`, with the clock).
    """
    return measure_batches(
        lambda wanted: Batch([time_once_ms()]),
        policy,
        host_clock=host_clock,
        clock_mhz=clock_mhz,
        max_clock_mhz=max_clock_mhz,
        runs_per_sample=runs_per_sample,
        max_batch=1,
        give_up_above_ms=give_up_above_ms,
    )


def measure_batches(
    take: Callable[[int], Batch],
    policy: TimingPolicy,
    *,
    host_clock: Callable[[], float] = time.perf_counter,
    clock_mhz: Callable[[], float | None] | None = None,
    max_clock_mhz: float | None = None,
    runs_per_sample: int = 1,
    max_batch: int = NOISE_CHECK_EVERY,
    give_up_above_ms: float | None = None,
    ahead: Ahead | None = None,
) -> Measurement:
    """Warm up, then take samples in batches until the stopping rule says enough.

    `take(n)` runs between 1 and n samples back to back (fewer where the caller must look at
    the device after a sample: an audited run) and returns their GPU times. The stopping
    rule sees the samples one by one, as `measure` would: batches are sized so that none
    runs past a point where the rule could stop (the next noise check, the capped-clock
    switch, max_samples), so the rule's decisions and the samples kept are those of the
    one-by-one loop on the same sample stream. Two things are per batch, not per sample:
    the SM clock is read once after a batch and applies to each of its samples (a throttled
    batch is discarded whole), and the host-clock budget is checked after a batch, whose
    size is then held to what the time left allows at the pace seen so far. The first
    min_samples samples are taken one at a time; then batches of 2, 4, up to `max_batch`.

    With `ahead`, past the first min_samples the next batch is enqueued before the wait for
    the one in flight, so the GPU goes from one straight into the next, where the caller
    allows it and a batch is short on the GPU (`AHEAD_BELOW_MS`). It is sized as the loop
    would size it should every sample of the batch in flight be kept; once that batch is
    judged it is the next batch only if that is the size the loop would now ask for. Where
    it is not (a throttled batch moved the next decision point), or the rule stopped, or the
    budget ran out, it has run all the same: it is waited for and counted as runs, never as
    samples. So the batches judged, and the rule's decisions, are those without `ahead` (but
    for the budget's hold, which the host clock sets). Nothing is left running on return.

    `give_up_above_ms` (a tuning run's bar): at each point where the rule could stop, once
    min_samples samples are kept, sampling ends early (`gave_up`) if even the fastest kept
    sample is above it; the bar is per run, so a hot sample's per-run average is compared.
    """
    loop = _Loop(take, policy, host_clock, runs_per_sample, max_batch, give_up_above_ms, ahead)
    floor = policy.throttle_threshold * max_clock_mhz if clock_mhz and max_clock_mhz else None
    got = _Samples(floor, policy.min_samples, runs_per_sample)
    try:
        loop.warm_up()
        converged = loop.sample(got, host_clock(), clock_mhz)
        loop.drain()  # a batch enqueued ahead has run: waited for, counted as runs
    except BaseException:
        loop.abandon()  # nothing left running; the error raised is the first one
        raise
    return loop.measurement(got, converged)


@dataclass(frozen=True)
class Batch:
    """Samples run back to back with one wait at the end, and what the events around them
    tell of the GPU's time between them (None where the backend does not say)."""

    samples_ms: list[float]
    # GPU ms from the batch's first work (its first restore or flush) to its last end event.
    span_ms: float | None = None
    # GPU ms from before each L2 flush to its sample's start event, summed.
    flush_ms: float | None = None


@dataclass(frozen=True)
class Ahead:
    """How a caller lets the loop enqueue a batch while the one before it is still in flight.

    `start(n)` enqueues up to n samples as `take(n)` would, without waiting, and returns the
    wait: calling it once waits for those samples and returns their Batch. `allowed(n)` says
    whether the next samples (those `start(n)` would enqueue) may be enqueued before the wait
    for the batch in flight: False where the host must look at the device between the two
    (an audited run in either) or a sample must run alone."""

    start: Callable[[int], Callable[[], Batch]]
    allowed: Callable[[int], bool]


# A batch is enqueued ahead only while it is expected to last less than this on the GPU (at
# the last batch's GPU time per sample). Below it the host's tens of microseconds between
# batches are a share of the GPU's time worth winning back; above it they are a few percent
# or less, and the batch that runs for nothing where the rule stops (it was enqueued before
# the rule judged the batch before it) would cost more than it saves.
AHEAD_BELOW_MS = 1.0


@dataclass
class LoopTime:
    """Where a timing loop's time went: GPU ms from the events, host seconds from the host
    clock. The GPU time outside the spans of the batches is the host's: waiting for a batch
    to end, reading the events, enqueuing the next batch, where none was enqueued ahead."""

    timed_ms: float = 0.0  # GPU, inside timed intervals (warm-up, discarded, thrown away too)
    span_ms: float | None = 0.0  # GPU, from each batch's first work to its last end event
    flush_ms: float | None = 0.0  # GPU, the L2 flushes (with the events around them)
    clock_s: float = 0.0  # host, reading the SM clock
    rule_s: float = 0.0  # host, the stopping rule (noise estimates included)
    batches: int = 0
    samples: int = 0  # intervals run: warm-up and batches thrown away included
    ahead: int = 0  # batches enqueued before the wait for the batch before them
    thrown: int = 0  # of those, batches that ran but held no sample (counted as runs)

    def count(self, batch: Batch, runs_per_sample: int) -> None:
        self.batches += 1
        self.samples += len(batch.samples_ms)
        self.timed_ms += sum(batch.samples_ms) * runs_per_sample
        self.span_ms = _plus(self.span_ms, batch.span_ms)
        self.flush_ms = _plus(self.flush_ms, batch.flush_ms)

    def parts(self) -> dict[str, float]:
        """In seconds (counts as they are), named as gpubench.model.phases.TIMING_PARTS, only what
        is known: the GPU's time between samples only where the backend's events say."""
        parts = {
            "gpu_timed": self.timed_ms / 1e3,
            "clock_reads": self.clock_s,
            "stopping_rule": self.rule_s,
            "batches": float(self.batches),
            "samples": float(self.samples),
            "batches_ahead": float(self.ahead),
            "batches_thrown": float(self.thrown),
        }
        if self.span_ms is not None and self.flush_ms is not None:
            parts["gpu_flush"] = self.flush_ms / 1e3
            # At least 0: events resolve to about half a microsecond, each interval's own.
            parts["gpu_between"] = max(0.0, self.span_ms - self.timed_ms - self.flush_ms) / 1e3
        return parts


def _plus(total: float | None, more: float | None) -> float | None:
    return None if total is None or more is None else total + more


@dataclass(slots=True)  # made twice a batch: a frozen dataclass costs microseconds to make
class _Counts:
    """What sizes the next batch: the samples kept, held down by the clock and judged."""

    kept: int
    held: int
    discarded: int
    attempts: int
    awaiting_cap: bool  # a floor, and nothing kept yet: the capped-clock switch may come

    @classmethod
    def of(cls, got: _Samples, attempts: int) -> _Counts:
        return cls(
            len(got.kept),
            len(got.held),
            got.discarded,
            attempts,
            got.floor is not None and not got.kept,
        )

    def all_kept(self, samples: int) -> _Counts:
        """These counts after `samples` more, should every one be kept."""
        return _Counts(
            self.kept + samples, self.held, self.discarded, self.attempts + samples, False
        )


def _ready(batch: Batch) -> Callable[[], Batch]:
    """The wait of a batch taken whole (the caller waited for it already)."""
    return lambda: batch


@dataclass(eq=False, slots=True)  # each flight is itself: the loop removes the one it waits for
class _Flight:
    """A batch enqueued and not yet waited for."""

    wanted: int
    wait: Callable[[], Batch]
    # Enqueued ahead: the size doubling as it was before this batch took its turn, and the
    # budget's hold it was sized with (a pace estimate, not a decision of the rule).
    size_before: int = 0
    hold: int | None = None


@dataclass
class _Loop:
    """The sampling loop's state between batches: its counts, the batch size, the batches in
    flight and where the time went."""

    take: Callable[[int], Batch]
    policy: TimingPolicy
    host_clock: Callable[[], float]
    runs_per_sample: int
    max_batch: int
    give_up_above_ms: float | None = None
    ahead: Ahead | None = None
    attempts: int = 0
    gave_up: bool = False
    size: int = 2  # the next batch's size before the limits: doubles up to max_batch
    time: LoopTime = field(default_factory=LoopTime)
    flights: list[_Flight] = field(default_factory=list)  # enqueued, not waited for; oldest first
    ms_per_sample: float | None = None  # GPU span per sample of the last batch waited for

    def begin(self, wanted: int) -> _Flight:
        """Enqueue up to `wanted` samples (waited for by `end`)."""
        wanted = max(1, wanted)
        if self.ahead is None:
            flight = _Flight(wanted, _ready(self.take(wanted)))
        else:
            flight = _Flight(wanted, self.ahead.start(wanted))
        self.flights.append(flight)
        return flight

    def end(self, flight: _Flight) -> list[float]:
        self.flights.remove(flight)  # before the wait: never waited for twice
        batch = flight.wait()
        if not 1 <= len(batch.samples_ms) <= flight.wanted:
            raise ValueError(f"asked for {flight.wanted} samples, got {len(batch.samples_ms)}")
        self.time.count(batch, self.runs_per_sample)
        if batch.span_ms is not None:
            self.ms_per_sample = batch.span_ms / len(batch.samples_ms)
        return batch.samples_ms

    def warm_up(self) -> None:
        done = 0
        while done < self.policy.warmup:
            done += len(self.end(self.begin(min(self.policy.warmup - done, self.max_batch))))

    def sample(
        self, got: _Samples, started: float, clock_mhz: Callable[[], float | None] | None
    ) -> bool:
        """Batches until the rule stops; whether it converged."""
        while True:
            samples = self.next_samples(got, started)
            read_at = time.perf_counter()
            clock = clock_mhz() if clock_mhz is not None else None
            self.time.clock_s += time.perf_counter() - read_at
            for sample in samples:
                # Batches end at the samples the rule could stop after; should one stop inside a
                # batch all the same, the rest of it ran (counted as runs) but is no sample.
                verdict = self.judge(got, sample, clock)
                if verdict is not None:
                    return verdict
            # Out of time once min_samples samples are in, kept or held down by the clock.
            enough = self.enough(len(got.kept), len(got.held))
            if enough and self.host_clock() - started >= self.policy.max_time_s:
                return self.out_of_budget(got)
            if self.flights:  # a batch enqueued ahead: is it the next batch?
                self.confirm_ahead(_Counts.of(got, self.attempts))

    def next_samples(self, got: _Samples, started: float) -> list[float]:
        """The next batch's samples: the batch enqueued ahead, else one enqueued now; before
        the wait for it, the batch after it enqueued ahead where it may be."""
        if self.flights:
            current = self.flights[0]
        elif self.max_batch == 1 or self.attempts < self.policy.min_samples:
            # One at a time (samples that may not share a batch; the first min_samples):
            # nothing to size, nothing to send ahead. This path runs once a sample for
            # kernels of tens of microseconds, so it does no more than it must.
            return self.end(self.begin(1))
        else:
            counts = _Counts.of(got, self.attempts)
            current = self.begin(self.next_size(counts, self.hold(counts, started)))
        self.go_ahead(got, current, started)
        return self.end(current)

    def next_size(self, counts: _Counts, hold: int | None) -> int:
        """The next batch's size (and the one after it doubled)."""
        if counts.attempts < self.policy.min_samples:
            # The first min_samples one at a time, each with its own clock reading: they
            # tell a passing slow-down from a capped clock, and the audit falls among them.
            return 1
        wanted = self.limited(counts, hold, self.size)
        self.size = min(2 * self.size, self.max_batch)
        return wanted

    def limited(self, counts: _Counts, hold: int | None, size: int) -> int:
        wanted = min(size, self.max_batch, self.to_decision(counts))
        return wanted if hold is None else min(wanted, hold)

    def hold(self, counts: _Counts, started: float) -> int | None:
        """The samples the time left allows at the pace so far, or None (no hold): the budget
        is checked between batches."""
        if self.max_batch > 1 and self.enough(counts.kept, counts.held):
            spent = self.host_clock() - started
            pace = spent / counts.attempts
            if pace > 0:
                return max(1, int((self.policy.max_time_s - spent) / pace))
        return None

    def go_ahead(self, got: _Samples, current: _Flight, started: float) -> None:
        """Enqueue the batch after `current` before the wait for it: past the first
        min_samples, where the caller allows it and the batch is short on the GPU, sized as
        if every sample of `current` is kept; not where the rule surely stops after it."""
        ahead, policy = self.ahead, self.policy
        if ahead is None or self.attempts < policy.min_samples or self.ms_per_sample is None:
            return
        after = _Counts.of(got, self.attempts).all_kept(current.wanted)
        if after.attempts >= policy.max_samples:
            return  # the last sample is in `current`
        if self.enough(after.kept, after.held) and self.host_clock() - started >= policy.max_time_s:
            return  # out of time after `current`
        hold = self.hold(after, started)
        wanted = self.limited(after, hold, self.size)
        if self.ms_per_sample * wanted >= AHEAD_BELOW_MS or not ahead.allowed(wanted):
            return
        flight = self.begin(wanted)
        flight.size_before, flight.hold = self.size, hold
        self.size = min(2 * self.size, self.max_batch)
        self.time.ahead += 1

    def confirm_ahead(self, counts: _Counts) -> None:
        """The batch enqueued ahead is the next batch where it is the size the loop would now
        ask for (with the budget's hold it was sized with); else it ran for nothing."""
        if not self.flights:
            return
        flight = self.flights[0]
        if self.limited(counts, flight.hold, flight.size_before) != flight.wanted:
            self.size = flight.size_before  # the next batch takes its turn
            self.throw(flight)

    def throw(self, flight: _Flight) -> None:
        """Wait for a batch that ran but holds no sample: counted as runs."""
        self.end(flight)
        self.time.thrown += 1

    def drain(self) -> None:
        """At the end: the batch still in flight (enqueued ahead) waited for and counted."""
        for flight in list(self.flights):
            self.throw(flight)

    def abandon(self) -> None:
        """On an error: every batch in flight waited for, its own errors left unsaid."""
        for flight in list(self.flights):
            self.flights.remove(flight)
            with contextlib.suppress(Exception):
                flight.wait()

    def to_decision(self, counts: _Counts) -> int:
        """Samples until the next one after which the rule could stop: the next noise check
        (counting kept samples: discarded ones only put it off), the switch to a capped
        clock, max_samples."""
        policy, count = self.policy, counts.kept
        if count < policy.min_samples:
            check = policy.min_samples
        else:
            check = (count // NOISE_CHECK_EVERY + 1) * NOISE_CHECK_EVERY
        distance = min(check - count, policy.max_samples - counts.attempts)
        if counts.awaiting_cap:
            distance = min(distance, policy.min_samples - counts.discarded)
        return max(1, distance)

    def enough(self, kept: int, held: int) -> bool:
        """Whether min_samples are in, kept or held down by a capped clock."""
        return max(kept, held) >= self.policy.min_samples

    def judge(self, got: _Samples, sample: float, clock: float | None) -> bool | None:
        """Add one sample: True or False (converged or not) where sampling stops after it,
        None to go on."""
        started = time.perf_counter()
        self.attempts += 1
        got.add(sample, clock)
        policy, count = self.policy, len(got.kept)
        verdict: bool | None = None
        decision = count >= policy.min_samples and (
            count % NOISE_CHECK_EVERY == 0 or count == policy.min_samples
        )
        # The noise estimate is O(n); checking it every few samples keeps the loop cheap.
        if decision and self.cannot_win(got):
            self.gave_up = True
            verdict = robust_noise(got.kept) <= policy.target_noise
        elif (
            decision
            and got.total_ms * 1e-3 >= policy.min_time_s
            and robust_noise(got.kept) <= policy.target_noise
        ):
            verdict = True
        elif self.attempts >= policy.max_samples:
            verdict = self.out_of_budget(got)
        elif decision and (got.capped or not got.held) and self.out_of_reach(got.kept):
            verdict = False
        self.time.rule_s += time.perf_counter() - started
        return verdict

    def out_of_reach(self, kept: list[float]) -> bool:
        """At 200 kept samples and each doubling: the noise is out of the target's reach
        (see OUT_OF_REACH_FIRST)."""
        count = len(kept)
        times, rest = divmod(count, OUT_OF_REACH_FIRST)
        if not times or rest or times & (times - 1):  # 200 x a power of two only
            return False
        return beyond_reach(robust_noise(kept), self.policy.target_noise, count)

    def cannot_win(self, got: _Samples) -> bool:
        """Even the fastest kept sample is above the bar: more samples cannot bring the
        median under it."""
        bar = self.give_up_above_ms
        return bar is not None and bool(got.kept) and min(got.kept) > bar

    def out_of_budget(self, got: _Samples) -> bool:
        # Never empty-handed: with no sample kept, every one was held down (capped).
        got.settle_on_the_held_clock()
        return robust_noise(got.kept) <= self.policy.target_noise

    def measurement(self, got: _Samples, converged: bool) -> Measurement:
        return Measurement(
            got.kept,
            converged,
            got.discarded,
            self.runs_per_sample,
            self.time.samples * self.runs_per_sample,
            statistics.median(got.clocks) if got.clocks else None,
            got.capped,
            self.time,
            self.gave_up,
        )


def beyond_reach(noise: float, target: float, count: int) -> bool:
    """Whether a noise estimate from `count` samples stands OUT_OF_REACH_SIGMAS standard
    errors above the target: more samples will not bring it to the target."""
    return noise > target * (1 + OUT_OF_REACH_SIGMAS * OUT_OF_REACH_SE / math.sqrt(count))


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
