"""Compare two results files point by point, judging each difference against measured noise.

Any declared metric can be compared (`metrics.CATALOG`); its direction (higher or lower is
better) says which change is a regression. The default is the median time. A metric of the
energy counter (`--energy`: energy per run, power, work per joule) is judged against the energy
readings' own noise, not the time's: the counter's spread is not the timing's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from gpubench.model.metrics import ENERGY, ENERGY_METRICS, TIME, Metric
from gpubench.model.results import Result, ResultSet, point_key


@dataclass(frozen=True)
class Comparison:
    point: dict
    variant: str
    base: float | None
    new: float | None
    change: float | None  # new / base - 1
    # The larger robust noise of the two: their energy readings' for an energy metric.
    noise: float | None
    # same, better, worse (shown as faster/slower for time), only in one, not comparable, ...
    verdict: str
    # (base, new) GPU of this pair when they differ: each result's own card where the file
    # records it (a sweep over several GPUs), else its run's.
    gpus: tuple[str, str] | None = None


# The metrics read from the energy counter: their noise is the energy reading's.
ENERGY_KEYS = frozenset(m.key for m in ENERGY_METRICS)


def _value(result: Result | None, metric: Metric) -> float | None:
    if result is None:
        return None
    if metric is TIME or metric.key == TIME.key:
        return result.median_ms
    value = result.metrics.get(metric.key)
    if value is None and metric.key == ENERGY.key and result.joules_per_run is not None:
        # The reading is the record: a file whose metrics were left out still has it.
        return result.joules_per_run * 1000.0
    return value


@dataclass(frozen=True)
class SuiteDefaults:
    """A suite's defaults as identity needs them: the declared ones, and how the suite fills
    the parameters a point leaves out (at that point's own size: matmul's tuned warp tile
    depends on it)."""

    declared: dict[str, object]
    resolve: Callable[[dict[str, object]], dict[str, object]]

    def at(self, point: dict[str, object]) -> dict[str, object]:
        """Every parameter of this point, the missing ones at their defaults for it."""
        try:
            return self.resolve({**self.declared, **point})
        except Exception:  # a point the suite cannot resolve keeps the values it has
            return {**self.declared, **point}


def identity(
    result: Result,
    defaults: dict[str, SuiteDefaults | dict[str, object]],
) -> tuple[str, str, str]:
    """What identifies a result across gpubench versions: its suite, variant and the point
    with every parameter filled in by its suite at this point (a parameter a newer gpubench
    added, at its default, is the behaviour an older file measured), less the parameters at
    the suite's default (a parameter an older file had and a newer one dropped). `defaults`:
    suite -> SuiteDefaults (or a plain dict of defaults, compared as they are)."""
    known = defaults.get(result.suite)
    if isinstance(known, SuiteDefaults):
        point = known.at(result.point)
        at_default = known.at({})
    else:
        point, at_default = dict(result.point), known or {}
    kept = {k: v for k, v in point.items() if not (k in at_default and at_default[k] == v)}
    return result.suite, result.variant, point_key(kept)


def suite_defaults(*sets: ResultSet) -> dict[str, SuiteDefaults]:
    """The defaults of every registered suite the sets hold results of (suites and kernel
    files gpubench cannot find match on their full points)."""
    from gpubench.load import registry

    suites = registry.all_suites()
    names = {r.suite for s in sets for r in s.results} & set(suites)
    return {name: SuiteDefaults(suites[name].defaults(), suites[name].resolve) for name in names}


def compare(
    base: ResultSet,
    new: ResultSet,
    threshold: float,
    metric: Metric = TIME,
    per_suite: dict[str, float] | None = None,
    defaults: dict[str, SuiteDefaults | dict[str, object]] | None = None,
) -> list[Comparison]:
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
        row = _compare_one(old.get(key), r, per_suite.get(r.suite, threshold), metric)
        if key in old:
            before, after = gpu_of(old[key], base), gpu_of(r, new)
            if before != after:
                row = replace(row, gpus=(before, after))
        out.append(row)
    for key, r in old.items():
        if key not in seen:
            out.append(
                Comparison(r.point, r.variant, _value(r, metric), None, None, None, "only in base")
            )
    return out


def gpu_of(result: Result, result_set: ResultSet) -> str:
    """The card that measured a result: its own record's UUID (or name) where the file keeps
    one per result, else the run's GPU UUID, else its model."""
    own = result.device or {}
    env = result_set.environment or {}
    device = env.get("device") if isinstance(env.get("device"), dict) else {}
    return str(own.get("uuid") or own.get("name") or env.get("gpu_uuid") or device.get("name"))


