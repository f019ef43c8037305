"""Your own kernel from a YAML file: parsing, every refusal, argument binding, and runs over
the CPU fake backend (whose kernels are the Python functions in tests/fakes.py)."""

from __future__ import annotations

import dataclasses
import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from gpubench.engine.runner import Plan, Runner
from gpubench.errors import ConfigError, PointError, quote
from gpubench.kernelfile import benchmark as kernelfile_benchmark
from gpubench.load import config
from gpubench.model.benchmark import BufferRef
from gpubench.model.results import Status
from tests.fakes import FAKE_DEVICE, FakeBackend
from tests.policies import QUICK

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "configs" / "examples"

# The fake backend's kernels (tests/fakes.py): good/fast write out = 2 * x, skips_last misses
# the last element, wrong gets one element wrong; axpy_inplace does y = a * x + y.
CU = "// fake kernels: good fast skips_last wrong axpy_inplace\n" + "".join(
    f'extern "C" __global__ void {name}() {{}}\n'
    for name in ("good", "fast", "skips_last", "wrong", "axpy_inplace")
)
SCALE = """\
kernel:
  source: k.cu
  variants: [good, fast, skips_last, wrong]
  args:
    - out: out float32[n]
    - x: in float32[n]
    - n: uint32 = n
  grid: ceil_div(n, block)
  block: block
  defines: [block]
  reference: 2 * x
params:
  n: [1000, 4097]
  block: [128, 256]
"""


def write(tmp_path: Path, text: str, cu: str = CU) -> Path:
    (tmp_path / "k.cu").write_text(cu)
    path = tmp_path / "k.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def load(tmp_path: Path, text: str):
    path = write(tmp_path, text)
    spec = config.load(path)
    return spec, kernelfile_benchmark.load_benchmark.__wrapped__(str(path.resolve()))


def run(tmp_path: Path, text: str, point: dict | None = None, variants=None):
    spec, bench = load(tmp_path, text)
    points = [{**bench.defaults(), **(point or {})}]
    variants = tuple(variants or spec.variants)
    results = Runner(FakeBackend()).run(Plan(bench, points, variants, spec.baseline, QUICK))
    return {r.variant: r for r in results}


# -- the shipped examples --------------------------------------------------------------------
@pytest.mark.parametrize("name", ["saxpy", "stencil2d", "histogram"])
def test_the_shipped_examples_load_and_expand(name):
    spec = config.load(EXAMPLES / f"{name}.yaml")
    bench = kernelfile_benchmark.load_benchmark(str((EXAMPLES / f"{name}.yaml").resolve()))
    assert spec.suite == name and spec.baseline == bench.variants[0].name
    assert len(spec.points(bench)) == 9
    assert bench.dry_run_problems(spec.points(bench)) == []


def test_saxpy_binds_its_arguments_in_order_with_c_types_and_per_variant_grids():
    bench = kernelfile_benchmark.load_benchmark(str((EXAMPLES / "saxpy.yaml").resolve()))
    point = {"n": 1000003, "block": 256}
    assert bench.defines(point) == {"BLOCK": "256"}
    assert [p.name for p in bench.params if p.compile_time] == ["block"]
    inputs = bench.inputs(point, np.random.default_rng(1))
    assert set(inputs) == {"x", "y"} and inputs["x"].dtype == np.float32
    assert inputs["x"].min() >= -1 and inputs["x"].max() < 1  # init: uniform(-1, 1)
    (launch,) = bench.case("saxpy", point, FAKE_DEVICE, inputs).steps
    assert launch.kernel == "saxpy" and launch.grid == (3907, 1, 1) and launch.block == (256, 1, 1)
    y, x, a, n = launch.args
    assert (y, x) == (BufferRef("y"), BufferRef("x"))
    assert a.dtype == np.float32 and a == np.float32(2.5)
    assert n.dtype == np.uint32 and n == 1000003
    (vec4,) = bench.case("saxpy_vec4", point, FAKE_DEVICE, inputs).steps
    assert vec4.grid == (977, 1, 1)  # ceil_div(n, 4 * block)
    case = bench.case("saxpy", point, FAKE_DEVICE, inputs)
    assert case.outputs["y"].init == "input" and case.outputs["y"].shape == (1000003,)
    assert case.work.bytes_moved == 12 * 1000003 and case.work.flops == 2 * 1000003
    expected = bench.reference("default", point, inputs)["y"]
    assert expected.dtype == np.float64
    np.testing.assert_array_equal(expected, 2.5 * inputs["x"].astype(np.float64) + inputs["y"])


def test_stencil_has_2d_grid_and_block_and_per_variant_dynamic_shared_memory():
    bench = kernelfile_benchmark.load_benchmark(str((EXAMPLES / "stencil2d.yaml").resolve()))
    point = {"width": 1000, "height": 777, "tile_x": 32, "tile_y": 8}
    inputs = bench.inputs(point, np.random.default_rng(1))
    assert inputs["u"].shape == (777, 1000)
    (shared,) = bench.case("stencil_shared", point, FAKE_DEVICE, inputs).steps
    assert shared.grid == (32, 98, 1) and shared.block == (32, 8, 1)
    assert shared.shared_bytes == 4 * 34 * 10
    (plain,) = bench.case("stencil_global", point, FAKE_DEVICE, inputs).steps
    assert plain.shared_bytes == 0
    assert bench.defines(point) == {"TILE_X": "32", "TILE_Y": "8"}
    ref = bench.reference("default", point, inputs)["out"]
    u = inputs["u"].astype(np.float64)
    assert ref[0, 0] == pytest.approx(0.2 * (u[0, 0] + u[776, 0] + u[1, 0] + u[0, 999] + u[0, 1]))


def test_histogram_reference_is_exact_integers():
    bench = kernelfile_benchmark.load_benchmark(str((EXAMPLES / "histogram.yaml").resolve()))
    point = {"n": 1000003, "bins": 16, "block": 256}
    inputs = bench.inputs(point, np.random.default_rng(1))
    assert inputs["hist"].dtype == np.uint32 and not inputs["hist"].any()  # init: zeros()
    assert inputs["data"].max() < 16
    ref = bench.reference("default", point, inputs)["hist"]
    assert ref.dtype == np.int64 and ref.sum() == 1000003
    np.testing.assert_array_equal(ref, np.bincount(inputs["data"], minlength=16))
    (launch,) = bench.case("histogram_shared", point, FAKE_DEVICE, inputs).steps
    assert launch.grid == (4 * 132, 1, 1) and launch.shared_bytes == 64


@pytest.mark.parametrize(
    ("declaration", "init", "dtype", "low", "high"),
    [
        ("float32[n]", None, np.float32, 1, 2),
        ("double[n]", "uniform(-3, -1)", np.float64, -3, -1),
        ("float16[n]", "uniform(8)", np.float16, 0, 8),
        ("int[n]", None, np.int32, 0, 99),
        ("uint8[n]", "integers(250, 256)", np.uint8, 250, 255),
        ("bool[n]", "integers(0, 2)", np.bool_, 0, 1),
        ("float32[n]", "full(n)", np.float32, 1000, 1000),
        ("uint32[n]", "arange()", np.uint32, 0, 999),
        ("int64[n]", "ones()", np.int64, 1, 1),
    ],
)
def test_inputs_are_made_in_their_type_within_their_range(tmp_path, declaration, init, dtype,
                                                         low, high):  # fmt: skip
    text = SCALE.replace("- x: in float32[n]", f"- x: in {declaration}").replace(
        "  reference", f"  init: {{x: '{init}'}}\n  reference" if init else "  reference"
    )
    _, bench = load(tmp_path, text)
    x = bench.inputs({"n": 1000, "block": 128}, np.random.default_rng(3))["x"]
    assert x.dtype == dtype and x.shape == (1000,)
    assert x.min() == low and x.max() == high if dtype in (np.uint8, np.bool_, np.int32, np.uint32,
                                                           np.int64) else True  # fmt: skip
    assert low <= x.min() and x.max() <= high


# -- runs over the fake backend --------------------------------------------------------------
def test_right_variants_pass_and_wrong_ones_are_incorrect(tmp_path):
    results = run(tmp_path, SCALE)
    assert results["good"].status is Status.OK
    assert results["fast"].status is Status.OK
    assert results["fast"].metrics["speedup"] == pytest.approx(2.0)
    assert results["skips_last"].status is Status.INCORRECT
    assert results["skips_last"].verification.unwritten == 1  # out starts poisoned
    assert results["wrong"].status is Status.INCORRECT
    # Default work: x read, out written.
    assert results["good"].work["bytes_moved"] == 8 * 1000


def test_without_a_reference_results_are_unverified_never_ok(tmp_path):
    results = run(tmp_path, SCALE.replace("  reference: 2 * x\n", ""))
    for variant in ("good", "wrong"):
        assert results[variant].status is Status.UNVERIFIED
        assert "no reference" in results[variant].reason
        assert results[variant].summary["median_ms"] > 0
    assert results["wrong"].status.is_measured and not results["wrong"].status.is_failure


