"""gpubench as a library: each command's work as a function that returns data (or, for plot,
draws and returns what it drew).

The click layer (gpubench.cli) parses, calls one of these and hands the data to gpubench.report
to render. `run` and `sweep` return a session.SweepOutcome: the results, whether the run was
interrupted, where its log went; what they have to say goes to a `note` the caller gives, a
notice (gpubench.model.notices) at a time, worded by gpubench.report.notices.text (none: quiet).

    from gpubench import api
    outcome = api.run("transpose", {"size": 4096, "tile": 32})
    best = min(outcome.result_set.results, key=lambda r: r.median_ms or float("inf"))
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any

from gpubench.errors import ConfigError


# -- compare ------------------------------------------------------------------------------------
@dataclass
class Comparison:
    base: Any  # ResultSet
    new: Any
    metric: Any  # metrics.Metric
    rows: list[Any]  # compare.Row
    varying: list[str]  # the point parameters that differ between rows
    regressions: int
    compared: int = 0  # pairs with both sides
    unmatched: int = 0  # results of the base with no partner in the new file

    @property
    def failed(self) -> bool:
        """The gate fails: something got worse, or part of the base went uncompared."""
        return bool(self.regressions or self.unmatched)

    @property
    def not_comparable(self) -> int:
        """Pairs of an energy metric with no energy reading on a side: never a regression."""
        return sum(r.verdict.startswith("not comparable") for r in self.rows)

    @property
    def changes(self) -> list[float]:
        return [abs(r.change) for r in self.rows if r.change is not None]

    @property
    def other_gpu(self) -> tuple[str, str] | None:
        """(base, new) GPU UUIDs when they differ."""
        base, new = self.base.environment.get("gpu_uuid"), self.new.environment.get("gpu_uuid")
        return None if base == new else (str(base), str(new))


def parse_suite_thresholds(items: tuple[str, ...] | list[str]) -> dict[str, float]:
    """`SUITE=FRACTION` items (--suite-threshold) as a dict; ConfigError names a bad one."""
    per_suite: dict[str, float] = {}
    for item in items:
        name, _, value = item.partition("=")
        try:
            fraction = float(value)
        except ValueError:
            fraction = float("nan")
        if not name or not math.isfinite(fraction) or fraction < 0:
            raise ConfigError(
                f"expected SUITE=FRACTION such as transpose=0.10, got {item!r}",
                key="--suite-threshold",
            )
        per_suite[name] = fraction
    return per_suite


def compare(
    base_path: str,
    new_path: str,
    threshold: float = 0.05,
    metric: str = "time_ms",
    suite_thresholds: dict[str, float] | None = None,
) -> Comparison:
    """Two results files (JSON or JSON lines) point by point, judged against their noise."""
    from gpubench.model import metrics, results
    from gpubench.store.compare import compare as compare_sets
    from gpubench.store.compare import regressions

    if not math.isfinite(threshold) or threshold < 0:
        raise ConfigError(f"expected a finite number >= 0, got {threshold!r}", key="--threshold")
    base, new = results.load_any(base_path), results.load_any(new_path)
    present = {key for r in base.results + new.results for key in r.metrics}
    extra = tuple(metrics.Metric(key, key, "") for key in sorted(present))
    try:
        chosen = metrics.by_key(metric, extra)
    except KeyError:
        known = sorted({m.key for m in metrics.CATALOG} | present)
        from gpubench.errors import did_you_mean

        raise ConfigError(
            f"unknown metric {metric!r}{did_you_mean(metric, known)}; known: {', '.join(known)}",
            key="--metric",
        ) from None
    from gpubench.store.compare import ENERGY_KEYS, compared, suite_defaults, unmatched_base

    if chosen.key in ENERGY_KEYS:
        _check_energy_recorded(base, new, base_path, new_path, chosen.key)
    rows = compare_sets(
        base, new, threshold, chosen, suite_thresholds or {}, suite_defaults(base, new)
    )
    if rows and not compared(rows):
        suites = sorted({r.suite for r in base.results}), sorted({r.suite for r in new.results})
        raise ConfigError(
            f"nothing to compare: no result of {base_path} has a partner in "
            f"{new_path} (suites {', '.join(suites[0]) or 'none'} against "
            f"{', '.join(suites[1]) or 'none'})",
            key="compare",
        )
    names = list(dict.fromkeys(n for r in rows for n in r.point))
    varying = [n for n in names if len({str(r.point.get(n)) for r in rows}) > 1]
    return Comparison(
        base, new, chosen, rows, varying, regressions(rows), compared(rows), unmatched_base(rows)
    )


def _check_energy_recorded(base: Any, new: Any, base_path: str, new_path: str, key: str) -> None:
    """An energy metric of two files that hold no energy reading at all is a mistake of the
    command, not a pass: every pair would be `not comparable`, and the gate would say nothing."""
    if not any(r.joules_per_run is not None for r in base.results + new.results):
        raise ConfigError(
            f"neither {base_path} nor {new_path} holds an energy reading to compare {key} "
            "by: record them with --energy",
            key="--metric",
        )


# -- roofline -------------------------------------------------------------------------------------
@dataclass
class RooflineGroup:
    """The results of one GPU placed on its roofline."""

    environment: dict[str, Any]
    created: str  # when the first of its results files was made
    record: Any  # ceilings.CeilingsRecord
    placed: list[Any]  # report.roofline placements
    varying: list[str]
    theoretical_only: bool = False


def roofline(results_paths: list[str], ceilings_path: str | None = None) -> list[RooflineGroup]:
    """Every measured result of the files on its GPU's roofline, one group per GPU (a group
    with nothing placed: no result of that GPU was measured with its work)."""
    from gpubench.model import results
    from gpubench.report import roofline as rl
    from gpubench.report.results_table import varying_params
    from gpubench.store import ceilings as store

    for path in results_paths:
        if store.is_record_file(path):
            raise ConfigError(
                "is a ceilings record (gpubench ceilings --json): give it with --ceilings",
                source=path,
            )
    chosen = store.load_file(ceilings_path) if ceilings_path else None
    by_gpu: dict[str, tuple[dict[str, Any], list[Any], str]] = {}
    for path in results_paths:
        result_set = results.load_any(path)
        uuid = str(result_set.environment.get("gpu_uuid"))
        entry = by_gpu.setdefault(uuid, (result_set.environment, [], result_set.created))
        entry[1].extend(result_set.results)
    groups = []
    for environment, found, created in by_gpu.values():
        record = chosen or store.load_for(environment.get("gpu_uuid"))
        stand_in = record is None
        if record is None:
            record = store.theoretical_only(environment)
        groups.append(
            RooflineGroup(
                environment,
                created,
                record,
                rl.place(found, record),
                varying_params(found)[0],
                stand_in,
            )
        )
    return groups


# -- plot ---------------------------------------------------------------------------------------
def plot(
    results_path: str,
    target: str,
    x: str | None = None,
    y: str | None = None,
    by: str = "variant",
    facet: str | None = None,
) -> Any:
    """Draw a metric of a results file against a parameter at `target` (PNG, SVG or PDF, by
    its suffix; needs matplotlib); the chart drawn (report.plot.Chart)."""
    from gpubench.model import results
    from gpubench.report import plot as plotting

    result_set = results.load_any(results_path)
    chart = plotting.build(result_set.results, x, y, by, facet)
    device = (result_set.environment.get("device") or {}).get("name", "")
    suites = sorted({r.suite for r in result_set.results})
    title = f"{', '.join(suites)}: {chart.y.header} vs {chart.x}" + (
        f" · {device}" if device else ""
    )
    if chart.best_over:
        title += f"\n(each line: the best over {', '.join(chart.best_over)})"
    plotting.draw(chart, target, title)
    return chart


def quiet(notice: Any) -> None:
    """A note nobody reads: the library's default."""


