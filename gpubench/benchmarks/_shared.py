"""Helpers several suites share: float32 error bounds and running CuPy on the harness's buffers
and stream. (A leading underscore: not a suite.)"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpubench.model.benchmark import (
    Benchmark,
    BufferRef,
    BufferSpec,
    Case,
    Launch,
    Param,
    Point,
    Work,
    ceil_div,
)

FLOAT32_UNIT_ROUNDOFF = 2.0**-24


def dot_product_rtol(k: int) -> float:
    """Relative tolerance for K-term float32 dot products of positive data: rounding errors
    grow like sqrt(K)·u (the rigorous worst case, K·u, would not notice a lost term); the
    factor 16 leaves room for the largest of millions of elements."""
    return 16 * math.sqrt(k) * FLOAT32_UNIT_ROUNDOFF


# Matrix inputs drawn from these (never zero) make every float32 product and partial sum an
# integer; all of them are exact while |partial sum| <= 4·K <= 2^24, so the check can be exact
# and a single lost or doubled term fails it at any K up to EXACT_MAX_K.
EXACT_VALUES = np.array([-2, -1, 1, 2], dtype=np.float32)
EXACT_MAX_K = 2**22
VALUE_KINDS = ("integers", "reals")


def matrix_values(kind: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Random matrix entries: small non-zero integers (exact check) or reals in [0.5, 1.5)
    (a relative-error check that catches wrong numerics, TF32 among them)."""
    if kind == "integers":
        return rng.choice(EXACT_VALUES, size=shape)
    values = rng.random(shape, dtype=np.float32)
    values += np.float32(0.5)
    return values


def exact_limit_problem(kind: str, k: int) -> str | None:
    if kind == "integers" and k > EXACT_MAX_K:
        return (
            f"k={k} is beyond {EXACT_MAX_K} (2^22), where sums of small integers stop being "
            "exact in float32: use values: reals"
        )
    return None


@dataclass(frozen=True)
class _StreamHandle:
    """A raw CUstream in the CUDA stream protocol, so CuPy can run on the harness's stream."""

    handle: int

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.handle)


def cupy_stream(handle: int) -> Any:
    """A CuPy stream context for a raw CUDA stream handle."""
    import cupy

    if hasattr(cupy.cuda.Stream, "from_external"):  # CuPy 14+
        return cupy.cuda.Stream.from_external(_StreamHandle(handle))
    return cupy.cuda.ExternalStream(handle)


def cupy_array(pointer: int, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """A CuPy array over device memory the harness owns (CuPy will not free it)."""
    import cupy

    nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    memory = cupy.cuda.UnownedMemory(pointer, nbytes, owner=None)
    return cupy.ndarray(shape, dtype, cupy.cuda.MemoryPointer(memory, 0))


class OneThreadPerWord(Benchmark):
    """Suites whose kernels compute out[i] = f(in[i], work) over n random uint32 words, one
    thread each, with the signature (out, in, n, work): divergence and unroll. They declare
    `params` as (WORDS, their own `work`, THREADS_PER_BLOCK)."""

    def input_specs(self, point: Point) -> dict[str, BufferSpec]:
        return {"in": BufferSpec((point["n"],), np.dtype(np.uint32))}

    def inputs(self, point: Point, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"in": rng.integers(0, 2**32, point["n"], dtype=np.uint32)}

    def word_case(self, variant: str, point: Point, ops_per_step: int, **case: Any) -> Case:
        """The one launch over every word; work = 8 bytes and ops_per_step * work integer
        operations per word (int32: the compiler may fold them)."""
        n, block = point["n"], point["block"]
        launch = Launch(
            variant,
            (ceil_div(n, block), 1, 1),
            (block, 1, 1),
            (BufferRef("out"), BufferRef("in"), np.uint32(n), np.uint32(point["work"])),
        )
        return Case(
            [launch],
            outputs={"out": BufferSpec((n,), np.dtype(np.uint32))},
            work=Work(8 * n, flops=ops_per_step * n * point["work"], elements=n, precision="int32"),
            **case,
        )


WORDS = Param(
    "n",
    int,
    1 << 22,
    "elements (one thread each)",
    minimum=1,
    maximum=2**32 - 1,
    maximum_reason="the kernels take an unsigned int n",
)
THREADS_PER_BLOCK = Param("block", int, 256, "threads per block", choices=(64, 128, 256, 512, 1024))
