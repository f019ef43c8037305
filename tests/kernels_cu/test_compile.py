"""Every kernel of kernels_cu/ compiles with nvcc for sm_80 and sm_90, for every value of each
compile-time parameter, and at its defaults for sm_75, the oldest GPU nvcc 13 builds for
(pre-sm_80 fallbacks of cp.async and the like) (runs in CI: nvcc is there, no GPU is)."""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
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


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_every_kernel_compiles(tmp_path):
    with ThreadPoolExecutor(max_workers=4) as pool:
        jobs = {
            case: pool.submit(
                nvcc, case[1], str(source_path(registry.get(case[0]))), case[2], str(tmp_path)
            )
            for case in CASES
        }
    failures = [
        f"{case}: {job.result().stderr}" for case, job in jobs.items() if job.result().returncode
    ]
    assert not failures, "\n".join(failures)
    assert len(CASES) >= 2 * sum(b.has_kernels for b in registry.all_suites().values())


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_every_example_kernel_file_compiles(tmp_path):
    cases = example_cases()
    assert len(EXAMPLES) >= 3 and len(cases) >= 2 * len(EXAMPLES)
    with ThreadPoolExecutor(max_workers=4) as pool:
        jobs = {
            case: pool.submit(
                nvcc, case[1], str(source_path(registry.get(case[0]))), case[2], str(tmp_path)
            )
            for case in cases
        }
    failures = [
        f"{case}: {job.result().stderr}" for case, job in jobs.items() if job.result().returncode
    ]
    assert not failures, "\n".join(failures)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_every_kernel_compiles_at_its_defaults_for_the_oldest_arch(tmp_path):
    suites = [bench for _, bench in sorted(registry.all_suites().items()) if bench.has_kernels]
    with ThreadPoolExecutor(max_workers=4) as pool:
        jobs = {
            bench.name: pool.submit(
                nvcc,
                OLDEST_ARCH,
                str(source_path(bench)),
                tuple(define_options(bench.defines(bench.resolve(bench.defaults())))),
                str(tmp_path),
            )
            for bench in suites
        }
    failures = [f"{name}: {job.result().stderr}" for name, job in jobs.items()
                if job.result().returncode]  # fmt: skip
    assert not failures, "\n".join(failures)
