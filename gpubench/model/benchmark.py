"""What a benchmark suite declares: parameters, variants, inputs, one Case per variant and
point (steps, buffers, work, tolerance), and the reference answer.

A suite subclasses `Benchmark` and fills in these declarations; the harness does the
compiling, allocating, checking, timing, statistics, metrics and reporting.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from gpubench.errors import quote
from gpubench.model.metrics import Metric
from gpubench.model.steps import (
    BufferRef,
    Copy,
    Launch,
    LibraryCall,
    Repeat,
    RunRecord,
    Step,
    flatten,
    referenced_buffers,
)

if TYPE_CHECKING:
    from gpubench.model.device import DeviceInfo

__all__ = [
    "Benchmark", "BufferRef", "BufferSpec", "Case", "Copy", "Launch", "LibraryCall", "Metric",
    "Param", "Point", "Repeat", "RunRecord", "Tolerance", "Variant", "Work", "ceil_div",
]  # fmt: skip

Point = dict[str, Any]


@dataclass(frozen=True)
class Param:
    """One parameter of a suite: it becomes a CLI option and a YAML key."""

    name: str
    type: type
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None
    compile_time: bool = False
    minimum: int | float | None = None
    # The largest value the kernels can take (an `unsigned int n` stops at 2^32 - 1).
    maximum: int | float | None = None
    # Why the maximum is what it is, for the error message.
    maximum_reason: str = ""
    # A parameter whose default is None is derived from others in Benchmark.resolve.
    derived_from: str | None = None

    @property
    def type_name(self) -> str:
        return self.type.__name__

    def coerce(self, value: Any) -> Any:
        """Return `value` as this parameter's type, or raise ValueError saying why not."""
        if value is None and self.default is None:
            return None
        if self.type is bool:
            if isinstance(value, bool):
                return value
            raise ValueError(f"expected true or false, got {quote(value)}")
        if self.type is int:
            # bool is an int subclass in Python; `tile: yes` must not become 1.
            if isinstance(value, bool) or not isinstance(value, int | str):
                raise ValueError(f"expected an integer, got {quote(value)}")
            try:
                coerced = int(value)
            except ValueError:
                raise ValueError(f"expected an integer, got {quote(value)}") from None
        elif self.type is float:
            if isinstance(value, bool) or not isinstance(value, int | float | str):
                raise ValueError(f"expected a number, got {quote(value)}")
            try:
                # YAML 1.1 reads `1e-3` (no dot) as a string: accept it as the number it is.
                coerced = float(value)
            except ValueError:
                raise ValueError(f"expected a number, got {quote(value)}") from None
            if not math.isfinite(coerced):
                raise ValueError(f"expected a finite number, got {quote(value)}")
        else:
            if isinstance(value, bool):
                raise ValueError(
                    f"expected text, got the boolean {quote(value)} "
                    "(YAML reads yes/no/on/off as booleans: quote the value)"
                )
            if not isinstance(value, str | int | float):
                raise ValueError(f"expected text, got {quote(value)}")
            coerced = str(value)
        if self.choices is not None and coerced not in self.choices:
            allowed = ", ".join(str(c) for c in self.choices)
            raise ValueError(f"{quote(coerced)} is not allowed (allowed: {allowed})")
        if self.minimum is not None and coerced < self.minimum:
            raise ValueError(f"{quote(coerced)} is below the minimum {self.minimum}")
        if self.maximum is not None and coerced > self.maximum:
            why = f" ({self.maximum_reason})" if self.maximum_reason else ""
            raise ValueError(f"{quote(coerced)} is above the maximum {self.maximum}{why}")
        return coerced


@dataclass(frozen=True)
class Variant:
    """One strategy of a suite: our kernels, a vendor library on the GPU, or the CPU."""

    name: str
    help: str
    # Variants that compute the same function share one reference answer.
    computes: str = "default"
    # "kernel": launches from kernels_cu/; "library": LibraryCall steps on the GPU (timed
    # with the same events); "host": Benchmark.host_run on the CPU (timed with a host clock,
    # which is right for synchronous CPU work).
    kind: str = "kernel"


