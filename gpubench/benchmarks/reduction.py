"""Reduction suite: the seven classic steps of a parallel sum, then shuffles, 16-byte loads,
a single-pass kernel, CUB (through CuPy) and NumPy on the CPU."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gpubench.benchmarks._shared import FLOAT32_UNIT_ROUNDOFF, cupy_array, cupy_stream
from gpubench.model import hostmath
from gpubench.model.benchmark import (
    Benchmark,
    BufferRef,
    BufferSpec,
    Case,
    Launch,
    LibraryCall,
    Param,
    Point,
    Tolerance,
    Variant,
    Work,
    ceil_div,
)

if TYPE_CHECKING:
    from gpubench.model.device import DeviceInfo

UINT32_MAX = 2**32 - 1
DTYPES = {"int32": (np.int32, "int"), "float32": (np.float32, "float")}

# How each kernel walks the input: elements per thread per block in the first pass, and
# whether the grid is sized to the device (grid-stride loop) or to the input.
ONE_PER_THREAD = ("interleaved_divergent", "interleaved_strided", "sequential")
TWO_PER_THREAD = ("first_add_on_load", "unroll_last_warp", "complete_unroll")
GRID_STRIDE = ("grid_stride", "warp_shuffle", "vectorized")
DYNAMIC_SHARED = (*ONE_PER_THREAD, "first_add_on_load", "unroll_last_warp")


@dataclass
class _CupySum:
    """cupy.sum on the harness's buffers, on the harness's stream (CUB's device reduction)."""

    n: int
    dtype: np.dtype
    _arrays: dict[tuple[int, int], Any] = field(default_factory=dict)

    def __call__(self, pointers: dict[str, int], stream_handle: int) -> None:
        import cupy

        key = (pointers["in"], pointers["out"])
        if key not in self._arrays:
            self._arrays[key] = (
                cupy_array(pointers["in"], (self.n,), self.dtype),
                cupy_array(pointers["out"], (), self.dtype),
            )
        x, out = self._arrays[key]
        with cupy_stream(stream_handle):
            cupy.sum(x, dtype=self.dtype, out=out)


class Reduction(Benchmark):
    name = "reduction"
    reference_params = frozenset({"dtype"})
    input_params = frozenset({"n", "dtype"})
    description = (
        "sum of n elements: the classic seven steps, warp shuffles, 16-byte loads, one pass"
    )
    memory_bound = True
    baseline = "interleaved_divergent"
    vendor_reference = "cub"
    params = (
        Param(
            "n",
            int,
            2**26,
            "number of elements to sum",
            minimum=1,
            maximum=UINT32_MAX,
            maximum_reason="the kernels take an unsigned int n",
        ),
        Param(
            "block_size",
            int,
            256,
            "threads per block",
            choices=(64, 128, 256, 512, 1024),
            compile_time=True,
        ),
        Param(
            "dtype",
            str,
            "float32",
            "element type (int32 sums exactly, wrapping like C)",
            choices=tuple(DTYPES),
            compile_time=True,
        ),
    )
    variants = (
        Variant("interleaved_divergent", "1: interleaved addressing, divergent branch", "sum"),
        Variant(
            "interleaved_strided",
            "2: interleaved, strided index: no divergence, bank conflicts",
            "sum",
        ),
        Variant(
            "sequential", "3: sequential addressing: no conflicts, half the threads idle", "sum"
        ),
        Variant("first_add_on_load", "4: first add during the global load", "sum"),
        Variant("unroll_last_warp", "5: last warp unrolled (__syncwarp, Volta-safe)", "sum"),
        Variant(
            "complete_unroll", "6: complete unrolling, block size known at compile time", "sum"
        ),
        Variant("grid_stride", "7: many elements per thread, grid sized to the device", "sum"),
        Variant("warp_shuffle", "warp shuffles instead of the shared-memory tree", "sum"),
        Variant("vectorized", "warp shuffles + 16-byte loads, two accumulators", "sum"),
        Variant("single_pass", "one launch: vectorized + last-block-done completion", "sum"),
        Variant(
            "cub", "cupy.sum: CUB's device reduction (vendor reference)", "sum", kind="library"
        ),
        Variant("numpy", "numpy.sum on the CPU (CPU reference)", "sum", kind="host"),
    )

    def _dtype(self, point: Point) -> np.dtype:
        return np.dtype(DTYPES[point["dtype"]][0])

    def defines(self, point: Point) -> dict[str, str]:
        return {"DTYPE": DTYPES[point["dtype"]][1], "BLOCK_SIZE": str(point["block_size"])}

    def inputs(self, point: Point, rng: np.random.Generator) -> dict[str, np.ndarray]:
        n = point["n"]
        if point["dtype"] == "int32":
            # Signed values: sums of large n wrap around int32, as the kernels' sums do.
            return {"in": rng.integers(-(2**20), 2**20, size=n, dtype=np.int32)}
        # Positive values: the error bound (below) is relative to sum(|x|) = the sum itself.
        values = rng.random(n, dtype=np.float32)
        return {"in": hostmath.scale_shift(values, shift=np.float32(0.5))}

    def input_specs(self, point: Point) -> dict[str, BufferSpec]:
        return {"in": BufferSpec((point["n"],), self._dtype(point))}

    # -- the passes -------------------------------------------------------------------------
    def _grid_cap(self, point: Point, device: DeviceInfo) -> int:
        """Blocks that fill every SM once at full occupancy."""
        return device.sm_count * max(1, device.max_threads_per_sm // point["block_size"])

    def _passes(self, variant: str, point: Point, device: DeviceInfo) -> list[tuple[int, int]]:
        """(elements in, blocks) for each launch until one value is left."""
        bs, n = point["block_size"], point["n"]
        passes = []
        remaining = n
        while True:
            if variant in ONE_PER_THREAD:
                blocks = ceil_div(remaining, bs)
            elif variant in TWO_PER_THREAD:
                blocks = ceil_div(remaining, 2 * bs)
            else:  # grid-stride: fill the device once, then one block finishes the partials
                per_block = 2 * bs if variant != "vectorized" else 8 * bs
                blocks = (
                    1
                    if passes
                    else min(ceil_div(remaining, per_block), self._grid_cap(point, device))
                )
            passes.append((remaining, blocks))
            if blocks == 1:
                return passes
            remaining = blocks

    def _single_pass_blocks(self, point: Point, device: DeviceInfo) -> int:
        return min(ceil_div(point["n"], 8 * point["block_size"]), self._grid_cap(point, device))

    def case(
        self, variant: str, point: Point, device: DeviceInfo, inputs: dict[str, np.ndarray]
    ) -> Case:
        dtype = self._dtype(point)
        return Case(
            steps=self._steps(variant, point, device),
            outputs={"out": BufferSpec((1,), dtype)},
            scratch=self._scratch(variant, point, device),
            # The input must be read once; partial sums are negligible traffic.
            work=Work(bytes_moved=point["n"] * dtype.itemsize, elements=point["n"]),
            tolerance=self._tolerance(variant, point, device),
        )

    def _scratch(self, variant: str, point: Point, device: DeviceInfo) -> dict[str, BufferSpec]:
        dtype = self._dtype(point)
        if variant == "single_pass":
            blocks = self._single_pass_blocks(point, device)
            return {
                "partials": BufferSpec((blocks,), dtype),
                "counter": BufferSpec((1,), np.dtype(np.uint32), init="zero"),
            }
        if variant in ("cub", "numpy"):
            return {}
        first_blocks = self._passes(variant, point, device)[0][1]
        return {
            "part0": BufferSpec((first_blocks,), dtype),
            "part1": BufferSpec((first_blocks,), dtype),
        }

    def _steps(self, variant: str, point: Point, device: DeviceInfo) -> list[Launch | LibraryCall]:
        bs, n = point["block_size"], point["n"]
        if variant == "numpy":
            return []
        if variant == "cub":
            return [LibraryCall("cupy.sum", _CupySum(n, self._dtype(point)))]
        if variant == "single_pass":
            args = (
                BufferRef("in"),
                BufferRef("out"),
                BufferRef("partials"),
                BufferRef("counter"),
                np.uint32(n),
            )
            return [
                Launch(variant, (self._single_pass_blocks(point, device), 1, 1), (bs, 1, 1), args)
            ]
        shared = bs * self._dtype(point).itemsize if variant in DYNAMIC_SHARED else 0
        steps: list[Launch | LibraryCall] = []
        source = "in"
        for index, (count, blocks) in enumerate(self._passes(variant, point, device)):
            target = "out" if blocks == 1 else f"part{index % 2}"
            args = (BufferRef(source), BufferRef(target), np.uint32(count))
            steps.append(Launch(variant, (blocks, 1, 1), (bs, 1, 1), args, shared_bytes=shared))
            source = target
        return steps

    def unavailable(self, variant: str) -> str | None:
        if variant != "cub":
            return None
        os.environ.setdefault("CUPY_ACCELERATORS", "cub")  # CuPy's reductions through CUB
        try:
            import cupy  # noqa: F401
        except ImportError:
            return "CuPy is not importable: no CUB reference"
        return None

    def host_run(
        self, variant: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        x = inputs["in"]
        return {"out": np.array([np.sum(x, dtype=x.dtype)], dtype=x.dtype)}

    def reference(
        self, computes: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        x = inputs["in"]
        if point["dtype"] == "int32":
            exact = int(hostmath.total(x, np.int64))
            wrapped = (exact + 2**31) % 2**32 - 2**31  # two's complement, like the kernels
            return {"out": np.array([wrapped], dtype=np.int32)}
        return {"out": np.array([hostmath.total(x, np.float64)])}

    # -- correctness bound -----------------------------------------------------------------
    def chain_length(self, variant: str, point: Point, device: DeviceInfo) -> int:
        """The most float32 additions any input element goes through on its way to the result:
        serial adds per thread plus tree levels, summed over passes."""
        n = point["n"]
        levels = math.ceil(math.log2(max(n, 2)))
        if variant == "numpy":
            # NumPy's pairwise summation: 8 accumulators over blocks of 128 (at most 16
            # serial adds, 3 levels to combine them), then halving recursion.
            return levels + 24
        if variant == "cub":
            # CUB's order is internal: assume at least 256 parallel partial sums per SM
            # (CUB fills the device), each summed serially, then trees.
            return ceil_div(n, 256 * device.sm_count) + 2 * levels + 8
        bs = point["block_size"]
        if variant == "single_pass":
            blocks = self._single_pass_blocks(point, device)
            passes = [(n, blocks), (blocks, 1)]
        else:
            passes = self._passes(variant, point, device)
        length = 0
        for count, blocks in passes:
            # +6: the shuffle variants' two-level warp tree has up to 10 levels for 64 threads.
            length += ceil_div(count, blocks * bs) + int(math.log2(bs)) + 6
        return length

    def _tolerance(self, variant: str, point: Point, device: DeviceInfo) -> Tolerance:
        if point["dtype"] == "int32":
            return Tolerance()  # exact
        # Higham's bound for summation: |error| <= gamma_L * sum(|x|), gamma_L ~ L * u, with
        # L the longest chain of additions. The inputs are positive, so sum(|x|) is the sum
        # itself: a relative tolerance of L * u (doubled for the rounding of the float64
        # reference to float32 and of the final store).
        return Tolerance(rtol=2 * self.chain_length(variant, point, device) * FLOAT32_UNIT_ROUNDOFF)


BENCHMARK = Reduction()
