"""The runner's stages in isolation: what a timed result holds (tests/test_runner.py runs them
end to end on the fake backend)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from gpubench import registry, stages
from gpubench.benchmark import Work
from gpubench.errors import KernelLaunchError, PointError
from gpubench.results import Status
from gpubench.runner import Plan, Runner
from gpubench.timing import Measurement, TimingPolicy
from gpubench.verify import Verification
from tests.fakes import FakeBackend, ScaleSuite

DEVICE = SimpleNamespace(peak_bandwidth_gbps=2000.0, peak_fp32_gflops=50000.0)


def outcome(work, converged=True, cgma=None):
    measurement = Measurement(samples_ms=[2.0, 1.0, 3.0], converged=converged, discarded=4,
                              runs_per_sample=8, runs=99, clock_mhz=1755.0,
                              clock_capped=True)  # fmt: skip
    return stages.timed_outcome(DEVICE, measurement, Verification(passed=True), {"regs": 32},
                                work, cgma)  # fmt: skip


def test_a_timed_outcome_holds_the_samples_summary_the_clock_and_the_rates():
    result = outcome(Work(bytes_moved=4 * 10**9, flops=10**12, elements=10**9), cgma=2.5)
    assert result["status"] is Status.OK and result["converged"] is True
    summary = result["summary"]
    assert summary["median_ms"] == 2.0 and summary["samples"] == 3
    assert (summary["discarded"], summary["runs_per_sample"]) == (4, 8)
    assert (summary["clock_mhz"], summary["clock_capped"]) == (1755.0, True)
    assert result["metrics"] == pytest.approx({"time_ms": 2.0, "gbps": 2000.0, "pct_peak_bw": 100.0,
                                               "gflops": 500000.0, "pct_peak_flops": 1000.0,
                                               "gelem_per_s": 500.0, "cgma": 2.5})  # fmt: skip
    assert result["kernel_attributes"] == {"regs": 32}
    assert result["work"] == Work(4 * 10**9, 10**12, 10**9).to_dict()
    assert result["verification"].passed


def test_cache_traffic_and_other_precisions_are_no_percent_of_the_dram_or_fp32_peak():
    metrics = outcome(Work(4 * 10**9, 10**12, 0, level="l2", precision="fp64"))["metrics"]
    assert set(metrics) == {"time_ms", "gbps", "gflops"}
    assert outcome(Work(1, 0), converged=False)["status"] is Status.UNSTABLE


def test_a_work_record_without_level_or_precision_counts_as_dram_and_fp32():
    bare = SimpleNamespace(bytes_moved=4 * 10**9, flops=10**12, elements=0,
                           to_dict=lambda: {"bytes_moved": 4 * 10**9})  # fmt: skip
    metrics = outcome(bare)["metrics"]
    assert metrics["pct_peak_bw"] == pytest.approx(100.0)
    assert metrics["pct_peak_flops"] == pytest.approx(1000.0)


def test_a_stop_carries_its_outcome_and_says_its_reason():
    stop = stages.Stop({"status": Status.SKIPPED, "reason": "too big"})
    assert str(stop) == "too big" and stop.outcome["status"] is Status.SKIPPED
    assert str(stages.Stop({"status": Status.OK})) == ""


def test_missing_bytes_counts_only_the_placements_not_yet_made_on_their_side():
    inputs = {
        "a": np.zeros(10, np.float32),
        "b": np.zeros(3, np.float64),
        "c": np.zeros(5, np.int8),
    }
    placements = stages.Placements(backend=None, inputs=inputs, clock=None)
    wanted = {"a": "device", "b": "pinned", "c": "pageable"}
    assert placements.missing_bytes(wanted) == (40, 29)
    placements.made[("a", "device")] = (None, None)
    placements.made[("b", "device")] = (None, None)  # made elsewhere: b is still wanted pinned
    assert placements.missing_bytes(wanted) == (0, 29)
    assert placements.missing_bytes({}) == (0, 0)


QUICK = TimingPolicy(warmup=1, min_samples=3, max_samples=5, min_time_s=0, max_time_s=1)


def host_variant(monkeypatch, host_run=None, reference=None):
    """The reduction suite's NumPy variant at a small point, on the fake backend."""
    bench = registry.get("reduction")
    if host_run is not None:
        monkeypatch.setattr(type(bench), "host_run", host_run)
    if reference is not None:
        monkeypatch.setattr(type(bench), "reference", reference)
    point = bench.resolve({**bench.defaults(), "n": 1000, "dtype": "int32"})
    (result,) = Runner(FakeBackend()).run(Plan(bench, [point], ("numpy",), "numpy", QUICK))
    return result


