"""Check a kernel's outputs against the reference; find the worst element and say where.

One rule, two places. `decide` builds the verdict from a few steps (bitwise equal? poison
left? values equal? the errors: worst element, count, maxima); `HostOps` answers them with
NumPy, `gpubench.engine.verify_device.DeviceOps` with one CUDA pass beside the outputs (a 2^28-element
comparison in milliseconds instead of seconds). Both compute each element's error with the
same float64 IEEE operations and exact reductions (counts, maxima, the first index of a
maximum), so they give the same verdict, worst index and counts; tests/engine/test_verify_device.py
holds them to it on the GPU.

On the host, outputs are compared in chunks, so checking a 2^31-element output needs a few
hundred MiB of temporaries, not several copies of it in float64; the chunks run on a thread
pool (NumPy releases the GIL) and are combined in order, so the first worst element is the
same whatever the number of threads.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpubench.host import usable_cpus
from gpubench.model.benchmark import Tolerance
from gpubench.model.results import Verification

CHUNK = 1 << 22


def _workers() -> int:
    return max(1, min(8, usable_cpus()))


def _index(flat_index: int, shape: tuple[int, ...]) -> list[int]:
    return [int(i) for i in np.unravel_index(flat_index, shape)]  # () for a 0-d output: []


def _chunks(size: int) -> range:
    return range(0, size, CHUNK)


def _map(function: Any, starts: range) -> list[Any]:
    """`function` over the chunk starts, in order, on a thread pool."""
    if len(starts) < 2:
        return [function(lo) for lo in starts]
    with ThreadPoolExecutor(max_workers=_workers()) as pool:
        return list(pool.map(function, starts))


def _bitwise_equal(got: np.ndarray, expected: np.ndarray) -> bool:
    """Same type and the same bits, compared as unsigned integers: a fraction of the cost of
    the full check, which a sweep pays twice per variant on arrays of gigabytes."""
    if got.dtype != expected.dtype or got.dtype.itemsize not in (1, 2, 4, 8):
        return False
    as_bits = np.dtype(f"u{got.dtype.itemsize}")

    def same(lo: int) -> bool:
        a = np.ascontiguousarray(got[lo : lo + CHUNK]).view(as_bits)
        b = np.ascontiguousarray(expected[lo : lo + CHUNK]).view(as_bits)
        return bool(np.array_equal(a, b))

    return all(_map(same, _chunks(got.size)))


def _unwritten(got: np.ndarray, expected: np.ndarray) -> tuple[int, int]:
    """(count, first flat index) of NaN in `got` where the reference is not NaN: the poison
    the harness wrote before the run, never overwritten."""

    def scan(lo: int) -> tuple[int, int]:
        nan = np.isnan(got[lo : lo + CHUNK])
        if not nan.any():
            return 0, -1
        nan &= ~np.isnan(expected[lo : lo + CHUNK].astype(np.float64))
        count = int(np.count_nonzero(nan))
        return count, (lo + int(np.flatnonzero(nan)[0]) if count else -1)

    total, first = 0, -1
    for count, index in _map(scan, _chunks(got.size)):
        total += count
        if count and first < 0:
            first = index
    return total, first


def _integers(got: Any, expected: Any) -> bool:
    return all(np.issubdtype(a.dtype, np.integer) for a in (got, expected))


@dataclass
class _ChunkErrors:
    worst: int  # flat index of the chunk's first largest excess over the allowed error
    excess: float
    bad: int
    max_abs: float
    max_rel: float


def _errors(got: np.ndarray, expected: np.ndarray, tol: Tolerance, lo: int) -> _ChunkErrors:
    """The errors of one chunk by the rule of the check (verify_device.SOURCE's `element` is
    the same rule in CUDA)."""
    g = got[lo : lo + CHUNK].astype(np.float64)
    e = expected[lo : lo + CHUNK].astype(np.float64)
    same = (g == e) | (np.isnan(g) & np.isnan(e))  # equal infinities too: no error
    with np.errstate(invalid="ignore"):
        diff = np.where(same, 0.0, np.abs(g - e))
    diff = np.where(np.isnan(diff), np.inf, diff)  # NaN against a number
    if _integers(got, expected):
        # Two different integers differ by at least 1, even where float64 cannot tell them
        # apart (beyond 2^53).
        common = np.uint64 if np.uint64 in (got.dtype, expected.dtype) else np.int64
        differ = got[lo : lo + CHUNK].astype(common) != expected[lo : lo + CHUNK].astype(common)
        diff = np.where(differ, np.maximum(diff, 1.0), diff)
    # |reference| where it is a number; 0 where it is NaN or infinite (an infinite one allows no
    # error below, and 0 * inf would be NaN with a warning).
    scale = np.where(np.isfinite(e), np.abs(e), 0.0)
    # An infinite reference allows no error: a relative tolerance of it would be infinite and
    # accept any finite value, or the other infinity.
    # An allowance past float64's range is inf, and inf - inf is NaN: both quietly.
    with np.errstate(over="ignore", invalid="ignore"):
        allowed = np.where(np.isinf(e), 0.0, tol.rtol * scale + tol.atol)
        excess = diff - allowed
    # inf within an infinite allowance: never the worst element (and NaN has no order).
    excess = np.where(np.isnan(excess), -np.inf, excess)
    largest = excess.max()
    i = int(np.argmax(excess == largest))  # the first of the largest
    # scale is finite, so diff / scale is never NaN; where it is 0 the other branch decides.
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(scale > 0, diff / scale, np.where(diff > 0, np.inf, 0.0))
    return _ChunkErrors(
        worst=lo + i,
        excess=float(excess[i]),
        bad=int(np.count_nonzero(excess > 0)),
        max_abs=float(diff.max()),
        max_rel=float(rel.max()),
    )


class HostOps:
    """The steps of the check on NumPy arrays, in chunks on a thread pool."""

    def __init__(self, got: np.ndarray, expected: np.ndarray, tol: Tolerance) -> None:
        self.got, self.expected, self.tol = got, expected, tol

    def bitwise_equal(self) -> bool:
        return _bitwise_equal(self.got, self.expected)

    def unwritten(self) -> tuple[int, int]:
        return _unwritten(self.got, self.expected)

    def values_equal(self) -> bool:
        floating = np.issubdtype(self.got.dtype, np.floating)
        return bool(np.array_equal(self.got, self.expected, equal_nan=floating))

    def errors(self) -> tuple[int, int, float, float]:
        """(worst flat index, elements wrong, max |error|, max relative error)."""
        parts = _map(
            lambda lo: _errors(self.got, self.expected, self.tol, lo), _chunks(self.got.size)
        )
        worst = parts[0]
        for part in parts[1:]:
            if part.excess > worst.excess:
                worst = part
        return (
            worst.worst,
            sum(p.bad for p in parts),
            max(p.max_abs for p in parts),
            max(p.max_rel for p in parts),
        )

    def value(self, which: str, index: int) -> Any:
        return (self.got if which == "got" else self.expected)[index].item()


def element_error(got: Any, expected: Any, tol: Tolerance, integers: bool) -> tuple[float, float]:
    """(|error|, allowed) of one element, by the rule of the whole check."""
    g, e = np.float64(got), np.float64(expected)
    # Equal infinities are equal, so g - e is never inf - inf.
    diff = 0.0 if (g == e or (np.isnan(g) and np.isnan(e))) else float(abs(g - e))
    diff = np.inf if np.isnan(diff) else diff
    if integers and got != expected:
        diff = max(diff, 1.0)
    if np.isinf(e):
        return diff, 0.0
    scale = 0.0 if np.isnan(e) else float(abs(e))
    return diff, float(np.float64(tol.rtol) * np.float64(scale) + np.float64(tol.atol))


def check_output(name: str, got: Any, expected: Any, tol: Tolerance, xp: Any = np) -> Verification:
    """One output against its reference: NumPy arrays, or CuPy arrays with xp=cupy."""
    if tuple(got.shape) != tuple(expected.shape):
        return Verification(
            passed=False,
            worst_output=name,
            message=f"{name}: shape {tuple(got.shape)} != expected {tuple(expected.shape)}",
        )
    if got.size == 0:
        return Verification(passed=True, max_abs_error=0.0, max_rel_error=0.0)
    if xp is np:
        ops: Any = HostOps(got.reshape(-1), expected.reshape(-1), tol)
    else:
        from gpubench.engine.verify_device import DeviceOps

        ops = DeviceOps(got.reshape(-1), expected.reshape(-1), tol)
    return decide(name, tuple(got.shape), got.dtype, expected.dtype, tol, ops)


def decide(
    name: str, shape: tuple[int, ...], got_dtype: Any, expected_dtype: Any, tol: Tolerance, ops: Any
) -> Verification:
    """The verdict from the steps of `ops` (HostOps or verify_device.DeviceOps): the same
    order, the same messages, wherever the arrays are."""
    size = int(np.prod(shape))
    exact = tol.rtol == 0 and tol.atol == 0
    if exact and ops.bitwise_equal():
        # Exactly the reference's bits: right, and nothing is left unwritten (poison bits
        # would differ). Anything else (-0.0 against 0.0, a NaN payload, a real error) takes
        # the full path below, which decides and says where.
        return Verification(passed=True, max_abs_error=0.0, max_rel_error=0.0)
    if np.issubdtype(got_dtype, np.floating):
        # NaN is the poison the harness wrote before the run: NaN left over means "never
        # written" (unless the reference itself is NaN there).
        unwritten, first = ops.unwritten()
        if unwritten:
            return Verification(
                passed=False,
                worst_output=name,
                worst_index=_index(first, shape),
                got=float("nan"),
                expected=float(ops.value("expected", first)),
                unwritten=unwritten,
                wrong=unwritten,
                max_abs_error=float("inf"),
                max_rel_error=float("inf"),
                message=f"{name}: {unwritten} of {size} elements not written (still NaN), "
                f"first at {_index(first, shape)}",
            )
    if exact and ops.values_equal():
        return Verification(passed=True, max_abs_error=0.0, max_rel_error=0.0)
    worst, bad, max_abs, max_rel = ops.errors()
    got_value, expected_value = ops.value("got", worst), ops.value("expected", worst)
    verdict = Verification(
        passed=bad == 0,
        max_abs_error=max_abs,
        max_rel_error=max_rel,
        worst_output=name,
        worst_index=_index(worst, shape),
        got=float(got_value),
        expected=float(expected_value),
        wrong=bad,
    )
    if bad:
        integers = all(np.issubdtype(d, np.integer) for d in (got_dtype, expected_dtype))
        diff, allowed = element_error(got_value, expected_value, tol, integers)
        # Integers as integers (a float64 cannot show 2^62 + 1).
        shown = (got_value, expected_value) if integers else (verdict.got, verdict.expected)
        verdict.message = (
            f"{name}: {bad} of {size} elements wrong; worst at {verdict.worst_index}: "
            f"got {shown[0]!r}, expected {shown[1]!r} "
            f"(|error| {diff:.3g} > allowed {allowed:.3g})"
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
            return Verification(
                passed=False,
                worst_output=name,
                message=f"{name}: the variant produced no such output",
            )
        tol = tolerance[name] if isinstance(tolerance, dict) else tolerance
        verdict = check_output(name, got[name], reference, tol, xp)
        if not verdict.passed:
            return verdict
        if worst is None or (verdict.max_abs_error or 0) > (worst.max_abs_error or 0):
            worst = verdict
    return worst or Verification(passed=True)
