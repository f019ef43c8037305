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


def identity(result: Result, defaults: dict[str, dict[str, object]]) -> tuple[str, str, str]:
    """What identifies a result across gpubench versions: its suite, variant and the point
    without the parameters at their suite's default (a parameter a newer gpubench added, at
    its default, is the behaviour an older file measured). `defaults`: suite -> defaults."""
    known = defaults.get(result.suite, {})
    point = {k: v for k, v in result.point.items() if not (k in known and known[k] == v)}
    return result.suite, result.variant, point_key(point)


def suite_defaults(*sets: ResultSet) -> dict[str, dict[str, object]]:
    """The resolved defaults of every registered suite the sets hold results of (suites and
    kernel files gpubench cannot find match on their full points)."""
    from gpubench import registry

    suites = registry.all_suites()
    names = {r.suite for s in sets for r in s.results} & set(suites)
    return {name: suites[name].resolve(suites[name].defaults()) for name in names}


def compare(base: ResultSet, new: ResultSet, threshold: float, metric: Metric = TIME,
            per_suite: dict[str, float] | None = None,
            defaults: dict[str, dict[str, object]] | None = None) -> list[Comparison]:  # fmt: skip
    """A difference counts only if it exceeds both the threshold (`per_suite`'s for the
    result's suite, else `threshold`) and twice the noise. Results are matched by
    `identity` (`defaults`: the suites' defaults; None: every parameter counts)."""
    per_suite, defaults = per_suite or {}, defaults or {}
    old = {identity(r, defaults): r for r in base.results}
    out: list[Comparison] = []
    seen = set()
    for r in new.results:
        key = identity(r, defaults)
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
    # A one-sample run has no noise figure (null in its file): only the threshold judges it.
    noise = max((base.summary or {}).get("rel_noise") or 0.0,
                (new.summary or {}).get("rel_noise") or 0.0)  # fmt: skip
    verdict = judge(change, noise, threshold, metric)
    return Comparison(new.point, new.variant, before, after, change, noise, verdict)


def judge(change: float, noise: float, threshold: float, metric: Metric = TIME) -> str:
    """The verdict on a relative change of `metric` (new / base - 1): it counts only beyond
    both the threshold and twice the noise (the larger of the two results' robust noise)."""
    if abs(change) <= max(threshold, 2 * noise):
        return "same"
    worse = change > 0 if metric.higher_is_better is False else change < 0
    if metric.higher_is_better is None:
        return "changed"
    if metric.key == TIME.key:
        return "slower" if worse else "faster"
    return "worse" if worse else "better"


def compared(rows: list[Comparison]) -> int:
    """Pairs that were compared (both sides present)."""
    return sum(r.verdict not in ("only in base", "only in new") for r in rows)


def unmatched_base(rows: list[Comparison]) -> int:
    """Results of the base with no partner in the new file: a gate must not pass over them."""
    return sum(r.verdict == "only in base" for r in rows)


def regressions(rows: list[Comparison]) -> int:
    """Slower, worse, or broken (measured in the base, failing now)."""
    return sum(r.verdict in ("slower", "worse") or r.verdict.startswith("broken") for r in rows)