def test_a_variant_as_reference_checks_the_others_against_it(tmp_path):
    text = SCALE.replace("reference: 2 * x", "reference: variant:good").replace(
        "[good, fast, skips_last, wrong]", "[fast, good, skips_last, wrong]"
    )
    spec, _ = load(tmp_path, text)
    assert spec.variants[0] == "good"  # the reference runs first at every point
    results = run(tmp_path, text)
    assert results["good"].status is Status.UNVERIFIED and "the reference" in results["good"].reason
    assert results["fast"].status is Status.OK
    assert results["wrong"].status is Status.INCORRECT
    assert results["skips_last"].status is Status.INCORRECT


def test_an_in_out_array_starts_from_its_input(tmp_path):
    text = """\
    kernel:
      source: k.cu
      variants: [axpy_inplace]
      args:
        - y: inout float32[n]
        - x: in float32[n]
        - a: float = 2.5
        - n: unsigned int
      grid: ceil_div(n, 128)
      block: 128
      reference: a * x + y
    params:
      n: [1000]
    """
    results = run(tmp_path, text)
    assert results["axpy_inplace"].status is Status.OK, results["axpy_inplace"].reason
    assert results["axpy_inplace"].work["bytes_moved"] == 3 * 4 * 1000


def test_a_reference_function_from_a_python_file(tmp_path):
    (tmp_path / "ref.py").write_text("def twice(x, n):\n    return 2 * x[:n]\n")
    results = run(tmp_path, SCALE.replace("reference: 2 * x", "reference: ref.py:twice"))
    assert results["good"].status is Status.OK and results["wrong"].status is Status.INCORRECT


def test_a_reference_that_fails_at_run_time_is_a_result_not_a_crash(tmp_path):
    (tmp_path / "ref.py").write_text("def broken(x):\n    raise ValueError('no')\n")
    results = run(tmp_path, SCALE.replace("reference: 2 * x", "reference: ref.py:broken"),
                  variants=["good"])  # fmt: skip
    assert results["good"].status is Status.INCORRECT
    assert "broken() failed: ValueError: no" in results["good"].reason


def test_integer_outputs_get_integer_references_and_fractions_are_refused(tmp_path):
    from gpubench.errors import PointError

    text = SCALE.replace("out float32[n]", "out int32[n]").replace("in float32[n]", "in int32[n]")
    _, bench = load(tmp_path, text)
    point = {"n": 5, "block": 128}
    inputs = {"x": np.arange(5, dtype=np.int32)}
    expected = bench.reference("default", point, inputs)["out"]
    assert expected.dtype == np.int64 and expected.tolist() == [0, 2, 4, 6, 8]
    _, bench = load(tmp_path, text.replace("reference: 2 * x", "reference: x / 2"))
    with pytest.raises(PointError, match="the reference has fractions; out is int32"):
        bench.reference("default", point, inputs)
    _, bench = load(tmp_path, text.replace("reference: 2 * x", "reference: 7"))
    assert bench.reference("default", point, inputs)["out"].tolist() == [7] * 5


def test_dry_run_checks_the_reference_shape_and_the_kernel_names(tmp_path):
    path = write(tmp_path, SCALE.replace("reference: 2 * x", "reference: sum(x)"))
    bench = kernelfile_benchmark.load_benchmark.__wrapped__(str(path))
    points = config.load(path).points(bench)
    assert bench.dry_run_problems(points) == []  # a scalar broadcasts
    path = write(tmp_path, SCALE.replace("reference: 2 * x", "reference: x[1:]"))
    bench = kernelfile_benchmark.load_benchmark.__wrapped__(str(path))
    (problem,) = bench.dry_run_problems(points)
    assert "the reference has shape (999,); the output is float32[1000]" in problem
    path = write(tmp_path, SCALE, cu="// no kernels here\n")
    bench = kernelfile_benchmark.load_benchmark.__wrapped__(str(path))
    (problem,) = bench.dry_run_problems(points)
    assert "'good' does not appear in k.cu" in problem


