"""The stopping rule, driven by scripted sample times and a fake host clock."""

from __future__ import annotations

import itertools

import pytest

from gpubench.model.timing import TimingPolicy, measure


class Clock:
    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def source(values):
    it = itertools.cycle(values)
    calls = []

    def once():
        calls.append(1)
        return next(it)

    return once, calls


def test_warmup_runs_are_not_samples():
    once, calls = source([1.0])
    m = measure(once, TimingPolicy(warmup=4, min_samples=10, min_time_s=0), host_clock=Clock(0))
    assert len(m.samples_ms) == 10 and len(calls) == 14 and m.converged


def test_quiet_samples_stop_at_the_minimum_once_enough_gpu_time_is_seen():
    once, _ = source([1.0])
    m = measure(once, TimingPolicy(warmup=0, min_samples=10, min_time_s=0.05), host_clock=Clock(0))
    assert len(m.samples_ms) >= 50  # 50 x 1 ms = the 0.05 s minimum
    assert m.converged


def test_noisy_samples_run_to_the_sample_cap_and_say_so():
    once, _ = source([1.0, 3.0])
    policy = TimingPolicy(warmup=0, min_samples=5, max_samples=40, min_time_s=0, target_noise=0.01)
    m = measure(once, policy, host_clock=Clock(0))
    assert len(m.samples_ms) == 40 and not m.converged


def test_the_time_budget_stops_sampling():
    once, _ = source([1.0, 3.0])
    policy = TimingPolicy(warmup=0, min_samples=5, max_samples=10**6, min_time_s=0, max_time_s=1.0)
    m = measure(once, policy, host_clock=Clock(0.1))
    assert 5 <= len(m.samples_ms) <= 20 and not m.converged


def test_policy_check_names_bad_fields():
    bad = TimingPolicy(warmup=-1, min_samples=0, max_samples=-1, target_noise=0, max_time_s=0)
    names = {name for name, _ in bad.check()}
    assert names == {"warmup", "min_samples", "max_samples", "target_noise", "max_time_s"}


def test_hot_mode_counts_every_run_of_a_sample_against_min_time():
    """A hot sample is a per-run average over `runs` runs: min_time_s is met after
    min_time / (average × runs) samples, not after min_time / average."""
    policy = TimingPolicy(warmup=0, min_samples=10, max_samples=100_000, min_time_s=0.05,
                          target_noise=0.5, max_time_s=60)  # fmt: skip
    calls = []

    def one_sample() -> float:
        calls.append(1)
        return 0.0012  # 1.2 µs per run, averaged over 1,000 runs: 1.2 ms of GPU time

    m = measure(one_sample, policy, runs_per_sample=1000)
    assert m.converged and len(m.samples_ms) == len(calls) == 48  # 0.05 s / 1.2 ms → 42, then
    # the noise check every 8 samples
    assert m.runs == 48 * 1000


def test_exact_counts_of_samples_runs_and_throttled_discards():
    once, calls = source([1.0])
    clocks = itertools.cycle([1000.0, 899.0, 900.0])  # 899 is below 0.9 x 1000; 900 is not
    policy = TimingPolicy(warmup=2, min_samples=10, max_samples=1000, min_time_s=0.016)
    m = measure(once, policy, host_clock=Clock(0), clock_mhz=lambda: next(clocks),
                max_clock_mhz=1000.0)  # fmt: skip
    # 16 kept samples reach 16 ms (the first noise check at or after it), 8 thrown away.
    assert (len(m.samples_ms), m.discarded, m.runs, len(calls)) == (16, 8, 2 + 24, 2 + 24)
    assert m.converged and m.runs_per_sample == 1


def test_the_noise_target_is_inclusive_and_min_time_is_inclusive():
    once, _ = source([1.0, 1.0, 1.0, 2.0])  # robust noise exactly 0.7413 * 0.25 / 1.0
    exact = 0.7413 * 0.25
    m = measure(once, TimingPolicy(warmup=0, min_samples=8, max_samples=8, min_time_s=0.008,
                                   target_noise=exact), host_clock=Clock(0))  # fmt: skip
    assert m.converged and len(m.samples_ms) == 8
    m = measure(once, TimingPolicy(warmup=0, min_samples=8, max_samples=8, min_time_s=0.008,
                                   target_noise=exact * 0.999), host_clock=Clock(0))  # fmt: skip
    assert not m.converged


def test_hot_runs_per_sample_targets_the_sample_length():
    from gpubench.model.timing import hot_runs_per_sample

    policy = TimingPolicy(hot_sample_ms=2.0)
    assert hot_runs_per_sample(0.01, policy) == 200
    assert hot_runs_per_sample(5.0, policy) == 1
    assert hot_runs_per_sample(0.0, policy) == 10_000
    assert hot_runs_per_sample(1e-9, policy, cap=50) == 50


