"""Check a kernel's outputs against the NumPy reference; find the worst element and say where."""

from __future__ import annotations

import numpy as np

from gpubench.benchmark import Tolerance
from gpubench.results import Verification


def _index(flat_index: int, shape: tuple[int, ...]) -> list[int]:
    return [int(i) for i in np.unravel_index(flat_index, shape)] if shape else []


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
    floating = np.issubdtype(got.dtype, np.floating)
    # NaN is the poison the harness wrote before the run: NaN left over means "never written".
    unwritten = int(np.count_nonzero(np.isnan(got_flat))) if floating else 0
    if unwritten:
        first = int(np.flatnonzero(np.isnan(got_flat))[0])
        return Verification(
            passed=False, worst_output=name, worst_index=_index(first, got.shape),
            got=float("nan"), expected=float(exp_flat[first]), unwritten=unwritten,
            max_abs_error=float("inf"), max_rel_error=float("inf"),
            message=f"{name}: {unwritten} of {got.size} elements not written (still NaN), "
            f"first at {_index(first, got.shape)}",
        )  # fmt: skip
    if tol.rtol == 0 and tol.atol == 0 and np.array_equal(got_flat, exp_flat):
        return Verification(passed=True, max_abs_error=0.0, max_rel_error=0.0)
    diff = np.abs(got_flat.astype(np.float64) - exp_flat.astype(np.float64))
    scale = np.abs(exp_flat.astype(np.float64))
    allowed = tol.atol + tol.rtol * scale
    excess = diff - allowed
    worst = int(np.argmax(excess))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(scale > 0, diff / scale, np.where(diff > 0, np.inf, 0.0))
    passed = bool(excess[worst] <= 0)
    verdict = Verification(
        passed=passed,
        max_abs_error=float(diff.max()),
        max_rel_error=float(rel.max()),
        worst_output=name,
        worst_index=_index(worst, got.shape),
        got=float(got_flat[worst]),
        expected=float(exp_flat[worst]),
    )
    if not passed:
        bad = int(np.count_nonzero(excess > 0))
        verdict.message = (
            f"{name}: {bad} of {got.size} elements wrong; worst at {verdict.worst_index}: "
            f"got {verdict.got!r}, expected {verdict.expected!r} "
            f"(|error| {diff[worst]:.3g} > allowed {allowed[worst]:.3g})"
        )
    return verdict


def check_outputs(
    got: dict[str, np.ndarray], expected: dict[str, np.ndarray], tol: Tolerance
) -> Verification:
    """All outputs must pass; report the first that fails, else the largest error seen."""
    worst: Verification | None = None
    for name, reference in expected.items():
        verdict = check_output(name, got[name], reference, tol)
        if not verdict.passed:
            return verdict
        if worst is None or (verdict.max_abs_error or 0) > (worst.max_abs_error or 0):
            worst = verdict
    return worst or Verification(passed=True)
