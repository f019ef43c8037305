"""The access suite: the sector model, references and declarations on the CPU; every variant
at awkward offsets, strides and sizes on the GPU."""

from __future__ import annotations

import numpy as np
import pytest

from gpubench.benchmarks import access
from gpubench.benchmarks.access import sectors_per_request
from gpubench.engine.runner import Plan, Runner
from gpubench.load import registry
from gpubench.model.results import Status
from tests.benchmarks import whole_launches
from tests.fakes import FAKE_DEVICE
from tests.policies import CHECK_ONLY

bench = registry.get("access")


def point(**values):
    return {**bench.defaults(), "working_set": 1 << 20, **values}


def test_sectors_follow_32_byte_sectors():
    # float32: 4 sectors aligned, 5 misaligned (unless by a multiple of 8 elements), the
    # stride doubling them up to one sector per element at stride 8.
    assert sectors_per_request(4) == 4
    assert [sectors_per_request(4, offset=o) for o in (1, 7, 8, 32)] == [5, 5, 4, 4]
    assert [sectors_per_request(4, stride=s) for s in (1, 2, 4, 8, 16, 32)] == [
        4,
        8,
        16,
        32,
        32,
        32,
    ]
    assert [sectors_per_request(8, stride=s) for s in (1, 2, 4)] == [8, 16, 32]
    assert sectors_per_request(8, offset=1) == 9


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_references_move_exactly_the_shifted_elements(dtype):
    p = point(offset=3, stride=5, dtype=dtype)
    inputs = bench.inputs(p, np.random.default_rng(0))
    src, before = inputs["in"], inputs["out"]
    n = (1 << 20) // src.itemsize
    out = bench.reference("read_offset", p, inputs)["out"]
    assert np.array_equal(out[:n], src[3 : 3 + n]) and np.array_equal(out[n:], before[n:])
    out = bench.reference("write_offset", p, inputs)["out"]
    assert np.array_equal(out[3 : 3 + n], src[:n]) and np.array_equal(out[:3], before[:3])
    moved = n // 5
    out = bench.reference("read_stride", p, inputs)["out"]
    assert np.array_equal(out[:moved], src[: 5 * moved : 5])
    out = bench.reference("write_stride", p, inputs)["out"]
    assert np.array_equal(out[: 5 * moved : 5], src[:moved]) and out[1] == before[1]
    total = bench.reference("cached_read", p, inputs)["total"][0]
    words = src.view(np.uint32)[: (1 << 18)].astype(np.uint64)
    assert total == np.uint64(int(words.sum()) * bench.passes(p) % 2**64)


def test_declarations_and_work():
    p = point(offset=2, stride=4)
    inputs = bench.inputs(p, np.random.default_rng(0))
    for variant in bench.variant_names:
        case = bench.case(variant, p, FAKE_DEVICE, inputs)
        assert case.problems(inputs) == [], variant
    assert bench.case("read_stride", p, FAKE_DEVICE, inputs).work.bytes_moved == 2 * (1 << 20) // 4
    assert bench.case("memcpy", p, FAKE_DEVICE, inputs).work.bytes_moved == 2 << 20
    assert bench.passes(p) == 4096 and bench.passes(point(working_set=1 << 32)) == 1
    assert "multiple of 16" in bench.validate_point(point(working_set=(1 << 20) + 4))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gpu_every_variant_at_awkward_offsets_strides_and_sizes(gpu_backend, dtype):
    points = [point(offset=o, stride=s, dtype=dtype, working_set=w)
              for o, s, w in ((0, 1, 1 << 20), (1, 3, 1 << 20), (31, 32, (1 << 20) + 16),
                              (32, 7, 3 << 20))]  # fmt: skip
    results = Runner(gpu_backend).run(Plan(bench, points, bench.variant_names, bench.baseline,
                                           CHECK_ONLY))  # fmt: skip
    bad = [(r.variant, r.point, r.status, r.reason) for r in results if not r.status.is_measured]
    assert not bad
    assert all(r.metrics.get("sectors_per_request") for r in results
               if r.variant not in access.REPEATED_READS)  # fmt: skip
    assert all(r.status is not Status.UNVERIFIED for r in results)


def test_sectors_of_a_strided_warp_that_starts_past_an_offset():
    # Lanes read elements 1, 3, ..., 63: bytes 4 to 255, the 8 sectors from 0 (not -1 to 7).
    assert sectors_per_request(4, offset=1, stride=2) == 8
    assert sectors_per_request(4, offset=7, stride=2) == 9  # bytes 28 to 279


def test_repeated_reads_fill_the_gpu_with_at_least_eight_words_per_thread_and_name_the_level():
    from dataclasses import replace

    gpu = replace(FAKE_DEVICE, sm_count=4, max_threads_per_sm=2048, l2_bytes=1 << 21)
    grids = {}
    for working_set in (1 << 20, 1 << 21, (1 << 21) + 16, 1 << 24):
        p = point(working_set=working_set)
        case = bench.case("cached_read", p, gpu, {})
        (launch,) = case.steps
        assert whole_launches([launch])
        grids[working_set] = (launch.grid[0], case.work.level)
    # 16-byte words / (256 threads x 8 words) blocks, from one per SM up to 8 per SM (2048
    # threads); the working set in L2 up to and including the L2's size.
    assert grids == {1 << 20: (32, "l2"), 1 << 21: (32, "l2"), (1 << 21) + 16: (32, "dram"),
                     1 << 24: (32, "dram")}  # fmt: skip
    # Between one block per SM and a full GPU: 2^21 / 16 words in blocks of 2048 are 64.
    (between,) = bench.case("l2_read", point(working_set=1 << 21), replace(gpu, sm_count=16),
                            {}).steps  # fmt: skip
    assert between.grid == (64, 1, 1) and whole_launches([between])
    small = bench.case("l2_read", point(working_set=1 << 20), replace(gpu, sm_count=64), {})
    assert small.steps[0].grid == (64, 1, 1)  # at least one block per SM
    # An SM that holds fewer threads than a block still gets one block.
    tiny = replace(gpu, sm_count=4, max_threads_per_sm=128)
    (launch,) = bench.case("cached_read", point(working_set=1 << 24), tiny, {}).steps
    assert launch.grid == (4, 1, 1)
