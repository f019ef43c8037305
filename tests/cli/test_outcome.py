"""A sweep's outcome shown and kept (gpubench.cli.outcome), through the real CLI and worker
processes over the CPU stand-in."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from gpubench.cli import cli
from gpubench.engine import spawned

SCALE = str(Path(__file__).parents[2] / "tests/suites/scale.py")


def test_a_ctrl_c_while_the_workers_exits_are_waited_for_keeps_the_run_s_exit_code(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("GPUBENCH_BACKEND", "tests.fakes:FakeBackend")
    monkeypatch.chdir(tmp_path)
    waits = []
    real_wait = spawned.wait_for_stopped

    def interrupted_wait():
        waits.append(len(spawned._stopping))
        real_wait()  # the worker still waited for, for the tests after this one
        raise KeyboardInterrupt

    monkeypatch.setattr(spawned, "wait_for_stopped", interrupted_wait)
    args = ["run", SCALE, "-v", "good", "--n", "100", "--min-samples", "3", "--json", "r.json"]
    result = CliRunner().invoke(cli, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    assert waits == [1]  # its one worker, killed and not yet waited for when the table was done
    assert (tmp_path / "r.json").exists()
