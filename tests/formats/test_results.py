"""Fuzzing the readers of gpubench's own files: every field of a valid file replaced by each
wrong type; the reader returns or raises one GpubenchError line naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpubench import ceilings, results
from gpubench.errors import GpubenchError

SMOKE = Path(__file__).parents[2] / "configs" / "baselines" / "smoke-h100.json"
BASE = json.loads(SMOKE.read_text())
BASE["results"] = BASE["results"][:3]
WRONG = [None, True, 7, 10**400, 2.5, "text", [1], {"a": 1}, [[[[[]]]]], 1e308 * 10]


def paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:2]):
            yield from paths(item, (*prefix, index))


PATHS = [p for p in paths(BASE) if p]


def replaced(record, path, value):
    record = json.loads(json.dumps(record))
    target = record
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return record


def one_line(error, path):
    return "\n" not in str(error) and str(path) in str(error)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.sampled_from(PATHS), st.sampled_from(WRONG), st.booleans())
def test_a_wrong_field_anywhere_is_one_line_or_read(tmp_path, path, value, as_log):
    record = replaced(BASE, path, value)
    file = tmp_path / ("r.jsonl" if as_log else "r.json")
    if as_log:
        header = {
            "kind": "header",
            "schema_version": 1,
            "suite": record.get("suite"),
            "environment": record.get("environment"),
            "spec": record.get("spec"),
        }
        rows = record["results"] if isinstance(record.get("results"), list) else [record["results"]]
        lines = [header] + [{"kind": "result", **r} if isinstance(r, dict) else r for r in rows]
        file.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    else:
        file.write_text(json.dumps(record))
    for reader in (results.load_any, ceilings.load_file):
        try:
            reader(file)
        except GpubenchError as error:
            assert one_line(error, file)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.integers(1, len(SMOKE.read_text()) - 1), st.booleans())
def test_truncated_and_doubled_files_are_one_line(tmp_path, cut, doubled):
    text = json.dumps(BASE)
    text = text + text if doubled else text[: cut % len(text)]
    file = tmp_path / "r.json"
    file.write_text(text)
    try:
        results.load_any(file)
    except GpubenchError as error:
        assert one_line(error, file)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            ("environment", "device"),
            "H100",
            "environment.device: expected `object | null`, got `str` (found 'H100')",
        ),
        (
            ("results", 0, "device"),
            {"uuid": 7},
            "results[0].device.uuid: expected `str | null`, got `int` (found 7)",
        ),
        (
            ("environment", "gpu_uuid"),
            7,
            "environment.gpu_uuid: expected `str | null`, got `int` (found 7)",
        ),
        (
            ("environment", "device", "peak_bandwidth_gbps"),
            "fast",
            "environment.device.peak_bandwidth_gbps: expected `float | null`, got `str` (found 'fast')",
        ),
        (("spec", "points"), 3, "spec.points: expected `array | null`, got `int` (found 3)"),
        (
            ("spec", "points"),
            [{"n": {"a": 1}}],
            "spec.points[0]['n']: expected `bool | int | float | str | null`, got `object`",
        ),
        (
            ("environment", "git_dirty"),
            "yes",
            "environment.git_dirty: expected `bool | null`, got `str` (found 'yes')",
        ),
        (
            ("results", 0, "seed"),
            10**400,
            "results[0].seed: expected `int` <= 9223372036854775807 (found <an integer of about 400 digits>)",
        ),
    ],
)
def test_the_named_kinds_in_their_exact_words(tmp_path, path, value, message):
    file = tmp_path / "r.json"
    file.write_text(json.dumps(replaced(BASE, path, value)))
    with pytest.raises(GpubenchError) as info:
        results.load_json(file)
    assert str(info.value) == f"{file}: {message}"


def test_a_log_past_its_line_limit_is_refused_line_by_line(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "MAX_LOG_LINE_BYTES", 100)
    file = tmp_path / "r.jsonl"
    file.write_text('{"kind": "header", "schema_version": 1}\n' + "[" * 500 + "\n")
    with pytest.raises(GpubenchError) as info:
        results.load_jsonl(file)
    assert (
        str(info.value)
        == f"{file}: line 2 is longer than 0 MiB: a line of a results log is at most 0 MiB"
    )


def test_compare_of_a_damaged_file_is_exit_2_and_one_line(tmp_path):
    import subprocess
    import sys

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(replaced(BASE, ("environment", "device"), "H100")))
    run = subprocess.run(
        [sys.executable, "-m", "gpubench", "compare", str(SMOKE), str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2 and run.stderr.strip().count("\n") == 0
    assert "Traceback" not in run.stderr and "environment.device" in run.stderr
