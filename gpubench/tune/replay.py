"""A recorded exhaustive sweep standing in for the GPU: evaluating a configuration returns its
recorded cost under the tuning objective (its median time, its energy per run, or their
product: gpubench.tune.objective), or its recorded failure.

A recording is a results log (`gpubench sweep` writes one as it goes), a results JSON, a
Kernel Tuner cache file, or one run of a history store. Only results that were measured and
verified (`ok`, `unstable`) are candidates; every other status (compile_failed, incorrect,
launch_failed, skipped, unverified, ...) is a failure: an evaluation spent, that a strategy
learns from, never a winner.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from gpubench.errors import ConfigError
from gpubench.tune.objective import Objective
from gpubench.tune.recording import CANDIDATE_STATUSES, PRUNED, Outcome, Recording
from gpubench.tune.space import Problem, Space


def outcome_of(result: Any, objective: Objective = Objective.TIME) -> Outcome:
    """A gpubench Result as an outcome: its cost under the objective where it is a candidate
    (one without the energy reading its objective needs is none: its cost is None)."""
    status = str(result.status)
    cost = objective.cost(result)
    if status in CANDIDATE_STATUSES and cost is not None:
        return Outcome(status, float(cost))
    if status == PRUNED and cost is not None:
        return Outcome(status, hint=float(cost))
    return Outcome(status)


def load(
    path: str | os.PathLike[str],
    run_id: int | None = None,
    objective: Objective = Objective.TIME,
) -> Recording:
    """A results log, a results JSON, a Kernel Tuner cache, or run `run_id` of a history
    store, whichever the file is; each outcome's cost under `objective`."""
    from gpubench.tune import kernel_tuner_cache

    store = is_history_store(path)
    if store != (run_id is not None):
        raise ConfigError(
            "a history store holds many runs: give --replay-run ID (gpubench history list "
            "--store ... shows them)"
            if store
            else "--replay-run picks a run of a history store, and this is not one",
            source=str(path),
        )
    if kernel_tuner_cache.looks_like(path):
        if objective.needs_energy:
            raise ConfigError(NO_ENERGY.format(what="a Kernel Tuner cache"), source=str(path))
        return kernel_tuner_cache.read(path)
    if run_id is not None:
        loaded = _load_stored_run(path, run_id)
    elif str(path).endswith(".gz"):  # a gzipped results log (configs/recorded/*.jsonl.gz)
        loaded = _load_gzipped(path)
    else:
        from gpubench.model.results import load_any

        loaded = load_any(path)
    recording = Recording(
        suite=loaded.suite,
        source=str(path) if run_id is None else f"{path} run {run_id}",
        suite_ref=str(loaded.spec.get("suite_ref") or loaded.suite),
        device_name=str((loaded.environment.get("device") or {}).get("name") or ""),
        objective=objective.value,
    )
    if objective.needs_energy and all(r.joules_per_run is None for r in loaded.results):
        raise ConfigError(NO_ENERGY.format(what="the replay log"), source=recording.source)
    for result in loaded.results:
        recording.add(result.point, result.variant, outcome_of(result, objective))
    return recording


# A recording ranked by energy that holds none: one line, before any search.
NO_ENERGY = "{what} has no energy readings: record it with --energy"


# The first bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"


def is_history_store(path: str | os.PathLike[str]) -> bool:
    """Whether the file is an SQLite database (a history store, or one to be refused as not)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False  # the loader names what is wrong with the path


def _load_stored_run(path: str | os.PathLike[str], run_id: int) -> Any:
    from gpubench.store.history import History

    with History.open(path, create=False) as store:
        return store.result_set(run_id)


def _load_gzipped(path: str | os.PathLike[str]) -> Any:
    """A gzipped results file, read as its plain self (decompressed to a temporary file, at
    most as many bytes as a Kernel Tuner cache may hold)."""
    import tempfile

    from gpubench.model.results import load_any
    from gpubench.tune.kernel_tuner_cache import read_text

    try:
        text = read_text(path)
    except (OSError, EOFError) as exc:
        raise ConfigError(f"cannot read the gzipped replay log ({exc})", source=str(path)) from None
    with tempfile.TemporaryDirectory() as folder:
        plain = os.path.join(folder, os.path.basename(str(path))[: -len(".gz")])
        with open(plain, "w", encoding="utf-8") as handle:
            handle.write(text)
        try:
            return load_any(plain)
        except ConfigError as exc:  # named by the file the user gave, not the temporary one
            raise ConfigError(exc.message, source=str(path), key=exc.key) from None


def covered(recording: Recording, entries: list[tuple[dict[str, Any], str]]) -> list[Any]:
    """The entries the recording holds an outcome for; a ConfigError where it holds none."""
    held = [entry for entry in entries if recording.outcome(*entry) is not None]
    if not held:
        raise ConfigError(
            "the replay log holds no point of this sweep: record it with `gpubench sweep` first",
            source=recording.source,
        )
    return held


def check_suite(recording: Recording, suite: str) -> None:
    if recording.foreign:
        raise ConfigError(
            "a Kernel Tuner cache replays on its own: leave the sweep file out",
            source=recording.source,
        )
    if recording.suite != suite:
        raise ConfigError(
            f"the replay log is of the suite {recording.suite!r}, the sweep of {suite!r}",
            source=recording.source,
        )


@dataclass
class Replay:
    """The evaluator of one space: a configuration's recorded outcome."""

    recording: Recording
    space: Space

    def __post_init__(self) -> None:
        for problem in self.space.problems:
            if self.optimum(problem) is None:
                without = (
                    ", or has no energy reading"
                    if Objective(self.recording.objective).needs_energy
                    else ""
                )
                raise ConfigError(
                    f"the replay log has no valid point for the problem {problem.label} "
                    f"(every configuration failed or was not measured{without})",
                    source=self.recording.source,
                )

    def evaluate(self, problem: Problem, index: int) -> Outcome:
        found = self.recording.outcome(*problem.entries[index])
        return found if found is not None else Outcome("not_recorded")

    def optimum(self, problem: Problem) -> float | None:
        """The exhaustive optimum: the least recorded cost among the problem's configurations."""
        times = [self.evaluate(problem, i).cost for i in range(len(problem.configurations))]
        known = [t for t in times if t is not None]
        return min(known) if known else None


def prepare(
    config_path: str | None,
    replay_path: str,
    run_id: int | None = None,
    objective: Objective = Objective.TIME,
) -> Replay:
    """The replay of `replay_path` (run `run_id` of it, a history store) over the sweep
    file's space, or over the whole recorded space where no sweep file is given; each
    configuration's cost under `objective`."""
    from gpubench.tune import space as spaces

    recording = load(replay_path, run_id, objective)
    if not recording.entries:
        raise ConfigError("the replay log holds no result", source=recording.source)
    if recording.foreign and config_path is None:
        space = spaces.build(recording.suite, recording.entries, recording.source, set)
        return Replay(recording, space)
    from gpubench.load import config, registry

    if config_path is not None:
        spec = config.load(config.find(config_path))
        check_suite(recording, spec.suite)
        bench = spec.bench  # loaded with the sweep file
        entries = covered(recording, spaces.sweep_entries(spec, bench))
        baseline, tuned = spec.baseline, spec.tuned
    else:
        bench = registry.get(recording.suite_ref, source=recording.source, key="suite")
        entries, baseline, tuned = recording.entries, None, ()
    return Replay(recording, spaces.of_suite(bench, entries, recording.source, baseline, tuned))
