"""`gpubench tune --replay`: one run, the score over seeds, the Kernel Tuner export, and bad
input as one line with its exit code (in-process, no GPU)."""

from __future__ import annotations

import subprocess
import sys

from click.testing import CliRunner

from gpubench.cli import cli
from gpubench.model.results import Status
from tests.tune.recorded import frugal_watts, log_file, sweep_file, ten_times


def tune(tmp_path, monkeypatch, *args, times=None, sizes=(64,), watts=None):
    monkeypatch.chdir(tmp_path)
    sweep_file(tmp_path, list(sizes))
    log_file(tmp_path, ten_times() if times is None else times, watts=watts)
    return CliRunner().invoke(cli, ["tune", *args], terminal_width=200)


def test_one_run_prints_the_best_so_far_and_the_margin(tmp_path, monkeypatch):
    times = ten_times() | {(64, 16, 1): Status.COMPILE_FAILED}
    args = ["space.yaml", "--replay", "space.jsonl", "--strategy", "exhaustive"]
    result = tune(tmp_path, monkeypatch, *args, "--budget", "100%", times=times)
    assert result.exit_code == 0, result.output
    assert result.output == (
        "size=64, rows=64, cols=64, dtype=float32: 10 configuration(s), 10 evaluation(s), "
        "strategy exhaustive, seed 0\n"
        "      2  best so far 1.75 ms  tile=32, block_rows=1\n"
        "      4  best so far 1.5 ms  tile=32, block_rows=2\n"
        "      6  best so far 1.25 ms  tile=32, block_rows=4\n"
        "      8  best so far 1 ms  tile=32, block_rows=8\n"
        "  best: tile=32, block_rows=8, 1 ms, 25.0% ahead of the runner-up (tile=32, "
        "block_rows=4); 0.0% above the recorded optimum\n"
    )


# -- --objective: the fastest configuration is not the most frugal (recorded.frugal_watts) ----
EXHAUSTIVE = ["space.yaml", "--replay", "space.jsonl", "--strategy", "exhaustive", "--budget"]


def test_each_objective_picks_its_own_winner_of_one_recording(tmp_path, monkeypatch):
    winners = {}
    for objective in ("time", "energy", "edp"):
        args = [*EXHAUSTIVE, "100%", "--objective", objective]
        result = tune(tmp_path, monkeypatch, *args, watts=frugal_watts())
        assert result.exit_code == 0, result.output
        winners[objective] = result.output.splitlines()[-1]
    assert winners == {
        "time": "  best: tile=32, block_rows=8, 1 ms, 25.0% ahead of the runner-up (tile=32, "
        "block_rows=4); 0.0% above the recorded optimum",
        "energy": "  best: tile=16, block_rows=8, 160 mJ, 17.2% ahead of the runner-up (tile=32, "
        "block_rows=4); 0.0% above the recorded optimum",
        "edp": "  best: tile=32, block_rows=4, 234.4 mJ·ms, 2.4% ahead of the runner-up (tile=32, "
        "block_rows=8); 0.0% above the recorded optimum",
    }


def test_a_replay_by_energy_prints_the_best_so_far_in_millijoules(tmp_path, monkeypatch):
    args = [*EXHAUSTIVE, "100%", "--objective", "energy"]
    result = tune(tmp_path, monkeypatch, *args, watts=frugal_watts())
    assert result.exit_code == 0, result.output
    assert result.output == (
        "size=64, rows=64, cols=64, dtype=float32: 10 configuration(s), 10 evaluation(s), "
        "strategy exhaustive, seed 0, objective energy\n"
        "      1  best so far 550 mJ  tile=16, block_rows=1\n"
        "      2  best so far 350 mJ  tile=32, block_rows=1\n"
        "      4  best so far 300 mJ  tile=32, block_rows=2\n"
        "      6  best so far 187.5 mJ  tile=32, block_rows=4\n"
        "      7  best so far 160 mJ  tile=16, block_rows=8\n"
        "  best: tile=16, block_rows=8, 160 mJ, 17.2% ahead of the runner-up (tile=32, "
        "block_rows=4); 0.0% above the recorded optimum\n"
    )


def test_the_score_by_energy_is_against_the_energy_optimum(tmp_path, monkeypatch):
    args = [*EXHAUSTIVE, "8", "--seeds", "3", "--objective", "edp"]
    result = tune(tmp_path, monkeypatch, *args, watts=frugal_watts())
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == (
        "size=64, rows=64, cols=64, dtype=float32: 10 configuration(s), optimum 234.4 mJ·ms; "
        "exhaustive, 3 seed(s), budget 8"
    )
    assert "within 5% of the optimum at the budget: 100% of seeds" in result.output


