"""The commands that draw results (roofline, plot): an empty or unwritable path is refused in
one line before anything is read or drawn."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from gpubench.cli import cli

EMPTY = "error: command line: {option}: an empty path (''): give a file name\n"


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["roofline", "a.json", "-o", ""], "--output"),
        (["roofline", "a.json", "--markdown", ""], "--markdown"),
        (["plot", "a.json", "-o", ""], "--output"),
    ],
)
def test_an_empty_output_path_is_refused_naming_its_option(args, option):
    result = CliRunner().invoke(cli, args)
    assert (result.exit_code, result.output) == (2, EMPTY.format(option=option))


def test_plot_of_an_empty_results_path_is_one_line():
    result = CliRunner().invoke(cli, ["plot", ""])
    expected = "error: command line: RESULTS: an empty path: give a results file\n"
    assert (result.exit_code, result.output) == (2, expected)


def test_a_roofline_picture_matplotlib_cannot_write_is_refused_before_the_files_are_read():
    pytest.importorskip("matplotlib")
    result = CliRunner().invoke(cli, ["roofline", "missing.json", "-o", "chart.foo"])
    assert result.exit_code == 2
    assert result.output.startswith(
        "error: chart.foo: --output: a picture needs an extension matplotlib writes, got '.foo'"
    )
    assert result.output.count("\n") == 1
