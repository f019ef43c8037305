"""Fast-math intrinsics against the standard functions: sinf/__sinf, expf/__expf, 1/x and
__fdividef, 1/sqrtf and rsqrtf, optionally all under --use_fast_math. Each is checked against
float64 within the error bound the CUDA Programming Guide documents for it, and the table
shows the error it actually made (max ulp, max relative) beside its throughput."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gpubench.model.benchmark import (
    Benchmark,
    BufferRef,
    BufferSpec,
    Case,
    Launch,
    Param,
    Point,
    RunRecord,
    Tolerance,
    Variant,
    Work,
    ceil_div,
)
from gpubench.model.metrics import Metric

if TYPE_CHECKING:
    from gpubench.model.device import DeviceInfo
    from gpubench.model.results import Result

THREADS = 256
STEP = 2.0**-10  # the kernels' nearby arguments: x + k / 1024, rounded to float32
ULP = 2.0**-23  # float32's ulp at 1, relative
SMALLEST_NORMAL = float(np.finfo(np.float32).tiny)
FUNCTIONS = ("sin", "exp", "divide", "rsqrt")

MAX_ULP = Metric("max_ulp", "max ulp", "ulp", "{:,.1f}", higher_is_better=False)
MAX_REL = Metric("max_rel_error", "max rel err", "", "{:.2e}", higher_is_better=False)
VS_STANDARD = Metric("vs_standard", "vs standard", "x", "{:,.2f}x")

# Where the arguments are drawn from: `small` is each function's home range, `large` reaches
# past it (sinf's slow path beyond |x| = 105615, __expf's growing error, __fdividef's zero
# for divisors beyond 2^126).
RANGES = {
    "small": {"sin": (-np.pi, np.pi), "exp": (-10.0, 10.0), "divide": (1.0, 2.0),
              "rsqrt": (1.0, 4.0)},
    "large": {"sin": (-1e6, 1e6), "exp": (-80.0, 80.0), "divide": (2.0**-100, 2.0**127),
              "rsqrt": (2.0**-100, 2.0**100)},
}  # fmt: skip
LOG_UNIFORM = {("large", "divide"), ("large", "rsqrt")}


def exact(function: str, x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    if function == "sin":
        return np.sin(x)
    if function == "exp":
        return np.exp(x)
    if function == "divide":
        return 1.0 / x
    return 1.0 / np.sqrt(x)


def nearby(x: np.ndarray, k: int) -> np.ndarray:
    """float32(x + k / 1024): what __fmaf_rn(k, 1/1024, x) gives."""
    return (x.astype(np.float64) + k * STEP).astype(np.float32)


def documented_bound(function: str, intrinsic: bool, span: tuple[float, float]) -> Tolerance:
    """The CUDA Programming Guide's maximum error for one evaluation over arguments in `span`,
    as |error| <= atol + rtol * |exact|. Results below float32's smallest normal may flush to
    zero under fast math, hence the atol floor."""
    low, high = span
    if function == "sin":
        if not intrinsic:
            return Tolerance(rtol=2 * ULP, atol=SMALLEST_NORMAL)
        if -np.pi <= low and high <= np.pi:
            return Tolerance(atol=2.0**-21.41)
        # __sinf outside [-pi, pi]: no bound documented; checked to stay a sine's size.
        return Tolerance(atol=2.0)
    if function == "exp":
        if not intrinsic:
            return Tolerance(rtol=2 * ULP, atol=SMALLEST_NORMAL)
        worst = max(abs(low), abs(high)) + 0.1
        return Tolerance(rtol=(2 + np.floor(1.173 * worst)) * ULP, atol=SMALLEST_NORMAL)
    if function == "divide":
        # IEEE division is correctly rounded; __fdividef and fast-math division: 2 ulp, and 0
        # for divisors beyond 2^126 (their reciprocal is below the smallest normal).
        return Tolerance(rtol=(2 if intrinsic else 0.5) * ULP, atol=SMALLEST_NORMAL)
    # 1/sqrtf: two correctly rounded steps; rsqrtf: 2 ulp; fast-math sqrt and division: 4.
    return Tolerance(rtol=(4 if intrinsic else 2) * ULP, atol=SMALLEST_NORMAL)


def ulp_errors(got: np.ndarray, exact_values: np.ndarray) -> tuple[float, float]:
    """(max error in float32 ulps of the exact value, max relative error where it is
    defined), ignoring results too small to be normal."""
    got64 = got.astype(np.float64)
    magnitude = np.maximum(np.abs(exact_values), SMALLEST_NORMAL).astype(np.float32)
    spacing = np.spacing(magnitude).astype(np.float64)
    error = np.abs(got64 - exact_values)
    if not np.all(np.isfinite(error)):
        return float("inf"), float("inf")
    relative = error / np.maximum(np.abs(exact_values), SMALLEST_NORMAL)
    return float((error / spacing).max(initial=0.0)), float(relative.max(initial=0.0))


class Intrinsics(Benchmark):
    name = "intrinsics"
    description = "fast-math intrinsics vs standard functions: throughput and ulp error"
    memory_bound = False
    baseline = "sin_standard"
    metrics = (MAX_ULP, MAX_REL, VS_STANDARD)
    params = (
        Param("n", int, 1 << 20, "arguments (one thread each)", minimum=1, maximum=1 << 28),
        Param("repeat", int, 64, "evaluations per thread for the throughput (nearby "
              "arguments, up to repeat / 1024 above the first)", minimum=1, maximum=1024),
        Param("range", str, "small", "argument range: each function's home range, or past "
              "it (sin beyond 105615, exp to +-80, divisors to 2^127)", choices=tuple(RANGES)),
        Param("fast_math", bool, False, "compile with --use_fast_math (standard names become "
              "the intrinsics)", compile_time=True),
    )  # fmt: skip
    variants = (
        Variant("sin_standard", "sinf", "sin"),
        Variant("sin_intrinsic", "__sinf (MUFU.SIN)", "sin"),
        Variant("exp_standard", "expf", "exp"),
        Variant("exp_intrinsic", "__expf (MUFU.EX2)", "exp"),
        Variant("divide_standard", "1.0f / x (IEEE division)", "divide"),
        Variant("divide_intrinsic", "__fdividef(1.0f, x)", "divide"),
        Variant("rsqrt_standard", "1.0f / sqrtf(x)", "rsqrt"),
        Variant("rsqrt_intrinsic", "rsqrtf(x) (MUFU.RSQ)", "rsqrt"),
    )

    def defines(self, point: Point) -> dict[str, str]:
        return {}

    def compiler_options(self, point: Point) -> list[str]:
        return ["--use_fast_math"] if point["fast_math"] else []

    def input_specs(self, point: Point) -> dict[str, BufferSpec]:
        return {f"x_{f}": BufferSpec((point["n"],), np.dtype(np.float32)) for f in FUNCTIONS}

    def inputs(self, point: Point, rng: np.random.Generator) -> dict[str, np.ndarray]:
        arrays = {}
        for function in FUNCTIONS:
            low, high = self.span(point, function)
            if (point["range"], function) in LOG_UNIFORM:
                values = np.exp2(rng.uniform(np.log2(low), np.log2(high), point["n"]))
            else:
                values = rng.uniform(low, high, point["n"])
            arrays[f"x_{function}"] = values.astype(np.float32)
        return arrays

    def span(self, point: Point, function: str) -> tuple[float, float]:
        """Where the first argument of each thread is drawn from; every nearby argument (up
        to repeat / 1024 above it) stays in the range too."""
        low, high = RANGES[point["range"]][function]
        if point["range"] == "small":
            high -= point["repeat"] * STEP
        return low, high

    def _tolerances(self, variant: str, point: Point) -> tuple[Tolerance, Tolerance]:
        """(one evaluation, the float32 sum of `repeat` of them)."""
        function = variant.split("_")[0]
        intrinsic = variant.endswith("intrinsic") or point["fast_math"]
        low, high = self.span(point, function)
        one = documented_bound(function, intrinsic, (low, high + point["repeat"] * STEP))
        repeat = point["repeat"]
        # A float32 running sum of `repeat` terms adds up to repeat * 2^-24 relative rounding.
        accumulation = repeat * 2.0**-24
        if function == "sin":  # terms of both signs, each at most 1: absolute bounds
            return one, Tolerance(atol=repeat * (one.atol + one.rtol) + repeat * accumulation)
        return one, Tolerance(rtol=one.rtol + accumulation, atol=repeat * one.atol)

    def case(
        self, variant: str, point: Point, device: DeviceInfo, inputs: dict[str, np.ndarray]
    ) -> Case:
        n = point["n"]
        function = variant.split("_")[0]
        launch = Launch(
            variant,
            (ceil_div(n, THREADS), 1, 1),
            (THREADS, 1, 1),
            (
                BufferRef("value"),
                BufferRef("sum"),
                BufferRef(f"x_{function}"),
                np.uint32(n),
                np.uint32(point["repeat"]),
            ),
        )
        one, summed = self._tolerances(variant, point)
        x = inputs[f"x_{function}"]

        def accuracy(record: RunRecord) -> dict[str, float]:
            max_ulp, max_rel = ulp_errors(record.read_back["value"], exact(function, x))
            return {MAX_ULP.key: max_ulp, MAX_REL.key: max_rel}

        f32 = np.dtype(np.float32)
        return Case(
            [launch],
            outputs={"value": BufferSpec((n,), f32), "sum": BufferSpec((n,), f32)},
            tolerance={"value": one, "sum": summed},
            work=Work(8 * n, elements=n * (point["repeat"] + 1)),
            read_back=("value",),
            run_metrics=accuracy,
        )

    def reference(
        self, computes: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        x = inputs[f"x_{computes}"]
        total = np.zeros(x.size)
        for k in range(point["repeat"]):
            total += exact(computes, nearby(x, k))
        return {"value": exact(computes, x), "sum": total}

    def point_metrics(self, results: list[Result]) -> None:
        """Each intrinsic's speed-up over its standard function, measured in the same run."""
        times: dict[str, Any] = {r.variant: r.median_ms for r in results if r.status.is_measured}
        for r in results:
            function = r.variant.split("_")[0]
            standard = times.get(f"{function}_standard")
            if r.variant in times and standard and times[r.variant]:
                r.metrics[VS_STANDARD.key] = standard / times[r.variant]


BENCHMARK = Intrinsics()
