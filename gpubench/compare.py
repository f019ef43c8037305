"""Compare two results files point by point, judging each difference against measured noise.

Any declared metric can be compared (`metrics.CATALOG`); its direction (higher or lower is
better) says which change is a regression. The default is the median time.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpubench.metrics import TIME, Metric
from gpubench.results import Result, ResultSet, point_key


@dataclass(frozen=True)
class Comparison:
    point: dict
    variant: str
    base: float | None
    new: float | None
    change: float | None  # new / base - 1
    noise: float | None  # the larger robust noise of the two
    verdict: str  # same, better, worse (shown as faster/slower for time), only in one, ...


def _value(result: Result | None, metric: Metric) -> float | None:
    if result is None:
        return None
    if metric is TIME or metric.key == TIME.key:
        return result.median_ms
    return result.metrics.get(metric.key)


def compare(base: ResultSet, new: ResultSet, threshold: float, metric: Metric = TIME,
            per_suite: dict[str, float] | None = None) -> list[Comparison]:  # fmt: skip
    """A difference counts only if it exceeds both the threshold (`per_suite`'s for the
    result's suite, else `threshold`) and twice the noise."""
    per_suite = per_suite or {}
    old = {(point_key(r.point), r.variant): r for r in base.results}
    out: list[Comparison] = []
    seen = set()
    for r in new.results:
        key = (point_key(r.point), r.variant)
        seen.add(key)
        out.append(_compare_one(old.get(key), r, per_suite.get(r.suite, threshold), metric))
    for key, r in old.items():
        if key not in seen:
            out.append(Comparison(r.point, r.variant, _value(r, metric), None, None, None,
                                  "only in base"))  # fmt: skip
    return out


def _compare_one(base: Result | None, new: Result, threshold: float, metric: Metric) -> Comparison:
    if base is None:
        return Comparison(new.point, new.variant, None, _value(new, metric), None, None,
                          "only in new")  # fmt: skip
    before, after = _value(base, metric), _value(new, metric)
    if base.status.is_measured and new.status.is_failure:
        # Worse than any slowdown: it was right and measured, now it fails.
        return Comparison(new.point, new.variant, before, after, None, None,
                          f"broken ({base.status} → {new.status})")  # fmt: skip
    if not (base.status.is_measured and new.status.is_measured) or not before or after is None:
        return Comparison(new.point, new.variant, before, after, None, None,
                          f"not measured ({base.status} → {new.status})")  # fmt: skip
    change = after / before - 1
    noise = max((base.summary or {}).get("rel_noise", 0), (new.summary or {}).get("rel_noise", 0))
    if abs(change) <= max(threshold, 2 * noise):
        verdict = "same"
    else:
        worse = change > 0 if metric.higher_is_better is False else change < 0
        if metric.higher_is_better is None:
            verdict = "changed"
        elif metric.key == TIME.key:
            verdict = "slower" if worse else "faster"
        else:
            verdict = "worse" if worse else "better"
    return Comparison(new.point, new.variant, before, after, change, noise, verdict)


def regressions(rows: list[Comparison]) -> int:
    """Slower, worse, or broken (measured in the base, failing now)."""
    return sum(r.verdict in ("slower", "worse") or r.verdict.startswith("broken") for r in rows)
