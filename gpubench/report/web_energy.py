"""The web report's energy charts, on the pages of suites whose runs carry energy (`--energy`):
each point's energy per run over time per variant (one line per variant and testbed, as the
time charts), and its energy against its median time in the latest run that measured energy
on each testbed (one marker per variant). A page without energy has none of this: not the
sections, not the data, not the script.

The data are what gpubench.store.history.History.energy_series reads from the store's energy
columns; energy.js, beside report.js, draws them with report.js's helpers and state.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from gpubench.store.history import StoredEnergy

ENERGY_JS = "energy.js"

# report.js has run first: DATA, byId, esc, colour, hover, timeUnit, pick, shownRuns, legend,
# DASHES, hiddenBeds and hiddenLabels are its (classic scripts share their top-level names).
# Every string reaches Plotly through esc, as in report.js.
ENERGY_SCRIPT = """"use strict";
const ENERGY = DATA.energy;
// One marker per testbed, as the time charts have one dash per testbed.
const SYMBOLS = ["circle", "square", "diamond", "triangle-up", "star", "hexagon"];
// The unit that fits a chart's energies: 0.25 J is 250 mJ.
function energyUnit(values) {
  const top = Math.max(0, ...values.filter(v => v !== null));
  if (top >= 1) return ["J", 1];
  if (top >= 1e-3) return ["mJ", 1e3];
  if (top >= 1e-6) return ["uJ", 1e6];
  return ["nJ", 1e9];
}
const watts = w => w === null ? "-" : w.toFixed(1) + " W";
const energyLayout = (point, xaxis, yTitle) => ({title: {text: esc(point.label), font: {size: 13}},
  margin: {t: 40, b: 40, l: 60, r: 10}, legend, xaxis,
  yaxis: {title: {text: yTitle}, type: "log"}});
function drawEnergy(i) {
  const point = ENERGY.points[i];
  const series = point.series.filter(s => !hiddenBeds.has(s.bed));
  const [unit, scale] = energyUnit(series.flatMap(s => s.joules));
  const traces = series.map(s => {
    const ks = shownRuns(s);
    return {name: esc(s.name), x: pick(s.runs, ks).map(r => byId[r].date),
      y: pick(s.joules, ks).map(v => v * scale), type: "scatter",
      mode: runs.length <= 60 ? "lines+markers" : "lines",
      line: {color: colour(s), dash: DASHES[s.bed % DASHES.length]}, marker: {color: colour(s)},
      text: ks.map(k => hover(s.runs[k], s.noise[k]) +
        `<br>power ${watts(s.watts[k])}, idle ${watts(s.idle[k])}`),
      hovertemplate: "%{y:.4g} " + unit + "<br>%{text}"};
  });
  Plotly.react("energy-" + i, traces,
    energyLayout(point, {type: "date"}, `energy per run (${unit})`),
    {displaylogo: false, responsive: true});
}
function drawEnergyVsTime(i) {
  const point = ENERGY.points[i];
  const dots = point.latest.filter(d => !hiddenBeds.has(d.bed) && !hiddenLabels.has(byId[d.run].label));
  const [tUnit, tScale] = timeUnit(dots.map(d => d.median));
  const [eUnit, eScale] = energyUnit(dots.map(d => d.joules));
  const traces = dots.map(d => ({name: esc(d.name), x: [d.median * tScale],
    y: [d.joules * eScale], type: "scatter", mode: "markers",
    marker: {color: colour(d), size: 12, symbol: SYMBOLS[d.bed % SYMBOLS.length]},
    text: [hover(d.run, d.noise) + `<br>power ${watts(d.watts)}`],
    hovertemplate: `%{x:.4g} ${tUnit}, %{y:.4g} ${eUnit}<br>%{text}`}));
  // The legend lower than the time charts': below the x axis's title.
  Plotly.react("energy-vs-time-" + i, traces, {...energyLayout(point,
    {type: "log", title: {text: `median time (${tUnit})`}}, `energy per run (${eUnit})`),
    legend: {...legend, y: -0.3}}, {displaylogo: false, responsive: true});
}
// Drawn as they scroll into view, redrawn when a testbed or label is shown or hidden (after
// report.js's own handler has noted which), and by drawAll, as the time charts.
const energyCharts = [{prefix: "energy-", draw: drawEnergy, drawn: new Set()},
                      {prefix: "energy-vs-time-", draw: drawEnergyVsTime, drawn: new Set()}];
const drawEnergyOnce = (c, i) => { if (!c.drawn.has(i)) { c.drawn.add(i); c.draw(i); } };
const energyPending = new Map();
const energyWatcher = new IntersectionObserver(entries => entries.forEach(e => {
  if (e.isIntersecting) { energyPending.get(e.target)(); energyWatcher.unobserve(e.target); }
}), {rootMargin: "400px"});
energyCharts.forEach(c => ENERGY.points.forEach((_, i) => {
  const element = document.getElementById(c.prefix + i);
  energyPending.set(element, () => drawEnergyOnce(c, i));
  energyWatcher.observe(element);
}));
const drawTimeCharts = window.drawAll;
window.drawAll = () => {
  drawTimeCharts();
  energyCharts.forEach(c => ENERGY.points.forEach((_, i) => drawEnergyOnce(c, i)));
};
document.querySelectorAll("input[data-bed], input[data-label]").forEach(box =>
  box.addEventListener("change", () => energyCharts.forEach(c => c.drawn.forEach(i => c.draw(i)))));
