"""Where the wall time went (`--verbose`): each result's host-side phases, and the share of
the run the GPU spent in timed runs. Renders data only; the phases are recorded by the runner
(gpubench.model.phases)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from gpubench.model.phases import POINT_PHASES, TIMING_LOOP, VARIANT_PHASES
from gpubench.model.results import Result, point_key
from gpubench.report.plain import PlainTable as Table

# More results than this: one row per variant (summed over points) instead of per result.
PER_RESULT_ROWS = 40


@dataclass(frozen=True)
class TimeShare:
    """The run's wall time, the host phases summed, and the GPU's timed work."""

    wall_s: float
    point_s: dict[str, float]
    variant_s: dict[str, float]
    timed_gpu_s: float

    @property
    def gpu_share(self) -> float:
        return self.timed_gpu_s / self.wall_s if self.wall_s > 0 else 0.0


def timed_gpu_seconds(result: Result) -> float:
    """GPU time inside the timed samples of one result (every run of every kept sample)."""
    summary = result.summary or {}
    runs = summary.get("samples", 0) * (summary.get("runs_per_sample") or 1)
    return runs * (summary.get("mean_ms") or 0.0) / 1000.0


def share(results: list[Result], wall_s: float) -> TimeShare:
    """Point phases count once per point (every result of a point carries them; the last
    one has them all), variant phases once per result."""
    last_of_point: dict[str, dict[str, float]] = {}
    variant: dict[str, float] = defaultdict(float)
    for result in results:
        last_of_point[point_key(result.point)] = result.phases.get("point", {})
        for name, seconds in result.phases.get("variant", {}).items():
            variant[name] += seconds
    point: dict[str, float] = defaultdict(float)
    for phases in last_of_point.values():
        for name, seconds in phases.items():
            point[name] += seconds
    gpu = sum(timed_gpu_seconds(r) for r in results)
    return TimeShare(wall_s, dict(point), dict(variant), gpu)


def timing_split(results: list[Result]) -> tuple[dict[str, float], float]:
    """The timing loop's split (gpubench.model.phases.TIMING_PARTS) summed over the results that
    have one, and their timing phase summed; the GPU's time between samples only where every
    one of them has it."""
    timed = [r for r in results if TIMING_LOOP in r.phases]
    summed: dict[str, float] = defaultdict(float)
    for r in timed:
        for name, value in r.phases[TIMING_LOOP].items():
            summed[name] += value
    if not all("gpu_between" in r.phases[TIMING_LOOP] for r in timed):
        summed.pop("gpu_between", None)
        summed.pop("gpu_flush", None)
    timing_s = sum(r.phases.get("variant", {}).get("timing", 0.0) for r in timed)
    return dict(summed), timing_s


def timing_line(results: list[Result]) -> str | None:
    """Where the timing phase went (the table's caption): the GPU in timed intervals,
    flushing and between samples (where the events say), the host reading the clock and in
    the stopping rule, and the rest (waiting for each batch to end, reading its events,
    enqueuing the next). The host time of the restores between the samples of a batch is the
    audit's, though the GPU's span covers it: where it outweighs the rest, the rest shows 0.
    Where batches were enqueued ahead, the host read the clock and ran the rule while the GPU
    ran the next batch: the rest is then the GPU's time outside its batches."""
    loop, timing_s = timing_split(results)
    if not loop or timing_s <= 0:
        return None
    gpu = loop["gpu_timed"]
    between = loop.get("gpu_flush", 0.0) + loop.get("gpu_between", 0.0)
    host = loop["clock_reads"] + loop["stopping_rule"]
    ahead, thrown = loop.get("batches_ahead", 0.0), loop.get("batches_thrown", 0.0)
    overlapped = bool(ahead) and "gpu_between" in loop
    rest = max(0.0, timing_s - gpu - between - (0.0 if overlapped else host))
    if "gpu_between" in loop:
        gpu_part = (
            f", flushing L2 {seconds_text(loop['gpu_flush'])}, between samples "
            f"{seconds_text(loop['gpu_between'])}"
        )
    else:
        gpu_part = " (between samples: not measured by this backend)"
    batches = f"{loop['samples']:,.0f} samples in {loop['batches']:,.0f} batches"
    rest_part = f", the rest (waiting for batches, enqueuing) {seconds_text(rest)}"
    if overlapped:
        batches += f", {ahead:,.0f} enqueued ahead ({thrown:,.0f} run for no sample)"
        rest_part = (
            ", partly while the GPU ran a batch enqueued ahead; the GPU outside its batches "
            f"(waiting for the host) {seconds_text(rest)}"
        )
    return (
        f"timing {seconds_text(timing_s)}, {batches}: the GPU in timed intervals "
        f"{seconds_text(gpu)} ({100 * gpu / timing_s:.1f}%){gpu_part}; the host reading the "
        f"clock {seconds_text(loop['clock_reads'])}, in the stopping rule "
        f"{seconds_text(loop['stopping_rule'])}{rest_part}"
    )


def seconds_text(value: float | None) -> str:
    if value is None:
        return ""
    if value < 0.01:
        return f"{value * 1000:.1f} ms"
    return f"{value * 1000:,.0f} ms" if value < 1 else f"{value:,.2f} s"


def phases_table(results: list[Result]) -> Table:
    per_result = len(results) <= PER_RESULT_ROWS
    table = Table(
        title="host time per phase" + ("" if per_result else " (summed per variant)"),
        title_justify="left",
    )
    table.add_column("point" if per_result else "points")
    table.add_column("variant")
    for name in (*POINT_PHASES, *VARIANT_PHASES):
        table.add_column(name.replace("_", " "), justify="right")
    table.caption = timing_line(results)
    table.caption_justify = "left"
    rows: list[tuple[str, str, dict[str, float], dict[str, float]]] = []
    if per_result:
        last = {point_key(r.point): i for i, r in enumerate(results)}
        for i, r in enumerate(results):
            # A point's phases on its last row, where they are complete.
            point = r.phases.get("point", {}) if last[point_key(r.point)] == i else {}
            rows.append((_point_label(r.point), r.variant, point, r.phases.get("variant", {})))
    else:
        grouped: dict[str, list[Result]] = defaultdict(list)
        for r in results:
            grouped[r.variant].append(r)
        for name, group in grouped.items():
            totals = share(group, 0.0)
            points = len({point_key(r.point) for r in group})
            rows.append((str(points), name, totals.point_s, totals.variant_s))
    for label, variant, point, own in rows:
        table.add_row(
            label,
            variant,
            *(seconds_text(point.get(n)) for n in POINT_PHASES),
            *(seconds_text(own.get(n)) for n in VARIANT_PHASES),
        )
    return table


def summary_line(time_share: TimeShare) -> str:
    host = {**time_share.point_s}
    for name, seconds in time_share.variant_s.items():
        host[name] = host.get(name, 0.0) + seconds
    biggest = sorted(host.items(), key=lambda item: -item[1])[:4]
    spent = ", ".join(f"{name.replace('_', ' ')} {seconds_text(s)}" for name, s in biggest)
    return (
        f"wall {seconds_text(time_share.wall_s)}; the GPU spent {seconds_text(time_share.timed_gpu_s)} "
        f"in timed runs ({100 * time_share.gpu_share:.1f}%); most host time: {spent}"
    )


def _point_label(point: dict[str, Any]) -> str:
    text = ", ".join(f"{k}={v}" for k, v in point.items())
    return text if len(text) <= 40 else text[:39] + "…"
