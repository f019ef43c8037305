"""Markdown tables: the same cells as the terminal, escaped; --markdown on the commands."""

from __future__ import annotations

from click.testing import CliRunner
from rich.table import Table
from rich.text import Text

from gpubench.cli import cli
from gpubench.model.results import Result, ResultSet, Status, save_json
from gpubench.report import markdown


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


def test_markup_strings_lose_their_tags_and_unbalanced_ones_stay_as_written():
    table = Table()
    table.add_column("[bold]v[/]")
    table.add_row("[red]slower[/]")
    table.add_row("[/x] stays")
    assert markdown.table(table) == "| v |\n| --- |\n| slower |\n| [/x] stays |\n"


def test_a_document_is_heading_device_tables_and_notes_with_one_final_newline(tmp_path):
    one = Table(title="first")
    one.add_column("a")
    one.add_row("1")
    two = Table()
    two.add_column("b")
    text = markdown.document("sweep", "on Fake GPU", [one, two], ["note one", "note two"])
    assert text == (
        "### sweep\n\non Fake GPU\n\n**first**\n\n| a |\n| --- |\n| 1 |\n\n\n| b |\n| --- |\n\n\n"
        "note one  \nnote two\n"
    )
    assert markdown.document("h", "d", []) == "### h\n\nd\n"
    markdown.write(str(tmp_path / "s.md"), "é\n")
    assert (tmp_path / "s.md").read_bytes() == "é\n".encode()
    assert [p.name for p in tmp_path.iterdir()] == ["s.md"]