"""

# (run id, variant, point key, median ms, energy) of one result, in date order.
EnergyRow = tuple[int, str, str, float, StoredEnergy]


def energy_data(
    rows: list[EnergyRow],
    order: dict[int, int],
    bed_of: dict[int, int],
    names: dict[tuple[str, int], str],
    colours: dict[str, int],
    labels: dict[str, str],
) -> dict[str, Any] | None:
    """What the energy charts draw, per point (in `labels`' order, those with energy): each
    variant's series per testbed, and the latest run with energy on each testbed. `names`:
    each (variant, testbed)'s name in the legends; None where no result has energy."""
    by_point: dict[str, dict[tuple[str, int], list[tuple[int, float, StoredEnergy]]]] = defaultdict(
        dict
    )
    for run_id, variant, point, median, energy in rows:
        by_point[point].setdefault((variant, bed_of[run_id]), []).append((run_id, median, energy))
    if not by_point:
        return None
    return {
        "points": [
            _energy_point(labels[point], by_point[point], order, names, colours)
            for point in labels
            if point in by_point
        ]
    }


def _energy_point(
    label: str,
    variants: dict[tuple[str, int], list[tuple[int, float, StoredEnergy]]],
    order: dict[int, int],
    names: dict[tuple[str, int], str],
    colours: dict[str, int],
) -> dict[str, Any]:
    # A testbed's latest run with energy at this point: the scatter never mixes runs, nor
    # testbeds within one series.
    latest: dict[int, int] = {}
    for (_, bed), rows in variants.items():
        if bed not in latest or order[rows[-1][0]] > order[latest[bed]]:
            latest[bed] = rows[-1][0]
    return {
        "label": label,
        "series": [
            {
                **_identity(variant, bed, names, colours),
                "runs": [run_id for run_id, _, _ in rows],
                "joules": [_figure(e.joules_per_run) for _, _, e in rows],
                "watts": [_figure(e.average_watts) for _, _, e in rows],
                "idle": [_figure(e.idle_watts) for _, _, e in rows],
                "noise": [_figure(e.noise, 3) for _, _, e in rows],
            }
            for (variant, bed), rows in variants.items()
        ],
        "latest": [
            {
                **_identity(variant, bed, names, colours),
                "run": rows[-1][0],
                "median": _figure(rows[-1][1]),
                "joules": _figure(rows[-1][2].joules_per_run),
                "watts": _figure(rows[-1][2].average_watts),
                "noise": _figure(rows[-1][2].noise, 3),
            }
            for (variant, bed), rows in variants.items()
            if rows[-1][0] == latest[bed]
        ],
    }


def _identity(
    variant: str, bed: int, names: dict[tuple[str, int], str], colours: dict[str, int]
) -> dict[str, Any]:
    return {
        "name": names[(variant, bed)],
        "variant": variant,
        "bed": bed,
        "colour": colours[variant],
    }


def _figure(value: float | None, digits: int = 5) -> float | None:
    """A figure as the page carries it: to `digits` significant digits (the data stay small)."""
    return None if value is None else float(f"{value:.{digits}g}")


def energy_sections(energy: dict[str, Any] | None) -> str:
    """The energy sections of a suite page: a chart per point over time, then a chart per
    point of energy against time (nothing where the runs carry no energy)."""
    if not energy:
        return ""
    count = len(energy["points"])
    return (
        "<h2>Energy over time</h2><p>Energy per run (NVML's energy counter, "
        "<code>--energy</code>) per point and variant by measurement date (log scale); one "
        "colour per variant, one dash per testbed; hover: the board's average power over the "
        "window and its idle power.</p>"
        + "".join(f"<div class='chart' id='energy-{i}'></div>" for i in range(count))
        + "<h2>Energy against time</h2><p>Each variant's energy per run against its median "
        "time, from the latest run that measured energy on each testbed (log scales); one "
        "colour per variant, one marker shape per testbed. Nearer the lower left is better; a "
        "variant straight above another costs more energy in the same time.</p>"
        + "".join(f"<div class='chart' id='energy-vs-time-{i}'></div>" for i in range(count))
    )


def format_energy(joules: float | None) -> str:
    """Energy in the unit that fits it: 250 mJ, not 0.25 J."""
    if joules is None:
        return ""
    for unit, scale, floor in (("J", 1.0, 1.0), ("mJ", 1e3, 1e-3), ("uJ", 1e6, 1e-6)):
        if abs(joules) >= floor:
            return f"{joules * scale:.4g} {unit}"
    return f"{joules * 1e9:.4g} nJ"


def energy_cells(energy: dict[str, Any] | None) -> list[str]:
    """A result's energy per run and power for the latest run's table (text, not escaped):
    blank where it was not asked for, the reason where it is missing."""
    energy = energy or {}
    if energy.get("missing"):
        return [f"missing: {energy['missing']}", ""]
    watts = energy.get("average_watts")
    return [format_energy(energy.get("joules_per_run")), "" if watts is None else f"{watts:.1f} W"]
