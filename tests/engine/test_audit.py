"""The audit rules: where audits fall, the speed of light, work left running, memo timing,
threads left behind."""

from __future__ import annotations

import random
import threading
import time
from types import SimpleNamespace

import pytest

from gpubench.engine import audit
from gpubench.model.benchmark import Work
from gpubench.model.timing import TimingPolicy

# An H100-like device: 3,352 GB/s DRAM, 50 MB L2, 132 SMs at 1,980 MHz (66.9 TFLOP/s FP32).
H100 = SimpleNamespace(
    peak_bandwidth_gbps=3352.0,
    l2_bytes=50 * 2**20,
    sm_count=132,
    sm_clock_mhz=1980.0,
    peak_fp32_gflops=132 * 128 * 2 * 1.98,
)


def test_default_mode_audits_one_call_among_those_every_measurement_makes():
    policy = TimingPolicy(warmup=3, min_samples=10)
    seen = set()
    for seed in range(200):
        plan = audit.schedule(policy, random.Random(seed))
        assert len(plan.chosen) == 1 and not plan.every
        (call,) = plan.chosen
        assert 0 <= call < 13
        seen.add(call)
        assert plan.audits(call) and not plan.audits(call + 13)
    assert seen == set(range(13))  # any of them: a kernel cannot count its way around it


def test_untrusted_mode_audits_every_call():
    plan = audit.schedule(TimingPolicy(untrusted=True))
    assert plan.every and all(plan.audits(call) for call in range(1000))


def test_the_schedule_comes_from_the_os_when_no_generator_is_given():
    draws = {
        next(iter(audit.schedule(TimingPolicy(warmup=0, min_samples=1000)).chosen))
        for _ in range(20)
    }
    assert len(draws) > 1


def test_bytes_beyond_the_l2_faster_than_the_dram_peak_are_implausible():
    # The adversarial saxpy: 12 x 2^26 bytes in 169.5 µs.
    work = Work(bytes_moved=12 * 2**26, flops=2 * 2**26)
    reason = audit.speed_of_light(work, 0.1695, H100, launches=1)
    assert reason == (
        "4,751 GB/s from DRAM: past what the 52 MB L2 can hold, 753 MB went at 4,442 GB/s, "
        "133% of the DRAM peak (3,352 GB/s)"
    )
    # The honest one, 297.3 µs, and the same bytes at exactly the peak plus the margin.
    assert audit.speed_of_light(work, 0.2973, H100, launches=1) is None
    beyond = 12 * 2**26 - H100.l2_bytes
    at_bound = beyond / (H100.peak_bandwidth_gbps * 1e9 * (1 + audit.PEAK_MARGIN)) * 1e3
    assert audit.speed_of_light(work, at_bound * 1.001, H100, launches=1) is None
    assert audit.speed_of_light(work, at_bound * 0.999, H100, launches=1) is not None


def test_a_working_set_the_l2_can_hold_is_bounded_by_the_sms_not_the_dram():
    small = Work(bytes_moved=32 * 2**20)  # 32 MiB: could all be L2 hits
    assert audit.speed_of_light(small, 0.004, H100, launches=1) is None  # 8.4 TB/s
    reason = audit.speed_of_light(small, 0.0005, H100, launches=1)  # 67 TB/s
    assert reason == (
        "67,109 GB/s is more than the SMs can load or store (33,454 GB/s: "
        "132 SMs x 128 B x 1,980 MHz)"
    )


def test_cache_levels_get_only_the_sm_bound():
    l2 = Work(bytes_moved=4 * 10**9, level="l2")
    assert audit.speed_of_light(l2, 0.5, H100, launches=1) is None  # 8 TB/s from L2
    assert "more than the SMs can load" in audit.speed_of_light(l2, 0.1, H100, launches=1)


def test_flops_over_the_peak_of_their_precision_are_implausible():
    n = 2048
    work = Work(bytes_moved=12 * n * n, flops=2 * n**3)
    reason = audit.speed_of_light(work, 2 * n**3 / 860e12 * 1e3, H100, launches=1)
    assert reason == (
        "860.0 TFLOP/s (fp32) is 12.9x the FP32 peak of 66.9 TFLOP/s; the bound "
        "for fp32 is the FP32 peak"
    )
    assert audit.speed_of_light(work, 2 * n**3 / 60e12 * 1e3, H100, launches=1) is None
    tensor = Work(bytes_moved=0, flops=2 * n**3, precision="tensor")
    assert audit.speed_of_light(tensor, 2 * n**3 / 800e12 * 1e3, H100, launches=1) is None
    assert "32x the FP32 peak" in audit.speed_of_light(tensor, 2 * n**3 / 3000e12 * 1e3, H100, 1)
    odd = Work(bytes_moved=0, flops=2 * n**3, precision="int4")
    assert audit.speed_of_light(odd, 2 * n**3 / 3000e12 * 1e3, H100, launches=1) is None


def test_a_run_below_the_launch_floor_was_not_timed():
    work = Work(bytes_moved=4)
    assert audit.speed_of_light(work, 1e-6, H100, launches=2) == (
        "0.001 µs for a run of 2 kernel launch(es): below the launch floor of 0.25 µs per launch"
    )
    assert audit.speed_of_light(work, 0.0006, H100, launches=2) is None
    assert audit.speed_of_light(work, 1e-6, H100, launches=0) is None  # copies only
    assert "no work takes no time" in audit.speed_of_light(work, 0.0, H100, launches=1)


def test_a_device_without_peaks_bounds_nothing_it_cannot_know():
    blank = SimpleNamespace(
        peak_bandwidth_gbps=None, l2_bytes=0, sm_count=1, sm_clock_mhz=None, peak_fp32_gflops=None
    )
    assert audit.speed_of_light(Work(10**15, 10**15), 1.0, blank, launches=1) is None


