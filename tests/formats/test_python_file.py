"""A user's Python file: loaded once as a module, and every way loading fails is one line
naming the file (and the line, where the file's own code failed)."""

from __future__ import annotations

import hashlib
import sys

import pytest

from gpubench.errors import ConfigError
from gpubench.formats.python_file import load_python_file


def test_a_file_is_loaded_once_under_a_name_of_its_path(tmp_path):
    path = tmp_path / "ref.py"
    path.write_text("VALUE = 3\n")
    module = load_python_file(str(path))
    name = "gpubench_user_" + hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    assert (module.__name__, module.VALUE, sys.modules[name]) == (name, 3, module)
    path.write_text("VALUE = 4\n")
    assert load_python_file(str(path)) is module  # once per process
    del sys.modules[name]


@pytest.mark.parametrize(("text", "message"), [
    ("x = (\n", "syntax error on line 1: '(' was never closed"),
    ("a = 1\nb = 2\nraise ValueError('boom')\n", "loading the suite failed (line 3): ValueError: "
     "boom"),
    ("import json\n\njson.loads('not json')\n", "loading the suite failed (line 3): "
     "JSONDecodeError: Expecting value: line 1 column 1 (char 0)"),
    ("import sys\nsys.exit(7)\n", "loading the suite failed (line 2): SystemExit: 7"),
    # A file that takes itself out of sys.modules before it fails.
    ("import sys\ndel sys.modules[__name__]\nexec('x = (')\n", "syntax error on line 1: '(' was "
     "never closed"),
    ("import sys\ndel sys.modules[__name__]\nraise KeyError('k')\n", "loading the suite failed "
     "(line 3): KeyError: 'k'"),
    # NUL bytes: Python's own SyntaxError carries no line number.
    ("x = 1\0\n", "syntax error: source code string cannot contain null bytes"),
])  # fmt: skip
def test_each_failure_while_loading_is_one_line_with_its_line(tmp_path, text, message):
    path = tmp_path / "bad.py"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_python_file(str(path))
    assert str(info.value) == f"{path}: {message}"
    name = "gpubench_user_" + hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    assert name not in sys.modules  # a failed load leaves nothing behind


def test_a_failure_outside_the_file_s_own_lines_has_no_line(tmp_path, monkeypatch):
    path = tmp_path / "bad.py"
    path.write_text("x = 1\n")
    import importlib.abc

    monkeypatch.setattr(importlib.machinery.SourceFileLoader, "exec_module",
                        lambda self, module: (_ for _ in ()).throw(OSError("disk")))  # fmt: skip
    with pytest.raises(ConfigError) as info:
        load_python_file(str(path))
    assert str(info.value) == f"{path}: loading the suite failed: OSError: disk"


def test_a_missing_file_and_one_that_is_not_python(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_python_file("nope.py", where="k.yaml")
    assert str(info.value) == "k.yaml: 'nope.py' not found"
    with pytest.raises(ConfigError) as info:
        load_python_file("nope.py")
    assert str(info.value) == "nope.py: 'nope.py' not found"
    text = tmp_path / "ref.txt"
    text.write_text("x = 1\n")
    with pytest.raises(ConfigError) as info:
        load_python_file(str(text))
    assert str(info.value) == f"{text}: cannot load this file as Python"


def test_an_interrupt_while_loading_is_not_turned_into_a_config_error(tmp_path):
    path = tmp_path / "ctrl_c.py"
    path.write_text("raise KeyboardInterrupt\n")
    with pytest.raises(KeyboardInterrupt):
        load_python_file(str(path))


def test_a_python_file_past_8_mib_is_refused_by_its_size_before_it_is_read(tmp_path):
    from gpubench.formats import python_file

    path = tmp_path / "big.py"
    with path.open("wb") as file:
        file.truncate(python_file.MAX_PYTHON_FILE_BYTES + 1)
    with pytest.raises(ConfigError) as info:
        load_python_file(str(path), where="k.yaml")
    assert str(info.value) == (
        f"k.yaml: {str(path)!r} is 8,388,609 bytes; a suite or reference .py file is at most 8 MiB"
    )
