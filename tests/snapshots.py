"""Pinned text (golden files) for outputs whose every character is the product: plans, tables.

`matches(path, text)` compares `text` with the file line by line (the first differing line is
the failure); GPUBENCH_UPDATE_SNAPSHOTS=1 writes the file instead. After a deliberate change,
regenerate, then read the diff before committing it.
"""

from __future__ import annotations

import os
from pathlib import Path


def matches(path: Path, text: str) -> None:
    if os.environ.get("GPUBENCH_UPDATE_SNAPSHOTS"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no pinned {path.name}: GPUBENCH_UPDATE_SNAPSHOTS=1 writes it"
    expected, got = path.read_text().splitlines(), text.splitlines()
    for index, (want, have) in enumerate(zip(expected, got, strict=False)):
        assert have == want, f"{path.name} line {index + 1} differs"
    assert len(got) == len(expected), f"{path.name}: {len(got)} lines, pinned {len(expected)}"


def table_text(table) -> str:
    """A rich Table as what decides its look: title, every column's header, alignment, wrapping
    and cells, and the table's box and padding (not rich's drawing of it, which is rich's to
    change between releases)."""
    lines = [f"title={table.title!r} title_justify={table.title_justify!r} "
             f"show_header={table.show_header} box={type(table.box).__name__ if table.box else None}"
             f" padding={table.padding}"]  # fmt: skip
    for column in table.columns:
        lines.append(f"column {column.header!r} justify={column.justify} no_wrap={column.no_wrap}"
                     f" min_width={column.min_width}")  # fmt: skip
        lines += [f"  {cell!r}" for cell in column._cells]
    return "\n".join(lines) + "\n"
