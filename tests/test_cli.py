"""The CLI end to end with click's CliRunner: outputs, files and every documented exit code."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpubench.cli import cli

REPO = Path(__file__).resolve().parents[1]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


SCALE = str(REPO / "tests/suites/scale.py")
DANGEROUS = str(REPO / "tests/suites/dangerous.py")


@pytest.fixture
def fake_gpu(monkeypatch):
    """The real CLI and worker processes over the CPU fake backend."""
    monkeypatch.setenv("GPUBENCH_BACKEND", "tests.fakes:FakeBackend")


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
    # The package index has an unrelated "gpubench": the hint installs from the checkout.
    assert "PyCUDA is not installed" in result.output and "'.[cuda]'" in result.output
    assert "gpubench[cuda]" not in result.output
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
    result = invoke("run", SCALE, "-v", "good", "-v", "fast", "--n", "100", "--min-samples", "3",
                    "--json", str(tmp_path / "r.json"), "--csv", str(tmp_path / "r.csv"))  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "good (base)" in result.output and "2.00x" in result.output
    record = json.loads((tmp_path / "r.json").read_text())
    assert [r["status"] for r in record["results"]] == ["ok", "ok"]
    assert record["environment"]["device"]["name"] == "Fake GPU"
    assert record["compile_report"]["configurations"] == 1
    assert (tmp_path / "r.csv").read_text().count("\n") == 3


def test_run_in_hot_mode(fake_gpu, tmp_path):
    result = invoke("run", SCALE, "-v", "good", "--mode", "hot", "--json", str(tmp_path / "r.json"))
    assert result.exit_code == 0, result.output
    (record,) = json.loads((tmp_path / "r.json").read_text())["results"]
    assert record["summary"]["runs_per_sample"] == 1  # 1 ms fake runs fill the 1 ms hot sample


def write_sweep(tmp_path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


def test_failed_points_exit_3_and_every_point_is_listed_with_its_status(fake_gpu, tmp_path):
    path = write_sweep(tmp_path,
        f"suite: {SCALE}\nparams: {{n: [10, 20]}}\ntiming: {{min_samples: 2, min_time_s: 0}}\n"
        f"outputs: {{json: {tmp_path / 'r.json'}, jsonl: {tmp_path / 'r.jsonl'}}}\n")  # fmt: skip
    result = invoke("sweep", str(path))
    assert result.exit_code == 3
    found = {
        (r["variant"], r["status"])
        for r in json.loads((tmp_path / "r.json").read_text())["results"]
    }
    assert ("wrong", "incorrect") in found and ("skips_last", "incorrect") in found
    assert ("crash", "crashed") in found and ("refused", "launch_failed") in found
    assert ("huge_block", "skipped") in found and ("good", "ok") in found
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    assert ("first_launch_only", "incorrect") in found and ("writes_once", "incorrect") in found
    assert json.loads(lines[0])["kind"] == "header" and len(lines) == 1 + 2 * 9


def test_crashes_hangs_and_dead_workers_cost_one_variant_each(fake_gpu, tmp_path):
    path = write_sweep(tmp_path,
        f"suite: {DANGEROUS}\nvariants: [good, crash, fast, hang, die, slow]\n"
        "params: {n: [10, 20]}\n"
        "timing: {min_samples: 2, min_time_s: 0, time_limit_s: 3}\n"
        f"outputs: {{json: {tmp_path / 'r.json'}}}\n")  # fmt: skip
    result = invoke("sweep", str(path))
    assert result.exit_code == 3, result.output
    record = json.loads((tmp_path / "r.json").read_text())
    by_variant = {}
    for r in record["results"]:
        by_variant.setdefault(r["variant"], set()).add(r["status"])
    assert by_variant == {"good": {"ok"}, "crash": {"crashed"}, "fast": {"ok"},
                          "hang": {"timeout"}, "die": {"crashed"}, "slow": {"ok"}}  # fmt: skip
    die = next(r for r in record["results"] if r["variant"] == "die")
    assert "exit code 3" in die["reason"]
    fast = next(r for r in record["results"] if r["variant"] == "fast")
    assert fast["metrics"]["speedup"] == pytest.approx(2.0)  # the point's baseline survived
    assert record["environment"]["worker_restarts"] == 2 * 3


def run_cli(*args, env_extra=None, **kwargs):
    import os

    env = {**os.environ, "GPUBENCH_BACKEND": "tests.fakes:FakeBackend", **(env_extra or {})}
    return subprocess.Popen([sys.executable, "-m", "gpubench", *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)  # fmt: skip


def wait_for_lines(path: Path, count: int, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists() and len(path.read_text().splitlines()) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} never reached {count} lines")


SLOW_SWEEP = (
    f"suite: {DANGEROUS}\nvariants: [good, slow]\nparams: {{n: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}}\n"
    "timing: {warmup: 0, min_samples: 10, max_samples: 10}\n"
)


def test_sigint_stops_cleanly_keeps_results_and_exits_130(tmp_path):
    import signal

    path = write_sweep(tmp_path, SLOW_SWEEP)
    log = tmp_path / "r.jsonl"
    process = run_cli("sweep", str(path), "--jsonl", str(log), "--json", str(tmp_path / "r.json"))
    wait_for_lines(log, 1 + 4)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    kept = json.loads((tmp_path / "r.json").read_text())["results"]
    assert 4 <= len(kept) < 24
    assert len(log.read_text().splitlines()) == 1 + len(kept)


def test_kill_9_then_resume_measures_every_point_exactly_once(tmp_path):
    import signal

    path = write_sweep(tmp_path, SLOW_SWEEP)
    log = tmp_path / "r.jsonl"
    process = run_cli("sweep", str(path), "--jsonl", str(log))
    wait_for_lines(log, 1 + 8)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    before = len(log.read_text().splitlines()) - 1
    assert 8 <= before < 24
    resumed = run_cli("sweep", str(path), "--resume", str(log), "--json", str(tmp_path / "r.json"))
    _, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stderr
    assert f"{before} result(s) already in" in stderr
    lines = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    measured = [(r["point"]["n"], r["variant"]) for r in lines]
    assert len(measured) == len(set(measured)) == 24  # nothing twice, nothing missing
    final = json.loads((tmp_path / "r.json").read_text())["results"]
    assert sorted((r["point"]["n"], r["variant"]) for r in final) == sorted(measured)


def test_resume_refuses_a_changed_sweep_unless_forced(fake_gpu, tmp_path):
    path = write_sweep(tmp_path, SLOW_SWEEP.replace("slow]", "fast]"))
    log = tmp_path / "r.jsonl"
    assert invoke("sweep", str(path), "--jsonl", str(log)).exit_code == 0
    path.write_text(SLOW_SWEEP.replace("slow]", "fast]").replace("10, 11, 12", "10, 11, 13"))
    result = invoke("sweep", str(path), "--resume", str(log))
    assert result.exit_code == 2
    assert "points: 1 no longer in the sweep, 1 new" in result.output and "--force" in result.output
    forced = invoke("sweep", str(path), "--resume", str(log), "--force")
    assert forced.exit_code == 0
    assert len(log.read_text().splitlines()) == 1 + 24 + 2  # only the new point was measured


@pytest.mark.gpu
def test_run_and_smoke_sweep_end_to_end_on_the_gpu(tmp_path):
    result = invoke("run", "transpose", "--rows", "33", "--cols", "65", "--tile", "16",
                    "--min-samples", "3", "--json", str(tmp_path / "run.json"))  # fmt: skip
    assert result.exit_code == 0, result.output
    statuses = [r["status"] for r in json.loads((tmp_path / "run.json").read_text())["results"]]
    assert set(statuses) <= {"ok", "unstable"} and len(statuses) == 6
    result = invoke(
        "sweep", str(REPO / "configs/smoke.yaml"), "--json", str(tmp_path / "smoke.json")
    )
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "smoke.json").read_text())
    assert len(record["results"]) == 120
    assert {r["status"] for r in record["results"]} <= {"ok", "unstable"}
    assert record["environment"]["gpu_uuid"] and record["environment"]["pycuda_version"]


@pytest.mark.gpu
def test_info_on_the_gpu():
    result = invoke("info")
    assert result.exit_code == 0 and "peak DRAM bandwidth" in result.output


# -- Suite API v2 ---------------------------------------------------------------------------
def test_sizes_past_a_kernels_integer_type_exit_2_naming_the_limit():
    result = invoke("run", "reduction", "--n", "4294968296")
    assert result.exit_code == 2
    assert "4294968296 is above the maximum 4294967295" in result.output
    assert "unsigned int n" in result.output and "Traceback" not in result.output


def test_resume_and_another_jsonl_log_are_refused(fake_gpu, tmp_path):
    path = write_sweep(tmp_path, SLOW_SWEEP.replace("slow]", "fast]"))
    log = tmp_path / "a.jsonl"
    assert invoke("sweep", str(path), "--jsonl", str(log)).exit_code == 0
    result = invoke("sweep", str(path), "--resume", str(log), "--jsonl", str(tmp_path / "b.jsonl"))
    assert result.exit_code == 2 and "give only one of them" in result.output
    same = invoke("sweep", str(path), "--resume", str(log), "--jsonl", str(log))
    assert same.exit_code == 0


def test_compare_reads_a_sweeps_json_lines_log(fake_gpu, tmp_path):
    path = write_sweep(tmp_path, SLOW_SWEEP.replace("slow]", "fast]"))
    assert invoke("sweep", str(path), "--jsonl", str(tmp_path / "a.jsonl"),
                  "--json", str(tmp_path / "a.json")).exit_code == 0  # fmt: skip
    result = invoke("compare", str(tmp_path / "a.jsonl"), str(tmp_path / "a.json"))
    assert result.exit_code == 0, result.output
    assert "pair(s) compared; largest change 0.00%" in result.output


SUITE_HEAD = "from gpubench.benchmark import Benchmark, Param, Variant, Case\n"


@pytest.mark.parametrize(
    "body, message",
    [
        ("def broken(:\n", "syntax error on line 2"),
        ("import not_a_module_anywhere\n", "ModuleNotFoundError"),
        ("raise SystemExit(0)\n", "SystemExit"),
        ("x = 1\n", "defines no BENCHMARK"),
        ("BENCHMARK = 42\n", "BENCHMARK is a int"),
        ("class S(Benchmark):\n    pass\nBENCHMARK = S\n", "make it an instance"),
        ("class S(Benchmark):\n    name = 's'\nBENCHMARK = S()\n", "abstract"),
    ],
)
def test_a_broken_suite_file_is_one_line_naming_the_file_exit_2(tmp_path, body, message):
    path = tmp_path / "mine.py"
    path.write_text(SUITE_HEAD + body)
    for args in (("run", str(path)), ("sweep", str(write_sweep(tmp_path, f"suite: {path}\n")))):
        result = invoke(*args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output and str(path.name) in result.output
        assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_a_suite_file_without_defines_runs(fake_gpu, tmp_path):
    path = tmp_path / "nodefines.py"
    path.write_text(
        "from tests.fakes import ScaleSuite\n"
        "class NoDefines(ScaleSuite):\n    name = 'nodefines'\n"
        "BENCHMARK = NoDefines()\n"
    )
    result = invoke("run", str(path), "-v", "good", "--min-samples", "3", "--json",
                    str(tmp_path / "r.json"))  # fmt: skip
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["results"][0]["status"] == "ok"
    assert record["environment"]["backend"] == {"name": "fake", "version": "1"}


@pytest.mark.gpu
def test_gpu_reduction_past_unsigned_int_is_refused_before_the_gpu():
    result = invoke("run", "reduction", "--n", "4294968296")
    assert result.exit_code == 2 and "above the maximum 4294967295" in result.output
