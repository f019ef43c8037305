"""Check a kernel's outputs against the reference; find the worst element and say where.

One procedure, two places: `xp` is NumPy (outputs on the host) or CuPy (outputs and the
reference on the GPU, where a 2^28-element comparison takes milliseconds instead of
seconds). Every step is an elementwise operation of float64 IEEE arithmetic or an
exact reduction (counts, maxima, the first index of a maximum), so both give the same
verdict, the same worst index and the same counts; tests/test_verify_device.py holds them to
it on the GPU.

Outputs are compared in chunks, so checking a 2^31-element output needs a few hundred MiB of
temporaries, not several copies of the output in float64; on the host the chunks run on a
thread pool (NumPy releases the GIL), and are combined in order, so the first worst element
is the same whatever the number of threads.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpubench.benchmark import Tolerance
from gpubench.results import Verification

CHUNK = 1 << 22
# Chunks on the GPU: fewer launches; temporaries of 3 float64 arrays of this many elements.
DEVICE_CHUNK = 1 << 25


def _workers() -> int:
    return max(1, min(8, os.cpu_count() or 1))


def _index(flat_index: int, shape: tuple[int, ...]) -> list[int]:
    return [int(i) for i in np.unravel_index(flat_index, shape)] if shape else []


def _step(xp: Any) -> int:
    return CHUNK if xp is np else max(CHUNK, DEVICE_CHUNK)


def _chunks(xp: Any, size: int) -> range:
    return range(0, size, _step(xp))


def _map(xp: Any, function: Any, starts: range) -> list[Any]:
    """`function` over the chunk starts, in order: threads on the host, a loop on the GPU."""
    if xp is not np or len(starts) < 2:
        return [function(lo) for lo in starts]
    with ThreadPoolExecutor(max_workers=_workers()) as pool:
        return list(pool.map(function, starts))


def _bitwise_equal(xp: Any, got: Any, expected: Any) -> bool:
    """Same type and the same bits, compared as unsigned integers: a fraction of the cost of
    the full check, which a sweep pays twice per variant on arrays of gigabytes."""
    if got.dtype != expected.dtype or got.dtype.itemsize not in (1, 2, 4, 8):
        return False
    as_bits = np.dtype(f"u{got.dtype.itemsize}")
    step = _step(xp)

    def same(lo: int) -> bool:
        a = xp.ascontiguousarray(got[lo : lo + step]).view(as_bits)
        b = xp.ascontiguousarray(expected[lo : lo + step]).view(as_bits)
        return bool(xp.array_equal(a, b))

    return all(_map(xp, same, _chunks(xp, got.size)))


def _unwritten(xp: Any, got: Any, expected: Any) -> tuple[int, int]:
    """(count, first flat index) of NaN in `got` where the reference is not NaN: the poison
    the harness wrote before the run, never overwritten."""

    step = _step(xp)

    def scan(lo: int) -> tuple[int, int]:
        nan = xp.isnan(got[lo : lo + step])
        if not bool(nan.any()):
            return 0, -1
        nan &= ~xp.isnan(expected[lo : lo + step].astype(np.float64))
        count = int(xp.count_nonzero(nan))
        return count, (lo + int(xp.flatnonzero(nan)[0]) if count else -1)

    total, first = 0, -1
    for count, index in _map(xp, scan, _chunks(xp, got.size)):
        total += count
        if count and first < 0:
            first = index
    return total, first


@dataclass
class _ChunkErrors:
    worst: int  # flat index of the chunk's first largest excess over the allowed error
    excess: float
    diff: float
    allowed: float
    bad: int
    max_abs: float
    max_rel: float


def _errors(xp: Any, got: Any, expected: Any, tol: Tolerance, lo: int, size: int) -> _ChunkErrors:
    g = got[lo : lo + size].astype(np.float64)
    e = expected[lo : lo + size].astype(np.float64)
    both_nan = xp.isnan(g) & xp.isnan(e)
    diff = xp.where(both_nan, 0.0, xp.abs(g - e))
    diff = xp.where(xp.isnan(diff), np.inf, diff)  # NaN against a number, or inf - inf
    scale = xp.abs(e)
    scale = xp.where(xp.isnan(scale), 0.0, scale)
    allowed = tol.rtol * scale
    allowed += tol.atol
    excess = diff - allowed
    # inf within an infinite allowance: never the worst element (and NaN has no order).
    excess = xp.where(xp.isnan(excess), -np.inf, excess)
    largest = excess.max()
    i = int(xp.argmax(excess == largest))  # the first of the largest
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = xp.where(scale > 0, diff / scale, xp.where(diff > 0, np.inf, 0.0))
    rel = xp.where(xp.isnan(rel), np.inf, rel)
    return _ChunkErrors(
        worst=lo + i, excess=float(excess[i]), diff=float(diff[i]), allowed=float(allowed[i]),
        bad=int(xp.count_nonzero(excess > 0)), max_abs=float(diff.max()),
        max_rel=float(rel.max()),
    )  # fmt: skip


def check_output(name: str, got: Any, expected: Any, tol: Tolerance, xp: Any = np) -> Verification:
    """One output against its reference: NumPy arrays (xp=np) or CuPy arrays (xp=cupy)."""
    if tuple(got.shape) != tuple(expected.shape):
        return Verification(
            passed=False, worst_output=name,
            message=f"{name}: shape {tuple(got.shape)} != expected {tuple(expected.shape)}",
        )  # fmt: skip
    if got.size == 0:
        return Verification(passed=True, max_abs_error=0.0, max_rel_error=0.0)
    shape = tuple(got.shape)
    got_flat = got.reshape(-1)
    exp_flat = expected.reshape(-1)
    exact = tol.rtol == 0 and tol.atol == 0
    if exact and _bitwise_equal(xp, got_flat, exp_flat):
        # Exactly the reference's bits: right, and nothing is left unwritten (poison bits
        # would differ). Anything else (-0.0 against 0.0, a NaN payload, a real error) takes
        # the full path below, which decides and says where.
        return Verification(passed=True, max_abs_error=0.0, max_rel_error=0.0)
    floating = np.issubdtype(got.dtype, np.floating)
    if floating:
        unwritten, first = _unwritten(xp, got_flat, exp_flat)
        if unwritten:
            return Verification(
                passed=False, worst_output=name, worst_index=_index(first, shape),
                got=float("nan"), expected=float(exp_flat[first]), unwritten=unwritten,
                wrong=unwritten, max_abs_error=float("inf"), max_rel_error=float("inf"),
                message=f"{name}: {unwritten} of {got.size} elements not written (still NaN), "
                f"first at {_index(first, shape)}",
            )  # fmt: skip
    if exact and bool(xp.array_equal(got_flat, exp_flat, equal_nan=floating)):
        return Verification(passed=True, max_abs_error=0.0, max_rel_error=0.0)
    step = _step(xp)
    parts = _map(xp, lambda lo: _errors(xp, got_flat, exp_flat, tol, lo, step),
                 _chunks(xp, got_flat.size))  # fmt: skip
    worst = parts[0]
    for part in parts[1:]:
        if part.excess > worst.excess:
            worst = part
    bad = sum(part.bad for part in parts)
    verdict = Verification(
        passed=bad == 0,
        max_abs_error=max(part.max_abs for part in parts),
        max_rel_error=max(part.max_rel for part in parts),
        worst_output=name,
        worst_index=_index(worst.worst, shape),
        got=float(got_flat[worst.worst]),
        expected=float(exp_flat[worst.worst]),
        wrong=bad,
    )
    if bad:
        verdict.message = (
            f"{name}: {bad} of {got.size} elements wrong; worst at {verdict.worst_index}: "
            f"got {verdict.got!r}, expected {verdict.expected!r} "
            f"(|error| {worst.diff:.3g} > allowed {worst.allowed:.3g})"
        )
    return verdict


def check_outputs(
    got: dict[str, Any],
    expected: dict[str, Any],
    tolerance: Tolerance | dict[str, Tolerance],
    xp: Any = np,
) -> Verification:
    """All outputs must pass; report the first that fails, else the largest error seen.
    `tolerance` is one for all outputs, or one per output name."""
    worst: Verification | None = None
    for name, reference in expected.items():
        if name not in got:
            return Verification(passed=False, worst_output=name,
                                message=f"{name}: the variant produced no such output")  # fmt: skip
        tol = tolerance[name] if isinstance(tolerance, dict) else tolerance
        verdict = check_output(name, got[name], reference, tol, xp)
        if not verdict.passed:
            return verdict
        if worst is None or (verdict.max_abs_error or 0) > (worst.max_abs_error or 0):
            worst = verdict
    return worst or Verification(passed=True)
