"""Results → one rich table: time with its spread, bandwidth, GFLOP/s, speedup, % of peak."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from gpubench.results import Result, Status

STATUS_STYLE = {
    Status.OK: "green",
    Status.UNSTABLE: "yellow",
    Status.CRASHED: "bold red",
    Status.TIMEOUT: "bold red",
    Status.INCORRECT: "bold red",
    Status.COMPILE_FAILED: "red",
    Status.LAUNCH_FAILED: "red",
    Status.SKIPPED: "yellow",
}


def format_time(ms: float | None) -> str:
    if ms is None:
        return ""
    if ms < 1:
        return f"{ms * 1e3:.2f} µs"
    if ms < 1000:
        return f"{ms:.3f} ms"
    return f"{ms / 1e3:.3f} s"


def _num(value: float | None, digits: int = 1, suffix: str = "") -> str:
    return "" if value is None else f"{value:,.{digits}f}{suffix}"


def varying_params(results: list[Result]) -> tuple[list[str], dict[str, Any]]:
    """Parameters that differ between results get columns; the rest go in the title."""
    names: list[str] = []
    for r in results:
        names.extend(n for n in r.point if n not in names)
    varying, fixed = [], {}
    for name in names:
        values = {repr(r.point.get(name)) for r in results}
        if len(values) > 1:
            varying.append(name)
        else:
            fixed[name] = results[0].point.get(name)
    return varying, fixed


def _first_kernel(r: Result) -> dict[str, Any]:
    return next(iter(r.kernel_attributes.values()), {}) if r.kernel_attributes else {}


def results_table(
    results: list[Result],
    title: str = "",
    show_resources: bool = False,
    extra_columns: tuple[tuple[str, str, str], ...] = (),
) -> Table:
    varying, fixed = varying_params(results) if results else ([], {})
    fixed_text = ", ".join(f"{k}={v}" for k, v in fixed.items() if v is not None)
    table = Table(title=" · ".join(t for t in (title, fixed_text) if t), title_justify="left")
    for name in varying:
        table.add_column(name, justify="right")
    table.add_column("variant")
    table.add_column("status")
    table.add_column("median", justify="right")
    table.add_column("±noise", justify="right")
    show_gbps = any("gbps" in r.metrics for r in results)
    show_flops = any("gflops" in r.metrics for r in results)
    if show_gbps:
        table.add_column("GB/s", justify="right")
        table.add_column("% peak BW", justify="right")
    if show_flops:
        table.add_column("GFLOP/s", justify="right")
        table.add_column("% peak FP32", justify="right")
    show_elems = any("gelem_per_s" in r.metrics for r in results) and not show_flops
    if show_elems:
        table.add_column("Gelem/s", justify="right")
    table.add_column("speedup", justify="right")
    if show_resources:
        for column in ("regs", "smem", "spill", "occ", "CGMA"):
            table.add_column(column, justify="right")
    for _, header, _ in extra_columns:
        table.add_column(header, justify="right")
    show_vendor = any("pct_of_vendor" in r.metrics for r in results)
    if show_vendor:
        table.add_column("% vendor", justify="right")
    table.add_column("note")

    # Rank only verified results: the fastest verified variant of each point is marked.
    best: dict[tuple, float] = {}
    for r in results:
        if r.status.is_measured and r.median_ms is not None:
            key = tuple(sorted((k, repr(v)) for k, v in r.point.items()))
            best[key] = min(best.get(key, float("inf")), r.median_ms)

    for r in results:
        key = tuple(sorted((k, repr(v)) for k, v in r.point.items()))
        summary = r.summary or {}
        variant = Text(r.variant + (" (base)" if r.variant == r.baseline else ""))
        if r.status.is_measured and r.median_ms == best.get(key):
            variant.stylize("bold")
        note = r.reason.splitlines()[0] if r.reason else ""
        if r.status is Status.UNSTABLE:
            note = f"noise target missed ({summary.get('samples')} samples)"
        if r.status.is_measured and summary.get("discarded"):
            note = f"{note}; {summary['discarded']} throttled samples discarded".lstrip("; ")
        row = [str(r.point.get(n)) for n in varying]
        row += [
            variant,
            Text(str(r.status), style=STATUS_STYLE[r.status]),
            format_time(summary.get("median_ms")),
            _num(100 * summary["rel_noise"], 1, "%") if summary else "",
        ]
        if show_gbps:
            row += [_num(r.metrics.get("gbps")), _num(r.metrics.get("pct_peak_bw"), 1, "%")]
        if show_flops:
            row += [_num(r.metrics.get("gflops")), _num(r.metrics.get("pct_peak_flops"), 1, "%")]
        if show_elems:
            row.append(_num(r.metrics.get("gelem_per_s"), 2))
        row.append(_num(r.metrics.get("speedup"), 2, "x"))
        if show_resources:
            k = _first_kernel(r)
            row += [
                str(k.get("registers_per_thread", "")),
                str(k.get("static_shared_bytes", "")),
                str(k.get("local_bytes_per_thread", "")),
                _num(100 * k["occupancy"], 0, "%") if "occupancy" in k else "",
                _num(r.metrics.get("cgma"), 0),
            ]
        for key, _, fmt in extra_columns:
            value = r.metrics.get(key)
            row.append("" if value is None else fmt.format(value))
        if show_vendor:
            row.append(_num(r.metrics.get("pct_of_vendor"), 1, "%"))
        row.append(note)
        table.add_row(*row)
    return table
