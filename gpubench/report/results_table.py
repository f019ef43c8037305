"""Results → one rich table: time with its spread, bandwidth, GFLOP/s, speedup, % of peak."""

from __future__ import annotations

import math
from typing import Any

from rich.text import Text

from gpubench.model.metrics import TIME, Metric, catalog
from gpubench.model.results import Result, Status
from gpubench.report.plain import PlainTable as Table

STATUS_STYLE = {
    Status.OK: "green",
    Status.UNSTABLE: "yellow",
    Status.CRASHED: "bold red",
    Status.TIMEOUT: "bold red",
    Status.INCORRECT: "bold red",
    Status.COMPILE_FAILED: "red",
    Status.LAUNCH_FAILED: "red",
    Status.SKIPPED: "yellow",
    Status.UNVERIFIED: "yellow",
    Status.IMPLAUSIBLE: "bold red",
    Status.PRUNED: "dim",
}


def format_time(ms: float | None) -> str:
    if ms is None:
        return ""
    if ms < 1:
        return f"{ms * 1e3:.2f} µs"
    if ms < 1000:
        return f"{ms:.3f} ms"
    return f"{ms / 1e3:.3f} s"


def _percent(fraction: Any, digits: int) -> str:
    """A fraction as a percentage; blank where it is unknown (the noise of one sample is
    infinite in a live run and null in a results file, and a file may lack it)."""
    if isinstance(fraction, bool) or not isinstance(fraction, int | float):
        return ""
    return f"{100 * fraction:,.{digits}f}%" if math.isfinite(fraction) else ""


def split_params(points: list[dict[str, Any]]) -> tuple[list[str], dict[str, Any]]:
    """Parameters whose value differs between points, and the others with their one value."""
    names: list[str] = []
    for point in points:
        names.extend(n for n in point if n not in names)
    varying, fixed = [], {}
    for name in names:
        values = {repr(point.get(name)) for point in points}
        if len(values) > 1:
            varying.append(name)
        else:
            fixed[name] = points[0].get(name)
    return varying, fixed


def varying_params(results: list[Result]) -> tuple[list[str], dict[str, Any]]:
    """Parameters that differ between results get columns; the rest go in the title."""
    return split_params([r.point for r in results])


def _first_kernel(r: Result) -> dict[str, Any]:
    return next(iter(r.kernel_attributes.values()), {}) if r.kernel_attributes else {}


def metric_columns(results: list[Result], extra: tuple[Metric, ...] = ()) -> list[Metric]:
    """The declared metrics some result carries, in declared order (time is the median
    column; a metric hidden beside another is left out when that one is shown)."""
    present = {key for r in results for key in r.metrics}
    shown = [m for m in catalog(extra) if m.key in present and m.key != TIME.key]
    keys = {m.key for m in shown}
    return [m for m in shown if not (m.hidden_with and m.hidden_with in keys)]


def results_table(
    results: list[Result],
    title: str = "",
    show_resources: bool = False,
    extra_metrics: tuple[Metric, ...] = (),
) -> Table:
    varying, fixed = varying_params(results) if results else ([], {})
    fixed_text = ", ".join(f"{k}={v}" for k, v in fixed.items() if v is not None)
    # A sweep over GPUs of different models: each point was measured (and its variants
    # ranked) on one GPU, which the table names.
    models = {(r.device or {}).get("name") for r in results if r.device}
    mixed = len(models) > 1
    if mixed:
        fixed_text = " · ".join(
            t
            for t in (
                fixed_text,
                f"{len(models)} GPU models: each point measured and ranked on one",
            )
            if t
        )
    table = Table(title=" · ".join(t for t in (title, fixed_text) if t), title_justify="left")
    if mixed:
        table.add_column("gpu")
    for name in varying:
        table.add_column(name, justify="right")
    table.add_column("variant")
    table.add_column("status")
    table.add_column("median", justify="right")
    table.add_column("±noise", justify="right")
    columns = metric_columns(results, extra_metrics)
    for metric in columns:
        table.add_column(metric.header, justify="right")
    if show_resources:
        for column in ("regs", "smem", "spill", "occ"):
            table.add_column(column, justify="right")
    table.add_column("note")

    # Rank only verified results: the fastest verified variant of each point is marked.
    best: dict[tuple, float] = {}
    for r in results:
        if r.status.is_measured and r.median_ms is not None:
            key = tuple(sorted((k, repr(v)) for k, v in r.point.items()))
            best[key] = min(best.get(key, float("inf")), r.median_ms)
    for r in results:
        key = tuple(sorted((k, repr(v)) for k, v in r.point.items()))
        fastest = r.status.is_measured and r.median_ms == best.get(key)
        table.add_row(*_result_row(r, varying, columns, mixed, show_resources, fastest))
    return table


def _result_row(
    r: Result,
    varying: list[str],
    columns: list[Metric],
    mixed: bool,
    show_resources: bool,
    fastest: bool,
) -> list[Any]:
    summary = r.summary or {}
    variant = Text(r.variant + (" (base)" if r.variant == r.baseline else ""))
    if fastest:
        variant.stylize("bold")
    note = r.reason.splitlines()[0] if r.reason else ""
    if r.status is Status.UNSTABLE:
        note = f"noise target missed ({summary.get('samples')} samples)"
    capped = r.status.is_measured and summary.get("clock_capped")
    if capped:  # the figure is at the held-down clock; the dropped samples ran faster
        clock = summary.get("clock_mhz")
        note = f"{note}; clock capped at {clock:,.0f} MHz" if clock else f"{note}; clock capped"
        if summary.get("discarded"):
            note += f" ({summary['discarded']} samples at a higher clock dropped)"
        note = note.lstrip("; ")
    elif r.status.is_measured and summary.get("discarded"):
        note = f"{note}; {summary['discarded']} throttled samples discarded".lstrip("; ")
    device = r.device or {}
    row: list[Any] = [f"{device.get('index', '?')}: {device.get('name', '?')}"] if mixed else []
    row += [str(r.point.get(n)) for n in varying]
    row += [
        variant,
        Text(str(r.status), style=STATUS_STYLE[r.status]),
        format_time(summary.get("median_ms")),
        _percent(summary.get("rel_noise"), 1),
    ]
    row += [metric.format(r.metrics.get(metric.key)) for metric in columns]
    if show_resources:
        k = _first_kernel(r)
        row += [
            str(k.get("registers_per_thread", "")),
            str(k.get("static_shared_bytes", "")),
            str(k.get("local_bytes_per_thread", "")),
            _percent(k.get("occupancy"), 0),
        ]
    row.append(note)
    return row
