"""Markdown tables: the same cells as the terminal, escaped; --markdown on the commands."""

from __future__ import annotations

from click.testing import CliRunner
from rich.table import Table
from rich.text import Text

from gpubench.cli import cli
from gpubench.report import markdown
from gpubench.results import Result, ResultSet, Status, save_json


def test_a_rich_table_becomes_github_markdown_cell_for_cell():
    table = Table(title="transpose · size=4096")
    table.add_column("variant")
    table.add_column("median", justify="right")
    table.add_row(Text("naive (base)", style="bold"), "1.228 ms")
    table.add_row("a|b", "two\nlines")
    assert markdown.table(table) == (
        "**transpose · size=4096**\n\n"
        "| variant | median |\n"
        "| --- | ---: |\n"
        "| naive (base) | 1.228 ms |\n"
        "| a\\|b | two lines |\n"
    )


def test_compare_writes_its_table_and_verdict_as_markdown(tmp_path):
    def one(median):
        r = Result(suite="s", variant="a", point={"n": 1}, status=Status.OK,
                   summary={"median_ms": median, "rel_noise": 0.01})  # fmt: skip
        return ResultSet(suite="s", environment={"device": {"name": "Fake GPU"}}, spec={},
                         results=[r])  # fmt: skip

    save_json(one(1.0), tmp_path / "a.json")
    save_json(one(1.5), tmp_path / "b.json")
    md = tmp_path / "out.md"
    out = CliRunner().invoke(cli, ["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"),
                                   "--markdown", str(md)])  # fmt: skip
    assert out.exit_code == 3
    text = md.read_text()
    assert text.startswith("### gpubench compare: 1 regression(s)\n\nFake GPU")
    assert "| a | 1.000 ms | 1.500 ms | +50.0% | 1.0% | slower |" in text
