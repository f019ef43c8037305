"""`gpubench tune`: a budgeted search for the best configuration of each problem of a sweep,
live on the GPU or against a recorded sweep (--replay); a strategy's score over many seeds
(and its curve drawn); Kernel Tuner's cache written from a recording."""

from __future__ import annotations

from typing import Any

import click

from gpubench.cli.common import EXIT_CODES_HELP, HISTORY_DEFAULT, backend_option
from gpubench.errors import EXIT_FAILED_POINTS, EXIT_INTERRUPTED, EXIT_OK, ConfigError

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
    help="A recorded exhaustive sweep (a results log or JSON, or a Kernel Tuner cache) that "
    "stands in for the GPU: each evaluation returns its recorded median or failure.",
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
    "slower than the best so far (recorded `pruned`, never ranked).",
)
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
    export_path: str | None,
    plot_path: str | None,
    batch: int | None,
    confirm: int,
    prune: bool,
    device: int,
    devices: str | None,
    resume_path: str | None,
    force: bool,
    jsonl_path: str | None,
    json_path: str | None,
    history_path: str | None,
    label: str,
) -> None:
    """Search each problem of a sweep for its fastest configuration within a budget: live on
    the GPU, or against a recorded sweep (--replay).

    A problem is what the inputs read (a size, a dtype); a configuration, the rest (tile
    shapes, stages, the variant). Every configuration measured is checked as a sweep checks
    it; failed ones (compile errors, wrong answers) are spent evaluations, never winners.
    Live, the few best are measured again at the end and the winner is the best of them.

    \b
    Examples:
      gpubench tune configs/matmul_space.yaml --budget 5%
      gpubench tune configs/matmul_space.yaml --budget 60s --devices all
      gpubench tune configs/matmul_tune.yaml --replay results/matmul_tune.jsonl
      gpubench tune configs/matmul_tune.yaml --replay LOG --budget 10% --seeds 50
      gpubench tune --replay LOG --strategy tpe,random --seeds 50 --plot curves.png
      gpubench tune --replay results/matmul_tune.jsonl --export-kt matmul_kt.json
    """
    from gpubench.tune import search, strategies

    names = [name.strip() for name in strategy.split(",")]
    if len(names) > 1 and seeds is None:
        raise ConfigError(
            "several strategies are scored side by side: give --seeds N", key="--strategy"
        )
    for name in names:
        strategies.check_name(name)
    parsed = search.parse_budget(budget)
    if replay_path is None:
        _refuse_for_live(config_path, seeds, export_path, plot_path)
        code = _live(
            config_path,
            names[0],
            parsed,
            seed,
            batch,
            confirm,
            prune,
            (device, devices),
            (resume_path, force, jsonl_path, json_path, history_path, label),
        )
        click.get_current_context().exit(code)
    _refuse_for_replay(parsed, resume_path, jsonl_path, json_path, history_path, devices)
    if plot_path is not None:
        _check_plot(plot_path, seeds)
    from gpubench.tune import replay

    recorded = replay.prepare(config_path, replay_path)
    if export_path is None:  # the command's mistakes first (exit 2), then the machine's
        for name in names:
            strategies.check_installed(name)
    ctx = click.get_current_context()
    if export_path is not None:
        _export(recorded, export_path)
    elif seeds is not None:
        scored = {
            name: _score(recorded, name, parsed, list(range(seed, seed + seeds)), batch or 1)
            for name in names
        }
        if plot_path is not None:
            _plot(scored, plot_path, recorded)
    else:
        _run(recorded, names[0], parsed, seed, batch or 1)
    ctx.exit(EXIT_OK)


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


def _refuse_for_replay(budget: Any, *live_only: Any) -> None:
    names = ("--resume", "--jsonl", "--json", "--history", "--devices")
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


