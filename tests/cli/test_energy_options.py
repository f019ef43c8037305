"""--energy and --energy-window on run and sweep, and the sweep file's timing.energy, through
the real CLI and worker processes over the CPU stand-in (gpubench.cli.energy_options)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpubench.cli import cli
from gpubench.engine import spawned

REPO = Path(__file__).parents[2]
SCALE = str(REPO / "tests/suites/scale.py")


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False, terminal_width=200)


@pytest.fixture
def fake_gpu(monkeypatch, tmp_path):
    monkeypatch.setenv("GPUBENCH_BACKEND", "tests.fakes:FakeBackend")
    monkeypatch.chdir(tmp_path)


def test_run_with_energy_shows_and_writes_each_results_energy(fake_gpu, tmp_path):
    result = invoke(
        "run",
        SCALE,
        "-v",
        "good",
        "-v",
        "wrong",
        "--n",
        "100",
        "--min-samples",
        "3",
        "--energy",
        "--json",
        "r.json",
    )
    assert result.exit_code == 3, result.output  # `wrong` is incorrect
    assert "energy" in result.output and "GB/J" in result.output
    assert spawned._stopping == []  # the worker's exit was waited for before the command ended
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["spec"]["timing"]["energy"] is True
    assert record["environment"]["energy_counter"] is True
    good, wrong = record["results"]
    assert good["energy"]["joules_per_run"] == pytest.approx(0.25, rel=1e-9)
    assert good["metrics"]["energy_mj"] == pytest.approx(250.0, rel=1e-9)
    assert "energy" not in wrong


def test_without_energy_the_table_and_file_are_as_before(fake_gpu, tmp_path):
    result = invoke(
        "run", SCALE, "-v", "good", "--n", "100", "--min-samples", "3", "--json", "r.json"
    )
    assert result.exit_code == 0, result.output
    assert "GB/J" not in result.output and "mJ" not in result.output
    (good,) = json.loads((tmp_path / "r.json").read_text())["results"]
    assert "energy" not in good and "energy_mj" not in good["metrics"]


def test_the_sweep_file_asks_for_energy_and_the_command_line_overrides_it(fake_gpu, tmp_path):
    Path("s.yaml").write_text(
        f"suite: {SCALE}\nvariants: [good]\nparams: {{n: [7, 9]}}\n"
        "timing: {min_samples: 3, energy: true, energy_window_s: 0.5}\n"
    )
    assert invoke("sweep", "s.yaml", "--json", "on.json").exit_code == 0
    on = json.loads(Path("on.json").read_text())["results"]
    assert [r["energy"]["window_s"] >= 0.5 for r in on] == [True, True]
    assert all(r["energy"]["window_s"] < 0.6 for r in on)
    assert invoke("sweep", "s.yaml", "--no-energy", "--json", "off.json", "--force").exit_code == 0
    off = json.loads(Path("off.json").read_text())["results"]
    assert ["energy" in r for r in off] == [False, False]


def test_a_window_too_short_is_one_line_exit_2(fake_gpu, tmp_path):
    Path("s.yaml").write_text(f"suite: {SCALE}\nvariants: [good]\nparams: {{n: 7}}\n")
    result = invoke("sweep", "s.yaml", "--energy", "--energy-window", "0.1")
    assert result.exit_code == 2
    assert result.output == "error: --energy-window: must be at least 0.3 (got 0.1)\n"
    result = invoke("sweep", "s.yaml", "--energy", "--energy-window", "nan")
    assert result.exit_code == 2 and "must be at least 0.3 (got nan)" in result.output
    result = invoke("run", SCALE, "--energy-window", "0.2")
    assert result.exit_code == 2
    assert "timing.energy_window_s" in result.output and "must be at least 0.3" in result.output
    assert "Traceback" not in result.output
    Path("bad.yaml").write_text(
        f"suite: {SCALE}\nvariants: [good]\nparams: {{n: 7}}\ntiming: {{energy: maybe}}\n"
    )
    result = invoke("sweep", "bad.yaml")
    assert result.exit_code == 2 and "timing.energy" in result.output
    assert "\n" not in result.output.strip()


def test_a_gpu_without_an_energy_counter_stops_before_the_first_point(fake_gpu, monkeypatch):
    monkeypatch.setenv("GPUBENCH_FAKE_NO_ENERGY", "1")
    result = invoke("run", SCALE, "-v", "good", "--n", "100", "--energy", "--jsonl", "r.jsonl")
    assert result.exit_code == 4
    assert result.output.strip().endswith(
        "--energy needs NVML's total-energy counter, which Fake GPU does not offer here "
        "(Volta or later, and the nvidia-ml-py package); run without --energy (tune: with "
        "--objective time)"
    )
    assert "Traceback" not in result.output
    assert invoke("run", SCALE, "-v", "good", "--n", "100").exit_code == 0


def test_the_dry_run_says_the_run_would_measure_energy(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("s.yaml").write_text("suite: transpose\nparams: {size: 64}\ntiming: {energy: true}\n")
    out = invoke("sweep", "s.yaml", "--dry-run").output
    assert (
        "energy: each verified result's energy per run, over 1 s of back-to-back runs "
        "(docs: measuring)" in out
    )
    out = invoke("sweep", "s.yaml", "--dry-run", "--energy-window", "2.5").output
    assert "over 2.5 s of back-to-back runs" in out
    assert "energy:" not in invoke("sweep", "s.yaml", "--dry-run", "--no-energy").output