# -- run and sweep ---------------------------------------------------------------------------------
def sweep(
    spec: Any,
    request: Any = None,
    spread: Any = None,
    note: Any = None,
    observers: Any = None,
) -> Any:
    """Measure a sweep (a config.SweepSpec) and return its session.SweepOutcome. Only its
    results log is written (`request.jsonl`, or none: outputs.results_log, the default of
    `observers`, factories of what follows the results as they come); the other files are
    the caller's."""
    from gpubench.engine import session, spawned
    from gpubench.store.outputs import OutputRequest, results_log

    try:
        return session.measure(
            spec,
            request or OutputRequest(),
            spread or session.Spread(),
            note or quiet,
            (results_log,) if observers is None else observers,
        )
    finally:
        spawned.wait_for_stopped()  # the workers' exits: nothing of theirs outlives the call


def run(
    suite: str,
    params: dict[str, Any] | None = None,
    variants: list[str] | None = None,
    timing: dict[str, Any] | None = None,
    **options: Any,
) -> Any:
    """One point of a suite (its parameters as `gpubench run` takes them), every variant or
    those named: `sweep` of that one point."""
    from gpubench.load import config

    mapping: dict[str, Any] = {"suite": suite, "params": dict(params or {}), "timing": timing or {}}
    if variants:
        mapping["variants"] = list(variants)
    spec = config.spec_from_mapping(mapping, source="api.run")
    return sweep(spec, **options)


# -- ceilings --------------------------------------------------------------------------------------
@dataclass
class CeilingsOutcome:
    record: Any  # ceilings.CeilingsRecord, None where an interrupted run left none
    measured_earlier: bool = False
    stored_in: str | None = None
    sweep: Any = None  # session.SweepOutcome: the run that measured them, where one ran


