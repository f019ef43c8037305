"""`gpubench sweep`: a whole sweep from YAML, or its dry run."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from gpubench.cli.common import (
    EXIT_CODES_HELP,
    chosen_backend,
    execute,
    out_console,
    output_options,
    spread_from,
)
from gpubench.cli.energy_options import energy_option, energy_window_option, with_timing
from gpubench.errors import EXIT_OK

if TYPE_CHECKING:
    from gpubench.load.config import SweepSpec


def _workers_ahead(command: Callable[..., None]) -> Callable[..., None]:
    """The sweep's workers started before the file is read (gpubench.engine.ahead): their
    imports and CUDA contexts beside the command's own; any no runner took, stopped at the
    end (a refused sweep file, a resumed log that does not match). A dry run starts none."""

    @functools.wraps(command)
    def started_ahead(**options: Any) -> None:
        if options["dry_run"]:
            return command(**options)
        from gpubench.engine import ahead, spawned

        where = (options["device"], options["devices"], options["scheduler"])
        try:
            ahead.start(*where, chosen_backend())
            return command(**options)
        finally:
            spawned.discard()

    return started_ahead


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("config_path", metavar="CONFIG.yaml|NAME", type=click.Path(dir_okay=False))
@click.option("--dry-run", is_flag=True, help="Validate and list the points; touch no GPU.")
@click.option(
    "--resume",
    "resume_path",
    type=click.Path(dir_okay=False),
    help="Continue the run logged in this JSON-lines file: points already there are "
    "not measured again; new results are appended to it.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Resume even if the GPU, the kernel source or the sweep changed; without "
    "--resume, start a new log where one with results exists (the old one is kept "
    "beside it as LOG.1).",
)
@click.option(
    "--scheduler",
    "scheduler",
    metavar="ADDRESS",
    help="Send the points to the workers of a Dask cluster (tcp://host:8786): one "
    "worker per GPU; results stream back into the log (needs the cluster extra).",
)
@click.option(
    "--shard",
    "shard",
    metavar="I/N",
    help="Run only every N-th point, from the I-th (0-based): one of N jobs (SLURM "
    "arrays); `gpubench merge` joins their logs.",
)
@click.option(
    "--untrusted/--trusted",
    default=None,
    help="For kernels you do not trust: check every timed run, on inputs switched "
    "between two sets at random (slower; overrides the file's timing.untrusted).",
)
@energy_option
@energy_window_option
@output_options
@_workers_ahead
def sweep(
    config_path: str,
    dry_run: bool,
    resume_path: str | None,
    force: bool,
    json_path: str | None,
    csv_path: str | None,
    jsonl_path: str | None,
    markdown_path: str | None,
    device: int,
    profile: bool,
    devices: str | None,
    verbose: bool,
    history_path: str | None,
    label: str,
    scheduler: str | None,
    shard: str | None,
    untrusted: bool | None,
    energy: bool | None,
    energy_window_s: float | None,
) -> None:
    """Run a whole sweep from a YAML file: progress bar, table, results files.

    Every point runs in a worker process: a kernel that crashes or hangs is recorded
    (`crashed`, `timeout`) and the sweep goes on. Each finished point is appended at once to
    a JSON-lines log (--jsonl, outputs.jsonl, or results/<config>.jsonl), so an interrupted
    sweep loses nothing and --resume picks it up.

    \b
    Examples:
      gpubench sweep configs/transpose.yaml --json results/transpose.json
      gpubench sweep configs/smoke.yaml --dry-run
      gpubench sweep smoke          # a bundled sweep file by name (gpubench list --configs)
      gpubench sweep configs/transpose.yaml --resume results/transpose.jsonl
      gpubench sweep tests/exploits/axpy_cheats.yaml --untrusted
      gpubench sweep configs/matmul_energy.yaml --no-energy
    """
    from gpubench.load import config
    from gpubench.store.outputs import OutputRequest

    config_path = str(config.find(config_path))
    spec = _spec(config_path, untrusted=untrusted, energy=energy, energy_window_s=energy_window_s)
    spread = spread_from(device, devices, scheduler, shard)
    request = OutputRequest(
        json=json_path,
        csv=csv_path,
        jsonl=jsonl_path,
        resume=resume_path,
        force=force,
        progress=True,
        markdown=markdown_path,
        profile=profile,
        verbose=verbose,
        history=history_path,
        label=label,
        default_log=_default_log(config_path, spread.shard),
    )
    if dry_run:
        _dry_run(spec, request, spread.shard)
    click.get_current_context().exit(execute(spec, request, device, spread))


def _dry_run(spec: Any, request: Any, shard: tuple[int, int] | None) -> None:
    """Print the plan and exit 0; empty output paths are refused as the real run would."""
    from gpubench.store.outputs import refuse_empty_paths

    refuse_empty_paths(request)  # the dry run writes nothing; the real run would refuse them
    print_plan(spec, shard)
    click.get_current_context().exit(EXIT_OK)


def _spec(config_path: str, **given: Any) -> Any:
    """The sweep file's sweep with the command's timing options over its timing."""
    from gpubench.load import config

    return with_timing(config.load(config_path), **given)


def _default_log(config_path: str, shard: tuple[int, int] | None) -> str:
    """results/<config>.jsonl, a shard's own beside it."""
    from pathlib import Path

    stem = Path(config_path).stem
    if shard:
        stem += f".shard-{shard[0]}-of-{shard[1]}"
    return str(Path("results") / f"{stem}.jsonl")


def print_plan(spec: SweepSpec, shard: tuple[int, int] | None = None) -> None:
    """The dry run: the points (or, for a large sweep, its axes and both ends), the
    parameters fixed at every point, the suite's notes and the count of distinct compiles."""
    from gpubench import api
    from gpubench.report.command_tables import dry_run_tables
    from gpubench.report.plain import say

    plan = api.dry_run(spec, shard)
    console = out_console()
    for table in dry_run_tables(plan, spec.source):
        console.print(table)
    if plan.fixed and plan.varying != list(plan.points[0]):
        say(console, "at every point: " + ", ".join(f"{n}={v}" for n, v in plan.fixed.items()))
    for note in plan.notes:
        say(console, note)
    total = len(plan.points) * len(spec.variants)
    say(
        console,
        f"{len(plan.points):,} point(s) × {len(spec.variants)} variant(s) "
        f"({', '.join(spec.variants)}; baseline {spec.baseline}) = "
        f"{total:,} measurement(s), {plan.builds:,} distinct compile(s)",
    )
    if spec.timing.energy:
        say(
            console,
            f"energy: each verified result's energy per run, over "
            f"{spec.timing.energy_window_s:g} s of back-to-back runs (docs: measuring)",
        )
    if spec.timing.untrusted:  # the dry run says which mode the real run would measure in
        say(
            console,
            "untrusted mode: every timed run checked, inputs switched between two "
            "sets at random (docs: guarantees)",
        )
