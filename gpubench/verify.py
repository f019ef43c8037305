"""Check a kernel's outputs against the NumPy reference; find the worst element and say where.

Large outputs are compared in chunks, so checking a 2^31-element output needs a few hundred
MiB of temporaries, not several copies of the output in float64.
"""

from __future__ import annotations

import numpy as np

from gpubench.benchmark import Tolerance
from gpubench.results import Verification

CHUNK = 1 << 24


def _index(flat_index: int, shape: tuple[int, ...]) -> list[int]:
    return [int(i) for i in np.unravel_index(flat_index, shape)] if shape else []


def _bitwise_equal(got: np.ndarray, expected: np.ndarray) -> bool:
    """Same type and the same bits, compared in chunks as unsigned integers: a fraction of the
    cost of the full check, which a sweep pays twice per variant on arrays of gigabytes."""
    if got.dtype != expected.dtype or got.dtype.itemsize not in (1, 2, 4, 8):
        return False
    as_bits = np.dtype(f"u{got.dtype.itemsize}")
    for lo in range(0, got.size, CHUNK):
        a = np.ascontiguousarray(got[lo : lo + CHUNK]).view(as_bits)
        b = np.ascontiguousarray(expected[lo : lo + CHUNK]).view(as_bits)
        if not np.array_equal(a, b):
            return False
    return True


def check_output(name: str, got: np.ndarray, expected: np.ndarray, tol: Tolerance) -> Verification:
    if got.shape != expected.shape:
        return Verification(
            passed=False, worst_output=name,
            message=f"{name}: shape {got.shape} != expected {expected.shape}",
        )  # fmt: skip
    if got.size == 0:
        return Verification(passed=True, max_abs_error=0.0, max_rel_error=0.0)
    got_flat = got.reshape(-1)
    exp_flat = expected.reshape(-1)
    if tol.rtol == 0 and tol.atol == 0 and _bitwise_equal(got_flat, exp_flat):
        # Exactly the reference's bits: right, and nothing is left unwritten (poison bits
        # would differ). Anything else (-0.0 against 0.0, a NaN payload, a real error) takes
        # the full path below, which decides and says where.
        return Verification(passed=True, max_abs_error=0.0, max_rel_error=0.0)
    floating = np.issubdtype(got.dtype, np.floating)
    # NaN is the poison the harness wrote before the run: NaN left over means "never written"
    # (unless the reference itself is NaN there).
    if floating:
        unwritten, first = 0, -1
        for lo in range(0, got_flat.size, CHUNK):
            nan = np.isnan(got_flat[lo : lo + CHUNK])
            if nan.any():
                nan &= ~np.isnan(exp_flat[lo : lo + CHUNK].astype(np.float64))
                count = int(np.count_nonzero(nan))
                if count and first < 0:
                    first = lo + int(np.flatnonzero(nan)[0])
                unwritten += count
        if unwritten:
            return Verification(
                passed=False, worst_output=name, worst_index=_index(first, got.shape),
                got=float("nan"), expected=float(exp_flat[first]), unwritten=unwritten,
                max_abs_error=float("inf"), max_rel_error=float("inf"),
                message=f"{name}: {unwritten} of {got.size} elements not written (still NaN), "
                f"first at {_index(first, got.shape)}",
            )  # fmt: skip
    if tol.rtol == 0 and tol.atol == 0 and np.array_equal(got_flat, exp_flat, equal_nan=floating):
        return Verification(passed=True, max_abs_error=0.0, max_rel_error=0.0)
    worst, worst_excess, bad = 0, -np.inf, 0
    max_abs, max_rel = 0.0, 0.0
    worst_diff = worst_allowed = 0.0
    for lo in range(0, got_flat.size, CHUNK):
        g = got_flat[lo : lo + CHUNK].astype(np.float64)
        e = exp_flat[lo : lo + CHUNK].astype(np.float64)
        both_nan = np.isnan(g) & np.isnan(e)
        diff = np.where(both_nan, 0.0, np.abs(g - e))
        diff[np.isnan(diff)] = np.inf  # NaN against a number, or inf - inf
        scale = np.abs(e)
        scale[np.isnan(scale)] = 0.0
        allowed = tol.atol + tol.rtol * scale
        excess = diff - allowed
        i = int(np.argmax(excess))
        if excess[i] > worst_excess:
            worst, worst_excess = lo + i, float(excess[i])
            worst_diff, worst_allowed = float(diff[i]), float(allowed[i])
        bad += int(np.count_nonzero(excess > 0))
        max_abs = max(max_abs, float(diff.max()))
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(scale > 0, diff / scale, np.where(diff > 0, np.inf, 0.0))
        max_rel = max(max_rel, float(rel.max()))
    passed = bad == 0
    verdict = Verification(
        passed=passed,
        max_abs_error=max_abs,
        max_rel_error=max_rel,
        worst_output=name,
        worst_index=_index(worst, got.shape),
        got=float(got_flat[worst]),
        expected=float(exp_flat[worst]),
    )
    if not passed:
        verdict.message = (
            f"{name}: {bad} of {got.size} elements wrong; worst at {verdict.worst_index}: "
            f"got {verdict.got!r}, expected {verdict.expected!r} "
            f"(|error| {worst_diff:.3g} > allowed {worst_allowed:.3g})"
        )
    return verdict


def check_outputs(
    got: dict[str, np.ndarray],
    expected: dict[str, np.ndarray],
    tolerance: Tolerance | dict[str, Tolerance],
) -> Verification:
    """All outputs must pass; report the first that fails, else the largest error seen.
    `tolerance` is one for all outputs, or one per output name."""
    worst: Verification | None = None
    for name, reference in expected.items():
        if name not in got:
            return Verification(passed=False, worst_output=name,
                                message=f"{name}: the variant produced no such output")  # fmt: skip
        tol = tolerance[name] if isinstance(tolerance, dict) else tolerance
        verdict = check_output(name, got[name], reference, tol)
        if not verdict.passed:
            return verdict
        if worst is None or (verdict.max_abs_error or 0) > (worst.max_abs_error or 0):
            worst = verdict
    return worst or Verification(passed=True)