# -- the command line ------------------------------------------------------------------------
def gpubench(tmp_path, *args):
    import os

    env = {**os.environ, "GPUBENCH_BACKEND": "tests.fakes:FakeBackend", "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "gpubench", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def test_run_and_sweep_a_kernel_file_from_the_command_line(tmp_path):
    write(tmp_path, SCALE.replace("[good, fast, skips_last, wrong]", "[good, fast]"))
    ran = gpubench(tmp_path, "run", "k.yaml", "--n", "333", "--json", "one.json",
                   "--max-time", "0.2")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    record = json.loads((tmp_path / "one.json").read_text())
    assert {r["point"]["n"] for r in record["results"]} == {333}
    assert {r["status"] for r in record["results"]} == {"ok"}
    dry = gpubench(tmp_path, "sweep", "k.yaml", "--dry-run")
    assert dry.returncode == 0 and "4 point(s) × 2 variant(s)" in dry.stdout
    swept = gpubench(tmp_path, "sweep", "k.yaml")
    assert swept.returncode == 0, swept.stderr
    logged = (tmp_path / "results" / "k.jsonl").read_text().splitlines()
    assert sum('"kind": "result"' in line for line in logged) == 8


def test_a_wrong_variant_makes_the_sweep_exit_3_and_bad_files_exit_2(tmp_path):
    write(tmp_path, SCALE.replace("n: [1000, 4097]", "n: [1000]").replace("[128, 256]", "[128]"))
    swept = gpubench(tmp_path, "sweep", "k.yaml")
    assert swept.returncode == 3
    assert "incorrect" in swept.stdout
    write(tmp_path, SCALE.replace("reference: 2 * x", "reference: x[1:]"))
    dry = gpubench(tmp_path, "sweep", "k.yaml", "--dry-run")
    assert dry.returncode == 2 and "Traceback" not in dry.stderr
    assert "kernel.reference.out: the reference has shape" in dry.stderr


def test_resume_notices_a_changed_kernel_declaration(tmp_path):
    from gpubench.engine import planning

    def fingerprint(spec):
        return planning.fingerprint(planning.identity(spec.bench, spec.to_dict(), []), {})

    path = write(tmp_path, SCALE)
    bench = kernelfile_benchmark.load_benchmark.__wrapped__(str(path))
    first = fingerprint(config.load(path))
    kernelfile_benchmark.load_benchmark.cache_clear()
    write(tmp_path, SCALE.replace("reference: 2 * x", "reference: 2.0 * x"))
    second = fingerprint(config.load(path))
    kernelfile_benchmark.load_benchmark.cache_clear()
    assert (
        bench.declaration_digest() and first["declarations_sha256"] != second["declarations_sha256"]
    )


# -- on the GPU ------------------------------------------------------------------------------
# Local, not shared: QUICK with up to 10 samples and half a second a variant, the policy these
# GPU tests were written with (only this module uses it).
GPU_QUICK = dataclasses.replace(QUICK, max_samples=10, max_time_s=0.5)
SUITES = REPO / "tests" / "suites"


def gpu_run(gpu_backend, path: Path, points: list[dict]):
    spec = config.load(path)
    bench = kernelfile_benchmark.load_benchmark(str(path.resolve()))
    full = [{**bench.defaults(), **p} for p in points]
    assert all(bench.validate_point(p) is None for p in full)
    return Runner(gpu_backend).run(Plan(bench, full, spec.variants, spec.baseline, GPU_QUICK))


# Awkward sizes: 1, primes, non-multiples of the block and of 4 (the vec4 tail), and sizes
# around a block.
@pytest.mark.gpu
@pytest.mark.parametrize(
    ("name", "points"),
    [
        ("saxpy", [{"n": n, "block": b} for n in (1, 3, 5, 255, 257, 1000003) for b in (128, 512)]),
        ("stencil2d", [{"width": w, "height": h, "tile_x": 32, "tile_y": t}
                       for (w, h) in ((1, 1), (1, 37), (31, 1), (1000, 777), (33, 65))
                       for t in (4, 16)]),
        ("histogram", [{"n": n, "bins": b, "block": 256}
                       for n in (1, 17, 1000003) for b in (1, 3, 16, 4096)]),
    ],
)  # fmt: skip
def test_gpu_every_example_variant_verifies_at_awkward_sizes(gpu_backend, name, points):
    results = gpu_run(gpu_backend, EXAMPLES / f"{name}.yaml", points)
    assert len(results) == 2 * len(points)
    bad = [(r.variant, r.point, r.status, r.reason) for r in results if r.status is not Status.OK
           and r.status is not Status.UNSTABLE]  # fmt: skip
    assert not bad


@pytest.mark.gpu
def test_gpu_a_wrong_variant_is_incorrect_at_every_size(gpu_backend):
    results = gpu_run(gpu_backend, SUITES / "kernel_file_wrong.yaml",
                      [{"n": n} for n in (1, 2, 31, 1000003)])  # fmt: skip
    by = {(r.variant, r.point["n"]): r for r in results}
    for n in (1, 2, 31, 1000003):
        assert (
            by[("saxpy", n)].status.is_measured and by[("saxpy", n)].status is not Status.UNVERIFIED
        )
        wrong = by[("saxpy_drops_last", n)]
        assert wrong.status is Status.INCORRECT, (n, wrong.reason)
        assert wrong.verification.worst_index == [n - 1]


@pytest.mark.gpu
def test_gpu_an_output_element_never_written_fails_the_check(gpu_backend):
    path = SUITES / "kernel_file_out.yaml"
    results = {
        (r.variant, r.point["n"]): r for r in gpu_run(gpu_backend, path, [{"n": 2}, {"n": 4099}])
    }
    # Verified and timed (a 2 µs kernel may miss the noise target: unstable, still checked).
    assert results[("scale_out", 4099)].status in (Status.OK, Status.UNSTABLE)
    half = results[("scale_out_half", 4099)]
    assert half.status is Status.INCORRECT and half.verification.unwritten == 4099 - 2049
    assert results[("scale_out_half", 2)].verification.unwritten == 1


@pytest.mark.gpu
def test_gpu_the_command_line_runs_a_kernel_file_end_to_end(tmp_path):
    import os

    out = tmp_path / "saxpy.json"
    env = {k: v for k, v in os.environ.items() if k != "GPUBENCH_BACKEND"}
    ran = subprocess.run([sys.executable, "-m", "gpubench", "run", str(EXAMPLES / "saxpy.yaml"),
                          "--n", "1000003", "--block", "256", "--json", str(out),
                          "--max-time", "0.5"], env=env, capture_output=True, text=True,
                         timeout=600)  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    results = json.loads(out.read_text())["results"]
    # Verified and timed; µs-scale kernels may miss the noise target (unstable, exit 0).
    assert [r["status"] in ("ok", "unstable") for r in results] == [True, True]
    assert all(r["metrics"]["gbps"] > 0 for r in results)


def test_the_documented_example_is_the_shipped_one_and_runs_as_copied(tmp_path):
    """A new user copies the kernel-file page's two files into a directory: they must load,
    dry-run, and be the files that ship (and that the GPU tests run)."""
    import re

    section = (REPO / "docs" / "kernel-files.md").read_text()
    cu = re.search(r"```cuda\n(.*?)```", section, re.S).group(1)
    yaml_text = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    assert cu == (REPO / "kernels_cu/examples/saxpy.cu").read_text()
    shipped = (EXAMPLES / "saxpy.yaml").read_text()
    assert yaml_text == shipped.replace(
        "source: ../../kernels_cu/examples/saxpy.cu   #",
        "source: saxpy.cu                             #",
    )
    (tmp_path / "saxpy.cu").write_text(cu)
    (tmp_path / "saxpy.yaml").write_text(yaml_text)
    dry = gpubench(tmp_path, "sweep", "saxpy.yaml", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "9 point(s) × 2 variant(s)" in dry.stdout


def test_scalars_of_every_c_type_and_3d_grids_bind_exactly(tmp_path):
    text = """\
    kernel:
      source: k.cu
      variants: [good]
      args:
        - out: out float32[d, h, w]
        - c: char = -3
        - uc: unsigned char = 255
        - s: short = -300
        - i: int = -(1 << 31)
        - u: unsigned int = (1 << 32) - 1
        - ll: long long = -(1 << 63)
        - ull: unsigned long long = (1 << 64) - 1
        - z: size_t = w * h * d
        - f: float = 0.1
        - dd: double = 0.1
        - hh: half = 1.5
        - b: bool = 1
      grid: ceil_div(w, 8), ceil_div(h, 8), ceil_div(d, 4)
      block: 8, 8, 4
    params:
      w: [17]
      h: [9]
      d: [5]
    """
    _, bench = load(tmp_path, text)
    point = bench.defaults()
    (launch,) = bench.case("good", point, FAKE_DEVICE, {}).steps
    assert launch.grid == (3, 2, 2) and launch.block == (8, 8, 4)
    values = launch.args[1:]
    expected = [(np.int8, -3), (np.uint8, 255), (np.int16, -300), (np.int32, -(2**31)),
                (np.uint32, 2**32 - 1), (np.int64, -(2**63)), (np.uint64, 2**64 - 1),
                (np.uint64, 17 * 9 * 5), (np.float32, np.float32(0.1)), (np.float64, 0.1),
                (np.float16, 1.5), (np.bool_, True)]  # fmt: skip
    for value, (dtype, number) in zip(values, expected, strict=True):
        assert value.dtype == dtype and value == number
    assert bench.case("good", point, FAKE_DEVICE, {}).outputs["out"].shape == (5, 9, 17)
    with pytest.raises(ConfigError, match=r"kernel\.args\.c: 128 does not fit in int8"):
        load(tmp_path, text.replace("char = -3", "char = 128"))


def test_a_large_sweep_is_validated_in_slices_with_the_first_problem_named(tmp_path, monkeypatch):
    path = write(tmp_path, SCALE)
    bench = kernelfile_benchmark.load_benchmark(str(path))
    points = [{**bench.defaults(), "n": n} for n in range(1, 3001)]
    points[2500]["n"] = 0  # a size that cannot be
    points[2900]["n"] = -1
    serial = bench.validate_points(points)
    monkeypatch.setattr(kernelfile_benchmark, "PARALLEL_VALIDATION_FROM", 100)
    monkeypatch.setattr(kernelfile_benchmark, "usable_cpus", lambda: 4)
    parallel = bench.validate_points(points)
    assert serial == parallel and serial[0] == 2500
    assert serial[1] == bench.validate_point(points[2500])
    assert bench.validate_points(points[:2500]) is None


def test_a_blank_description_falls_back_to_the_source_name(tmp_path):
    _, bench = load(tmp_path, "description: '   '\n" + SCALE)
    assert bench.description == "kernels of k.cu"


def test_a_kernel_file_is_parsed_once_per_process(tmp_path, monkeypatch):
    from gpubench.load import registry

    path = write(tmp_path, SCALE)
    calls = []
    real = kernelfile_benchmark.parse
    monkeypatch.setattr(kernelfile_benchmark, "parse", lambda *a: calls.append(a) or real(*a))
    spec = config.load(path)
    kernelfile_benchmark.load_benchmark.cache_clear()
    assert registry.get(spec.suite_ref) is registry.get(str(path))
    assert len(calls) == 1
    path.write_text(path.read_text().replace("reference: 2 * x", "reference: 2.0 * x"))
    kernelfile_benchmark.load_benchmark.cache_clear()
    registry.get(str(path))  # changed content: parsed again
    assert len(calls) == 2


def test_a_reference_that_exits_or_raises_a_long_message_is_one_line(tmp_path):
    (tmp_path / "ref.py").write_text(
        "import sys\n"
        "def leaves(x):\n    sys.exit(7)\n"
        "def talks(x):\n    raise ValueError('one\\ntwo\\nthree')\n"
    )  # fmt: skip
    for name, text in (("leaves", "SystemExit: 7"), ("talks", "ValueError: one two three")):
        results = run(tmp_path, SCALE.replace("reference: 2 * x", f"reference: ref.py:{name}"),
                      variants=["good"])  # fmt: skip
        reason = results["good"].reason
        assert results["good"].status is Status.INCORRECT and text in reason
        assert "\n" not in reason.split("failed:", 1)[1]


def test_an_infinite_scalar_is_refused(tmp_path):
    text = SCALE.replace("- n: uint32 = n", "- n: uint32 = n\n    - s: float32 = 1e400")
    from gpubench.errors import ConfigError

    with pytest.raises(ConfigError, match=r"kernel\.args\.s: inf is not a finite number"):
        load(tmp_path, text)


# Launch shapes that cannot be launched, per point: (grid, block, shared, the problem).
LAUNCH_PROBLEMS = [
    ("ceil_div(n, block)", "block", "0", None),
    ("ceil_div(n, block)", "[32, 32, 1]", "0", None),  # 1024 threads: the most a block holds
    ("ceil_div(n, block)", "[32, 32, 2]", "0",
     "kernel.block: (32, 32, 2) is 2048 threads; a block holds at most 1024"),
    ("ceil_div(n, block)", "[2, 1, 513]", "0",
     "kernel.block: '513' is 513; each dimension must be an integer in [1, 64]"),
    ("ceil_div(n, block)", "[1025]", "0",
     "kernel.block: '1025' is 1025; each dimension must be an integer in [1, 1024]"),
    ("[1, 65536]", "block", "0",
     "kernel.grid: '65536' is 65536; each dimension must be an integer in [1, 65535]"),
    ("n - n", "block", "0",
     "kernel.grid: 'n - n' is 0; each dimension must be an integer in [1, 2147483647]"),
    ("ceil_div(n, block)", "block", "2**31 - 1", None),
    ("ceil_div(n, block)", "block", "2**31",
     "kernel.shared: '2**31' is 2147483648, not a byte count"),
    ("ceil_div(n, block)", "block", "-4", "kernel.shared: '-4' is -4, not a byte count"),
    ("ceil_div(n, block)", "block", "n / 2", "kernel.shared: 'n / 2' is 500.0, not a byte count"),
]  # fmt: skip


@pytest.mark.parametrize(("grid", "block", "shared", "problem"), LAUNCH_PROBLEMS)
def test_each_launch_shape_problem_is_the_point_s_one_line(tmp_path, grid, block, shared,
                                                           problem):  # fmt: skip
    text = (SCALE.replace("grid: ceil_div(n, block)", f"grid: {grid}")
            .replace("block: block\n", f"block: {block}\n  shared: {shared}\n"))  # fmt: skip
    if problem is not None:  # the sweep's first point (n=1000, block=128) is refused
        with pytest.raises(ConfigError) as error:
            load(tmp_path, text)
        path = tmp_path / "k.yaml"
        assert str(error.value) == f"{path}: params: {problem}, at the point n=1000, block=128"
        return
    _, bench = load(tmp_path, text)
    point = {"n": 1000, "block": 128}
    assert bench.validate_point(point) is None
    inputs = bench.inputs(point, np.random.default_rng(0))
    (launch,) = bench.case("good", point, FAKE_DEVICE, inputs).steps
    assert launch.shared_bytes == int(eval(shared, {}))  # the test's own text


@pytest.mark.parametrize(("work", "expected"), [
    (None, (8000, 0, 0)),  # x read once, out written once: 4 bytes x 1000 each
    ("{flops: 2 * n, elements: n}", (8000, 2000, 1000)),
    ("{bytes: n / 2}", (500, 0, 0)),  # a float that is a whole number counts
    ("{bytes: 0}", (0, 0, 0)),
    ("{bytes: n / 3}", "kernel.work.bytes: 'n / 3' is 333.3333333333333, not a count >= 0"),
    ("{flops: -1 * n}", "kernel.work.flops: '-1 * n' is -1000, not a count >= 0"),
])  # fmt: skip
def test_the_work_of_a_kernel_file_exactly(tmp_path, work, expected):
    text = (
        SCALE
        if work is None
        else SCALE.replace("  reference: 2 * x\n", f"  reference: 2 * x\n  work: {work}\n")
    )
    text = text.replace("n: [1000, 4097]", "n: [1000]")
    if isinstance(expected, str):
        with pytest.raises(ConfigError) as error:
            load(tmp_path, text)
        assert str(error.value).endswith(f"{expected}, at the point n=1000, block=128")
        return
    _, bench = load(tmp_path, text)
    point = {"n": 1000, "block": 128}
    work = bench.case("good", point, FAKE_DEVICE, bench.inputs(point, np.random.default_rng(0)))
    got = work.work_for(None)
    assert (got.bytes_moved, got.flops, got.elements) == expected
    assert type(got.bytes_moved) is int


def test_an_in_out_array_counts_twice_in_the_default_work(tmp_path):
    text = (SCALE.replace("variants: [good, fast, skips_last, wrong]", "variants: [axpy_inplace]")
            .replace("    - out: out float32[n]\n    - x: in float32[n]\n",
                     "    - y: inout float32[n]\n    - x: in float32[n]\n    - a: float32 = 2.0\n")
            .replace("reference: 2 * x", "reference: 2.0 * x + y")
            .replace("n: [1000, 4097]", "n: [1000]"))  # fmt: skip
    _, bench = load(tmp_path, text)
    point = {"n": 1000, "block": 128}
    inputs = bench.inputs(point, np.random.default_rng(0))
    work = bench.case("axpy_inplace", point, FAKE_DEVICE, inputs).work_for(None)
    assert work.bytes_moved == 2 * 4000 + 4000  # y read and written, x read


def _init(tmp_path, dtype, init):
    """A kernel file whose one input x (dtype, 1000 elements) is filled by `init`: its values,
    or the one line that refuses the point."""
    text = SCALE.replace("x: in float32[n]", f"x: in {dtype}[n]").replace(
        "n: [1000, 4097]", "n: [1000]"
    )
    if init is not None:
        text = text.replace(
            "  reference: 2 * x\n", f'  reference: 2 * x\n  init: {{x: "{init}"}}\n'
        )
    try:
        _, bench = load(tmp_path, text)
    except ConfigError as exc:
        return str(exc).split("params: ", 1)[1].removesuffix(", at the point n=1000, block=128")
    return bench.inputs({"n": 1000, "block": 128}, np.random.default_rng(3))["x"]


BIG = 2**53


@pytest.mark.parametrize(("dtype", "init", "low", "high"), [
    ("float32", None, 1.0, 2.0),  # the default for floats: [1, 2)
    ("float32", "uniform(5)", 0.0, 5.0),
    ("float64", "uniform(-1, 1)", -1.0, 1.0),
    ("float32", "integers(3)", 0, 2),
    ("float64", f"integers(0, {BIG})", 0, BIG),  # up to what a float64 holds exactly
    ("int8", None, 0, 99),  # the default for integers: [0, 100)
    ("int8", "integers(-128, 128)", -128, 127),
    ("uint8", "integers(250, 256)", 250, 255),
    ("float32", "normal(5, 0)", 5.0, 5.0),  # no spread: every value the mean
    ("bool", None, 0, 1),  # the default for bool: both values
    ("uint8", "full(255)", 255, 255),
    ("int16", "arange()", 0, 999),
    ("float16", "integers(-2048, 2048)", -2048, 2047),  # what a float16 holds exactly
])  # fmt: skip
def test_each_init_fills_its_range_in_the_array_s_type(tmp_path, dtype, init, low, high):
    x = _init(tmp_path, dtype, init)
    assert not isinstance(x, str), x
    assert x.dtype == np.dtype(dtype) and x.shape == (1000,)
    whole = (
        x.dtype == np.bool_
        or np.issubdtype(x.dtype, np.integer)
        or (init or "").startswith("integers")
    )
    if whole and high - low < 200:  # [low, high] inclusive, and 1000 draws reach both ends
        assert (x.min(), x.max()) == (low, high) and np.all(x == np.round(x))
    elif whole:
        assert low <= x.min() and x.max() <= high and np.all(x == np.round(x))
    else:  # [low, high) for floats, spread over it; a point where they meet
        assert low <= x.min() and (x.max() < high or low == high == x.max())
        assert x.max() - x.min() >= 0.9 * (high - low)


def test_normal_defaults_to_mean_0_and_deviation_1(tmp_path):
    for init, mean in (("normal()", 0.0), ("normal(7)", 7.0)):
        x = _init(tmp_path, "float64", init)
        assert abs(x.mean() - mean) < 0.15 and 0.85 < x.std() < 1.15


@pytest.mark.parametrize(("dtype", "init", "problem"), [
    ("float32", "uniform(2, 2)", "kernel.init.x: uniform(2, 2) is an empty range"),
    ("float32", "uniform(0)", "kernel.init.x: uniform(0.0, 0) is an empty range"),
    ("float32", "normal(1, -1)", "kernel.init.x: normal(1, -1): a negative standard deviation"),
    ("float32", "integers(0, 1.5)", "kernel.init.x: integers(0, 1.5) takes integers"),
    ("float64", f"integers({-BIG - 1}, 0)",
     f"kernel.init.x: integers({-BIG - 1}, 0) is empty or outside float64 [{-BIG}, {BIG})"),
    ("float64", f"integers(0, {BIG + 1})",
     f"kernel.init.x: integers(0, {BIG + 1}) is empty or outside float64 [{-BIG}, {BIG})"),
    ("int8", "integers(-129, 0)",
     "kernel.init.x: integers(-129, 0) is empty or outside int8 [-128, 128)"),
    ("int8", "integers(5, 5)", "kernel.init.x: integers(5, 5) is empty or outside int8 [-128, 128)"),
    ("float32", "uniform(1e400)", "kernel.init.x: uniform() argument inf is not a finite number"),
    ("float32", "uniform(0, ceil_div(n, 0))",
     "kernel.init.x: 'ceil_div(n, 0)': ceil_div divides by zero"),
    # Every value must fit the array's type: nothing wraps, rounds or overflows unseen.
    ("int8", "full(300)", "kernel.init.x: full(300): 300 does not fit in int8 [-128, 127]"),
    ("uint8", "full(-1)", "kernel.init.x: full(-1): -1 does not fit in uint8 [0, 255]"),
    ("int32", "full(2.5)", "kernel.init.x: full(2.5): 2.5 is not an integer (int32)"),
    ("float32", "full(1e300)", "kernel.init.x: full(1e+300): 1e+300 overflows float32"),
    ("int8", "arange()", "kernel.init.x: arange() counts to 999, past int8's largest value 127"),
    ("bool", "arange()", "kernel.init.x: arange() counts to 999, past bool's largest value 1"),
    ("bool", "integers(0, 3)", "kernel.init.x: integers(0, 3) is empty or outside bool [0, 2)"),
    ("float16", "uniform(0, 1e6)",
     "kernel.init.x: uniform(0, 1000000.0): 1000000.0 is outside float16's range (±65504)"),
    ("float16", "uniform(-1e6, 0)",
     "kernel.init.x: uniform(-1000000.0, 0): -1000000.0 is outside float16's range (±65504)"),
    ("float16", "normal(0, 10000)",
     "kernel.init.x: normal(0, 10000): 80000 is outside float16's range (±65504)"),
    ("float16", "integers(0, 2049)",
     "kernel.init.x: integers(0, 2049) is empty or outside float16 [-2048, 2048)"),
    ("float32", "integers(0, 16777217)",
     "kernel.init.x: integers(0, 16777217) is empty or outside float32 [-16777216, 16777216)"),
])  # fmt: skip
def test_each_impossible_init_is_the_point_s_one_line(tmp_path, dtype, init, problem):
    assert _init(tmp_path, dtype, init) == problem


@pytest.mark.parametrize(("value", "dtype", "expected"), [
    (3, "int32", np.int32(3)), (3.0, "uint8", np.uint8(3)), (255, "uint8", np.uint8(255)),
    (1, "bool", np.True_), (0.0, "bool", np.False_), (2.5, "float32", np.float32(2.5)),
    (7, "float64", np.float64(7.0)), (-128, "int8", np.int8(-128)),
])  # fmt: skip
def test_a_scalar_becomes_its_c_type(value, dtype, expected):
    converted = kernelfile_benchmark._as_c_type(value, np.dtype(dtype), "kernel.args[1].a")
    assert converted == expected and converted.dtype == np.dtype(dtype)


@pytest.mark.parametrize(("value", "dtype", "message"), [
    (True, "int32", "k: True is not a number"),
    ("3", "int32", "k: '3' is not a number"),
    (float("inf"), "float32", "k: inf is not a finite number"),
    (2.5, "int32", "k: 2.5 is not an integer (int32)"),
    (256, "uint8", "k: 256 does not fit in uint8 [0, 255]"),
    (-129, "int8", "k: -129 does not fit in int8 [-128, 127]"),
    (1e39, "float32", "k: 1e+39 overflows float32"),
])  # fmt: skip
def test_a_scalar_that_is_not_its_c_type_is_the_point_s_one_line(value, dtype, message):
    from gpubench.errors import PointError

    with pytest.raises(PointError) as info:
        kernelfile_benchmark._as_c_type(value, np.dtype(dtype), "k")
    assert str(info.value) == message


def _out(dtype: str):
    from gpubench.kernelfile.declaration import Array

    return Array("out", "out", np.dtype(dtype), ())


@pytest.mark.parametrize(("value", "shape", "dtype", "expected"), [
    (2, (3,), "float32", np.array([2.0, 2.0, 2.0])),
    ([1, 2, 3, 4], (2, 2), "int32", np.array([[1, 2], [3, 4]])),
    ([[1, 2]], (3, 2), "float32", np.array([[1.0, 2.0]] * 3)),
    (np.array([True, False]), (2,), "bool", np.array([1, 0])),
    (np.array([1.0, 2.0]), (2,), "int32", np.array([1, 2])),
    (np.array([2**63]), (1,), "uint64", np.array([2**63], dtype=np.uint64)),
])  # fmt: skip
def test_a_reference_is_conformed_to_its_output(value, shape, dtype, expected):
    result = kernelfile_benchmark._conform(value, shape, _out(dtype))
    wanted = np.float64 if dtype.startswith("float") else (np.uint64 if dtype == "uint64" else
                                                           np.int64)  # fmt: skip
    assert result.dtype == wanted and result.flags["C_CONTIGUOUS"]
    assert np.array_equal(result, expected)


@pytest.mark.parametrize(("value", "shape", "dtype", "message"), [
    ("text", (2,), "float32", "kernel.reference.out: the reference is <U4, not numbers"),
    ([1, "a"], (2,), "float32", "kernel.reference.out: the reference is <U21, not numbers"),
    (np.array([1, None], dtype=object), (2,), "float32", "kernel.reference.out: the reference "
     "is object, not numbers"),
    ([1, 2, 3], (2,), "float32", "kernel.reference.out: the reference has shape (3,); the "
     "output is float32[2]"),
    (np.array([[1, 2], [3, 4]]), (4,), "int32", "kernel.reference.out: the reference has shape "
     "(2, 2); the output is int32[4]"),
    (np.array([1.5]), (1,), "int32", "kernel.reference.out: the reference has fractions; out is "
     "int32"),
    (np.array([np.inf]), (1,), "int32", "kernel.reference.out: the reference has fractions; out "
     "is int32"),
    (np.array([0.5], dtype=np.float32), (1,), "int32", "kernel.reference.out: the reference has "
     "fractions; out is int32"),
    ([[1, 2], [3]], (2,), "float32", "kernel.reference.out: not an array: setting an array "
     "element with a sequence. The requested array has an inhomogeneous shape after 1 "
     "dimensions. The detected shape was (2,) + inhomogeneous part."),
])  # fmt: skip
def test_a_reference_that_cannot_be_the_output_is_the_point_s_one_line(value, shape, dtype,
                                                                      message):  # fmt: skip
    from gpubench.errors import PointError

    with pytest.raises(PointError) as info:
        kernelfile_benchmark._conform(value, shape, _out(dtype))
    assert str(info.value) == message


def test_each_variant_launches_with_its_own_block_and_shared_memory(tmp_path):
    text = SCALE.replace("block: block\n", "block: {default: block, fast: [16, 2, 1]}\n"
                         "  shared: {fast: 4 * block, default: 0}\n")  # fmt: skip
    _, bench = load(tmp_path, text)
    point = {"n": 1000, "block": 128}
    inputs = bench.inputs(point, np.random.default_rng(0))
    (good,) = bench.case("good", point, FAKE_DEVICE, inputs).steps
    (fast,) = bench.case("fast", point, FAKE_DEVICE, inputs).steps
    assert (good.block, good.shared_bytes) == ((128, 1, 1), 0)
    assert (fast.block, fast.shared_bytes) == ((16, 2, 1), 512)


@pytest.mark.parametrize(("block", "problem"), [
    ("[4, 16, 16]", "kernel.block: (4, 16, 16) is 1024 threads"),
    ("[1, 32, 33]", "kernel.block: (1, 32, 33) is 1056 threads; a block holds at most 1024"),
    ("[33, 1, 32]", "kernel.block: (33, 1, 32) is 1056 threads; a block holds at most 1024"),
])  # fmt: skip
def test_the_thread_count_is_the_product_of_all_three_dimensions(tmp_path, block, problem):
    text = SCALE.replace("block: block\n", f"block: {block}\n")
    if "at most" not in problem:
        _, bench = load(tmp_path, text)
        assert bench.validate_point({"n": 1000, "block": 128}) is None
        return
    with pytest.raises(ConfigError) as error:
        load(tmp_path, text)
    assert (
        str(error.value)
        == f"{tmp_path / 'k.yaml'}: params: {problem}, at the point n=1000, block=128"
    )


def test_a_reference_function_named_in_capitals_runs_and_a_missing_one_is_named(tmp_path):
    from gpubench.errors import ConfigError

    (tmp_path / "ref.py").write_text("def TwiceX(x, n):\n    return 2 * x[:n]\nvalue = 3\n")
    results = run(tmp_path, SCALE.replace("reference: 2 * x", "reference: ref.py:TwiceX"),
                  variants=["good"])  # fmt: skip
    assert results["good"].status is Status.OK
    for name in ("absent", "value"):  # no such name; a name that is no function
        (tmp_path / name).mkdir()
        path = write(
            tmp_path / name, SCALE.replace("reference: 2 * x", f"reference: ../ref.py:{name}")
        )
        with pytest.raises(ConfigError) as info:
            kernelfile_benchmark.load_benchmark.__wrapped__(str(path.resolve()))
        assert str(info.value) == (f"{path.resolve()}: kernel.reference: {tmp_path / 'ref.py'} "
                                   f"defines no function {name!r}")  # fmt: skip


# -- the dry run's reference check, exactly ---------------------------------------------------
def _dry(tmp_path, text, cu=CU):
    path = write(tmp_path, text, cu)
    bench = kernelfile_benchmark.load_benchmark.__wrapped__(str(path))
    return bench, config.load(path).points(bench)


SHORT = SCALE.replace("reference: 2 * x", "reference: x[1:]")


def test_a_dry_run_names_the_smallest_point_in_full(tmp_path):
    bench, points = _dry(tmp_path, SHORT.replace("n: [1000, 4097]", "n: [4097, 1000, 2000]"))
    assert bench.dry_run_problems(points) == [
        "kernel.reference.out: the reference has shape (999,); the output is float32[1000] "
        "(at n=1000, block=128)"]  # fmt: skip


def test_a_dry_run_of_fixed_shapes_checks_the_first_point(tmp_path):
    text = SHORT.replace("[n]", "[16]").replace("    - n: uint32 = n\n", "")
    text = text.replace("grid: ceil_div(n, block)", "grid: 1").replace("n: [1000, 4097]\n", "")
    bench, points = _dry(tmp_path, text)
    assert bench.dry_run_problems(points) == [
        "kernel.reference.out: the reference has shape (15,); the output is float32[16] "
        "(at block=128)"]  # fmt: skip


def test_a_dry_run_computes_the_reference_up_to_256_mib_of_arrays_and_skips_past_it(tmp_path):
    at_limit = (256 << 20) // 8  # out and x, 4 bytes each
    bench, points = _dry(tmp_path, SHORT.replace("n: [1000, 4097]", f"n: [{at_limit}]"))
    (problem,) = bench.dry_run_problems(points)
    assert problem.startswith(f"kernel.reference.out: the reference has shape ({at_limit - 1},)")
    bench, points = _dry(tmp_path, SHORT.replace("n: [1000, 4097]", f"n: [{at_limit + 1}]"))
    assert bench.dry_run_problems(points) == []  # too large to compute on the host for a check


def test_a_dry_run_reads_a_source_that_is_not_utf8(tmp_path):
    path = write(tmp_path, SCALE)
    (tmp_path / "k.cu").write_bytes(CU.encode() + b"// \xff\xfe latin-1 comment\n")
    bench = kernelfile_benchmark.load_benchmark.__wrapped__(str(path))
    assert bench.dry_run_problems(config.load(path).points(bench)) == []


def test_a_block_of_1025_threads_is_refused_and_1000_is_not(tmp_path):
    text = SCALE.replace("block: block\n", "block: [5, 5, bz]\n")
    text = text.replace("  block: [128, 256]\n", "  block: [128]\n  bz: [40]\n")
    load(tmp_path, text)  # 1000 threads
    with pytest.raises(ConfigError) as error:
        load(tmp_path, text.replace("bz: [40]", "bz: [40, 41]"))
    assert str(error.value).endswith(
        ": params: kernel.block: (5, 5, 41) is 1025 threads; a block holds at most 1024, at the "
        "point n=1000, block=128, bz=41")  # fmt: skip


def test_shared_memory_that_cannot_be_evaluated_is_named(tmp_path):
    text = SCALE.replace("block: block\n", "block: block\n  shared: n // (block - block)\n")
    with pytest.raises(ConfigError) as error:
        load(tmp_path, text)
    assert str(error.value).endswith(
        ": params: kernel.shared: 'n // (block - block)' divides by zero, at the point n=1000, "
        "block=128")  # fmt: skip


def _reference(tmp_path, source, text=SCALE, n=4):
    """The reference of a function in a file of its own (a file is loaded once per path)."""
    module = f"ref{len(list(tmp_path.glob('ref*.py')))}.py"
    (tmp_path / module).write_text(source)
    _, bench = load(tmp_path, text.replace("reference: 2 * x", f"reference: {module}:ref"))
    inputs = {"x": np.arange(n, dtype=np.float32)}
    return bench, lambda: bench.reference("default", {**bench.defaults(), "n": n}, inputs)


def test_a_reference_function_with_keyword_arguments_gets_every_value(tmp_path):
    _, call = _reference(
        tmp_path, "def ref(x, **values):\n    return x * values['n'] + values['block']\n"
    )
    assert call()["out"].tolist() == [128.0, 132.0, 136.0, 140.0]


def test_each_wrong_return_of_a_reference_function_is_named(tmp_path):
    two = SCALE.replace(
        "    - x: in float32[n]\n", "    - x: in float32[n]\n    - y: out float32[n]\n"
    )
    from gpubench.errors import PointError

    for source, text, message in [
        ("def ref(x):\n    return {'out': x}\n", two, "kernel.reference: no value for output 'y'"),
        ("def ref(x):\n    return x\n", two, "kernel.reference: ref() must return a dict of outputs"),
        ("def ref(x):\n    raise ValueError('" + "y" * 400 + "')\n", SCALE,
         "kernel.reference: ref() failed: ValueError: " + "y" * 300),
    ]:  # fmt: skip
        _, call = _reference(tmp_path, source, text)
        with pytest.raises(PointError) as error:
            call()
        assert str(error.value) == message
    _, call = _reference(tmp_path, "def ref(x):\n    return {'out': x, 'y': -x}\n", two)
    assert call()["y"].tolist() == [0.0, -1.0, -2.0, -3.0]


@pytest.mark.parametrize(("dtype", "init"), [
    # Drawn in the array's own integer type (a stream of its own), not as int64 and cast.
    ("int8", "integers(-5, 5)"),
    ("uint16", "integers(0, 1000)"),
    ("float32", "integers(0, 9)"),  # a float array: drawn as int64
])  # fmt: skip
def test_integer_inputs_are_drawn_in_their_own_type_from_the_seed(tmp_path, dtype, init):
    text = SCALE.replace("in float32[n]", f"in {dtype}[n]").replace(
        "  reference: 2 * x\n", f'  reference: 2 * x\n  init: {{x: "{init}"}}\n')  # fmt: skip
    _, bench = load(tmp_path, text)
    x = bench.inputs({**bench.defaults(), "n": 8}, np.random.default_rng(7))["x"]
    low, high = (int(v) for v in init[len("integers(") : -1].split(","))
    drawn = np.dtype(dtype) if np.issubdtype(np.dtype(dtype), np.integer) else np.int64
    own = np.random.default_rng(7).integers(low, high, 8, dtype=drawn)
    assert x.dtype == np.dtype(dtype) and x.tolist() == own.astype(dtype).tolist()
    if drawn != np.int64:  # the int64 stream is another one for these types and ranges
        cast = np.random.default_rng(7).integers(low, high, 8, dtype=np.int64).astype(dtype)
        assert x.tolist() != cast.tolist()


@pytest.mark.parametrize(("value", "expected"), [
    (1, 1), (1024, 1024), (3.0, 3), (np.int64(7), 7),
    (0, None), (1025, None), (2.5, None), (-1, None), ("4", None), (None, None),
])  # fmt: skip
def test_a_launch_dimension_is_a_whole_number_up_to_its_limit(value, expected):
    found = kernelfile_benchmark._as_dimension(value, 1024)
    assert found == expected and (found is None or type(found) is int)


def test_a_scalar_past_a_float_type_is_refused_without_a_numpy_warning():
    import warnings

    from gpubench.errors import PointError

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning would print beside the one line
        with pytest.raises(PointError) as info:
            kernelfile_benchmark._as_c_type(1e300, np.dtype("float32"), "k")
        assert str(info.value) == "k: 1e+300 overflows float32"
        with pytest.raises(PointError, match="outside float16's range"):
            kernelfile_benchmark._init_plan(_input("float16"), _uniform(0, 1e6), {})


def _input(dtype: str):
    from gpubench.kernelfile.declaration import Array

    return Array("x", "in", np.dtype(dtype), ())


def _uniform(low, high):
    from gpubench.kernelfile.declaration import Init
    from gpubench.model.expressions import Expression

    args = tuple(Expression.parse(str(v), []) for v in (low, high))
    return Init("uniform", args, f"uniform({low}, {high})")


def test_an_init_argument_that_is_not_a_number_is_the_point_s_one_line(tmp_path):
    text = SCALE.replace(
        "  reference: 2 * x\n", '  reference: 2 * x\n  init: {x: "uniform(0, tag)"}\n'
    )
    text = text.replace("  block: [128, 256]\n", "  block: [128]\n  tag: [abc]\n")
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text)
    assert "kernel.init.x: uniform() argument 'abc' is not a finite number" in str(info.value)


def test_a_kernel_file_part_that_holds_itself_is_one_line(tmp_path):
    # Before, the digest of the kernel mapping met the cycle: a 50-line "Circular reference".
    text = SCALE.replace("  reference: 2 * x\n", "  reference: 2 * x\n  init: {x: &q [*q]}\n")
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text)
    assert str(info.value) == (f"{tmp_path / 'k.yaml'}: an alias refers to the list or mapping "
                               "that holds it (line 12)")  # fmt: skip