LOCATIONS = ("device", "pinned", "pageable")
INITS = ("poison", "zero", "input")


@dataclass(frozen=True)
class BufferSpec:
    """A buffer the harness allocates for a variant: its shape, type, where it lives and what
    it holds before the run."""

    shape: tuple[int, ...]
    dtype: np.dtype
    # "device" memory, or host memory: "pinned" (page-locked, the copy engines read it
    # directly) or "pageable" (ordinary memory, staged by the driver).
    location: str = "device"
    # "poison": all-ones bytes (NaN in floats), so an element never written fails the check;
    # "zero": scratch a kernel relies on starting at zero (a completion counter; kernels that
    #   use it must leave it at zero);
    # "input": an in-out buffer, initialised from the input of the same name before the
    #   checked run and restored from it before every timed sample (outside the timed region).
    init: str = "poison"

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize

    @property
    def on_host(self) -> bool:
        return self.location != "device"

    @classmethod
    def like(cls, array: np.ndarray, location: str = "device", init: str = "poison") -> BufferSpec:
        return cls(tuple(array.shape), np.dtype(array.dtype), location, init)


@dataclass(frozen=True)
class Work:
    """The work the algorithm must do in one run, independent of how a variant does it."""

    bytes_moved: int
    flops: int = 0
    elements: int = 0
    # Where the bytes come from: "dram" (the default), or "l2" / "shared" for a working set
    # that lives in a cache. Only DRAM traffic is given as a percent of the DRAM peak.
    level: str = "dram"
    # What the flops are: "fp32" (the default), or "fp64" / "fp16" / "tensor" / "int32"
    # (integer operations): only FP32 flops are given as a percent of the FP32 peak.
    precision: str = "fp32"
    # The distinct bytes one run touches, where that is less than bytes_moved (a kernel that
    # reads its working set several times); 0: every byte moved is distinct. The speed of
    # light's DRAM bound counts only these: a byte read again can come from the L2.
    footprint: int = 0

    def to_dict(self) -> dict[str, int | str]:
        record: dict[str, int | str] = {
            "bytes_moved": self.bytes_moved,
            "flops": self.flops,
            "elements": self.elements,
        }
        if self.level != "dram":
            record["level"] = self.level
        if self.precision != "fp32":
            record["precision"] = self.precision
        return record


# Relative tolerance of the default check for floating-point outputs, in units of the output
# type's machine epsilon: a kernel whose FMA contraction or evaluation order rounds
# differently from NumPy by a few ulps is still right.
DEFAULT_ULPS = 4


@dataclass(frozen=True)
class Tolerance:
    """Elementwise check |out - ref| <= atol + rtol * |ref|; zero means exact."""

    rtol: float = 0.0
    atol: float = 0.0

    @classmethod
    def default_for(cls, dtype: np.dtype) -> Tolerance:
        """A few ulps relative for floating-point outputs; exact for integers."""
        dtype = np.dtype(dtype)
        if np.issubdtype(dtype, np.floating):
            return cls(rtol=DEFAULT_ULPS * float(np.finfo(dtype).eps))
        return cls()


