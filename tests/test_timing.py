"""The stopping rule, driven by scripted sample times and a fake host clock."""

from __future__ import annotations

import itertools

from gpubench.timing import TimingPolicy, measure


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
