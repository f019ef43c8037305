"""The runner's logic on a CPU fake backend: check before time, typed failures, speedups."""

from __future__ import annotations

import pytest

from gpubench.results import Status
from gpubench.runner import Plan, Runner
from gpubench.timing import TimingPolicy
from tests.fakes import FakeBackend, ScaleSuite

QUICK = TimingPolicy(warmup=1, min_samples=3, max_samples=5, min_time_s=0, max_time_s=1)


def run(variants, point=None, baseline="good"):
    bench = ScaleSuite()
    backend = FakeBackend()
    points = [bench.resolve({**bench.defaults(), **(point or {})})]
    variants = [v for v in variants]
    results = Runner(backend).run(Plan(bench, points, tuple(variants), baseline, QUICK))
    return {r.variant: r for r in results}, backend


def test_a_correct_variant_is_verified_then_timed():
    results, _ = run(["good"])
    r = results["good"]
    assert r.status is Status.OK
    assert r.verification.passed
    assert r.summary["samples"] >= QUICK.min_samples
    assert r.metrics["gbps"] == pytest.approx(8 * 1000 / 1e-3 / 1e9)
    assert r.seed is not None


def test_unwritten_elements_are_caught_by_the_nan_poison():
    results, backend = run(["skips_last"])
    r = results["skips_last"]
    assert r.status is Status.INCORRECT
    assert r.verification.unwritten == 1
    assert r.verification.worst_index == [999]
    assert "not written" in r.reason
    assert "skips_last" not in backend.timed  # an incorrect variant is never timed


def test_a_wrong_value_is_reported_with_its_error_and_place():
    results, _ = run(["wrong"])
    r = results["wrong"]
    assert r.status is Status.INCORRECT
    assert r.verification.worst_index == [500]
    assert r.verification.max_abs_error == pytest.approx(1.0)
    assert "worst at [500]" in r.reason


def test_a_refused_launch_is_recorded_and_the_sweep_goes_on():
    results, _ = run(["refused", "good"])
    assert results["refused"].status is Status.LAUNCH_FAILED
    assert "too many resources" in results["refused"].reason
    assert results["good"].status is Status.OK


def test_a_kernel_that_breaks_the_context_is_a_crash_and_ends_the_point_in_this_process():
    results, _ = run(["crash", "good"])
    assert results["crash"].status is Status.CRASHED
    assert "illegal memory access" in results["crash"].reason
    assert "good" not in results  # nothing more can run in a dead context


def test_noise_target_missed_is_unstable_and_still_ranked(monkeypatch):
    import itertools

    from tests import fakes

    noisy = itertools.cycle([1.0, 3.0])
    monkeypatch.setattr(
        fakes.FakeBackend, "time_once_ms", lambda self, bound, flush_l2: next(noisy)
    )
    results, _ = run(["good", "fast"])
    assert results["fast"].status is Status.UNSTABLE and not results["fast"].status.is_failure
    assert "speedup" in results["fast"].metrics


def test_throttled_samples_are_discarded(monkeypatch):
    from tests import fakes

    clocks = iter([1000.0, 500.0] * 100)
    monkeypatch.setattr(fakes.FakeBackend, "sm_clock_mhz", lambda self: next(clocks))
    results, _ = run(["good"])
    summary = results["good"].summary
    assert summary["discarded"] >= 2 and summary["samples"] >= QUICK.min_samples


def test_hot_mode_averages_back_to_back_runs():
    from dataclasses import replace

    bench = ScaleSuite()
    hot = replace(QUICK, mode="hot", hot_sample_ms=10.0)
    (result,) = Runner(FakeBackend()).run(Plan(bench, [bench.defaults()], ("good",), "good", hot))
    assert result.status is Status.OK and result.summary["runs_per_sample"] == 10


def test_an_impossible_launch_shape_is_skipped_with_a_reason():
    results, _ = run(["huge_block"])
    r = results["huge_block"]
    assert r.status is Status.SKIPPED
    assert "2048 threads per block" in r.reason
    assert not r.status.is_failure


def test_a_compile_failure_marks_every_variant_with_nvccs_message():
    results, _ = run(["good", "fast"], point={"broken": 1})
    for r in results.values():
        assert r.status is Status.COMPILE_FAILED
        assert 'identifier "oops" is undefined' in r.reason


def test_speedup_is_against_the_baseline_at_the_same_point():
    results, _ = run(["good", "fast", "wrong"])
    assert results["good"].metrics["speedup"] == pytest.approx(1.0)
    assert results["fast"].metrics["speedup"] == pytest.approx(2.0)
    assert "speedup" not in results["wrong"].metrics  # incorrect: never ranked


def test_no_speedup_when_the_baseline_failed():
    results, _ = run(["wrong", "fast"], baseline="wrong")
    assert "speedup" not in results["fast"].metrics


def test_modules_compile_once_per_distinct_define_set_and_buffers_are_freed(monkeypatch, tmp_path):
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path))
    bench = ScaleSuite()
    backend = FakeBackend()
    points = [bench.resolve({**bench.defaults(), "n": n}) for n in (10, 20, 30)]
    Runner(backend).run(Plan(bench, points, ("good", "fast"), "good", QUICK))
    assert len(backend.compiles) == 1
    assert backend.live_buffers == 0


def test_observers_see_every_result_in_order():
    seen = []

    class Watch:
        def started(self, total):
            seen.append(("start", total))

        def finished(self, result):
            seen.append(result.variant)

    bench = ScaleSuite()
    points = [bench.defaults()]
    Runner(FakeBackend(), [Watch()]).run(Plan(bench, points, ("good", "fast"), "good", QUICK))
    assert seen == [("start", 2), "good", "fast"]


def test_results_carry_kernel_resources_occupancy_and_cgma(monkeypatch):
    from tests import fakes

    monkeypatch.setattr(fakes.ScaleSuite, "cgma_value", 0.25)
    results, _ = run(["good"])
    attributes = results["good"].kernel_attributes["good"]
    assert attributes["registers_per_thread"] == 16 and attributes["threads_per_block"] == 256
    assert 0 < attributes["occupancy"] <= 1 and attributes["occupancy_limited_by"]
    assert results["good"].metrics["cgma"] == 0.25
