"""A sweep's outcome shown and kept: the engine (gpubench.engine.session) measures and returns the
results; this module prints the table, the phases, writes the files the user asked for and
says what the exit code is. `run` and `sweep` both end here."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

from gpubench.engine import spawned
from gpubench.engine.session import (
    Spread,
    SweepOutcome,
    ignore_interrupts,
    measure,
    protect_outputs,
)
from gpubench.errors import EXIT_FAILED_POINTS, EXIT_INTERRUPTED, EXIT_OK
from gpubench.load.config import SweepSpec
from gpubench.model import results
from gpubench.report import notices
from gpubench.report.plain import say
from gpubench.store import outputs


def execute(
    spec: SweepSpec,
    request: outputs.OutputRequest,
    device: int,
    console: Any,
    err: Any,
    spread: Spread | None = None,
) -> int:
    """Measure the sweep (notes and the progress bar on `err`), then show and keep it; the
    exit code. The workers' exits (their CUDA contexts torn down) run while the table is
    printed: they are waited for at the end."""
    try:
        outcome = measure(
            spec,
            request,
            spread or Spread(device=device),
            note=notes_to(err),
            observers=(outputs.results_log, *_progress_bar(err)),
        )
        if outcome.interrupted:  # to the exit (130): a second Ctrl-C must not cost the files
            ignore_interrupts()
        with protect_outputs():  # nor one that comes while they are written
            show(outcome, console)
            return save(outcome, err)
    finally:
        # Killed already: a Ctrl-C here leaves their exits to the interpreter's, and the exit
        # code stays what the run earned.
        with contextlib.suppress(KeyboardInterrupt):
            spawned.wait_for_stopped()


def notes_to(console: Any) -> Any:
    """The engine's notices, each worded as one plain line on `console` (report.notices)."""
    return lambda notice: say(console, notices.text(notice))


def _progress_bar(err: Any) -> tuple[Any, ...]:
    """A progress bar on a terminal, where the output plan wants one; nothing in a log or a
    pipe."""
    if not sys.stderr.isatty():
        return ()

    def bar(files: outputs.OutputPlan, header: dict[str, Any]) -> Any:
        from gpubench.report.progress import ProgressObserver

        return ProgressObserver(err) if files.progress else None

    return (bar,)


def show(outcome: SweepOutcome, console: Any) -> None:
    """The results table (and its markdown, timeline and phases, where asked for)."""
    result_set, files = outcome.result_set, outcome.files
    if result_set.results:
        table = _table(outcome)
        console.print(table)
        if files.markdown:
            _write_markdown(outcome, table)
        if files.timeline is not None:
            from gpubench.report import timeline

            timeline.show(result_set.results, console, files.timeline or None)
    if files.verbose:
        from gpubench.report import phases

        if outcome.fresh:
            console.print(phases.phases_table(outcome.fresh))
        line = phases.summary_line(phases.share(outcome.fresh, outcome.wall_s))
        console.print(line, highlight=False)
        from gpubench.report.schedule import schedule_lines

        for line in schedule_lines(outcome.fresh, outcome.started_at):
            console.print(line, highlight=False)


def _table(outcome: SweepOutcome) -> Any:
    from gpubench.report.results_table import results_table

    bench = outcome.bench
    return results_table(
        outcome.result_set.results,
        title=bench.name,
        show_resources=bench.show_resources,
        extra_metrics=bench.metrics,
    )


def _write_markdown(outcome: SweepOutcome, table: Any) -> None:
    from gpubench.report import markdown

    result_set = outcome.result_set
    failed = len(result_set.failures)
    notes = [f"{failed} of {len(result_set.results)} result(s) failed"] if failed else []
    heading = f"gpubench: {outcome.bench.name}"
    device = markdown.device_line(result_set.environment, result_set.created)
    markdown.write(outcome.files.markdown, markdown.document(heading, device, [table], notes))


def save(outcome: SweepOutcome, err: Any) -> int:
    """The files asked for (JSON, CSV, the history store), a line naming them; the exit
    code: interrupted, some result failed, or all well."""
    keep_files(outcome.result_set, outcome.files, err)
    return exit_code(outcome, err)


def keep_files(
    result_set: results.ResultSet,
    files: outputs.OutputPlan,
    err: Any,
    source: str = "gpubench run",
) -> None:
    """The JSON, CSV and history store the plan asks for, and a line naming them (`source`:
    the command, as the history store records it)."""
    if files.json:
        results.save_json(result_set, files.json)
        if note := results.read_back_note(files.json):
            say(err, note)
    if files.csv:
        results.save_csv(result_set, files.csv)
    if files.history:
        from gpubench.store.history import History

        with History.open(files.history) as store:
            run_id = store.append(result_set, label=files.label, source=source)
        say(err, f"history: run {run_id} in {files.history}")
    if files.files:
        say(err, f"results: {', '.join(files.files)}")


def exit_code(outcome: SweepOutcome, err: Any) -> int:
    result_set = outcome.result_set
    if outcome.interrupted:
        err.print(f"interrupted: kept {len(result_set.results)} finished result(s)")
        return EXIT_INTERRUPTED
    failures = result_set.failures
    if failures:
        err.print(f"[bold red]{len(failures)} of {len(result_set.results)} result(s) failed[/]")
        return EXIT_FAILED_POINTS
    return EXIT_OK
