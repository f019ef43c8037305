"""Bugs planted in kernels are caught at the sizes where they hide, by the check on the GPU
and by the check on the host alike: a dropped k-term of a K = 16384 matmul, the lost last
element of an int32 sum, the last element of a 2^28-element output never written."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gpubench.engine import checking
from gpubench.engine.runner import Plan, Runner
from gpubench.kernelfile import benchmark as kernelfile_benchmark
from gpubench.load import config
from gpubench.model.results import Status
from tests.policies import QUICK

SUITES = Path(__file__).resolve().parent / "suites"
# Local, not shared: QUICK with half a second a variant, the policy these GPU tests were
# written with (only this module uses it).
PLANTED = replace(QUICK, max_time_s=0.5)


def run_file(backend, name: str):
    path = SUITES / name
    spec = config.load(path)
    bench = kernelfile_benchmark.load_benchmark(str(path.resolve()))
    points = spec.points(bench)
    return {
        r.variant: r
        for r in Runner(backend).run(Plan(bench, points, spec.variants, spec.baseline, PLANTED))
    }


def test_the_planted_suites_are_valid_kernel_files():
    for name in ("planted_matmul.yaml", "planted_sum.yaml", "planted_copy.yaml"):
        spec = config.load(SUITES / name)
        bench = kernelfile_benchmark.load_benchmark(str((SUITES / name).resolve()))
        assert all(bench.validate_point(p) is None for p in spec.points(bench))
        assert any(v.endswith("_bug") for v in spec.variants)


@pytest.mark.gpu
@pytest.mark.parametrize("where", ["device", "host"])
@pytest.mark.parametrize(
    ("name", "worst"),
    [("planted_matmul.yaml", None), ("planted_sum.yaml", [0]), ("planted_copy.yaml", [268435458])],
)
def test_every_planted_bug_is_incorrect_and_every_right_kernel_verifies(
    gpu_backend, monkeypatch, where, name, worst
):
    if where == "host":
        monkeypatch.setattr(checking, "_cupy", False)
    elif checking.cupy_module() is None:
        pytest.skip("CuPy is not installed: no device check")
    results = run_file(gpu_backend, name)
    for variant, result in results.items():
        if variant.endswith("_bug"):
            assert result.status is Status.INCORRECT, (variant, result.reason)
            assert result.verification.checked_on == where
            if worst is not None:
                assert result.verification.worst_index == worst
        else:
            assert result.status in (Status.OK, Status.UNSTABLE), (variant, result.reason)


def _sssp_with_a_skipped_edge(tmp_path):
    """The sssp suite, its `pull` kernel planted with a bug: the last incoming edge of every
    vertex is never relaxed."""
    import copy

    from gpubench.benchmarks import sssp
    from gpubench.engine.kernels import source_path

    text = source_path(sssp.BENCHMARK).read_text()
    right = "for (long long e = in_offsets[v]; e < in_offsets[v + 1]; ++e) {"
    assert text.count(right) == 1
    planted = tmp_path / "sssp.cu"
    planted.write_text(text.replace(right, right.replace("e < in", "e + 1 < in")))
    bench = copy.copy(sssp.BENCHMARK)
    bench.source_file = str(planted)
    return bench


@pytest.mark.gpu
@pytest.mark.parametrize("where", ["device", "host"])
def test_a_skipped_edge_in_sssp_is_incorrect(gpu_backend, monkeypatch, tmp_path, where):
    if where == "host":
        monkeypatch.setattr(checking, "_cupy", False)
    elif checking.cupy_module() is None:
        pytest.skip("CuPy is not installed: no device check")
    bench = _sssp_with_a_skipped_edge(tmp_path)
    point = {**bench.defaults(), "vertices": 100_003, "weights": "uniform", "sources": 1}
    (result,) = Runner(gpu_backend).run(Plan(bench, [point], ("pull",), "pull", PLANTED))
    assert result.status is Status.INCORRECT, result.reason
    assert result.verification.checked_on == where


def test_the_sssp_bug_is_planted_in_a_copy_only(tmp_path):
    from gpubench.benchmarks import sssp
    from gpubench.engine.kernels import source_path

    bench = _sssp_with_a_skipped_edge(tmp_path)
    assert "e + 1 < in_offsets" in source_path(bench).read_text()
    assert "e + 1 < in_offsets" not in source_path(sssp.BENCHMARK).read_text()
