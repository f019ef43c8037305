"""gpubench.formats (the package's __init__): `validate`'s one-line messages, with the field
path, a mapping's key where msgspec leaves it out, and the value found; `json_schemas`."""

from __future__ import annotations

import pytest

from gpubench.errors import ConfigError
from gpubench.formats import FORMAT_MODULES, json_schemas, validate
from gpubench.formats.results import Result, Spec

RESULT = {"suite": "s", "variant": "v", "point": {"n": 1}, "status": "ok",
          "summary": {"median_ms": 1.0}}  # fmt: skip


def message(record, schema=Result, key="results[3]"):
    with pytest.raises(ConfigError) as info:
        validate(record, schema, source="r.json", key=key)
    return str(info.value)


def test_a_valid_record_converts_to_its_schema():
    assert validate(RESULT, Result, source="r.json").point == {"n": 1}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"metrics": {"gbps": 1.0, "tflops": "fast"}},
            "results[3].metrics.tflops: expected `float | null`, got `str` (found 'fast')",
        ),
        (
            {"phases": {"point": {"compile": 1.0}, "variant": {"launch": "slow"}}},
            "results[3].phases.variant.launch: expected `float`, got `str` (found 'slow')",
        ),
        (
            {"summary": {"median_ms": 1.0, "min_ms": [1]}},
            "results[3].summary.min_ms: expected `bool | float | null`, got `array`",
        ),
        (
            {"point": {"n": 1, "m": 10**400}},
            "results[3].point.m: expected `int` <= 9223372036854775807 "
            "(found <an integer of about 400 digits>)",
        ),
        (
            {"metrics": {1: 2.0}},
            "results[3].metrics: a key: expected `str`, got `int` (found 1)",
        ),
        (
            {"seed": "7"},
            "results[3].seed: expected `int | null`, got `str` (found '7')",
        ),
        (
            {"verification": {"passed": True, "worst_index": [1, "x"]}},
            "results[3].verification.worst_index[1]: expected `int`, got `str` (found 'x')",
        ),
    ],
)
def test_the_message_names_the_path_with_each_key_and_the_value(change, expected):
    assert message({**RESULT, **change}) == f"r.json: {expected}"


def test_a_key_of_a_mapping_inside_a_list_is_named():
    record = {"points": [{"n": 1}, {"n": 2, "m": {"a": 1}}]}
    assert message(record, Spec, key=None) == (
        "r.json: points[1].m: expected `bool | int | float | str | null`, got `object`"
    )


def test_a_long_key_is_cut_like_any_quoted_value():
    key = "k" * 100
    assert message({**RESULT, "metrics": {key: "x"}}) == (
        f"r.json: results[3].metrics['{'k' * 27}...{'k' * 28}']: expected `float | null`, "
        "got `str` (found 'x')"
    )


def test_a_wrong_record_as_a_whole_and_a_missing_field():
    assert message([1], key=None) == "r.json: expected `object`, got `array`"
    assert message({"suite": "s"}) == "r.json: results[3]: object missing required field `variant`"


def test_every_format_module_has_a_json_schema_for_the_docs():
    schemas = json_schemas()
    assert "Results file (JSON)" in schemas and "Ceilings record" in schemas
    assert FORMAT_MODULES[:4] == ("results", "results_log", "history_export", "ceilings")