def test_every_policy_check_and_its_boundary():
    good = TimingPolicy()
    assert good.check() == []
    edge = TimingPolicy(warmup=0, min_samples=1, max_samples=1, min_time_s=0.0, target_noise=1e-9,
                        max_time_s=1e-9, hot_sample_ms=1e-9, throttle_threshold=0.0,
                        time_limit_s=1e-9)  # fmt: skip
    assert edge.check() == []
    assert TimingPolicy(throttle_threshold=1.0).check() == []
    cases = {
        "warmup": (TimingPolicy(warmup=-1), "must be 0 or more"),
        "min_samples": (TimingPolicy(min_samples=0), "must be at least 1"),
        "max_samples": (TimingPolicy(min_samples=5, max_samples=4), "must be at least min_samples"),
        "min_time_s": (TimingPolicy(min_time_s=-0.1), "must be 0 or more"),
        "max_time_s": (TimingPolicy(max_time_s=0.0), "must be positive"),
        "target_noise": (TimingPolicy(target_noise=0.0), "must be positive"),
        "mode": (TimingPolicy(mode="warm"), "must be one of cold, hot"),
        "hot_sample_ms": (TimingPolicy(hot_sample_ms=0.0), "must be positive"),
        "throttle_threshold": (TimingPolicy(throttle_threshold=1.01), "must be between 0 and 1"),
        "time_limit_s": (TimingPolicy(time_limit_s=0.0), "must be positive"),
        "energy_window_s": (TimingPolicy(energy_window_s=0.29), "must be at least 0.3"),
    }
    for name, (policy, problem) in cases.items():
        assert policy.check() == [(name, problem)], name
    assert TimingPolicy(throttle_threshold=-0.01).check() == [
        ("throttle_threshold", "must be between 0 and 1")]  # fmt: skip
    assert TimingPolicy(warmup=100_001).check() == [("warmup", "must be at most 100000")]
    assert TimingPolicy(warmup=100_000).check() == []
    assert TimingPolicy(max_time_s=86_401.0).check() == [("max_time_s", "must be at most 86400")]
    assert TimingPolicy(energy_window_s=0.3).check() == []
    assert TimingPolicy(energy_window_s=3_600.0).check() == []
    assert TimingPolicy(energy_window_s=3_600.5).check() == [
        ("energy_window_s", "must be at most 3600")
    ]
    assert TimingPolicy.field_types() == {
        "warmup": int,
        "min_samples": int,
        "max_samples": int,
        "min_time_s": float,
        "target_noise": float,
        "max_time_s": float,
        "mode": str,
        "hot_sample_ms": float,
        "flush_l2": bool,
        "throttle_threshold": float,
        "time_limit_s": float,
        "untrusted": bool,
        "energy": bool,
        "energy_window_s": float,
    }


def test_a_clock_capped_throughout_is_measured_at_that_clock():
    """A GPU that never reaches the clock floor under this load (a power cap): after
    min_samples samples all below it, they are kept, with the clock, and marked capped."""
    policy = TimingPolicy(warmup=1, min_samples=5, max_samples=30, min_time_s=0,
                          throttle_threshold=0.9)  # fmt: skip
    m = measure(lambda: 1.0, policy, clock_mhz=lambda: 500.0, max_clock_mhz=2000.0)
    assert m.samples_ms == [1.0] * 5 and m.discarded == 0 and m.converged
    assert (m.clock_capped, m.clock_mhz, m.runs) == (True, 500.0, 6)


def test_a_clock_that_falls_and_stays_down_is_measured_at_the_lower_clock():
    """The clock drops below the floor after one sample and stays there (a power cap coming
    in): the loop stops at max_samples, and the samples at the held-down clock are the
    figure, marked capped; the one at the early clock is the one dropped."""
    policy = TimingPolicy(warmup=1, min_samples=5, max_samples=30, min_time_s=0,
                          throttle_threshold=0.9)  # fmt: skip
    clocks = iter([1990.0] + [500.0] * 40)
    times = iter([1.0] + [2.0] * 40)
    m = measure(lambda: next(times), policy, clock_mhz=lambda: next(clocks),
                max_clock_mhz=2000.0)  # fmt: skip
    assert m.samples_ms == [2.0] * 29 and m.discarded == 1 and m.converged
    assert (m.clock_capped, m.clock_mhz, m.runs) == (True, 500.0, 31)


def test_held_down_samples_count_toward_the_time_budget():
    """However few samples run at full clock, the time budget ends the loop once min_samples
    are in, kept or held down: never max_samples long kernels."""
    policy = TimingPolicy(warmup=0, min_samples=5, max_samples=10_000, min_time_s=0,
                          max_time_s=1.0, throttle_threshold=0.9)  # fmt: skip
    clocks = iter([1990.0] + [500.0, 1990.0] * 100)
    times = iter([1.0] + [2.0, 1.0] * 100)
    ticks = iter(range(1000))  # the host clock: one second per sample
    m = measure(lambda: next(times), policy, clock_mhz=lambda: next(clocks),
                max_clock_mhz=2000.0, host_clock=lambda: float(next(ticks)))  # fmt: skip
    assert m.runs < 20 and not m.clock_capped and m.samples_ms == [1.0] * len(m.samples_ms)


