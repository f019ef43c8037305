"""Host references on every core: the NumPy operations a suite's reference is made of, cut
into blocks on a thread pool where one NumPy call would use one core for seconds (NumPy
releases the GIL while it copies and computes). Same values as the one-call form."""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from gpubench.host import usable_cpus

# Square blocks of the transpose: small enough to stay in cache on both sides.
TILE = 256
# Fewer elements than this: one call (the pool would cost more than it saves).
PARALLEL_FROM = 1 << 20


def workers() -> int:
    return max(1, min(16, usable_cpus()))


def _each(function: Callable[[int], None], starts: range) -> None:
    with ThreadPoolExecutor(max_workers=workers()) as pool:
        list(pool.map(function, starts))


def transpose(matrix: np.ndarray) -> np.ndarray:
    """np.ascontiguousarray(matrix.T), in tiles, a band of rows per task."""
    if matrix.ndim != 2 or matrix.size < PARALLEL_FROM or workers() == 1:
        return np.ascontiguousarray(matrix.T)
    rows, cols = matrix.shape
    out = np.empty((cols, rows), dtype=matrix.dtype)

    def band(r0: int) -> None:
        r1 = min(r0 + TILE, rows)
        for c0 in range(0, cols, TILE):
            c1 = min(c0 + TILE, cols)
            out[c0:c1, r0:r1] = matrix[r0:r1, c0:c1].T

    _each(band, range(0, rows, TILE))
    return out


def elementwise(
    function: Callable[..., np.ndarray], arrays: list[np.ndarray], out: np.ndarray
) -> np.ndarray:
    """out[...] = function(*arrays) for an elementwise `function` of same-shaped arrays,
    in slices of the flat arrays on the pool."""
    flat_out = out.reshape(-1)
    flats = [a.reshape(-1) for a in arrays]
    step = max(PARALLEL_FROM, -(-flat_out.size // (4 * workers())))

    def piece(lo: int) -> None:
        flat_out[lo : lo + step] = function(*(a[lo : lo + step] for a in flats))

    if flat_out.size < PARALLEL_FROM or workers() == 1:
        flat_out[...] = function(*flats)
    else:
        _each(piece, range(0, flat_out.size, step))
    return out


def total(values: np.ndarray, dtype: type) -> float | int:
    """np.sum(values, dtype=dtype) in slices on the pool: integer sums exactly as one call;
    float64 sums as exact sums (math.fsum) of float64 partial sums, each as accurate as
    NumPy's pairwise sum over its slice."""
    flat = values.reshape(-1)
    if flat.size < PARALLEL_FROM or workers() == 1:
        return np.sum(flat, dtype=dtype).item()
    step = -(-flat.size // (4 * workers()))
    partials: list[Any] = [None] * len(range(0, flat.size, step))

    def part(lo: int) -> None:
        partials[lo // step] = np.sum(flat[lo : lo + step], dtype=dtype).item()

    _each(part, range(0, flat.size, step))
    if np.issubdtype(dtype, np.integer):
        return sum(partials)
    return math.fsum(partials)


def scale_shift(values: np.ndarray, scale: Any = None, shift: Any = None) -> np.ndarray:
    """values *= scale; values += shift, in place, in slices on the pool (the same values
    as the two whole-array operations)."""

    def apply(piece: np.ndarray) -> np.ndarray:
        if scale is not None:
            piece = piece * scale
        if shift is not None:
            piece = piece + shift
        return piece

    return elementwise(apply, [values], values)
