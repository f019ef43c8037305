"""MkDocs hook: the reference pages are made from the code before every build."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def on_pre_build(config: Any) -> None:
    from gpubench.report import reference

    folder = Path(config["docs_dir"]) / "reference"
    folder.mkdir(exist_ok=True)
    for name, text in reference.pages().items():
        path = folder / name
        if not path.exists() or path.read_text() != text:  # no rewrite: no rebuild loop
            path.write_text(text)