def test_arange_fills_an_integer_array_up_to_its_largest_value_exactly():
    from gpubench.errors import PointError

    kernelfile_benchmark._arange_fits(_input("int8"), 128)  # 0 .. 127
    with pytest.raises(PointError, match=r"^kernel.init.x: arange\(\) counts to 128, past int8"):
        kernelfile_benchmark._arange_fits(_input("int8"), 129)
    kernelfile_benchmark._arange_fits(_input("float16"), 10**6)  # floats round; they do not wrap


# -- the lean sweep check against validate_point ----------------------------------------------
# Two variants with launch shapes of their own, a scalar that the default grid reads, an
# array whose size is a float expression, a work count and scalars that can fail: each bad
# value below is refused by validate_point, and the lean path of a sweep (validate_points)
# must refuse it at the same point with the same words.
AGREE = """\
kernel:
  source: k.cu
  variants: [good, fast]
  args:
    - out: out float32[m]
    - x: in float32[m * 2 / dd]
    - count: uint32 = n
    - s: int8 = s
    - q: int32 = n // qd
  grid:
    default: ceil_div(count, block)
    fast: [gx, gy]
  block:
    default: block
    fast: [bx, by, bz]
  shared:
    fast: sh
  work: {flops: n // wd}
  reference: 2 * x
params:
  n: [1000]
  m: [1000]
  dd: [2]
  block: [128]
  gx: [1]
  gy: [1]
  bx: [32]
  by: [1]
  bz: [1]
  sh: [0]
  s: [1]
  qd: [1]
  wd: [1]
"""
AGREE_GOOD = {"n": 1000, "m": 1000, "dd": 2, "block": 128, "gx": 1, "gy": 1, "bx": 32, "by": 1,
              "bz": 1, "sh": 0, "s": 1, "qd": 1, "wd": 1}  # fmt: skip
