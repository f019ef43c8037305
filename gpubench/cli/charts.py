"""Commands that draw results: roofline (every result against its GPU's ceilings) and plot."""

from __future__ import annotations

from typing import Any

import click

from gpubench import install_hint
from gpubench.cli.common import EXIT_CODES_HELP, err_console, out_console


@click.command(epilog=EXIT_CODES_HELP)
@click.argument(
    "results_paths", metavar="RESULTS...", nargs=-1, required=True, type=click.Path(dir_okay=False)
)
@click.option(
    "-o",
    "--output",
    "output",
    type=click.Path(dir_okay=False),
    help="Draw the roofline chart here (PNG or SVG; needs the plot extra).",
)
@click.option(
    "--ceilings",
    "ceilings_path",
    type=click.Path(dir_okay=False),
    help="Ceilings to use: a record from `gpubench ceilings --json`, or results of the "
    "ceilings suite (default: the stored ceilings of the results' GPU).",
)
@click.option(
    "--markdown",
    "markdown_path",
    type=click.Path(dir_okay=False),
    help="Write the table as GitHub-flavoured markdown.",
)
def roofline(
    results_paths: tuple[str, ...],
    output: str | None,
    ceilings_path: str | None,
    markdown_path: str | None,
) -> None:
    """Place every result of any results files on the roofline of its GPU: achieved vs
    attainable, and whether memory or compute bounds it.

    \b
    Examples:
      gpubench roofline results/matmul.jsonl results/reduction.jsonl -o roofline.png
      gpubench roofline results/*.json --ceilings results/ceilings.json
    """
    from gpubench import api
    from gpubench.errors import ConfigError
    from gpubench.store.outputs import check_picture, check_writable

    for path, option in ((output, "--output"), (markdown_path, "--markdown")):
        if path is not None:  # '' too: check_writable refuses it in one line
            check_writable(path, option)
    if output is not None:
        need_matplotlib("--output")
        check_picture(output, "--output")  # before the tables, not after them
    groups = api.roofline(list(results_paths), ceilings_path)
    if output and len(groups) > 1 and not ceilings_path:
        raise ConfigError(
            f"results from {len(groups)} GPUs: draw one roofline per GPU", key="--output"
        )
    tables = _roofline_tables(groups)
    if not any(group.placed for group in groups):
        raise ConfigError(
            "no measured result with its work (bytes moved) to place",
            source=", ".join(results_paths),
        )
    if output:
        _draw_roofline(groups, output)
    if markdown_path is not None:
        from gpubench.report import markdown

        first = groups[0]
        device = markdown.device_line(first.environment, first.created)
        markdown.write(markdown_path, markdown.document("gpubench roofline", device, tables))


def _roofline_tables(groups: list[Any]) -> list[Any]:
    """One table per GPU, printed (a note where theoretical peaks stand in for ceilings)."""
    from gpubench.report.command_tables import roofline_table
    from gpubench.report.plain import say

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
    return tables


def _draw_roofline(groups: list[Any], output: str) -> None:
    from gpubench.report import roofline as rl
    from gpubench.report.plain import say

    record = groups[-1].record
    placements = [p for group in groups for p in group.placed]
    title = f"{record.gpu_name}: every measured kernel on the roofline"
    rl.draw(placements, record, output, title)
    say(err_console(), f"roofline: {output}")


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("results_path", metavar="RESULTS", type=click.Path(dir_okay=False))
@click.option(
    "--x",
    "x",
    help="Parameter on the x axis [default: the numeric parameter with the most values].",
)
@click.option(
    "--y",
    "y",
    help="Metric on the y axis: gbps, gflops, time_ms, speedup, ... [default: gbps, else gflops].",
)
@click.option(
    "--by",
    "by",
    default="variant",
    show_default=True,
    help="One line per value of this (variant or a parameter).",
)
@click.option("--facet", "facet", help="One panel per value of this parameter.")
@click.option(
    "-o",
    "--output",
    "output",
    type=click.Path(dir_okay=False),
    help="Where to draw (PNG or SVG) [default: RESULTS with .png].",
)
def plot(
    results_path: str, x: str | None, y: str | None, by: str, facet: str | None, output: str | None
) -> None:
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
    from gpubench.report.plain import say
    from gpubench.store.outputs import check_writable

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


def need_matplotlib(option: str) -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        from gpubench.errors import EnvironmentProblem

        raise EnvironmentProblem(
            f"{option} draws with matplotlib, which is not installed: {install_hint('plot')}"
        ) from None
