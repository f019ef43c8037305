"""Commands over results files: compare (the CI gate), merge, roofline, plot."""

from __future__ import annotations

import click

from gpubench.cli.common import (
    CHANGE_THRESHOLD,
    EXIT_CODES_HELP,
    err_console,
    need_matplotlib,
    out_console,
)
from gpubench.errors import EXIT_FAILED_POINTS, EXIT_OK


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("base_path", metavar="BASE", type=click.Path(dir_okay=False))
@click.argument("new_path", metavar="NEW", type=click.Path(dir_okay=False))
@click.option("--threshold", default=CHANGE_THRESHOLD, show_default=True, type=float,
              help="Smallest relative change that counts (a change must also exceed twice the noise).")  # fmt: skip
@click.option("--metric", default="time_ms", show_default=True,
              help="Which metric to compare: time_ms, or any metric key of the results "
              "(gbps, gflops, ...); its declared direction says what a regression is.")  # fmt: skip
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False),
              help="Also write the comparison as GitHub-flavoured markdown.")  # fmt: skip
@click.option("--suite-threshold", "suite_thresholds", multiple=True, metavar="SUITE=FRACTION",
              help="A threshold for one suite's results (repeatable), e.g. transpose=0.10.")  # fmt: skip
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
    markdown_path: str | None,
    suite_thresholds: tuple[str, ...],
    changes_only: bool,
) -> None:
    """Compare two results files point by point: exit 3 if anything got slower (or, with
    --metric, worse). Regressions are listed first, then results of BASE with no partner,
    then the other changes.

    Each file may be JSON (--json) or a JSON-lines log (--jsonl, a sweep's default output).

    \b
    Examples:
      gpubench compare results/before.json results/after.json --threshold 0.02
      gpubench compare results/transpose.jsonl results/transpose-new.jsonl
      gpubench compare results/before.json results/after.json --metric gbps
    """
    from gpubench import api

    if markdown_path is not None:  # '' too: check_writable refuses it in one line
        from gpubench.outputs import check_writable

        check_writable(markdown_path, "--markdown")
    result = api.compare(base_path, new_path, threshold, metric,
                         api.parse_suite_thresholds(suite_thresholds))  # fmt: skip
    from dataclasses import replace

    from gpubench.compare import gate_order
    from gpubench.report.tables import comparison_table

    table = comparison_table(
        replace(result, rows=gate_order(result.rows, changes_only)), base_path, new_path
    )
    console = out_console()
    console.print(table)
    largest = f"; largest change {100 * max(result.changes):.2f}%" if result.changes else ""
    verdict = (f"{result.regressions} regression(s)" if result.regressions
               else "no regressions")  # fmt: skip
    notes = [f"{result.compared} pair(s) compared{largest}; {verdict}"]
    if result.unmatched:
        notes.append(f"{result.unmatched} result(s) of {base_path} have no partner in "
                     f"{new_path}: not compared, so the gate fails")  # fmt: skip
    for note in notes:
        console.print(note, highlight=False)
    for (before, after), count in _gpu_pairs(result.rows).items():
        notes.append(f"note: {count} pair(s) measured on different GPUs ({before} vs {after})")
        err_console().print(notes[-1], highlight=False)
    if markdown_path is not None:
        from gpubench.report import markdown
        from gpubench.session import device_line

        markdown.write(markdown_path, markdown.document(
            f"gpubench compare: {verdict}", device_line(result.new.environment, result.new.created),
            [table], notes))  # fmt: skip
    click.get_current_context().exit(EXIT_FAILED_POINTS if result.failed else EXIT_OK)


def _gpu_pairs(rows: list) -> dict[tuple[str, str], int]:
    """How many compared pairs each (base GPU, new GPU) pair of different cards measured."""
    pairs: dict[tuple[str, str], int] = {}
    for row in rows:
        if row.gpus:
            pairs[row.gpus] = pairs.get(row.gpus, 0) + 1
    return pairs


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("logs", metavar="LOGS...", nargs=-1, required=True,
                type=click.Path(dir_okay=False))  # fmt: skip
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False),
              help="The merged JSON-lines log.")  # fmt: skip
@click.option("--force", is_flag=True, help="Replace an output that already holds results.")
def merge(logs: tuple[str, ...], output: str, force: bool) -> None:
    """Join the logs of one sweep's shards (sweep --shard I/N) into one log; refuses logs of
    different sweeps or kernel sources, and results that two logs both hold.

    \b
    Example:
      gpubench merge results/transpose.shard-*-of-4.jsonl -o results/transpose.jsonl
    """
    from gpubench.merge import merge as merge_logs
    from gpubench.report.plain import say

    count, total = merge_logs(list(logs), output, force)
    say(err_console(), f"merged {total} result(s) of {count} logs into {output}")


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("results_paths", metavar="RESULTS...", nargs=-1, required=True,
                type=click.Path(dir_okay=False))  # fmt: skip
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False),
              help="Draw the roofline chart here (PNG or SVG; needs the plot extra).")  # fmt: skip
