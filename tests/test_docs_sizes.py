"""The docs stay written for their reader: a short README, a user's guide, and the testing
record on a developers' page of its own (issue #54: the guide had grown to 88 KB of it)."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def _nav_pages(entries: list) -> list[str]:
    pages: list[str] = []
    for entry in entries:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            pages.extend(_nav_pages(value) if isinstance(value, list) else [value])
    return pages


def test_the_readme_and_the_guide_stay_short():
    assert (REPO / "README.md").stat().st_size <= 10_000
    assert (REPO / "docs" / "guide.md").stat().st_size <= 25_000


def test_the_developers_page_exists_and_is_in_the_nav():
    assert (REPO / "docs" / "developers.md").is_file()
    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"]
    assert "developers.md" in _nav_pages(nav)
