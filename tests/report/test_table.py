"""The results table's notes about the clock (no GPU)."""

from __future__ import annotations

from rich.console import Console

from gpubench.report.table import results_table
from gpubench.results import Result, Status


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
