"""A history store as a static web report: a folder of HTML pages and the charting library
beside them (Plotly's own plotly.min.js, so the pages work from file:// and any static host).

index.html: every suite's runs and testbeds, and what got slower or faster in its latest run
against the one before on the same testbed (compare's rule). <suite>.html: for each point,
each variant's median over the runs, one line per testbed (GPU, card, backend) where there are
several (hover: value, noise, run, date, commit, label, testbed; regressions marked), where
runs carry energy its charts (gpubench.report.web_energy), the latest run as a table, its
roofline, and every run's environment. The data are embedded compactly (run numbers, not
dates, per point) and the traces built in the browser: a year of nightly runs stays a few MB
per page.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import shutil
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpubench import install_hint
from gpubench.errors import ConfigError, EnvironmentProblem
from gpubench.model.results import ResultSet
from gpubench.report.web_energy import (
    ENERGY_JS,
    ENERGY_SCRIPT,
    energy_cells,
    energy_data,
    energy_sections,
)
from gpubench.store.compare import judge
from gpubench.store.history import History, Run

PLOTLY_JS = "plotly.min.js"
# The pages' own script: it reads each page's data from its JSON block and draws the charts.
REPORT_JS = "report.js"
# Scripts only from files beside the page (no inline script, no handler attributes): data a
# results file carries cannot run as code even if it escaped its JSON. Plotly styles itself
# with <style> elements, hence the inline styles.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; base-uri 'none'; form-action 'none'"
)
# One colour per variant, the same in every chart of a suite (by sorted variant name): 20
# colours of Tableau's and Plotly's qualitative sets that stay apart from each other.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#ad494a", "#637939", "#8c6d31",
           "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363")  # fmt: skip

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1em;color:#222;max-width:1200px}
h1{font-size:1.5em;overflow-wrap:anywhere}h2{font-size:1.2em}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:2px 8px;
font-size:13px;text-align:left}th{background:#f2f2f2}.slower,.broken{color:#b00;font-weight:600}
.faster{color:#06c;font-weight:600}.chart{width:100%;max-width:1100px;height:360px}
.overview{height:520px}nav a{margin-right:1em}code{background:#f4f4f4;padding:0 3px}
fieldset{border:1px solid #ccc;margin:.5em 0;font-size:13px}label{margin-right:1em;
white-space:nowrap;display:inline-block}
"""