@click.option("--ceilings", "ceilings_path", type=click.Path(dir_okay=False),
              help="Ceilings to use: a record from `gpubench ceilings --json`, or results of the "
              "ceilings suite (default: the stored ceilings of the results' GPU).")  # fmt: skip
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False),
              help="Write the table as GitHub-flavoured markdown.")  # fmt: skip
def roofline(results_paths: tuple[str, ...], output: str | None, ceilings_path: str | None,
             markdown_path: str | None) -> None:  # fmt: skip
    """Place every result of any results files on the roofline of its GPU: achieved vs
    attainable, and whether memory or compute bounds it.

    \b
    Examples:
      gpubench roofline results/matmul.jsonl results/reduction.jsonl -o roofline.png
      gpubench roofline results/*.json --ceilings results/ceilings.json
    """
    from gpubench import api
    from gpubench.errors import ConfigError
    from gpubench.outputs import check_picture, check_writable
    from gpubench.report import roofline as rl
    from gpubench.report.plain import say
    from gpubench.report.tables import roofline_table

    for path, option in ((output, "--output"), (markdown_path, "--markdown")):
        if path is not None:  # '' too: check_writable refuses it in one line
            check_writable(path, option)
    if output is not None:
        need_matplotlib("--output")
        check_picture(output, "--output")  # before the tables, not after them
    groups = api.roofline(list(results_paths), ceilings_path)
    if output and len(groups) > 1 and not ceilings_path:
        raise ConfigError(f"results from {len(groups)} GPUs: draw one roofline per GPU",
                          key="--output")  # fmt: skip
    err, console = err_console(), out_console()
    tables = []
    for group in groups:
        if group.theoretical_only:
            say(
                err,
                f"note: no measured ceilings for {group.record.gpu_name}: the theoretical "
                "peaks stand in (run `gpubench ceilings` on it)",
            )
        tables.append(roofline_table(group))
        console.print(tables[-1])
    if not any(group.placed for group in groups):
        raise ConfigError("no measured result with its work (bytes moved) to place",
                          source=", ".join(results_paths))  # fmt: skip
    if output:
        record = groups[-1].record
        placements = [p for group in groups for p in group.placed]
        rl.draw(placements, record, output, f"{record.gpu_name}: every measured kernel on the "
                "roofline")  # fmt: skip
        say(err, f"roofline: {output}")
    if markdown_path is not None:
        from gpubench.report import markdown
        from gpubench.session import device_line

        first = groups[0]
        markdown.write(markdown_path, markdown.document(
            "gpubench roofline", device_line(first.environment, first.created), tables))  # fmt: skip


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("results_path", metavar="RESULTS", type=click.Path(dir_okay=False))
@click.option("--x", "x", help="Parameter on the x axis [default: the numeric parameter with "
              "the most values].")  # fmt: skip
@click.option("--y", "y", help="Metric on the y axis: gbps, gflops, time_ms, speedup, ... "
              "[default: gbps, else gflops].")  # fmt: skip
@click.option("--by", "by", default="variant", show_default=True,
              help="One line per value of this (variant or a parameter).")  # fmt: skip
@click.option("--facet", "facet", help="One panel per value of this parameter.")
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False),
              help="Where to draw (PNG or SVG) [default: RESULTS with .png].")  # fmt: skip
def plot(results_path: str, x: str | None, y: str | None, by: str, facet: str | None,
         output: str | None) -> None:  # fmt: skip
    """Draw any metric of a results file against any parameter, one line per variant.

    \b
    Examples:
      gpubench plot results/transpose.jsonl
      gpubench plot results/matmul.jsonl --x size --y gflops -o matmul.svg
      gpubench plot results/transpose.jsonl --facet dtype --by variant
    """
    from pathlib import Path

    from gpubench import api
    from gpubench.errors import ConfigError
    from gpubench.outputs import check_writable
    from gpubench.report.plain import say

    if not results_path.strip():
        message = "an empty path: give a results file"
        raise ConfigError(message, source="command line", key="RESULTS")
    target = str(Path(results_path).with_suffix(".png")) if output is None else output
    check_writable(target, "--output")
    if Path(target).suffix.lower() not in (".png", ".svg", ".pdf"):
        raise ConfigError("give a .png, .svg or .pdf file", source=target, key="--output")
    need_matplotlib("plot")
    chart = api.plot(results_path, target, x, y, by, facet)
    say(
        err_console(),
        f"plot: {target} ({chart.y.header} vs {chart.x}"
        f"{', log x' if chart.log_x else ''}{', log y' if chart.log_y else ''})",
    )