AGREE_BAD = [
    ({"gy": 65536}, "kernel.grid: 'gy' is 65536; each dimension must be an integer in [1, 65535]"),
    ({"gx": 0}, "kernel.grid: 'gx' is 0; each dimension must be an integer in [1, 2147483647]"),
    ({"gx": None}, "kernel.grid: 'gx': gx has no value here"),
    ({"gx": [1, 2]}, "kernel.grid: 'gx'"),
    ({"n": 0}, "kernel.grid: 'ceil_div(count, block)' is 0"),
    ({"n": -1}, "kernel.args.count: -1 does not fit in uint32"),
    ({"bx": 1025}, "kernel.block: 'bx' is 1025; each dimension must be an integer in [1, 1024]"),
    ({"bz": 65}, "kernel.block: 'bz' is 65; each dimension must be an integer in [1, 64]"),
    ({"by": 32, "bz": 2}, "kernel.block: (32, 32, 2) is 2048 threads; a block holds at most 1024"),
    ({"block": 2048}, "kernel.block: 'block' is 2048"),
    ({"sh": -1}, "kernel.shared: 'sh' is -1, not a byte count"),
    ({"sh": 2**31}, "kernel.shared: 'sh' is 2147483648, not a byte count"),
    ({"sh": 0.5}, "kernel.shared: 'sh' is 0.5, not a byte count"),
    ({"m": 0}, "kernel.args.out: dimension 'm' is 0, not a positive integer"),
    ({"m": 2**48 + 1}, "kernel.args.out: float32[281474976710657] is 1.13e+15 bytes, more memory "
                       "than a GPU has"),
    ({"dd": 0}, "kernel.args.x: 'm * 2 / dd' divides by zero"),
    ({"s": 128}, "kernel.args.s: 128 does not fit in int8"),
    ({"s": [1, 2]}, "kernel.args.s: "),
    ({"qd": 0}, "kernel.args.q: 'n // qd' divides by zero"),
    ({"wd": 0}, "kernel.work.flops: 'n // wd' divides by zero"),
]  # fmt: skip


