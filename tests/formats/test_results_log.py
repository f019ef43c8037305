"""The results log (gpubench.formats.results_log, read by gpubench.model.results.load_jsonl): every
field of a valid log replaced by each wrong type, truncated and doubled logs, `gpubench
compare` of a damaged log; the log's limits (size, line, objects and arrays of a line, results)
in exact words, and the memory and time of refusing a log near and past them."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpubench.errors import GpubenchError
from gpubench.model import results
from tests.formats.test_results import (
    BASE,
    REPO,
    SMOKE,
    WRONG,
    one_line,
    paths,
    read_in_child,
    replaced,
)

HEADER = {"kind": "header", "schema_version": 1, "suite": BASE["suite"],
          "environment": BASE["environment"], "spec": BASE["spec"]}  # fmt: skip
LOG = [HEADER, *({"kind": "result", **r} for r in BASE["results"])]
PATHS = [p for p in paths(LOG) if len(p) > 1 and p[1] != "kind"]
FUZZ = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def log_text(lines) -> str:
    return "".join(json.dumps(line) + "\n" for line in lines)


@FUZZ
@given(st.sampled_from(PATHS), st.sampled_from(WRONG))
def test_a_wrong_field_anywhere_is_one_line_naming_the_line_or_read(tmp_path, path, value):
    file = tmp_path / "r.jsonl"
    file.write_text(log_text(replaced(LOG, path, value)))
    try:
        results.load_any(file)
    except GpubenchError as error:
        assert one_line(error, file) and f"line {path[0] + 1}" in str(error)


@FUZZ
@given(st.integers(1, len(log_text(LOG)) - 1), st.booleans())
def test_truncated_and_doubled_logs_are_read_or_one_line(tmp_path, cut, doubled):
    text = log_text(LOG)
    file = tmp_path / "r.jsonl"
    file.write_text(text + text if doubled else text[:cut])
    try:
        loaded = results.load_jsonl(file)
    except GpubenchError as error:
        assert one_line(error, file)
        return
    assert not doubled  # a second header is refused
    # A cut log keeps its whole lines, and its last line where only its newline was cut.
    whole = text[:cut].count("\n")
    assert len(loaded[1]) in (max(0, whole - 1), whole)


def test_a_wrong_metric_is_named_by_its_key_and_line(tmp_path):
    file = tmp_path / "r.jsonl"
    metrics = {"kind": "metrics", "point": {"n": 1}, "variant": "v", "metrics": {"x": "fast"}}
    file.write_text(log_text([HEADER, metrics]))
    with pytest.raises(GpubenchError) as info:
        results.load_jsonl(file)
    assert str(info.value) == (
        f"{file}: line 2: metrics.x: expected `float | null`, got `str` (found 'fast')"
    )


@pytest.mark.parametrize("fast_check_bytes", [0, 1 << 20])
def test_long_and_short_lines_read_alike_and_are_refused_alike(
    tmp_path, monkeypatch, fast_check_bytes
):
    """A line longer than FAST_CHECK_BYTES skips the one-step decode: same results, same
    messages (a measured result without a median included)."""
    monkeypatch.setattr(results, "FAST_CHECK_BYTES", fast_check_bytes)
    file = tmp_path / "r.jsonl"
    file.write_text(log_text(LOG))
    assert [r.variant for r in results.load_jsonl(file)[1]] == [
        r["variant"] for r in BASE["results"]
    ]
    for lines, message in [
        (
            replaced(LOG, (1, "summary"), None),
            "line 2: a measured result needs a positive median_ms, got None",
        ),
        ([*LOG, HEADER], "line 5: a second header line (one log holds one run)"),
        ([LOG[1]], "no header line: not a gpubench results log"),
        ([*LOG, {"kind": "nope"}], "line 5: unknown kind of line 'nope'"),
    ]:
        file.write_text(log_text(lines))
        with pytest.raises(GpubenchError) as info:
            results.load_jsonl(file)
        assert str(info.value) == f"{file}: {message}"


def test_compare_of_a_damaged_log_is_exit_2_and_one_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(log_text(replaced(LOG, (2, "device"), "H100")))
    run = subprocess.run(
        [sys.executable, "-m", "gpubench", "compare", str(SMOKE), str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr == (
        f"error: {bad}: line 3: device: expected `object | null`, got `str` (found 'H100')\n"
    )


def test_a_log_past_its_size_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "MAX_LOG_BYTES", 10 << 10)
    file = tmp_path / "r.jsonl"
    file.write_text(log_text(LOG) + " " * (10 << 10))
    size = file.stat().st_size
    with pytest.raises(GpubenchError) as info:
        results.load_jsonl(file)
    assert str(info.value) == f"{file}: {size:,} bytes: a results log is at most 10 KiB"


def test_a_log_past_its_line_limit_is_refused_line_by_line(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "MAX_LOG_LINE_BYTES", 100)
    file = tmp_path / "r.jsonl"
    file.write_text('{"kind": "header", "schema_version": 1}\n' + "[" * 500 + "\n")
    with pytest.raises(GpubenchError) as info:
        results.load_jsonl(file)
    assert str(info.value) == (
        f"{file}: line 2 is longer than 100 bytes: a line of a results log is at most 100 bytes"
    )
    # Exactly at the limit (its newline after it) is read: here a header of 100 bytes.
    header = '{"kind": "header", "schema_version": 1, "suite": "' + "s" * 48 + '"}'
    assert len(header) == 100
    file.write_text(header + "\n")
    assert results.load_jsonl(file)[0]["suite"] == "s" * 48
    file.write_text(header.replace('"}', 's"}') + "\n")
    with pytest.raises(GpubenchError, match="line 1 is longer than 100 bytes"):
        results.load_jsonl(file)


def test_a_line_of_too_many_objects_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "MAX_JSON_CONTAINERS", 20)
    file = tmp_path / "r.jsonl"
    file.write_text(log_text([HEADER]) + "[" * 21 + "\n")
    with pytest.raises(GpubenchError) as info:
        results.load_jsonl(file)
    assert str(info.value) == (
        f"{file}: line 2: 21 objects and arrays: a line of a results log holds at most 20"
    )


def many_results(count: int, last: dict | None = None) -> str:
    """A log of `count` small results of distinct points, and `last` as its last line."""
    lines = [json.dumps(HEADER)]
    lines += [
        json.dumps(
            {
                "kind": "result",
                "suite": "s",
                "variant": "v",
                "point": {"n": n},
                "status": "ok",
                "summary": {"median_ms": 1.0},
            }
        )
        for n in range(count)
    ]
    return "\n".join(lines + ([json.dumps(last)] if last else [])) + "\n"


def test_a_log_of_more_results_than_its_limit_is_refused_before_any_is_built(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "MAX_LOG_RESULTS", 3)
    file = tmp_path / "r.jsonl"
    file.write_text(many_results(4))
    built = []
    monkeypatch.setattr(results.Result, "_from_checked", lambda *a: built.append(a))
    with pytest.raises(GpubenchError) as info:
        results.load_jsonl(file)
    assert str(info.value) == (
        f"{file}: more than 3 results: a results log holds at most 3 "
        "(split the sweep with --shard I/N)"
    )  # counted at the speed of reading, before any line is parsed
    assert built == []
    # A line written by hand with other spacing escapes the quick count, not the check.
    file.write_text(many_results(4).replace('"kind": "result"', '"kind":"result"'))
    with pytest.raises(GpubenchError) as info:
        results.load_jsonl(file)
    assert str(info.value) == (
        f"{file}: line 5: more than 3 results: a results log holds at most 3 "
        "(split the sweep with --shard I/N)"
    )
    assert built == []
    file.write_text(many_results(3))
    monkeypatch.undo()
    monkeypatch.setattr(results, "MAX_LOG_RESULTS", 3)
    assert len(results.load_jsonl(file)[1]) == 3  # exactly at the limit: read


def test_a_log_of_more_lines_than_its_limit_is_refused_before_any_is_parsed(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "MAX_LOG_LINES", 4)
    file = tmp_path / "r.jsonl"
    file.write_text(many_results(3) + "\n")  # the header, 3 results and a blank line
    parsed = []
    monkeypatch.setattr(results, "_log_record", lambda *a: parsed.append(a))
    with pytest.raises(GpubenchError) as info:
        results.load_jsonl(file)
    assert str(info.value) == (
        f"{file}: more than 4 lines: a results log holds at most 2,000,000 results, each with "
        "at most one metrics line (split the sweep with --shard I/N)"
    )
    assert parsed == []
    file.write_text(many_results(3))
    monkeypatch.undo()
    monkeypatch.setattr(results, "MAX_LOG_LINES", 4)
    assert len(results.load_jsonl(file)[1]) == 3  # exactly at the limit: read


def test_refusing_a_log_takes_the_memory_of_one_line_and_bounded_time(tmp_path):
    """A log of 50,000 results whose last line is damaged is refused before any result is
    built; one past a (lowered) results limit likewise; a line of the most objects and arrays
    allowed, at the real line limit, is refused by its schema within the bounds."""
    count = 50_000
    damaged, many = tmp_path / "damaged.jsonl", tmp_path / "many.jsonl"
    damaged.write_text(many_results(count, last={"kind": "result", "suite": 5}))
    many.write_text(many_results(count))
    wide = tmp_path / "wide.jsonl"
    line = '{"kind":"metrics","variant":"v","point":{},"metrics":{},"x":[' + "{}," * 499_994
    wide.write_text(json.dumps(HEADER) + "\n" + line + "5]}\n")
    assert wide.read_bytes().count(b"{") + wide.read_bytes().count(b"[") < 500_000 + 10
    for file, limits, expected in [
        (damaged, {}, f"line {count + 2}: suite: expected `str`, got `int` (found 5)"),
        (
            many,
            {"MAX_LOG_RESULTS": count - 1},
            "more than 49,999 results: "
            "a results log holds at most 49,999 (split the sweep with --shard I/N)",
        ),
        (wide, {}, "line 2: object contains unknown field `x`"),
    ]:
        outcome, seconds, peak_mb = read_in_child("load_jsonl", file, **limits)
        assert outcome == f"{file}: {expected}"
        print(f"{file.name}: {seconds:.2f} s, {peak_mb:.0f} MB")
        assert seconds < 2 and peak_mb < 500, (file.name, seconds, peak_mb)