_CHARTS_JS = """"use strict";
const DATA = JSON.parse(document.getElementById("data").textContent);
const runs = DATA.runs, byId = Object.fromEntries(runs.map(r => [r.id, r]));
const DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"];
// Plotly reads a subset of HTML in names, titles and hover text: every string is escaped.
const esc = t => String(t).replace(/[&<>"']/g, c => `&#${c.charCodeAt(0)};`);
const colour = s => DATA.palette[s.colour % DATA.palette.length];
function hover(runId, noise) {
  const r = byId[runId];
  return `run ${r.id} · ${esc(r.date)}<br>commit ${esc(r.commit || "-")} · ` +
         `${esc(r.label || "")}<br>${esc(DATA.testbeds[r.bed])}` +
         `<br>noise ${noise === null ? "-" : (100 * noise).toFixed(2) + "%"}`;
}
// The unit that fits a chart's times: microsecond kernels in us, not 0.0085 ms.
function timeUnit(values) {
  const top = Math.max(0, ...values.filter(v => v !== null));
  if (top >= 1000) return ["s", 1e-3];
  if (top >= 1) return ["ms", 1];
  if (top >= 1e-3) return ["us", 1e3];
  return ["ns", 1e6];
}
let metric = "";  // "": the median time; else a metric's key
const hiddenBeds = new Set(), hiddenLabels = new Set();
const shownRuns = s => s.runs.map((r, k) => k).filter(k => !hiddenLabels.has(byId[s.runs[k]].label));
const pick = (values, ks) => ks.map(k => values[k]);
const legend = {orientation: "h", y: -0.2, font: {size: 11}};
function draw(i) {
  const point = DATA.points[i];
  const series = point.series.filter(s => !hiddenBeds.has(s.bed));
  const ys = s => metric ? (s.metrics[metric] || s.runs.map(() => null)) : s.median;
  const [unit, scale] = metric ? ["", 1] : timeUnit(series.flatMap(s => s.median));
  const title = metric ? DATA.metrics.find(m => m.key === metric).label : `median (${unit})`;
  const traces = series.map(s => {
    const ks = shownRuns(s);
    // Markers on every run only while they stay few: thousands of SVG markers per chart
    // are what makes a long history slow to open; the lines keep their hover.
    return {name: esc(s.name), x: pick(s.runs, ks).map(r => byId[r].date),
      y: pick(ys(s), ks).map(v => v === null ? null : v * scale), type: "scatter",
      mode: runs.length <= 60 ? "lines+markers" : "lines",
      line: {color: colour(s), dash: DASHES[s.bed % DASHES.length]}, marker: {color: colour(s)},
      text: ks.map(k => hover(s.runs[k], s.noise[k])),
      hovertemplate: "%{y:.4g} " + unit + "<br>%{text}"};
  });
  const marks = point.regressions;  // judged on the time, as compare does by default
  const ks = marks.runs.map((r, k) => k).filter(k =>
    !hiddenBeds.has(marks.bed[k]) && !hiddenLabels.has(byId[marks.runs[k]].label));
  if (ks.length && !metric) traces.push({name: "regression", x: pick(marks.runs, ks).map(r => byId[r].date),
    y: pick(marks.median, ks).map(v => v * scale), mode: "markers", type: "scatter",
    marker: {symbol: "x", size: 12, color: "#c00"}, text: pick(marks.variant, ks).map(esc),
    hovertemplate: "slower: %{text}<extra></extra>"});
  Plotly.react("chart-" + i, traces, {title: {text: esc(point.label), font: {size: 13}},
    margin: {t: 40, b: 40, l: 60, r: 10}, legend, xaxis: {type: "date"},
    yaxis: {title: {text: esc(title)}, type: metric ? "linear" : "log"}},
    {displaylogo: false, responsive: true});
}
function drawOverview() {
  const O = DATA.overview, el = document.getElementById("overview");
  if (!O || !el) return;
  const series = O.series.filter(s => !hiddenBeds.has(s.bed));
  const [unit, scale] = timeUnit(series.flatMap(s => s.median));
  Plotly.react(el, series.map(s => ({name: esc(s.name), x: O.labels.map(esc),
    y: s.median.map(v => v === null ? null : v * scale), type: "scatter", mode: "lines+markers",
    line: {color: colour(s), dash: DASHES[s.bed % DASHES.length]}, marker: {color: colour(s)},
    hovertemplate: "%{x}<br>%{y:.4g} " + unit})),
    // The legend above: the points' long names take the space below.
    {margin: {t: 20, b: 40, l: 60, r: 10}, legend: {...legend, y: 1.02, yanchor: "bottom"},
     xaxis: {type: "category", automargin: true, tickangle: -35, tickfont: {size: 10}},
     yaxis: {title: {text: `latest median (${unit})`}, type: "log"}},
    {displaylogo: false, responsive: true});
}
// Each chart is drawn when it scrolls into view: a long history opens at once, however many
// points the suite has. drawAll() draws the rest (tests, printing).
const drawn = new Set();
function drawOnce(i) { if (!drawn.has(i)) { drawn.add(i); draw(i); } }
window.drawAll = () => DATA.points.forEach((_, i) => drawOnce(i));
function redraw() { drawOverview(); drawn.forEach(i => draw(i)); }
const chooser = document.getElementById("metric");
if (chooser) chooser.addEventListener("change", () => { metric = chooser.value; redraw(); });
document.querySelectorAll("input[data-bed], input[data-label]").forEach(box =>
  box.addEventListener("change", () => {
    const hidden = box.dataset.bed !== undefined ? hiddenBeds : hiddenLabels;
    const key = box.dataset.bed !== undefined ? Number(box.dataset.bed) : box.dataset.label;
    if (box.checked) hidden.delete(key); else hidden.add(key);
    redraw();
  }));
const watcher = new IntersectionObserver(entries => entries.forEach(e => {
  if (e.isIntersecting) { drawOnce(Number(e.target.id.slice(6))); watcher.unobserve(e.target); }
}), {rootMargin: "400px"});
DATA.points.forEach((_, i) => watcher.observe(document.getElementById("chart-" + i)));
drawOverview();
if (DATA.roofline) {
  const R = DATA.roofline, xs = [R.xmin, R.ridge, R.xmax];
  const roof = {name: "roof", x: xs, y: xs.map(x => Math.min(R.peak_gflops, R.bandwidth * x)),
                mode: "lines", line: {color: "#888"}};
  const dots = {name: "latest run", x: R.x, y: R.y, text: R.text.map(esc), mode: "markers",
                hovertemplate: "%{text}<br>%{x:.3g} flop/byte, %{y:.4g} GFLOP/s<extra></extra>"};
  // Axis titles as {text: ...}: Plotly 3 no longer reads a bare string there.
  Plotly.newPlot("roofline", [roof, dots], {margin: {t: 20}, legend, xaxis: {type: "log",
    title: {text: "arithmetic intensity (flop/byte)"}}, yaxis: {type: "log",
    title: {text: "GFLOP/s"}}}, {displaylogo: false, responsive: true});
}
"""


