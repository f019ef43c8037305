"""The one-line errors: values quoted short, lines cut at their limits, the closest name."""

from __future__ import annotations

import pytest

from gpubench.errors import MAX_MESSAGE, ConfigError, did_you_mean, quote


@pytest.mark.parametrize(("value", "text"), [
    ("short", "'short'"),
    ([1, 2, 3, 4, 5], "[1, 2, 3, 4, ...]"),
    ([1, 2, 3, 4], "[1, 2, 3, 4]"),
    ({"a": {"b": {"c": {"d": 1}}}}, "{'a': {'b': {'c': {...}}}}"),
    ([[[1]]], "[[[1]]]"),
    (2**239, str(2**239)[:28] + "..." + str(2**239)[-29:]),  # 240 bits: still written out
    (2**240, "<an integer of about 72 digits>"),  # 241 bits: past 4 bits per quoted character
    (10 ** 400, "<an integer of about 400 digits>"),
    ([10**5000], "<a list>"),  # Python refuses to write the integer out
])  # fmt: skip
def test_quote_keeps_a_value_short(value, text):
    assert quote(value) == text


def test_quote_cuts_text_at_its_limit():
    assert quote("x" * 100, 10) == "'xx...xxx'"
    assert quote("x" * 8, 10) == "'xxxxxxxx'"


@pytest.mark.parametrize(("source", "key", "message", "text"), [
    ("f.yaml", "k", "bad", "f.yaml: k: bad"),
    (None, "k", "bad", "k: bad"),
    ("f.yaml", None, "bad", "f.yaml: bad"),
    (None, None, "bad", "bad"),
    ("s" * 200, None, "m", "s" * 200 + ": m"),
    ("s" * 201, None, "m", "s" * 199 + "…: m"),
    ("f", "k" * 201, "m", "f: " + "k" * 199 + "…: m"),
])  # fmt: skip
def test_a_config_error_names_the_file_and_key_cut_to_their_limits(source, key, message, text):
    assert str(ConfigError(message, source=source, key=key)) == text


def test_a_config_error_is_at_most_one_limit_long():
    assert str(ConfigError("m" * (MAX_MESSAGE - 3), source="f")) == "f: " + "m" * (MAX_MESSAGE - 3)
    long = str(ConfigError("m" * MAX_MESSAGE, source="f"))
    assert len(long) == MAX_MESSAGE and long.endswith("m…")


def test_did_you_mean_names_the_one_closest_candidate():
    assert did_you_mean("tilee", ["tile", "tiles", "size"]) == " (did you mean 'tile'?)"
    assert did_you_mean("zzz", ["tile"]) == ""
    assert did_you_mean("x", ()) == ""


def test_a_config_error_keeps_its_parts_for_a_caller_that_adds_the_file():
    from gpubench.errors import ConfigError

    error = ConfigError("must be positive", source="s.yaml", key="timing.warmup")
    assert (error.message, error.source, error.key) == ("must be positive", "s.yaml",
                                                        "timing.warmup")  # fmt: skip
    assert str(error) == "s.yaml: timing.warmup: must be positive"


def test_a_compile_error_carries_the_compiler_s_output_or_none():
    from gpubench.errors import KernelCompileError

    assert KernelCompileError("nvcc failed").compiler_output == ""
    error = KernelCompileError("nvcc failed", "t.cu(3): error: x")
    assert (str(error), error.compiler_output) == ("nvcc failed", "t.cu(3): error: x")


def test_a_usage_message_keeps_short_words_and_cuts_long_ones_and_the_whole():
    from gpubench.errors import MAX_MESSAGE, shortened

    message = "Invalid value for '--tile': '7' is not one of '16', '32', '64'."
    assert shortened(message) == message
    path = "/" + "d" * 150 + "/x.json"  # a long path still reads whole
    assert shortened(f"Path {path!r} is a directory.") == f"Path {path!r} is a directory."
    assert shortened("'" + "x" * 500 + "' is bad.") == "'" + "x" * 198 + "… is bad."
    many = " ".join(["word"] * 400)  # 1,999 characters of short words
    assert shortened(many) == many[: MAX_MESSAGE - 1] + "…"