def test_a_recording_without_energy_ranked_by_energy_is_one_line(tmp_path, monkeypatch):
    for objective in ("energy", "edp"):
        result = tune(tmp_path, monkeypatch, *EXHAUSTIVE, "100%", "--objective", objective)
        assert (result.exit_code, result.output) == (
            2,
            "error: space.jsonl: the replay log has no energy readings: record it with --energy\n",
        )
    kt = tune(tmp_path, monkeypatch, "--replay", "space.jsonl", "--export-kt", "kt.json")
    assert kt.exit_code == 0, kt.output
    result = CliRunner().invoke(cli, ["tune", "--replay", "kt.json", "--objective", "energy"])
    assert (result.exit_code, result.output) == (
        2,
        "error: kt.json: a Kernel Tuner cache has no energy readings: record it with --energy\n",
    )


def test_energy_options_a_replay_cannot_take_are_one_line(tmp_path, monkeypatch):
    replay = ["space.yaml", "--replay", "space.jsonl"]
    cases = {
        ("--energy",): "error: --energy: --energy is for live tuning on the GPU; a replay "
        "measures nothing\n",
        ("--no-energy",): "error: --energy: --energy is for live tuning on the GPU; a replay "
        "measures nothing\n",
        ("--energy-window", "2"): "error: --energy-window: --energy-window is for live tuning "
        "on the GPU; a replay measures nothing\n",
        ("--objective", "edp", "--export-kt", "kt.json"): "error: --objective: --export-kt "
        "writes Kernel Tuner's cache of times: leave out --objective\n",
        ("--objective", "joules"): "error: gpubench tune: Invalid value for '--objective': "
        "'joules' is not one of 'time', 'energy', 'edp' (see 'gpubench tune --help')\n",
    }
    for args, line in cases.items():
        result = tune(tmp_path, monkeypatch, *replay, *args, watts=frugal_watts())
        assert (result.exit_code, result.output) == (2, line), args


def test_the_score_over_seeds(tmp_path, monkeypatch):
    times = ten_times() | {(64, 16, 1): Status.COMPILE_FAILED}
    args = ["space.yaml", "--replay", "space.jsonl", "--strategy", "exhaustive"]
    result = tune(tmp_path, monkeypatch, *args, "--budget", "8", "--seeds", "3", times=times)
    assert result.exit_code == 0, result.output
    assert result.output == (
        "size=64, rows=64, cols=64, dtype=float32: 10 configuration(s), optimum 1 ms; "
        "exhaustive, 3 seed(s), budget 8\n"
        "  median best/optimum: none yet at 1, 1.750 at 2, 1.500 at 4, 1.000 at 8\n"
        "  within 5% of the optimum at the budget: 100% of seeds\n"
    )


def test_the_kernel_tuner_export_writes_one_file_per_problem(tmp_path, monkeypatch):
    times = ten_times(64) | ten_times(128, offset=1.0)
    result = tune(
        tmp_path, monkeypatch, "--replay", "space.jsonl", "--export-kt", "kt.json", times=times
    )
    assert result.exit_code == 0, result.output
    assert result.output == (
        "size=64, rows=64, cols=64: 10 configuration(s) -> kt.0.json\n"
        "size=128, rows=128, cols=128: 10 configuration(s) -> kt.1.json\n"
    )
    replay = ["tune", "--replay", "kt.1.json", "--strategy", "exhaustive", "--budget", "100%"]
    again = CliRunner().invoke(cli, replay)
    assert again.exit_code == 0, again.output
    assert again.output.splitlines()[-1] == (
        "  best: tile=32, block_rows=8, 2 ms, 12.5% ahead of the runner-up (tile=32, "
        "block_rows=4); 0.0% above the recorded optimum"
    )


def refused(tmp_path, monkeypatch, *args, times=None) -> tuple[int, str]:
    result = tune(tmp_path, monkeypatch, *args, times=times)
    return result.exit_code, result.output


