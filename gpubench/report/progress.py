"""A rich progress bar that follows a sweep as results arrive."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from gpubench.model.results import Result


class ProgressObserver:
    def __init__(self, console: Console) -> None:
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[last]}", markup=False),  # a variant name as it is
            console=console,
            transient=True,
        )
        self._task = None
        self.failures = 0

    def __enter__(self) -> ProgressObserver:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def started(self, total: int) -> None:
        self._task = self._progress.add_task("sweep", total=total, last="")

    def finished(self, result: Result) -> None:
        if result.status.is_failure:
            self.failures += 1
        last = f"{result.variant} {result.status}"
        if result.status.is_measured and result.summary:
            last += f" {result.summary['median_ms']:.4g} ms"
        self._progress.update(self._task, advance=1, last=last)

    def point_finished(self, results: list[Result]) -> None:
        """Nothing to show: each result advanced the bar as it arrived."""
