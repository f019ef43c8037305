"""Environment variables in tests: set one, or unset it for None."""

from __future__ import annotations

import pytest


def set_or_unset(monkeypatch: pytest.MonkeyPatch, name: str, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv(name, raising=False)
    else:
        monkeypatch.setenv(name, value)
