"""`gpubench history` (list, import, export, delete runs of a history store) and
`gpubench report` (the store as a static web report)."""

from __future__ import annotations

import click

from gpubench.cli.common import (
    CHANGE_THRESHOLD,
    EXIT_CODES_HELP,
    HISTORY_DEFAULT,
    err_console,
    out_console,
)


def _store_path(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if not value.strip():  # Path("") is the working directory: never what was meant
        from gpubench.errors import ConfigError

        raise ConfigError(
            "an empty path (''): give the store's file name", source="command line", key="--store"
        )
    return value


def _finite_threshold(ctx: click.Context, param: click.Parameter, value: float) -> float:
    if value != value:  # FloatRange lets NaN through: every comparison with it is false
        raise click.BadParameter("nan is not a number in the range 0<=x<=10.")
    return value


store_option = click.option(
    "--store",
    "store_path",
    default=HISTORY_DEFAULT,
    show_default=True,
    metavar="PATH",
    callback=_store_path,
    help="The history store (SQLite).",
)


@click.group(epilog=EXIT_CODES_HELP)
def history() -> None:
    """The history of runs: every `run` and `sweep` given --history appends to it.

    \b
    Examples:
      gpubench sweep configs/smoke.yaml --history --label nightly
      gpubench history list --suite transpose
      gpubench history import results/*.json results/*.jsonl --label before
      gpubench history export 12 --json run12.json
      gpubench history delete 12 13
    """


# A table of this many runs draws in about a second; a store of a year of nightly runs on
# several GPUs holds tens of thousands, which would take minutes to draw.
LIST_LAST = 1000


@history.command("list")
@store_option
@click.option("--suite", help="Only runs of this suite.")
@click.option("--gpu", help="Only runs on this GPU (its model name or UUID).")
@click.option("--label", help="Only runs with this label.")
@click.option("--commit", help="Only runs at this git commit (a prefix is enough).")
@click.option(
    "--last",
    default=LIST_LAST,
    show_default=True,
    type=click.IntRange(0, 2**31),
    help="Only the newest this many of the runs that match (0: all of them).",
)
def list_runs(
    store_path: str,
    suite: str | None,
    gpu: str | None,
    label: str | None,
    commit: str | None,
    last: int,
) -> None:
    """List the stored runs, oldest first."""
    from gpubench.report.command_tables import runs_table
    from gpubench.report.plain import say
    from gpubench.store.history import History

    with History.open(store_path, create=False) as store:
        runs = store.runs(suite=suite, gpu=gpu, label=label, commit=commit)
    shown = runs[-last:] if last and len(runs) > last else runs
    out_console().print(runs_table(shown, store_path))
    if len(shown) < len(runs):
        say(
            err_console(),
            f"showing the newest {len(shown):,} of {len(runs):,} runs: --last 0 lists them all",
        )


@history.command("import")
@store_option
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--label", default="", help="The label of the imported runs.")
def import_runs(store_path: str, files: tuple[str, ...], label: str) -> None:
    """Store results files (JSON or JSON-lines, as gpubench writes them) as runs.

    Each run keeps the code version its file records (environment.git_commit, git_dirty,
    gpubench_version), not the one of the folder importing it; a file that records none
    is stored without a commit. A file whose run is in the store already (same date, suite,
    card and results) is skipped with a note."""
    from gpubench.model import results
    from gpubench.report.plain import say
    from gpubench.store.history import History, check_label, recorded_version

    check_label(label)
    # Every file is read (and refused, if it must be) before the store is written; only one
    # is held at a time, so many large files do not add up in memory. The last one read is
    # kept: a single file is read once.
    last = None
    for path in files:
        last = results.load_any(path)
    err = err_console()
    ids = []
    with History.open(store_path) as store:
        for number, path in enumerate(files, 1):
            result_set = last if number == len(files) else results.load_any(path)
            known = store.find(result_set)
            if known is not None:
                say(err, f"note: {path} is run {known} of {store_path} already: skipped")
                continue
            version = recorded_version(result_set.environment)
            ids.append(store.append(result_set, label=label, version=version, source=path))
    if not ids:
        say(err, f"imported no run into {store_path}: every file is stored already")
        return
    shown = (
        f"run {ids[0]}"
        if len(ids) == 1
        else f"runs {', '.join(map(str, ids))}"
        if len(ids) <= 10
        else f"runs {ids[0]} to {ids[-1]}"
    )
    say(err, f"imported {len(ids)} run(s) into {store_path}: {shown}")


@history.command("export")
@store_option
@click.argument("run_id", type=click.IntRange(1, 2**63 - 1))
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False),
    help="Write the run as a results file here (what compare and plot read).",
)
@click.option(
    "--jsonl",
    "jsonl_path",
    type=click.Path(dir_okay=False),
    help="Write the run as a results log here (JSON lines: for runs too large to be "
    "read back from a results file).",
)
def export_run(store_path: str, run_id: int, json_path: str | None, jsonl_path: str | None) -> None:
    """Write one stored run as a results file (--json) or a results log (--jsonl).

    \b
    Examples:
      gpubench history export 12 --json run12.json
      gpubench history export 12 --jsonl run12.jsonl
    """
    from gpubench.errors import ConfigError
    from gpubench.model import results
    from gpubench.report.plain import say
    from gpubench.store.history import History
    from gpubench.store.outputs import check_writable

    if (json_path is None) == (jsonl_path is None):
        raise ConfigError("give one of --json FILE and --jsonl FILE", source="command line")
    option, path = ("--json", json_path) if json_path is not None else ("--jsonl", jsonl_path)
    assert path is not None
    check_writable(path, option)
    with History.open(store_path, create=False) as store:
        result_set = store.result_set(run_id)
    if jsonl_path is not None:
        results.save_jsonl(result_set, path)
    else:
        results.save_json(result_set, path)
        if note := results.read_back_note(path):
            say(err_console(), note)
    say(err_console(), f"run {run_id}: {path}")