def _agree_bench(tmp_path):
    return kernelfile_benchmark.load_benchmark.__wrapped__(str(write(tmp_path, AGREE).resolve()))


@pytest.mark.parametrize(("bad", "problem"), AGREE_BAD, ids=lambda v: str(v)[:40])
def test_the_lean_sweep_check_refuses_each_problem_where_validate_point_does(tmp_path, bad,
                                                                            problem):  # fmt: skip
    bench = _agree_bench(tmp_path)
    good = dict(AGREE_GOOD)
    point = {**good, **bad}
    assert bench.validate_point(good) is None  # first: a memo must not answer for the bad point
    found = bench.validate_point(point)
    assert found is not None and found.startswith(problem), found
    assert bench.validate_point(point) == found  # and again, from the memo
    points = [good, {**good, "n": 1001}, point, good]
    assert bench.validate_points(points) == (2, found)
    (tmp_path / "fresh").mkdir()
    assert _agree_bench(tmp_path / "fresh").validate_points(points) == (2, found)  # no memo yet


def test_the_lean_sweep_check_accepts_the_edges(tmp_path):
    bench = _agree_bench(tmp_path)
    edges = [{"m": 2**48}, {"by": 32}, {"sh": 2**31 - 1}, {"gy": 65535}, {"bz": 64, "bx": 16},
             {"s": -128}, {"n": 1}, {"wd": 10**6}]  # fmt: skip
    points = [{**AGREE_GOOD, **edge} for edge in edges]
    assert [bench.validate_point(p) for p in points] == [None] * len(points)
    assert bench.validate_points(points) is None


