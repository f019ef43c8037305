"""`gpubench tune CONFIG.yaml` on the GPU: the live search run, its progress lines, the
confirmed winners and the files kept (gpubench.tune.live does the work)."""

from __future__ import annotations

from typing import Any

import click

from gpubench.errors import EXIT_FAILED_POINTS, EXIT_INTERRUPTED, EXIT_OK


def live(
    config_path: str,
    strategy: str,
    budget: Any,
    seed: int,
    options: dict[str, Any],
) -> int:
    """Tune the sweep file's problems on the GPU (`options`: the command's live options);
    the exit code."""
    from pathlib import Path

    from gpubench.cli.common import err_console, spread_from
    from gpubench.cli.outcome import keep_files, notes_to
    from gpubench.load import config
    from gpubench.store.outputs import OutputRequest
    from gpubench.tune import live as tuning
    from gpubench.tune.objective import Objective

    found = str(config.find(config_path))
    objective = Objective(options["objective"])
    spec = _spec(found, objective, options)
    spread = spread_from(options["device"], options["devices"])
    request = OutputRequest(
        json=options["json_path"],
        jsonl=options["jsonl_path"],
        resume=options["resume_path"],
        force=options["force"],
        history=options["history_path"],
        label=options["label"],
        default_log=str(Path("results") / f"{Path(found).stem}.tune.jsonl"),
    )
    settings = tuning.Settings(
        strategy, budget, seed, options["batch"], options["confirm"], options["prune"], objective
    )
    err = err_console()
    report = _LiveReport(settings)
    outcome = tuning.tune(
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
        keep_files(outcome.result_set, outcome.files, err, source="gpubench tune")
    if outcome.interrupted:
        err.print(f"interrupted: kept {len(outcome.result_set.results)} finished result(s)")
        return EXIT_INTERRUPTED
    missing = [p.problem.label for p in outcome.problems if p.winner is None]
    if missing:
        err.print(f"[bold red]no valid configuration found for {', '.join(missing)}[/]")
        return EXIT_FAILED_POINTS
    return EXIT_OK


def _spec(found: str, objective: Any, options: dict[str, Any]) -> Any:
    """The sweep file's sweep, with the command's --energy and --energy-window over its
    timing; an objective ranked by energy with --no-energy is refused."""
    import dataclasses

    from gpubench.cli.energy_options import with_timing
    from gpubench.errors import ConfigError
    from gpubench.load import config

    if objective.needs_energy and options["energy"] is False:
        raise ConfigError(
            f"--objective {objective} ranks by the energy that --no-energy leaves unmeasured",
            key="--no-energy",
        )
    # The sweep file's `outputs:` are its sweep's files: a tuning run keeps its own.
    spec = dataclasses.replace(config.load(found), outputs=config.Outputs())
    return with_timing(spec, energy=options["energy"], energy_window_s=options["energy_window_s"])


class _LiveReport:
    """Live tuning's lines: the problem, each round, each improvement, the confirmed winner."""

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        self.problem: Any = None
        self.introduced: set[int] = set()

    def _header(self, run: Any) -> None:
        """The problem's line where its lines start: in full the first time (the problems
        take rounds in turn), its label after."""
        if run.problem is self.problem:
            return
        self.problem = run.problem
        if id(run.problem) in self.introduced:
            click.echo(f"{run.problem.label}:")
            return
        self.introduced.add(id(run.problem))
        settings, size = self.settings, len(run.problem.configurations)
        click.echo(
            f"{run.problem.label}: {size} configuration(s), budget {settings.budget} "
            f"({settings.budget.for_problem(size)} evaluation(s) at most), strategy "
            f"{settings.strategy}, seed {settings.seed}{_ranked_by(settings.objective)}"
        )

    def step(self, run: Any, step: Any) -> None:
        self._header(run)
        if step.best_index == step.index:
            click.echo(
                f"  {len(run.steps):>5}  best so far "
                f"{self.settings.objective.show(step.best_cost)}  "
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
        unranked = f", {problem.unranked} without energy" if problem.unranked else ""
        click.echo(
            f"  {steps} evaluated{resumed}: {problem.count('pruned')} pruned, "
            f"{problem.failed} failed{unranked}; {problem.wall_s:.1f} s"
        )
        winner = problem.winner
        if winner is None:
            click.echo("  no valid configuration confirmed")
            return
        index, result = winner
        how = (
            "unconfirmed: --confirm 0"
            if problem.unconfirmed
            else f"confirmed, {len(problem.confirmed)} measured again"
        )
        figures = _figures(result, self.settings.objective)
        line = f"  best ({how}): {problem.problem.describe(index)}, {figures}"
        if problem.margin is not None:
            runner_up = problem.problem.describe(problem.confirmed[1][0])
            line += f", {problem.margin:.1%} ahead of the runner-up ({runner_up})"
        click.echo(line)


def _ranked_by(objective: Any) -> str:
    """The objective, where it is not the default time."""
    return "" if objective == "time" else f", objective {objective}"


def _figures(result: Any, objective: Any) -> str:
    """The winner's figures: what the objective ranks first, with that figure's noise (the
    energy reading's for energy and edp), then the time beside it."""
    median = result.median_ms
    if not objective.needs_energy:
        noise = (result.summary or {}).get("rel_noise")
        return f"{median:.4g} ms" + (f" (noise {noise:.1%})" if isinstance(noise, float) else "")
    reading = result.energy or {}
    millijoules = reading["joules_per_run"] * 1000.0
    noise = reading.get("noise")
    noted = f" (energy noise {noise:.1%})" if isinstance(noise, float) else ""
    if objective == "energy":
        return f"{millijoules:.4g} mJ{noted}, {median:.4g} ms"
    edp = objective.show(objective.cost(result))
    return f"{edp} = {millijoules:.4g} mJ x {median:.4g} ms{noted}"
