"""A rich table that shows its text as it is.

Names and values in a table come from results files, kernel files and graph files (a variant,
a GPU name, a parameter, a point's value). rich reads a plain string as markup: a name with
brackets in it would lose them, or stop the command with a MarkupError for an unmatched
closing tag. Every table gpubench prints is a PlainTable; a styled cell is a rich Text.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text


def plain(value: Any) -> Any:
    """A string as a Text (never read as markup); anything else as it is."""
    return Text(value) if isinstance(value, str) else value


class PlainTable(Table):
    def __init__(self, *headers: Any, title: Any = None, **kwargs: Any) -> None:
        super().__init__(title=plain(title), **kwargs)
        for header in headers:  # rich takes a header that is not a string for a Column
            self.add_column(header)

    def add_column(self, header: Any = "", *args: Any, **kwargs: Any) -> None:
        super().add_column(plain(header), *args, **kwargs)

    def add_row(self, *cells: Any, **kwargs: Any) -> None:
        super().add_row(*(plain(c) for c in cells), **kwargs)


def say(console: Any, text: str) -> None:
    """One line of gpubench's own words around names and paths from files, printed as it is:
    no markup read in it, no numbers or paths coloured."""
    console.print(text, markup=False, highlight=False)