def write_report(store: History, out_dir: str, threshold: float) -> list[Path]:
    """Write the report; the pages written."""
    if not out_dir.strip():  # Path("") is the working directory: never what was meant
        raise ConfigError(
            "an empty path (''): give the report's folder", source="command line", key="--out"
        )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _copy_plotly(out)
    (out / REPORT_JS).write_text(_CHARTS_JS)
    summaries, pages = [], []
    suites = store.suites()
    page_names = _page_names(suites)
    for suite in suites:
        runs = in_date_order(store.runs(suite=suite))  # a suite is listed for its runs
        latest = store.result_set(runs[-1].id)  # read once, shown twice
        data, latest_changes = suite_data(store, suite, runs, threshold, latest)
        page = out / page_names[suite]
        page.write_text(_suite_page(store, suite, runs, data, latest_changes, latest))
        pages.append(page)
        summaries.append((suite, runs, latest_changes, data))
    if any("energy" in data for *_, data in summaries):
        (out / ENERGY_JS).write_text(ENERGY_SCRIPT)
    index = out / "index.html"
    index.write_text(_index_page(summaries, page_names))
    return [index, *pages]


def measured_at(created: str) -> str:
    """A run's date as the charts' time axis takes it: UTC, `YYYY-MM-DD HH:MM:SS` (Plotly
    reads no time zones); a date it cannot read stays as it is."""
    try:
        when = datetime.fromisoformat(created)
    except (TypeError, ValueError):
        return str(created)
    if when.tzinfo is not None:
        when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%d %H:%M:%S")


def in_date_order(runs: list[Run]) -> list[Run]:
    """Runs by when they were measured (not when they were stored), then by id."""
    return sorted(runs, key=lambda r: (measured_at(r.created), r.id))


Series = dict[str, dict[tuple[str, int], list[tuple[int, float, float | None, dict]]]]


def _collect_series(
    rows: list[tuple],
    bed_of: dict[int, int],
    beds: list[str],
    named: bool,
    latest_id: int,
    threshold: float,
) -> tuple[Series, list[tuple[str, str, str, float]], dict[str, list], dict[str, None]]:
    """The store's rows of a suite, in date order, as series per point and (variant,
    testbed); the latest run's changes against the run before on the same testbed, the
    points where it is slower, and every metric name met."""
    # A line never crosses testbeds: each (point, variant, testbed) is a series of its own,
    # and a change is judged against the run before on the same testbed.
    series: dict[str, dict[tuple[str, int], list[tuple[int, float, float | None, dict]]]] = (
        defaultdict(dict)
    )
    last: dict[tuple[str, str, int], tuple[str, float | None, float | None]] = {}
    changes: list[tuple[str, str, str, float]] = []
    latest_marks: dict[str, list[tuple[int, float, str, int]]] = defaultdict(list)
    metric_names: dict[str, None] = {}
    for run_id, variant, point, status, median, noise, metrics_json in rows:
        bed = bed_of[run_id]
        shown = f"{variant} · {beds[bed]}" if named else variant
        before = last.get((point, variant, bed))
        # A median no ratio can take (0, negative, infinite) is no base to judge against.
        last[(point, variant, bed)] = (status, median if _drawable(median) else None, noise)
        if not _drawable(median) or status not in ("ok", "unstable"):
            continue
        noise = noise if _drawable(noise) or noise == 0 else None
        metrics = _numbers(metrics_json)
        metric_names.update(dict.fromkeys(metrics))
        series[point].setdefault((variant, bed), []).append((run_id, median, noise, metrics))
        if run_id != latest_id or before is None or before[1] is None:
            continue
        if before[0] not in ("ok", "unstable"):
            continue
        change = median / before[1] - 1
        verdict = judge(change, max(noise or 0.0, before[2] or 0.0), threshold)
        if verdict in ("slower", "faster"):
            changes.append((point, shown, verdict, change))
        if verdict == "slower":
            latest_marks[point].append((run_id, median, shown, bed))
    return series, changes, latest_marks, metric_names


