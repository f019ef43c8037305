from __future__ import annotations

import pytest

from gpubench.model import metrics


def test_bandwidth_counts_bytes_over_seconds_in_gb():
    # 2 GiB moved in 1 ms = 2147.48 GB/s (decimal GB, as vendors quote bandwidth).
    assert metrics.bandwidth_gbps(2 * 2**30, 1.0) == pytest.approx(2147.483648)


def test_gflops_and_speedup():
    assert metrics.gflops(2 * 1024**3, 2.0) == pytest.approx(1073.741824)
    assert metrics.speedup(10.0, 2.5) == pytest.approx(4.0)


def test_percent_of_peak_and_unknown_peak():
    assert metrics.percent_of(50.0, 200.0) == pytest.approx(25.0)
    assert metrics.percent_of(50.0, None) is None


@pytest.mark.parametrize("fn", [lambda: metrics.bandwidth_gbps(1, 0), lambda: metrics.gflops(1, -1),
                                lambda: metrics.speedup(1, 0)])  # fmt: skip
def test_non_positive_times_are_refused(fn):
    with pytest.raises(ValueError):
        fn()


def test_a_non_positive_time_is_named_in_the_speedup_s_message():
    with pytest.raises(ValueError) as info:
        metrics.speedup(1.0, -0.5)
    assert str(info.value) == "time must be positive, got -0.5 ms"


def test_a_metric_is_scaled_before_it_is_formatted():
    assert metrics.Metric("f", "f", "%", "{:,.1f}%", scale=100.0).format(0.25) == "25.0%"
    assert metrics.Metric("f", "f", "").format(1234.56) == "1,234.6"


@pytest.mark.parametrize("rate", [metrics.bandwidth_gbps, metrics.gflops])
@pytest.mark.parametrize("time_ms", [0, -1.5])
def test_a_rate_over_no_time_says_the_time(rate, time_ms):
    with pytest.raises(ValueError) as info:
        rate(10, time_ms)
    assert str(info.value) == f"time must be positive, got {time_ms} ms"


def test_rate_metrics_from_work_and_time_exactly():
    values = metrics.work_metrics(bytes_moved=3_000_000, flops=8_000_000, elements=1_000,
                                  time_ms=2.0, peak_bandwidth_gbps=3.0,
                                  peak_fp32_gflops=16.0)  # fmt: skip
    assert values == {
        "time_ms": 2.0,
        "gbps": pytest.approx(1.5),  # 3e6 bytes / 2e-3 s / 1e9
        "pct_peak_bw": pytest.approx(50.0),  # against the DRAM peak
        "gflops": pytest.approx(4.0),  # 8e6 flops / 2e-3 s / 1e9
        "pct_peak_flops": pytest.approx(25.0),  # against the FP32 peak, not the DRAM one
        "gelem_per_s": pytest.approx(0.0005),
    }
    assert metrics.work_metrics(0, 0, 0, 1.0, 3.0, 16.0) == {"time_ms": 1.0}


def test_speedup_and_percent_of_vendor_point_the_right_way():
    from gpubench.engine.runner import add_relative_metrics
    from gpubench.model.results import Result, Status

    def r(variant, ms, status=Status.OK):
        return Result(suite="s", variant=variant, point={}, status=status,
                      summary={"median_ms": ms})  # fmt: skip

    results = [r("base", 8.0), r("vendor", 2.0), r("mine", 4.0), r("wrong", 1.0, Status.INCORRECT)]
    add_relative_metrics(results, "base", "vendor")
    by = {x.variant: x.metrics for x in results}
    assert by["mine"]["speedup"] == 2.0 and by["vendor"]["speedup"] == 4.0
    assert by["mine"]["pct_of_vendor"] == 50.0  # half as fast as the vendor library
    assert by["vendor"]["pct_of_vendor"] == 100.0 and by["base"]["pct_of_vendor"] == 25.0
    assert by["wrong"] == {}  # incorrect: never ranked


def test_peaks_come_from_the_device():
    from tests.fakes import FAKE_DEVICE

    # 2 transfers per clock × 1000 MHz × 4096-bit bus = 1,024 GB/s; 4 SMs × 128 lanes × 2 × 1 GHz.
    assert FAKE_DEVICE.peak_bandwidth_gbps == pytest.approx(1024.0)
    assert FAKE_DEVICE.peak_fp32_gflops == pytest.approx(1024.0)


