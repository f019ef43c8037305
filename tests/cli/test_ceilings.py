"""`gpubench ceilings`: its output paths are checked before any GPU is looked for."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from gpubench.cli import cli


@pytest.mark.parametrize("option", ["--json", "--markdown"])
def test_an_empty_output_path_is_refused_before_the_gpu_is_looked_for(option):
    result = CliRunner().invoke(cli, ["ceilings", option, ""])
    assert result.exit_code == 2
    assert result.output == f"error: command line: {option}: an empty path (''): give a file name\n"