def suite_data(
    store: History,
    suite: str,
    runs: list[Run],
    threshold: float,
    latest: ResultSet | None = None,
) -> tuple[dict[str, Any], list[tuple[str, str, str, float]]]:
    """What the suite page draws (runs, per point the variants' series, steps and
    regressions), and the latest run's slower/faster pairs against the run before it.
    `runs`: the suite's runs, at least one; `latest`: the last one's results where the caller
    has read them already."""
    runs = in_date_order(runs)
    order = {r.id: k for k, r in enumerate(runs)}
    environments = {r.id: _json_object(store.environment(r.id)) for r in runs}
    names = [testbed(r, environments[r.id]) for r in runs]
    beds = list(dict.fromkeys(names))
    bed_of = {r.id: beds.index(name) for r, name in zip(runs, names, strict=True)}
    named = len(beds) > 1
    latest_id = runs[-1].id
    rows = sorted(
        (row for row in store.series(suite) if row[0] in order), key=lambda row: order[row[0]]
    )
    series, changes, latest_marks, metric_names = _collect_series(
        rows, bed_of, beds, named, latest_id, threshold
    )
    colours = {v: k for k, v in enumerate(sorted({v for s in series.values() for v, _ in s}))}
    varying = _varying(list(series))
    steps = [
        step
        for point, variants in series.items()
        for step in _steps_of(point, variants, threshold, runs, beds, named)
    ]
    points = [
        _point_entry(point, variants, steps, latest_marks[point], varying, colours, beds, named)
        for point, variants in series.items()
    ]
    data = {
        "runs": [_run_entry(r, bed_of[r.id]) for r in runs],
        "testbeds": beds,
        "labels": sorted({r.label for r in runs}),
        "palette": list(PALETTE),
        "points": points,
        "overview": _overview(series, varying, colours, beds, named),
        # The parameters that differ between points (the tables name only these), and the
        # ones every point shares, said once.
        "varying": None if varying is None else sorted(varying),
        "constant": _point_label(next(iter(series), ""), _constant(list(series), varying)),
        "steps": steps,
        "metrics": [_metric_entry(name) for name in metric_names],
        "roofline": _roofline(latest or store.result_set(latest_id)),
    }
    energy = _energy(store, suite, order, bed_of, series, varying, colours, beds, named)
    if energy is not None:  # only where runs carry it: other pages stay as they were
        data["energy"] = energy
    return data, changes


def _energy(
    store: History,
    suite: str,
    order: dict[int, int],
    bed_of: dict[int, int],
    series: Series,
    varying: set[str] | None,
    colours: dict[str, int],
    beds: list[str],
    named: bool,
) -> dict[str, Any] | None:
    """What the energy charts draw (web_energy.energy_data): the results the time charts
    draw that carry an energy per run, named, labelled and coloured as there."""
    rows = sorted(
        (
            (run_id, variant, point, median, energy)
            for run_id, variant, point, status, median, energy in store.energy_series(suite)
            if run_id in order
            and status in ("ok", "unstable")
            and _drawable(median)
            and _drawable(energy.joules_per_run)
        ),
        key=lambda row: order[row[0]],
    )
    names = {
        (v, b): f"{v} · {beds[b]}" if named else v
        for variants in series.values()
        for v, b in variants
    }
    labels = {point: _point_label(point, varying) or "every run at one point" for point in series}
    return energy_data(rows, order, bed_of, names, colours, labels)


def testbed(run: Run, environment: dict[str, Any] | None = None) -> str:
    """The testbed a run was measured on, in words: the GPU model, the card (the start of its
    UUID) and the backend, then the driver, the CUDA version and the host where the run's
    environment records them."""
    card = f" {run.gpu_uuid.removeprefix('GPU-')[:8]}" if run.gpu_uuid else ""
    parts = [f"{run.gpu_name or 'unknown GPU'}{card}", run.backend or "unknown backend"]
    env = environment or {}
    device = env.get("device") if isinstance(env.get("device"), dict) else {}
    for word, value in (
        ("driver", env.get("driver_version")),
        ("CUDA", _cuda_version(env.get("cuda_driver_api_version"))),
        ("host", env.get("host") or device.get("host")),
    ):
        if isinstance(value, str | int | float) and not isinstance(value, bool) and value != "":
            parts.append(f"{word} {value}")
    return ", ".join(parts)


def _cuda_version(value: object) -> object:
    """The driver's CUDA version as people write it: 13000 (what the driver API says) -> 13.0."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1000:
        return f"{value // 1000}.{value % 1000 // 10}"
    return value


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _steps_of(
    point: str,
    variants: dict[tuple[str, int], list],
    threshold: float,
    runs: list[Run],
    beds: list[str],
    named: bool,
) -> list[dict[str, Any]]:
    """The persistent steps of each series at one point (steps.detect_steps), as the page
    lists them: variant, testbed, base -> new, and the first run of the new level."""
    from gpubench.report.steps import detect_steps

    by_id = {r.id: r for r in runs}
    found = []
    for (variant, bed), rows in variants.items():
        for step in detect_steps([m for _, m, _, _ in rows], [n for _, _, n, _ in rows], threshold):
            run = by_id[rows[step.index][0]]
            found.append(
                {
                    "point": point,
                    "variant": variant,
                    "bed": bed,
                    "testbed": beds[bed],
                    "name": f"{variant} · {beds[bed]}" if named else variant,
                    "verdict": step.verdict,
                    "base": step.base,
                    "new": step.new,
                    "change": step.change,
                    "run": run.id,
                    "date": measured_at(run.created),
                    "label": run.label,
                    "runs_before": step.runs_before,
                    "runs_after": step.runs_after,
                }
            )
    return found


def _varying(points: list[str]) -> set[str] | None:
    """The parameters whose value differs between these points (None: not all are JSON)."""
    try:
        values = [json.loads(p) for p in points]
    except ValueError:
        return None
    if not all(isinstance(v, dict) for v in values):
        return None
    keys = {k for v in values for k in v}
    return {k for k in keys if len({json.dumps(v.get(k)) for v in values}) > 1}


def _constant(points: list[str], varying: set[str] | None) -> set[str]:
    """The parameters every point shares (none when the points are not JSON objects)."""
    if varying is None or not points:
        return set()
    first = json.loads(points[0])
    return {k for k in first if k not in varying}


def _numbers(metrics_json: str | None) -> dict[str, float]:
    """A result's finite numeric metrics."""
    try:
        metrics = json.loads(metrics_json) if metrics_json else {}
    except ValueError:
        return {}
    if not isinstance(metrics, dict):
        return {}
    return {
        k: v
        for k, v in metrics.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    }


