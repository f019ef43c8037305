"""The shipped GPU smoke workflow: valid YAML, its commands accepted, its baseline readable."""

from __future__ import annotations

import shlex
from pathlib import Path

import yaml
from click.testing import CliRunner

from gpubench.cli import cli

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / ".github/workflows/gpu-smoke.yml"


def test_the_workflow_runs_the_smoke_sweep_and_compares_with_a_baseline_that_loads():
    flow = yaml.safe_load(WORKFLOW.read_text())
    baseline = flow["env"]["BASELINE"]
    steps = flow["jobs"]["smoke"]["steps"]
    commands = [s["run"] for s in steps if "run" in s]
    sweep = next(c for c in commands if c.startswith("gpubench sweep"))
    compare = next(c for c in commands if c.startswith("gpubench compare"))
    assert "configs/smoke.yaml" in sweep and "--markdown" in sweep
    # The compare step, with the baseline against itself: accepted, nothing regressed.
    args = shlex.split(compare.replace('"$BASELINE"', baseline))[1:]
    args[2] = str(REPO / baseline)
    args[1] = str(REPO / baseline)
    args = [a for a in args if a != "--markdown" and a != "compare.md"]
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 0, out.output
    assert "120 pair(s) compared; largest change 0.00%" in out.output


def test_the_workflow_carries_the_history_and_publishes_its_report(tmp_path):
    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"]["smoke"]["steps"]
    commands = [s.get("run", "") for s in steps]
    restore = next(c for c in commands if "gh run download" in c)
    assert "--name gpu-smoke-history" in restore and "results" in restore
    sweep = next(c for c in commands if c.startswith("gpubench sweep"))
    assert "--history results/history.sqlite" in sweep and "--label" in sweep
    report = next(c for c in commands if c.startswith("gpubench report"))
    assert "--store results/history.sqlite" in report
    uploads = {s["with"]["name"]: s["with"]["path"] for s in steps
               if s.get("uses", "").startswith("actions/upload-artifact")}  # fmt: skip
    assert uploads["gpu-smoke-history"] == "results/history.sqlite"
    assert uploads["gpu-smoke-report"] == "report/"
    # The report command as the workflow gives it, on a store of the shipped baseline.
    from gpubench.model.results import load_json
    from gpubench.store.history import CodeVersion, History

    store = tmp_path / "results" / "history.sqlite"
    with History.open(store) as h:
        h.append(load_json(REPO / yaml.safe_load(WORKFLOW.read_text())["env"]["BASELINE"]),
                 version=CodeVersion(None, None, "0.1.0"))  # fmt: skip
    args = shlex.split(report)[1:]
    args[args.index("--store") + 1] = str(store)
    args[args.index("-o") + 1] = str(tmp_path / "report")
    out = CliRunner().invoke(cli, args)
    assert out.exit_code == 0, out.output
    assert (tmp_path / "report" / "index.html").is_file()
    assert (tmp_path / "report" / "transpose.html").is_file()


def test_no_script_stops_processes_by_name():
    # On a shared GPU node a name matches other users' processes: scripts stop what they
    # started, by process id.
    scripts = [*REPO.glob("tests/scripts/*.sh"), *REPO.glob(".ci/*")]
    assert scripts
    for script in scripts:
        text = script.read_text()
        for word in ("pkill", "killall"):
            assert word not in text, f"{script.name} uses {word}"