def test_a_passing_slow_down_is_discarded_and_the_clock_is_the_kept_samples():
    policy = TimingPolicy(warmup=0, min_samples=5, max_samples=30, min_time_s=0,
                          throttle_threshold=0.9)  # fmt: skip
    clocks = iter([500.0] * 4 + [1900.0, 1980.0, 1960.0, 1970.0, 1950.0] + [1980.0] * 30)
    times = iter([9.0] * 4 + [1.0] * 40)
    m = measure(lambda: next(times), policy, clock_mhz=lambda: next(clocks), max_clock_mhz=2000.0)
    assert m.samples_ms == [1.0] * 5 and m.discarded == 4 and m.converged
    assert (m.clock_capped, m.clock_mhz) == (False, 1960.0)


class _SecondPerSample:
    """A sample that takes one second of host time: the host clock reads 0 before the first
    and n seconds after the n-th."""

    def __init__(self, times: list[float]) -> None:
        self.now, self._times = 0.0, iter(times * 100)

    def sample(self) -> float:
        self.now += 1.0
        return next(self._times)

    def clock(self) -> float:
        return self.now


def test_capped_samples_count_every_run_toward_the_minimum_time():
    """Hot samples of 10 runs at a capped clock: five of 1 ms are 50 ms of runs, past the
    40 ms minimum, so sampling stops there."""
    policy = TimingPolicy(warmup=0, min_samples=5, max_samples=30, min_time_s=0.04,
                          max_time_s=1e9, throttle_threshold=0.9)  # fmt: skip
    m = measure(lambda: 1.0, policy, clock_mhz=lambda: 500.0, max_clock_mhz=2000.0,
                runs_per_sample=10, host_clock=lambda: 0.0)  # fmt: skip
    assert (m.clock_capped, m.runs, m.samples_ms) == (True, 50, [1.0] * 5)


def test_as_many_samples_held_down_as_kept_is_not_a_cap():
    """Half the samples below the floor and half above: a passing slow-down, not a cap; the
    figure is the samples at full clock."""
    policy = TimingPolicy(warmup=0, min_samples=5, max_samples=10, min_time_s=0,
                          max_time_s=1e9, throttle_threshold=0.9)  # fmt: skip
    clocks = iter([1990.0, 500.0] * 5)
    times = iter([1.0, 9.0, 2.0, 9.0, 4.0, 9.0, 8.0, 9.0, 16.0, 9.0])  # noisy: no early stop
    m = measure(lambda: next(times), policy, clock_mhz=lambda: next(clocks),
                max_clock_mhz=2000.0, host_clock=lambda: 0.0)  # fmt: skip
    assert (m.clock_capped, m.discarded, m.samples_ms) == (False, 5, [1.0, 2.0, 4.0, 8.0, 16.0])
    assert m.clock_mhz == 1990.0 and not m.converged


def test_a_clock_without_a_maximum_is_read_but_nothing_is_discarded():
    policy = TimingPolicy(warmup=0, min_samples=3, max_samples=10, min_time_s=0)
    clocks = iter([500.0, 700.0, 600.0])
    m = measure(lambda: 1.0, policy, clock_mhz=lambda: next(clocks), max_clock_mhz=None)
    assert (m.samples_ms, m.discarded, m.clock_mhz, m.clock_capped) == ([1.0] * 3, 0, 600.0, False)


def test_noise_exactly_at_the_target_converges():
    from gpubench.model.stats import robust_noise

    samples = [1.0, 1.1, 1.0, 1.2, 1.0]
    policy = TimingPolicy(warmup=0, min_samples=5, max_samples=50, min_time_s=0,
                          target_noise=robust_noise(samples))  # fmt: skip
    times = iter(samples * 10)
    m = measure(lambda: next(times), policy)
    assert m.converged and m.runs == 5


def test_the_time_budget_ends_sampling_at_exactly_max_time_once_min_samples_are_in():
    """At the fifth sample five seconds have passed, exactly max_time_s, with exactly
    min_samples in (kept, or held down by the clock): sampling stops there."""
    policy = TimingPolicy(warmup=0, min_samples=5, max_samples=1000, min_time_s=0,
                          max_time_s=5.0)  # fmt: skip
    noisy = [1.0, 3.0, 9.0, 27.0, 81.0]  # far too noisy to converge
    host = _SecondPerSample(noisy)
    m = measure(host.sample, policy, host_clock=host.clock)
    assert m.runs == 5 and not m.converged
    host = _SecondPerSample(noisy)
    m = measure(host.sample, policy, host_clock=host.clock, clock_mhz=lambda: 500.0,
                max_clock_mhz=2000.0)  # fmt: skip
    assert m.runs == 5 and m.clock_capped


def test_host_time_of_one_run_is_the_clock_difference_in_ms():
    from gpubench.model.timing import host_time_once_ms

    ticks = iter([10.0, 10.25])
    ran = []
    assert host_time_once_ms(lambda: ran.append(1), host_clock=lambda: next(ticks)) == 250.0
    assert ran == [1]