def _metric_entry(key: str) -> dict[str, str]:
    from gpubench.model.metrics import CATALOG

    metric = next((m for m in CATALOG if m.key == key), None)
    if metric is None:
        return {"key": key, "label": key}
    shown = metric.unit and metric.unit != metric.header  # "GB/s", not "GB/s (GB/s)"
    return {"key": key, "label": f"{metric.header} ({metric.unit})" if shown else metric.header}


def _point_entry(
    point: str,
    variants: dict[tuple[str, int], list],
    steps: list[dict[str, Any]],
    latest_marks: list[tuple[int, float, str, int]],
    varying: set[str] | None,
    colours: dict[str, int],
    beds: list[str],
    named: bool,
) -> dict[str, Any]:
    # Marked on the chart: where a slower step begins, and the latest run where it is slower
    # than the run before (too new to be a step yet).
    marks = [
        (s["run"], s["new"], s["name"], s["bed"])
        for s in steps
        if s["point"] == point and s["verdict"] == "slower"
    ]
    marks += [m for m in latest_marks if (m[0], m[2]) not in {(k[0], k[2]) for k in marks}]
    return {
        "label": _point_label(point, varying) or "every run at one point",
        "series": [
            {
                "name": f"{variant} · {beds[bed]}" if named else variant,
                "variant": variant,
                "bed": bed,
                "colour": colours[variant],
                "runs": [r for r, _, _, _ in rows],
                "median": [float(f"{m:.5g}") for _, m, _, _ in rows],
                "noise": [None if n is None else float(f"{n:.3g}") for _, _, n, _ in rows],
                "metrics": _metric_columns(rows),
            }
            for (variant, bed), rows in variants.items()
        ],
        "regressions": {
            "runs": [m[0] for m in marks],
            "median": [float(f"{m[1]:.5g}") for m in marks],
            "variant": [m[2] for m in marks],
            "bed": [m[3] for m in marks],
        },
    }


def _overview(
    series: dict[str, dict[tuple[str, int], list]],
    varying: set[str] | None,
    colours: dict[str, int],
    beds: list[str],
    named: bool,
) -> dict[str, Any]:
    """One chart before the per-point ones: each variant's latest median at every point."""
    points = list(series)
    keys = sorted(
        {key for variants in series.values() for key in variants},
        key=lambda k: (colours[k[0]], k[1]),
    )
    return {
        "labels": [_point_label(p, varying) or "every run" for p in points],
        "series": [
            {
                "name": f"{variant} · {beds[bed]}" if named else variant,
                "bed": bed,
                "colour": colours[variant],
                "median": [
                    float(f"{series[p][(variant, bed)][-1][1]:.5g}")
                    if (variant, bed) in series[p]
                    else None
                    for p in points
                ],
            }
            for variant, bed in keys
        ],
    }


def _metric_columns(rows: list[tuple[int, float, float | None, dict]]) -> dict[str, list]:
    """Each metric of a series, one value (or null) per run."""
    keys = dict.fromkeys(k for *_, metrics in rows for k in metrics)
    return {k: [None if k not in m else float(f"{m[k]:.5g}") for *_, m in rows] for k in keys}


def _run_entry(run: Run, bed: int) -> dict[str, Any]:
    commit = (run.commit or "")[:10] + ("+" if run.dirty else "")
    return {
        "id": run.id,
        "date": measured_at(run.created),
        "commit": commit,
        "label": run.label,
        "bed": bed,
    }


def format_time(ms: float | None) -> str:
    """A time in the unit that fits it: 8.5 us, not 0.0085 ms."""
    if ms is None:
        return ""
    for unit, scale, floor in (("s", 1e-3, 1000.0), ("ms", 1.0, 1.0), ("us", 1e3, 1e-3)):
        if abs(ms) >= floor:
            return f"{ms * scale:.4g} {unit}"
    return f"{ms * 1e6:.4g} ns"


