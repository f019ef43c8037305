"""The runner's stages in isolation: what a timed result holds (tests/test_runner.py runs them
end to end on the fake backend)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from gpubench import stages
from gpubench.benchmark import Work
from gpubench.results import Status
from gpubench.timing import Measurement
from gpubench.verify import Verification

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
