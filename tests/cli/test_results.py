"""The commands over results files (compare, merge): an empty path is refused in one line
before anything is read; compare's markdown names the GPU."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from gpubench.cli import cli

EMPTY = "error: command line: {option}: an empty path (''): give a file name\n"


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["compare", "a.json", "b.json", "--markdown", ""], "--markdown"),
    ],
)
def test_an_empty_output_path_is_refused_naming_its_option(args, option):
    result = CliRunner().invoke(cli, args)
    assert (result.exit_code, result.output) == (2, EMPTY.format(option=option))


def test_compare_writes_markdown_headed_by_the_verdict_and_the_new_run_s_gpu(tmp_path):
    from gpubench.model.results import Result, ResultSet, Status, save_json

    def one(median):
        environment = {"device": {"name": "H100", "arch": "sm_90", "sm_count": 132}}
        result = Result("s", "v", {"n": 1}, Status.OK, summary={"median_ms": median})
        return ResultSet(
            suite="s",
            environment=environment,
            spec={},
            results=[result],
            created="2026-11-28T01:00:00+00:00",
        )

    save_json(one(1.0), tmp_path / "a.json")
    save_json(one(1.0), tmp_path / "b.json")
    md = tmp_path / "c.md"
    args = ["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--markdown", str(md)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    lines = md.read_text().splitlines()
    assert lines[0] == "### gpubench compare: no regressions"
    assert lines[2] == "H100 (sm_90, 132 SMs) · 2026-11-28"


def test_compare_energy_writes_markdown_of_the_energy_with_its_noise(tmp_path):
    """`--energy`: the table is of the energy per run in mJ, the noise column the energy
    readings', and a pair without a reading is listed as not comparable."""
    from gpubench.model.results import Result, ResultSet, Status, save_json
    from tests.store.test_compare import with_energy

    def run(mj):
        timed = {"median_ms": 1.0, "rel_noise": 0.001}
        results = [
            with_energy(Result("s", "v", {"n": 1}, Status.OK, summary=dict(timed)), mj, 0.04),
            Result("s", "v", {"n": 2}, Status.OK, summary=dict(timed)),
        ]
        return ResultSet(suite="s", environment={}, spec={}, results=results)

    save_json(run(100.0), tmp_path / "a.json")
    save_json(run(130.0), tmp_path / "b.json")
    md = tmp_path / "c.md"
    args = ["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--energy"]
    result = CliRunner().invoke(cli, [*args, "--markdown", str(md)], terminal_width=200)
    assert result.exit_code == 3, result.output
    text = md.read_text()
    assert text.splitlines()[0] == "### gpubench compare: 1 regression(s)"
    assert "| 1 | v | 100.000 | 130.000 | +30.0% | 4.0% | worse |" in text
    assert "| 2 | v |  |  |  |  | not comparable: no energy reading (base: measured " in text
