"""The sweep-file schema (gpubench/formats/sweep_file.py): every bundled sweep file fits it,
a wrong type anywhere is one line naming the file, the field and the value, and a fuzzer
replacing each field by each wrong value gets that line or a valid sweep, never a traceback."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpubench.errors import ConfigError, GpubenchError
from gpubench.formats import FORMAT_MODULES, sweep_file
from gpubench.load import config
from tests.formats.fuzzing import BAD_VALUES, paths, replaced

REPO = Path(__file__).resolve().parents[2]
SWEEPS = sorted(p for p in (REPO / "configs").glob("*.yaml"))
# The sweep files of the tests too (the kernel files among them have their own schema).
TEST_SWEEPS = sorted(
    p
    for p in (REPO / "tests" / "suites").glob("*.yaml")
    if "suite" in (config.read_document(p) or {})
)
SOURCE = "s.yaml"
BASE = {"suite": "transpose", "params": {"size": [64], "tile": 32, "block_rows": 8}}


def refusal(data) -> str:
    with pytest.raises(ConfigError) as caught:
        sweep_file.check(data, sweep_file.SweepFile, SOURCE)
    return str(caught.value)


@pytest.mark.parametrize("path", SWEEPS + TEST_SWEEPS, ids=lambda p: p.name)
def test_every_bundled_sweep_file_fits_the_schema(path):
    data = config.read_document(path)
    sweep_file.check(data, sweep_file.SweepFile, str(path))


def test_the_schema_is_declared_for_the_docs():
    assert "sweep_file" in FORMAT_MODULES
    schema = msgspec.json.schema(sweep_file.SCHEMAS["Sweep file"])
    timing = schema["$defs"]["Timing"]["properties"]
    assert {"warmup", "untrusted", "time_limit_s"} <= set(timing)
    assert schema["$defs"]["SweepFile"]["required"] == ["suite"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"suite": 5}, "s.yaml: suite: expected a suite name or a suite .py file, got 5"),
        (
            {"timing": {"warmup": 10**400}},
            "s.yaml: timing.warmup: expected an integer <= "
            "9223372036854775807 (found <an integer of about 400 digits>)",
        ),
        (
            {"timing": {"warmup": 2**70}},
            "s.yaml: timing.warmup: expected an integer <= "
            "9223372036854775807 (found 1180591620717411303424)",
        ),
        ({"timing": {"warmup": "3"}}, "s.yaml: timing.warmup: expected an integer, got '3'"),
        (
            {"timing": {"max_time_s": 10**400}},
            "s.yaml: timing.max_time_s: number out of range "
            "(found <an integer of about 400 digits>)",
        ),
        (
            {"timing": {"min_time_s": True}},
            "s.yaml: timing.min_time_s: expected a number, got True",
        ),
        (
            {"timing": {"untrusted": "yes"}},
            "s.yaml: timing.untrusted: expected true or false, got 'yes'",
        ),
        ({"timing": [1]}, "s.yaml: timing: expected a mapping, got [1]"),
        ({"outputs": {"json": 5}}, "s.yaml: outputs.json: expected a file path, got 5"),
        ({"params": {"size": [[1]]}}, "s.yaml: params.size[0]: expected a number or text, got [1]"),
        (
            {"params": {"size": None}},
            "s.yaml: params.size: expected a value or a list of values, got None",
        ),
        ({"zip": [{"size": 3}]}, "s.yaml: zip[0].size: expected a list, got 3"),
        (
            {"constraints": [5]},
            "s.yaml: constraints[0]: expected a condition such as 'block_rows <= tile', got 5",
        ),
        ({"history": 7}, "s.yaml: history: expected a file path or true, got 7"),
        ({"variants": [1]}, "s.yaml: variants[0]: expected a variant name, got 1"),
    ],
)
def test_a_wrong_type_is_one_line_naming_the_field_and_the_value(data, message):
    assert refusal({**BASE, **data}) == message


def test_a_key_that_is_not_text_is_left_to_the_named_checks():
    sweep_file.check({**BASE, "params": {5: [1]}}, sweep_file.SweepFile, SOURCE)
    assert refusal({**BASE, "params": {5: [1]}, "timing": {"mode": 5}}) == (
        "s.yaml: timing.mode: expected text, got 5"
    )


def test_numbers_past_what_a_sweep_holds_are_refused_by_the_loader(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(f"suite: transpose\ntiming: {{min_time_s: {'9' * 400}}}\n")
    with pytest.raises(ConfigError) as caught:
        config.load(path)
    assert str(caught.value) == (
        f"{path}: timing.min_time_s: number out of range (found <an integer of about 400 digits>)"
    )


# -- the fuzzer -------------------------------------------------------------------------------
FUZZED = [p for p in SWEEPS if p.stem in ("smoke", "transpose", "reduction", "access")]
DOCUMENTS = {p: config.read_document(p) for p in FUZZED}


def one_line_or_valid(load, source: str) -> None:
    try:
        load()
    except GpubenchError as exc:
        message = str(exc)
        assert "\n" not in message and message.startswith(source), message
        assert len(message) <= 1000


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_each_field_replaced_by_a_wrong_value_is_one_line_or_valid(data):
    path = data.draw(st.sampled_from(FUZZED))
    document = DOCUMENTS[path]
    where = data.draw(st.sampled_from(paths(document)))
    value = data.draw(st.sampled_from(BAD_VALUES))
    mutated = replaced(document, where, value)
    one_line_or_valid(lambda: config.spec_from_mapping(mutated, str(path)), str(path))


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_a_truncated_or_doubled_file_is_one_line_or_valid(data):
    path = data.draw(st.sampled_from(FUZZED))
    text = path.read_text()
    cut = data.draw(st.integers(0, len(text)))
    variant = data.draw(st.sampled_from([text[:cut], text + text, text[:cut] + text]))

    def load():
        document = config.parse_yaml(variant, str(path))
        if not isinstance(document, dict):
            raise ConfigError("not a mapping", source=str(path))
        config.spec_from_mapping(document, str(path))

    one_line_or_valid(load, str(path))
