"""What a benchmark suite declares: parameters, variants, inputs, launches, reference, work.

A suite subclasses `Benchmark` and fills in these declarations; the harness does the
compiling, checking, timing, statistics, metrics and reporting.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    from gpubench.device import DeviceInfo

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
            raise ValueError(f"expected true or false, got {value!r}")
        if self.type is int:
            # bool is an int subclass in Python; `tile: yes` must not become 1.
            if isinstance(value, bool) or not isinstance(value, int | str):
                raise ValueError(f"expected an integer, got {value!r}")
            try:
                coerced = int(value)
            except ValueError:
                raise ValueError(f"expected an integer, got {value!r}") from None
        elif self.type is float:
            if isinstance(value, bool) or not isinstance(value, int | float | str):
                raise ValueError(f"expected a number, got {value!r}")
            try:
                # YAML 1.1 reads `1e-3` (no dot) as a string: accept it as the number it is.
                coerced = float(value)
            except ValueError:
                raise ValueError(f"expected a number, got {value!r}") from None
        else:
            if isinstance(value, bool):
                raise ValueError(
                    f"expected text, got the boolean {value!r} "
                    "(YAML reads yes/no/on/off as booleans: quote the value)"
                )
            if not isinstance(value, str | int | float):
                raise ValueError(f"expected text, got {value!r}")
            coerced = str(value)
        if self.choices is not None and coerced not in self.choices:
            allowed = ", ".join(str(c) for c in self.choices)
            raise ValueError(f"{coerced!r} is not allowed (allowed: {allowed})")
        if self.minimum is not None and coerced < self.minimum:
            raise ValueError(f"{coerced!r} is below the minimum {self.minimum}")
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


@dataclass(frozen=True)
class BufferRef:
    """A kernel argument that is one of the harness-owned device buffers, by name."""

    name: str


@dataclass(frozen=True)
class BufferSpec:
    shape: tuple[int, ...]
    dtype: np.dtype
    # Scratch that a kernel relies on starting at zero (e.g. a completion counter) is zeroed
    # once instead of poisoned; kernels that use it must leave it at zero when they finish.
    zeroed: bool = False

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclass(frozen=True)
class Launch:
    """One kernel launch: scalars are NumPy scalars so their C type is explicit."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple[Any, ...]
    shared_bytes: int = 0

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


@dataclass(frozen=True)
class LibraryCall:
    """A step done by a library (CuPy/CUB, cuBLAS) on the harness's buffers and stream:
    `run(pointers, stream_handle)` gets the device pointers by buffer name."""

    name: str
    run: Callable[[dict[str, int], int], None]


@dataclass
class ProgramContext:
    """What a Program step gets from the backend: the timing stream, the compiled module,
    device pointers and host inputs by name, and the driver module (pycuda.driver)."""

    stream: Any
    module: Any
    pointers: dict[str, int]
    host_inputs: dict[str, np.ndarray]
    driver: Any


@dataclass(frozen=True)
class Program:
    """A step that drives the device itself (host↔device copies, several streams, events) for
    suites whose work is not a list of launches. `body` provides:
      enqueue(ctx)      one run, asynchronous, ending on ctx.stream (required);
      host_outputs()    host-side results to check after the checked run (optional);
      timeline()        one more run with events around every operation → spans (optional);
      close()           free what enqueue allocated (optional)."""

    name: str
    body: Any


@dataclass(frozen=True)
class Work:
    """The work the algorithm must do, independent of how a variant does it."""

    bytes_moved: int
    flops: int = 0
    elements: int = 0


@dataclass(frozen=True)
class Tolerance:
    """Elementwise check |out - ref| <= atol + rtol * |ref|; zero means exact."""

    rtol: float = 0.0
    atol: float = 0.0


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


class Benchmark(ABC):
    """A suite: subclasses set the class attributes and implement the methods."""

    name: ClassVar[str]
    description: ClassVar[str]
    params: ClassVar[tuple[Param, ...]]
    variants: ClassVar[tuple[Variant, ...]]
    baseline: ClassVar[str]
    # A vendor library variant (CUB, cuBLAS) to express every result as a % of, if any.
    vendor_reference: ClassVar[str | None] = None
    # Suite-specific metrics shown as table columns: (metric key, header, format string).
    extra_columns: ClassVar[tuple[tuple[str, str, str], ...]] = ()
    # Show registers, shared memory, spills and theoretical occupancy beside the timing.
    show_resources: ClassVar[bool] = False
    # Memory-bound suites flush L2 between samples by default (cold-cache timing).
    memory_bound: ClassVar[bool] = True
    # False for suites without kernels of their own (copies only): nothing is compiled.
    has_kernels: ClassVar[bool] = True
    # Kernel source file stem in kernels_cu/; defaults to the suite name.
    source: ClassVar[str | None] = None
    # Or a .cu file anywhere (a user's own kernels, test kernels); wins over `source`.
    source_file: ClassVar[str | None] = None

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

    @abstractmethod
    def defines(self, point: Point) -> dict[str, str]:
        """Compile-time parameters as -D macro definitions."""

    @abstractmethod
    def inputs(self, point: Point, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Fresh random inputs for one point (never zeros)."""

    @abstractmethod
    def outputs(self, variant: str, point: Point) -> dict[str, BufferSpec]:
        """Buffers the variant writes and the harness checks (poisoned with NaN before)."""

    def point_metrics(self, results: list[Any]) -> None:
        """Metrics that need several variants of one point (e.g. overlap efficiency); called
        once all of them are done, with the point's results."""
        return None

    def scratch(self, variant: str, point: Point, device: DeviceInfo) -> dict[str, BufferSpec]:
        """Extra device buffers a variant needs (partial sums, ...); not checked."""
        return {}

    @abstractmethod
    def launches(
        self, variant: str, point: Point, device: DeviceInfo
    ) -> list[Launch | LibraryCall | Program]:
        """The steps that make up one run of `variant`, in order; all of them are timed."""

    def unavailable(self, variant: str) -> str | None:
        """Why a variant cannot run here (a library not installed), or None."""
        return None

    def skip_reason(self, variant: str, point: Point) -> str | None:
        """Why a variant cannot run at this point (a tile too large for shared memory), or None."""
        return None

    def cgma(self, variant: str, point: Point) -> float | None:
        """Flops per element loaded from global memory (compute-to-global-memory-access), if
        the suite can say."""
        return None

    def host_run(
        self, variant: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """The CPU variants' work: outputs from host inputs."""
        raise NotImplementedError(f"{self.name} has no host variant {variant!r}")

    @abstractmethod
    def reference(
        self, computes: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """The right answer for every output, computed with NumPy."""

    def tolerance(self, variant: str, point: Point, device: DeviceInfo) -> Tolerance:
        return Tolerance()

    @abstractmethod
    def work(self, variant: str, point: Point) -> Work:
        """Bytes that must move and flops that must be done for one run."""