def _live(
    config_path: str,
    strategy: str,
    budget: Any,
    seed: int,
    batch: int | None,
    confirm: int,
    prune: bool,
    where: tuple[int, str | None],
    files: tuple[str | None, bool, str | None, str | None, str | None, str],
) -> int:
    import dataclasses
    from pathlib import Path

    from gpubench.cli.common import err_console, spread_from
    from gpubench.cli.outcome import notes_to
    from gpubench.load import config
    from gpubench.store.outputs import OutputRequest
    from gpubench.tune import live

    resume, force, jsonl, json_path, history, label = files
    found = str(config.find(config_path))
    # The sweep file's `outputs:` are its sweep's files: a tuning run keeps its own.
    spec = dataclasses.replace(config.load(found), outputs=config.Outputs())
    spread = spread_from(*where)
    request = OutputRequest(
        json=json_path,
        jsonl=jsonl,
        resume=resume,
        force=force,
        history=history,
        label=label,
        default_log=str(Path("results") / f"{Path(found).stem}.tune.jsonl"),
    )
    settings = live.Settings(strategy, budget, seed, batch, confirm, prune)
    err = err_console()
    report = _LiveReport(settings)
    outcome = live.tune(
        spec,
        request,
        spread,
        settings,
        notes_to(err),
        on_step=report.step,
        on_round=report.round,
        on_problem=report.summary,
    )
    from gpubench.engine.session import protect_outputs

    with protect_outputs():
        _save_live(outcome, err)
    if outcome.interrupted:
        err.print(f"interrupted: kept {len(outcome.result_set.results)} finished result(s)")
        return EXIT_INTERRUPTED
    missing = [p.problem.label for p in outcome.problems if p.winner is None]
    if missing:
        err.print(f"[bold red]no valid configuration found for {', '.join(missing)}[/]")
        return EXIT_FAILED_POINTS
    return EXIT_OK


class _LiveReport:
    """Live tuning's lines: the problem, each round, each improvement, the confirmed winner."""

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        self.problem: Any = None

    def _header(self, run: Any) -> None:
        if run.problem is self.problem:
            return
        self.problem = run.problem
        settings, size = self.settings, len(run.problem.configurations)
        click.echo(
            f"{run.problem.label}: {size} configuration(s), budget {settings.budget} "
            f"({settings.budget.for_problem(size)} evaluation(s) at most), strategy "
            f"{settings.strategy}, seed {settings.seed}"
        )

    def step(self, run: Any, step: Any) -> None:
        self._header(run)
        if step.best_index == step.index:
            click.echo(
                f"  {len(run.steps):>5}  best so far {step.best_ms:.4g} ms  "
                f"{run.problem.describe(step.index)}"
            )

    def round(self, finished: Any) -> None:
        self._header(finished.run)
        click.echo(
            f"  round {finished.number}: {finished.evaluated} measured in {finished.seconds:.1f} s"
        )

    def summary(self, problem: Any) -> None:
        self._header(problem.run)
        steps = len(problem.run.steps)
        resumed = f", {problem.resumed} from the resumed log" if problem.resumed else ""
        click.echo(
            f"  {steps} evaluated{resumed}: {problem.count('pruned')} pruned, "
            f"{problem.failed} failed; {problem.wall_s:.1f} s"
        )
        winner = problem.winner
        if winner is None:
            click.echo("  no valid configuration confirmed")
            return
        index, result = winner
        noise = (result.summary or {}).get("rel_noise")
        how = (
            "unconfirmed: --confirm 0"
            if problem.unconfirmed
            else f"confirmed, {len(problem.confirmed)} measured again"
        )
        line = f"  best ({how}): {problem.problem.describe(index)}, {result.median_ms:.4g} ms"
        if isinstance(noise, float):
            line += f" (noise {noise:.1%})"
        if problem.margin is not None:
            runner_up = problem.problem.describe(problem.confirmed[1][0])
            line += f", {problem.margin:.1%} ahead of the runner-up ({runner_up})"
        click.echo(line)


def _save_live(outcome: Any, err: Any) -> None:
    from gpubench.model import results
    from gpubench.report.plain import say

    files = outcome.files
    if files.json:
        results.save_json(outcome.result_set, files.json)
    if files.history:
        from gpubench.store.history import History

        with History.open(files.history) as store:
            run_id = store.append(outcome.result_set, label=files.label, source="gpubench tune")
        say(err, f"history: run {run_id} in {files.history}")
    if files.files:
        say(err, f"results: {', '.join(files.files)}")


