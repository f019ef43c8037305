"""The CLI end to end with click's CliRunner: outputs, files and every documented exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from gpubench.cli import cli

REPO = Path(__file__).resolve().parents[1]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


SCALE = str(REPO / "tests/suites/scale.py")
DANGEROUS = str(REPO / "tests/suites/dangerous.py")


@pytest.fixture
def fake_gpu(monkeypatch, tmp_path):
    """The real CLI and worker processes over the CPU fake backend, in a directory of its own
    (a sweep's default log goes to results/ under the current directory)."""
    monkeypatch.setenv("GPUBENCH_BACKEND", "tests.fakes:FakeBackend")
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def no_pycuda(monkeypatch):
    """A machine with no GPU stack: neither PyCUDA nor cuda.core (which would be chosen)."""
    for module in ("pycuda", "pycuda.driver", "cuda.core", "cuda.bindings"):
        monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setenv("GPUBENCH_BACKEND", "")  # recorded, so what a test sets is undone


@pytest.fixture
def only_cuda_core(monkeypatch):
    """PyCUDA missing, cuda.core installed (as far as the selection can tell)."""
    from gpubench import backends

    monkeypatch.setitem(sys.modules, "pycuda", None)
    monkeypatch.setenv("GPUBENCH_BACKEND", "")  # recorded, so what a test sets is undone
    monkeypatch.setattr(backends, "installed", lambda module: module == "cuda.core")
    monkeypatch.setattr(backends, "driver_present", lambda: True)


def test_without_pycuda_cuda_core_is_chosen_with_one_line(only_cuda_core, capsys):
    from gpubench import backends
    from gpubench.model.notices import BackendChosen
    from gpubench.report.notices import text

    assert backends.selected() == "cuda-core" and capsys.readouterr().err == ""  # prints nothing
    assert backends.chosen_automatically()
    assert text(BackendChosen("cuda-core")) == (
        "note: PyCUDA is not installed; using the cuda-core backend (cuda.core, NVRTC)"
    )
    assert not backends.chosen_automatically("cuda-core")  # the user's own choice: no note
    from gpubench.engine.worker import WorkerSpec

    assert WorkerSpec.for_suite("transpose").backend == "cuda-core"  # the workers get it


def test_backend_option_chooses_and_a_bad_name_is_one_line(monkeypatch):

    monkeypatch.setenv("GPUBENCH_BACKEND", "")  # recorded, so what a test sets is undone
    result = invoke("run", "transpose", "--size", "64", "--backend", "nope")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "--backend" in result.output and "unknown backend 'nope'" in result.output
    assert "cuda-core" in result.output  # the known ones are named
    assert os.environ.get("GPUBENCH_BACKEND") == ""  # a parameter, not the environment


def test_backend_cuda_core_without_it_installed_exits_4(no_pycuda, monkeypatch):
    result = invoke("run", "transpose", "--size", "64", "--backend", "cuda-core")
    assert result.exit_code == 4 and "Traceback" not in result.output
    assert (
        "cuda.core is not installed" in result.output
        and "gpubench-studies[cuda-core]" in result.output
    )


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
        "20 point(s) × 7 variant(s)" in result.output and "4 distinct compile(s)" in result.output
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


def test_run_and_sweep_write_the_results_table_as_markdown(fake_gpu, tmp_path):
    md = tmp_path / "summary.md"
    result = invoke("run", SCALE, "-v", "good", "-v", "wrong", "--n", "100", "--markdown", str(md))
    assert result.exit_code == 3, result.output
    text = md.read_text()
    assert text.startswith("### gpubench: scale\n\nFake GPU (sm_90, 4 SMs) · gpubench ")
    assert "| variant | status | median |" in text
    assert "| good (base) | ok |" in text and "| wrong | incorrect |" in text
    assert "1 of 2 result(s) failed" in text
    (tmp_path / "sweep.yaml").write_text(
        f"suite: {SCALE}\nvariants: [good]\nparams: {{n: [7, 9]}}\n"
    )
    result = invoke("sweep", str(tmp_path / "sweep.yaml"), "--markdown", str(md), "--force")
    assert result.exit_code == 0, result.output
    assert md.read_text().count("| good") == 2
    result = invoke("run", SCALE, "--markdown", str(tmp_path))
    assert result.exit_code == 2 and "is a directory" in result.output


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
    assert json.loads(lines[0])["kind"] == "header" and len(logged(tmp_path / "r.jsonl")) == 2 * 9


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
    assert "exit code 3" in die["reason"] and "its worker died twice" in die["reason"]
    fast = next(r for r in record["results"] if r["variant"] == "fast")
    assert fast["metrics"]["speedup"] == pytest.approx(2.0)  # the point's baseline survived
    # Per point: crash (the worker exits after reporting it), hang (killed at the limit), and
    # die twice (a worker that dies costs its variant one more run on a fresh worker).
    assert record["environment"]["worker_restarts"] == 2 * 4
    assert [r["variant"] for r in record["environment"]["worker_retries"]] == ["die", "die"]


def test_a_worker_killed_under_a_variant_is_run_once_more_and_logged_once(
    fake_gpu, tmp_path, monkeypatch
):
    """kill -9 of the worker mid-variant: the variant runs again on a fresh worker, its one
    result is the retry's, the variants before and after it are measured once, and a note
    says what happened."""
    monkeypatch.setenv("GPUBENCH_TEST_MARKERS", str(tmp_path))
    path = write_sweep(tmp_path,
        f"suite: {DANGEROUS}\nvariants: [good, die_once, fast]\n"
        "params: {n: [10, 20]}\n"
        "timing: {min_samples: 2, min_time_s: 0, time_limit_s: 10}\n"
        f"outputs: {{jsonl: {tmp_path / 'r.jsonl'}, json: {tmp_path / 'r.json'}}}\n")  # fmt: skip
    result = invoke("sweep", str(path))
    assert result.exit_code == 0, result.output
    found = [(r["point"]["n"], r["variant"], r["status"]) for r in logged(tmp_path / "r.jsonl")]
    assert sorted(found) == sorted((n, v, "ok") for n in (10, 20)
                                   for v in ("good", "die_once", "fast"))  # fmt: skip
    record = json.loads((tmp_path / "r.json").read_text())
    retries = record["environment"]["worker_retries"]
    # The bigger problem runs first (engine.input_sets.by_problem).
    assert [(r["variant"], r["point"]["n"]) for r in retries] == [("die_once", 20),
                                                                  ("die_once", 10)]  # fmt: skip
    assert all("exit code 9" in r["reason"] for r in retries)
    assert record["environment"]["worker_restarts"] == 2
    assert "die_once at n=10" in result.output and "was run once more on a fresh worker" in (
        result.output
    )


def run_cli(*args, env_extra=None, **kwargs):
    import os
    import signal

    env = {**os.environ, "GPUBENCH_BACKEND": "tests.fakes:FakeBackend", **(env_extra or {})}
    # gpubench starts as from a shell, Ctrl-C not ignored: a child inherits an ignored SIGINT
    # (and Python then installs no KeyboardInterrupt for it) from whatever started it.
    return subprocess.Popen([sys.executable, "-m", "gpubench", *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
                            **kwargs)  # fmt: skip


def logged(path: Path) -> list[dict]:
    """The result records of a JSON-lines log (its header and metrics lines left out)."""
    records = []
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line being written
        if record.get("kind") == "result":
            records.append(record)
    return records


def wait_for_results(path: Path, count: int, timeout: float = 60) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if len(logged(path)) >= count:
                return
        except FileNotFoundError:  # not yet, or the writability check's brief trial file
            pass
        time.sleep(0.05)
    raise AssertionError(f"{path} never reached {count} results")


SLOW_SWEEP = (
    f"suite: {DANGEROUS}\nvariants: [good, slow]\nparams: {{n: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}}\n"
    "timing: {warmup: 0, min_samples: 10, max_samples: 10}\n"
)


@pytest.mark.signals
def test_sigint_stops_cleanly_keeps_results_and_exits_130(tmp_path):
    import signal

    path = write_sweep(tmp_path, SLOW_SWEEP)
    log = tmp_path / "r.jsonl"
    process = run_cli("sweep", str(path), "--jsonl", str(log), "--json", str(tmp_path / "r.json"))
    wait_for_results(log, 4)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    kept = json.loads((tmp_path / "r.json").read_text())["results"]
    assert 4 <= len(kept) < 24
    assert len(logged(log)) == len(kept)


@pytest.mark.signals
def test_kill_9_then_resume_measures_every_point_exactly_once(tmp_path):
    import signal

    path = write_sweep(tmp_path, SLOW_SWEEP)
    log = tmp_path / "r.jsonl"
    process = run_cli("sweep", str(path), "--jsonl", str(log))
    wait_for_results(log, 8)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    before = len(logged(log))
    assert 8 <= before < 24
    resumed = run_cli("sweep", str(path), "--resume", str(log), "--json", str(tmp_path / "r.json"))
    _, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stderr
    assert f"{before} result(s) already in" in stderr
    measured = [(r["point"]["n"], r["variant"]) for r in logged(log)]
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
    assert len(logged(log)) == 24 + 2  # only the new point was measured


@pytest.mark.gpu
def test_run_and_smoke_sweep_end_to_end_on_the_gpu(tmp_path):
    from gpubench import backends

    result = invoke("run", "transpose", "--rows", "33", "--cols", "65", "--tile", "16",
                    "--min-samples", "3", "--json", str(tmp_path / "run.json"))  # fmt: skip
    assert result.exit_code == 0, result.output
    statuses = [r["status"] for r in json.loads((tmp_path / "run.json").read_text())["results"]]
    assert set(statuses) <= {"ok", "unstable"} and len(statuses) == 7
    result = invoke("sweep", str(REPO / "configs/smoke.yaml"), "--json",
                    str(tmp_path / "smoke.json"), "--jsonl", str(tmp_path / "smoke.jsonl"))  # fmt: skip
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "smoke.json").read_text())
    assert len(record["results"]) == 140  # 20 transpose points x 7 variants
    assert {r["status"] for r in record["results"]} <= {"ok", "unstable"}
    env = record["environment"]
    assert env["gpu_uuid"] and env["backend"]["name"] == backends.selected()
    assert env["pycuda_version"] or env["backend"]["name"] != "pycuda"


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