@pytest.mark.parametrize(
    "threads, registers, shared, expected, limiter",
    [
        (256, 32, 0, 1.0, "threads"),  # 8 blocks × 8 warps = 64 of 64 warps
        (256, 127, 16640, 0.25, "registers"),  # 128 regs/thread → 2 blocks
        (128, 16, 48 * 1024, 0.0625, "shared memory"),  # 96 KB per SM: 1 block of 4 warps
        (32, 16, 0, 0.5, "blocks"),  # 32 blocks × 1 warp = 32 of 64 warps
        (1024, 64, 0, 0.5, "registers"),  # 64 regs × 1024 threads = the whole register file
        (96, 0, 0, 63 / 64, "threads"),  # 21 blocks of 3 warps; no registers reported
    ],
)
def test_theoretical_occupancy_by_limiter(threads, registers, shared, expected, limiter):
    from tests.fakes import FAKE_DEVICE

    occupancy, limited_by = metrics.theoretical_occupancy(threads, registers, shared, FAKE_DEVICE)
    assert (occupancy, limited_by) == (pytest.approx(expected), limiter)


def test_metric_declarations_format_and_look_up():
    assert metrics.SPEEDUP.format(2.0) == "2.00x" and metrics.SPEEDUP.format(None) == ""
    assert metrics.by_key("gbps") is metrics.BANDWIDTH
    extra = metrics.Metric("overlap_efficiency", "overlap", "", "{:.0%}")
    assert metrics.by_key("overlap_efficiency", (extra,)) is extra
    assert metrics.catalog((metrics.BANDWIDTH, extra))[-1] is extra  # known keys once
    assert len(metrics.catalog((metrics.BANDWIDTH,))) == len(metrics.CATALOG)
    with pytest.raises(KeyError) as info:
        metrics.by_key("nope")
    assert info.value.args == ("nope",)
    assert metrics.TIME.higher_is_better is False and metrics.BANDWIDTH.higher_is_better is True


def test_only_dram_traffic_is_a_percent_of_the_dram_peak():
    from gpubench.model.metrics import PCT_PEAK_BANDWIDTH, work_metrics

    dram = work_metrics(2_000_000, 0, 0, 1.0, 1000.0, None)
    assert dram["gbps"] == 2.0 and dram[PCT_PEAK_BANDWIDTH.key] == 0.2
    for level in ("l2", "shared"):
        cached = work_metrics(2_000_000, 0, 0, 1.0, 1000.0, None, level)
        assert cached["gbps"] == 2.0 and PCT_PEAK_BANDWIDTH.key not in cached
    assert PCT_PEAK_BANDWIDTH.header == "% DRAM BW"


def test_the_suites_say_where_their_cached_bytes_come_from():
    from gpubench.load import registry
    from tests.fakes import FAKE_DEVICE

    ceilings = registry.get("ceilings")
    point = ceilings.resolve(ceilings.defaults())
    levels = {v: ceilings.case(v, point, FAKE_DEVICE, {}).work_for(None).level
              for v in ("l2_read", "shared_read", "dram_read")}  # fmt: skip
    assert levels == {"l2_read": "l2", "shared_read": "shared", "dram_read": "dram"}
    banks = registry.get("banks")
    bpoint = banks.resolve(banks.defaults())
    assert (
        banks.case(banks.variant_names[0], bpoint, FAKE_DEVICE, {}).work_for(None).level == "shared"
    )


