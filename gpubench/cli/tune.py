"""`gpubench tune`: a budgeted search for the best configuration of each problem of a sweep,
live on the GPU or against a recorded sweep (--replay); a strategy's score over many seeds
(and its curve drawn); Kernel Tuner's cache written from a recording."""

from __future__ import annotations

from typing import Any

import click

from gpubench.cli.common import EXIT_CODES_HELP, HISTORY_DEFAULT, backend_option
from gpubench.cli.energy_options import energy_option, energy_window_option
from gpubench.errors import EXIT_OK, ConfigError

# A score's seeds, each a whole search per problem: enough for any median, bounded in time.
MAX_SEEDS = 1000
# Configurations measured together, and confirmed at the end: bounds no real run needs more of.
MAX_BATCH = 4096
MAX_CONFIRM = 100


@click.command(epilog=EXIT_CODES_HELP)
@click.argument("config_path", metavar="[SWEEP.yaml|NAME]", required=False)
@click.option(
    "--replay",
    "replay_path",
    metavar="LOG",
    help="A recorded exhaustive sweep (a results log or JSON, a Kernel Tuner cache, or a "
    "history store with --replay-run) that stands in for the GPU: each evaluation returns its "
    "recorded median or failure.",
)
@click.option(
    "--replay-run",
    "replay_run",
    type=click.IntRange(1, 2**63 - 1),
    help="With --replay of a history store: the run to replay (gpubench history list).",
)
@click.option(
    "--strategy",
    default="tpe",
    show_default=True,
    help="exhaustive, random, or an Optuna sampler: tpe, cmaes, gp, qmc (the tune extra). "
    "With --seeds, several separated by commas are scored side by side.",
)
@click.option(
    "--budget",
    default="10%",
    show_default=True,
    help="Per problem: evaluations (25), a percentage of its configurations (10%), or, live, "
    "wall time (90s, 5m: no new round once it is spent).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0, max=2**63 - 1),
    default=0,
    show_default=True,
    help="The strategy's seed.",
)
@click.option(
    "--seeds",
    type=click.IntRange(min=1, max=MAX_SEEDS),
    help="Score the strategy instead: N runs (seeds SEED..SEED+N-1) per problem, the median "
    "of best found / optimum against evaluations, the share within 5% at the budget.",
)
@click.option(
    "--export-kt",
    "export_path",
    type=click.Path(dir_okay=False),
    help="Write the recorded space as Kernel Tuner cache files (one per problem) and stop.",
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False),
    help="With --seeds: draw each strategy's median best/optimum against evaluations (PNG, "
    "SVG or PDF; needs matplotlib, the plot extra).",
)
@click.option(
    "--batch",
    type=click.IntRange(min=1, max=MAX_BATCH),
    help="Configurations proposed, compiled and measured per round (live default: as many "
    "as compile at once; replay default: 1).",
)
@click.option(
    "--confirm",
    type=click.IntRange(min=0, max=MAX_CONFIRM),
    default=3,
    show_default=True,
    help="Live: the best configurations measured again at the end, on fresh inputs; the "
    "winner is the best of them (0: the search's best, unconfirmed).",
)
@click.option(
    "--prune/--no-prune",
    default=True,
    show_default=True,
    help="Live: stop timing a configuration whose fastest first samples are already 5% "
    "slower than the best so far (recorded `pruned`, never ranked; only under --objective time).",
)
@click.option(
    "--objective",
    type=click.Choice(["time", "energy", "edp"]),
    default="time",
    show_default=True,
    help="What ranks configurations: the median time, the energy per run, or edp (energy per "
    "run x time). energy and edp measure each configuration's energy live (--energy) and "
    "prune nothing; a replay ranks its recorded energy readings.",
)
@energy_option
@energy_window_option
@backend_option
@click.option("--device", default=0, show_default=True, help="Live: the CUDA device index.")
@click.option(
    "--devices",
    metavar="all|I,J,...",
    help="Live: measure each round on several GPUs of this host (all, or 0,2,3).",
)
@click.option(
    "--resume",
    "resume_path",
    type=click.Path(dir_okay=False),
    help="Live: continue the tuning run logged here; its configurations count against the "
    "budget and teach the strategy.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Live: resume even if the GPU or sweep changed; start a new log where one exists.",
)
@click.option(
    "--jsonl",
    "jsonl_path",
    type=click.Path(dir_okay=False),
    help="Live: the results log (default results/<config>.tune.jsonl).",
)
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Live: also write JSON.")
@click.option(
    "--history",
    "history_path",
    is_flag=False,
    flag_value=HISTORY_DEFAULT,
    metavar="[PATH]",
    help=f"Live: also append the run to a history store ({HISTORY_DEFAULT} without PATH).",
)
@click.option("--label", default="", help="Live: the run's label in the history store.")
def tune(
    config_path: str | None,
    replay_path: str | None,
    strategy: str,
    budget: str,
    seed: int,
    seeds: int | None,
    replay_run: int | None,
    **options: Any,
) -> None:
    """Search each problem of a sweep for its fastest configuration within a budget (or, with
    --objective, the least energy per run or energy x time): live on the GPU, or against a
    recorded sweep (--replay).

    A problem is what the inputs read (a size, a dtype); a configuration, the rest (tile
    shapes, stages, the variant). Every configuration measured is checked as a sweep checks
    it; failed ones (compile errors, wrong answers) are spent evaluations, never winners.
    Live, the few best are measured again at the end and the winner is the best of them.

    \b
    Examples:
      gpubench tune configs/matmul_space.yaml --budget 5%
      gpubench tune configs/matmul_space.yaml --budget 60s --devices all
      gpubench tune configs/matmul_space.yaml --budget 5% --objective energy
      gpubench tune configs/matmul_tune.yaml --replay results/matmul_tune.jsonl
      gpubench tune configs/matmul_tune.yaml --replay LOG --budget 10% --seeds 50
      gpubench tune --replay LOG --strategy tpe,random --seeds 50 --plot curves.png
      gpubench tune --replay results/history.sqlite --replay-run 12 --seeds 50
      gpubench tune --replay results/matmul_tune.jsonl --export-kt matmul_kt.json
    """
    from gpubench.tune import search

    names = _strategy_names(strategy, seeds)
    parsed = search.parse_budget(budget)
    export_path, plot_path = options["export_path"], options["plot_path"]
    if replay_path is None:
        if replay_run is not None:
            raise ConfigError("--replay-run picks a run of --replay STORE", key="--replay-run")
        _refuse_for_live(config_path, seeds, export_path, plot_path)
        from gpubench.cli.tune_live import live

        click.get_current_context().exit(live(config_path, names[0], parsed, seed, options))
    live_only = tuple(name for name, _ in LIVE_ONLY)
    _refuse_for_replay(parsed, *(options[name] for name in live_only))
    if export_path is not None and options["objective"] != "time":
        raise ConfigError(
            "--export-kt writes Kernel Tuner's cache of times: leave out --objective",
            key="--objective",
        )
    from gpubench.cli.tune_replay import replay

    batch = options["batch"] or 1
    source = (replay_path, replay_run, options["objective"])
    replay(config_path, source, names, parsed, seed, seeds, batch, export_path, plot_path)
    click.get_current_context().exit(EXIT_OK)