def test_bad_input_is_one_line_and_exit_code_2(tmp_path, monkeypatch):
    replay = ["space.yaml", "--replay", "space.jsonl"]
    failed = dict.fromkeys(ten_times(), Status.INCORRECT)
    cases = {
        (*replay, "--budget", "0"): "error: command line: --budget: expected a number of "
        "evaluations above 0 (25), a percentage of the space in (0, 100] (10%) or a wall time "
        "per problem (90s, 5m), got '0'",
        (*replay, "--budget", "0s"): "error: command line: --budget: expected a number of "
        "evaluations above 0 (25), a percentage of the space in (0, 100] (10%) or a wall time "
        "per problem (90s, 5m), got '0s'",
        (*replay, "--budget", "90s"): "error: --budget: a replay has no wall time to spend: "
        "give the budget in evaluations (25) or as a percentage (10%)",
        (*replay, "--strategy", "annealing"): "error: command line: --strategy: unknown "
        "strategy 'annealing'; strategies: exhaustive, random, tpe, cmaes, gp, qmc",
        (*replay, "--strategy", "tpe,annealing", "--seeds", "2"): "error: command line: "
        "--strategy: unknown strategy 'annealing'; strategies: exhaustive, random, tpe, cmaes, "
        "gp, qmc",
        (*replay, "--strategy", "tpe,random"): "error: --strategy: several strategies are "
        "scored side by side: give --seeds N",
        (*replay, "--plot", "curves.png"): "error: --plot: --plot draws the score of --seeds N "
        "runs: give --seeds",
        (*replay, "--seeds", "2", "--plot", "curves.txt"): "error: curves.txt: --plot: a "
        "picture needs an extension matplotlib writes",
        (*replay, "--resume", "old.jsonl"): "error: --resume: --resume is for live tuning on "
        "the GPU; a replay measures nothing",
        (*replay, "--devices", "all"): "error: --devices: --devices is for live tuning on the "
        "GPU; a replay measures nothing",
        (): "error: command line: SWEEP.yaml: give a sweep file to tune live on the GPU, or "
        "--replay LOG to search a recorded sweep",
        ("space.yaml", "--seeds", "5"): "error: --seeds: --seeds works on a recorded sweep: "
        "give --replay LOG",
        ("space.yaml", "--export-kt", "kt.json"): "error: --export-kt: --export-kt works on a "
        "recorded sweep: give --replay LOG",
        (*replay, "--seeds", "0"): "error: gpubench tune: Invalid value for '--seeds': 0 is "
        "not in the range 1<=x<=1000 (see 'gpubench tune --help')",
        (*replay, "--batch", "0"): "error: gpubench tune: Invalid value for '--batch': 0 is "
        "not in the range 1<=x<=4096 (see 'gpubench tune --help')",
    }
    for args, line in cases.items():
        code, output = refused(tmp_path, monkeypatch, *args)
        assert code == 2 and output.count("\n") == 1 and output.startswith(line), (args, output)
    code, output = refused(tmp_path, monkeypatch, *replay, times=failed)
    assert code == 2 and output.count("\n") == 1
    assert output.startswith("error: ") and "has no valid point for the problem" in output


def test_a_log_of_another_suite_is_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    sweep_file(tmp_path, [64])
    log_file(tmp_path, ten_times(), suite="reduction", name="other.jsonl")
    result = CliRunner().invoke(cli, ["tune", "space.yaml", "--replay", "other.jsonl"])
    assert (result.exit_code, result.output) == (
        2,
        "error: other.jsonl: the replay log is of the suite 'reduction', the sweep of "
        "'transpose'\n",
    )


def test_the_command_line_loads_no_optuna_before_a_strategy_needs_it():
    code = "import sys, gpubench.cli; print('optuna' in sys.modules, 'numpy' in sys.modules)"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert found.stdout == "False False\n", found.stderr


def test_without_optuna_the_command_s_mistakes_come_first_then_the_missing_package(
    tmp_path, monkeypatch
):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "optuna" else find_spec(name)
    )
    replay = ["space.yaml", "--replay", "space.jsonl"]
    assert refused(tmp_path, monkeypatch, *replay, "--budget", "0")[0] == 2
    assert refused(tmp_path, monkeypatch, *replay) == (
        4,
        "error: the strategy 'tpe' needs Optuna: pip install 'gpubench-studies[tune]' (or use "
        "--strategy random or exhaustive)\n",
    )
    assert tune(tmp_path, monkeypatch, *replay, "--strategy", "random").exit_code == 0


