"""Tables show names from files as they are: brackets are text, never rich markup."""

from __future__ import annotations

import io

from click.testing import CliRunner
from rich.console import Console
from rich.text import Text

from gpubench.cli import cli
from gpubench.model.results import Result, ResultSet, Status, save_json
from gpubench.report.plain import PlainTable, plain


def rendered(table) -> str:
    console = Console(file=io.StringIO(), width=120, color_system=None)
    console.print(table)
    return console.file.getvalue()


def test_strings_become_text_and_styled_text_is_kept():
    styled = Text("slower", style="bold red")
    assert plain(styled) is styled and plain(3) == 3 and plain(None) is None
    assert isinstance(plain("[/x]"), Text) and plain("[/x]").plain == "[/x]"


def test_titles_headers_and_cells_with_brackets_are_printed_as_they_are():
    table = PlainTable("[bold]first", title="GPU [/bold] [red]")
    table.add_column("[/]")
    table.add_row("[/x]", "[green]ok[/green]")
    text = rendered(table)
    for literal in ("GPU [/bold] [red]", "[bold]first", "[/]", "[/x]", "[green]ok[/green]"):
        assert literal in text


def test_compare_prints_variants_and_parameters_with_brackets(tmp_path):
    def results(median: float) -> ResultSet:
        rows = [Result("s", "[/x]", {"[bold]n": n}, Status.OK,
                       summary={"median_ms": median, "rel_noise": 0.01}) for n in (1, 2)]  # fmt: skip
        return ResultSet(suite="s", environment={"gpu_uuid": "GPU-[/]"}, spec={}, results=rows)

    save_json(results(1.0), tmp_path / "a.json")
    save_json(results(1.0), tmp_path / "b.json")
    out = CliRunner().invoke(cli, ["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")])
    assert out.exit_code == 0, out.output
    assert "[/x]" in out.output and "[bold]n" in out.output


def test_every_option_reaches_rich():
    table = PlainTable("a", title="t", title_justify="left", show_header=False)
    assert (table.title_justify, table.show_header) == ("left", False)
    table.add_column()
    table.add_column("c", "total", justify="right")
    table.add_row("1", "2", "3", style="bold", end_section=True)
    headers = [column.header for column in table.columns]
    assert [getattr(h, "plain", h) for h in headers] == ["a", "", "c"]
    assert table.columns[2].footer == "total" and table.columns[2].justify == "right"
    assert table.rows[0].style == "bold" and table.rows[0].end_section is True


def test_say_prints_brackets_and_numbers_as_they_are_even_on_a_colour_terminal():
    from gpubench.report.plain import say

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system="truecolor", width=200)
    say(console, "[bold]tile[/bold] 32 in runs/a.json: 1.5 ms")
    assert out.getvalue() == "[bold]tile[/bold] 32 in runs/a.json: 1.5 ms\n"
