"""The transpose suite: declarations on the CPU; every variant on the GPU at awkward sizes."""

from __future__ import annotations

import numpy as np
import pytest

from gpubench.engine.runner import Plan, Runner
from gpubench.load import registry
from gpubench.model.benchmark import Tolerance, Work
from gpubench.model.results import Status
from tests.benchmarks import whole_launches
from tests.fakes import FAKE_DEVICE
from tests.policies import CHECK_ONLY

bench = registry.get("transpose")


def point(**values):
    return bench.resolve({**bench.defaults(), **values})


def test_reference_is_the_transpose_and_copy_is_the_identity():
    p = point(rows=3, cols=5)
    inputs = bench.inputs(p, np.random.default_rng(0))
    assert inputs["in"].shape == (3, 5) and inputs["in"].min() >= 1  # never zeros
    assert np.array_equal(bench.reference("transpose", p, inputs)["out"], inputs["in"].T)
    assert bench.reference("copy", p, inputs)["out"] is inputs["in"]


def case(variant, p):
    return bench.case(variant, p, FAKE_DEVICE, {})


def test_grid_covers_non_multiples_of_the_tile():
    (launch,) = case("padded", point(rows=33, cols=65, tile=32, block_rows=8)).steps
    assert launch.grid == (3, 2, 1) and launch.block == (32, 8, 1)
    (vec,) = case("vectorized", point(rows=33, cols=65, tile=32, block_rows=8)).steps
    assert vec.block == (8, 8, 1)  # 16-byte accesses: 4 floats per thread along a row
    (vec64,) = case("vectorized", point(tile=32, block_rows=8, dtype="float64")).steps
    assert vec64.block == (16, 8, 1)


def test_work_counts_one_read_and_one_write_per_element_and_the_check_is_exact():
    work = case("naive", point(rows=10, cols=20, dtype="float64")).work
    assert work == Work(bytes_moved=2 * 200 * 8, elements=200)
    assert case("copy", point(rows=2, cols=3)).outputs["out"].shape == (2, 3)
    assert case("naive", point(rows=2, cols=3)).outputs["out"].shape == (3, 2)
    assert case("naive", point()).tolerance == Tolerance()  # moving elements is exact
    assert bench.input_specs(point(rows=3, cols=5))["in"].nbytes == 60


def test_sizes_past_the_kernels_int_are_refused_at_validation():
    with pytest.raises(ValueError, match="above the maximum 2147483647"):
        bench.param("rows").coerce(2**31)


# (260, 1000) and (4096, 129): whole tiles with 16-byte aligned output rows (bulk_store's bulk
# copies) beside edge tiles.
AWKWARD = [(1, 1), (1, 1000), (1000, 1), (33, 65), (65, 33), (1023, 4097), (4096, 4), (17, 31),
           (260, 1000), (4096, 129)]  # fmt: skip


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("tile, block_rows", [(16, 4), (32, 8), (32, 32), (64, 16)])
def test_every_variant_is_correct_at_awkward_sizes(gpu_backend, dtype, tile, block_rows):
    points = [
        point(rows=r, cols=c, tile=tile, block_rows=block_rows, dtype=dtype) for r, c in AWKWARD
    ]
    results = Runner(gpu_backend).run(Plan(bench, points, bench.variant_names, "naive", CHECK_ONLY))
    bad = [(r.variant, r.point["rows"], r.point["cols"], r.status, r.reason) for r in results
           if not r.status.is_measured]  # fmt: skip
    assert not bad


@pytest.mark.gpu
def test_tile_64_with_32_block_rows_is_skipped_not_run(gpu_backend):
    results = Runner(gpu_backend).run(
        Plan(bench, [point(size=64, tile=64, block_rows=32)], ("padded",), "padded", CHECK_ONLY)
    )
    assert results[0].status is Status.SKIPPED and "2048 threads per block" in results[0].reason


def test_one_side_given_takes_the_other_from_size():
    assert {k: point(size=64, rows=8)[k] for k in ("rows", "cols")} == {"rows": 8, "cols": 64}
    assert {k: point(size=64, cols=8)[k] for k in ("rows", "cols")} == {"rows": 64, "cols": 8}
    both = point(size=64, rows=8, cols=4)
    assert (both["rows"], both["cols"], both["size"]) == (8, 4, None)


def test_a_tile_that_block_rows_does_not_divide_is_refused_with_the_constraint_to_add():
    assert bench.validate_point(point(tile=32, block_rows=12)) == (
        "block_rows=12 must divide tile=32 (add the constraint 'tile % block_rows == 0')")  # fmt: skip


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_launch_is_in_whole_threads_and_blocks(dtype):
    p = point(rows=33, cols=65, tile=32, block_rows=8, dtype=dtype)
    for variant in bench.variant_names:
        assert whole_launches(case(variant, p).steps), variant
