"""The CLI end to end with click's CliRunner: outputs, files and every documented exit code."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import gpubench.backends
import gpubench.registry
from gpubench.cli import cli
from tests.fakes import FakeBackend, ScaleSuite

REPO = Path(__file__).resolve().parents[1]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def fake_gpu(monkeypatch):
    """The real CLI over the CPU fake backend, with the `scale` test suite registered."""
    suites = {**gpubench.registry.all_suites(), "scale": ScaleSuite()}
    monkeypatch.setattr(gpubench.registry, "all_suites", lambda: suites)
    monkeypatch.setattr(gpubench.registry, "suite_names", lambda: sorted(suites))
    backend = FakeBackend()
    monkeypatch.setattr(gpubench.backends, "load", lambda device=0: backend)
    return backend


@pytest.fixture
def no_pycuda(monkeypatch):
    monkeypatch.setitem(sys.modules, "pycuda", None)
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)


def test_help_lists_commands_and_exit_codes():
    result = invoke("--help")
    assert result.exit_code == 0
    for word in ("list", "info", "run", "sweep", "130"):
        assert word in result.output


def test_help_starts_fast_without_pycuda_or_numpy():
    code = "import sys, gpubench.cli; print('pycuda' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "gpubench", "--help"], capture_output=True, check=True)
    assert time.perf_counter() - started < 2.0  # generous: CI machines vary; typically ~0.1 s


def test_list_shows_suites_variants_and_params():
    result = invoke("list")
    assert result.exit_code == 0
    for word in ("transpose", "naive (baseline)", "padded", "block_rows", "16, 32, 64"):
        assert word in result.output


def test_run_builds_options_from_the_suite_params():
    result = invoke("run", "transpose", "--help")
    assert result.exit_code == 0
    for option in ("--tile", "--block-rows", "--size", "--rows", "--dtype", "--variant", "--json"):
        assert option in result.output


def test_run_without_pycuda_exits_4_with_one_line(no_pycuda):
    result = invoke("run", "transpose", "--size", "64")
    assert result.exit_code == 4
    assert "PyCUDA is not installed" in result.output and "gpubench[cuda]" in result.output
    assert "Traceback" not in result.output


def test_info_without_pycuda_exits_4(no_pycuda):
    assert invoke("info").exit_code == 4


def test_sweep_without_pycuda_exits_4_but_dry_run_works(no_pycuda):
    assert invoke("sweep", str(REPO / "configs/smoke.yaml")).exit_code == 4
    result = invoke("sweep", str(REPO / "configs/smoke.yaml"), "--dry-run")
    assert result.exit_code == 0
    assert (
        "20 point(s) × 6 variant(s)" in result.output and "4 distinct compile(s)" in result.output
    )


def test_nvcc_missing_exits_4(monkeypatch):
    import shutil

    monkeypatch.setitem(sys.modules, "pycuda", type(sys)("pycuda"))
    monkeypatch.setitem(sys.modules, "pycuda.driver", type(sys)("pycuda.driver"))
    monkeypatch.setattr(shutil, "which", lambda name: None)
    result = invoke("run", "transpose")
    assert result.exit_code == 4 and "nvcc not found" in result.output


def test_bad_config_exits_2_naming_file_key_and_value(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("suite: transpose\nparams: {tile: 48}\n")
    result = invoke("sweep", str(path))
    assert result.exit_code == 2
    assert str(path) in result.output and "params.tile" in result.output and "48" in result.output
    assert "Traceback" not in result.output


def test_bad_run_values_exit_2():
    assert invoke("run", "transpose", "--tile", "48").exit_code == 2
    assert invoke("run", "transpose", "--size", "0").exit_code == 2
    assert invoke("run", "transpose", "--tile", "16", "--block-rows", "32").exit_code == 2
    result = invoke("run", "transpoze")
    assert result.exit_code == 2 and "did you mean 'transpose'" in result.output


def test_run_all_ok_exits_0_and_writes_files(fake_gpu, tmp_path):
    result = invoke("run", "scale", "-v", "good", "-v", "fast", "--n", "100", "--min-samples", "3",
                    "--json", str(tmp_path / "r.json"), "--csv", str(tmp_path / "r.csv"))  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "good (base)" in result.output and "2.00x" in result.output
    record = json.loads((tmp_path / "r.json").read_text())
    assert [r["status"] for r in record["results"]] == ["ok", "ok"]
    assert record["environment"]["device"]["name"] == "Fake GPU"
    assert (tmp_path / "r.csv").read_text().count("\n") == 3


def test_failed_points_exit_3_and_are_listed(fake_gpu, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(
        "suite: scale\nparams: {n: [10, 20]}\ntiming: {min_samples: 2, min_time_s: 0}\n"
        f"outputs: {{json: {tmp_path / 'r.json'}, jsonl: {tmp_path / 'r.jsonl'}}}\n"
    )
    result = invoke("sweep", str(path))
    assert result.exit_code == 3
    statuses = {
        (r["variant"], r["status"])
        for r in json.loads((tmp_path / "r.json").read_text())["results"]
    }
    assert ("wrong", "incorrect") in statuses and ("skips_last", "incorrect") in statuses
    assert ("crash", "launch_failed") in statuses and ("huge_block", "skipped") in statuses
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 2 * 6


def test_ctrl_c_exits_130_and_keeps_finished_results(fake_gpu, tmp_path, monkeypatch):
    calls = {"n": 0}
    original = FakeBackend.time_once_ms

    def interrupt_later(self, bound, flush_l2):
        calls["n"] += 1
        if calls["n"] > 20:
            raise KeyboardInterrupt
        return original(self, bound, flush_l2)

    monkeypatch.setattr(FakeBackend, "time_once_ms", interrupt_later)
    path = tmp_path / "s.yaml"
    path.write_text(
        "suite: scale\nvariants: [good, fast]\nparams: {n: [10, 20, 30]}\n"
        "timing: {warmup: 0, min_samples: 5, max_samples: 5}\n"
    )
    result = invoke("sweep", str(path), "--json", str(tmp_path / "r.json"))
    assert result.exit_code == 130
    kept = json.loads((tmp_path / "r.json").read_text())["results"]
    assert len(kept) == 4  # two points (of three) finished before the interrupt


@pytest.mark.gpu
def test_run_and_smoke_sweep_end_to_end_on_the_gpu(tmp_path):
    result = invoke("run", "transpose", "--rows", "33", "--cols", "65", "--tile", "16",
                    "--min-samples", "3", "--json", str(tmp_path / "run.json"))  # fmt: skip
    assert result.exit_code == 0, result.output
    statuses = [r["status"] for r in json.loads((tmp_path / "run.json").read_text())["results"]]
    assert statuses == ["ok"] * 6
    result = invoke(
        "sweep", str(REPO / "configs/smoke.yaml"), "--json", str(tmp_path / "smoke.json")
    )
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "smoke.json").read_text())
    assert len(record["results"]) == 120 and {r["status"] for r in record["results"]} == {"ok"}
    assert record["environment"]["gpu_uuid"] and record["environment"]["pycuda_version"]


@pytest.mark.gpu
def test_info_on_the_gpu():
    result = invoke("info")
    assert result.exit_code == 0 and "peak DRAM bandwidth" in result.output
