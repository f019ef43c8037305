"""Reading YAML: duplicate keys and non-scalar keys refused with their line, alias expansion
capped at an exact count, and every PyYAML failure one line naming the file."""

from __future__ import annotations

import os

import pytest

from gpubench.errors import ConfigError
from gpubench.formats import yaml_file
from gpubench.formats.yaml_file import parse_yaml, read_document


@pytest.mark.parametrize(("text", "message"), [
    ("a: 1\nb: 2\na: 3\n", "a: duplicate key 'a' (line 3)"),
    ("x:\n  - 1\n  - {y: 1, y: 2}\n", "y: duplicate key 'y' (line 3)"),
    ("x:\n  - 1\n  - {? [1, 2] : 3}\n", "a key must be text or a number, not a sequence (line 3)"),
    ("{{a: 1}: 2}", "a key must be text or a number, not a mapping (line 1)"),
    ("a: [1\n", "not valid YAML: while parsing a flow sequence in \"<unicode string>\", line 1, "
     "column 4: a: [1 ^ expected ',' or ']', but got '<stream end>' in \"<unicode string>\", "
     "line 2, column 1: ^"),
    ("a: !!float x\n", "cannot read a value: could not convert string to float: 'x'"),
    ("a: 2001-02-30\n", "cannot read a value: day is out of range for month"),
    ("[" * 2000, "not valid YAML: nested too deeply"),
    ("my key: 1\nmy key: 2\n", "my key: duplicate key 'my key' (line 2)"),
    ('"a: b": 1\n"a: b": 2\n', "a: b: duplicate key 'a: b' (line 2)"),  # was "a: b: b: ..."
    ("a: !!float " + "x" * 300 + "\n", "cannot read a value: "
     + ("could not convert string to float: '" + "x" * 300)[:200]),
    ("a: !!" + "x" * 400 + " 1\n", "not valid YAML: "
     + ("could not determine a constructor for the tag 'tag:yaml.org,2002:" + "x" * 400)[:300]),
])  # fmt: skip
def test_each_problem_is_one_line_naming_the_file(text, message):
    with pytest.raises(ConfigError) as info:
        parse_yaml(text, "f.yaml")
    assert str(info.value) == f"f.yaml: {message}"
    assert info.value.source == "f.yaml"


@pytest.mark.parametrize("text", ["", "# only a comment\n", "---\n"])
def test_an_empty_document_is_none(text):
    assert parse_yaml(text, "f.yaml") is None


def test_aliases_expand_and_the_cap_counts_every_node_exactly(monkeypatch):
    text = "a: &x [1, 2]\nb: *x\n"  # mapping, 2 keys, the list (3 nodes) twice: 9 nodes
    assert parse_yaml(text, "f.yaml") == {"a": [1, 2], "b": [1, 2]}
    monkeypatch.setattr(yaml_file, "MAX_EXPANDED_NODES", 9)
    assert parse_yaml(text, "f.yaml") == {"a": [1, 2], "b": [1, 2]}
    monkeypatch.setattr(yaml_file, "MAX_EXPANDED_NODES", 8)
    with pytest.raises(ConfigError) as info:
        parse_yaml(text, "f.yaml")
    assert str(info.value) == ("f.yaml: the document expands to more than 8 values (anchors "
                               "and aliases counted at each use): a sweep file has no need for "
                               "that many")  # fmt: skip


def test_a_plain_list_past_the_cap_is_refused_without_blaming_aliases(monkeypatch):
    monkeypatch.setattr(yaml_file, "MAX_EXPANDED_NODES", 8)
    with pytest.raises(ConfigError) as info:
        parse_yaml("a: [1, 2, 3, 4, 5, 6, 7, 8]\n", "f.yaml")
    assert str(info.value) == ("f.yaml: the document expands to more than 8 values (anchors "
                               "and aliases counted at each use): a sweep file has no need for "
                               "that many")  # fmt: skip


def test_a_billion_laughs_is_refused_before_it_is_built():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    with pytest.raises(ConfigError, match="expands to more than 100,000 values"):
        parse_yaml("\n".join(lines) + "\n", "f.yaml")


def test_read_document_refuses_what_is_not_a_small_regular_utf8_file(tmp_path, monkeypatch):
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    cases = {fifo: "not a regular file", tmp_path / "none.yaml": "cannot read the file: No such "
             "file or directory"}  # fmt: skip
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(b"a: caf\xe9\n")
    cases[bad] = "not UTF-8 text (byte 6)"
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (yaml_file.MAX_FILE_BYTES + 1))
    cases[big] = "more than 1 MiB: a sweep or kernel file is at most 1 MiB"
    for path, message in cases.items():
        with pytest.raises(ConfigError) as info:
            read_document(path)
        assert str(info.value) == f"{path}: {message}"
    exact = tmp_path / "exact.yaml"
    exact.write_bytes(b"a: 1\n" + b"#" * (yaml_file.MAX_FILE_BYTES - 5))
    assert read_document(exact) == {"a": 1}


def test_read_document_reads_at_most_one_byte_past_the_limit(tmp_path, monkeypatch):
    sizes = []
    real_open = open

    def counting_open(path, mode):
        handle = real_open(path, mode)
        read = handle.read
        handle_read = lambda size=-1: sizes.append(size) or read(size)  # noqa: E731
        return type("Counted", (), {"read": staticmethod(handle_read),
                                    "__enter__": lambda self: self,
                                    "__exit__": lambda self, *e: handle.close()})()  # fmt: skip

    monkeypatch.setattr(yaml_file, "open", counting_open, raising=False)
    path = tmp_path / "s.yaml"
    path.write_text("a: 1\n")
    assert read_document(path) == {"a": 1}
    assert sizes == [yaml_file.MAX_FILE_BYTES + 1]


@pytest.mark.parametrize(("text", "line"), [
    ("a: &a [*a]\n", 1),
    ("&a [1, *a]\n", 1),
    ("a: 1\nb: &b {c: *b}\n", 2),
    ("a:\n  - &x [1, [2, *x]]\n", 2),
])  # fmt: skip
def test_a_list_or_mapping_that_holds_itself_is_refused(text, line):
    # PyYAML builds `&a [*a]` as a list inside itself: whatever read it next would loop.
    with pytest.raises(ConfigError) as info:
        parse_yaml(text, "f.yaml")
    assert (
        str(info.value)
        == f"f.yaml: an alias refers to the list or mapping that holds it (line {line})"
    )


def test_an_alias_used_twice_side_by_side_is_not_a_cycle():
    assert parse_yaml("a: &x [1]\nb: [*x, *x, [*x]]\n", "f.yaml") == {
        "a": [1],
        "b": [[1], [1], [[1]]],
    }


def test_keys_count_toward_the_cap_before_any_key_is_refused(monkeypatch):
    # An aliased list as a key: refused as too large before it is built (and refused as a key).
    text = "a: &a [1, 2, 3, 4]\n? [*a, *a, *a]\n: 1\n"  # mapping 1, a 1, its list 5, the key 1 + 3 x 5, 1: 24 nodes
    monkeypatch.setattr(yaml_file, "MAX_EXPANDED_NODES", 23)
    with pytest.raises(ConfigError, match="expands to more than 23 values"):
        parse_yaml(text, "f.yaml")
    monkeypatch.setattr(yaml_file, "MAX_EXPANDED_NODES", 24)
    with pytest.raises(ConfigError, match="a key must be text or a number, not a sequence"):
        parse_yaml(text, "f.yaml")