def test_a_host_variant_is_run_checked_timed_and_checked_again_each_in_its_phase(monkeypatch):
    result = host_variant(monkeypatch)
    assert result.status.is_measured and result.verification.passed
    assert list(result.phases["variant"]) == ["checked_run", "check", "timing", "recheck"]
    assert all(seconds >= 0 for seconds in result.phases["variant"].values())


def test_a_host_variant_right_only_once_is_incorrect_after_timing(monkeypatch):
    calls = []
    right = type(registry.get("reduction")).host_run

    def right_once(self, variant, point, inputs):
        calls.append(variant)
        outputs = right(self, variant, point, inputs)
        return outputs if len(calls) == 1 else {k: v + 7 for k, v in outputs.items()}

    result = host_variant(monkeypatch, host_run=right_once)
    assert result.status is Status.INCORRECT and not result.verification.passed
    assert result.reason.startswith("right on the checked run, wrong after timing: ")
    assert (
        result.reason.removeprefix("right on the checked run, wrong after timing: ")
        == result.verification.message
    )


def test_a_host_variant_without_a_reference_is_incorrect_and_says_why(monkeypatch):
    def no_reference(self, variant, point, inputs):
        raise PointError("NumPy refuses this point")

    result = host_variant(monkeypatch, reference=no_reference)
    assert result.status is Status.INCORRECT and result.verification.passed is False
    assert result.reason == "no reference to check against: NumPy refuses this point"
    assert list(result.phases["variant"]) == ["checked_run"]


def test_a_launch_the_kernel_attributes_refuse_fails_with_their_message(monkeypatch):
    def refuse(module, launches, device):
        raise KernelLaunchError("block of 2048 threads: at most 1024")

    monkeypatch.setattr(stages, "kernel_attributes", refuse)
    bench = ScaleSuite()
    point = bench.resolve(bench.defaults())
    (result,) = Runner(FakeBackend()).run(Plan(bench, [point], ("good",), "good", QUICK))
    assert result.status is Status.LAUNCH_FAILED
    assert result.reason == "block of 2048 threads: at most 1024"


def test_why_a_variant_is_not_checked_in_its_words():
    def bench(reference_variant=None, has_reference=True):
        return SimpleNamespace(reference_variant=reference_variant,
                               has_reference=lambda: has_reference,
                               variant=lambda name: SimpleNamespace(computes="out"))  # fmt: skip

    empty, full = SimpleNamespace(has=lambda c: False), SimpleNamespace(has=lambda c: c == "out")
    assert stages.unverified_reason(bench("ref"), "ref", full) == (
        "the reference: the other variants are checked against its outputs")  # fmt: skip
    assert stages.unverified_reason(bench("ref"), "a", empty) == (
        "not checked: the reference variant 'ref' produced no outputs at this point")  # fmt: skip
    assert stages.unverified_reason(bench("ref"), "a", full) is None
    assert stages.unverified_reason(bench(None, False), "a", empty) == (
        "no reference: the outputs were not checked")  # fmt: skip
    assert stages.unverified_reason(bench(None, True), "a", empty) is None


def test_each_output_s_tolerance_follows_the_type_it_was_made_in_and_the_record():
    seen = []

    def tolerance_for(dtype, record, name):
        seen.append((dtype, record, name))
        return name

    case = SimpleNamespace(tolerance_for=tolerance_for)
    record = object()
    got = stages.tolerances(case, {"a": None, "b": None}, {"a": np.float16}, record)
    assert got == {"a": "a", "b": "b"}
    assert seen == [(np.dtype(np.float16), record, "a"), (np.dtype(np.float64), record, "b")]
