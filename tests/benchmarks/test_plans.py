"""Every built-in suite's plan, pinned: for each suite, at a few small and awkward points, what
it resolves the point to, whether it accepts it, its -D definitions and compiler options, the
inputs it makes from a fixed seed (shape, type and a digest of the bytes), and for every
variant the whole Case: each step with its grid, block, arguments and streams, every buffer's
shape, type, place and initial contents, the work (bytes, flops, elements) and tolerances.

The expected text lives in tests/benchmarks/plans/SUITE.txt. A change to a launch
configuration, a buffer size, a byte count or the input stream shows up here as a diff, on the
CPU, before a GPU ever sees it. After a deliberate change: GPUBENCH_UPDATE_SNAPSHOTS=1 pytest
tests/benchmarks/test_plans.py, then read the diff before committing it (tests/snapshots.py).
The input digests follow NumPy's random streams, which NumPy may change between releases: a
diff in the input lines alone after an upgrade is that, and is rewritten the same way.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gpubench.load import registry
from gpubench.model.benchmark import BufferSpec, Case
from gpubench.model.device import DeviceInfo
from gpubench.model.steps import BufferRef, Copy, Launch, LibraryCall, Repeat, RunRecord
from tests import snapshots

PLANS = Path(__file__).parent / "plans"
SEED = 20261124

# An H100 SXM as gpubench reads it (the tuned paths depend on SM count and shared memory).
H100 = DeviceInfo(
    name="NVIDIA H100 80GB HBM3", compute_capability=(9, 0), sm_count=132,
    sm_clock_mhz=1980.0, memory_clock_mhz=2619.0, memory_bus_width_bits=5120,
    memory_bytes=85_024_112_640, l2_bytes=52_428_800, shared_per_block_bytes=48 * 1024,
    shared_per_block_optin_bytes=232_448, shared_per_sm_bytes=233_472,
    registers_per_sm=65536, registers_per_block=65536, max_threads_per_block=1024,
    max_threads_per_sm=2048, warp_size=32,
)  # fmt: skip

# Small points (a run of every variant's plan stays cheap), with awkward sizes: 1, primes,
# non-multiples of the tile, non-square shapes, and one point each suite must refuse.
POINTS: dict[str, list[dict[str, Any]]] = {
    "access": [
        dict(working_set=1 << 20),
        dict(working_set=3 * 4099 * 128, offset=3, stride=7, dtype="float64"),
        dict(working_set=(1 << 20) + 4, offset=32, stride=32),
    ],
    "banks": [
        dict(iterations=16),
        dict(stride=3, word=8, iterations=5),
        dict(stride=32, word=8, iterations=4),
    ],
    "ceilings": [
        dict(
            dram_bytes=1 << 24,
            l2_bytes=1 << 16,
            l2_passes=2,
            shared_iterations=8,
            fma_iterations=8,
            waves=1,
            gemm_size=64,
            block=128,
        )
    ],
    "divergence": [dict(n=1000, work=3, block=64), dict(n=1), dict(n=4099, block=128)],
    "intrinsics": [dict(n=1000, repeat=2), dict(n=997, repeat=3, range="large", fast_math=True)],
    "matmul": [
        dict(size=64),
        dict(size=64, m=33, n=17, k=9, block=8, micro=2),
        dict(size=256, wbm=128, wbn=64, wbk=16, wtm=8, wtn=4, wm=64, wn=32, wniter=2, stages=3),
    ],
    "reduction": [
        dict(n=1000, block_size=128),
        dict(n=1),
        dict(n=65537, dtype="int32"),
        dict(n=100003, block_size=512),
        dict(n=4099, block_size=1024, dtype="int32"),
        dict(n=3_000_017),
    ],  # past the grid cap: grid-stride loops
    "sssp": [
        dict(vertices=100),
        dict(vertices=61, weights="uniform", sources=3, edge_order="random", delta=5),
        dict(vertices=50, weights="unit", source=7, edge_order="destination", local_rounds=2),
        dict(vertices=1, weights="uniform"),
        dict(vertices=300_000, weights="uniform"),
    ],  # more arcs than the grid cap
    "streams": [
        dict(size=48, matrices=3, streams=2, bands=2),
        dict(size=37, block=8, matrices=5, streams=3, bands=3),
    ],
    "transfer": [dict(bytes=4096), dict(bytes=4099)],
    "transpose": [
        dict(size=64),
        dict(size=64, rows=33, cols=17, tile=16, block_rows=4),
        dict(size=1, tile=16, block_rows=16, dtype="float64"),
    ],
    "unroll": [dict(n=1000, work=3, block=64), dict(n=1), dict(n=4099, block=128)],
}


def _value(x: Any) -> str:
    if isinstance(x, float | np.floating):  # six digits: the same on every machine's libm
        return f"{type(x).__name__}({float(x):.6g})" if isinstance(x, np.generic) else f"{x:.6g}"
    if isinstance(x, np.generic):
        return f"{type(x).__name__}({x.item()!r})"
    if isinstance(x, BufferRef):
        return f"@{x.name}+{x.offset}" if x.offset else f"@{x.name}"
    if isinstance(x, np.dtype):
        return str(x)
    if isinstance(x, tuple | list):
        return "(" + ", ".join(_value(v) for v in x) + ")"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k}: {_value(v)}" for k, v in sorted(x.items())) + "}"
    if callable(x):
        return "<callable>"
    return repr(x)


def _fields(obj: Any, skip: tuple[str, ...] = ()) -> str:
    return ", ".join(f"{f.name}={_value(getattr(obj, f.name))}"
                     for f in dataclasses.fields(obj) if f.name not in skip)  # fmt: skip


def _step(step: Any, indent: str) -> list[str]:
    if isinstance(step, Repeat):
        lines = [f"{indent}Repeat(flag={step.flag!r}, max_iterations={step.max_iterations}, "
                 f"label={step.label!r})"]  # fmt: skip
        for inner in step.body:
            lines += _step(inner, indent + "    ")
        return lines
    if isinstance(step, Launch | Copy | LibraryCall):
        return [f"{indent}{type(step).__name__}({_fields(step)})"]
    return [f"{indent}{step!r}"]


def _buffers(title: str, specs: dict[str, BufferSpec]) -> list[str]:
    return [f"  {title} {name}: {_fields(spec)}" for name, spec in sorted(specs.items())]


def _digest(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:16]


def _record(case: Case) -> RunRecord:
    """A checked run's record: 5 iterations, and made-up counters in the read-back buffers."""
    specs = {**case.outputs, **case.scratch}
    read_back = {}
    for name in case.read_back:
        spec = specs[name]
        count = int(np.prod(spec.shape))
        read_back[name] = (np.arange(count) % 97 + 3).astype(spec.dtype).reshape(spec.shape)
    return RunRecord(iterations=5, read_back=read_back)


