"""Every kernel of kernels_cu/ compiles with nvcc for sm_80 and sm_90, for every value of each
compile-time parameter, and at its defaults for sm_75, the oldest GPU nvcc 13 builds for
(pre-sm_80 fallbacks of cp.async and the like) (runs in CI: nvcc is there, no GPU is)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from gpubench import registry
from gpubench.kernels import define_options, source_path

ARCHS = ("sm_80", "sm_90")
OLDEST_ARCH = "sm_75"


def compile_points(bench):
    """The default point, then each compile-time parameter through each of its values."""
    base = bench.resolve(bench.defaults())
    points = [base]
    for param in bench.params:
        if param.compile_time and param.choices:
            for value in param.choices:
                point = bench.resolve({**base, param.name: value})
                if value != base[param.name] and bench.validate_point(point) is None:
                    points.append(point)
    return points


CASES = [
    (name, arch, tuple(define_options(bench.defines(point))))
    for name, bench in sorted(registry.all_suites().items())
    if bench.has_kernels
    for arch in ARCHS
    for point in compile_points(bench)
]

# The kernel-file examples (configs/examples/*.yaml, kernels in kernels_cu/examples/): every
# compile-time value their sweeps list.
EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "configs" / "examples").glob("*.yaml"))


def example_cases():
    from gpubench import config

    cases = []
    for path in EXAMPLES:
        spec = config.load(path)
        bench = registry.get(str(path))
        builds = {tuple(define_options(bench.defines(p)) + bench.compiler_options(p))
                  for p in spec.points(bench)}  # fmt: skip
        cases += [(str(path), arch, options) for arch in ARCHS for options in sorted(builds)]
    return cases


def nvcc(arch: str, source: str, options: tuple[str, ...], tmp: str) -> subprocess.CompletedProcess:
    cmd = ["nvcc", f"-arch={arch}", "-cubin", "-o", f"{tmp}/{arch}{hash(options)}.cubin",
           *options, source]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


NO_NVCC = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
# One test per distinct compile: pytest-xdist spreads them over the cores (the compiles are
# most of the CPU test suite's time).
DISTINCT_CASES = sorted(set(CASES), key=lambda c: (c[0] != "matmul", c))


def _case_id(case) -> str:
    # A digest of the options, stable across processes (pytest-xdist compares the ids).
    digest = hashlib.sha1(" ".join(case[2]).encode()).hexdigest()[:8]
    return f"{Path(case[0]).stem}-{case[1]}-{digest}"


def test_every_suite_with_kernels_has_cases_for_both_archs():
    assert len(CASES) >= 2 * sum(b.has_kernels for b in registry.all_suites().values())
    assert {arch for _, arch, _ in CASES} == set(ARCHS)


@NO_NVCC
@pytest.mark.parametrize("case", DISTINCT_CASES, ids=_case_id)
def test_every_kernel_compiles(case, tmp_path):
    name, arch, options = case
    done = nvcc(arch, str(source_path(registry.get(name))), options, str(tmp_path))
    assert done.returncode == 0, f"{case}: {done.stderr}"


@NO_NVCC
@pytest.mark.parametrize("case", example_cases(), ids=_case_id)
def test_every_example_kernel_file_compiles(case, tmp_path):
    name, arch, options = case
    done = nvcc(arch, str(source_path(registry.get(name))), options, str(tmp_path))
    assert done.returncode == 0, f"{case}: {done.stderr}"


def test_every_example_has_cases_for_both_archs():
    assert len(EXAMPLES) >= 3 and len(example_cases()) >= 2 * len(EXAMPLES)


@NO_NVCC
@pytest.mark.parametrize("suite", sorted(n for n, b in registry.all_suites().items()
                                         if b.has_kernels))  # fmt: skip
def test_every_kernel_compiles_at_its_defaults_for_the_oldest_arch(suite, tmp_path):
    bench = registry.get(suite)
    options = tuple(define_options(bench.defines(bench.resolve(bench.defaults()))))
    done = nvcc(OLDEST_ARCH, str(source_path(bench)), options, str(tmp_path))
    assert done.returncode == 0, f"{suite}: {done.stderr}"


def _nvrtc_missing() -> str | None:
    """Why NVRTC cannot compile here (cuda.core or the NVRTC library missing), or None."""
    try:
        from cuda.bindings import nvrtc

        nvrtc.nvrtcVersion()
    except Exception as exc:  # not installed, or no libnvrtc to load
        return f"NVRTC unavailable: {str(exc).splitlines()[0][:120]}"
    return None


NO_NVRTC = pytest.mark.skipif(_nvrtc_missing() is not None, reason=str(_nvrtc_missing()))
# The cuda-core backend compiles the same sources with NVRTC, in-process: every build of every
# suite and example, for sm_90 (NVRTC has no C++ standard library and, without a toolkit, no
# CUDA headers beyond its own: the sources include neither).
NVRTC_CASES = [c for c in DISTINCT_CASES if c[1] == "sm_90"] + [
    c for c in example_cases() if c[1] == "sm_90"
]


@NO_NVRTC
@pytest.mark.parametrize("case", NVRTC_CASES, ids=_case_id)
def test_every_kernel_compiles_with_nvrtc(case):
    from gpubench.backends.cuda_core_backend import compile_cubin

    name, arch, options = case
    path = source_path(registry.get(name))
    cubin = compile_cubin(path.read_text(), list(options), [str(path.parent)], arch)
    assert cubin[:4] == b"\x7fELF"  # a cubin is an ELF image
