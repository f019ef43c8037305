"""Metrics declared once (key, column header, unit, direction) and the arithmetic behind them:
work and time → effective bandwidth, GFLOP/s, speedup, fraction of the hardware peak.

The table, the CSV, `compare` and plots read the declarations below; none of them knows a
metric by name. A suite adds its own (overlap efficiency) through `Benchmark.metrics`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    """One number a result can carry, and how to show it."""

    key: str
    header: str
    unit: str
    # Python format for the value in tables ("{:,.1f}").
    fmt: str = "{:,.1f}"
    # True: larger is better (bandwidth); False: smaller is better (time); None: neither.
    higher_is_better: bool | None = True
    # Left out of the table when a result also has this metric (elements/s beside GFLOP/s).
    hidden_with: str | None = None
    # Multiply by this before formatting (fractions shown as percentages).
    scale: float = 1.0

    def format(self, value: float | None) -> str:
        if value is None:
            return ""
        return self.fmt.format(value * self.scale)


TIME = Metric("time_ms", "median", "ms", "{:,.3f}", higher_is_better=False)
BANDWIDTH = Metric("gbps", "GB/s", "GB/s")
# Of the DRAM's theoretical peak, for DRAM traffic only (not for an L2 or shared working set).
PCT_PEAK_BANDWIDTH = Metric("pct_peak_bw", "% DRAM BW", "%", "{:,.1f}%")
GFLOPS = Metric("gflops", "GFLOP/s", "GFLOP/s")
PCT_PEAK_FP32 = Metric("pct_peak_flops", "% peak FP32", "%", "{:,.1f}%")
ELEMENTS = Metric("gelem_per_s", "Gelem/s", "Gelem/s", "{:,.2f}", hidden_with="gflops")
SPEEDUP = Metric("speedup", "speedup", "x", "{:,.2f}x")
ITERATIONS = Metric("iterations", "iters", "", "{:,.0f}", higher_is_better=None)
CGMA = Metric("cgma", "CGMA", "flop/elem", "{:,.0f}", higher_is_better=None)
PCT_OF_VENDOR = Metric("pct_of_vendor", "% vendor", "%", "{:,.1f}%")

# Measured by NVML's energy counter under --energy (gpubench.model.energy): one run's energy,
# the board's average power while running back to back, and the work per joule.
ENERGY = Metric("energy_mj", "energy", "mJ", "{:,.3f}", higher_is_better=False)
POWER = Metric("power_w", "power", "W", "{:,.0f}", higher_is_better=None)
GFLOP_PER_J = Metric("gflop_per_j", "GFLOP/J", "GFLOP/J", "{:,.2f}")
GB_PER_J = Metric("gb_per_j", "GB/J", "GB/J", "{:,.2f}")
ENERGY_METRICS = (ENERGY, POWER, GFLOP_PER_J, GB_PER_J)

# Measured by Nsight Compute under --profile (gpubench/engine/profiling.py).
NCU_TIME = Metric("ncu_ms", "ncu time", "ms", "{:,.4f}", higher_is_better=False)
DRAM_BYTES = Metric("dram_bytes", "DRAM bytes", "bytes", "{:,.0f}", higher_is_better=None)
LOAD_SECTORS = Metric(
    "ld_sectors_per_request", "ld sect/req", "sectors", "{:,.1f}", higher_is_better=False
)
STORE_SECTORS = Metric(
    "st_sectors_per_request", "st sect/req", "sectors", "{:,.1f}", higher_is_better=False
)
BANK_CONFLICTS = Metric("bank_conflicts", "bank confl.", "", "{:,.0f}", higher_is_better=False)
BRANCH_UNIFORMITY = Metric("branch_uniformity", "branch unif.", "%", "{:,.1f}%")
OCCUPANCY = Metric("achieved_occupancy", "occupancy", "%", "{:,.1f}%")
INSTRUCTIONS = Metric("instructions", "warp instr.", "", "{:,.0f}", higher_is_better=False)
PROFILED = (NCU_TIME, DRAM_BYTES, LOAD_SECTORS, STORE_SECTORS, BANK_CONFLICTS,
           BRANCH_UNIFORMITY, OCCUPANCY, INSTRUCTIONS)  # fmt: skip

# Table and CSV order.
CATALOG: tuple[Metric, ...] = (
    TIME, BANDWIDTH, PCT_PEAK_BANDWIDTH, GFLOPS, PCT_PEAK_FP32, ELEMENTS, SPEEDUP, ITERATIONS,
    CGMA, PCT_OF_VENDOR, *ENERGY_METRICS, *PROFILED,
)  # fmt: skip


def catalog(extra: tuple[Metric, ...] = ()) -> tuple[Metric, ...]:
    """The standard metrics plus a suite's own, each key once."""
    known = {m.key for m in CATALOG}
    return CATALOG + tuple(m for m in extra if m.key not in known)


def by_key(key: str, extra: tuple[Metric, ...] = ()) -> Metric:
    for metric in catalog(extra):
        if metric.key == key:
            return metric
    raise KeyError(key)


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


def work_metrics(
    bytes_moved: int,
    flops: int,
    elements: int,
    time_ms: float,
    peak_bandwidth_gbps: float | None,
    peak_fp32_gflops: float | None,
    level: str = "dram",
    precision: str = "fp32",
) -> dict[str, float | None]:
    """The rate metrics of one result from its work and median time. `level`: where the
    bytes come from; only DRAM traffic is a percent of the DRAM peak. `precision`: what the
    flops are; only FP32 flops are a percent of the FP32 peak."""
    values: dict[str, float | None] = {TIME.key: time_ms}
    if bytes_moved:
        gbps = bandwidth_gbps(bytes_moved, time_ms)
        values[BANDWIDTH.key] = gbps
        if level == "dram":
            values[PCT_PEAK_BANDWIDTH.key] = percent_of(gbps, peak_bandwidth_gbps)
    if flops:
        rate = gflops(flops, time_ms)
        values[GFLOPS.key] = rate
        if precision == "fp32":
            values[PCT_PEAK_FP32.key] = percent_of(rate, peak_fp32_gflops)
    if elements:
        values[ELEMENTS.key] = elements / (time_ms * 1e-3) / 1e9
    return values


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
