"""`gpubench run SUITE` and `gpubench inspect SUITE`: each suite's command and help, made from
its declarations, and how a name that is not a suite is answered (no GPU, in-process)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gpubench.cli import cli
from gpubench.load import registry
from tests import snapshots

PINNED = Path(__file__).parent


def invoke(*args):
    return CliRunner().invoke(cli, list(args), terminal_width=100)


@pytest.mark.parametrize("command", ["run", "inspect"])
def test_a_suite_s_help_pinned(command):
    result = invoke(command, "transpose", "--help")
    assert result.exit_code == 0
    snapshots.matches(PINNED / f"{command}_transpose_help.txt", result.output)


SUITES = ", ".join(registry.suite_names())


@pytest.mark.parametrize("command", ["run", "inspect"])
def test_an_unknown_suite_is_a_usage_error_naming_the_suites(command):
    result = invoke(command, "transpos")
    assert result.exit_code == 2
    assert result.output == (
        f"error: gpubench {command}: unknown suite 'transpos' (did you mean 'transpose'?); "
        f"suites: {SUITES} (see 'gpubench {command} --help')\n"
    )


@pytest.mark.parametrize("command", ["run", "inspect"])
@pytest.mark.parametrize("name", ["mine.py", "mine.yaml", "mine.yml"])
def test_a_file_name_is_taken_as_a_suite_or_kernel_file(command, name):
    result = invoke(command, name)
    assert (result.exit_code, result.output) == (2, f"error: suite file '{name}' not found\n")


def test_an_option_before_the_suite_is_clicks_own_error():
    result = invoke("run", "-h")
    assert (result.exit_code, result.output) == (
        2,
        "error: gpubench run: No such option '-h' (see 'gpubench run --help')\n",
    )


def test_a_usage_error_is_one_line_with_a_click_that_has_no_no_args_is_help_error(monkeypatch):
    # click 8.1 (which pyproject allows) has no NoArgsIsHelpError: the check must not need it.
    import click

    monkeypatch.delattr(click.exceptions, "NoArgsIsHelpError", raising=False)
    result = invoke("run", "-h")
    assert (result.exit_code, result.output) == (
        2,
        "error: gpubench run: No such option '-h' (see 'gpubench run --help')\n",
    )