@history.command("delete")
@store_option
@click.argument("run_ids", nargs=-1, required=True, type=click.IntRange(1, 2**63 - 1))
def delete_runs(store_path: str, run_ids: tuple[int, ...]) -> None:
    """Remove runs from the store."""
    from gpubench.errors import ConfigError
    from gpubench.report.plain import say
    from gpubench.store.history import History

    with History.open(store_path, create=False) as store:
        deleted = store.delete(list(run_ids))
    if deleted != len(set(run_ids)):
        raise ConfigError(
            f"deleted {deleted} of {len(set(run_ids))} run(s): the others are not in the store",
            source=store_path,
        )
    say(err_console(), f"deleted {deleted} run(s) from {store_path}")


@click.command(epilog=EXIT_CODES_HELP)
@store_option
@click.option(
    "-o",
    "--out",
    "out_dir",
    default="report",
    show_default=True,
    type=click.Path(file_okay=False),
    help="The folder the report is written to.",
)
@click.option(
    "--threshold",
    default=CHANGE_THRESHOLD,
    show_default=True,
    type=click.FloatRange(0, 10),
    callback=_finite_threshold,
    help="The change that counts as a regression (as compare: and above twice the noise).",
)
def report(store_path: str, out_dir: str, threshold: float) -> None:
    """Write the history store as a static web report: an index of what got slower and
    faster, and one page per suite with every point's variants over time, the latest run, its
    roofline and each run's environment. Opens from file:// or any static host.

    \b
    Example:
      gpubench report --store results/history.sqlite -o report && open report/index.html
    """
    from gpubench.report import web
    from gpubench.report.plain import say
    from gpubench.store.history import History

    with History.open(store_path, create=False) as store:
        try:
            pages = web.write_report(store, out_dir, threshold)
        except OSError as exc:
            from gpubench.errors import ConfigError

            raise ConfigError(f"cannot write the report ({exc.strerror})", source=out_dir) from None
    say(err_console(), f"report: {len(pages)} page(s) in {out_dir}/ (open {out_dir}/index.html)")
