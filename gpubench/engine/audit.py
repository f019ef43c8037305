"""What the harness checks about a timing besides the answer: which timed runs are audited,
the speed of light a result must stay under, and host threads a suite leaves behind.

A kernel is untrusted: it may cache its output, memoise by address or by value, work on some
launches only, or leave work running past the end event. The stages (gpubench.engine.stages) audit
runs the kernel cannot tell from the others; these are the rules they apply. What each
check guarantees is stated in docs/guarantees.md.
"""

from __future__ import annotations

import random
import statistics
import threading
import time
from dataclasses import dataclass
from typing import Any

from gpubench.model.timing import TimingPolicy

# Over a theoretical peak by more than this, a figure is implausible. The peaks are upper
# bounds already (the boost clock, every DRAM pin busy); the margin covers rounding in the
# clocks NVML reports.
PEAK_MARGIN = 0.05

# Bytes per clock one SM's load/store path moves at most (128 B: a warp's 32 4-byte lanes,
# or one L1 line): every byte a kernel reads or writes passes through some SM this way.
SM_BYTES_PER_CLOCK = 128

# Shared memory serves a warp's lanes that read one word with one access (a broadcast), so
# the bytes the lanes receive are bounded by the lanes, not the banks: 32 lanes x 16 B (the
# widest load) per clock. Eight-byte broadcasts reached 1.7x the 128 B bound on the H200
# (banks.yaml, 2026-11-28).
SM_SHARED_BYTES_PER_CLOCK = 32 * 16

# Flops per clock against the FP32 peak, by declared precision: FP64 at most as fast as FP32
# (tensor FP64 on the H100), half precision and tensor cores at most 32x (dense FP8 tensor
# is about 30x on the H100). Unknown precisions get the loosest bound.
# Integer operations are counted as the algorithm states them, and the compiler may execute
# far fewer: x = x * a + b taken twice is one multiply-add (wrapping arithmetic composes), so
# an unrolled hash ran at 1.2x the FP32 peak in counted operations (divergence, the H200,
# 2026-11-28). They get the loosest bound.
PRECISION_MULTIPLE = {"fp32": 1.0, "fp64": 1.0, "fp16": 32.0, "bf16": 32.0, "tensor": 32.0,
                      "int32": 64.0}  # fmt: skip
UNKNOWN_PRECISION_MULTIPLE = 64.0

# No kernel launch completes between two events in less than this (an empty kernel takes
# about 2 µs cold and about 1 µs back to back in a CUDA graph on an H100): a run faster than
# this per launch was not timed at all (a patched timer).
LAUNCH_FLOOR_MS = 0.25e-3

# After the end event of an audited run has completed, a device-wide synchronize that still
# waits longer than this (plus a share of the run's own time) means work was left running.
# The wait is read on the host clock, so the slack covers a host's hiccups: a thread switch
# (Python hands its lock over every 5 ms), a busy CI machine. Work that ends sooner is not
# seen by this check.
IDLE_SLACK_MS = 20.0
IDLE_SHARE = 0.25

# Untrusted mode: runs on the inputs of the run before that take less than this share of the
# runs on changed inputs, and at least REPEAT_MIN_GAP_MS less (medians, at least
# REPEAT_MIN_SAMPLES of each), reuse work. Honest launch-bound kernels of a few microseconds
# were seen to differ by 20% between the two (the H200, 2026-11-27); a memo saves far more.
REPEAT_FASTER = 0.5
REPEAT_MIN_GAP_MS = 0.01
REPEAT_MIN_SAMPLES = 3

# Threads gpubench itself starts (the CuPy warm-up, the second input set, the random fills)
# and a Dask worker's own; any other thread that outlives a variant was started by the suite.
OWN_THREAD_PREFIXES = ("gpubench-", "device-check-warm-up", "Dask-")


@dataclass(frozen=True)
class AuditSchedule:
    """Which calls of a variant's sampling loop are audited (counted from 0, warm-up
    included); every call in untrusted mode."""

    chosen: frozenset[int]
    every: bool = False

    def audits(self, call: int) -> bool:
        return self.every or call in self.chosen


def schedule(policy: TimingPolicy, draw: random.Random | None = None) -> AuditSchedule:
    """Where the audits fall. Default mode: one call among those every measurement makes
    (warm-up and the first min_samples), drawn from the OS's randomness (no seed the run
    records predicts it); untrusted mode: every call."""
    if policy.untrusted:
        return AuditSchedule(frozenset(), every=True)
    draw = draw or random.SystemRandom()
    always = policy.warmup + policy.min_samples  # every measurement makes these calls
    return AuditSchedule(frozenset({draw.randrange(always)}))


def speed_of_light(work: Any, median_ms: float, device: Any, launches: int) -> str | None:
    """Why this timing is faster than the hardware can go, or None. `work` is the suite's
    Work of one run; `launches` the kernel launches of one run."""
    if median_ms <= 0:
        return f"a run took {median_ms} ms: no work takes no time"
    if launches and median_ms < launches * LAUNCH_FLOOR_MS:
        return (
            f"{median_ms * 1e3:.3f} µs for a run of {launches} kernel launch(es): below "
            f"the launch floor of {LAUNCH_FLOOR_MS * 1e3:.2f} µs per launch"
        )
    seconds = median_ms * 1e-3
    return _bytes_over_ceiling(work, seconds, device) or _flops_over_peak(work, seconds, device)