def _case(case: Case, inputs: dict[str, np.ndarray]) -> list[str]:
    record = _record(case)
    lines = [f"  skip={case.skip!r} cgma={case.cgma!r} read_back={case.read_back!r} "
             f"input_locations={_value(case.input_locations)}"]  # fmt: skip
    if case.skip is None:
        lines.append(f"  work(5 iterations): {_fields(case.work_for(record))}")
        for name, spec in sorted(case.outputs.items()):
            lines.append(f"  tolerance {name}: "
                         f"{_fields(case.tolerance_for(spec.dtype, record, name))}")  # fmt: skip
        lines.append(f"  problems: {case.problems(inputs)}")
        if case.run_metrics is not None:
            lines.append(f"  run metrics: {_value(case.run_metrics(record))}")
    lines += _buffers("output", case.outputs) + _buffers("scratch", case.scratch)
    for step in case.steps:
        lines += _step(step, "  ")
    return lines


def _reference(bench: Any, variant: Any, point: dict, inputs: dict) -> str:
    """Digests of the reference: exact for integers, for floats to 14 bits of mantissa (NumPy's
    float sums and transcendentals may differ in the last bits between machines)."""
    try:
        expected = bench.reference(variant.computes, point, inputs)
    except Exception as exc:
        return f"raises {type(exc).__name__}: {exc}"
    return _digests(expected)