SUITE_HEAD = "from gpubench.model.benchmark import Benchmark, Param, Variant, Case\n"


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


# -- nothing lost ------------------------------------------------------------------------------
QUICK_SWEEP = f"suite: {SCALE}\nvariants: [good, fast]\nparams: {{n: [10, 20]}}\n" \
    "timing: {min_samples: 2, min_time_s: 0}\n"  # fmt: skip


def test_a_log_that_holds_results_is_never_overwritten(fake_gpu, tmp_path):
    path = write_sweep(tmp_path, QUICK_SWEEP)
    log = tmp_path / "results" / "s.jsonl"
    assert invoke("sweep", str(path)).exit_code == 0
    first = log.read_text()
    # A finished run's log is set aside by the next run on its own (a nightly job is one
    # command), and kept whole beside the new one.
    again = invoke("sweep", str(path))
    assert again.exit_code == 0 and "kept as" in again.output
    assert (tmp_path / "results" / "s.jsonl.1").read_text() == first
    assert len(logged(log)) == 4
    # An unfinished one (its last result lost) asks for --resume or --force, untouched.
    unfinished = "".join(first.splitlines(keepends=True)[:2])
    log.write_text(unfinished)
    refused = invoke("sweep", str(path))
    assert refused.exit_code == 2 and "--resume" in refused.output and "--force" in refused.output
    assert log.read_text() == unfinished
    forced = invoke("sweep", str(path), "--force")
    assert forced.exit_code == 0 and "kept as" in forced.output
    assert (tmp_path / "results" / "s.jsonl.2").read_text() == unfinished
    assert len(logged(log)) == 4


