"""`gpubench tune --replay LOG`: one search against a recorded sweep, a strategy's score over
seeds (several side by side, drawn with --plot), and Kernel Tuner's cache written from a
recording."""

from __future__ import annotations

from typing import Any

import click

from gpubench.errors import ConfigError


def replay(
    config_path: str | None,
    source: tuple[str, int | None, str],
    names: list[str],
    budget: Any,
    seed: int,
    seeds: int | None,
    batch: int,
    export_path: str | None,
    plot_path: str | None,
) -> None:
    """The replay's work: the plot's path checked first, then the recording read (`source`:
    its path, the run of a history store, and the objective its costs are of)."""
    from gpubench.tune import replay as replays
    from gpubench.tune import strategies
    from gpubench.tune.objective import Objective

    if plot_path is not None:
        _check_plot(plot_path, seeds)
    path, run_id, objective = source
    recorded = replays.prepare(config_path, path, run_id, Objective(objective))
    if recorded.space.left_out:
        from gpubench.model.notices import LeftOutOfSearch
        from gpubench.report.notices import text

        click.echo(text(LeftOutOfSearch(recorded.space.left_out)), err=True)
    if export_path is None:  # the command's mistakes first (exit 2), then the machine's
        for name in names:
            strategies.check_installed(name)
    if export_path is not None:
        _export(recorded, export_path)
    elif seeds is not None:
        scored = {
            name: _score(recorded, name, budget, list(range(seed, seed + seeds)), batch)
            for name in names
        }
        if plot_path is not None:
            _plot(scored, plot_path, recorded)
    else:
        _run(recorded, names[0], budget, seed, batch)


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
    """One search of every problem, a batch of each in turn; each improvement as found, then
    each problem's verdict."""
    from gpubench.tune import search
    from gpubench.tune.objective import Objective

    objective = Objective(recorded.recording.objective)
    ranked = "" if objective is Objective.TIME else f", objective {objective}"
    found = search.searches(recorded.space, strategy, budget, seed)
    for one in found:
        click.echo(
            f"{one.problem.label}: {len(one.problem.configurations)} configuration(s), "
            f"{one.evaluations} evaluation(s), strategy {strategy}, seed {seed}{ranked}"
        )

    several = len(found) > 1  # the problems take turns: each line says whose it is

    def improved(run: Any, step: Any) -> None:
        if step.best_index == step.index:
            whose = f"{run.problem.label}: " if several else ""
            click.echo(
                f"  {whose}{len(run.steps):>5}  best so far {objective.show(step.best_cost)}  "
                f"{run.problem.describe(step.index)}"
            )

    search.interleave(found, search.one_at_a_time(recorded.evaluate), batch, improved)
    for one in found:
        verdict = _verdict(one.run, recorded.optimum(one.problem), objective)
        click.echo(f"{one.problem.label}: {verdict}" if several else f"  {verdict}")


def _verdict(run: Any, optimum: float, objective: Any) -> str:
    best = run.best
    if best is None:
        return "no valid configuration found within the budget"
    line = f"best: {run.problem.describe(best.best_index)}, {objective.show(best.best_cost)}"
    runner_up = run.runner_up()
    if runner_up is not None:
        margin = runner_up.outcome.cost / best.best_cost - 1
        line += f", {margin:.1%} ahead of the runner-up ({run.problem.describe(runner_up.index)})"
    return line + f"; {best.best_cost / optimum - 1:.1%} above the recorded optimum"


def _score(recorded: Any, strategy: str, budget: Any, seeds: list[int], batch: int) -> list[Any]:
    from gpubench.tune import search
    from gpubench.tune.objective import Objective

    objective = Objective(recorded.recording.objective)
    scored = search.score(recorded, strategy, budget, seeds, batch)
    for problem in scored:
        click.echo(
            f"{problem.label}: {problem.configurations} configuration(s), optimum "
            f"{objective.show(problem.optimum)}; {strategy}, {problem.seeds} seed(s), "
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
    from gpubench.tune.objective import Objective

    device = recorded.recording.device_name
    objective = Objective(recorded.recording.objective)
    by = "" if objective is Objective.TIME else f" ({objective.noun})"
    title = f"{recorded.space.suite}: median best found / optimum{by}" + (
        f" · {device}" if device else ""
    )
    try:
        plotting.draw_search_curves(scored, target, title, objective.unit)
    except OSError as exc:
        raise ConfigError(
            f"cannot write the plot ({exc.strerror or exc})", source=target, key="--plot"
        ) from None
    click.echo(f"plot: {target}")


def _ratio(value: float) -> str:
    return "none yet" if value == float("inf") else f"{value:.3f}"
