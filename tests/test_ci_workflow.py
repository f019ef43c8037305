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
