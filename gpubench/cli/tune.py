"""`gpubench tune`: a budgeted search for the best configuration of each problem of a sweep,
against a recorded sweep (--replay) for now; its score over many seeds; Kernel Tuner's cache
written from a recording."""

from __future__ import annotations

from typing import Any

import click

from gpubench.cli.common import EXIT_CODES_HELP
from gpubench.errors import EXIT_OK, ConfigError

# A score's seeds, each a whole search per problem: enough for any median, bounded in time.
MAX_SEEDS = 1000


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
    help="exhaustive, random, or an Optuna sampler: tpe, cmaes, gp, qmc (the tune extra).",
)
@click.option(
    "--budget",
    default="10%",
    show_default=True,
    help="Evaluations per problem: a count (25) or a percentage of its configurations (10%).",
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
def tune(
    config_path: str | None,
    replay_path: str | None,
    strategy: str,
    budget: str,
    seed: int,
    seeds: int | None,
    export_path: str | None,
) -> None:
    """Search each problem of a sweep for its fastest configuration within a budget.

    A problem is what the inputs read (a size, a dtype); a configuration, the rest (tile
    shapes, stages, the variant). Failed configurations (compile errors, wrong answers) are
    spent evaluations, never winners.

    \b
    Examples:
      gpubench tune configs/matmul_tune.yaml --replay results/matmul_tune.jsonl
      gpubench tune configs/matmul_tune.yaml --replay LOG --budget 10% --seeds 50
      gpubench tune --replay results/matmul_tune.jsonl --strategy random --seeds 50
      gpubench tune --replay results/matmul_tune.jsonl --export-kt matmul_kt.json
    """
    from gpubench.tune import replay, search, strategies

    if replay_path is None:
        raise ConfigError(
            "live tuning is not there yet: give --replay LOG, a recorded exhaustive sweep",
            source="command line",
            key="--replay",
        )
    strategies.check_name(strategy)
    parsed = search.parse_budget(budget)
    recorded = replay.prepare(config_path, replay_path)
    if export_path is None:  # the command's mistakes first (exit 2), then the machine's
        strategies.check_installed(strategy)
    ctx = click.get_current_context()
    if export_path is not None:
        _export(recorded, export_path)
    elif seeds is not None:
        _score(recorded, strategy, parsed, list(range(seed, seed + seeds)))
    else:
        _run(recorded, strategy, parsed, seed)
    ctx.exit(EXIT_OK)


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


def _run(recorded: Any, strategy: str, budget: Any, seed: int) -> None:
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
        run = search.search(problem, recorded.evaluate, made, evaluations, improved)
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


def _score(recorded: Any, strategy: str, budget: Any, seeds: list[int]) -> None:
    from gpubench.tune import search

    for problem in search.score(recorded, strategy, budget, seeds):
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


def _ratio(value: float) -> str:
    return "none yet" if value == float("inf") else f"{value:.3f}"