@pytest.mark.parametrize(("name", "limit", "shown"), [
    ("warmup", 100_000, "100000"), ("min_samples", 1_000_000, "1e+06"),
    ("max_samples", 10_000_000, "1e+07"), ("min_time_s", 86_400.0, "86400"),
    ("max_time_s", 86_400.0, "86400"), ("hot_sample_ms", 60_000.0, "60000"),
    ("time_limit_s", 7 * 86_400.0, "604800"),
])  # fmt: skip
def test_each_upper_limit_holds_at_the_limit_and_refuses_just_past_it(name, limit, shown):
    step = 1 if isinstance(limit, int) else 0.5
    extra = {"max_samples": limit} if name == "min_samples" else {}
    assert TimingPolicy(**{name: limit, **extra}).check() == []
    past = {name: limit + step, **({"max_samples": limit + step} if name == "min_samples" else {})}
    assert TimingPolicy(**past).check() == [(name, f"must be at most {shown}")]


def test_noise_exactly_at_the_target_converges_when_the_budget_ends_sampling():
    """min_time_s is never reached, so the samples run out at max_samples; their noise, exactly
    the target, still counts as converged (the target is inclusive on both ways out)."""
    from gpubench.model.stats import robust_noise

    samples = [1.0, 1.1, 1.0, 1.2, 1.0]
    policy = TimingPolicy(warmup=0, min_samples=5, max_samples=5, min_time_s=1000.0,
                          target_noise=robust_noise(samples))  # fmt: skip
    times = iter(samples)
    m = measure(lambda: next(times), policy)
    assert m.converged and m.runs == 5
    times = iter(samples)
    tighter = TimingPolicy(warmup=0, min_samples=5, max_samples=5, min_time_s=1000.0,
                           target_noise=robust_noise(samples) * 0.999)  # fmt: skip
    assert not measure(lambda: next(times), tighter).converged


def test_a_policy_as_a_dict_holds_every_field():
    policy = TimingPolicy(warmup=2, min_samples=3, max_samples=4)
    record = policy.to_dict()
    assert record["warmup"] == 2 and record["min_samples"] == 3 and record["max_samples"] == 4
    assert TimingPolicy(**record) == policy


class Batches:
    """Scripted samples taken in batches: the sizes asked for, and a host clock that moves on
    one second per sample."""

    def __init__(self, values: list[float], span_ms: float | None = None) -> None:
        self.stream, self.sizes, self.now, self.span_ms = itertools.cycle(values), [], 0.0, span_ms

    def take(self, wanted: int):
        from gpubench.model.timing import Batch

        self.sizes.append(wanted)
        self.now += wanted
        return Batch([next(self.stream) for _ in range(wanted)], self.span_ms, 0.0)

    def clock(self) -> float:
        return self.now


def _one_by_one_and_batched(values, policy, **kwargs):
    from gpubench.model.timing import measure_batches

    once = itertools.cycle(values)
    single = measure(lambda: next(once), policy, host_clock=lambda: 0.0, **kwargs)
    batches = Batches(values)
    batched = measure_batches(batches.take, policy, host_clock=lambda: 0.0, **kwargs)
    return single, batched, batches.sizes


def _decisions(m):
    return (m.samples_ms, m.converged, m.discarded, m.runs, m.clock_mhz, m.clock_capped)


@pytest.mark.parametrize(
    ("values", "policy", "kwargs"),
    [
        # Never quiet: to max_samples, whatever batch it falls in.
        (
            [1.0, 3.0],
            TimingPolicy(
                warmup=3, min_samples=10, max_samples=100, min_time_s=0, target_noise=0.01
            ),
            {},
        ),
        # Quiet once min_time_s is met: the first noise check at or after 40 ms (48 samples).
        ([1.0], TimingPolicy(warmup=2, min_samples=10, max_samples=1000, min_time_s=0.04), {}),
        # Quiet from the start: stops at min_samples.
        ([1.0], TimingPolicy(warmup=0, min_samples=7, max_samples=1000, min_time_s=0), {}),
        # A capped clock: the switch at min_samples held-down samples, then quiet.
        (
            [2.0],
            TimingPolicy(warmup=1, min_samples=5, max_samples=30, min_time_s=0),
            {"clock_mhz": lambda: 500.0, "max_clock_mhz": 2000.0},
        ),
        # Noisy at first, quiet later: converges at the first noise check it passes.
        (
            [4.0] * 3 + [1.0] * 60,
            TimingPolicy(warmup=0, min_samples=5, max_samples=63, min_time_s=0, target_noise=0.02),
            {},
        ),
    ],
)
def test_batched_sampling_makes_the_one_by_one_loops_decisions_on_the_same_samples(
    values, policy, kwargs
):
    single, batched, sizes = _one_by_one_and_batched(values, policy, **kwargs)
    assert _decisions(batched) == _decisions(single)
    assert sum(sizes) == batched.runs  # no sample run past the one the rule stopped at