@dataclass
class Case:
    """Everything the harness needs to check and time one variant at one point: the steps of
    one run, the buffers they use beyond the inputs, where the inputs must live, the work
    done and how close to the reference the outputs must be."""

    steps: list[Step] = field(default_factory=list)
    # Buffers the harness checks against the reference after the run.
    outputs: dict[str, BufferSpec] = field(default_factory=dict)
    # Buffers the steps need and nobody checks (partial sums, device copies of host data).
    scratch: dict[str, BufferSpec] = field(default_factory=dict)
    # Where each input lives for this variant: "device" (the default), "pinned", "pageable".
    input_locations: dict[str, str] = field(default_factory=dict)
    # The work of one run; a callable gets the checked run's RunRecord (iterations...).
    work: Work | Callable[[RunRecord], Work] = field(default_factory=lambda: Work(0))
    # None: the default check (a few ulps for floats, exact for integers) for every output; a
    # callable gets the run's RunRecord (a bound that grows with the iterations run); a dict
    # gives each output its own (outputs it does not name get the default).
    tolerance: Tolerance | Callable[[RunRecord], Tolerance] | dict[str, Tolerance] | None = None
    # Why this variant cannot run at this point (a tile too large for shared memory).
    skip: str | None = None
    # Flops per element loaded from global memory, where the suite can say.
    cgma: float | None = None
    # Buffers (outputs or scratch) read back after the checked run into RunRecord.read_back
    # (counters kept on the device), and the metrics made from that record (steps, edges
    # relaxed, clock cycles, ulp errors).
    read_back: tuple[str, ...] = ()
    run_metrics: Callable[[RunRecord], dict[str, float]] | None = None

    def work_for(self, record: RunRecord | None) -> Work:
        if callable(self.work):
            return self.work(record or RunRecord())
        return self.work

    def tolerance_for(
        self, dtype: np.dtype, record: RunRecord | None = None, output: str | None = None
    ) -> Tolerance:
        if isinstance(self.tolerance, dict):
            found = self.tolerance.get(output or "")
            return found if found is not None else Tolerance.default_for(dtype)
        if self.tolerance is None:
            return Tolerance.default_for(dtype)
        if callable(self.tolerance):
            return self.tolerance(record or RunRecord())
        return self.tolerance

    def problems(self, inputs: dict[str, np.ndarray]) -> list[str]:
        """Mistakes in the declaration itself (a suite bug): unknown buffers, an in-out
        buffer without its input, a host buffer passed to a kernel, ..."""
        return self._buffer_problems(inputs) + self._step_problems(inputs) + self._repeat_problems()

    def _buffer_problems(self, inputs: dict[str, np.ndarray]) -> list[str]:
        found: list[str] = []
        own = {**self.outputs, **self.scratch}
        for name in set(self.outputs) & set(self.scratch):
            found.append(f"buffer {name!r} is both an output and scratch")
        for name, spec in own.items():
            if spec.location not in LOCATIONS:
                found.append(
                    f"buffer {name!r}: location {spec.location!r} is not one of "
                    f"{', '.join(LOCATIONS)}"
                )
            if spec.init not in INITS:
                found.append(
                    f"buffer {name!r}: init {spec.init!r} is not one of {', '.join(INITS)}"
                )
            if spec.init == "input":
                if name not in inputs:
                    found.append(f"in-out buffer {name!r} has no input of the same name")
                elif inputs[name].nbytes != spec.nbytes:
                    found.append(
                        f"in-out buffer {name!r} has {spec.nbytes} bytes; its input "
                        f"has {inputs[name].nbytes}"
                    )
            elif name in inputs:
                found.append(
                    f"output {name!r} has the name of an input: declare it "
                    "init='input' (an in-out buffer) or rename it"
                )
        for name, where in self.input_locations.items():
            if name not in inputs:
                found.append(f"input_locations names {name!r}, which is not an input")
            if where not in LOCATIONS:
                found.append(
                    f"input {name!r}: location {where!r} is not one of {', '.join(LOCATIONS)}"
                )
        return found

    def _step_problems(self, inputs: dict[str, np.ndarray]) -> list[str]:
        found: list[str] = []
        own = {**self.outputs, **self.scratch}
        known = set(inputs) | set(own)

        def location(name: str) -> str:
            if name in own:
                return own[name].location
            return self.input_locations.get(name, "device")

        for name in self.read_back:
            if name not in own:
                found.append(f"read_back names {name!r}, which is neither an output nor scratch")
        for name in sorted(referenced_buffers(self.steps) - known):
            found.append(f"a step uses buffer {name!r}, which is neither an input nor declared")
        for step in flatten(self.steps):
            if isinstance(step, Launch):
                for arg in step.args:
                    if (
                        isinstance(arg, BufferRef)
                        and arg.name in known
                        and location(arg.name) != "device"
                    ):
                        found.append(f"kernel {step.kernel!r} gets host buffer {arg.name!r}")
            elif isinstance(step, Copy):
                if step.synchronous and step.stream:
                    found.append(f"copy {step.src}→{step.dst}: synchronous copies run on stream 0")
                if (
                    step.src in known
                    and step.dst in known
                    and location(step.src) != "device"
                    and location(step.dst) != "device"
                ):
                    found.append(f"copy {step.src}→{step.dst}: host to host is no GPU work")
        return found

    def _repeat_problems(self) -> list[str]:
        found: list[str] = []
        own = {**self.outputs, **self.scratch}
        for step in self.steps:
            if isinstance(step, Repeat):
                spec = own.get(step.flag)
                if (
                    spec is None
                    or spec.location != "device"
                    or spec.nbytes != 4
                    or np.dtype(spec.dtype).itemsize != 4
                    or not np.issubdtype(spec.dtype, np.integer)
                ):
                    found.append(
                        f"Repeat flag {step.flag!r} must be a declared one-element "
                        "32-bit integer device buffer"
                    )
                if step.max_iterations < 1:
                    found.append("Repeat max_iterations must be at least 1")
                if any(s.stream for s in step.body) or any(
                    isinstance(s, Repeat) for s in step.body
                ):
                    found.append("a Repeat body runs on stream 0 and holds no Repeat")
        return found


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


