"""Work and time → effective bandwidth, GFLOP/s, speedup and fraction of the hardware peak."""

from __future__ import annotations


def bandwidth_gbps(bytes_moved: int, time_ms: float) -> float:
    """Effective bandwidth: the bytes the algorithm must move over the time, in GB/s (1e9)."""
    if time_ms <= 0:
        raise ValueError(f"time must be positive, got {time_ms} ms")
    return bytes_moved / (time_ms * 1e-3) / 1e9


def gflops(flops: int, time_ms: float) -> float:
    if time_ms <= 0:
        raise ValueError(f"time must be positive, got {time_ms} ms")
    return flops / (time_ms * 1e-3) / 1e9


def speedup(baseline_ms: float, time_ms: float) -> float:
    """How many times faster than the baseline (>1 is faster)."""
    if time_ms <= 0:
        raise ValueError(f"time must be positive, got {time_ms} ms")
    return baseline_ms / time_ms


def percent_of(value: float, peak: float | None) -> float | None:
    if not peak:
        return None
    return 100.0 * value / peak
