"""Every kernel of kernels_cu/ compiles with nvcc for sm_80 and sm_90, for every value of each
compile-time parameter, and at its defaults for sm_75, the oldest GPU nvcc 13 builds for
(pre-sm_80 fallbacks of cp.async and the like) (runs in CI: nvcc is there, no GPU is)."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from gpubench.engine.kernels import define_options, source_path
from gpubench.load import registry

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
    from gpubench.load import config

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


def _nvrtc_ptx(name: str, options: list[str]) -> str:
    """NVRTC's PTX of a suite's source (cuda.bindings directly: cuda.core asks the driver
    before it hands PTX out, and CI has no driver)."""
    from cuda.bindings import nvrtc

    path = source_path(registry.get(name))
    _, program = nvrtc.nvrtcCreateProgram(path.read_text().encode(), b"k.cu", 0, [], [])
    args = [b"-arch=sm_90", f"-I{path.parent}".encode(), *(o.encode() for o in options)]
    assert nvrtc.nvrtcCompileProgram(program, len(args), args)[0] == nvrtc.nvrtcResult.NVRTC_SUCCESS
    _, size = nvrtc.nvrtcGetPTXSize(program)
    buffer = b" " * size
    nvrtc.nvrtcGetPTX(program, buffer)
    return buffer.rstrip(b"\0").decode()


def _entry(ptx: str, kernel: str) -> str:
    start = ptx.index(f".entry {kernel}(")
    return ptx[start : ptx.index("\n}\n", start)]


@NO_NVRTC
def test_warp_tiled_addresses_shared_memory_with_32_bit_addresses_under_nvrtc():
    """NVRTC's own 64-bit shared addressing made warp_tiled 30% slower on the cuda-core
    backend (H100, 4096): its shared loads and transposing stores take 32-bit shared-window
    addresses (load_shared4, store_a_transposed_at), as under nvcc."""
    bench = registry.get("matmul")
    options = define_options(bench.defines(bench.resolve({**bench.defaults(), "size": 4096})))
    body = _entry(_nvrtc_ptx("matmul", options), "warp_tiled")
    accesses = [line.strip() for line in body.splitlines()
                if line.strip().startswith(("ld.shared", "st.shared"))]  # fmt: skip
    assert len(accesses) > 100
    # A 32-bit register is %r<n>; a 64-bit one %rd<n>.
    assert all(re.search(r"\[%r\d+(\+\d+)?\]", line) for line in accesses), [
        line for line in accesses if not re.search(r"\[%r\d+(\+\d+)?\]", line)
    ][:5]


@NO_NVRTC
@pytest.mark.parametrize("kernel", ["interleaved_divergent", "sequential", "first_add_on_load",
                                    "unroll_last_warp"])  # fmt: skip
def test_reduction_partners_are_one_scaled_add_away_under_nvrtc(kernel):
    """sdata[tid + s] with unsigned indices costs NVRTC an add before the 64-bit scaling
    (2.5% on the cuda-core backend, H100, 2^28): the kernels read mine[s], whose address is
    the thread's own plus s * size, with no 32-bit add of tid and s in the loop."""
    body = _entry(_nvrtc_ptx("reduction", ["-DDTYPE=float"]), kernel)
    loop = body[body.index("bar.sync") :]
    assert "mul.wide.u32" in loop or "shl.b64" in loop or "mul.wide.s32" in loop
    # The partner's index is never formed as tid + s in 32 bits and then widened.
    widened = [line for line in loop.splitlines() if "mul.wide.u32" in line]
    adds = {line.split()[1].rstrip(",") for line in loop.splitlines()
            if line.strip().startswith("add.s32")}  # fmt: skip
    assert not any(line.split()[2].rstrip(",") in adds for line in widened), widened


# The exploit corpus (tests/exploits/*.cu): kernels that cheat, run by tests/engine/test_audit_gpu.py.
EXPLOITS = sorted((Path(__file__).resolve().parents[1] / "exploits").glob("*.cu"))


def test_the_exploit_corpus_is_there():
    assert [p.name for p in EXPLOITS] == ["axpy_cheats.cu", "matmul_cheats.cu"]


@NO_NVCC
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("source", EXPLOITS, ids=lambda p: p.stem)
def test_every_exploit_kernel_compiles(source, arch, tmp_path):
    done = nvcc(arch, str(source), (), str(tmp_path))
    assert done.returncode == 0, f"{source.name}: {done.stderr}"


def _entries(options: tuple[str, ...], tmp_path) -> set[str]:
    ptx = tmp_path / "out.ptx"
    source = str(source_path(registry.get("matmul")))
    done = subprocess.run(["nvcc", "-arch=sm_90", "-ptx", "-o", str(ptx), *options, source],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return set(re.findall(r"^\.visible \.entry (\w+)\(", ptx.read_text(), re.MULTILINE))


@NO_NVCC
def test_a_build_that_names_its_kernels_holds_those_alone(tmp_path):
    from gpubench.engine.kernels import selection_options

    bench = registry.get("matmul")
    every = set(bench.kernels_to_build([v.name for v in bench.variants]))
    assert _entries((), tmp_path) == every  # named none: the whole file
    assert _entries(tuple(selection_options(bench.kernels_to_build(["warp_tiled"]))), tmp_path) == {
        "warp_tiled"
    }
    multistage = tuple(selection_options(bench.kernels_to_build(["multistage", "cublas"])))
    assert _entries(multistage, tmp_path) == {"multistage", "multistage_edges"}


def test_every_guarded_kernel_is_some_variant_s_and_every_variant_s_kernel_is_guarded():
    bench = registry.get("matmul")
    text = source_path(bench).read_text()
    guarded = set(re.findall(r"^#if GPUBENCH_WANTS_(\w+)$", text, re.MULTILINE))
    defaulted = set(re.findall(r"^#define GPUBENCH_WANTS_(\w+) 1$", text, re.MULTILINE))
    declared = {kernel for kernels in bench.variant_kernels.values() for kernel in kernels}
    kernel = r'^extern "C" __global__ void (?:__launch_bounds__\([^)]*\)\s*)?(\w+)\('
    defined = set(re.findall(kernel, text, re.MULTILINE))
    assert guarded == defaulted == declared == defined
    assert set(bench.variant_kernels) == {v.name for v in bench.variants}