def _export(recorded: Any, export_path: str) -> None:
    from pathlib import Path

    from gpubench.tune import kernel_tuner_cache

    problems = recorded.space.problems
    path = Path(export_path)
    for number, problem in enumerate(problems):
        target = path if len(problems) == 1 else path.with_suffix(f".{number}{path.suffix}")
        try:
            kernel_tuner_cache.export(problem, recorded.recording, target)
        except OSError as exc:
            raise ConfigError(
                f"cannot write the Kernel Tuner cache ({exc.strerror or exc})", source=str(target)
            ) from None
        click.echo(f"{problem.label}: {len(problem.configurations)} configuration(s) -> {target}")


def _run(recorded: Any, strategy: str, budget: Any, seed: int, batch: int) -> None:
    from gpubench.tune import search, strategies

    for problem in recorded.space.problems:
        evaluations = budget.for_problem(len(problem.configurations))
        click.echo(
            f"{problem.label}: {len(problem.configurations)} configuration(s), "
            f"{evaluations} evaluation(s), strategy {strategy}, seed {seed}"
        )

        def improved(run: Any, step: Any) -> None:
            if step.best_index == step.index:
                click.echo(
                    f"  {len(run.steps):>5}  best so far {step.best_ms:.4g} ms  "
                    f"{run.problem.describe(step.index)}"
                )

        made = strategies.make(strategy, problem, seed)
        evaluate = search.one_at_a_time(recorded.evaluate)
        run = search.search(problem, evaluate, made, evaluations, improved, batch)
        click.echo(f"  {_verdict(run, recorded.optimum(problem))}")


def _verdict(run: Any, optimum: float) -> str:
    best = run.best
    if best is None:
        return "no valid configuration found within the budget"
    line = f"best: {run.problem.describe(best.best_index)}, {best.best_ms:.4g} ms"
    runner_up = run.runner_up()
    if runner_up is not None:
        margin = runner_up.outcome.time_ms / best.best_ms - 1
        line += f", {margin:.1%} ahead of the runner-up ({run.problem.describe(runner_up.index)})"
    return line + f"; {best.best_ms / optimum - 1:.1%} above the recorded optimum"


def _score(recorded: Any, strategy: str, budget: Any, seeds: list[int], batch: int) -> list[Any]:
    from gpubench.tune import search

    scored = search.score(recorded, strategy, budget, seeds, batch)
    for problem in scored:
        click.echo(
            f"{problem.label}: {problem.configurations} configuration(s), optimum "
            f"{problem.optimum_ms:.4g} ms; {strategy}, {problem.seeds} seed(s), "
            f"budget {problem.evaluations}"
        )
        marks = sorted({max(1, round(problem.evaluations * f)) for f in (0.1, 0.25, 0.5, 1)})
        click.echo(
            "  median best/optimum: "
            + ", ".join(f"{_ratio(problem.median_ratio[m - 1])} at {m}" for m in marks)
        )
        click.echo(f"  within 5% of the optimum at the budget: {problem.within:.0%} of seeds")
    return scored


def _check_plot(plot_path: str, seeds: int | None) -> None:
    """Before any scoring: --plot has runs to draw, matplotlib, and a picture's extension."""
    from gpubench.cli.charts import need_matplotlib
    from gpubench.store.outputs import check_picture

    if seeds is None:
        raise ConfigError("--plot draws the score of --seeds N runs: give --seeds", key="--plot")
    need_matplotlib("--plot")
    check_picture(plot_path, "--plot")


def _plot(scored: dict[str, list[Any]], target: str, recorded: Any) -> None:
    from gpubench.report import plot as plotting

    device = recorded.recording.device_name
    title = f"{recorded.space.suite}: median best found / optimum" + (
        f" · {device}" if device else ""
    )
    try:
        plotting.draw_search_curves(scored, target, title)
    except OSError as exc:
        raise ConfigError(
            f"cannot write the plot ({exc.strerror or exc})", source=target, key="--plot"
        ) from None
    click.echo(f"plot: {target}")


def _ratio(value: float) -> str:
    return "none yet" if value == float("inf") else f"{value:.3f}"