def _digests(arrays: dict[str, Any]) -> str:
    parts = []
    for name, array in sorted(arrays.items()):
        array = np.asarray(array)
        shown = array
        if np.issubdtype(array.dtype, np.floating):
            mantissa, exponent = np.frexp(array.astype(np.float64))
            shown = np.ldexp(np.round(np.ldexp(mantissa, 14)), exponent - 14)
        parts.append(f"{name} {array.dtype}{list(array.shape)} {_digest(shown)}")
    return "; ".join(parts)


def render(suite: str) -> str:
    return render_points(registry.get(suite), POINTS[suite])


def render_points(bench: Any, points: list[dict[str, Any]]) -> str:
    suite = bench.name
    lines: list[str] = []
    for values in points:
        point = bench.resolve({**bench.defaults(), **values})
        for param in bench.params:  # the points are ones a sweep file could ask for
            if param.name in values:
                assert param.coerce(values[param.name]) == values[param.name], (suite, param)
        lines.append(f"== point {_value(point)}")
        problem = bench.validate_point(point)
        if problem:
            lines.append(f"refused: {problem}")
            continue
        lines.append(f"defines {_value(bench.defines(point))} options "
                     f"{bench.compiler_options(point)}")  # fmt: skip
        lines += [f"note: {note}" for note in bench.dry_run_notes([point])]
        specs = bench.input_specs(point)
        inputs = bench.inputs(point, np.random.default_rng(SEED))
        for name, array in sorted(inputs.items()):
            spec = specs.get(name) if specs else None
            declared = f" (declared {_fields(spec)})" if spec else ""
            lines.append(f"input {name}: {array.dtype}{list(array.shape)} {_digest(array)}"
                         f"{declared}")  # fmt: skip
        computed: dict[str, str] = {}
        for variant in bench.variants:
            lines.append(f"-- {variant.name} ({variant.kind}, computes {variant.computes})")
            lines += _case(bench.case(variant.name, point, H100, inputs), inputs)
            if variant.kind == "host":
                lines.append(f"  host run: {_digests(bench.host_run(variant.name, point, inputs))}")
        for variant in bench.variants:  # after the cases: some suites size them there
            if variant.computes not in computed:
                computed[variant.computes] = _reference(bench, variant, point, inputs)
                lines.append(f"reference {variant.computes}: {computed[variant.computes]}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("suite", sorted(POINTS))
def test_the_suite_plan_is_the_pinned_one(suite):
    snapshots.matches(PLANS / f"{suite}.txt", render(suite))


# The kernel files that ship (configs/examples/): their plans come from YAML through
# kernel_suite (launch shapes, init expressions, references), pinned the same way.
EXAMPLES: dict[str, list[dict[str, Any]]] = {
    "saxpy": [dict(n=1000, block=128), dict(n=1, block=256), dict(n=4099, block=512)],
    "histogram": [dict(n=1003, bins=16, block=256), dict(n=1, bins=4096, block=256)],
    "stencil2d": [
        dict(width=40, height=33, tile_x=32, tile_y=4),
        dict(width=1, height=1, tile_x=32, tile_y=16),
    ],
}


@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_the_example_kernel_file_plan_is_the_pinned_one(example):
    from gpubench.kernelfile.benchmark import load_benchmark

    root = Path(__file__).parents[2]
    bench = load_benchmark(str(root / "configs" / "examples" / f"{example}.yaml"))
    snapshots.matches(PLANS / f"example_{example}.txt", render_points(bench, EXAMPLES[example]))


def test_every_built_in_suite_has_pinned_points():
    assert sorted(POINTS) == registry.suite_names()