@pytest.mark.parametrize(
    ("waited", "sample", "left"),
    [
        (0.05, 10.0, False),
        (22.4, 10.0, False),
        (22.6, 10.0, True),
        (20.1, 0.01, True),
        (5.0, 0.01, False),
    ],
)
def test_work_left_running_is_a_wait_past_the_slack_and_a_share_of_the_run(waited, sample, left):
    reason = audit.work_left_running(waited, sample)
    assert (reason is not None) is left
    if left:
        assert f"{waited:.2f} ms after the end event" in reason


def test_runs_on_repeated_inputs_much_faster_than_on_changed_ones_reuse_work():
    assert audit.repeat_effect([1.0, 1.01, 0.99], [1.0, 0.98, 1.02]) is None
    assert audit.repeat_effect([1.0, 1.0], [0.1, 0.1, 0.1]) is None  # too few to say
    reason = audit.repeat_effect([1.0, 1.1, 0.9, 1.0], [0.2, 0.1, 0.3])
    assert reason == (
        "runs on the same inputs as the run before took 0.2000 ms (median of 3), "
        "runs on changed inputs 1.0000 ms (median of 4): the kernel reuses work "
        "from earlier runs"
    )
    assert audit.repeat_effect([1.0] * 3, [0.51] * 3) is None
    assert audit.repeat_effect([1.0] * 3, [0.49] * 3) is not None
    # Launch-bound microseconds: a 20% gap of 1 µs is no memo.
    assert audit.repeat_effect([0.0053] * 3, [0.0041] * 3) is None
    assert audit.repeat_effect([0.0153] * 3, [0.0041] * 3) is not None


def test_threads_started_since_and_still_alive_are_named_but_not_gpubenchs_own():
    before = audit.live_threads()
    stop = threading.Event()
    theirs = threading.Thread(target=stop.wait, name="suite-worker")
    ours = threading.Thread(target=stop.wait, name="gpubench-fresh-inputs")
    done = threading.Thread(target=lambda: None, name="finished")
    for thread in (theirs, ours, done):
        thread.start()
    try:
        assert audit.threads_left_behind(before) == ["suite-worker"]
    finally:
        stop.set()
        for thread in (theirs, ours, done):
            thread.join()
    assert audit.threads_left_behind(before) == []


def test_a_thread_that_ends_within_the_grace_is_not_left_behind():
    before = audit.live_threads()
    brief = threading.Thread(target=time.sleep, args=(0.01,), name="brief")
    brief.start()
    assert audit.threads_left_behind(before, grace_s=1.0) == []
    brief.join()


def test_bytes_read_again_may_come_from_the_l2_only_distinct_ones_cross_the_dram():
    # A 64 MiB working set read 64 times in 0.38 ms (11,255 GB/s, seen on the H200): honest,
    # since only the 14 MiB past the 50 MiB L2 must come from DRAM.
    reread = Work(bytes_moved=64 * 2**26, footprint=2**26)
    assert audit.speed_of_light(reread, 0.3815, H100, launches=1) is None
    # Every byte read still passes through the SMs.
    reason = audit.speed_of_light(reread, 0.004, H100, launches=1)
    assert reason == (
        "1,073,742 GB/s is more than the SMs can load or store (33,454 GB/s: "
        "132 SMs x 128 B x 1,980 MHz)"
    )
    wide = Work(bytes_moved=2**26, footprint=2**26)  # one pass: the SMs allow 2 µs
    beyond = 2**26 - H100.l2_bytes
    at_bound = beyond / (H100.peak_bandwidth_gbps * 1e9 * (1 + audit.PEAK_MARGIN)) * 1e3
    assert audit.speed_of_light(wide, at_bound * 1.001, H100, launches=1) is None
    assert audit.speed_of_light(wide, at_bound * 0.999, H100, launches=1) == (
        "16,106 GB/s from DRAM: past what the 52 MB L2 can hold, 15 MB went at 3,523 GB/s, "
        "105% of the DRAM peak (3,352 GB/s)"
    )
    # A footprint above the bytes moved bounds nothing more than the bytes do.
    bigger = Work(bytes_moved=2**26, footprint=2**40)
    assert audit.speed_of_light(bigger, at_bound * 0.999, H100, launches=1) is not None


def test_shared_memory_broadcasts_are_bounded_by_the_lanes_not_the_banks():
    # Eight-byte broadcasts: 56,960 GB/s of bytes the lanes received (the H200, banks.yaml).
    shared = Work(bytes_moved=10**9, level="shared")
    assert audit.speed_of_light(shared, 10**9 / 56_960e9 * 1e3, H100, launches=1) is None
    reason = audit.speed_of_light(shared, 10**9 / 150_000e9 * 1e3, H100, launches=1)
    assert reason == (
        "150,000 GB/s is more than the SMs can load or store (133,816 GB/s: "
        "132 SMs x 512 B x 1,980 MHz)"
    )
    # Global memory keeps the 128 B bound.
    assert "128 B" in audit.speed_of_light(Work(10**9), 10**9 / 56_960e9 * 1e3, H100, 1)


def test_integer_operations_get_the_loosest_bound():
    # The divergence hash counted at 79 TFLOP/s: the compiler composes its multiply-adds.
    ints = Work(bytes_moved=0, flops=79 * 10**12, precision="int32")
    assert audit.speed_of_light(ints, 1000.0, H100, launches=1) is None
    assert "64x the FP32 peak" in audit.speed_of_light(ints, 10.0, H100, launches=1)
