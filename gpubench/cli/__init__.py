"""Command-line interface: parse, call gpubench.api (or gpubench.engine.session for run and sweep),
render with gpubench.report; a GpubenchError becomes one line and its exit code.

One module per group of commands. Heavy imports (NumPy, the suites, PyCUDA) happen inside
the commands, so `gpubench --help` starts fast.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from gpubench import __version__
from gpubench.cli import catalog, ceilings, charts, history, results, suites, sweep, tune
from gpubench.cli.common import EXIT_CODES_HELP, err_console
from gpubench.errors import EXIT_INTERRUPTED, GpubenchError, shortened


def _usage_error(exc: click.UsageError) -> None:
    """Click's usage error (a bad option, value or argument) as one line on stderr and exit
    2, like every other error: click's own form spans four (usage, hint, blank, error)."""
    # click 8.2 and later: a group called bare raises this to show its help.
    if isinstance(exc, getattr(click.exceptions, "NoArgsIsHelpError", ())):
        raise exc  # a group called bare: its help is what was asked for
    from rich.text import Text

    path = "gpubench"  # whatever name the process was started by (a test runner's "cli")
    if exc.ctx is not None:
        path += exc.ctx.command_path[len(exc.ctx.find_root().info_name or "") :]
    message = shortened(" ".join(exc.format_message().split())).removesuffix(".")
    err_console().print(
        Text.assemble(("error: ", "bold red"), f"{path}: {message} (see '{path} --help')"),
        highlight=False,
        soft_wrap=True,
    )
    sys.exit(exc.exit_code)


class GpubenchGroup(click.Group):
    """Turns GpubenchError, click's usage errors and Ctrl-C into one line on stderr and the
    documented exit code, whatever length of value they quote."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except click.UsageError as exc:  # an option of gpubench itself
            _usage_error(exc)
            raise  # not reached: _usage_error exits

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:  # a command, or a command's option or argument
            _usage_error(exc)
            raise  # not reached: _usage_error exits
        except GpubenchError as exc:
            from rich.text import Text

            # One line of a sane length, whatever the message holds (a user's exception text
            # may span lines; a value quoted whole may be 100 kB).
            message = shortened(" ".join(str(exc).split()))
            # Only the prefix in red: `Text + Text` would give the whole line the first's style.
            err_console().print(
                Text.assemble(("error: ", "bold red"), message), highlight=False, soft_wrap=True
            )
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            err_console().print("interrupted")
            ctx.exit(EXIT_INTERRUPTED)


@click.group(cls=GpubenchGroup, epilog=EXIT_CODES_HELP)
@click.version_option(__version__, prog_name="gpubench")
def cli() -> None:
    """gpubench: compile CUDA kernels, check them against NumPy, time them with CUDA events,
    sweep their parameters from YAML and report time, bandwidth, GFLOP/s and speedup.

    \b
    Examples:
      gpubench list
      gpubench info
      gpubench run transpose --tile 32 --size 4096
      gpubench sweep configs/transpose.yaml --json results/transpose.json
      gpubench sweep configs/smoke.yaml --dry-run
      gpubench sweep configs/examples/saxpy.yaml          # your own kernel, no Python
      gpubench sweep configs/transpose.yaml --devices all
      gpubench ceilings && gpubench roofline results/matmul.jsonl -o roofline.png
      gpubench plot results/transpose.jsonl
      gpubench inspect matmul -v pipelined
      gpubench sweep configs/smoke.yaml --history && gpubench report
    """


for command in (
    catalog.list_suites,
    catalog.info,
    suites.run,
    sweep.sweep,
    results.compare,
    suites.inspect,
    results.merge,
    ceilings.ceilings,
    charts.roofline,
    charts.plot,
    history.history,
    history.report,
    tune.tune,
):
    cli.add_command(command)


def main() -> None:
    cli(prog_name="gpubench")
