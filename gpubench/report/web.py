"""A history store as a static web report: a folder of HTML pages and the charting library
beside them (Plotly's own plotly.min.js, so the pages work from file:// and any static host).

index.html: every suite's runs and testbeds, and what got slower or faster in its latest run
against the one before on the same testbed (compare's rule). <suite>.html: for each point,
each variant's median over the runs, one line per testbed (GPU, card, backend) where there are
several (hover: value, noise, run, date, commit, label, testbed; regressions marked), the
latest run as a table, its roofline, and every run's environment. The data are embedded compactly (run
numbers, not dates, per point) and the traces built in the browser: a year of nightly runs
stays a few MB per page.
"""

from __future__ import annotations

import html
import json
import math
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

from gpubench.compare import judge
from gpubench.errors import EnvironmentProblem
from gpubench.history import History, Run
from gpubench.results import ResultSet

PLOTLY_JS = "plotly.min.js"

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:2px 8px;
font-size:13px}th{background:#f2f2f2}.slower,.broken{color:#b00;font-weight:600}
.faster{color:#06c;font-weight:600}.chart{width:100%;max-width:1100px;height:320px}
nav a{margin-right:1em}code{background:#f4f4f4;padding:0 3px}
"""

_CHARTS_JS = """
const runs = DATA.runs, byId = Object.fromEntries(runs.map(r => [r.id, r]));
// Plotly reads a subset of HTML in hover text: the strings a run carries are escaped.
const esc = t => String(t).replace(/[&<>"']/g, c => `&#${c.charCodeAt(0)};`);
function hover(runId, noise) {
  const r = byId[runId];
  return `run ${r.id} · ${esc(r.created)}<br>commit ${esc(r.commit || "-")} · ` +
         `${esc(r.label || "")}<br>${esc(r.testbed)}` +
         `<br>noise ${noise === null ? "-" : (100 * noise).toFixed(2) + "%"}`;
}
let metric = "";  // "": the median time; else a metric's key
function draw(i) {
  const point = DATA.points[i];
  const ys = s => metric ? (s.metrics[metric] || s.runs.map(() => null)) : s.median;
  const unit = metric ? DATA.metrics.find(m => m.key === metric).label : "median (ms)";
  const traces = point.series.map(s => ({
    // Markers on every run only while they stay few: thousands of SVG markers per chart
    // are what makes a long history slow to open; the lines keep their hover.
    name: s.variant, x: s.runs, y: ys(s), type: "scatter",
    mode: runs.length <= 60 ? "lines+markers" : "lines",
    text: s.runs.map((r, k) => hover(r, s.noise[k])),
    hovertemplate: "%{y:.4g} " + (metric ? "" : "ms") + "<br>%{text}<extra>" + s.variant +
                   "</extra>"}));
  const marks = point.regressions;  // judged on the time, as compare does by default
  if (marks.runs.length && !metric) traces.push({name: "regression", x: marks.runs, y: marks.median,
    mode: "markers", type: "scatter", marker: {symbol: "x", size: 12, color: "#c00"},
    text: marks.variant, hovertemplate: "slower: %{text}<extra></extra>"});
  Plotly.react("chart-" + i, traces, {title: {text: point.label, font: {size: 13}},
    margin: {t: 40, b: 40, l: 60, r: 10}, xaxis: {title: {text: "run"}, tickformat: "d", dtick: runs.length <= 20 ? 1 : undefined},
    yaxis: {title: {text: unit}, type: metric ? "linear" : "log"}}, {displaylogo: false, responsive: true});
}
// Each chart is drawn when it scrolls into view: a long history opens at once, however many
// points the suite has. drawAll() draws the rest (tests, printing).
const drawn = new Set();
function drawOnce(i) { if (!drawn.has(i)) { drawn.add(i); draw(i); } }
window.drawAll = () => DATA.points.forEach((_, i) => drawOnce(i));
const chooser = document.getElementById("metric");
if (chooser) chooser.addEventListener("change", () => {
  metric = chooser.value; drawn.forEach(i => draw(i));
});
const watcher = new IntersectionObserver(entries => entries.forEach(e => {
  if (e.isIntersecting) { drawOnce(Number(e.target.id.slice(6))); watcher.unobserve(e.target); }
}), {rootMargin: "400px"});
DATA.points.forEach((_, i) => watcher.observe(document.getElementById("chart-" + i)));
if (DATA.roofline) {
  const R = DATA.roofline, xs = [R.xmin, R.ridge, R.xmax];
  const roof = {name: "roof", x: xs, y: xs.map(x => Math.min(R.peak_gflops, R.bandwidth * x)),
                mode: "lines", line: {color: "#888"}};
  const dots = {name: "latest run", x: R.x, y: R.y, text: R.text, mode: "markers",
                hovertemplate: "%{text}<br>%{x:.3g} flop/byte, %{y:.4g} GFLOP/s<extra></extra>"};
  Plotly.newPlot("roofline", [roof, dots], {margin: {t: 20}, xaxis: {type: "log",
    title: "arithmetic intensity (flop/byte)"}, yaxis: {type: "log", title: "GFLOP/s"}},
    {displaylogo: false});
}
"""


def write_report(store: History, out_dir: str, threshold: float) -> list[Path]:
    """Write the report; the pages written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _copy_plotly(out)
    summaries, pages = [], []
    for suite in store.suites():
        runs = store.runs(suite=suite)  # a suite is listed for its runs: at least one
        latest = store.result_set(runs[-1].id)  # read once, shown twice
        data, latest_changes = suite_data(store, suite, runs, threshold, latest)
        page = out / f"{_slug(suite)}.html"
        page.write_text(_suite_page(store, suite, runs, data, latest_changes, latest))
        pages.append(page)
        summaries.append((suite, runs, latest_changes))
    index = out / "index.html"
    index.write_text(_index_page(summaries))
    return [index, *pages]


def suite_data(store: History, suite: str, runs: list[Run], threshold: float,
               latest: ResultSet | None = None,
               ) -> tuple[dict[str, Any], list[tuple[str, str, str, float]]]:  # fmt: skip
    """What the suite page draws (runs, per point the variants' series and regressions), and
    the latest run's slower/faster pairs against the run before it. `runs`: the suite's runs,
    at least one; `latest`: the last one's results where the caller has read them already."""
    series: dict[str, dict[str, list[tuple[int, float, float | None]]]] = defaultdict(dict)
    marks: dict[str, list[tuple[int, float, str]]] = defaultdict(list)
    last: dict[tuple[str, str], tuple[int, str, float | None, float | None]] = {}
    latest_id = runs[-1].id
    changes: list[tuple[str, str, str, float]] = []
    metric_names: dict[str, None] = {}
    # A line never crosses testbeds (GPU, card, backend): each is a series of its own, and a
    # change is judged against the run before on the same testbed.
    testbeds = {r.id: testbed(r) for r in runs}
    named = len(set(testbeds.values())) > 1
    for run_id, plain_variant, point, status, median, noise, metrics_json in store.series(suite):
        bed = testbeds.get(run_id, "")
        variant = f"{plain_variant} · {bed}" if named else plain_variant
        before = last.get((point, variant))
        last[(point, variant)] = (run_id, status, median, noise)
        if median is None or status not in ("ok", "unstable"):
            continue
        metrics = _numbers(metrics_json)
        metric_names.update(dict.fromkeys(metrics))
        series[point].setdefault(variant, []).append((run_id, median, noise, metrics))
        if before is None or before[2] is None or before[1] not in ("ok", "unstable"):
            continue
        change = median / before[2] - 1
        verdict = judge(change, max(noise or 0.0, before[3] or 0.0), threshold)
        if verdict == "slower":
            marks[point].append((run_id, median, variant))
        if run_id == latest_id and verdict in ("slower", "faster"):
            changes.append((point, variant, verdict, change))
    varying = _varying(list(series))
    points = [_point_entry(point, variants, marks[point], varying)
              for point, variants in series.items()]  # fmt: skip
    data = {
        "runs": [_run_entry(r) for r in runs],
        "points": points,
        "metrics": [_metric_entry(name) for name in metric_names],
        "roofline": _roofline(latest or store.result_set(latest_id)),
    }
    return data, changes


def testbed(run: Run) -> str:
    """The testbed a run was measured on, in words: the GPU model, the card (the start of its
    UUID) and the backend."""
    card = f" {run.gpu_uuid.removeprefix('GPU-')[:8]}" if run.gpu_uuid else ""
    return f"{run.gpu_name or 'unknown GPU'}{card}, {run.backend or 'unknown backend'}"


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


def _numbers(metrics_json: str | None) -> dict[str, float]:
    """A result's finite numeric metrics."""
    try:
        metrics = json.loads(metrics_json) if metrics_json else {}
    except ValueError:
        return {}
    if not isinstance(metrics, dict):
        return {}
    return {k: v for k, v in metrics.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)}  # fmt: skip


def _metric_entry(key: str) -> dict[str, str]:
    from gpubench.metrics import CATALOG

    metric = next((m for m in CATALOG if m.key == key), None)
    if metric is None:
        return {"key": key, "label": key}
    shown = metric.unit and metric.unit != metric.header  # "GB/s", not "GB/s (GB/s)"
    return {"key": key, "label": f"{metric.header} ({metric.unit})" if shown else metric.header}


def _point_entry(point: str, variants: dict[str, list[tuple[int, float, float | None, dict]]],
                 marks: list[tuple[int, float, str]], varying: set[str] | None) -> dict[str, Any]:  # fmt: skip
    return {
        "label": _point_label(point, varying) or "every run at one point",
        "series": [
            {
                "variant": v,
                "runs": [r for r, _, _, _ in rows],
                "median": [float(f"{m:.5g}") for _, m, _, _ in rows],
                "noise": [None if n is None else float(f"{n:.3g}") for _, _, n, _ in rows],
                "metrics": _metric_columns(rows),
            }
            for v, rows in variants.items()
        ],
        "regressions": {
            "runs": [r for r, _, _ in marks],
            "median": [m for _, m, _ in marks],
            "variant": [v for _, _, v in marks],
        },
    }


def _metric_columns(rows: list[tuple[int, float, float | None, dict]]) -> dict[str, list]:
    """Each metric of a series, one value (or null) per run."""
    keys = dict.fromkeys(k for *_, metrics in rows for k in metrics)
    return {k: [None if k not in m else float(f"{m[k]:.5g}") for *_, m in rows] for k in keys}


def _run_entry(run: Run) -> dict[str, Any]:
    commit = (run.commit or "")[:10] + ("+" if run.dirty else "")
    return {
        "id": run.id,
        "created": run.created,
        "commit": commit,
        "label": run.label,
        "testbed": testbed(run),
    }


def _point_label(point: str, only: set[str] | None = None) -> str:
    """`k=v, ...` of a point (its JSON key), `only` the parameters named there if given."""
    try:
        values = json.loads(point)
    except ValueError:
        return point
    if not isinstance(values, dict):
        return point
    return ", ".join(f"{k}={v}" for k, v in values.items()
                     if v is not None and (only is None or k in only))  # fmt: skip


def _roofline(result_set: ResultSet) -> dict[str, Any] | None:
    """The latest run's kernels against the device's theoretical roofs."""
    device = (result_set.environment or {}).get("device") or {}
    bandwidth, peak = device.get("peak_bandwidth_gbps"), device.get("peak_fp32_gflops")
    dots = []
    for r in result_set.results:
        work, median = r.work or {}, r.median_ms
        flops, moved = work.get("flops") or 0, work.get("bytes_moved") or 0
        if flops and moved and median and r.status.is_measured:
            dots.append((flops / moved, flops / (median * 1e-3) / 1e9,
                         f"{r.variant} · {_point_label(json.dumps(r.point))}"))  # fmt: skip
    if not (dots and bandwidth and peak):
        return None
    xs = [d[0] for d in dots]
    return {"x": xs, "y": [d[1] for d in dots], "text": [d[2] for d in dots],
            "bandwidth": bandwidth, "peak_gflops": peak, "ridge": peak / bandwidth,
            "xmin": min(min(xs), peak / bandwidth) / 4, "xmax": max(max(xs), peak / bandwidth) * 4}  # fmt: skip


def _copy_plotly(out: Path) -> None:
    try:
        import plotly
    except ImportError:
        raise EnvironmentProblem(
            "the report draws with Plotly, which is not installed: pip install 'gpubench[report]'"
        ) from None
    source = Path(plotly.__file__).parent / "package_data" / PLOTLY_JS
    if not source.is_file():
        raise EnvironmentProblem(f"this Plotly has no {PLOTLY_JS}: pip install -U plotly")
    shutil.copyfile(source, out / PLOTLY_JS)


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in ("-", "_") else "_" for c in name) or "suite"


def _page(title: str, body: str, script: str = "") -> str:
    scripts = f'<script src="{PLOTLY_JS}"></script>\n<script>{script}</script>' if script else ""
    return (f"<!doctype html><html><head><meta charset='utf-8'><meta name='viewport' "
            f"content='width=device-width, initial-scale=1'><title>{html.escape(title)}"
            f"</title><style>{_STYLE}</style></head><body>{body}{scripts}</body></html>")  # fmt: skip


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
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table class='{cls}'><tr>{head}</tr>{body}</table>"


def _suite_page(store: History, suite: str, runs: list[Run], data: dict[str, Any],
                changes: list[tuple[str, str, str, float]], latest: ResultSet | None) -> str:  # fmt: skip
    e = html.escape
    charts = "".join(
        f"<div class='chart' id='chart-{i}'></div>" for i in range(len(data["points"]))
    )
    body = (f"<nav><a href='index.html'>all suites</a></nav><h1>{e(suite)}</h1>"
            f"<p>{len(runs)} run(s); median time per point and variant over the runs (log "
            f"scale); <span class='slower'>×</span> marks a regression against the run before."
            f"</p><h2>Latest run against the one before</h2>{_changes_table(changes)}"
            f"<h2>Over time</h2>{_metric_chooser(data['metrics'])}{charts}"
            f"<h2>Latest run</h2>{_latest_table(latest)}"
            f"<h2>Roofline of the latest run</h2>"
            + ("<div class='chart' id='roofline'></div>" if data["roofline"] else
               "<p>No result of this run declares its flops and bytes.</p>")
            + f"<h2>Environment of each run</h2>{_environment_table(store, runs)}")  # fmt: skip
    script = "const DATA = " + script_json(data) + ";\n" + _CHARTS_JS
    return _page(f"gpubench · {suite}", body, script)


def _metric_chooser(metrics: list[dict[str, str]]) -> str:
    options = "".join(f"<option value='{html.escape(m['key'])}'>{html.escape(m['label'])}</option>"
                      for m in metrics)  # fmt: skip
    return (
        f"<p>Show: <select id='metric'><option value=''>median time (ms)</option>{options}"
        "</select></p>"
    )


def _changes_table(changes: list[tuple[str, str, str, float]]) -> str:
    if not changes:
        return "<p>No change beyond the threshold and the noise.</p>"
    rows = [[html.escape(v), html.escape(_point_label(p)),
             f"<span class='{verdict}'>{verdict}</span>", f"{100 * change:+.1f}%"]
            for p, v, verdict, change in sorted(changes, key=lambda c: -abs(c[3]))]  # fmt: skip
    return _table(["variant", "point", "verdict", "change"], rows, "changes")


def _latest_table(latest: ResultSet | None) -> str:
    if latest is None:
        return ""
    rows = []
    for r in latest.results:
        noise = (r.summary or {}).get("rel_noise")
        rows.append([html.escape(r.variant), html.escape(_point_label(json.dumps(r.point))),
                     html.escape(str(r.status.value)),
                     "" if r.median_ms is None else f"{r.median_ms:.4g} ms",
                     "" if noise is None else f"{100 * noise:.2f}%"])  # fmt: skip
    return _table(["variant", "point", "status", "median", "noise"], rows, "latest")


def _environment_table(store: History, runs: list[Run]) -> str:
    rows = []
    for run in runs:
        env = json.loads(store.environment(run.id))
        commit = (run.commit or "")[:10] + (" (dirty)" if run.dirty else "")
        rows.append([str(run.id), html.escape(run.created), html.escape(run.label),
                     html.escape(commit or run.gpubench_version or ""),
                     html.escape(str(run.gpu_name)), html.escape(str(run.gpu_uuid)),
                     html.escape(str(env.get("driver_version"))),
                     html.escape(str(env.get("cuda_driver_api_version"))),
                     html.escape(str(run.backend)),
                     html.escape(str(env.get("sm_clock_mhz_at_start")))])  # fmt: skip
    return _table(["run", "date", "label", "commit", "GPU", "UUID", "driver", "CUDA", "backend",
                   "SM clock at start (MHz)"], rows, "environment")  # fmt: skip


def _index_page(summaries: list[tuple[str, list[Run], list[tuple[str, str, str, float]]]]) -> str:
    rows, moved = [], []
    for suite, runs, changes in summaries:
        slower = sum(c[2] == "slower" for c in changes)
        faster = sum(c[2] == "faster" for c in changes)
        beds = sorted({testbed(r) for r in runs})
        rows.append([f"<a href='{_slug(suite)}.html'>{html.escape(suite)}</a>", str(len(runs)),
                     "<br>".join(html.escape(b) for b in beds), html.escape(runs[-1].created),
                     f"<span class='slower'>{slower}</span>" if slower else "0",
                     f"<span class='faster'>{faster}</span>" if faster else "0"])  # fmt: skip
        moved += [[html.escape(suite), html.escape(v), html.escape(_point_label(p)),
                   f"<span class='{verdict}'>{verdict}</span>", f"{100 * c:+.1f}%"]
                  for p, v, verdict, c in changes]  # fmt: skip
    body = ("<h1>gpubench history</h1>"
            + _table(["suite", "runs", "testbeds", "latest run", "slower", "faster"], rows,
                     "suites")
            + "<h2>What moved in each suite's latest run</h2>"
            + (_table(["suite", "variant", "point", "verdict", "change"], moved, "moved")
               if moved else "<p>Nothing got slower or faster.</p>"))  # fmt: skip
    return _page("gpubench history", body)
