"""`gpubench sweep FILE --dry-run`: the plan printed, for one point, a few, and a large sweep
summarised (in-process, no GPU)."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from gpubench.cli import cli


def dry_run(tmp_path, monkeypatch, params):
    monkeypatch.chdir(tmp_path)  # a short path: the table's title does not wrap
    Path("plan.yaml").write_text(yaml.safe_dump({"suite": "transpose", "params": params}))
    result = CliRunner().invoke(cli, ["sweep", "plan.yaml", "--dry-run"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return result.output


def test_a_large_dry_run_names_its_file_and_no_fixed_line(tmp_path, monkeypatch):
    out = dry_run(tmp_path, monkeypatch, {"rows": list(range(16, 16 * 52, 16)), "cols": 64})
    assert "plan.yaml: transpose, 51 points" in out
    assert "at every point" not in out  # the axes table already shows the fixed values
    assert "51 point(s) ×" in out


def test_a_one_point_dry_run_lists_its_point_and_names_its_file(tmp_path, monkeypatch):
    out = dry_run(tmp_path, monkeypatch, {"size": 64, "tile": 32})
    assert "plan.yaml: transpose" in out and "1 point(s) ×" in out
    assert "at every point" not in out  # every parameter is in the one row


def test_a_small_dry_run_names_the_fixed_parameters_once(tmp_path, monkeypatch):
    out = dry_run(tmp_path, monkeypatch, {"size": [64, 128], "tile": 32})
    fixed = out.split("at every point: ")[1].split("point(s)")[0]
    assert "tile=32" in fixed and "size=" not in fixed


def test_an_empty_output_path_is_refused_by_the_dry_run_too(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("plan.yaml").write_text(yaml.safe_dump({"suite": "transpose", "params": {"size": 64}}))
    for option in ("--json", "--csv", "--jsonl", "--markdown", "--history", "--resume"):
        result = CliRunner().invoke(cli, ["sweep", "plan.yaml", "--dry-run", option, ""])
        assert result.exit_code == 2
        assert (
            result.output
            == f"error: command line: {option}: an empty path (''): give a file name\n"
        )


UNTRUSTED_LINE = (
    "untrusted mode: every timed run checked, inputs switched between two sets at random "
    "(docs: guarantees)"
)


def test_the_dry_run_says_when_the_run_would_be_untrusted(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for timing, options, shown in (
        (None, [], False),
        (None, ["--untrusted"], True),
        ({"untrusted": True}, [], True),
        ({"untrusted": True}, ["--trusted"], False),  # the command line wins over the file
        (None, ["--untrusted", "--trusted"], False),  # the last of the pair wins
    ):
        plan = {"suite": "transpose", "params": {"size": 64}}
        if timing is not None:
            plan["timing"] = timing
        Path("plan.yaml").write_text(yaml.safe_dump(plan))
        result = CliRunner().invoke(
            cli, ["sweep", "plan.yaml", "--dry-run", *options], terminal_width=200
        )
        assert result.exit_code == 0, result.output
        assert (UNTRUSTED_LINE in result.output) is shown, (timing, options)


def test_a_label_the_store_would_refuse_is_refused_by_the_dry_run_too(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("plan.yaml").write_text(yaml.safe_dump({"suite": "transpose", "params": {"size": 64}}))
    result = CliRunner().invoke(cli, ["sweep", "plan.yaml", "--dry-run", "--label", "a\nb"])
    assert result.exit_code == 2
    assert result.output.strip() == (
        "error: command line: --label: a label holds the control character '\\n' at 1: give "
        "one line of printable text"
    )


def test_workers_start_before_the_file_is_read_and_a_refused_file_stops_them(tmp_path, monkeypatch):
    from gpubench.engine import ahead, spawned

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GPUBENCH_BACKEND", "tests.fakes:FakeBackend")
    started = []

    def start(*args):
        real_start(*args)
        started.extend(process for _, process, _ in spawned._started.values())

    real_start = ahead.start
    monkeypatch.setattr(ahead, "start", start)
    (tmp_path / "bad.yaml").write_text("suite: transpose\nparams: {size: [1024]}\nbogus: 1\n")
    result = CliRunner().invoke(cli, ["sweep", "bad.yaml"])
    assert result.exit_code == 2 and "bogus" in result.output
    assert len(started) == 1 and not started[0].is_alive() and spawned._started == {}
    started.clear()
    result = CliRunner().invoke(cli, ["sweep", "bad.yaml", "--dry-run"])
    assert result.exit_code == 2 and started == []  # a dry run starts none
