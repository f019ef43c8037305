"""The reduction suite: passes, scratch, the float32 bound and the int32 reference on the CPU;
every variant x dtype x awkward n on the GPU."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest

from gpubench.engine.runner import Plan, Runner
from gpubench.load import registry
from gpubench.model.benchmark import Launch
from gpubench.model.results import Status
from tests.benchmarks import whole_launches
from tests.fakes import FAKE_DEVICE
from tests.policies import CHECK_ONLY

bench = registry.get("reduction")
H100_LIKE = replace(FAKE_DEVICE, sm_count=132, max_threads_per_sm=2048)
KERNEL_VARIANTS = [v.name for v in bench.variants if v.kind == "kernel"]
AWKWARD_N = [1, 2, 31, 33, 1000003, 2**24 + 1]


def point(**values):
    return bench.resolve({**bench.defaults(), **values})


@pytest.mark.parametrize("variant", KERNEL_VARIANTS)
@pytest.mark.parametrize("n", [1, 1000, 2**28])
@pytest.mark.parametrize("block_size", [64, 1024])
def test_passes_chain_from_the_input_to_one_value(variant, n, block_size):
    p = point(n=n, block_size=block_size)
    c = bench.case(variant, p, H100_LIKE, {})
    steps = c.steps
    assert all(isinstance(s, Launch) and s.block == (block_size, 1, 1) for s in steps)
    assert steps[0].args[0].name == "in" and steps[-1].args[1].name == "out"
    if variant == "single_pass":  # one launch: the last block to finish writes the result
        assert len(steps) == 1 and steps[0].grid[0] <= 132 * 2048 // block_size
        return
    assert steps[-1].grid == (1, 1, 1)
    scratch = c.scratch
    for previous, step in itertools.pairwise(steps):
        assert step.args[0] == previous.args[1]  # each pass reads what the last one wrote
        assert step.args[-1] == previous.grid[0]  # ... and as many elements as it had blocks
        assert scratch[previous.args[1].name].shape[0] >= previous.grid[0]
    if variant in ("grid_stride", "warp_shuffle", "vectorized"):
        assert len(steps) <= 2 and steps[0].grid[0] <= 132 * 2048 // block_size


def test_the_single_pass_variant_is_one_launch_with_a_zeroed_counter():
    p = point(n=2**28)
    c = bench.case("single_pass", p, H100_LIKE, {})
    assert len(c.steps) == 1 and c.scratch["counter"].init == "zero"


def test_the_float32_bound_grows_with_n_and_int32_is_exact():
    small = bench.case("grid_stride", point(n=1000), H100_LIKE, {}).tolerance.rtol
    large = bench.case("grid_stride", point(n=2**28), H100_LIKE, {}).tolerance.rtol
    assert 0 < small < large < 1e-3
    for variant in bench.variant_names:
        tol = bench.case(variant, point(n=2**28, dtype="int32"), H100_LIKE, {}).tolerance
        assert tol.rtol == 0 and tol.atol == 0
        assert bench.case(variant, point(n=2**28), H100_LIKE, {}).tolerance.rtol < 1e-3


def test_the_bound_is_met_by_a_float32_sum_in_a_bad_order_and_missed_by_a_lost_element():
    p = point(n=100_003)
    x = bench.inputs(p, np.random.default_rng(3))["in"]
    exact = bench.reference("sum", p, {"in": x})["out"][0]
    rtol = bench.case("sequential", p, H100_LIKE, {}).tolerance.rtol
    naive_float32 = np.float32(0)
    for chunk in np.array_split(x, 256):  # 256 serial float32 partials, then their sum
        naive_float32 += np.sum(chunk, dtype=np.float32)
    assert abs(naive_float32 - exact) <= rtol * exact
    assert abs(exact - x[0] - exact) > rtol * exact  # dropping one element is caught at this n


def test_int32_reference_wraps_like_the_kernels():
    p = point(n=4, dtype="int32")
    x = np.array([2**31 - 1, 1, 5, -2], dtype=np.int32)
    assert bench.reference("sum", p, {"in": x})["out"][0] == -(2**31) + 3
    assert bench.host_run("numpy", p, {"in": x})["out"][0] == -(2**31) + 3


def test_inputs_are_never_zero():
    p = point(n=1000)
    assert bench.inputs(p, np.random.default_rng(0))["in"].min() >= 0.5
    ints = bench.inputs(point(n=1000, dtype="int32"), np.random.default_rng(0))["in"]
    assert np.count_nonzero(ints) > 990


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["int32", "float32"])
@pytest.mark.parametrize("block_size", [64, 256, 1024])
def test_every_variant_is_correct_at_awkward_n(gpu_backend, dtype, block_size):
    points = [point(n=n, dtype=dtype, block_size=block_size) for n in AWKWARD_N]
    results = Runner(gpu_backend).run(
        Plan(bench, points, bench.variant_names, bench.baseline, CHECK_ONLY)
    )
    bad = [(r.variant, r.point["n"], r.status, r.reason) for r in results
           if not r.status.is_measured and not (r.variant == "cub" and r.status is Status.SKIPPED)]  # fmt: skip
    assert not bad


def test_work_is_one_read_of_the_input_and_n_past_unsigned_int_is_refused():
    c = bench.case("vectorized", point(n=1000, dtype="int32"), H100_LIKE, {})
    assert c.work.bytes_moved == 4000 and c.work.elements == 1000 and c.work.flops == 0
    assert bench.input_specs(point(n=1000))["in"].nbytes == 4000
    with pytest.raises(ValueError, match="above the maximum 4294967295"):
        bench.param("n").coerce(4294968296)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [2**28 + 3, 2**30 + 7])
def test_gpu_every_variant_is_exact_in_int32_at_large_n(gpu_backend, n):
    """The float32 bound would let tens of thousands of lost elements pass at 2^28; int32 sums
    are exact (wrapping like C), so every variant is checked exactly at large n too."""
    variants = tuple(v for v in bench.variant_names if v != "numpy")
    results = Runner(gpu_backend).run(
        Plan(bench, [point(n=n, dtype="int32", block_size=256)], variants, bench.baseline,
             CHECK_ONLY)
    )  # fmt: skip
    bad = [(r.variant, r.status, r.reason) for r in results
           if not r.status.is_measured and not (r.variant == "cub" and r.status is Status.SKIPPED)]  # fmt: skip
    assert not bad
    assert all(r.verification.max_abs_error == 0 for r in results if r.status.is_measured)


def test_cub_is_unavailable_without_cupy_and_asks_cupy_for_cub(monkeypatch):
    import sys
    import types

    from gpubench.load import registry

    bench = registry.get("reduction")
    monkeypatch.setenv("CUPY_ACCELERATORS", "unset")  # restored after the test
    monkeypatch.delenv("CUPY_ACCELERATORS")
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError
    assert bench.unavailable("cub") == "CuPy is not importable: no CUB reference"
    assert bench.unavailable("warp_shuffle") is None and bench.unavailable("numpy") is None
    import os

    assert os.environ["CUPY_ACCELERATORS"] == "cub"
    monkeypatch.setitem(sys.modules, "cupy", types.ModuleType("cupy"))
    monkeypatch.setenv("CUPY_ACCELERATORS", "cutensor")  # the user's own choice stays
    assert bench.unavailable("cub") is None and os.environ["CUPY_ACCELERATORS"] == "cutensor"


def test_grid_stride_launches_are_whole_blocks_capped_at_one_per_sm_at_least():
    for gpu in (H100_LIKE, replace(H100_LIKE, max_threads_per_sm=512)):
        for variant in KERNEL_VARIANTS:
            steps = bench.case(variant, point(n=2**28, block_size=1024), gpu, {}).steps
            assert whole_launches(steps), variant
    # 512 threads per SM hold no block of 1024: still one block per SM.
    few = replace(H100_LIKE, max_threads_per_sm=512)
    assert bench.case("grid_stride", point(n=2**28, block_size=1024), few, {}).steps[0].grid == (
        132, 1, 1)  # fmt: skip


def test_cub_sums_each_buffer_set_in_the_inputs_own_type_on_the_harness_stream(monkeypatch):
    """int32 summed in CuPy's default int64 would give the same wrapped total but time a
    slower reduction than CUB's own: the vendor reference must sum in the input's type."""
    import contextlib
    import sys
    import types

    from gpubench.benchmarks import reduction

    sums, views, streams = [], [], []
    cupy = types.ModuleType("cupy")
    cupy.sum = lambda x, **options: sums.append((x, options))
    monkeypatch.setitem(sys.modules, "cupy", cupy)

    def view(pointer, shape, dtype):
        views.append(pointer)
        return ("view", pointer, shape, dtype)

    def stream(handle):
        streams.append(handle)
        return contextlib.nullcontext()

    monkeypatch.setattr(reduction, "cupy_array", view)
    monkeypatch.setattr(reduction, "cupy_stream", stream)
    i32 = np.dtype(np.int32)
    step = reduction._CupySum(5, i32)
    for pointers, handle in (({"in": 16, "out": 32}, 7), ({"in": 48, "out": 64}, 9),
                             ({"in": 16, "out": 32}, 7)):  # fmt: skip
        step(pointers, handle)
    assert views == [16, 32, 48, 64]  # each set's views made once
    assert streams == [7, 9, 7]
    first = (("view", 16, (5,), i32), {"dtype": i32, "out": ("view", 32, (), i32)})
    second = (("view", 48, (5,), i32), {"dtype": i32, "out": ("view", 64, (), i32)})
    assert sums == [first, second, first]


def test_cub_s_chain_assumes_256_partial_sums_per_sm():
    # 2^20 / (256 x 132) = 31.03 -> 32 serial adds, then 2 x 20 tree levels and 8.
    assert bench.chain_length("cub", point(n=2**20), H100_LIKE) == 32 + 40 + 8


def test_float_references_add_in_float64():
    x = np.array([2**24, 1, 1], dtype=np.float32)  # float32 would lose both ones
    assert bench.reference("sum", point(n=3), {"in": x})["out"].tolist() == [2**24 + 2]


def test_int32_references_of_large_inputs_are_exact_past_float64(monkeypatch):
    """2^23 values near 2^31: the sum needs 54 bits, more than a float64 holds exactly."""
    from gpubench.model import hostmath

    monkeypatch.setattr(hostmath, "workers", lambda: 4)
    x = np.full(2**23, 2**31 - 1, dtype=np.int32)
    x[0] -= 1
    exact = 2**23 * (2**31 - 1) - 1
    wrapped = (exact + 2**31) % 2**32 - 2**31
    got = bench.reference("sum", point(n=2**23, dtype="int32"), {"in": x})["out"]
    assert got.tolist() == [wrapped] and wrapped == -(2**23) - 1