def test_resume_repairs_a_line_cut_by_a_kill(fake_gpu, tmp_path):
    path = write_sweep(tmp_path, QUICK_SWEEP)
    log = tmp_path / "r.jsonl"
    assert invoke("sweep", str(path), "--jsonl", str(log)).exit_code == 0
    lines = log.read_text().splitlines(keepends=True)
    results = [i for i, line in enumerate(lines) if '"kind": "result"' in line]
    # Keep the first two results and half of the third, as a kill -9 mid-write leaves it.
    cut = [*lines[: results[2]], lines[results[2]][:40]]
    log.write_text("".join(cut))
    assert invoke("sweep", str(path), "--resume", str(log)).exit_code == 0
    again = invoke("sweep", str(path), "--resume", str(log))  # the log stays readable
    assert again.exit_code == 0, again.output
    assert sorted((r["point"]["n"], r["variant"]) for r in logged(log)) == [
        (10, "fast"), (10, "good"), (20, "fast"), (20, "good")]  # fmt: skip


@pytest.mark.parametrize(
    "option, make, message",
    [
        ("--json", lambda d: d.mkdir() or d, "is a directory"),
        ("--csv", lambda d: (d.write_text("x"), d / "out.csv")[1], "is a file, not a directory"),
        ("--jsonl", lambda d: (d.mkdir(), d.chmod(0o500), d / "r.jsonl")[2], "read-only"),
    ],
)
def test_unwritable_outputs_are_refused_before_measuring(fake_gpu, tmp_path, option, make, message):
    import os

    if option == "--jsonl" and os.geteuid() == 0:
        pytest.skip("root can write anywhere")
    target = make(tmp_path / "place")
    result = invoke("run", SCALE, "-v", "good", option, str(target))
    assert result.exit_code == 2 and message in result.output and option in result.output
    assert "Traceback" not in result.output
    assert not list(tmp_path.glob("**/*.tmp"))