def ceilings(
    device: int, remeasure: bool, note: Any = None, backend: str | None = None
) -> CeilingsOutcome:
    """This GPU's ceilings: the stored record, or a run of the ceilings suite (its messages to
    `note`, its results in `sweep`). An interrupted run leaves no record."""
    from gpubench.engine import session, spawned
    from gpubench.load import config
    from gpubench.store import ceilings as store
    from gpubench.store.outputs import OutputRequest

    if not remeasure:
        environment = session.probe_environment("ceilings", device, backend)
        record = store.load_for(environment.get("gpu_uuid"))
        if record is not None:
            return CeilingsOutcome(record, measured_earlier=True)
    spec = config.spec_from_mapping({"suite": "ceilings"}, source="gpubench ceilings")
    # No results log or files: the record is kept in the ceilings store.
    try:
        sweep = session.measure(
            spec, OutputRequest(), session.Spread(device=device, backend=backend), note or quiet
        )
    finally:
        spawned.wait_for_stopped()
    if sweep.interrupted:
        return CeilingsOutcome(None, sweep=sweep)
    measured = sweep.result_set
    record = store.from_results(measured.results, measured.environment, measured.created)
    stored = str(store.save(record)) if record.gpu_uuid else None
    return CeilingsOutcome(record, stored_in=stored, sweep=sweep)


# -- inspect ---------------------------------------------------------------------------------------
@dataclass
class Inspection:
    point: dict[str, Any]
    source: Path
    report: Any  # inspection.Report
    shown: list[Any]  # the kernels asked for


def inspect(
    bench: Any,
    suite_ref: str,
    params: dict[str, Any],
    arch: str,
    kernels: tuple[str, ...],
    want_sass: bool,
) -> Inspection:
    """What the suite's kernels compile to at the point `params` give (no GPU needed)."""
    from gpubench.engine import inspection
    from gpubench.engine import kernels as kernel_sources
    from gpubench.load import config

    if not bench.has_kernels:
        raise ConfigError(f"{bench.name} has no kernels of its own to inspect")
    mapping = {"suite": suite_ref, "params": {k: v for k, v in params.items() if v is not None}}
    point = config.spec_from_mapping(mapping, source="command line").points(bench)[0]
    source = kernel_sources.source_path(bench)
    options = kernel_sources.define_options(bench.defines(point)) + list(
        bench.compiler_options(point)
    )
    report = inspection.inspect(source, options, [str(source.parent)], arch, want_sass=want_sass)
    names = [k.name for k in report.kernels]
    for name in kernels:
        if name not in names:
            from gpubench.errors import did_you_mean

            raise ConfigError(
                f"no kernel {name!r} in {source.name}{did_you_mean(name, names)};"
                f" kernels: {', '.join(names)}",
                key="--variant",
            )
    shown = [k for k in report.kernels if not kernels or k.name in kernels]
    return Inspection(point, source, report, shown)


# -- dry run ---------------------------------------------------------------------------------------
# Up to this many points a dry run lists them all; beyond it, a summary.
DRY_RUN_LISTED = 50


@dataclass
class DryRun:
    """What a sweep would run, found without touching a GPU."""

    bench: Any
    points: list[dict[str, Any]]
    shown: list[tuple[int, dict[str, Any]]]  # (number, point): all, or both ends
    varying: list[str]
    fixed: dict[str, Any]
    axes: list[tuple[str, int, Any, Any]] = field(default_factory=list)  # name, values, low, high
    builds: int = 0
    notes: list[str] = field(default_factory=list)


def dry_run(spec: Any, shard: tuple[int, int] | None = None) -> DryRun:
    from gpubench.engine.planning import shard_points
    from gpubench.report.results_table import split_params

    bench = spec.bench
    points = shard_points(spec.points(), shard, spec.source)
    problems = bench.dry_run_problems(points)
    if problems:
        raise ConfigError(problems[0], source=spec.source)
    few = len(points) <= DRY_RUN_LISTED
    ends = range(len(points)) if few else [*range(5), *range(len(points) - 5, len(points))]
    plan = DryRun(bench, points, [(i + 1, points[i]) for i in ends], [], {})
    if few:
        plan.varying, plan.fixed = split_params(points)
    else:
        for name in points[0]:  # every value of every axis: no second pass over 10^6 points
            values = set(map(itemgetter(name), points))
            try:
                low, high = min(values), max(values)
            except TypeError:  # None beside numbers: the first and last point's
                low, high = points[0][name], points[-1][name]
            plan.axes.append((name, len(values), low, high))
            if len(values) > 1:
                plan.varying.append(name)
    plan.varying = plan.varying or list(points[0])  # one point, or every point the same
    plan.builds = _distinct_builds(bench, points)
    plan.notes = list(bench.dry_run_notes(points))
    return plan


def _distinct_builds(bench: Any, points: list[dict[str, Any]]) -> int:
    if not bench.has_kernels:
        return 0
    # defines() depends on the compile-time params only: one call per distinct set.
    names = [p.name for p in bench.params if p.compile_time]
    keys = map(itemgetter(*names), points) if names else ((),) * len(points)
    representatives = dict(zip(keys, points, strict=True))
    return len(
        {
            (tuple(sorted(bench.defines(p).items())), tuple(bench.compiler_options(p)))
            for p in representatives.values()
        }
    )