def test_batches_grow_to_the_next_noise_check_and_end_at_max_samples():
    """Warm-up in one batch; the first min_samples one at a time; then 2, 4 (to the check at
    16 kept), batches of 8 on the checks, and the 4 left to max_samples."""
    _, batched, sizes = _one_by_one_and_batched(
        [1.0, 3.0],
        TimingPolicy(warmup=3, min_samples=10, max_samples=100, min_time_s=0, target_noise=0.01),
    )
    assert sizes == [3] + [1] * 10 + [2, 4] + [8] * 10 + [4]
    assert (len(batched.samples_ms), batched.runs, batched.converged) == (100, 103, False)
    assert batched.loop.batches == len(sizes) and batched.loop.samples == 103
    assert batched.loop.timed_ms == pytest.approx(sum(([1.0, 3.0] * 52)[:103]))


def test_the_clock_is_read_once_per_batch_and_a_throttled_batch_is_discarded_whole():
    from gpubench.model.timing import measure_batches

    batches = Batches([1.0])
    # One reading per batch: 10 single samples at full clock, then the batches of 2 and 4 at
    # 899 MHz (below 0.9 x 1000), thrown away, then full clock again.
    clocks = iter([1000.0] * 10 + [899.0, 899.0] + [1000.0] * 100)
    policy = TimingPolicy(warmup=0, min_samples=10, max_samples=1000, min_time_s=0.016)
    m = measure_batches(
        batches.take,
        policy,
        host_clock=lambda: 0.0,
        clock_mhz=lambda: next(clocks),
        max_clock_mhz=1000.0,
    )
    assert batches.sizes[:13] == [1] * 10 + [2, 4, 6]
    assert (len(m.samples_ms), m.discarded, m.runs, m.converged) == (16, 6, 22, True)
    assert m.clock_mhz == 1000.0


def test_the_time_budget_is_checked_between_batches_held_to_the_time_left():
    """One second of host time per sample, 20 s of budget: after the first five, batches are
    held to what the pace leaves (2, 1 to the check at 8, 8, then 4 of the 4 s left)."""
    from gpubench.model.timing import measure_batches

    batches = Batches([1.0, 3.0, 9.0, 27.0])
    policy = TimingPolicy(warmup=0, min_samples=5, max_samples=10**6, min_time_s=0, max_time_s=20.0)
    m = measure_batches(batches.take, policy, host_clock=batches.clock)
    assert batches.sizes == [1] * 5 + [2, 1, 8, 4]
    assert m.runs == 20 and not m.converged


def test_the_loop_says_where_its_time_went():
    from gpubench.model.timing import measure_batches

    batches = Batches([1.0], span_ms=10.0)
    policy = TimingPolicy(warmup=2, min_samples=3, max_samples=3, min_time_s=0)
    m = measure_batches(batches.take, policy, host_clock=lambda: 0.0)
    assert (m.loop.batches, m.loop.samples, m.loop.timed_ms) == (4, 5, 5.0)
    assert (m.loop.span_ms, m.loop.flush_ms) == (40.0, 0.0)
    assert m.loop.rule_s > 0
    unknown = measure(lambda: 1.0, policy, host_clock=lambda: 0.0)
    assert unknown.loop.span_ms is None and unknown.loop.timed_ms == 5.0


def test_a_tuning_bar_stops_sampling_at_min_samples_when_even_the_fastest_is_above_it():
    from gpubench.model.timing import measure_batches

    policy = TimingPolicy(warmup=2, min_samples=10, max_samples=1000, min_time_s=1.0)
    batches = Batches([2.0, 2.2])
    m = measure_batches(batches.take, policy, host_clock=lambda: 0.0, give_up_above_ms=1.999)
    assert m.gave_up and len(m.samples_ms) == 10 and m.runs == 12
    assert batches.sizes == [2] + [1] * 10


def test_a_bar_at_or_above_the_fastest_sample_changes_nothing():
    from gpubench.model.timing import measure_batches

    policy = TimingPolicy(
        warmup=2, min_samples=10, max_samples=1000, min_time_s=0.05, target_noise=0.2
    )
    plain = measure_batches(Batches([2.0, 2.2]).take, policy, host_clock=lambda: 0.0)
    barred = measure_batches(
        Batches([2.0, 2.2]).take, policy, host_clock=lambda: 0.0, give_up_above_ms=2.0
    )
    assert not barred.gave_up and not plain.gave_up
    assert barred.samples_ms == plain.samples_ms and len(plain.samples_ms) == 24


def test_the_bar_is_judged_at_each_decision_point_not_between_them():
    """One fast sample among the first ten keeps sampling on; the bar is judged again at the
    next noise check (16 kept), where the fast one is still the fastest: no stop while any
    kept sample is under it."""
    from gpubench.model.timing import measure_batches

    values = [5.0] * 9 + [1.0] + [5.0] * 100
    policy = TimingPolicy(warmup=0, min_samples=10, max_samples=40, min_time_s=10.0)
    m = measure_batches(Batches(values).take, policy, host_clock=lambda: 0.0, give_up_above_ms=2.0)
    assert not m.gave_up and len(m.samples_ms) == 40
    stopped = measure_batches(
        Batches([5.0] * 9 + [3.0] + [5.0] * 100).take,
        policy,
        host_clock=lambda: 0.0,
        give_up_above_ms=2.0,
    )
    assert stopped.gave_up and len(stopped.samples_ms) == 10


