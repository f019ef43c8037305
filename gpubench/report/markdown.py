"""Any rich table as GitHub-flavoured markdown: the same rows the terminal shows, for pull
requests, CI job summaries and READMEs."""

from __future__ import annotations

from typing import Any


def _plain(cell: Any) -> str:
    if hasattr(cell, "plain"):
        text = cell.plain
    else:
        # A plain string cell is rich markup ("[bold red]slower[/]"), as the terminal reads it.
        from rich.errors import MarkupError
        from rich.text import Text

        try:
            text = Text.from_markup(str(cell)).plain
        except MarkupError:
            text = str(cell)
    # A cell is one line in markdown; a pipe would end it early.
    return " ".join(text.split()).replace("|", "\\|")


def table(rich_table: Any) -> str:
    """The table's title as a bold line, its header row, and its rows."""
    columns = rich_table.columns
    lines = []
    if rich_table.title:
        lines += [f"**{_plain(rich_table.title)}**", ""]
    lines.append("| " + " | ".join(_plain(c.header) for c in columns) + " |")
    lines.append(
        "| " + " | ".join("---:" if c.justify == "right" else "---" for c in columns) + " |"
    )
    cells = [list(c.cells) for c in columns]
    for row in range(rich_table.row_count):
        lines.append("| " + " | ".join(_plain(col[row]) for col in cells) + " |")
    return "\n".join(lines) + "\n"


def document(heading: str, device_line: str, tables: list[Any], notes: list[str] = ()) -> str:
    """A markdown report: a heading, the device line, the tables, notes."""
    parts = [f"### {heading}", "", device_line, ""]
    for rich_table in tables:
        parts += [table(rich_table), ""]
    parts += [f"{note}  " for note in notes]
    return "\n".join(parts).rstrip() + "\n"


def write(path: str, text: str) -> None:
    """Write atomically (a job summary must never be half a table)."""
    import os
    from pathlib import Path

    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(target)


def device_line(environment: dict[str, Any], when: str | None = None) -> str:
    """One line naming the GPU and the software, for reports."""
    dev = environment.get("device") or {}
    parts = [
        f"{dev.get('name', 'unknown GPU')} ({dev.get('arch', '?')}, {dev.get('sm_count', '?')} SMs)"
    ]
    labels = (
        ("driver_version", "driver"),
        ("cuda_driver_api_version", "CUDA"),
        ("gpubench_version", "gpubench"),
    )
    for key, label in labels:
        if environment.get(key):
            parts.append(f"{label} {environment[key]}")
    if when:
        parts.append(str(when)[:10])
    return " · ".join(parts)
