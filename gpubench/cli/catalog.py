"""What is there: the suites and bundled sweep files (`list`), the GPU (`info`)."""

from __future__ import annotations

import click

from gpubench.cli.common import (
    backend_option,
    check_device_index,
    chosen_backend,
    err_console,
    out_console,
)


@click.command("list")
@click.option(
    "--configs",
    "show_configs",
    is_flag=True,
    help="List the sweep files that ship with gpubench instead.",
)
def list_suites(show_configs: bool) -> None:
    """List suites, their variants (baseline marked) and parameters; or, with --configs, the
    bundled sweep files (`gpubench sweep NAME` runs one by name).

    \b
    Examples:
      gpubench list
      gpubench list --configs
    """
    from gpubench.load import registry
    from gpubench.report.command_tables import configs_table, suite_tables

    console = out_console()
    if show_configs:
        from gpubench.load import config

        configs = [(path.stem, *config.describe(path)) for path in config.bundled_configs()]
        console.print(configs_table(configs))
        return
    from rich.markup import escape

    for bench in registry.all_suites().values():
        console.rule(f"[bold]{escape(bench.name)}[/]: {escape(bench.description)}")
        for table in suite_tables(bench):
            console.print(table)
        console.print()


@click.command()
@click.option("--device", default=0, show_default=True, help="CUDA device index.")
@backend_option
def info(device: int) -> None:
    """Show the GPU, its limits and peaks, and the software versions.

    \b
    Examples:
      gpubench info
      gpubench info --backend cuda-core
    """
    from gpubench import backends
    from gpubench.model.notices import BackendChosen
    from gpubench.report import notices
    from gpubench.report.command_tables import info_table
    from gpubench.report.plain import say

    check_device_index(device)
    name = chosen_backend()
    if backends.chosen_automatically(name):
        say(err_console(), notices.text(BackendChosen("cuda-core")))
    backend = backends.load(device, name, backends.source_of(name))
    out_console().print(info_table(device, backend.device, backend.environment()))
