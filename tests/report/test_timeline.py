"""Timelines of one run: the text Gantt chart character by character, and the picture (what
is drawn, pinned: tests/report/figures/timeline.txt)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from gpubench.model.results import Result, Status
from gpubench.report import timeline
from tests import snapshots


def _span(op, stream, start, end):
    return {"op": op, "stream": stream, "start_ms": start, "end_ms": end, "label": op}


def _result(variant="overlapped", spans=None):
    spans = spans if spans is not None else [
        _span("H2D", 1, 0.0, 1.0), _span("kernel", 1, 1.0, 2.5), _span("D2H", 1, 2.5, 3.0),
        _span("H2D", 2, 1.0, 2.0), _span("kernel", 2, 2.5, 4.0), _span("D2H", 2, 4.0, 5.0),
        _span("D2D", 0, 0.0, 0.5), _span("library", 0, 4.5, 4.75), _span("repeat", 0, 0.5, 0.5),
        _span("unknown-op", 3, 2.0, 2.0),
    ]  # fmt: skip
    return Result(suite="streams", variant=variant, point={"size": 64, "streams": 2},
                  status=Status.OK, timeline=spans)  # fmt: skip


def test_the_text_chart_puts_each_span_in_its_columns():
    chart = timeline.text_chart(_result(), width=21)
    assert chart.splitlines() == [
        "overlapped: 5.00 ms  (▶ host→device  █ kernel  ◀ device→host  = device→device  "
        "▒ library call  ↻ repeat until converged)",
        # 4 columns a millisecond; a later span overwrites the column it shares
        "       stream 1 |▶▶▶▶██████◀◀◀        |",
        "       stream 2 |    ▶▶▶▶▶ ██████◀◀◀◀◀|",
        "       stream 3 |        #            |",
        "  timing stream |==↻               ▒▒ |",
    ]


def test_a_run_that_took_no_time_still_draws_and_none_without_spans():
    chart = timeline.text_chart(_result(spans=[_span("kernel", 0, 0.0, 0.0)]), width=5)
    assert chart.splitlines() == ["overlapped: 0.00 ms  (█ kernel)", "  timing stream |█    |"]
    assert timeline.text_chart(_result(spans=[])) == ""


def test_the_picture_is_the_pinned_one_and_show_prints_then_draws(monkeypatch):
    saved = snapshots.SavedFigures.instead_of_savefig(monkeypatch)
    console = Console(width=200, record=True, file=io.StringIO())
    results = [_result(), _result("serial", [_span("kernel", 0, 0.0, 2.0)]),
               _result("empty", [])]  # fmt: skip
    timeline.show(results, console, "t.png")
    text = console.export_text()
    assert text.count("overlapped: 5.00 ms") == 1 and "serial: 2.00 ms" in text
    assert text.rstrip().endswith("timeline: t.png")
    ((path, drawn),) = saved.saved
    assert path == "t.png"
    snapshots.matches(Path(__file__).parent / "figures" / "timeline.txt", drawn)
    saved.saved.clear()
    timeline.show(results, console, None)
    assert saved.saved == []


def test_a_picture_of_kernels_only_has_a_legend_of_kernels_only(monkeypatch):
    saved = snapshots.SavedFigures.instead_of_savefig(monkeypatch)
    timeline.draw_png([_result("serial", [_span("kernel", 0, 0.0, 2.0)])], "k.png")
    ((path, drawn),) = saved.saved
    assert path == "k.png" and "figure legend ['kernel'] ['#ff7f0eff'] loc=1" in drawn


def test_show_prints_the_chart_and_the_path_as_plain_text_on_a_colour_terminal(monkeypatch):
    saved = snapshots.SavedFigures.instead_of_savefig(monkeypatch)
    out = io.StringIO()
    console = Console(width=200, file=out, force_terminal=True, color_system="standard")
    result = _result("[bold]v", [_span("kernel", 0, 0.0, 2.0)])
    timeline.show([result], console, "[red]t 1.png")
    assert out.getvalue().splitlines() == [
        "[bold]v: 2.00 ms  (█ kernel)",
        "  timing stream |" + "█" * 100 + "|",
        "timeline: [red]t 1.png",
    ]
    assert [path for path, _ in saved.saved] == ["[red]t 1.png"]


def test_drawing_a_timeline_without_matplotlib_is_one_line(monkeypatch):
    import sys

    from gpubench.errors import EnvironmentProblem

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails, as when not installed
    with pytest.raises(EnvironmentProblem) as info:
        timeline.draw_png([], "t.png")
    assert (
        str(info.value)
        == "drawing a timeline needs matplotlib: pip install 'gpubench-studies[plot]'"
    )
