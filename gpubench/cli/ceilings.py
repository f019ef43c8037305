"""`gpubench ceilings`: this GPU's measured ceilings, kept per GPU for the roofline."""

from __future__ import annotations

import click

from gpubench.cli.common import (
    EXIT_CODES_HELP,
    backend_option,
    check_device_index,
    chosen_backend,
    err_console,
    out_console,
)


@click.command(epilog=EXIT_CODES_HELP)
@click.option(
    "--remeasure",
    is_flag=True,
    help="Measure again even if this GPU's ceilings are already stored.",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False),
    help="Also write the ceilings record here (roofline --ceilings reads it).",
)
@click.option(
    "--markdown",
    "markdown_path",
    type=click.Path(dir_okay=False),
    help="Write the ceilings table as GitHub-flavoured markdown.",
)
@click.option("--device", default=0, show_default=True, help="CUDA device index.")
@backend_option
def ceilings(
    remeasure: bool, json_path: str | None, markdown_path: str | None, device: int
) -> None:
    """Measure this GPU's ceilings (DRAM, L2 and shared-memory bandwidth; FP32, FP64, FP16
    and tensor-core throughput), each kernel checked, and keep them per GPU for `roofline`.

    \b
    Examples:
      gpubench ceilings
      gpubench ceilings --remeasure --json results/ceilings.json
    """
    from gpubench import api
    from gpubench.cli.outcome import exit_code, notes_to, show
    from gpubench.errors import EXIT_OK
    from gpubench.report.command_tables import ceilings_table
    from gpubench.report.plain import say
    from gpubench.store import ceilings as store
    from gpubench.store.outputs import check_writable

    check_device_index(device)
    for path, option in ((json_path, "--json"), (markdown_path, "--markdown")):
        if path is not None:  # an empty one too: refused, not taken as "not given"
            check_writable(path, option)
    ctx = click.get_current_context()
    err = err_console()
    found = api.ceilings(device, remeasure, note=notes_to(err), backend=chosen_backend())
    code = EXIT_OK
    if found.sweep is not None:  # measured now: its table and how it ended
        show(found.sweep, out_console())
        code = exit_code(found.sweep, err)
    if found.record is None:  # the run ended without a record (interrupted)
        ctx.exit(code)
    record = found.record
    if found.measured_earlier:
        say(
            err,
            f"{record.gpu_name}: ceilings measured earlier ({store.store_dir()}); "
            "--remeasure measures them again",
        )
    if found.stored_in:
        say(err, f"ceilings kept in {found.stored_in}")
    if json_path:
        store.save(record, json_path)
    table = ceilings_table(record)
    out_console().print(table)
    if markdown_path:
        from gpubench.report import markdown

        markdown.write(
            markdown_path,
            markdown.document(
                "gpubench ceilings",
                markdown.device_line(record.environment, record.measured_at),
                [table],
            ),
        )
    ctx.exit(code)