def _bytes_over_ceiling(work: Any, seconds: float, device: Any) -> str | None:
    moved = int(work.bytes_moved or 0)
    if moved <= 0:
        return None
    clock = device.sm_clock_mhz
    if clock:
        per_clock = SM_SHARED_BYTES_PER_CLOCK if work.level == "shared" else SM_BYTES_PER_CLOCK
        path = device.sm_count * per_clock * clock * 1e6 / 1e9
        rate = moved / seconds / 1e9
        if rate > path * (1 + PEAK_MARGIN):
            return (
                f"{rate:,.0f} GB/s is more than the SMs can load or store ({path:,.0f} "
                f"GB/s: {device.sm_count} SMs x {per_clock} B x {clock:,.0f} MHz)"
            )
    peak = device.peak_bandwidth_gbps
    if work.level != "dram" or not peak:
        return None
    # Of the distinct bytes a run touches, at most an L2's worth can be in the L2 when it
    # starts (left by the run before); the rest crosses the DRAM pins at least once. Bytes
    # touched again may all be L2 hits.
    footprint = int(getattr(work, "footprint", 0) or 0)
    distinct = min(moved, footprint) if footprint > 0 else moved
    beyond = distinct - device.l2_bytes
    if beyond <= 0:
        return None
    rate = beyond / seconds / 1e9
    if rate <= peak * (1 + PEAK_MARGIN):
        return None
    return (
        f"{moved / seconds / 1e9:,.0f} GB/s from DRAM: past what the {_size(device.l2_bytes)} "
        f"L2 can hold, {_size(beyond)} went at {rate:,.0f} GB/s, {100 * rate / peak:.0f}% "
        f"of the DRAM peak ({peak:,.0f} GB/s)"
    )


def _flops_over_peak(work: Any, seconds: float, device: Any) -> str | None:
    flops = int(work.flops or 0)
    fp32 = device.peak_fp32_gflops
    if flops <= 0 or not fp32:
        return None
    multiple = PRECISION_MULTIPLE.get(work.precision, UNKNOWN_PRECISION_MULTIPLE)
    peak = fp32 * multiple
    rate = flops / seconds / 1e9
    if rate <= peak * (1 + PEAK_MARGIN):
        return None
    bound = "the FP32 peak" if multiple == 1 else f"{multiple:g}x the FP32 peak"
    return (
        f"{rate / 1e3:,.1f} TFLOP/s ({work.precision}) is {rate / fp32:.1f}x the FP32 "
        f"peak of {fp32 / 1e3:,.1f} TFLOP/s; the bound for {work.precision} is "
        f"{bound}"
    )


def work_left_running(waited_ms: float, sample_ms: float) -> str | None:
    """Why a device-wide wait this long after an audited run's end event means work was
    left running past it, or None."""
    if waited_ms <= IDLE_SLACK_MS + IDLE_SHARE * sample_ms:
        return None
    return (
        f"work was still running {waited_ms:.2f} ms after the end event of a timed run "
        f"of {sample_ms:.3f} ms: the timing missed it"
    )


def repeat_effect(changed: list[float], repeated: list[float]) -> str | None:
    """Why runs on unchanged inputs being faster than runs on changed ones means the kernel
    reuses work across runs (a memo keyed by the input values), or None. An honest kernel's
    time does not depend on whether the values changed: both kinds of run start from the same
    state (the inputs written, the outputs restored, L2 flushed alike)."""
    if len(changed) < REPEAT_MIN_SAMPLES or len(repeated) < REPEAT_MIN_SAMPLES:
        return None
    slow, fast = statistics.median(changed), statistics.median(repeated)
    if fast >= REPEAT_FASTER * slow or slow - fast < REPEAT_MIN_GAP_MS:
        return None
    return (
        f"runs on the same inputs as the run before took {fast:.4f} ms (median of "
        f"{len(repeated)}), runs on changed inputs {slow:.4f} ms (median of {len(changed)}): "
        "the kernel reuses work from earlier runs"
    )


def _size(nbytes: int) -> str:
    return f"{nbytes / 1e6:,.0f} MB" if nbytes >= 1e6 else f"{nbytes / 1e3:,.0f} kB"


def live_threads() -> set[threading.Thread]:
    return set(threading.enumerate())


def threads_left_behind(before: set[threading.Thread], grace_s: float = 0.05) -> list[str]:
    """Names of the threads started since `before` that are still alive (after a short
    grace), other than gpubench's own."""
    deadline = time.monotonic() + grace_s
    while True:
        left = [
            t
            for t in threading.enumerate()
            if t not in before and t.is_alive() and not t.name.startswith(OWN_THREAD_PREFIXES)
        ]
        if not left or time.monotonic() >= deadline:
            return sorted(t.name for t in left)
        time.sleep(0.005)
