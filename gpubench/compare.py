"""Compare two results files point by point, judging each difference against measured noise."""

from __future__ import annotations

from dataclasses import dataclass

from gpubench.results import Result, ResultSet
from gpubench.runner import point_key


@dataclass(frozen=True)
class Comparison:
    point: dict
    variant: str
    base_ms: float | None
    new_ms: float | None
    change: float | None  # new / base - 1: positive is slower
    noise: float | None  # the larger robust noise of the two
    verdict: str  # same, faster, slower, only in one, not measured


def compare(base: ResultSet, new: ResultSet, threshold: float) -> list[Comparison]:
    """A difference counts only if it exceeds both `threshold` and twice the noise."""
    old = {(point_key(r.point), r.variant): r for r in base.results}
    out: list[Comparison] = []
    seen = set()
    for r in new.results:
        key = (point_key(r.point), r.variant)
        seen.add(key)
        out.append(_compare_one(old.get(key), r, threshold))
    for key, r in old.items():
        if key not in seen:
            out.append(
                Comparison(r.point, r.variant, r.median_ms, None, None, None, "only in base")
            )
    return out


def _compare_one(base: Result | None, new: Result, threshold: float) -> Comparison:
    if base is None:
        return Comparison(new.point, new.variant, None, new.median_ms, None, None, "only in new")
    if not (base.status.is_measured and new.status.is_measured):
        return Comparison(new.point, new.variant, base.median_ms, new.median_ms, None, None,
                          f"not measured ({base.status} → {new.status})")  # fmt: skip
    change = new.median_ms / base.median_ms - 1
    noise = max(base.summary.get("rel_noise", 0), new.summary.get("rel_noise", 0))
    if abs(change) <= max(threshold, 2 * noise):
        verdict = "same"
    else:
        verdict = "slower" if change > 0 else "faster"
    return Comparison(new.point, new.variant, base.median_ms, new.median_ms, change, noise, verdict)
