"""The ceilings suite on the GPU: every kernel verified exactly at small and awkward sizes,
including a kernel that would skip work (the check must notice)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from gpubench.engine.runner import Plan, Runner
from gpubench.load import registry
from gpubench.model.results import Status
from tests.benchmarks import assert_each_set_gets_its_own_product
from tests.policies import THREE_SAMPLES

bench = registry.get("ceilings")
# Local, not shared: THREE_SAMPLES after one warmup run, the policy these GPU tests were
# written with (only this module uses it).
CHECK = replace(THREE_SAMPLES, warmup=1)


@pytest.mark.gpu
@pytest.mark.parametrize("block", [128, 256, 512])
def test_gpu_every_ceiling_kernel_verifies(gpu_backend, block):
    # An awkward DRAM size (not a multiple of the grid's stride), a tiny GEMM.
    point = {**bench.defaults(), "dram_bytes": (1 << 24) + 16 * 1009, "l2_bytes": 16 * 4099,
             "l2_passes": 3, "shared_iterations": 4 * 1001, "fma_iterations": 4096, "waves": 1,
             "gemm_size": 528, "block": block}  # fmt: skip
    assert bench.validate_point(point) is None
    results = Runner(gpu_backend).run(Plan(bench, [point], bench.variant_names, "dram_read", CHECK))
    bad = [(r.variant, r.status, r.reason) for r in results
           if not r.status.is_measured and r.status is not Status.SKIPPED]  # fmt: skip
    assert not bad
    measured = {r.variant for r in results if r.status.is_measured}
    assert measured >= set(bench.variant_names) - {"tensor_fp16"}


@pytest.mark.gpu
def test_gpu_fewer_fma_iterations_than_declared_fail_the_check(gpu_backend, monkeypatch):
    """The reference counts the declared iterations: a kernel doing fewer is incorrect."""
    from gpubench.benchmarks import ceilings

    point = {**bench.defaults(), "dram_bytes": 1 << 24, "waves": 1, "gemm_size": 16}
    original = ceilings.Ceilings.case

    def fewer(self, variant, point, device, inputs):
        case = original(self, variant, point, device, inputs)
        launch = case.steps[0]
        args = (*launch.args[:-1], type(launch.args[-1])(int(launch.args[-1]) - 1))
        case.steps = [type(launch)(launch.kernel, launch.grid, launch.block, args)]
        return case

    monkeypatch.setattr(ceilings.Ceilings, "case", fewer)
    results = Runner(gpu_backend).run(
        Plan(bench, [point], ("fp32_fma", "fp16_fma"), "fp32_fma", CHECK)
    )
    assert [r.status for r in results] == [Status.INCORRECT, Status.INCORRECT]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"dram_bytes": 1 << 20, "l2_bytes": 1 << 20}, None),
        ({"dram_bytes": 1 << 20, "l2_bytes": (1 << 20) + 16},
         "l2_bytes is larger than dram_bytes (the L2 kernel reads a prefix of it)"),
        ({"dram_bytes": (1 << 20) + 8}, f"dram_bytes={(1 << 20) + 8} is not a multiple of 16 "
         "(the kernels move uint4)"),
        ({"l2_bytes": 1000}, "l2_bytes=1000 is not a multiple of 16 (the kernels move uint4)"),
        ({"shared_iterations": 6}, "shared_iterations must be a multiple of 4"),
        ({"shared_iterations": 8}, None),
    ],
)  # fmt: skip
def test_each_point_the_ceilings_cannot_run_is_named_exactly(change, problem):
    bench = registry.get("ceilings")
    point = {**bench.defaults(), "dram_bytes": 1 << 24, "l2_bytes": 1 << 20, **change}
    assert bench.validate_point(point) == problem


def test_the_fma_references_are_exact_sums_of_each_type_s_own_step():
    import numpy as np

    from gpubench.benchmarks.ceilings import CHAINS, FP32_STEP, FP64_STEP
    from tests.fakes import FAKE_DEVICE

    point = {**bench.defaults(), "dram_bytes": 1 << 20, "l2_bytes": 1 << 20, "fma_iterations": 64,
             "gemm_size": 16}  # fmt: skip
    inputs = bench.inputs(point, np.random.default_rng(0))
    bench.case("fp32_fma", point, FAKE_DEVICE, inputs)
    threads = bench._launch_shape(point)[1]
    for variant, step in (("fp32_fma", FP32_STEP), ("fp64_fma", FP64_STEP)):
        out = bench.reference(variant, point, inputs)["out"]
        expected = sum(1.0 + j / 8 + 64 * step for j in range(CHAINS))
        assert out.shape == (threads,) and out[0] == expected and out[-1] == expected
    assert FP32_STEP != FP64_STEP


def test_only_the_tensor_core_gemm_needs_cupy(monkeypatch):
    import builtins

    from gpubench.benchmarks import ceilings

    real_import = builtins.__import__

    def without_cupy(name, *args, **kwargs):
        if name == "cupy":
            raise ImportError("No module named 'cupy'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_cupy)
    assert ceilings.BENCHMARK.unavailable("tensor_fp16") == (
        "CuPy is not installed (pip install cupy-cuda12x) for the cuBLAS tensor-core GEMM"
    )
    assert [ceilings.BENCHMARK.unavailable(v) for v in ("fp32_fma", "dram_read")] == [None, None]


@pytest.mark.gpu
def test_gpu_the_tensor_core_gemm_on_two_sets_of_buffers_writes_each_its_own_product(gpu_backend):
    cupy = pytest.importorskip("cupy")
    from gpubench.benchmarks.ceilings import _CupyHalfGemm

    shapes = {n: (4, 4) for n in "ABC"}
    assert_each_set_gets_its_own_product(cupy, _CupyHalfGemm(4), shapes, np.float16)