def test_the_lean_sweep_check_asks_validate_point_about_no_good_point(tmp_path, monkeypatch):
    """The lean path's reason to be: a sweep of good points never takes the slow path, and
    each scalar and each data check is worked out once per distinct value it reads."""
    bench = _agree_bench(tmp_path)
    slow, converted = [], []
    monkeypatch.setattr(bench, "validate_point", lambda p: slow.append(p))
    real = kernelfile_benchmark._as_c_type
    monkeypatch.setattr(kernelfile_benchmark, "_as_c_type",
                        lambda *a: converted.append(a[2]) or real(*a))  # fmt: skip
    points = [
        {
            **AGREE_GOOD,
            "n": 1000 + i % 10,
            "gx": 1 + i % 7,
            "by": 1 + 31 * (i % 2),
            "sh": 48 << 10 if i % 3 else 0,
        }
        for i in range(500)
    ]  # 1024 threads, 48 KiB: fine
    assert bench.validate_points(points) is None
    assert slow == []
    assert len(converted) == 3 * 10  # three scalars; n takes 10 values, gx is read by none
    bench.validate_points(points)
    assert len(converted) == 3 * 10


def test_validate_point_works_each_check_out_once_per_distinct_value(tmp_path, monkeypatch):
    bench = _agree_bench(tmp_path)
    calls = []
    real = bench._launch_problem
    monkeypatch.setattr(bench, "_check_list", None)
    monkeypatch.setattr(bench, "_launch_problem", lambda v, env: calls.append(v) or real(v, env))
    for _ in range(3):
        for gx in (1, 2):
            assert bench.validate_point({**AGREE_GOOD, "gx": gx}) is None
    assert sorted(calls) == ["fast", "fast", "good"]  # good reads none of gx


def test_the_memos_stay_bounded(tmp_path):
    """At most 2^16 entries each: the 2^16 + 1st distinct value starts a memo afresh."""
    bench = _agree_bench(tmp_path)
    for n in range(1, (1 << 16) + 2):
        bench._scalars({**AGREE_GOOD, "n": n})
    assert len(bench._scalar_memo) == 1
    checks = bench._checks()
    for n in range(1, (1 << 16) + 2):
        bench.validate_point({**AGREE_GOOD, "n": n})
    assert [len(memo) for _, _, memo in checks] == [1, 1, 1]  # data and "good" read n


@pytest.mark.parametrize(("count", "cpus", "parallel"), [
    (99, 4, False), (100, 4, True), (100, 3, True), (100, 2, False), (5000, 64, True),
])  # fmt: skip
def test_a_large_sweep_is_split_over_at_most_16_spawned_processes(tmp_path, monkeypatch, count,
                                                                   cpus, parallel):  # fmt: skip
    import concurrent.futures

    bench = _agree_bench(tmp_path)
    made = []
    real = concurrent.futures.ProcessPoolExecutor

    def spy(max_workers=None, mp_context=None):
        made.append((max_workers, mp_context.get_start_method() if mp_context else None))
        return real(max_workers=2, mp_context=mp_context)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", spy)
    monkeypatch.setattr(kernelfile_benchmark, "PARALLEL_VALIDATION_FROM", 100)
    monkeypatch.setattr(kernelfile_benchmark, "usable_cpus", lambda: cpus)
    points = [{**AGREE_GOOD, "n": 1000 + i} for i in range(count)]
    points[0] = {**AGREE_GOOD, "gx": 0}  # the first point of the first slice
    assert bench.validate_points(points) == (0, bench.validate_point(points[0]))
    assert made == ([(min(16, cpus), "spawn")] if parallel else [])


def test_a_range_up_to_the_type_s_largest_value_fits(tmp_path):
    x = _init(tmp_path, "float16", "uniform(-65504, 65504)")
    assert not isinstance(x, str), x
    assert np.isfinite(x).all()


def test_an_elementwise_reference_is_computed_in_slices_and_another_in_one_call(tmp_path,
                                                                                monkeypatch):  # fmt: skip
    from gpubench.model import hostmath

    calls = []
    real = hostmath.elementwise

    def counted(function, arrays, out):  # counts the calls that computed the reference
        result = real(function, arrays, out)
        calls.append(len(arrays))
        return result

    monkeypatch.setattr(hostmath, "elementwise", counted)
    _, bench = load(tmp_path, SCALE)
    point = bench.defaults()
    inputs = bench.inputs(point, np.random.default_rng(3))
    expected = 2 * inputs["x"].astype(np.float64)
    calls.clear()  # making inputs may use it too
    ref = bench.reference("default", point, inputs)["out"]
    assert calls == [1] and ref.dtype == np.float64
    np.testing.assert_array_equal(ref, expected)
    # An integer output is not the elementwise path's: one call, exact integers.
    _, bench = load(tmp_path, SCALE.replace("out float32[n]", "out int32[n]")
                    .replace("reference: 2 * x", "reference: 2 * n + 0 * x"))  # fmt: skip
    calls.clear()
    ref = bench.reference("default", point, inputs)["out"]
    assert calls == [] and ref.dtype == np.int64 and (ref == 2000).all()


@pytest.mark.parametrize("output", ["float32", "int32"])  # the sliced path and the one call
def test_a_reference_expression_that_fails_names_itself(tmp_path, output):
    expression = "x * (n // (n - n))"
    _, bench = load(tmp_path, SCALE.replace("out float32[n]", f"out {output}[n]")
                    .replace("reference: 2 * x", f"reference: {expression}"))  # fmt: skip
    point = bench.defaults()
    inputs = bench.inputs(point, np.random.default_rng(0))
    with pytest.raises(PointError) as error:
        bench.reference("default", point, inputs)
    assert str(error.value) == f"kernel.reference.out: {quote(expression)} divides by zero"


def test_a_reference_file_that_vanishes_after_parsing_names_the_kernel_file(tmp_path):
    (tmp_path / "ref.py").write_text("def double(x):\n    return 2 * x\n")
    path = write(tmp_path, SCALE.replace("reference: 2 * x", "reference: ref.py:double"))
    bench = kernelfile_benchmark.load_benchmark.__wrapped__(str(path))
    point = bench.defaults()
    inputs = bench.inputs(point, np.random.default_rng(0))
    (tmp_path / "ref.py").unlink()
    with pytest.raises(ConfigError) as error:
        bench.reference("default", point, inputs)
    assert str(error.value).startswith(f"{path}: ")


