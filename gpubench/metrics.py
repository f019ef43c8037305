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


def theoretical_occupancy(
    threads_per_block: int,
    registers_per_thread: int,
    shared_bytes_per_block: int,
    device: object,
) -> tuple[float, str]:
    """Resident warps / the SM's maximum, and what limits it, from the compiled kernel's
    resources and the device limits (the CUDA occupancy calculator's rules, simplified:
    registers are allocated per warp in units of 256, and each block reserves 1 KB of shared
    memory on compute capability 8.0 and later)."""
    warp = device.warp_size
    warps_per_block = -(-threads_per_block // warp)
    max_warps = device.max_threads_per_sm // warp
    limits = {
        "threads": device.max_threads_per_sm // (warps_per_block * warp),
        "blocks": getattr(device, "max_blocks_per_sm", 32),
    }
    if registers_per_thread:
        regs_per_warp = -(-registers_per_thread * warp // 256) * 256
        limits["registers"] = device.registers_per_sm // (regs_per_warp * warps_per_block)
    if shared_bytes_per_block:
        reserved = 1024 if device.compute_capability >= (8, 0) else 0
        limits["shared memory"] = device.shared_per_sm_bytes // (shared_bytes_per_block + reserved)
    limiter = min(limits, key=lambda name: limits[name])
    blocks = max(0, limits[limiter])
    return min(1.0, blocks * warps_per_block / max_warps), limiter