class Benchmark(ABC):
    """A suite declares; the harness does.

    Declared as class attributes: the parameters, the variants and the baseline. Declared
    per point: the inputs (`inputs`), and for each variant a `Case` (`case`): its steps,
    buffers, work and tolerance. The reference answer comes from `reference`. Everything
    else (compiling, allocating, poisoning, checking, timing, statistics, tables, files) is
    the harness's job.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    params: ClassVar[tuple[Param, ...]]
    variants: ClassVar[tuple[Variant, ...]]
    baseline: ClassVar[str]
    # A vendor library variant (CUB, cuBLAS) to express every result as a % of, if any.
    vendor_reference: ClassVar[str | None] = None
    # Suite-specific metrics (set by point_metrics) shown as table and CSV columns.
    metrics: ClassVar[tuple[Metric, ...]] = ()
    # Show registers, shared memory, spills and theoretical occupancy beside the timing.
    show_resources: ClassVar[bool] = False
    # Memory-bound suites flush L2 between samples by default (cold-cache timing).
    memory_bound: ClassVar[bool] = True
    # False for suites without kernels of their own (copies only): nothing is compiled.
    has_kernels: ClassVar[bool] = True
    # The kernels each variant launches, for a source that guards each kernel with
    # `#if GPUBENCH_WANTS_<kernel>` (kernels_cu/matmul.cu): a build for variants that are all
    # listed compiles only their kernels, so the many builds of a tuning sweep over one
    # kernel's tile shapes skip the rest of the file. Empty: every build compiles all of it.
    variant_kernels: ClassVar[dict[str, tuple[str, ...]]] = {}
    # Kernel source file stem in kernels_cu/; defaults to the suite name.
    source: ClassVar[str | None] = None
    # Or a .cu file anywhere (a user's own kernels, test kernels); wins over `source`.
    source_file: ClassVar[str | None] = None
    # A variant whose outputs are the reference the others are checked against (instead of
    # `reference`); it runs first and is itself reported as unverified.
    reference_variant: ClassVar[str | None] = None
    # The parameters `reference` reads (none: the answer depends on the inputs alone); None
    # when it may read any. Consecutive points that differ only in compile-time parameters it
    # does not read pose the same problem: the later is handed the earlier's inputs, with
    # their reference, as its second input set (gpubench.engine.input_sets).
    reference_params: ClassVar[frozenset[str] | None] = None
    # The parameters `inputs` and `input_specs` read; None when they may read any. Points of
    # one problem that also agree on these share all of it: both input sets, the references
    # and the device copies (gpubench.engine.runner); a suite that cannot say makes fresh inputs.
    input_params: ClassVar[frozenset[str] | None] = None

    # -- declarations ---------------------------------------------------------------------
    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(name)

    @property
    def variant_names(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.variants)

    @property
    def source_stem(self) -> str:
        return self.source or self.name

    def defaults(self) -> Point:
        return {p.name: p.default for p in self.params}

    def resolve(self, point: Point) -> Point:
        """Fill derived parameters (e.g. rows from size). Default: nothing derived."""
        return dict(point)

    def validate_point(self, point: Point) -> str | None:
        """Why this point makes no sense for the suite (None if it is fine)."""
        return None

    def validate_points(self, points: list[Point]) -> tuple[int, str] | None:
        """(index, problem) of the first point that cannot run, or None. Suites whose checks
        are costly per point (kernel files) answer for a whole sweep at once."""
        for index, point in enumerate(points):
            problem = self.validate_point(point)
            if problem:
                return index, problem
        return None

    def defines(self, point: Point) -> dict[str, str]:
        """Compile-time parameters as -D macro definitions: by default every parameter
        declared `compile_time`, by its upper-case name."""
        return {
            p.name.upper(): str(point[p.name])
            for p in self.params
            if p.compile_time and point.get(p.name) is not None
        }

    def kernels_to_build(self, variants: Iterable[str]) -> tuple[str, ...] | None:
        """The kernels a build for these variants needs, or None: the whole source. Only where
        every variant is in `variant_kernels` (a variant that launches no kernel of ours is
        listed with none)."""
        names = list(variants)
        if not names or any(v not in self.variant_kernels for v in names):
            return None
        return tuple(sorted({kernel for v in names for kernel in self.variant_kernels[v]}))

    def compiler_options(self, point: Point) -> list[str]:
        """nvcc options beyond the -D definitions (--use_fast_math, -lineinfo)."""
        return []

    def has_reference(self) -> bool:
        """False for a suite that cannot check its outputs: its results are `unverified`."""
        return True

    def declaration_digest(self) -> str | None:
        """A hash of declarations that live outside the kernel source (a kernel file's
        arguments and reference), so --resume notices when they change."""
        return None

    def dry_run_problems(self, points: list[Point]) -> list[str]:
        """Problems a dry run can find beyond the points themselves (a reference of the wrong
        shape, a graph file that does not parse); each becomes one error line."""
        return []

    def dry_run_notes(self, points: list[Point]) -> list[str]:
        """Lines a dry run prints after the plan (a graph file's vertex and arc counts)."""
        return []

    def input_specs(self, point: Point) -> dict[str, BufferSpec] | None:
        """The shapes and types `inputs` will return, so the harness can check that a point
        fits in host and device memory before making them (None: unknown)."""
        return None

    @abstractmethod
    def inputs(self, point: Point, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Fresh random inputs for one point (never zeros)."""

    @abstractmethod
    def case(
        self, variant: str, point: Point, device: DeviceInfo, inputs: dict[str, np.ndarray]
    ) -> Case:
        """How `variant` runs at `point` on `device`, given the point's inputs."""

    @abstractmethod
    def reference(
        self, computes: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """The right answer for every output, computed with NumPy."""

    def host_run(
        self, variant: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """The CPU variants' work: outputs from host inputs."""
        raise NotImplementedError(f"{self.name} has no host variant {variant!r}")

    def unavailable(self, variant: str) -> str | None:
        """Why a variant cannot run here at all (a library not installed), or None."""
        return None

    def point_metrics(self, results: list[Any]) -> None:
        """Metrics that need several variants of one point (e.g. overlap efficiency); called
        once all of them are done, with the point's results."""
        return None
