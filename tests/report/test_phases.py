"""Where the wall time went (--verbose): the sums, the GPU's share, the table (per result and
summed per variant) and the summary line, exact, for results whose phases are made up here."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpubench.model import phases as clock
from gpubench.model.results import Result, Status
from gpubench.report import phases
from tests import snapshots


def result(variant, n, point=None, own=None, samples=10, runs=2, mean_ms=1.5):
    return Result(suite="s", variant=variant, point={"n": n}, status=Status.OK,
                  summary={"samples": samples, "runs_per_sample": runs, "mean_ms": mean_ms},
                  phases={"point": point or {}, "variant": own or {}})  # fmt: skip


# Two points; each point's phases grow as its variants run: the last result holds them all.
RESULTS = [
    result("a", 1, {"compile": 0.5}, {"prepare": 0.001, "timing": 0.25}),
    result("b", 1, {"compile": 0.5, "inputs": 2.0}, {"timing": 0.5, "check": 0.004}),
    result("a", 2, {"inputs": 3.0, "reference": 1.25}, {"timing": 1.0}, samples=4, runs=None),
    result("b", 2, {"inputs": 3.0, "reference": 1.25, "uploads": 0.0}, {}, mean_ms=None),
]


def test_timed_gpu_seconds_count_every_run_of_every_kept_sample():
    assert phases.timed_gpu_seconds(RESULTS[0]) == pytest.approx(10 * 2 * 1.5e-3)
    assert phases.timed_gpu_seconds(RESULTS[2]) == pytest.approx(4 * 1 * 1.5e-3)  # runs unknown
    assert phases.timed_gpu_seconds(RESULTS[3]) == 0.0
    assert phases.timed_gpu_seconds(Result(suite="s", variant="x", point={},
                                           status=Status.CRASHED)) == 0.0  # fmt: skip


def test_point_phases_count_once_per_point_and_variant_phases_once_per_result():
    share = phases.share(RESULTS, wall_s=20.0)
    assert share.point_s == {"compile": 0.5, "inputs": 5.0, "reference": 1.25, "uploads": 0.0}
    assert share.variant_s == pytest.approx({"prepare": 0.001, "timing": 1.75, "check": 0.004})
    assert share.timed_gpu_s == pytest.approx(0.03 + 0.03 + 0.006)
    assert share.gpu_share == pytest.approx(0.066 / 20.0)
    assert phases.share(RESULTS, wall_s=0.0).gpu_share == 0.0


@pytest.mark.parametrize(("seconds", "text"), [
    (None, ""), (0.0, "0.0 ms"), (0.00999, "10.0 ms"), (0.01, "10 ms"), (0.9994, "999 ms"),
    (0.99996, "1,000 ms"), (1.0, "1.00 s"), (1234.567, "1,234.57 s"),
])  # fmt: skip
def test_seconds_are_shown_in_the_unit_that_reads_best(seconds, text):
    assert phases.seconds_text(seconds) == text


def test_the_summary_line_names_the_four_biggest_host_phases():
    line = phases.summary_line(phases.share(RESULTS, wall_s=20.0))
    assert line == ("wall 20.00 s; the GPU spent 66 ms in timed runs (0.3%); most host time: "
                    "inputs 5.00 s, timing 1.75 s, reference 1.25 s, compile 500 ms")  # fmt: skip


def test_the_table_per_result_and_summed_per_variant(monkeypatch):
    pinned = Path(__file__).parent / "tables"
    snapshots.matches(pinned / "phases_per_result.txt",
                      snapshots.table_text(phases.phases_table(RESULTS)))  # fmt: skip
    monkeypatch.setattr(phases, "PER_RESULT_ROWS", 3)
    snapshots.matches(pinned / "phases_per_variant.txt",
                      snapshots.table_text(phases.phases_table(RESULTS)))  # fmt: skip


def test_long_points_are_cut_at_forty_characters():
    assert phases._point_label({"n": 1, "tile": 32}) == "n=1, tile=32"
    long = {f"p{i}": 1000 + i for i in range(6)}  # 53 characters in full
    assert phases._point_label(long) == "p0=1000, p1=1001, p2=1002, p3=1003, p4=…"
    assert len(phases._point_label(long)) == 40
    assert phases._point_label({"a": "x" * 38}) == "a=" + "x" * 38  # 40: kept whole


def test_the_phase_clock_adds_spans_and_orders_known_phases_first():
    timer = clock.PhaseClock()
    timer.add("timing", 0.25)
    timer.add("timing", 0.5)
    timer.add("zzz", 1e-7)
    with timer.phase("prepare"):
        pass
    assert timer.seconds["timing"] == 0.75 and timer.seconds["prepare"] >= 0.0
    assert timer.snapshot()["zzz"] == 0.0 and timer.snapshot()["timing"] == 0.75
    assert clock.total({"a": 1.0, "b": 0.5}) == 1.5
    assert clock.ordered({"x": 1.0, "timing": 2.0, "prepare": 3.0}, clock.VARIANT_PHASES) == [
        ("prepare", 3.0),
        ("timing", 2.0),
        ("x", 1.0),
    ]


def test_the_edges_of_the_labels_the_units_and_the_per_result_table():
    assert phases._point_label({"a": "x" * 39}) == "a=" + "x" * 37 + "…"  # 41: cut
    assert phases.seconds_text(0.004449) == "4.4 ms"
    forty = [result("a", n, {"compile": 0.1}, {"timing": 0.2}) for n in range(40)]
    assert str(phases.phases_table(forty).title) == "host time per phase"
    assert str(phases.phases_table([*forty, result("a", 40)]).title) == (
        "host time per phase (summed per variant)"
    )
    bare = Result(suite="s", variant="v", point={"n": 1}, status=Status.SKIPPED, phases={})
    assert phases.share([bare], wall_s=1.0).point_s == {}
    table = snapshots.table_text(phases.phases_table([bare]))
    assert "v" in table and "n=1" in table


def test_a_summary_without_samples_timed_nothing():
    bare = Result(suite="s", variant="x", point={}, status=Status.OK,
                  summary={"runs_per_sample": 2, "mean_ms": 1.5})  # fmt: skip
    assert phases.timed_gpu_seconds(bare) == 0.0


def test_the_summary_line_adds_a_phase_of_both_kinds_and_spells_it_in_words():
    share = phases.TimeShare(point_s={"checked_run": 1.0, "inputs": 0.5},
                             variant_s={"checked_run": 2.0, "check": 0.25},
                             wall_s=8.0, timed_gpu_s=4.0)  # fmt: skip
    assert phases.summary_line(share) == (
        "wall 8.00 s; the GPU spent 4.00 s in timed runs (50.0%); most host time: checked run "
        "3.00 s, inputs 500 ms, check 250 ms")  # fmt: skip


def _timed(timing_s, **loop):
    parts = {"clock_reads": 0.001, "stopping_rule": 0.002, "batches": 3.0, "samples": 20.0}
    return Result(
        suite="s",
        variant="v",
        point={"n": 1},
        status=Status.OK,
        phases={"point": {}, "variant": {"timing": timing_s}, clock.TIMING_LOOP: {**parts, **loop}},
    )


def test_the_timing_caption_splits_the_timing_phase_where_the_events_say():
    results = [
        _timed(0.5, gpu_timed=0.3, gpu_flush=0.05, gpu_between=0.02),
        _timed(0.25, gpu_timed=0.1, gpu_flush=0.0, gpu_between=0.01),
    ]
    assert phases.timing_line(results) == (
        "timing 750 ms, 40 samples in 6 batches: the GPU in timed intervals 400 ms (53.3%), "
        "flushing L2 50 ms, between samples 30 ms; the host reading the clock 2.0 ms, in the "
        "stopping rule 4.0 ms, the rest (waiting for batches, enqueuing) 264 ms"
    )
    assert phases.phases_table(results).caption == phases.timing_line(results)


def test_the_timing_caption_counts_the_gpus_time_outside_its_batches_where_batches_went_ahead():
    """The host's clock reads and rule ran partly under the GPU's batches: the rest is the
    timing phase less the GPU's time in its batches (750 - 400 - 80 ms), not less the host's
    work too."""
    ahead = {"gpu_timed": 0.3, "gpu_flush": 0.05, "gpu_between": 0.02}
    results = [
        _timed(0.5, **ahead, batches_ahead=2.0, batches_thrown=1.0),
        _timed(0.25, gpu_timed=0.1, gpu_flush=0.0, gpu_between=0.01, batches_ahead=0.0),
    ]
    assert phases.timing_line(results) == (
        "timing 750 ms, 40 samples in 6 batches, 2 enqueued ahead (1 run for no sample): the GPU "
        "in timed intervals 400 ms (53.3%), flushing L2 50 ms, between samples 30 ms; the host "
        "reading the clock 2.0 ms, in the stopping rule 4.0 ms, partly while the GPU ran a "
        "batch enqueued ahead; the GPU outside its batches (waiting for the host) 270 ms"
    )
    none_ahead = [_timed(0.5, **ahead, batches_ahead=0.0, batches_thrown=0.0)]
    assert phases.timing_line(none_ahead).endswith(
        "in the stopping rule 2.0 ms, the rest (waiting for batches, enqueuing) 127 ms"
    )


def test_the_timing_caption_says_what_a_backend_did_not_measure_and_skips_untimed_results():
    untimed = result("host", 1, own={"timing": 9.0})  # a host variant: no loop split
    results = [
        _timed(0.5, gpu_timed=0.3, gpu_flush=0.05, gpu_between=0.02),
        _timed(0.25, gpu_timed=0.1),
        untimed,
    ]
    assert phases.timing_line(results) == (
        "timing 750 ms, 40 samples in 6 batches: the GPU in timed intervals 400 ms (53.3%) "
        "(between samples: not measured by this backend); the host reading the clock 2.0 ms, "
        "in the stopping rule 4.0 ms, the rest (waiting for batches, enqueuing) 344 ms"
    )
    assert phases.timing_line([untimed]) is None and phases.phases_table(RESULTS).caption is None