# The order a gate report lists its rows in: what fails the gate first, then what moved.
_ORDER = {"broken": 0, "slower": 1, "worse": 1, "only in base": 2, "changed": 3, "faster": 4,
          "better": 4, "not measured": 5, "not comparable": 5, "only in new": 6,
          "same": 7}  # fmt: skip


def gate_order(rows: list[Comparison], changes_only: bool = False) -> list[Comparison]:
    """Regressions first (the largest first), then unmatched base results, then other changes;
    `changes_only`: without the pairs judged the same."""
    kept = [r for r in rows if not (changes_only and r.verdict == "same")]
    return sorted(kept, key=lambda r: (_rank(r.verdict), -abs(r.change or 0.0)))


def _rank(verdict: str) -> int:
    return next((rank for word, rank in _ORDER.items() if verdict.startswith(word)), 5)


def _unjudged(new: Result, before: float | None, after: float | None, verdict: str) -> Comparison:
    """A pair with no change to judge: no ratio, no noise, the verdict says why."""
    return Comparison(new.point, new.variant, before, after, None, None, verdict)


def _compare_one(base: Result | None, new: Result, threshold: float, metric: Metric) -> Comparison:
    if base is None:
        return Comparison(
            new.point, new.variant, None, _value(new, metric), None, None, "only in new"
        )
    before, after = _value(base, metric), _value(new, metric)
    if base.status.is_measured and new.status.is_failure:
        # Worse than any slowdown: it was right and measured, now it fails.
        return _unjudged(new, before, after, f"broken ({base.status} → {new.status})")
    if not (base.status.is_measured and new.status.is_measured):
        return _unjudged(new, before, after, f"not measured ({base.status} → {new.status})")
    if metric.key in ENERGY_KEYS and (why := _no_energy(base, new)):
        if base.joules_per_run is not None:
            # The gate was asked to watch this energy, and the new run no longer shows it.
            return _unjudged(new, before, after, f"broken (energy reading lost: {why})")
        return _unjudged(new, before, after, f"not comparable: no energy reading ({why})")
    if not before or after is None:
        return _unjudged(new, before, after, f"not measured ({base.status} → {new.status})")
    change = after / before - 1
    noise = max(_noise(base, metric), _noise(new, metric))
    verdict = judge(change, noise, threshold, metric)
    return Comparison(new.point, new.variant, before, after, change, noise, verdict)


def _noise(result: Result, metric: Metric) -> float:
    """A result's relative run-to-run noise for `metric`: for an energy metric its energy
    reading's (the robust spread of its counter intervals' powers), else its timing's. A
    one-sample run has no noise figure (null in its file): only the threshold judges it."""
    if metric.key in ENERGY_KEYS:
        return (result.energy or {}).get("noise") or 0.0
    return (result.summary or {}).get("rel_noise") or 0.0


def _no_energy(base: Result, new: Result) -> str:
    """Why a pair has no energy to compare (each side without a reading, and why it has
    none); "" where both sides have one."""
    missing = []
    for side, result in (("base", base), ("new", new)):
        reading = result.energy
        if reading is None:
            missing.append(f"{side}: measured without --energy")
        elif reading.get("joules_per_run") is None:
            missing.append(f"{side}: {reading.get('missing') or 'no figure'}")
    return "; ".join(missing)


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