def _point_label(point: str, only: set[str] | None = None) -> str:
    """`k=v, ...` of a point (its JSON key), `only` the parameters named there if given."""
    try:
        values = json.loads(point)
    except ValueError:
        return point
    if not isinstance(values, dict):
        return point
    return ", ".join(
        f"{k}={v}" for k, v in values.items() if v is not None and (only is None or k in only)
    )


def _roofline(result_set: ResultSet) -> dict[str, Any] | None:
    """The latest run's kernels against the device's theoretical roofs."""
    device = (result_set.environment or {}).get("device") or {}
    bandwidth, peak = device.get("peak_bandwidth_gbps"), device.get("peak_fp32_gflops")
    dots = []
    for r in result_set.results:
        work, median = r.work or {}, r.median_ms
        flops, moved = work.get("flops") or 0, work.get("bytes_moved") or 0
        if flops and moved and median and r.status.is_measured:
            dots.append(
                (
                    flops / moved,
                    flops / (median * 1e-3) / 1e9,
                    f"{r.variant} · {_point_label(json.dumps(r.point))}",
                )
            )
    if not (dots and bandwidth and peak):
        return None
    xs = [d[0] for d in dots]
    return {
        "x": xs,
        "y": [d[1] for d in dots],
        "text": [d[2] for d in dots],
        "bandwidth": bandwidth,
        "peak_gflops": peak,
        "ridge": peak / bandwidth,
        "xmin": min(min(xs), peak / bandwidth) / 4,
        "xmax": max(max(xs), peak / bandwidth) * 4,
    }


def _copy_plotly(out: Path) -> None:
    try:
        import plotly
    except ImportError:
        raise EnvironmentProblem(
            "the report draws with Plotly, which is not installed: " + install_hint("report")
        ) from None
    source = Path(plotly.__file__).parent / "package_data" / PLOTLY_JS
    if not source.is_file():
        raise EnvironmentProblem(f"this Plotly has no {PLOTLY_JS}: pip install -U plotly")
    shutil.copyfile(source, out / PLOTLY_JS)


def _drawable(value: object) -> bool:
    """A median a log axis and a ratio can take: a positive finite number (a store edited by
    hand may hold 0, a negative or an infinity)."""
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


# A suite's page name keeps this many characters of its name (a file name has 255 bytes at
# most): the rest, and any name that is not already a safe file name, adds a short digest.
MAX_SLUG = 60


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in ("-", "_") else "_" for c in name) or "suite"


def _page_names(suites: list[str]) -> dict[str, str]:
    """Each suite's page file, distinct from every other's and from index.html, on a file
    system that ignores case too: "a/b" and "a_b" must not overwrite each other's page. A
    name that is a safe file name already keeps it; another that would collide, or is too
    long, adds a digest of the whole name."""
    names: dict[str, str] = {}
    taken = {"index"}
    # Names that are their own slug first: their pages keep the plain name whatever else.
    for suite in sorted(suites, key=lambda name: _slug(name) != name):
        slug = _slug(suite)
        if len(slug) > MAX_SLUG or slug.casefold() in taken:
            digest = hashlib.sha256(suite.encode("utf-8", "surrogatepass")).hexdigest()[:10]
            slug = f"{slug[:MAX_SLUG]}-{digest}"
        taken.add(slug.casefold())
        names[suite] = f"{slug}.html"
    return names


def _page(
    title: str, body: str, data: Any = None, scripts: tuple[str, ...] = (PLOTLY_JS, REPORT_JS)
) -> str:
    """A page: its data (if any) in a JSON block that no browser runs, read by `scripts`."""
    loaded = (
        f'<script type="application/json" id="data">{script_json(data)}</script>\n'
        + "".join(f'<script src="{script}"></script>' for script in scripts)
        if data is not None
        else ""
    )
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body>{body}{loaded}</body></html>"
    )


# Characters that could end an inline script or start markup, and the two line separators
# JavaScript source may not hold, as JSON's \u escapes (the same JSON to a parser): a label,
# a variant or a GPU name from an imported file can hold "</script>".
_SCRIPT_SAFE = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def script_json(data: Any) -> str:
    """`data` as JSON that is safe inside an inline <script>."""
    return json.dumps(data, separators=(",", ":")).translate(_SCRIPT_SAFE)