def test_a_dry_run_finds_the_smallest_point_by_every_name_a_size_or_scalar_reads(tmp_path):
    huge = (256 << 20) // 8 + 1  # past what a dry run computes on the host
    text = SHORT.replace("- n: uint32 = n", "- a: float32 = alpha")
    text = text.replace("n: [1000, 4097]", f"n: [{huge}, 1000]\n  alpha: [1.5]")
    bench, points = _dry(tmp_path, text)
    (problem,) = bench.dry_run_problems(points)
    assert problem.startswith("kernel.reference.out: the reference has shape (999,)")
    assert problem.endswith("(at n=1000, alpha=1.5, block=128)")
    (problem,) = bench.dry_run_problems([points[-1]])  # a sweep of one point
    assert problem.endswith("(at n=1000, alpha=1.5, block=256)")


def test_a_kernel_file_with_a_yaml_date_loads(tmp_path):
    path = write(tmp_path, "x-note: 2026-11-25\n" + SCALE)
    assert kernelfile_benchmark.load_benchmark.__wrapped__(str(path)).name == "k"


def test_a_launch_name_the_compiled_check_cannot_take_is_checked_point_by_point(tmp_path):
    """A parameter whose name would shadow the compiled expressions' helpers (_gpb_...) sends
    the launch check to validate_point at every point, which still refuses a bad one."""
    text = SCALE.replace("grid: ceil_div(n, block)", "grid: _gpb_g")
    text = text.replace("  block: [128, 256]\n", "  block: [128]\n  _gpb_g: [1]\n")
    bench = kernelfile_benchmark.load_benchmark.__wrapped__(str(write(tmp_path, text)))
    good = bench.defaults()
    assert bench.validate_points([good, {**good, "_gpb_g": 2}]) is None
    assert bench.validate_points([good, {**good, "_gpb_g": 0}]) == (
        1,
        ("kernel.grid: '_gpb_g' is 0; each dimension must be an integer in [1, 2147483647]"),
    )


# -- matrix products and bounded references ---------------------------------------------------
MATMUL = """\
kernel:
  source: k.cu
  variants: [good]
  args:
    - C: out float32[m, n]
    - A: in float32[m, k]
    - B: in float32[k, n]
  grid: 1
  block: 1
  reference: {reference}
params:
  m: [5]
  n: [3]
  k: [4]
"""


@pytest.mark.parametrize(
    "reference", ["A @ B", "matmul(A, B)", "dot(A, B)", "\"einsum('ij,jk->ik', A, B)\""]
)
def test_a_matmul_reference_computes_numpy_s_matmul_of_the_inputs(tmp_path, reference):
    _, bench = load(tmp_path, MATMUL.format(reference=reference))
    point = {"m": 5, "n": 3, "k": 4}
    inputs = bench.inputs(point, np.random.default_rng(7))
    got = bench.reference("default", point, inputs)["C"]
    expected = np.matmul(inputs["A"].astype(np.float64), inputs["B"].astype(np.float64))
    np.testing.assert_allclose(got, expected, rtol=1e-15, atol=0)
    assert got.shape == (5, 3) and got.dtype == np.float64


def test_the_matmul_example_s_reference_is_a_at_b():
    bench = kernelfile_benchmark.load_benchmark(str((EXAMPLES / "gemm.yaml").resolve()))
    point = {"m": 33, "n": 17, "k": 9, "tile": 16}
    inputs = bench.inputs(point, np.random.default_rng(3))
    got = bench.reference("default", point, inputs)["C"]
    assert np.array_equal(got, inputs["A"].astype(np.float64) @ inputs["B"].astype(np.float64))
    spec = config.load(EXAMPLES / "gemm.yaml")
    assert bench.dry_run_problems(spec.points(bench)) == []
    assert [v.name for v in bench.variants] == ["matmul_naive", "matmul_tiled"]


def test_a_product_of_shapes_that_do_not_fit_is_one_line_naming_the_reference(tmp_path):
    spec, bench = load(tmp_path, MATMUL.format(reference="B @ A"))
    assert bench.dry_run_problems(spec.points(bench)) == [
        "kernel.reference.C: 'B @ A': matmul of shapes (4, 3) and (5, 4): the inner dimensions "
        "3 and 5 differ (at m=5, n=3, k=4)"
    ]


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        (
            "2 * x + sum(arange(300000000))",
            "arange() would make 300,000,000 elements, more than 67,108,864 (2.2 GiB as float64)",
        ),
        (
            "2 * x + sum(ones((20000, 20000)))",
            "ones() would make 400,000,000 elements, more than 67,108,864 (3.0 GiB as float64)",
        ),
        (
            "2 * x + sum(outer(arange(n * 20), arange(n * 20)))",
            "outer() would make 400,000,000 elements, more than 67,108,864 (3.0 GiB as float64)",
        ),
    ],
)
def test_a_reference_that_would_build_gigabytes_is_refused_first(tmp_path, reference, message):
    spec, bench = load(
        tmp_path,
        SCALE.replace("reference: 2 * x", f"reference: {reference}").replace(
            "n: [1000, 4097]", "n: [1000]"
        ),
    )
    (problem,) = bench.dry_run_problems(spec.points(bench))
    assert problem == f"kernel.reference.out: {quote(reference)}: {message} (at n=1000, block=128)"


def test_a_reference_as_large_as_the_kernel_s_arrays_still_runs(tmp_path):
    # 4 x the largest array is allowed: outer of two 2,048-element vectors for a 4M output.
    spec, bench = load(
        tmp_path,
        """\
        kernel:
          source: k.cu
          variants: [good]
          args:
            - out: out float32[n, n]
            - x: in float32[n]
          grid: 1
          block: 1
          reference: outer(x, x) + 1
        params:
          n: [2048]
        """,
    )
    assert bench.dry_run_problems(spec.points(bench)) == []


def test_refusing_a_3_gb_reference_takes_under_2_s_and_500_mb(tmp_path):
    write(
        tmp_path,
        SCALE.replace(
            "reference: 2 * x",
            "reference: 2 * x + sum(ones((20000, 20000))) + sum(arange(300000000))",
        ),
    )
    script = textwrap.dedent(f"""
        import re, time
        from gpubench.load import config
        from gpubench.kernelfile import benchmark as kernelfile_benchmark
        start = time.perf_counter()
        spec = config.load({str(tmp_path / "k.yaml")!r})
        bench = kernelfile_benchmark.load_benchmark({str((tmp_path / "k.yaml").resolve())!r})
        problems = bench.dry_run_problems(spec.points(bench))
        elapsed = time.perf_counter() - start
        # VmHWM: this process's peak resident memory since its exec (ru_maxrss would carry
        # over the peak of the pytest process that forked it).
        status = open("/proc/self/status").read()
        peak = int(re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1)) // 1024
        print(len(problems), "ones() would make 400,000,000" in problems[0], elapsed, peak)
    """)
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=True,
    )
    count, named, elapsed, peak_mb = done.stdout.split()
    assert (count, named) == ("1", "True")
    assert float(elapsed) < 2.0, elapsed
    assert int(peak_mb) < 500, peak_mb  # the whole process, Python and NumPy included


def test_an_init_bound_of_any_finite_double_is_taken(tmp_path):
    # 1e308 is past 2^1023 and still a finite double: a bound, not "not a finite number".
    values = _init(tmp_path, "float64", "uniform(0, 1e308)")
    assert values.dtype == np.float64 and values.shape == (1000,)
    assert ((values >= 0) & (values < 1e308)).all()


def test_a_reference_function_that_never_returns_is_cut_off_in_a_dry_run(tmp_path, monkeypatch):
    monkeypatch.setattr(kernelfile_benchmark, "DRY_RUN_REFERENCE_LIMIT_S", 0.2)
    (tmp_path / "ref.py").write_text("def spin(x):\n    while True:\n        pass\n")
    bench, points = _dry(tmp_path, SCALE.replace("reference: 2 * x", "reference: ref.py:spin"))
    started = time.perf_counter()
    assert bench.dry_run_problems(points) == [
        "kernel.reference: spin() failed: TimeoutError: no answer within 0.2 s (a dry run's "
        "bound on the reference) (at n=1000, block=128)"
    ]
    assert time.perf_counter() - started < 5
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # the timer is put back


def test_the_inputs_read_their_shapes_and_init_arguments_and_the_reference_its_expression(
    tmp_path,
):
    _, bench = load(tmp_path, SCALE)
    assert bench.reference_params == frozenset({"n"})  # 2 * x, and the output's shape
    assert bench.input_params == frozenset({"n"})  # x's shape; block shapes nothing
    with_init = SCALE.replace(
        "  reference: 2 * x\n", "  reference: 2 * x\n  init:\n    x: integers(0, ways)\n"
    )
    with_init = with_init.replace("  defines: [block]", "  defines: [block, ways]")
    with_init = with_init.replace("  block: [128, 256]", "  block: [128, 256]\n  ways: [2, 32]")
    _, bench = load(tmp_path, with_init)
    assert bench.input_params == frozenset({"n", "ways"})  # init(..., ways) reads it
    a, b = ({**bench.defaults(), "n": 1000, "block": 128, "ways": w} for w in (2, 32))
    from gpubench.engine import input_sets

    assert input_sets.same_problem(bench, a, b)  # the reference reads no ways...
    assert not input_sets.shares_problem(bench, a, b)  # ...but the inputs do: not shared