def test_hot_mode_judges_the_bar_on_the_per_run_average():
    policy = TimingPolicy(warmup=0, min_samples=10, max_samples=100, min_time_s=10.0)
    m = measure(
        lambda: 1.5, policy, host_clock=lambda: 0.0, runs_per_sample=100, give_up_above_ms=1.4
    )
    assert m.gave_up and len(m.samples_ms) == 10 and m.runs == 1000


# -- batches enqueued ahead (timing.Ahead) ----------------------------------------------------


class Queue:
    """Scripted samples in batches that may be enqueued ahead: the enqueues and waits in order
    (("enqueue", n, size) and ("wait", n), n counting batches from 1), the batches in flight,
    `ms` of GPU span per sample (None: the backend does not say), a host clock one second per
    sample enqueued, and a failure to raise at a batch's enqueue or wait."""

    def __init__(self, values, ms=0.1, allowed=lambda wanted: True, fail=None) -> None:
        self.stream, self.ms, self.allowed = itertools.cycle(values), ms, allowed
        self.fail = fail or {}  # {("enqueue" or "wait", n): the exception}
        self.log, self.sizes, self.in_flight, self.now = [], [], set(), 0.0

    def start(self, wanted: int):
        from gpubench.model.timing import Batch

        number = len(self.sizes) + 1
        self.sizes.append(wanted)
        if ("enqueue", number) in self.fail:
            raise self.fail["enqueue", number]
        self.now += wanted
        samples = [next(self.stream) for _ in range(wanted)]
        self.log.append(("enqueue", number, wanted))
        self.in_flight.add(number)

        def wait():
            self.in_flight.remove(number)  # a second wait fails here
            self.log.append(("wait", number))
            if ("wait", number) in self.fail:
                raise self.fail["wait", number]
            return Batch(samples, None if self.ms is None else self.ms * wanted, 0.0)

        return wait

    def take(self, wanted: int):
        return self.start(wanted)()

    def ahead(self):
        from gpubench.model.timing import Ahead

        return Ahead(self.start, self.allowed)

    def clock(self) -> float:
        return self.now

    def alternating(self) -> bool:
        """Every batch waited for before the next was enqueued."""
        return all(
            self.log[i + 1] == ("wait", entry[1])
            for i, entry in enumerate(self.log)
            if entry[0] == "enqueue"
        )


def _with_and_without_ahead(values, policy, clocks=None, **kwargs):
    """The same scripted samples (and SM clock readings, one per batch judged) measured with
    batches enqueued ahead and without."""
    from gpubench.model.timing import measure_batches

    runs = []
    for ahead in (False, True):
        queue, readings = Queue(values), iter(clocks or [])
        if clocks:
            kwargs |= {"clock_mhz": lambda r=readings: next(r), "max_clock_mhz": 1000.0}
        m = measure_batches(
            queue.take,
            policy,
            host_clock=lambda: 0.0,
            ahead=queue.ahead() if ahead else None,
            **kwargs,
        )
        assert not queue.in_flight  # every batch waited for before the measurement returns
        runs.append((m, queue))
    return runs


def _judged(m):
    return (m.samples_ms, m.converged, m.discarded, m.clock_mhz, m.clock_capped, m.gave_up)


@pytest.mark.parametrize(
    ("values", "policy", "clocks", "counts"),
    [
        # Never quiet: to max_samples; nothing goes ahead of the batch that holds the last.
        (
            [1.0, 3.0],
            TimingPolicy(
                warmup=3, min_samples=10, max_samples=100, min_time_s=0, target_noise=0.01
            ),
            None,
            (100, False, 103, 103, 12, 0),
        ),
        # Quiet once min_time_s is met, at the check at 40: the 8 enqueued ahead ran for nothing.
        (
            [1.0],
            TimingPolicy(warmup=2, min_samples=10, max_samples=1000, min_time_s=0.04),
            None,
            (40, True, 42, 50, 5, 1),
        ),
        # Noisy at first, quiet from the check at 16 on: stops mid-way, 8 run for nothing.
        (
            [4.0] * 3 + [1.0] * 60,
            TimingPolicy(warmup=0, min_samples=5, max_samples=63, min_time_s=0, target_noise=0.02),
            None,
            (16, True, 16, 24, 3, 1),
        ),
        # The batches of 2 and 4 after the first ten throttled (899 of 1000 MHz), discarded
        # whole: the 2 enqueued ahead of the wait for the 4 (sized as if the 4 were kept, to
        # the check at 16) is not the 6 the loop then takes, and is thrown away; so is the 8
        # after the stop.
        (
            [1.0],
            TimingPolicy(warmup=0, min_samples=10, max_samples=1000, min_time_s=0.016),
            [1000.0] * 10 + [899.0, 899.0] + [1000.0] * 100,
            (16, True, 22, 32, 3, 2),
        ),
        # A clock capped throughout, noisy samples: kept at the capped clock, to max_samples.
        (
            [1.0, 3.0],
            TimingPolicy(warmup=1, min_samples=5, max_samples=30, min_time_s=0, target_noise=0.01),
            [500.0] * 100,
            (30, False, 31, 31, 4, 0),
        ),
    ],
)
def test_batches_enqueued_ahead_leave_the_batches_judged_and_the_decisions_as_they_were(
    values, policy, clocks, counts
):
    (plain, plain_queue), (ahead, ahead_queue) = _with_and_without_ahead(values, policy, clocks)
    assert _judged(ahead) == _judged(plain)
    assert (len(ahead.samples_ms), ahead.converged, plain.runs, ahead.runs) == counts[:4]
    assert (plain.loop.ahead, plain.loop.thrown) == (0, 0) and plain_queue.alternating()
    assert (ahead.loop.ahead, ahead.loop.thrown) == counts[4:]
    assert not ahead_queue.alternating()
    # The batches thrown away aside, the loop asked for the same batches in the same order.
    assert sum(ahead_queue.sizes) - sum(plain_queue.sizes) == ahead.runs - plain.runs
    assert ahead.loop.batches - plain.loop.batches == ahead.loop.thrown


