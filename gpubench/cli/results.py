"""Commands over results files: compare (the CI gate) and merge; roofline and plot draw them
(gpubench.cli.charts)."""

from __future__ import annotations

from typing import Any

import click

from gpubench.cli.common import (
    CHANGE_THRESHOLD,
    EXIT_CODES_HELP,
    err_console,
    out_console,
)
from gpubench.errors import EXIT_FAILED_POINTS, EXIT_OK, ConfigError


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("base_path", metavar="BASE", type=click.Path(dir_okay=False))
@click.argument("new_path", metavar="NEW", type=click.Path(dir_okay=False))
@click.option(
    "--threshold",
    default=CHANGE_THRESHOLD,
    show_default=True,
    type=float,
    help="Smallest relative change that counts (a change must also exceed twice the noise).",
)
@click.option(
    "--metric",
    default="time_ms",
    show_default=True,
    help="Which metric to compare: time_ms, or any metric key of the results "
    "(gbps, gflops, energy_mj, ...); its declared direction says what a regression is.",
)
@click.option(
    "--energy",
    is_flag=True,
    help="Compare the energy per run (--metric energy_mj), judged against the energy "
    "readings' own noise; a reading the base has and the new run lacks is a regression, a "
    "pair whose base has none is not comparable.",
)
@click.option(
    "--markdown",
    "markdown_path",
    type=click.Path(dir_okay=False),
    help="Also write the comparison as GitHub-flavoured markdown.",
)
@click.option(
    "--suite-threshold",
    "suite_thresholds",
    multiple=True,
    metavar="SUITE=FRACTION",
    help="A threshold for one suite's results (repeatable), e.g. transpose=0.10.",
)
@click.option(
    "--changes-only",
    is_flag=True,
    help="List only the pairs that changed (the terminal table and the markdown); "
    "the counts and the exit code still judge every pair.",
)
def compare(
    base_path: str,
    new_path: str,
    threshold: float,
    metric: str,
    energy: bool,
    markdown_path: str | None,
    suite_thresholds: tuple[str, ...],
    changes_only: bool,
) -> None:
    """Compare two results files point by point: exit 3 if anything got slower (or, with
    --metric or --energy, worse). Regressions are listed first, then results of BASE with no partner,
    then the other changes.

    Each file may be JSON (--json) or a JSON-lines log (--jsonl, a sweep's default output).

    \b
    Examples:
      gpubench compare results/before.json results/after.json --threshold 0.02
      gpubench compare results/transpose.jsonl results/transpose-new.jsonl
      gpubench compare results/before.json results/after.json --metric gbps
      gpubench compare results/before.json results/after.json --energy
    """
    from gpubench import api

    if energy:
        metric = _energy_metric(metric)
    if markdown_path is not None:  # '' too: check_writable refuses it in one line
        from gpubench.store.outputs import check_writable

        check_writable(markdown_path, "--markdown")
    result = api.compare(
        base_path, new_path, threshold, metric, api.parse_suite_thresholds(suite_thresholds)
    )
    table, notes, verdict = _show_comparison(result, base_path, new_path, changes_only)
    if markdown_path is not None:
        from gpubench.report import markdown

        device = markdown.device_line(result.new.environment, result.new.created)
        heading = f"gpubench compare: {verdict}"
        markdown.write(markdown_path, markdown.document(heading, device, [table], notes))
    click.get_current_context().exit(EXIT_FAILED_POINTS if result.failed else EXIT_OK)


def _energy_metric(metric: str) -> str:
    """--energy's metric: energy per run, unless --metric names another one."""
    from click.core import ParameterSource

    from gpubench.model.metrics import ENERGY

    given = click.get_current_context().get_parameter_source("metric")
    if given is not ParameterSource.DEFAULT and metric != ENERGY.key:
        raise ConfigError(
            f"--energy compares {ENERGY.key}: leave out --metric {metric}", key="--energy"
        )
    return ENERGY.key


def _show_comparison(
    result: Any, base_path: str, new_path: str, changes_only: bool
) -> tuple[Any, list[str], str]:
    """The comparison's table and its notes, printed; (the table, the notes, the verdict)."""
    from dataclasses import replace

    from gpubench.report.command_tables import comparison_table
    from gpubench.store.compare import gate_order

    table = comparison_table(
        replace(result, rows=gate_order(result.rows, changes_only)), base_path, new_path
    )
    console = out_console()
    console.print(table)
    largest = f"; largest change {100 * max(result.changes):.2f}%" if result.changes else ""
    verdict = f"{result.regressions} regression(s)" if result.regressions else "no regressions"
    notes = [f"{result.compared} pair(s) compared{largest}; {verdict}"]
    if result.unmatched:
        notes.append(
            f"{result.unmatched} result(s) of {base_path} have no partner in "
            f"{new_path}: not compared, so the gate fails"
        )
    if result.not_comparable:
        notes.append(
            f"{result.not_comparable} pair(s) not comparable: no energy reading on a side "
            "(record both runs with --energy)"
        )
    for note in notes:
        console.print(note, highlight=False)
    for (before, after), count in _gpu_pairs(result.rows).items():
        notes.append(f"note: {count} pair(s) measured on different GPUs ({before} vs {after})")
        err_console().print(notes[-1], highlight=False)
    return table, notes, verdict


def _gpu_pairs(rows: list) -> dict[tuple[str, str], int]:
    """How many compared pairs each (base GPU, new GPU) pair of different cards measured."""
    pairs: dict[tuple[str, str], int] = {}
    for row in rows:
        if row.gpus:
            pairs[row.gpus] = pairs.get(row.gpus, 0) + 1
    return pairs


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("logs", metavar="LOGS...", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "-o",
    "--output",
    "output",
    required=True,
    type=click.Path(dir_okay=False),
    help="The merged JSON-lines log.",
)
@click.option("--force", is_flag=True, help="Replace an output that already holds results.")
def merge(logs: tuple[str, ...], output: str, force: bool) -> None:
    """Join the logs of one sweep's shards (sweep --shard I/N) into one log; refuses logs of
    different sweeps or kernel sources, and results that two logs both hold.

    \b
    Example:
      gpubench merge results/transpose.shard-*-of-4.jsonl -o results/transpose.jsonl
    """
    from gpubench.report.plain import say
    from gpubench.store.merge import merge as merge_logs

    count, total = merge_logs(list(logs), output, force)
    say(err_console(), f"merged {total} result(s) of {count} logs into {output}")
