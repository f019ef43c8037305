"""What the commands share, without running one: --device/--devices/--scheduler/--shard as a
Spread (each refusal in its words), the timing and output options as a command receives
them, and the options made from a suite's parameters."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from gpubench.cli import common
from gpubench.engine.session import Spread
from gpubench.errors import ConfigError
from gpubench.model.benchmark import Param


@pytest.mark.parametrize(("args", "spread"), [
    ((0, None), Spread(0, None, None, None)),
    ((3, "all"), Spread(3, "all", None, None)),
    ((0, " 0, 2,3 "), Spread(0, [0, 2, 3], None, None)),
    ((1, None, "tcp://h:8786"), Spread(1, None, "tcp://h:8786", None)),
    ((0, None, None, "0/1"), Spread(0, None, None, (0, 1))),
    ((0, "1", None, "3/4"), Spread(0, [1], None, (3, 4))),
])  # fmt: skip
def test_the_spread_of_each_accepted_combination(args, spread):
    assert common.spread_from(*args) == spread


SHARD = "expected I/N with 0 <= I < N (the I-th of N shards, e.g. $SLURM_ARRAY_TASK_ID/4), got "


@pytest.mark.parametrize(("args", "message"), [
    ((0, "x"), "--devices: expected 'all' or device indices such as 0,1,3; got 'x'"),
    ((0, ","), "--devices: name at least one device"),
    ((0, "1,1"), "--devices: a device is named twice: '1,1'"),
    ((0, "all", "tcp://h:1"), "--scheduler: --scheduler sends points to the cluster's workers; "
     "--devices picks GPUs of this host: give one of them"),
    ((0, None, ""), "--scheduler: expected an address such as tcp://host:8786, got ''"),
    ((0, None, "  "), "--scheduler: expected an address such as tcp://host:8786, got '  '"),
    ((0, None, "tcp://h :1"), "--scheduler: expected an address such as tcp://host:8786, got "
     "'tcp://h :1'"),
    *[((0, None, None, shard), f"--shard: {SHARD}{shard!r}")
      for shard in ("1", "1/0", "2/2", "-1/2", "a/2", "1/2/3", "0/-1", "/", "")],
])  # fmt: skip
def test_each_spread_refusal_in_its_words(args, message):
    with pytest.raises(ConfigError) as info:
        common.spread_from(*args)
    assert str(info.value) == message


def _received(decorator, *args):
    """The keyword arguments a command decorated with `decorator` receives for `args`."""
    seen = {}

    @click.command()
    @decorator
    def command(**kwargs):
        seen.update(kwargs)

    result = CliRunner().invoke(command, list(args))
    assert result.exit_code == 0, result.output
    return seen


def test_the_timing_options_as_a_command_receives_them():
    assert _received(common.timing_options) == {
        "warmup": None,
        "min_samples": None,
        "max_samples": None,
        "min_time_s": None,
        "max_time_s": None,
        "target_noise": None,
        "mode": None,
        "time_limit_s": None,
        "flush_l2": None,
        "untrusted": None,
        "energy": None,
        "energy_window_s": None,
    }
    assert _received(
        common.timing_options,
        "--warmup",
        "2",
        "--min-samples",
        "3",
        "--max-samples",
        "9",
        "--min-time",
        "0.5",
        "--max-time",
        "1.5",
        "--target-noise",
        "0.01",
        "--mode",
        "hot",
        "--time-limit",
        "30",
        "--no-flush-l2",
        "--untrusted",
        "--energy",
        "--energy-window",
        "2.5",
    ) == {
        "warmup": 2,
        "min_samples": 3,
        "max_samples": 9,
        "min_time_s": 0.5,
        "max_time_s": 1.5,
        "target_noise": 0.01,
        "mode": "hot",
        "time_limit_s": 30.0,
        "flush_l2": False,
        "untrusted": True,
        "energy": True,
        "energy_window_s": 2.5,
    }
    assert _received(common.timing_options, "--no-energy")["energy"] is False
    assert _received(common.timing_options, "--flush-l2")["flush_l2"] is True
    assert _received(common.timing_options, "--trusted")["untrusted"] is False
    assert set(common.TIMING_KEYS) == set(_received(common.timing_options))


def test_the_output_options_as_a_command_receives_them():
    assert _received(common.output_options) == {
        "json_path": None, "csv_path": None, "jsonl_path": None, "markdown_path": None,
        "device": 0, "profile": False, "devices": None, "history_path": None, "label": "",
        "verbose": False}  # fmt: skip
    given = _received(common.output_options, "--json", "a.json", "--csv", "a.csv", "--jsonl",
                      "a.jsonl", "--markdown", "a.md", "--device", "2", "--profile",
                      "--devices", "all", "--history", "--label", "nightly", "--verbose")  # fmt: skip
    assert given == {
        "json_path": "a.json", "csv_path": "a.csv", "jsonl_path": "a.jsonl",
        "markdown_path": "a.md", "device": 2, "profile": True, "devices": "all",
        "history_path": common.HISTORY_DEFAULT, "label": "nightly", "verbose": True}  # fmt: skip
    assert _received(common.output_options, "--history", "h.sqlite")["history_path"] == (
        "h.sqlite")  # fmt: skip


def test_the_shared_options_say_what_they_do():
    @click.command()
    @common.timing_options
    @common.output_options
    def command(**kwargs):
        pass

    text = " ".join(CliRunner().invoke(command, ["--help"], terminal_width=400).output.split())
    for expected in (
        "--warmup INTEGER Untimed runs before sampling.",
        "--min-time FLOAT Least total GPU time sampled, s.",
        "--mode [cold|hot] cold: one run per sample; hot: back-to-back runs (a CUDA graph) per "
        "sample.",
        "--time-limit FLOAT Kill a variant's worker after this many seconds (recorded as "
        "timeout).",
        "--flush-l2 / --no-flush-l2 Flush L2 before every sample (default: the suite decides).",
        "--backend pycuda|cuda-core The GPU backend: pycuda (the default;",
        "--json FILE Write results as JSON.",
        "--device INTEGER CUDA device index. [default: 0]",
        "--devices all|I,J,... Run points on several GPUs of this host at once",
        "--history [PATH] Also append the run to a history store (SQLite; "
        "results/history.sqlite without PATH)",
    ):  # fmt: skip
        assert expected in text, expected


@pytest.mark.parametrize(("param", "flag", "kind", "help_text"), [
    (Param("block_rows", int, 8, "threads"), "--block-rows", click.INT, "threads [default: 8]"),
    (Param("scale", float, 0.5, "factor"), "--scale", click.FLOAT, "factor [default: 0.5]"),
    (Param("fast", bool, False, "use it"), "--fast", click.BOOL, "use it [default: False]"),
    (Param("name", str, "x", "a name"), "--name", click.STRING, "a name [default: x]"),
])  # fmt: skip
def test_a_parameter_becomes_an_option(param, flag, kind, help_text):
    option = common.param_option(param)
    assert (option.opts, option.name, option.type, option.default, option.help) == (
        [flag], param.name, kind, None, help_text)  # fmt: skip


def test_a_parameter_with_choices_or_a_derived_default():
    option = common.param_option(Param("tile", int, 32, "tile", choices=(16, 32)))
    assert isinstance(option.type, click.Choice) and list(option.type.choices) == ["16", "32"]
    derived = Param("rows", int, None, "rows", derived_from="size")
    assert common.param_option(derived).help == "rows [default: size]"


def test_the_exit_codes_epilog_lists_every_code():
    from gpubench.errors import EXIT_CODE_MEANINGS

    lines = common.EXIT_CODES_HELP.splitlines()
    assert lines[:3] == ["", "\b", "Exit codes:"]
    for code in EXIT_CODE_MEANINGS:
        assert any(line.startswith(f"  {code:<4} ") for line in lines)
    assert all(len(line) <= 80 for line in lines)


def test_the_shared_options_help_pinned():
    """Every shared option's help, type and default as `gpubench run --help` shows them
    (tests/cli/shared_help.txt; GPUBENCH_UPDATE_SNAPSHOTS=1 rewrites it)."""
    from pathlib import Path

    from tests import snapshots

    @click.command()
    @common.timing_options
    @common.output_options
    def command(**kwargs):
        pass

    text = CliRunner().invoke(command, ["--help"], terminal_width=100).output
    snapshots.matches(Path(__file__).parent / "shared_help.txt", text)


def test_the_consoles_write_to_their_streams_at_pipe_width_when_not_a_terminal():
    err, out = common.err_console(), common.out_console()
    assert (err.stderr, err.width, err.is_terminal) == (True, common.PIPE_WIDTH, False)
    assert (out.stderr, out.width, out.is_terminal) == (False, common.PIPE_WIDTH, False)


def test_execute_hands_both_consoles_to_what_shows_the_outcome(monkeypatch):
    from gpubench.cli import outcome

    seen = {}

    def execute(*args):
        seen["args"] = args
        return 3

    monkeypatch.setattr(outcome, "execute", execute)
    assert common.execute("spec", "request", 2, spread="spread") == 3
    spec, request, device, console, err, spread = seen["args"]
    assert (spec, request, device, spread) == ("spec", "request", 2, "spread")
    assert (console.stderr, err.stderr) == (False, True)


def test_backend_reaches_the_spread_as_a_parameter_not_the_environment(monkeypatch):
    import os

    monkeypatch.delenv("GPUBENCH_BACKEND", raising=False)
    seen = []

    @click.command()
    @common.backend_option
    def command() -> None:
        seen.append((common.chosen_backend(), common.spread_from(0, None).backend))

    assert CliRunner().invoke(command, ["--backend", "cuda-core"]).exit_code == 0
    assert CliRunner().invoke(command, []).exit_code == 0
    assert seen == [("cuda-core", "cuda-core"), (None, None)]
    assert "GPUBENCH_BACKEND" not in os.environ
    assert common.chosen_backend() is None  # outside a command: none chosen


class _Terminal:
    """A stream that says it is a terminal."""

    def __init__(self) -> None:
        self.written: list[str] = []

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.written.append(text)
        return len(text)

    def flush(self) -> None: ...


@pytest.mark.parametrize("make", [common.err_console, common.out_console])
def test_a_console_on_a_pipe_is_wide_and_on_a_terminal_fits_the_terminal(make, monkeypatch):
    import sys

    for variable in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("COLUMNS", "77")
    stream = "stderr" if make is common.err_console else "stdout"
    other = "stdout" if stream == "stderr" else "stderr"
    monkeypatch.setattr(sys, stream, _Terminal())
    monkeypatch.setattr(sys, other, _Terminal())
    terminal = make()
    assert terminal.is_terminal and terminal.width == 77 and terminal.file is getattr(sys, stream)
    with open(__file__) as plain:  # not a terminal: a file
        monkeypatch.setattr(sys, stream, plain)
        piped = make()
        assert not piped.is_terminal and piped.width == common.PIPE_WIDTH
        assert piped.file is plain


def test_compare_and_the_web_report_count_a_change_from_the_same_threshold():
    from gpubench.cli.history import report
    from gpubench.cli.results import compare

    defaults = {
        cmd.name: next(p.default for p in cmd.params if p.name == "threshold")
        for cmd in (compare, report)
    }
    assert defaults == {"compare": common.CHANGE_THRESHOLD, "report": common.CHANGE_THRESHOLD}
    assert common.CHANGE_THRESHOLD == 0.05


@pytest.mark.parametrize("device", [-1, 2**31, 10**20])
def test_a_device_index_cuda_cannot_name_is_refused(device):
    with pytest.raises(ConfigError) as info:
        common.spread_from(device, None)
    assert str(info.value) == f"--device: expected a device index from 0, got {device}"
    assert common.spread_from(2**31 - 1, None).device == 2**31 - 1


@pytest.mark.parametrize("command", ["info", "ceilings"])
@pytest.mark.parametrize("device", ["-1", str(2**31)])
def test_every_command_s_device_index_cuda_cannot_name_is_a_usage_error(command, device):
    from gpubench.cli import cli

    result = CliRunner().invoke(cli, [command, "--device", device])
    assert result.exit_code == 2
    assert result.output == f"error: --device: expected a device index from 0, got {device}\n"