def test_the_next_batch_is_enqueued_before_the_wait_for_the_one_in_flight():
    """Warm-up and the first min_samples (3) one at a time, each waited for; then the 2, with
    the 3 to the check at 8 enqueued before its wait, the 8 to 16 before the 3's, and the 8
    after the stop at 16 before the wait for the 8 it follows: run, waited for, no sample."""
    from gpubench.model.timing import measure_batches

    queue = Queue([1.0])
    policy = TimingPolicy(warmup=1, min_samples=3, max_samples=1000, min_time_s=0.016)
    m = measure_batches(queue.take, policy, host_clock=lambda: 0.0, ahead=queue.ahead())
    one_by_one = [e for n in (1, 2, 3, 4) for e in (("enqueue", n, 1), ("wait", n))]
    assert queue.log == [
        *one_by_one,
        ("enqueue", 5, 2),
        ("enqueue", 6, 3),
        ("wait", 5),
        ("enqueue", 7, 8),
        ("wait", 6),
        ("enqueue", 8, 8),
        ("wait", 7),
        ("wait", 8),
    ]
    assert (len(m.samples_ms), m.runs, m.converged) == (16, 25, True)
    assert (m.loop.batches, m.loop.samples, m.loop.ahead, m.loop.thrown) == (8, 25, 3, 1)
    # The batch thrown away is GPU time of the loop like any other.
    assert (m.loop.timed_ms, m.loop.span_ms) == (25.0, pytest.approx(2.5))
    parts = m.loop.parts()
    assert (parts["batches_ahead"], parts["batches_thrown"], parts["samples"]) == (3.0, 1.0, 25.0)


@pytest.mark.parametrize(
    ("why", "ms", "allowed", "ahead"),
    [
        ("the caller says no", 0.1, lambda wanted: False, 0),
        ("the backend does not say how long a batch lasts", None, lambda wanted: True, 0),
        ("a sample lasts 1 ms: any batch lasts the bound or more", 1.0, lambda wanted: True, 0),
        # 0.2 ms a sample: the 4 (0.8 ms) goes ahead of the wait for the 2; no 8 (1.6 ms) does.
        ("only batches under the bound", 0.2, lambda wanted: True, 1),
    ],
)
def test_a_batch_goes_ahead_only_where_the_caller_allows_and_it_is_short(why, ms, allowed, ahead):
    from gpubench.model.timing import AHEAD_BELOW_MS, measure_batches

    assert AHEAD_BELOW_MS == 1.0
    queue = Queue([1.0], ms=ms, allowed=allowed)
    policy = TimingPolicy(warmup=0, min_samples=10, max_samples=1000, min_time_s=0.04)
    m = measure_batches(queue.take, policy, host_clock=lambda: 0.0, ahead=queue.ahead())
    assert (len(m.samples_ms), m.loop.ahead, m.loop.thrown) == (40, ahead, 0), why
    assert queue.sizes == [1] * 10 + [2, 4, 8, 8, 8], why
    assert queue.alternating() == (ahead == 0), why


def test_a_batch_enqueued_ahead_runs_past_the_time_budget_by_one_batch_at_most():
    """One second of host time per sample enqueued, 20 s of budget: the 4 held to the time
    left is enqueued ahead of the wait for the 8 that ends it; the budget is then spent, and
    the 4 has run for nothing."""
    from gpubench.model.timing import measure_batches

    queue = Queue([1.0, 3.0, 9.0, 27.0])
    policy = TimingPolicy(warmup=0, min_samples=5, max_samples=10**6, min_time_s=0, max_time_s=20.0)
    m = measure_batches(queue.take, policy, host_clock=queue.clock, ahead=queue.ahead())
    assert queue.sizes == [1] * 5 + [2, 1, 8, 4]
    assert queue.log[-3:] == [("enqueue", 9, 4), ("wait", 8), ("wait", 9)]
    assert (len(m.samples_ms), m.runs, m.converged) == (16, 20, False)
    assert (m.loop.ahead, m.loop.thrown) == (3, 1) and not queue.in_flight