def test_only_fp32_flops_are_a_percent_of_the_fp32_peak():
    """The ceilings' FP16 FMA and tensor-core GEMM once showed 188% and 1,083% of the FP32
    peak: only FP32 work is given that percent."""
    from gpubench.load import registry
    from gpubench.model.metrics import PCT_PEAK_FP32, work_metrics
    from tests.fakes import FAKE_DEVICE

    fp32 = work_metrics(0, 4_000_000, 0, 1.0, None, 8.0)
    assert fp32["gflops"] == 4.0 and fp32[PCT_PEAK_FP32.key] == 50.0
    for precision in ("fp64", "fp16", "tensor"):
        other = work_metrics(0, 4_000_000, 0, 1.0, None, 8.0, "dram", precision)
        assert other["gflops"] == 4.0 and PCT_PEAK_FP32.key not in other
    ceilings = registry.get("ceilings")
    point = ceilings.resolve(ceilings.defaults())
    kinds = {v: ceilings.case(v, point, FAKE_DEVICE, {}).work_for(None).precision
             for v in ("fp32_fma", "fp64_fma", "fp16_fma", "tensor_fp16")}  # fmt: skip
    assert kinds == {"fp32_fma": "fp32", "fp64_fma": "fp64", "fp16_fma": "fp16",
                     "tensor_fp16": "tensor"}  # fmt: skip


def test_registers_are_allocated_per_warp_in_units_of_256():
    """33 registers a thread is 1,056 a warp, allocated as 1,280: with 1,024-thread blocks on
    65,536 registers that is one block (80 KB would not fit twice), where 32 registers
    (1,024 a warp exactly) fit two."""
    from tests.fakes import FAKE_DEVICE

    assert FAKE_DEVICE.registers_per_sm == 65536 and FAKE_DEVICE.max_threads_per_sm == 2048
    two, _ = metrics.theoretical_occupancy(1024, 32, 0, FAKE_DEVICE)
    one, limiter = metrics.theoretical_occupancy(1024, 33, 0, FAKE_DEVICE)
    assert two == 1.0 and one == 0.5 and limiter == "registers"
    # 40 registers (1,280 a warp, no rounding) give the same as 33.
    assert metrics.theoretical_occupancy(1024, 40, 0, FAKE_DEVICE)[0] == 0.5
    # 48 registers: 1,536 a warp; 65,536 / (1,536 x 8 warps of a 256-thread block) = 5 blocks.
    assert metrics.theoretical_occupancy(256, 48, 0, FAKE_DEVICE)[0] == 5 * 8 / 64
    assert metrics.theoretical_occupancy(256, 41, 0, FAKE_DEVICE)[0] == 5 * 8 / 64


def _sm(cc=(9, 0), **extra):
    from types import SimpleNamespace

    fields = {"warp_size": 32, "max_threads_per_sm": 2048, "registers_per_sm": 65536,
              "shared_per_sm_bytes": 233472, "compute_capability": cc, "max_blocks_per_sm": 32}  # fmt: skip
    fields.update(extra)
    return SimpleNamespace(**{k: v for k, v in fields.items() if v is not None})


@pytest.mark.parametrize(
    ("threads", "registers", "shared", "device", "expected"),
    [
        (256, 0, 0, _sm(), (1.0, "threads")),
        (32, 0, 0, _sm(), (0.5, "blocks")),  # 64 blocks of one warp would fit; 32 may
        (32, 0, 0, _sm(max_blocks_per_sm=None), (0.5, "blocks")),  # unknown: 32 assumed
        (32, 0, 0, _sm(max_blocks_per_sm=16), (0.25, "blocks")),
        (100, 0, 0, _sm(), (1.0, "threads")),  # 4 warps per block, the last one partial
        (96, 0, 0, _sm(), (63 / 64, "threads")),  # 21 blocks of 3 warps
        (256, 33, 0, _sm(), (0.75, "registers")),  # 1,280 registers a warp: 6 blocks
        (64, 0, 11264, _sm(cc=(8, 0)), (19 * 2 / 64, "shared memory")),  # 1 KB reserved a block
        (64, 0, 9728, _sm(cc=(7, 5)), (24 * 2 / 64, "shared memory")),  # nothing reserved
        (1024, 0, 233472, _sm(), (0.0, "shared memory")),  # not even one block
    ],
)
def test_theoretical_occupancy_follows_the_calculators_rules(threads, registers, shared, device,
                                                             expected):  # fmt: skip
    assert metrics.theoretical_occupancy(threads, registers, shared, device) == expected


def test_elements_per_second_are_exact():
    values = metrics.work_metrics(0, 0, 10**9, 1.0, None, None)
    assert values[metrics.ELEMENTS.key] == 1000.0
