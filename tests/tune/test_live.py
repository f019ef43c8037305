"""Live tuning (`gpubench tune SWEEP.yaml`) end to end on the CPU fake backend: real worker
processes, the engine's checks, early stops, the confirmation, the log and --resume, on a space
whose times are known (tests/suites/tunable.py: the optimum is block=128, unroll=4 at 1 ms)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpubench.cli import cli
from gpubench.model.results import load_jsonl

REPO = Path(__file__).resolve().parents[2]
TUNABLE = REPO / "tests/suites/tunable.yaml"


@pytest.fixture
def fake_gpu(monkeypatch, tmp_path):
    monkeypatch.setenv("GPUBENCH_BACKEND", "tests.fakes:FakeBackend")
    monkeypatch.chdir(tmp_path)


def tune(*args: str):
    return CliRunner().invoke(cli, ["tune", *args], terminal_width=200, catch_exceptions=False)


def statuses(log: str = "results/tunable.tune.jsonl") -> dict[str, list[str]]:
    _, results = load_jsonl(log)
    found: dict[str, list[str]] = {}
    for result in results:
        found.setdefault(f"n={result.point['n']}", []).append(str(result.status))
    return found


def test_exhaustive_finds_and_confirms_the_optimum_pruning_the_slow_and_never_ranking_a_failure(
    fake_gpu,
):
    result = tune(str(TUNABLE), "--strategy", "exhaustive", "--budget", "100%", "--batch", "8")
    assert result.exit_code == 0, result.output
    for n in (1000, 3000):
        assert (
            f"n={n}: 24 configuration(s), budget 100% (24 evaluation(s) at most), strategy "
            "exhaustive, seed 0\n" in result.output
        )
    # Round 1 has no bar; round 2's is 1.3 ms x 1.05 (block=64, unroll=4), round 3's 1.05 ms.
    assert result.output.count("  24 evaluated: 10 pruned, 2 failed;") == 2
    assert (
        result.output.count(
            "  best (confirmed, 3 measured again): block=128, unroll=4, 1 ms (noise 0.0%), 20.0% "
            "ahead of the runner-up (block=128, unroll=2)\n"
        )
        == 2
    )
    found = statuses()
    for n in ("n=1000", "n=3000"):
        assert len(found[n]) == 24
        assert sorted(set(found[n])) == ["incorrect", "launch_failed", "ok", "pruned"]
        assert (found[n].count("pruned"), found[n].count("ok")) == (10, 12)
    _, results = load_jsonl("results/tunable.tune.jsonl")
    pruned = [r for r in results if str(r.status) == "pruned"]
    assert pruned and all(r.summary and r.summary["samples"] == 10 for r in pruned)
    slowest = next(r for r in pruned if (r.point["block"], r.point["unroll"]) == (1024, 1))
    assert slowest.reason == (
        "timing stopped after 10 samples: the fastest, 2.3 ms, is slower than the tuning run's bar "
        "of 1.05 ms (the best so far plus its margin); verified, not ranked"
    )
    assert slowest.verification is not None and slowest.verification.passed


def test_without_pruning_every_valid_configuration_is_timed_to_its_noise_target(fake_gpu):
    args = [str(TUNABLE), "--strategy", "exhaustive", "--budget", "100%", "--no-prune"]
    result = tune(*args, "--confirm", "0")
    assert result.exit_code == 0, result.output
    assert "pruned" not in {s for found in statuses().values() for s in found}
    assert "  24 evaluated: 0 pruned, 2 failed;" in result.output
    assert result.output.count("  best (unconfirmed: --confirm 0): block=128, unroll=4, 1 ms") == 2


def test_resume_counts_the_logged_configurations_and_measures_only_the_rest(fake_gpu):
    first = tune(str(TUNABLE), "--strategy", "random", "--budget", "6", "--batch", "3")
    assert first.exit_code == 0, first.output
    before = {n: len(v) for n, v in statuses().items()}
    assert before == {"n=1000": 6, "n=3000": 6}
    again = tune(
        str(TUNABLE),
        "--strategy",
        "random",
        "--budget",
        "10",
        "--batch",
        "3",
        "--resume",
        "results/tunable.tune.jsonl",
    )
    assert again.exit_code == 0, again.output
    assert again.output.count("  10 evaluated, 6 from the resumed log:") == 2
    assert again.output.count("  round 1: 3 measured") == 2
    assert again.output.count("  round 2: 1 measured") == 2
    assert {n: len(v) for n, v in statuses().items()} == {"n=1000": 10, "n=3000": 10}


def test_a_time_budget_spends_no_more_than_the_space(fake_gpu):
    result = tune(str(TUNABLE), "--strategy", "random", "--budget", "10m", "--batch", "24")
    assert result.exit_code == 0, result.output
    assert result.output.count("  24 evaluated:") == 2
    assert result.output.count("  round 1: 24 measured") == 2
    assert "round 2" not in result.output


def test_json_and_history_keep_the_run(fake_gpu):
    result = tune(
        str(TUNABLE), "--budget", "4", "--batch", "4", "--json", "t.json", "--history", "h.db"
    )
    assert result.exit_code == 0, result.output
    saved = json.loads(Path("t.json").read_text())
    assert saved["suite"] == "tunable" and len(saved["results"]) == 8
    assert saved["spec"]["tune"] == {"objective": "time"}
    assert "history: run 1 in h.db" in result.output


def test_a_problem_with_no_valid_configuration_is_exit_3(fake_gpu, tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        f"suite: {REPO / 'tests/suites/tunable.py'}\n"
        "params:\n  n: 100\n  block: [512, 1024]\n  unroll: [1, 8]\n"
        "constraints:\n  - '(block == 1024 and unroll == 8) or (block == 512 and unroll == 1)'\n"
    )
    result = tune(str(broken), "--budget", "100%", "--strategy", "exhaustive")
    assert result.exit_code == 3, result.output
    assert "  2 evaluated: 0 pruned, 2 failed;" in result.output
    assert result.output.endswith("no valid configuration found for n=100\n")


# The fake GPU draws 250 W but for two frugal configurations (tests/suites/tunable.py): by
# energy block=32, unroll=4 wins (1.6 ms, 176 mJ), by the energy-delay product block=128,
# unroll=2 (1.2 ms, 204 mJ), by time block=128, unroll=4 (1 ms, 250 mJ).
WINNERS = {
    "energy": "block=32, unroll=4, 176 mJ (energy noise 0.0%), 1.6 ms, 15.9% ahead of the "
    "runner-up (block=128, unroll=2)",
    "edp": "block=128, unroll=2, 244.8 mJ·ms = 204 mJ x 1.2 ms (energy noise 0.0%), 2.1% ahead "
    "of the runner-up (block=128, unroll=4)",
}


@pytest.mark.parametrize("objective", ["energy", "edp"])
def test_an_energy_objective_measures_energy_prunes_nothing_and_confirms_its_own_winner(
    fake_gpu, objective
):
    args = ["--strategy", "exhaustive", "--budget", "100%", "--batch", "8", "--json", "t.json"]
    result = tune(str(TUNABLE), *args, "--objective", objective, "--energy-window", "0.3")
    assert result.exit_code == 0, result.output
    noun = {"energy": "energy", "edp": "energy-delay product"}[objective]
    assert result.output.startswith(
        f"note: --objective {objective}: each configuration's energy is measured (--energy), and "
        f"none is pruned on time: a configuration slow in time may still win by its {noun}\n"
    )
    assert result.output.count(f"strategy exhaustive, seed 0, objective {objective}\n") == 2
    assert result.output.count("  24 evaluated: 0 pruned, 2 failed;") == 2
    winner = f"  best (confirmed, 3 measured again): {WINNERS[objective]}\n"
    assert result.output.count(winner) == 2
    assert "pruned" not in {s for found in statuses().values() for s in found}
    saved = json.loads(Path("t.json").read_text())
    assert saved["spec"]["tune"] == {"objective": objective}
    assert saved["spec"]["timing"]["energy"] is True
    assert saved["spec"]["timing"]["energy_window_s"] == 0.3
    ok = [r for r in saved["results"] if r["status"] == "ok"]
    assert len(ok) == 44 and all(r["energy"]["joules_per_run"] > 0 for r in ok)


def test_time_ranks_as_ever_with_energy_measured_beside_it(fake_gpu):
    args = ["--strategy", "exhaustive", "--budget", "100%", "--batch", "8", "--json", "t.json"]
    result = tune(str(TUNABLE), *args, "--energy", "--energy-window", "0.3")
    assert result.exit_code == 0, result.output
    assert "note: --objective" not in result.output and "objective time" not in result.output
    assert result.output.count("  24 evaluated: 10 pruned, 2 failed;") == 2
    assert (
        result.output.count("  best (confirmed, 3 measured again): block=128, unroll=4, 1 ms") == 2
    )
    saved = json.loads(Path("t.json").read_text())
    assert saved["spec"]["tune"] == {"objective": "time"}
    winner = next(
        r for r in saved["results"] if (r["point"]["block"], r["point"]["unroll"]) == (128, 4)
    )
    assert winner["energy"]["joules_per_run"] == pytest.approx(0.25)


def test_an_energy_objective_without_energy_is_one_line(fake_gpu):
    result = tune(str(TUNABLE), "--objective", "edp", "--no-energy")
    assert (result.exit_code, result.output) == (
        2,
        "error: --no-energy: --objective edp ranks by the energy that --no-energy leaves "
        "unmeasured\n",
    )
    result = tune(str(TUNABLE), "--energy-window", "0.1")
    assert (result.exit_code, result.output) == (
        2,
        "error: --energy-window: must be at least 0.3 (got 0.1)\n",
    )


def test_pruning_judges_time_alone():
    from gpubench.tune.live import Settings
    from gpubench.tune.objective import Objective

    assert Settings().prunes and not Settings(prune=False).prunes
    assert not Settings(objective=Objective.ENERGY).prunes
    assert not Settings(objective=Objective.EDP).prunes


@pytest.mark.gpu
def test_gpu_live_tuning_confirms_a_verified_winner_on_real_kernels(tmp_path, monkeypatch):
    """A small transpose space (tile shapes x rows per block at a size that is no multiple of
    any tile) tuned exhaustively on the GPU: every configuration checked, none failed, the
    winner measured again; the log holds one result per configuration."""
    monkeypatch.chdir(tmp_path)
    Path("space.yaml").write_text(
        "suite: transpose\nvariants: [coalesced]\nbaseline: coalesced\n"
        "params:\n  size: 1000\n  tile: [16, 32]\n  block_rows: [1, 2, 4, 8]\n"
    )
    result = tune("space.yaml", "--strategy", "exhaustive", "--budget", "100%", "--batch", "4")
    assert result.exit_code == 0, result.output
    assert "  8 evaluated:" in result.output and ", 0 failed;" in result.output
    assert "  best (confirmed, 3 measured again): " in result.output
    _, results = load_jsonl("results/space.tune.jsonl")
    assert len(results) == 8
    assert {str(r.status) for r in results} <= {"ok", "unstable", "pruned"}
    assert all(r.verification is not None and r.verification.passed for r in results)


def test_the_sweep_file_s_own_outputs_are_left_to_its_sweep(fake_gpu, tmp_path):
    space = tmp_path / "space.yaml"
    space.write_text(
        TUNABLE.read_text().replace("suite: tunable.py", f"suite: {TUNABLE.parent}/tunable.py")
        + "outputs:\n  jsonl: sweep.jsonl\n  json: sweep.json\n"
    )
    result = tune(str(space), "--budget", "2", "--batch", "2")
    assert result.exit_code == 0, result.output
    assert Path("results/space.tune.jsonl").is_file()
    assert not Path("sweep.jsonl").exists() and not Path("sweep.json").exists()


def test_a_round_is_as_many_configurations_as_compile_at_once_and_two_per_gpu(monkeypatch):
    from gpubench.engine.spread import Spread
    from gpubench.tune.live import auto_batch

    monkeypatch.setenv("GPUBENCH_COMPILE_WORKERS", "5")
    assert auto_batch(Spread()) == 5
    assert auto_batch(Spread(devices=[0, 1, 2])) == 6
    monkeypatch.delenv("GPUBENCH_COMPILE_WORKERS")
    monkeypatch.setattr("gpubench.tune.live.usable_cpus", lambda: 64)
    assert auto_batch(Spread()) == 32
    monkeypatch.setattr("gpubench.tune.live.usable_cpus", lambda: 1)
    assert auto_batch(Spread()) == 2  # one core: still two configurations for the GPU


def test_the_search_measures_a_problem_on_one_data_set_and_the_confirmation_on_another(fake_gpu):
    result = tune(str(TUNABLE), "--strategy", "exhaustive", "--budget", "100%", "--batch", "8")
    assert result.exit_code == 0, result.output
    _, results = load_jsonl("results/tunable.tune.jsonl")
    for n in (1000, 3000):
        # Each configuration's latest result: the three best from their confirmation.
        seeds = [r.seed for r in results if r.point["n"] == n]
        counts = sorted(seeds.count(seed) for seed in set(seeds))
        assert counts == [3, 21]  # the search on one data set, the confirmation on another