def test_a_timeline_picture_without_matplotlib_is_refused_first(fake_gpu, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    result = invoke("run", SCALE, "-v", "good", "--timeline", str(tmp_path / "t.png"),
                    "--json", str(tmp_path / "r.json"))  # fmt: skip
    assert result.exit_code == 4 and "matplotlib" in result.output
    assert not (tmp_path / "r.json").exists()


HANG_SWEEP = (
    f"suite: {DANGEROUS}\nvariants: [good, hang]\nparams: {{n: [1, 2]}}\n"
    "timing: {warmup: 0, min_samples: 3, max_samples: 3, time_limit_s: 600}\n"
)


def child_pids(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def alive(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (dead, not yet reaped) does not count.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.signals
@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM"])
def test_an_interrupt_during_a_hung_kernel_returns_fast_and_keeps_the_points_results(tmp_path, how):
    import signal

    path = write_sweep(tmp_path, HANG_SWEEP)
    log, out = tmp_path / "r.jsonl", tmp_path / "r.json"
    process = run_cli("sweep", str(path), "--jsonl", str(log), "--json", str(out))
    wait_for_results(log, 1)  # `good` of the first point; `hang` now never ends
    time.sleep(0.5)
    started = time.monotonic()
    process.send_signal(getattr(signal, how))
    _, stderr = process.communicate(timeout=30)
    assert time.monotonic() - started < 10, "took too long to return"
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    # The variant finished before the hang is in the log and in the JSON.
    # The first point run, the bigger problem (engine.input_sets.by_problem).
    assert [(r["point"]["n"], r["variant"]) for r in logged(log)] == [(2, "good")]
    assert [r["variant"] for r in json.loads(out.read_text())["results"]] == ["good"]


@pytest.mark.signals
def test_a_worker_dies_with_its_parent(tmp_path):
    import signal

    path = write_sweep(tmp_path, HANG_SWEEP)
    log = tmp_path / "r.jsonl"
    process = run_cli("sweep", str(path), "--jsonl", str(log))
    wait_for_results(log, 1)
    workers = child_pids(process.pid)
    assert workers
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    deadline = time.time() + 10
    while time.time() < deadline and any(alive(pid) for pid in workers):
        time.sleep(0.1)
    assert not any(alive(pid) for pid in workers), "the worker outlived its parent"


# -- never a traceback ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "env, words",
    [
        ({"GPUBENCH_COMPILE_WORKERS": "abc"}, "GPUBENCH_COMPILE_WORKERS: expected a whole number"),
        ({"GPUBENCH_COMPILE_WORKERS": "0"}, "GPUBENCH_COMPILE_WORKERS"),
        ({"GPUBENCH_CACHE_DIR": "/proc/gpubench-cache"}, "GPUBENCH_CACHE_DIR"),
    ],
)
def test_bad_environment_settings_are_one_line(fake_gpu, monkeypatch, env, words):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    result = invoke("run", SCALE, "-v", "good")
    assert result.exit_code == 2 and words in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize("content", ["[]", '{"kind": "header"}\n[1]\n', "\xff", '{"a": NaN}'])
def test_compare_and_resume_of_malformed_files_are_one_line(fake_gpu, tmp_path, content):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(content.encode("latin-1"))
    good = tmp_path / "good.json"
    assert invoke("run", SCALE, "-v", "good", "--json", str(good)).exit_code == 0
    for args in (("compare", str(bad), str(good)), ("compare", str(good), str(bad)),
                 ("sweep", str(write_sweep(tmp_path, QUICK_SWEEP)), "--resume", str(bad))):  # fmt: skip
        result = invoke(*args)
        assert result.exit_code == 2, (args, result.output)
        assert "Traceback" not in result.output and str(bad) in result.output


def test_a_large_dry_run_is_a_summary(tmp_path):
    import yaml

    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump({"suite": "matmul", "params": {
        "m": list(range(1, 101)), "n": list(range(1, 101)), "k": list(range(1, 11))}}))  # fmt: skip
    result = invoke("sweep", str(path), "--dry-run")
    assert result.exit_code == 0
    assert "100,000 point(s) × 9 variant(s)" in result.output
    assert "distinct values" in result.output and "99,999" in result.output
    assert len(result.output.splitlines()) < 60  # not 10^5 rows


def test_a_dry_run_lists_the_varying_params_and_names_the_fixed_ones_once(tmp_path):
    import yaml

    path = tmp_path / "few.yaml"
    path.write_text(yaml.safe_dump({"suite": "matmul", "params": {"size": [64, 128], "bk": 8}}))
    result = invoke("sweep", str(path), "--dry-run")
    assert result.exit_code == 0
    header = next(line for line in result.output.splitlines() if "#" in line and "size" in line)
    assert "wbm" not in header and "bk" not in header  # the same at both points
    fixed = result.output.replace("\n", " ").split("at every point:")[1].split("point(s)")[0]
    assert "bk=8" in fixed and "values=integers" in fixed and "size=" not in fixed


def test_list_configs_and_a_bundled_sweep_by_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    listed = invoke("list", "--configs")
    assert listed.exit_code == 0 and "smoke" in listed.output and "transpose_16k" in listed.output
    dry = invoke("sweep", "smoke", "--dry-run")
    assert dry.exit_code == 0 and "20 point(s)" in dry.output


def test_every_fingerprint_field_blocks_a_resume():
    from gpubench.engine.planning import differences

    before = {"suite": "s", "kernel_source_sha256": "a", "gpu_name": "H100", "gpu_uuid": "GPU-1",
              "points": ["p1", "p2"], "variants": ["x"], "baseline": "x",
              "timing": {"warmup": 3}}  # fmt: skip
    assert differences(before, dict(before)) == []
    for key, value in (("suite", "t"), ("kernel_source_sha256", "b"), ("gpu_name", "A100"),
                       ("gpu_uuid", "GPU-2"), ("points", ["p1"]), ("variants", ["x", "y"]),
                       ("baseline", "y"), ("timing", {"warmup": 4})):  # fmt: skip
        changed = differences(before, {**before, key: value})
        assert len(changed) == 1 and changed[0].startswith(key), (key, changed)


def test_a_changed_kernel_source_blocks_a_resume(fake_gpu, tmp_path):
    source = tmp_path / "mine.cu"
    source.write_text("// v1\n")
    suite = tmp_path / "mine.py"
    suite.write_text(
        "from tests.fakes import ScaleSuite\n"
        f"class Mine(ScaleSuite):\n    name = 'mine'\n    source_file = {str(source)!r}\n"
        "BENCHMARK = Mine()\n"
    )
    path = write_sweep(tmp_path, f"suite: {suite}\nvariants: [good]\nparams: {{n: [10]}}\n"
                       "timing: {min_samples: 2, min_time_s: 0}\n")  # fmt: skip
    log = tmp_path / "r.jsonl"
    assert invoke("sweep", str(path), "--jsonl", str(log)).exit_code == 0
    source.write_text("// v2\n")
    result = invoke("sweep", str(path), "--resume", str(log))
    assert result.exit_code == 2 and "kernel_source_sha256" in result.output


def test_run_sets_a_finished_log_aside_and_keeps_it(fake_gpu, tmp_path):
    log = tmp_path / "r.jsonl"
    assert invoke("run", SCALE, "-v", "good", "--jsonl", str(log)).exit_code == 0
    first = log.read_text()
    again = invoke("run", SCALE, "-v", "good", "--jsonl", str(log))
    assert again.exit_code == 0 and "kept as" in again.output
    assert (tmp_path / "r.jsonl.1").read_text() == first
    assert len(logged(log)) == 1 and len(logged(tmp_path / "r.jsonl.1")) == 1


@pytest.mark.signals
def test_a_second_ctrl_c_does_not_cost_the_output_files(tmp_path):
    import signal

    path = write_sweep(tmp_path, HANG_SWEEP)
    log, out = tmp_path / "r.jsonl", tmp_path / "r.json"
    process = run_cli("sweep", str(path), "--jsonl", str(log), "--json", str(out))
    wait_for_results(log, 1)
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    for _ in range(5):  # an impatient user
        time.sleep(0.05)
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert [r["variant"] for r in json.loads(out.read_text())["results"]] == ["good"]


@pytest.mark.parametrize(
    "args",
    [
        ("run", SCALE, "-v", "good", "--jsonl", "/proc/gpubench.jsonl"),
        ("run", SCALE, "-v", "good", "--json", "/proc/gpubench.json"),
        ("run", SCALE, "-v", "good", "--csv", "x" * 5000 + ".csv"),
        ("sweep", "s" * 5000),
    ],
)
def test_paths_the_system_refuses_are_one_line(fake_gpu, args):
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize("value, text", [
    ("os:path", "not a backend (not a class)"),
    (":x", "expected package.module:Class"),
    ("builtins:int", "not a backend (it lacks"),
    ("json:loads", "not a backend (not a class)"),
])  # fmt: skip
def test_a_gpubench_backend_that_is_no_backend_class_is_one_line(monkeypatch, value, text):
    monkeypatch.setenv("GPUBENCH_BACKEND", value)
    out = CliRunner().invoke(cli, ["run", "transpose", "--size", "64"])
    assert out.exit_code == 2, out.output
    assert text in out.output and "Traceback" not in out.output


def test_a_usage_error_is_exit_2_before_the_machine_is_looked_at(tmp_path, monkeypatch):
    from gpubench import backends
    from gpubench.errors import EnvironmentProblem

    def no_gpu(*args, **kwargs):
        raise EnvironmentProblem("no GPU here")

    monkeypatch.setattr(backends, "preflight", no_gpu)
    log = tmp_path / "a.jsonl"
    log.write_text('{"header": {}}\n')
    out = CliRunner().invoke(cli, ["sweep", "smoke", "--resume", str(log), "--jsonl",
                                   str(tmp_path / "b.jsonl")])  # fmt: skip
    assert out.exit_code == 2, out.output
    out = CliRunner().invoke(cli, ["run", "transpose", "--json", str(tmp_path / "f" / "x.json"),
                                   "--csv", str(tmp_path / "f" / "x.json")])  # fmt: skip
    assert out.exit_code == 2 and "the same file" in out.output, out.output


def test_a_dry_run_shows_a_file_name_with_brackets_as_it_is(tmp_path):
    (tmp_path / "[bold]x").mkdir()
    graph = tmp_path / "[bold]x" / "g [red].gr"
    graph.write_text("p sp 3 2\na 1 2 5\na 2 3 7\n")
    sweep = tmp_path / "s.yaml"
    sweep.write_text(
        f"suite: sssp\nvariants: [edges]\nparams:\n  graph: '{graph}'\n  sources: [1, 2]\n"
    )
    out = CliRunner().invoke(cli, ["sweep", str(sweep), "--dry-run"])
    assert out.exit_code == 0, out.output
    assert f"at every point: graph={graph}, vertices=None" in " ".join(out.output.split("\n"))
    assert "graph g [red].gr: 3 vertices, 2 arcs (mean out-degree 0.67), with weights" in out.output


def test_the_exit_code_help_is_every_code_wrapped_at_72_under_its_meaning():
    from gpubench.cli.common import exit_codes_help

    assert exit_codes_help() == (
        "\n\b\nExit codes:\n"
        "  0    every point ran and verified (skipped shapes, unstable timings and\n"
        "       unverified results of a kernel file without a reference included)\n"
        "  2    usage or config error, or a --resume log that does not match (nothing\n"
        "       was run)\n"
        "  3    finished, but some points failed: incorrect, compile_failed,\n"
        "       launch_failed, crashed, timeout (compare: something got slower, or a\n"
        "       result of the base has no partner in the new file)\n"
        "  4    environment error: no PyCUDA, no GPU or driver, nvcc missing or too old\n"
        "  130  interrupted (Ctrl-C or SIGTERM); finished results are kept\n"
    )


def test_an_option_that_draws_without_matplotlib_says_how_to_get_it(monkeypatch):
    import builtins

    from gpubench.cli.charts import need_matplotlib
    from gpubench.errors import EnvironmentProblem

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(EnvironmentProblem) as info:
        need_matplotlib("--timeline FILE")
    assert str(info.value) == (
        "--timeline FILE draws with matplotlib, which is not installed: "
        "pip install 'gpubench-studies[plot]'"
    )


def test_the_dry_run_prints_the_shard_its_fixed_values_notes_and_the_count(tmp_path):
    sweep = tmp_path / "s.yaml"
    sweep.write_text("suite: transpose\nvariants: [naive, padded]\nparams:\n"
                     "  size: [32, 64, 96, 128, 160]\n  tile: 16\n  block_rows: 4\n")  # fmt: skip
    out = CliRunner().invoke(cli, ["sweep", str(sweep), "--dry-run", "--shard", "1/2"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert "at every point: tile=16, block_rows=4, dtype=float32" in lines
    assert lines[-1] == ("2 point(s) × 2 variant(s) (naive, padded; baseline naive) = "
                         "4 measurement(s), 1 distinct compile(s)")  # fmt: skip
    rows = [line for line in lines if line.startswith("│")]
    assert [row.split("│")[2].strip() for row in rows] == ["64", "128"]  # points 2 and 4 of 5


def _failing_command(monkeypatch, error: BaseException) -> None:
    def fail() -> None:
        raise error

    monkeypatch.setitem(cli.commands, "fail", click.Command("fail", callback=fail))


def test_ctrl_c_is_one_word_and_its_exit_code(monkeypatch):
    from gpubench.errors import EXIT_INTERRUPTED

    _failing_command(monkeypatch, KeyboardInterrupt())
    result = CliRunner().invoke(cli, ["fail"])
    assert result.exit_code == EXIT_INTERRUPTED and result.stderr == "interrupted\n"


def test_the_error_line_is_red_on_a_colour_terminal_and_its_numbers_plain(monkeypatch):
    from gpubench.errors import ConfigError

    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    _failing_command(monkeypatch, ConfigError("tile 48 is not a power of two", source="s.yaml"))
    result = CliRunner().invoke(cli, ["fail"])
    assert result.exit_code == 2
    assert result.stderr == "\x1b[1;31merror: \x1b[0ms.yaml: tile 48 is not a power of two\n"


def test_the_installed_command_calls_itself_gpubench(monkeypatch, capsys):
    from gpubench.cli import main

    monkeypatch.setattr(sys, "argv", ["anything", "--help"])
    with pytest.raises(SystemExit) as info:
        main()
    assert info.value.code == 0
    assert capsys.readouterr().out.startswith("Usage: gpubench [OPTIONS] COMMAND [ARGS]...")


HUGE = "x" * 100_000


@pytest.mark.parametrize("args", [["run", "transpose", "-v", HUGE],
                                  ["run", "transpose", "--min-samples", HUGE],
                                  ["run", "transpose", "--tile", HUGE], [HUGE], [f"--{HUGE}"]])  # fmt: skip
def test_a_huge_value_in_a_usage_error_comes_back_cut(args):
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 2
    [error] = out.output.splitlines()  # one line, not click's four
    assert error.startswith("error: gpubench") and len(error) < 500, error[:500]
    assert "x" * 190 in error and "x" * 200 not in error and "…" in error  # cut, and said so


def test_a_huge_value_in_a_gpubench_error_comes_back_cut(monkeypatch):
    """Errors gpubench raises itself are cut the same way (an unreachable 100 kB scheduler
    address came back whole)."""
    from gpubench import backends
    from gpubench.errors import EnvironmentProblem

    def refuse(*args, **kwargs):
        raise EnvironmentProblem(f"cannot reach the Dask scheduler at tcp://{HUGE}:1: timed out")

    monkeypatch.setattr(backends, "preflight", refuse)
    out = CliRunner().invoke(cli, ["run", "transpose", "--size", "64"])
    assert out.exit_code == 4
    (error,) = out.output.splitlines()
    address = f"tcp://{HUGE}:1:"[:199] + "…"  # the word cut to 200 characters
    assert error == f"error: cannot reach the Dask scheduler at {address} timed out"