def _strategy_names(strategy: str, seeds: int | None) -> list[str]:
    """--strategy's names, each one known; several only where --seeds scores them."""
    from gpubench.tune import strategies

    names = [name.strip() for name in strategy.split(",")]
    if len(names) > 1 and seeds is None:
        raise ConfigError(
            "several strategies are scored side by side: give --seeds N", key="--strategy"
        )
    for name in names:
        strategies.check_name(name)
    return names


def _refuse_for_live(
    config_path: str | None, seeds: int | None, export_path: str | None, plot_path: str | None
) -> None:
    """What only a replay can do, asked of a live run: one line each."""
    if config_path is None:
        raise ConfigError(
            "give a sweep file to tune live on the GPU, or --replay LOG to search a recorded sweep",
            source="command line",
            key="SWEEP.yaml",
        )
    for given, option in ((seeds, "--seeds"), (export_path, "--export-kt"), (plot_path, "--plot")):
        if given is not None:
            raise ConfigError(f"{option} works on a recorded sweep: give --replay LOG", key=option)


# The options only live tuning takes: (parameter, option).
LIVE_ONLY = (
    ("resume_path", "--resume"),
    ("jsonl_path", "--jsonl"),
    ("json_path", "--json"),
    ("history_path", "--history"),
    ("devices", "--devices"),
    ("energy", "--energy"),
    ("energy_window_s", "--energy-window"),
)


def _refuse_for_replay(budget: Any, *live_only: Any) -> None:
    names = tuple(option for _, option in LIVE_ONLY)
    for given, option in zip(live_only, names, strict=True):
        if given is not None:
            raise ConfigError(
                f"{option} is for live tuning on the GPU; a replay measures nothing",
                key=option,
            )
    if budget.seconds is not None:
        raise ConfigError(
            "a replay has no wall time to spend: give the budget in evaluations (25) or as a "
            "percentage (10%)",
            key="--budget",
        )
