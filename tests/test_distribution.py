"""The name gpubench installs under, and the install hints that use it."""

from __future__ import annotations

import tomllib
from pathlib import Path

import gpubench

REPO = Path(__file__).resolve().parents[1]


def test_the_distribution_is_not_the_package_index_s_other_gpubench():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["name"] == gpubench.DISTRIBUTION == "gpubench-studies"
    assert project["scripts"]["gpubench"] == "gpubench.cli:main"  # the command stays gpubench


def test_an_install_hint_names_the_distribution_and_the_extra():
    assert gpubench.install_hint("plot") == "pip install 'gpubench-studies[plot]'"


def test_no_message_sends_users_to_the_bare_gpubench_name():
    for path in (REPO / "gpubench").rglob("*.py"):
        text = path.read_text()
        assert "'gpubench[" not in text and " gpubench[" not in text, path
