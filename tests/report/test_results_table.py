"""The results table's notes about the clock (no GPU)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from gpubench.model.results import Result, Status
from gpubench.report.results_table import format_time, results_table
from tests import snapshots

PINNED = Path(__file__).parent / "tables"


def _text(results: list[Result]) -> str:
    console = Console(width=300, record=True)
    console.print(results_table(results))
    return console.export_text()


def _result(**summary) -> Result:
    base = {"median_ms": 1.5, "min_ms": 1.4, "rel_noise": 0.01, "samples": 10, "discarded": 0}
    return Result(suite="ceilings", variant="tensor_fp16", point={"gemm_size": 8192},
                  status=Status.OK, summary={**base, **summary},
                  metrics={"gflops": 700000.0})  # fmt: skip


def test_a_capped_clock_is_named_with_the_clock_it_held():
    text = _text([_result(clock_mhz=1455.0, clock_capped=True)])
    assert "clock capped at 1,455 MHz" in text and "dropped" not in text
    text = _text([_result(clock_mhz=1650.0, clock_capped=True, discarded=115)])
    assert "clock capped at 1,650 MHz (115 samples at a higher clock dropped)" in text
    assert "throttled" not in text


def test_an_uncapped_clock_and_discarded_samples_say_so_without_a_cap():
    text = _text([_result(clock_mhz=1980.0, clock_capped=False, discarded=3)])
    assert "3 throttled samples discarded" in text and "capped" not in text


# -- the whole table, pinned (tests/report/tables/results_*.txt) ------------------------------
def _many() -> list[Result]:
    """Two points (n varies, tile fixed, a None-valued parameter left out of the title) on two
    GPU models; every status; times in µs, ms and s; metrics shown and hidden."""

    def r(variant, status, n, median=None, gpu=("H100", 0), **more):
        summary = None if median is None else {
            "median_ms": median, "rel_noise": more.pop("noise", 0.0123), "samples": 10,
            **more.pop("summary", {})}  # fmt: skip
        return Result(suite="s", variant=variant, point={"n": n, "tile": 32, "opt": None},
                      status=status, baseline="naive", summary=summary,
                      device={"index": gpu[1], "name": gpu[0]}, reason=more.pop("reason", ""),
                      metrics=more.pop("metrics", {}),
                      kernel_attributes=more.pop("attrs", {}))  # fmt: skip

    attrs = {"k": {"registers_per_thread": 40, "static_shared_bytes": 4096,
                   "local_bytes_per_thread": 0, "occupancy": 0.625}}  # fmt: skip
    return [
        r(
            "naive",
            Status.OK,
            1000,
            0.5,
            metrics={"gbps": 1234.5, "speedup": 1.0, "gelem_per_s": 2.0},
            attrs=attrs,
        ),
        r(
            "fast",
            Status.OK,
            1000,
            0.25,
            metrics={"gbps": 2469.0, "speedup": 2.0},
            summary={"discarded": 3},
        ),
        r("wobbly", Status.UNSTABLE, 1000, 0.2, noise=0.2, summary={"samples": 40}),
        r("wrong", Status.INCORRECT, 1000, 0.1, reason="max error 1.0\nat element 7"),
        r("big", Status.SKIPPED, 1000, reason="needs 99 GB"),
        r("naive", Status.OK, 4096, 1500.0, gpu=("A100", 1), metrics={"gelem_per_s": 3.5}),
        r(
            "fast",
            Status.OK,
            4096,
            12.5,
            gpu=("A100", 1),
            summary={"clock_capped": True, "clock_mhz": 1455.0, "discarded": 2},
        ),
        r("slow", Status.OK, 4096, 999.9, gpu=("A100", 1), summary={"clock_capped": True}),
        r("broken", Status.COMPILE_FAILED, 4096, gpu=("A100", 1), reason="nvcc: error"),
        r("lone", Status.UNVERIFIED, 4096, 20.0, gpu=("A100", 1)),
    ]


def test_the_results_table_pinned_with_every_branch():
    results = _many()
    snapshots.matches(PINNED / "results_many.txt",
                      snapshots.table_text(results_table(results, title="s · run")))  # fmt: skip
    snapshots.matches(PINNED / "results_resources.txt", snapshots.table_text(
        results_table(results[:2], show_resources=True)))  # fmt: skip


def test_one_model_one_point_and_no_results():
    one = _many()[:2]
    snapshots.matches(PINNED / "results_one_point.txt", snapshots.table_text(results_table(one)))
    empty = results_table([], title="nothing")
    assert snapshots.table_text(empty).splitlines()[0].startswith("title='nothing'")
    assert [str(c.header) for c in empty.columns] == [
        "variant",
        "status",
        "median",
        "±noise",
        "note",
    ]


@pytest.mark.parametrize(("ms", "text"), [
    (None, ""), (0.0001, "0.10 µs"), (0.99949, "999.49 µs"), (1.0, "1.000 ms"),
    (999.9994, "999.999 ms"), (1000.0, "1.000 s"), (12345.6, "12.346 s"),
])  # fmt: skip
def test_time_formats_at_their_boundaries(ms, text):
    assert format_time(ms) == text


def test_a_note_that_starts_with_a_letter_x_and_a_gpu_that_did_not_say_its_name():
    def r(variant, device, reason, **summary):
        return Result(suite="s", variant=variant, point={"n": 1}, status=Status.OK, reason=reason,
                      device=device, summary={"median_ms": 1.0, "rel_noise": 0.0, **summary})  # fmt: skip

    table = results_table([
        r("a", {"name": "A100"}, "X-ray", clock_capped=True),
        r("b", {"index": 2}, "Xeon host", discarded=4),
    ])  # fmt: skip
    columns = {str(c.header): [str(cell) for cell in c.cells] for c in table.columns}
    assert columns["gpu"] == ["?: A100", "2: ?"]
    assert columns["note"] == ["X-ray; clock capped", "Xeon host; 4 throttled samples discarded"]


def test_a_suite_s_own_metric_gets_its_column():
    from gpubench.model.metrics import Metric

    result = Result(suite="s", variant="a", point={"n": 1}, status=Status.OK,
                    summary={"median_ms": 1.0, "rel_noise": 0.0}, metrics={"mine": 2.5})  # fmt: skip
    table = results_table([result], extra_metrics=(Metric("mine", "my rate", "u/s", "{:.2f}"),))
    columns = {str(c.header): [str(cell) for cell in c.cells] for c in table.columns}
    assert columns["my rate"] == ["2.50"]


def test_an_unknown_noise_or_occupancy_is_blank_not_a_traceback():
    # One sample: its noise is infinite in a live run and null once read back from a log
    # (a resumed sweep renders both); a file of another tool may lack it or the occupancy.
    rows = [_result(rel_noise=value) for value in (None, float("inf"), float("nan"), "x", True)]
    rows.append(Result(suite="ceilings", variant="tensor_fp16", point={"gemm_size": 1},
                       status=Status.OK, summary={"median_ms": 1.5},
                       kernel_attributes={"k": {"occupancy": None}}))  # fmt: skip
    console = Console(width=300, record=True)
    console.print(results_table(rows, show_resources=True))
    lines = [line for line in console.export_text().splitlines() if "tensor_fp16" in line]
    assert len(lines) == 6 and not any("%" in line for line in lines)
    known = _text([_result(rel_noise=0.01234)])
    assert "1.2%" in known and "1.23%" not in known


def test_a_percentage_of_an_unknown_fraction_is_empty():
    from gpubench.report.results_table import _percent

    assert [_percent(v, 1) for v in (None, float("inf"), float("nan"), "x", True)] == [""] * 5
    assert (_percent(0.5, 0), _percent(0.01234, 1)) == ("50%", "1.2%")
