"""The sweep's progress bar: what each column shows, the failure count, and that it clears."""

from __future__ import annotations

import io

from rich.console import Console

from gpubench.model.results import Result, Status
from gpubench.report.progress import ProgressObserver


def _result(variant: str, status: Status, median_ms: float | None = None) -> Result:
    summary = {"median_ms": median_ms} if median_ms is not None else {}
    return Result(suite="s", variant=variant, point={"n": 1}, status=status, summary=summary)


def _terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=120, color_system=None), out


def _line(observer: ProgressObserver) -> str:
    """The bar as one plain line, rendered now."""
    console = Console(file=io.StringIO(), width=120, color_system=None)
    with console.capture() as captured:
        console.print(observer._progress.make_tasks_table(observer._progress.tasks))
    return captured.get().strip()


def test_each_result_advances_the_bar_and_shows_its_variant_status_and_median():
    console, _ = _terminal()
    observer = ProgressObserver(console)
    assert observer.failures == 0
    observer.started(3)
    (task,) = observer._progress.tasks
    assert (task.description, task.total, task.completed, task.fields["last"]) == (
        "sweep",
        3,
        0,
        "",
    )
    assert _line(observer).startswith("sweep ")

    observer.finished(_result("tiled", Status.OK, 1.234567))
    assert task.completed == 1
    assert task.fields["last"] == "tiled ok 1.235 ms"
    line = _line(observer)
    assert line.startswith("sweep ") and line.endswith(" 1/3 0:00:00 tiled ok 1.235 ms")
    assert "━" in line  # the bar itself

    # A measured status without a summary shows no median; a failure none either.
    observer.finished(_result("naive", Status.UNVERIFIED))
    assert task.fields["last"] == "naive unverified"
    observer.finished(_result("[red]x[/red]", Status.INCORRECT, 2.0))
    assert task.completed == 3
    # Variant names are shown as they are, never read as console markup.
    assert task.fields["last"] == "[red]x[/red] incorrect"
    assert _line(observer).endswith(" 3/3 0:00:00 [red]x[/red] incorrect")


def test_failures_are_counted_once_each_and_only_failures():
    console, _ = _terminal()
    observer = ProgressObserver(console)
    observer.started(6)
    for status in (Status.OK, Status.UNSTABLE, Status.SKIPPED, Status.UNVERIFIED):
        observer.finished(_result("v", status, 1.0))
    assert observer.failures == 0
    observer.finished(_result("v", Status.CRASHED))
    observer.finished(_result("v", Status.TIMEOUT))
    assert observer.failures == 2


def test_the_bar_is_cleared_when_the_sweep_ends():
    console, out = _terminal()
    with ProgressObserver(console) as observer:
        observer.started(1)
        observer.finished(_result("tiled", Status.OK, 1.0))
        assert observer._progress.live.is_started
    assert not observer._progress.live.is_started
    # Transient: the last frame is erased, so the table printed after it starts on a clean line.
    assert observer._progress.live.transient is True
    console.print("after")
    assert out.getvalue().rstrip().endswith("after")
    assert "\x1b[2K" in out.getvalue()  # the erase of the bar's line