def _table(headers: list[str], rows: list[list[str]], cls: str) -> str:
    """An HTML table of cells already escaped; it scrolls on its own on a narrow screen."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<div class='scroll'><table class='{cls}'><tr>{head}</tr>{body}</table></div>"


def _suite_page(
    store: History,
    suite: str,
    runs: list[Run],
    data: dict[str, Any],
    changes: list[tuple[str, str, str, float]],
    latest: ResultSet | None,
) -> str:
    e = html.escape
    charts = "".join(
        f"<div class='chart' id='chart-{i}'></div>" for i in range(len(data["points"]))
    )
    body = (
        f"<nav><a href='index.html'>all suites</a></nav><h1>{e(suite)}</h1>"
        f"<p>{len(runs)} run(s), {runs[0].created[:10]} to {runs[-1].created[:10]}, on "
        f"{len(data['testbeds'])} testbed(s)"
        + (f"; every point at {e(data['constant'])}" if data["constant"] else "")
        + f".</p><h2>Steps: changes that persist</h2>"
        f"{_steps_table(data['steps'], data['varying'])}"
        f"<h2>Latest run against the one before</h2>{_changes_table(changes, data['varying'])}"
        f"<h2>Every point of the latest run</h2>"
        f"<div class='chart overview' id='overview'></div>"
        f"<h2>Over time</h2><p>Median time per point and variant by measurement date (log "
        f"scale); one colour per variant, one dash per testbed; "
        f"<span class='slower'>×</span> marks a slower step or a slower latest run.</p>"
        f"{_pickers(data)}{_metric_chooser(data['metrics'])}{charts}"
        f"{energy_sections(data.get('energy'))}"
        f"<h2>Latest run</h2>{_latest_table(latest)}"
        f"<h2>Roofline of the latest run</h2>"
        + (
            "<div class='chart' id='roofline'></div>"
            if data["roofline"]
            else "<p>No result of this run declares its flops and bytes.</p>"
        )
        + f"<h2>Environment of each run</h2>{_environment_table(store, runs)}"
    )
    scripts = (PLOTLY_JS, REPORT_JS) + ((ENERGY_JS,) if "energy" in data else ())
    return _page(f"gpubench · {suite}", body, data, scripts)


def _pickers(data: dict[str, Any]) -> str:
    """Checkboxes that show or hide testbeds and labels (where there is a choice)."""
    parts = []
    if len(data["testbeds"]) > 1:
        boxes = "".join(
            f"<label><input type='checkbox' checked data-bed='{i}'> {html.escape(name)}</label>"
            for i, name in enumerate(data["testbeds"])
        )
        parts.append(f"<fieldset><legend>Testbeds</legend>{boxes}</fieldset>")
    if len(data["labels"]) > 1:
        boxes = "".join(
            f"<label><input type='checkbox' checked data-label='{html.escape(label)}'>"
            f" {html.escape(label or '(no label)')}</label>"
            for label in data["labels"]
        )
        parts.append(f"<fieldset><legend>Labels</legend>{boxes}</fieldset>")
    return "".join(parts)


def _metric_chooser(metrics: list[dict[str, str]]) -> str:
    options = "".join(
        f"<option value='{html.escape(m['key'])}'>{html.escape(m['label'])}</option>"
        for m in metrics
    )
    return (
        f"<p>Show: <select id='metric'><option value=''>median time</option>{options}</select></p>"
    )


def _steps_rows(
    steps: list[dict[str, Any]], varying: list[str] | None, suite: str | None = None
) -> list[list[str]]:
    e = html.escape
    only = None if varying is None else set(varying)
    return [
        ([e(suite)] if suite is not None else [])
        + [
            e(s["variant"]),
            e(_point_label(s["point"], only) or "-"),
            e(s["testbed"]),
            f"<span class='{s['verdict']}'>{s['verdict']}</span>",
            f"{format_time(s['base'])} → {format_time(s['new'])}",
            f"{100 * s['change']:+.1f}%",
            f"run {s['run']} · {e(s['date'])}" + (f" · {e(s['label'])}" if s["label"] else ""),
            f"{s['runs_before']} / {s['runs_after']}",
        ]
        for s in sorted(steps, key=lambda s: (s["verdict"] != "slower", -abs(s["change"])))
    ]


_STEP_HEADERS = ["variant", "point", "testbed", "verdict", "base → new", "change", "from",
                 "runs before / after"]  # fmt: skip


def _steps_table(steps: list[dict[str, Any]], varying: list[str] | None) -> str:
    if not steps:
        return "<p>No step: no change that persists beyond the threshold and the noise.</p>"
    return _table(_STEP_HEADERS, _steps_rows(steps, varying), "steps")


def _changes_table(
    changes: list[tuple[str, str, str, float]], varying: list[str] | None = None
) -> str:
    if not changes:
        return "<p>No change beyond the threshold and the noise.</p>"
    only = None if varying is None else set(varying)
    rows = [
        [
            html.escape(v),
            html.escape(_point_label(p, only) or "-"),
            f"<span class='{verdict}'>{verdict}</span>",
            f"{100 * change:+.1f}%",
        ]
        for p, v, verdict, change in sorted(changes, key=lambda c: -abs(c[3]))
    ]
    return _table(["variant", "point", "verdict", "change"], rows, "changes")


def _latest_table(latest: ResultSet | None) -> str:
    """The latest run: the parameters that vary as columns, the constant ones said once."""
    if latest is None or not latest.results:
        return ""
    keys = list(dict.fromkeys(k for r in latest.results for k in r.point))
    values = {k: {json.dumps(r.point.get(k), default=str) for r in latest.results} for k in keys}
    varying = [k for k in keys if len(values[k]) > 1]
    constant = [
        f"{k}={latest.results[0].point.get(k)}"
        for k in keys
        if k not in varying and latest.results[0].point.get(k) is not None
    ]
    # Energy columns only where the run measured energy: other pages stay as they were.
    energy = any(r.energy is not None for r in latest.results)
    rows = []
    for r in latest.results:
        noise = (r.summary or {}).get("rel_noise")
        rows.append(
            [
                html.escape(r.variant),
                *[html.escape(str(r.point.get(k, ""))) for k in varying],
                html.escape(str(r.status.value)),
                format_time(r.median_ms),
                "" if noise is None else f"{100 * noise:.2f}%",
                *([html.escape(cell) for cell in energy_cells(r.energy)] if energy else []),
            ]
        )
    same = f"<p>Every result at {html.escape(', '.join(constant))}.</p>" if constant else ""
    headers = ["variant", *varying, "status", "median", "noise"]
    headers += ["energy / run", "power"] if energy else []
    return same + _table(headers, rows, "latest")


def _environment_table(store: History, runs: list[Run]) -> str:
    rows = []
    for run in runs:
        env = _json_object(store.environment(run.id))
        commit = (run.commit or "")[:10] + (" (dirty)" if run.dirty else "")
        rows.append(
            [
                str(run.id),
                html.escape(run.created),
                html.escape(run.label),
                html.escape(commit or run.gpubench_version or ""),
                html.escape(str(run.gpu_name)),
                html.escape(str(run.gpu_uuid)),
                html.escape(str(env.get("driver_version"))),
                html.escape(str(env.get("cuda_driver_api_version"))),
                html.escape(str(run.backend)),
                html.escape(str(env.get("sm_clock_mhz_at_start"))),
            ]
        )
    return _table(
        [
            "run",
            "date",
            "label",
            "commit",
            "GPU",
            "UUID",
            "driver",
            "CUDA",
            "backend",
            "SM clock at start (MHz)",
        ],
        rows,
        "environment",
    )


def _index_page(
    summaries: list[tuple[str, list[Run], list[tuple[str, str, str, float]], dict[str, Any]]],
    page_names: dict[str, str] | None = None,
) -> str:
    page_names = page_names or _page_names([summary[0] for summary in summaries])
    rows, moved, steps = [], [], []
    for suite, runs, changes, data in summaries:
        slower = sum(c[2] == "slower" for c in changes)
        faster = sum(c[2] == "faster" for c in changes)
        labels = ", ".join(html.escape(label) for label in data["labels"] if label)
        rows.append(
            [
                f"<a href='{html.escape(page_names[suite])}'>{html.escape(suite)}</a>",
                str(len(runs)),
                "<br>".join(html.escape(b) for b in sorted(data["testbeds"])),
                labels,
                html.escape(measured_at(runs[-1].created)),
                f"<span class='slower'>{slower}</span>" if slower else "0",
                f"<span class='faster'>{faster}</span>" if faster else "0",
            ]
        )
        only = None if data["varying"] is None else set(data["varying"])
        moved += [
            [
                html.escape(suite),
                html.escape(v),
                html.escape(_point_label(p, only) or "-"),
                f"<span class='{verdict}'>{verdict}</span>",
                f"{100 * c:+.1f}%",
            ]
            for p, v, verdict, c in changes
        ]
        steps += _steps_rows(
            [s for s in data["steps"] if s["verdict"] == "slower"], data["varying"], suite
        )
    body = (
        "<h1>gpubench history</h1>"
        + _table(
            ["suite", "runs", "testbeds", "labels", "latest run", "slower", "faster"],
            rows,
            "suites",
        )
        + "<h2>Regressions: slower steps that persist</h2>"
        + (
            _table(["suite", *_STEP_HEADERS], steps, "regressions")
            if steps
            else "<p>No slower step in any suite.</p>"
        )
        + "<h2>What moved in each suite's latest run</h2>"
        + (
            _table(["suite", "variant", "point", "verdict", "change"], moved, "moved")
            if moved
            else "<p>Nothing got slower or faster.</p>"
        )
    )
    return _page("gpubench history", body)