class DriverFailure(Exception):
    pass


@pytest.mark.parametrize(
    ("fail", "waits"),
    [
        # The wait for the 2 fails with the 4 in flight: the 4 is waited for, and the first
        # failure raised.
        ({("wait", 11): DriverFailure("first")}, [11, 12]),
        # ...and where the 4's wait fails too, its failure is not the one raised.
        ({("wait", 11): DriverFailure("first"), ("wait", 12): DriverFailure("second")}, [11, 12]),
        # The 4 cannot be enqueued ahead: the 2 in flight is waited for.
        ({("enqueue", 12): DriverFailure("first")}, [11]),
    ],
)
def test_a_failure_with_a_batch_in_flight_is_raised_once_nothing_is_left_running(fail, waits):
    from gpubench.model.timing import measure_batches

    queue = Queue([1.0], fail=fail)
    policy = TimingPolicy(warmup=0, min_samples=10, max_samples=1000, min_time_s=0.04)
    with pytest.raises(DriverFailure, match=r"^first$"):
        measure_batches(queue.take, policy, host_clock=lambda: 0.0, ahead=queue.ahead())
    assert not queue.in_flight
    assert [e[1] for e in queue.log if e[0] == "wait"][10:] == waits


def test_a_noise_three_standard_errors_above_the_target_is_out_of_reach():
    """Beyond target × (1 + 3 × 2.0 / sqrt(n)), the limit itself not."""
    from gpubench.model.timing import beyond_reach

    for count, limit in ((200, 0.014242640687119286), (400, 0.013), (800, 0.012121320343559644)):
        assert not beyond_reach(limit, 0.01, count)
        assert beyond_reach(limit * (1 + 1e-12), 0.01, count)


def _spread(d):
    """40 samples evenly over 100 ± d/2, in an order that spreads any 8 of them: robust_noise
    0.37065 × d percent at each multiple of 40, never under 1% at a check before."""
    return [100 + d * (((k * 17) % 40) / 39 - 0.5) for k in range(40)]


@pytest.mark.parametrize(
    ("values", "kept"),
    [
        ([1.0, 3.0], 200),  # hopeless: stops at the first check, 200 kept
        (_spread(4.0), 200),  # 1.48%: above 1.42% (200)
        (_spread(3.65), 400),  # 1.35%: under 1.42% (200), above 1.30% (400)
        (_spread(3.1), 1000),  # 1.15%: under 1.21% (800): to max_samples, as before
    ],
)
def test_a_noise_out_of_the_target_s_reach_stops_sampling_at_a_doubling_of_200(values, kept):
    once, calls = source(values)
    policy = TimingPolicy(
        warmup=2, min_samples=10, max_samples=1000, min_time_s=0, target_noise=0.01
    )
    m = measure(once, policy, host_clock=Clock(0))
    assert (len(m.samples_ms), m.runs, len(calls), m.converged) == (kept, kept + 2, kept + 2, False)


def test_a_noise_out_of_reach_is_judged_the_same_in_batches_and_enqueued_ahead():
    policy = TimingPolicy(
        warmup=3, min_samples=10, max_samples=1000, min_time_s=0, target_noise=0.01
    )
    single, batched, sizes = _one_by_one_and_batched(_spread(3.65), policy)
    assert _decisions(batched) == _decisions(single) and len(batched.samples_ms) == 400
    assert sum(sizes) == batched.runs == 403  # nothing run past the stop at 400
    (plain, _), (ahead, _) = _with_and_without_ahead(_spread(3.65), policy, [])
    assert _judged(ahead) == _judged(plain) and len(ahead.samples_ms) == 400


def test_samples_held_down_by_the_clock_leave_the_noise_to_the_budget():
    """Throttled samples held back: the kept ones may yet be replaced by them at the end of the
    budget (a capped clock), so no early stop: to max_samples, as before."""
    clocks = itertools.cycle([2000.0] * 9 + [500.0])
    once, _ = source([1.0, 3.0])
    policy = TimingPolicy(
        warmup=0, min_samples=10, max_samples=1000, min_time_s=0, target_noise=0.01
    )
    m = measure(
        once, policy, host_clock=Clock(0), clock_mhz=lambda: next(clocks), max_clock_mhz=2000.0
    )
    assert (m.runs, m.discarded, m.converged) == (1000, 100, False)


def test_a_clock_capped_throughout_still_stops_a_noise_out_of_reach():
    """Held down from the first sample: the held samples become the kept ones at min_samples
    (capped), every later one is kept, and the rule judges them: out of reach at 200."""
    once, _ = source([1.0, 3.0])
    policy = TimingPolicy(
        warmup=0, min_samples=10, max_samples=1000, min_time_s=0, target_noise=0.01
    )
    m = measure(once, policy, host_clock=Clock(0), clock_mhz=lambda: 500.0, max_clock_mhz=2000.0)
    assert (len(m.samples_ms), m.runs, m.clock_capped, m.converged) == (200, 200, True, False)