def test_a_negative_seed_or_too_many_seeds_is_one_line(tmp_path, monkeypatch):
    replay = ["space.yaml", "--replay", "space.jsonl", "--strategy", "random"]
    assert refused(tmp_path, monkeypatch, *replay, "--seed", "-5") == (
        2,
        "error: gpubench tune: Invalid value for '--seed': -5 is not in the range "
        "0<=x<=9223372036854775807 (see 'gpubench tune --help')\n",
    )
    assert refused(tmp_path, monkeypatch, *replay, "--seeds", "1000000000") == (
        2,
        "error: gpubench tune: Invalid value for '--seeds': 1000000000 is not in the range "
        "1<=x<=1000 (see 'gpubench tune --help')\n",
    )


def test_an_export_that_cannot_be_written_is_one_line(tmp_path, monkeypatch):
    missing = tmp_path / "no" / "such" / "kt.json.gz"
    result = tune(tmp_path, monkeypatch, "--replay", "space.jsonl", "--export-kt", str(missing))
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == (
        f"error: {missing}: cannot write the Kernel Tuner cache (No such file or directory)"
    )


def test_strategies_side_by_side_are_scored_and_drawn(tmp_path, monkeypatch):
    import pytest

    pytest.importorskip("matplotlib")
    args = ["space.yaml", "--replay", "space.jsonl", "--budget", "100%", "--seeds", "3"]
    result = tune(
        tmp_path, monkeypatch, *args, "--strategy", "exhaustive,random", "--plot", "c.png"
    )
    assert result.exit_code == 0, result.output
    assert result.output.count("configuration(s), optimum 1 ms;") == 2
    assert "; exhaustive, 3 seed(s), budget 10" in result.output
    assert "; random, 3 seed(s), budget 10" in result.output
    assert result.output.endswith("plot: c.png\n")
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_batch_in_replay_proposes_before_it_learns(tmp_path, monkeypatch):
    args = ["space.yaml", "--replay", "space.jsonl", "--strategy", "exhaustive"]
    result = tune(tmp_path, monkeypatch, *args, "--budget", "4", "--batch", "3")
    assert result.exit_code == 0, result.output
    assert "4 evaluation(s), strategy exhaustive" in result.output
    assert "      4  best so far 1.5 ms  tile=32, block_rows=2" in result.output


def stored(tmp_path):
    """The recorded space as run 1 of a history store, and a second run of another size."""
    from gpubench.model.results import load_any
    from gpubench.store.history import History

    log_file(tmp_path, ten_times(128, offset=1.0), name="other.jsonl")
    with History.open(tmp_path / "history.sqlite") as store:
        first = store.append(load_any(tmp_path / "space.jsonl"))
        second = store.append(load_any(tmp_path / "other.jsonl"))
    return first, second


def test_a_run_of_the_history_store_replays_as_its_log(tmp_path, monkeypatch):
    args = ["--strategy", "exhaustive", "--budget", "100%"]
    from_log = tune(tmp_path, monkeypatch, "--replay", "space.jsonl", *args)
    first, second = stored(tmp_path)
    assert (first, second) == (1, 2)
    from_store = CliRunner().invoke(
        cli, ["tune", "--replay", "history.sqlite", "--replay-run", "1", *args]
    )
    assert from_store.exit_code == 0, from_store.output
    assert from_store.output == from_log.output
    other = CliRunner().invoke(
        cli, ["tune", "--replay", "history.sqlite", "--replay-run", "2", *args]
    )
    assert "best: tile=32, block_rows=8, 2 ms" in other.output


def test_a_history_store_without_its_run_or_a_run_without_a_store_is_one_line(
    tmp_path, monkeypatch
):
    tune(tmp_path, monkeypatch, "--help")
    stored(tmp_path)
    cases = [
        (
            ["--replay", "history.sqlite"],
            "history.sqlite: a history store holds many runs: give --replay-run ID (gpubench "
            "history list --store ... shows them)",
        ),
        (
            ["--replay", "space.jsonl", "--replay-run", "1"],
            "space.jsonl: --replay-run picks a run of a history store, and this is not one",
        ),
        (
            ["--replay", "history.sqlite", "--replay-run", "9"],
            "history.sqlite: no run 9 in the store",
        ),
        (
            ["space.yaml", "--replay-run", "1"],
            "--replay-run: --replay-run picks a run of --replay STORE",
        ),
    ]
    for args, expected in cases:
        result = CliRunner().invoke(cli, ["tune", *args])
        assert result.exit_code == 2, (args, result.output)
        assert result.output.strip().endswith(expected), result.output
        assert "Traceback" not in result.output
