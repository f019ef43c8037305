"""Results round-trip through JSON, land in CSV, and stream as JSON lines."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from gpubench.errors import ConfigError
from gpubench.model.results import (
    SCHEMA_VERSION,
    JsonLinesLog,
    Result,
    ResultSet,
    Status,
    Verification,
    load_any,
    load_json,
    load_jsonl,
    point_key,
    save_csv,
    save_json,
)  # fmt: skip


def sample_set() -> ResultSet:
    ok = Result(
        suite="transpose", variant="padded", point={"rows": 33, "cols": 65, "tile": 32},
        status=Status.OK, baseline="naive",
        summary={"median_ms": 0.5, "min_ms": 0.4, "mean_ms": 0.5, "stdev_ms": 0.01,
                 "rel_noise": 0.02, "samples": 10},
        metrics={"gbps": 123.0, "speedup": 2.0},
        verification=Verification(passed=True, max_abs_error=0.0),
    )  # fmt: skip
    bad = Result(
        suite="transpose", variant="naive", point={"rows": 33, "cols": 65, "tile": 64},
        status=Status.INCORRECT, reason="out: 1 of 2145 elements not written",
        verification=Verification(passed=False, worst_index=[3, 4], unwritten=1),
    )  # fmt: skip
    return ResultSet(suite="transpose", environment={"gpu_uuid": "GPU-x"}, spec={"suite": "transpose"},
                     results=[ok, bad])  # fmt: skip


def test_json_round_trip_keeps_everything(tmp_path):
    original = sample_set()
    path = save_json(original, tmp_path / "deep" / "r.json")
    record = json.loads(path.read_text())
    assert record["schema_version"] == SCHEMA_VERSION
    assert record["environment"]["gpu_uuid"] == "GPU-x"
    assert [r["status"] for r in record["results"]] == ["ok", "incorrect"]
    loaded = load_json(path)
    assert loaded.results == original.results
    assert loaded == original  # suite, spec, environment, created and the version too
    assert [r.variant for r in loaded.failures] == ["naive"]


def test_an_unknown_schema_version_is_refused(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"schema_version": 999}))
    with pytest.raises(ConfigError, match="schema version 999"):
        load_json(path)


def test_csv_has_one_row_per_result_with_params_as_columns(tmp_path):
    path = save_csv(sample_set(), tmp_path / "r.csv")
    rows = list(csv.DictReader(path.open()))
    assert [r["variant"] for r in rows] == ["padded", "naive"]
    assert rows[0]["tile"] == "32" and rows[0]["gbps"] == "123.0" and rows[0]["median_ms"] == "0.5"
    assert rows[1]["status"] == "incorrect" and rows[1]["gbps"] == ""


def test_json_lines_are_readable_after_each_write(tmp_path):
    log = JsonLinesLog(tmp_path / "r.jsonl", header={"fingerprint": {"suite": "transpose"}})
    results = sample_set().results
    log.finished(results[0])
    # Read before close: what a kill -9 at this moment would leave behind.
    header, loaded = load_jsonl(tmp_path / "r.jsonl")
    assert header["fingerprint"] == {"suite": "transpose"} and loaded == [results[0]]
    log.finished(results[1])
    log.close()
    assert load_jsonl(tmp_path / "r.jsonl")[1] == results


def test_a_line_cut_short_by_a_kill_is_ignored_and_appending_keeps_the_header(tmp_path):
    path = tmp_path / "r.jsonl"
    log = JsonLinesLog(path, header={"fingerprint": {}})
    log.finished(sample_set().results[0])
    log.close()
    with path.open("a") as handle:
        handle.write('{"kind": "result", "suite": "tra')  # the write a kill -9 interrupted
    _, loaded = load_jsonl(path)
    assert len(loaded) == 1
    path.write_text(path.read_text().rsplit("\n", 1)[0] + "\n")
    again = JsonLinesLog(path, append=True)
    again.finished(sample_set().results[1])
    again.close()
    assert len(load_jsonl(path)[1]) == 2


def test_a_log_without_a_header_is_refused(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text("{}\n")
    with pytest.raises(ConfigError, match="no header"):
        load_jsonl(path)


def test_only_real_failures_count():
    assert Status.SKIPPED.is_failure is False and Status.OK.is_failure is False
    assert all(
        s.is_failure for s in (Status.INCORRECT, Status.COMPILE_FAILED, Status.LAUNCH_FAILED)
    )


# -- malformed results files are one line, never a traceback ------------------------------
GOOD = {"suite": "s", "variant": "a", "point": {"n": 1}, "status": "ok",
        "summary": {"median_ms": 1.0, "rel_noise": 0.01}}  # fmt: skip


def result_file(results):
    return {"schema_version": 1, "created": "2026-11-22T00:00:00+00:00", "suite": "s",
            "environment": {}, "spec": {}, "results": results}  # fmt: skip


@pytest.mark.parametrize(
    "content, words",
    [
        ("[1, 2]", "expected a results object"),
        (json.dumps({**result_file([]), "results": None}), "results: expected `array`, got `null`"),
        (
            json.dumps({k: v for k, v in result_file([]).items() if k != "suite"}),
            "missing required field `suite`",
        ),
        (json.dumps(result_file([{**GOOD, "status": "great"}])), "invalid enum value 'great'"),
        (json.dumps(result_file([{**GOOD, "extra": 1}])), "unknown field `extra`"),
        (json.dumps(result_file([{**GOOD, "summary": {"median_ms": None}}])), "positive median_ms"),
        (json.dumps(result_file([{**GOOD, "summary": {"median_ms": 0}}])), "positive median_ms"),
        (json.dumps(result_file([{**GOOD, "point": [1]}])), "results[0].point: expected `object`"),
        (
            json.dumps(result_file([{**GOOD, "metrics": {"gbps": "fast"}}])),
            "`float | null`, got `str`",
        ),
        (json.dumps(result_file(["x"])), "results[0]: expected `object`, got `str` (found 'x')"),
        ('{"schema_version": 1, "results": NaN}', "not valid JSON"),
        ("[" * 100000, "not valid JSON"),
        (json.dumps(result_file([GOOD])).encode() + b"\xff", "not UTF-8"),
    ],
)
def test_malformed_results_files_are_one_line(tmp_path, content, words):
    path = tmp_path / "r.json"
    (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
    with pytest.raises(ConfigError) as info:
        load_any(path)
    assert words in str(info.value) and str(path) in str(info.value)
    assert info.value.exit_code == 2


@pytest.mark.parametrize(
    "lines, words",
    [
        (['{"kind": "result"}'], "no header line"),
        (['{"kind": "header", "schema_version": 1}', "[1]"], "line 2: expected an object"),
        (['{"kind": "header", "schema_version": 1}', '{"kind": "nope"}'], "unknown kind"),
        (['{"kind": "header", "schema_version": 1}',
          json.dumps({"kind": "result", **GOOD, "status": "great"})], "line 2: status: invalid enum"),
        (['{"kind": "header", "schema_version": 1}', "not json", json.dumps({"kind": "result", **GOOD})],
         "line 2 is not JSON"),
        (['{"kind": "header", "schema_version": 1}',
          json.dumps({"kind": "metrics", "point": {}, "variant": "a"})], "line 2"),
    ],
)  # fmt: skip
def test_malformed_logs_are_one_line(tmp_path, lines, words):
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=words):
        load_jsonl(path)


def test_a_single_sample_noise_is_written_as_null_not_infinity(tmp_path):
    import math

    r = Result(suite="s", variant="a", point={}, status=Status.OK,
               summary={"median_ms": 1.0, "rel_noise": math.inf})  # fmt: skip
    rs = ResultSet(suite="s", environment={}, spec={}, results=[r])
    save_json(rs, tmp_path / "r.json")
    text = (tmp_path / "r.json").read_text()
    assert "Infinity" not in text and load_json(tmp_path / "r.json").results[0].summary[
        "rel_noise"] is None  # fmt: skip


# -- property: random JSON never raises anything but ConfigError --------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False,
              allow_infinity=False), st.text(max_size=10)),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.sampled_from([*GOOD, "schema_version", "created", "environment", "spec",
                                      "results", "kind", "metrics", "x"]),
                      children, max_size=6),
    max_leaves=30,
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(value=json_values, as_log=st.booleans(), mutate=st.dictionaries(
    st.sampled_from(list(GOOD)), json_values, max_size=2))  # fmt: skip
def test_random_results_files_raise_only_config_errors(tmp_path_factory, value, as_log, mutate):
    path = tmp_path_factory.mktemp("r") / ("r.jsonl" if as_log else "r.json")
    if as_log:
        lines = ['{"kind": "header", "schema_version": 1}',
                 json.dumps({"kind": "result", **GOOD, **mutate}), json.dumps(value)]  # fmt: skip
        path.write_text("\n".join(lines) + "\n")
    else:
        path.write_text(json.dumps(result_file([{**GOOD, **mutate}]) if mutate else value))
    try:
        loaded = load_any(path)
    except ConfigError:
        return
    for result in loaded.results:
        assert isinstance(result.status, Status)


def _record(**changes):
    result = {"suite": "scale", "variant": "good", "point": {"n": 1}, "status": "ok",
              "summary": {"median_ms": 1.0, "rel_noise": 0.01}, "metrics": {}}  # fmt: skip
    result.update(changes)
    return {"schema_version": 1, "created": "2026-11-23T00:00:00+00:00", "suite": "scale",
            "environment": {}, "spec": {}, "results": [result]}  # fmt: skip


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            json.dumps(_record()).replace('"median_ms": 1.0', '"median_ms": ' + "9" * 400),
            "results[0].summary.median_ms: number out of range "
            "(found <an integer of about 400 digits>)",
        ),
        (
            json.dumps(_record()).replace('"median_ms": 1.0', '"median_ms": 1e400'),
            "results[0].summary.median_ms: expected `float` <= 1.7976931348623157e+308 (found inf)",
        ),
        (
            json.dumps(_record(summary={"median_ms": 1.0, "rel_noise": "low"})),
            "results[0].summary.rel_noise: expected `bool | float | null`, got `str` (found 'low')",
        ),
        (
            json.dumps(_record(work={"bytes_moved": "lots"})),
            "results[0].work.bytes_moved: expected `float | null`, got `str` (found 'lots')",
        ),
        (
            json.dumps(_record(work={"bytes_moved": -1})),
            "results[0].work.bytes_moved: expected `float` >= 0.0 (found -1)",
        ),
        (
            json.dumps(_record(device="H100")),
            "results[0].device: expected `object | null`, got `str` (found 'H100')",
        ),
        (
            json.dumps({**_record(), "environment": {"device": [1]}}),
            "environment.device: expected `object | null`, got `array`",
        ),
    ],
)
def test_wrong_types_and_sizes_in_a_results_file_are_one_config_error(tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_json(path)
    assert str(info.value) == f"{path}: {message}"


def test_a_log_header_field_of_the_wrong_type_is_one_config_error(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"kind": "header", "suite": "scale", "environment": "H100"}) + "\n")
    with pytest.raises(ConfigError) as info:
        load_jsonl(path)
    assert str(info.value) == (
        f"{path}: line 1: environment: expected `object | null`, got `str` (found 'H100')"
    )


@pytest.mark.parametrize("loader", ["load_any", "load_json", "load_jsonl"])
def test_a_results_file_that_is_not_a_regular_file_is_refused_before_it_is_opened(tmp_path, loader):
    """A FIFO would block the open and /dev/zero never end the read: both are one ConfigError
    naming the file, before any read."""
    import os

    from gpubench.errors import ConfigError
    from gpubench.model import results

    fifo = tmp_path / "results.json"
    os.mkfifo(fifo)
    for path in (fifo, "/dev/zero"):
        with pytest.raises(ConfigError, match="not a regular file") as caught:
            getattr(results, loader)(path)
        assert str(path) in str(caught.value)


def test_a_results_file_past_the_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    from gpubench.errors import ConfigError
    from gpubench.model import results

    path = tmp_path / "big.json"
    path.write_text('{"results": []}' + " " * 100)
    monkeypatch.setattr(results, "MAX_RESULTS_BYTES", 100)
    for loader in (results.load_any, results.load_json):
        with pytest.raises(ConfigError, match="115 bytes: a results file is at most"):
            loader(path)
    monkeypatch.setattr(results, "MAX_RESULTS_BYTES", 115)  # exactly at the limit: read
    with pytest.raises(ConfigError, match="schema version None"):  # (and found wanting)
        results.load_json(path)


@pytest.mark.parametrize(("content", "after", "cut"), [
    (b"", b"", False),
    (b"\n", b"\n", False),
    (b'{"a": 1}\n', b'{"a": 1}\n', False),
    (b'{"a": 1}\n{"b"', b'{"a": 1}\n', True),
    (b"no newline at all", b"", True),
    (b"\n" + b"y" * 10, b"\n", True),  # the newline is the first byte
    (b"x\n" + b"y" * 70_000, b"x\n", True),  # a cut line longer than one 64 KiB block
    (b"z" * 10 + b"\n" + b"y" * 65_536, b"z" * 10 + b"\n", True),  # the newline a block back
    (b"a\nb\n" + b"y" * 65_535, b"a\nb\n", True),
    (b"a\nb\ncc", b"a\nb\n", True),  # the last newline of the block, not the first
    (b"\n" + b"y" * 65_536, b"\n", True),  # the newline alone in a block of its own
])  # fmt: skip
def test_repair_tail_cuts_exactly_the_last_unfinished_line(tmp_path, content, after, cut):
    from gpubench.model.results import repair_tail

    path = tmp_path / "log.jsonl"
    path.write_bytes(content)
    assert repair_tail(path) is cut
    assert path.read_bytes() == after


def test_the_csv_is_exact_columns_order_and_empty_cells(tmp_path):
    ok = Result(
        suite="t",
        variant="fast",
        point={"size": 64, "tile": 32},
        status=Status.OK,
        summary={
            "median_ms": 0.5,
            "min_ms": 0.4,
            "mean_ms": 0.55,
            "stdev_ms": 0.01,
            "rel_noise": 0.02,
            "samples": 10,
        },
        work={"bytes_moved": 8, "flops": 0, "elements": 2},
        metrics={"zeta": 1.0, "speedup": 2.0, "gbps": 16.0, "time_ms": 0.5},
    )
    odd = Result(suite="t", variant="odd,one", point={"size": 1, "rows": 3},
                 status=Status.INCORRECT, reason='wrong "here"')  # fmt: skip
    path = save_csv(ResultSet(suite="t", environment={}, spec={}, results=[ok, odd]),
                    tmp_path / "r.csv")  # fmt: skip
    assert path.read_bytes().decode() == (
        "size,tile,rows,suite,variant,status,reason,median_ms,min_ms,mean_ms,stdev_ms,"
        "rel_noise,samples,bytes_moved,flops,elements,gbps,speedup,zeta\r\n"
        "64,32,,t,fast,ok,,0.5,0.4,0.55,0.01,0.02,10,8,0,2,16.0,2.0,1.0\r\n"
        '1,,3,t,"odd,one",incorrect,"wrong ""here""",,,,,,,,,,,,\r\n'
    )


def test_load_any_tells_a_log_from_a_json_file_by_its_first_line(tmp_path):
    from gpubench.model.results import load_any

    results = sample_set().results
    log = JsonLinesLog(tmp_path / "r.jsonl", header={"suite": "transpose", "spec": {"a": 1},
                                                     "environment": {"gpu_uuid": "G"},
                                                     "pad": "x" * 5000})  # fmt: skip
    for r in results:
        log.write(r)
    log.close()
    padded = tmp_path / "padded.jsonl"  # blank lines before the header: still a log
    padded.write_text("\n  \n" + (tmp_path / "r.jsonl").read_text())
    for path in (tmp_path / "r.jsonl", padded):
        loaded = load_any(path)
        assert (loaded.suite, loaded.spec, loaded.environment) == ("transpose", {"a": 1},
                                                                     {"gpu_uuid": "G"})  # fmt: skip
        assert loaded.results == results
    bare = JsonLinesLog(tmp_path / "bare.jsonl", header={})
    bare.write(results[0])
    bare.close()
    loaded = load_any(tmp_path / "bare.jsonl")  # the suite from the first result; no mappings
    assert (loaded.suite, loaded.spec, loaded.environment) == ("transpose", {}, {})
    empty = JsonLinesLog(tmp_path / "empty.jsonl", header={})
    empty.close()
    assert (
        load_any(tmp_path / "empty.jsonl").suite == ""
        and load_any(tmp_path / "empty.jsonl").results == []
    )
    minified = tmp_path / "m.json"
    minified.write_text(json.dumps(sample_set().to_dict()))  # one line, no header kind
    assert load_any(minified).results == results
    save_json(sample_set(), tmp_path / "p.json")
    assert load_any(tmp_path / "p.json").results == results


def test_each_damaged_results_object_is_one_line_naming_the_key(tmp_path):
    good = sample_set().to_dict()

    def refused(record):
        with pytest.raises(ConfigError) as error:
            ResultSet.from_dict(record, source="r.json")
        return str(error.value)

    assert refused([good]) == "r.json: expected a results object, got list"
    assert refused({**good, "results": {}}) == "r.json: results: expected `array`, got `object`"
    assert refused({**good, "created": None}) == (
        "r.json: created: expected `str`, got `null` (found None)"
    )
    for key in ("device", "backend"):
        bad = {**good, "environment": {**good["environment"], key: "text"}}
        assert refused(bad) == (
            f"r.json: environment.{key}: expected `object | null`, got `str` (found 'text')"
        )
    broken = {**good, "results": [good["results"][0], {"suite": "t"}]}
    assert refused(broken).startswith("r.json: results[1]: ")
    assert ResultSet.from_dict({**good, "compile_report": [1]}).compile_report == {}
    assert ResultSet.from_dict({**good, "compile_report": None}).compile_report == {}
    kept = ResultSet.from_dict({**good, "compile_report": {"compiled": 3}})
    assert kept.compile_report == {"compiled": 3}


# -- each problem of a result record, and of a log line, as its exact words ------------------
PROBLEMS = [
    ("x", "expected `object`, got `str` (found 'x')"),
    ({**GOOD, "zeta": 1, "alpha": 2}, "object contains unknown field `zeta`"),
    *[({k: v for k, v in GOOD.items() if k != key}, f"object missing required field `{key}`")
      for key in ("suite", "variant", "point", "status")],
    ({**GOOD, "suite": 1}, "suite: expected `str`, got `int` (found 1)"),
    ({**GOOD, "variant": None}, "variant: expected `str`, got `null` (found None)"),
    ({**GOOD, "point": [1]}, "point: expected `object`, got `array`"),
    ({**GOOD, "point": 3}, "point: expected `object`, got `int` (found 3)"),
    ({**GOOD, "point": {"n": {"a": 1}}}, "point.n: expected `bool | int | float | str | null`, got `object`"),
    ({**GOOD, "status": 3}, "status: expected `str`, got `int` (found 3)"),
    ({**GOOD, "status": "great"}, "status: invalid enum value 'great' (found 'great')"),
    *[({**GOOD, key: [1]}, f"{key}: expected `object | null`, got `array`")
      for key in ("summary", "work", "verification", "device")],
    ({**GOOD, "metrics": None}, "metrics: expected `object`, got `null` (found None)"),
    ({**GOOD, "kernel_attributes": [1]}, "kernel_attributes: expected `object`, got `array`"),
    ({**GOOD, "timeline": {}}, "timeline: expected `array`, got `object`"),
    ({**GOOD, "phases": []}, "phases: expected `object`, got `array`"),
    ({**GOOD, "phases": {"a": 1}}, "phases.a: expected `object`, got `int` (found 1)"),
    ({**GOOD, "phases": {"a": {"x": "1"}}}, "phases.a.x: expected `float`, got `str` (found '1')"),
    ({**GOOD, "metrics": {"a": True}}, "metrics.a: expected `float | null`, got `bool` (found True)"),
    ({**GOOD, "summary": {"median_ms": 1.0, "x": "y"}}, "summary.x: expected `bool | float | "
     "null`, got `str` (found 'y')"),
    ({**GOOD, "work": {"flops": -1}}, "work.flops: expected `float` >= 0.0 (found -1)"),
    ({**GOOD, "verification": {"passed": True, "nope": 1}}, "verification: object contains "
     "unknown field `nope`"),
    ({**GOOD, "verification": {"max_abs_error": 0.0}}, "verification: object missing required "
     "field `passed`"),
    ({**GOOD, "device": {"uuid": 7}}, "device.uuid: expected `str | null`, got `int` (found 7)"),
    ({**GOOD, "seed": 10**400}, "seed: expected `int` <= 9223372036854775807 (found <an integer "
     "of about 400 digits>)"),
    ({**GOOD, "summary": None}, "a measured result needs a positive median_ms, got None"),
    ({**GOOD, "status": "unstable", "summary": {"median_ms": -1}}, "a measured result needs a "
     "positive median_ms, got -1"),
]  # fmt: skip


@pytest.mark.parametrize(("record", "problem"), PROBLEMS)
def test_each_problem_of_a_result_record_in_its_words(record, problem):
    with pytest.raises(ConfigError) as info:
        Result.from_dict(record)
    assert str(info.value) == problem


@pytest.mark.parametrize("record", [
    {**GOOD, "status": "skipped", "summary": None, "work": {"level": "dram", "precision": "fp32"}},
    {**GOOD, "metrics": {"gbps": None, "x": 1}, "phases": {"check": {"host_s": 0.5}}},
    {**GOOD, "verification": {"passed": False}, "timeline": [], "kernel_attributes": {}},
    {**GOOD, "summary": {"median_ms": 1.0, "throttled": True, "rel_noise": None}},
])  # fmt: skip
def test_records_at_the_edge_of_each_rule_are_accepted(record):
    result = Result.from_dict(record)
    assert result.status == Status(record["status"]) and result.point == {"n": 1}
    if record.get("verification"):
        assert result.verification.passed is False


HEADER = json.dumps({"kind": "header", "schema_version": 1, "suite": "s"})


def log_of(tmp_path, *lines, end="\n"):
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(lines) + end)
    return path


@pytest.mark.parametrize(("lines", "end", "message"), [
    (["{"], "\n", "line 1 is not JSON"),
    ([HEADER, "{", json.dumps({"kind": "result", **GOOD})], "\n", "line 2 is not JSON"),
    ([HEADER, json.dumps({"kind": "result", **GOOD}), "{"], "\n", "line 3 is not JSON"),
    ([HEADER, "[1]"], "\n", "line 2: expected an object"),
    ([json.dumps({"kind": "header", "suite": 5})], "\n", "line 1: suite: expected `str | "
     "null`, got `int` (found 5)"),
    ([json.dumps({"kind": "header", "spec": []})], "\n", "line 1: spec: expected `object | "
     "null`, got `array`"),
    ([json.dumps({"kind": "header", "fingerprint": "x"})], "\n", "line 1: fingerprint: expected "
     "`object | null`, got `str` (found 'x')"),
    ([json.dumps({"kind": "result", **GOOD})], "\n", "no header line: not a gpubench results "
     "log"),
    ([], "", "no header line: not a gpubench results log"),
    (["", "  "], "\n", "no header line: not a gpubench results log"),
    ([HEADER, json.dumps({"kind": "nope"})], "\n", "line 2: unknown kind of line 'nope'"),
    ([HEADER, HEADER], "\n", "line 2: a second header line (one log holds one run)"),
    ([HEADER, json.dumps({**GOOD})], "\n", "line 2: unknown kind of line None"),
    ([HEADER, json.dumps({"kind": "result", **GOOD, "status": "x"})], "\n", "line 2: status: "
     "invalid enum value 'x' (found 'x')"),
    ([HEADER, json.dumps({"kind": "metrics", "point": {}, "variant": "a"})], "\n", "line 2: "
     "object missing required field `metrics`"),
    ([HEADER, json.dumps({"kind": "metrics", "point": [], "variant": "a", "metrics": {}})], "\n",
     "line 2: point: expected `object`, got `array`"),
    ([HEADER, json.dumps({"kind": "metrics", "point": {}, "variant": "a", "metrics": []})], "\n",
     "line 2: metrics: expected `object`, got `array`"),
    ([HEADER, json.dumps({"kind": "metrics", "point": {}, "variant": "a",
                          "metrics": {"x": "1"}})], "\n", "line 2: metrics.x: expected "
     "`float | null`, got `str` (found '1')"),
    ([HEADER, json.dumps({"kind": "metrics", "point": {}, "metrics": {}})], "\n", "line 2: "
     "object missing required field `variant`"),
])  # fmt: skip
def test_each_problem_of_a_log_is_its_whole_line(tmp_path, lines, end, message):
    path = log_of(tmp_path, *lines, end=end)
    with pytest.raises(ConfigError) as info:
        load_jsonl(path)
    assert str(info.value) == f"{path}: {message}"


def test_metrics_lines_add_to_their_result_and_later_results_replace_earlier(tmp_path):
    first = {"kind": "result", **GOOD, "metrics": {"a": 1}}
    other = {"kind": "result", **GOOD, "variant": "b", "metrics": {}}
    again = {"kind": "result", **GOOD, "summary": {"median_ms": 2.0}, "metrics": {"a": 5}}
    lines = [HEADER, json.dumps(first), json.dumps(other),
             json.dumps({"kind": "metrics", "point": {"n": 1}, "variant": "a",
                         "metrics": {"speedup": 2.0, "gone": None}}),
             json.dumps({"kind": "metrics", "point": {"n": 2}, "variant": "a",
                         "metrics": {"orphan": 1}}),
             json.dumps(again),
             json.dumps({"kind": "metrics", "point": {"n": 1}, "variant": "a",
                         "metrics": {"b": 3}})]  # fmt: skip
    header, results = load_jsonl(log_of(tmp_path, *lines))
    assert header == {"schema_version": 1, "suite": "s"}
    assert [(r.variant, r.median_ms, r.metrics) for r in results] == [
        ("a", 2.0, {"a": 5, "b": 3}), ("b", 1.0, {})]  # fmt: skip


def test_only_the_last_line_without_its_newline_is_forgiven(tmp_path):
    good = json.dumps({"kind": "result", **GOOD})
    _, results = load_jsonl(log_of(tmp_path, HEADER, good, good[:20], end=""))
    assert len(results) == 1
    path = log_of(tmp_path, HEADER, good[:20], good, end="")
    with pytest.raises(ConfigError) as info:
        load_jsonl(path)
    assert str(info.value) == f"{path}: line 2 is not JSON"
    path = log_of(tmp_path, HEADER, good[:20])
    with pytest.raises(ConfigError) as info:  # ends with a newline: not cut by a kill
        load_jsonl(path)
    assert str(info.value) == f"{path}: line 2 is not JSON"


def test_load_any_reads_a_log_s_header_into_the_set(tmp_path):
    header = {"kind": "header", "schema_version": 1, "suite": "hs", "environment": {"gpu": "x"},
              "spec": {"source": "a.yaml"}}  # fmt: skip
    loaded = load_any(log_of(tmp_path, json.dumps(header), json.dumps({"kind": "result", **GOOD})))
    assert (loaded.suite, loaded.environment, loaded.spec) == ("hs", {"gpu": "x"},
                                                               {"source": "a.yaml"})  # fmt: skip
    bare = load_any(log_of(tmp_path, '{"kind": "header"}', json.dumps({"kind": "result", **GOOD})))
    assert (bare.suite, bare.environment, bare.spec) == ("s", {}, {})
    empty = load_any(log_of(tmp_path, '{"kind": "header"}'))
    assert (empty.suite, empty.results) == ("", [])


def test_a_point_s_key_is_its_sorted_json():
    assert point_key({"b": 1, "a": "x"}) == '{"a": "x", "b": 1}'
    assert point_key({"p": Path("a/b")}) == '{"p": "a/b"}'


def test_the_reading_limits_in_their_words(tmp_path, monkeypatch):
    from gpubench.model import results

    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError) as info:
        load_json(fifo)
    assert str(info.value) == (f"{fifo}: not a regular file: a results file is a JSON or "
                               "JSON-lines file")  # fmt: skip
    with pytest.raises(ConfigError) as info:
        load_json(tmp_path / "none.json")
    assert str(info.value) == f"{tmp_path / 'none.json'}: cannot read results: No such file or " \
        "directory"  # fmt: skip
    big = tmp_path / "big.json"
    with big.open("wb") as handle:
        handle.truncate((3 << 30) + 5)  # a sparse file: its size without the disk space
    with pytest.raises(ConfigError) as info:
        load_json(big)
    assert str(info.value) == (
        f"{big}: 3,221,225,477 bytes: a results file is at most 16 MiB; a larger sweep belongs "
        "in a results log (--jsonl), read a line at a time"
    )
    big.unlink()
    # A file that grows between the size check and the read is cut at the limit, not read on.
    grown = tmp_path / "grown.json"
    grown.write_bytes(b"x" * 11)
    monkeypatch.setattr(results, "MAX_RESULTS_BYTES", 10)
    monkeypatch.setattr(results.os, "stat", lambda path: os.stat_result((0o100644, *[0] * 9)))
    opened = []
    real_open = open

    class Reader:
        def __init__(self, path):
            self.handle = real_open(path, "rb")

        def read(self, size):
            opened.append(size)
            return b"x" * min(size, 12)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

    monkeypatch.setattr(results, "_open_results", Reader)
    with pytest.raises(ConfigError) as info:
        load_json(grown)
    assert str(info.value) == (
        f"{grown}: more than 10 bytes: a results file is at most 10 bytes; a larger sweep "
        "belongs in a results log (--jsonl), read a line at a time"
    )
    assert opened == [11]


def test_save_json_writes_indented_json_through_a_temporary_file(tmp_path):
    target = tmp_path / "new" / "dir" / "r.json"
    rs = sample_set()
    rs.compile_report = {"compiled": 2}
    assert save_json(rs, target) == target
    text = target.read_text()
    assert text == json.dumps(rs.to_dict(), indent=2, default=str, allow_nan=False) + "\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["r.json"]
    loaded = load_json(target)
    assert loaded.compile_report == {"compiled": 2} and loaded.to_dict()["schema_version"] == 1
    rs.results[0].point["where"] = Path("a/b")  # not JSON: written as its text
    renamed = []
    real_replace = Path.replace
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Path, "replace", lambda self, to: renamed.append(self.name) or
                      real_replace(self, to))  # fmt: skip
        save_json(rs, target)
    assert renamed == ["r.json.tmp"]
    assert load_json(target).results[0].point["where"] == "a/b"


def test_a_results_object_s_problem_names_its_file_and_key():
    good = sample_set().to_dict()
    with pytest.raises(ConfigError) as info:
        ResultSet.from_dict({**good, "results": [{**good["results"][0], "status": "x"}]},
                            source="r.json")  # fmt: skip
    assert str(info.value) == "r.json: results[0].status: invalid enum value 'x' (found 'x')"


def test_a_json_file_that_mentions_kind_or_header_is_still_json(tmp_path):
    rs = sample_set()
    rs.results[0].point["kind"] = "header"
    save_json(rs, tmp_path / "pretty.json")  # "kind": "header" on a line of its own
    assert load_any(tmp_path / "pretty.json").results[0].point["kind"] == "header"
    minified = tmp_path / "min.json"
    rs.results[0].point = {"x": "header"}
    minified.write_text(json.dumps(rs.to_dict()))
    assert load_any(minified).results[0].point == {"x": "header"}


def test_a_log_s_header_line_and_a_deeply_nested_file(tmp_path, monkeypatch):
    from gpubench.model import results

    monkeypatch.setattr(results, "now_iso", lambda: "2026-11-27T09:30:00+00:00")
    log = JsonLinesLog(tmp_path / "r.jsonl", header={"suite": "s"})
    log.close()
    assert (tmp_path / "r.jsonl").read_text() == (
        '{"kind": "header", "schema_version": 1, "created": "2026-11-27T09:30:00+00:00", '
        '"suite": "s"}\n'
    )
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    with pytest.raises(ConfigError) as info:
        load_json(deep)
    assert str(info.value) == f"{deep}: not valid JSON: nested too deeply"


def test_a_constant_json_does_not_allow_and_a_schema_from_elsewhere_name_the_file(tmp_path):
    from gpubench.model.results import load_json

    path = tmp_path / "r.json"
    for constant in ("NaN", "Infinity", "-Infinity"):
        path.write_text(f'{{"schema_version": 1, "x": {constant}}}')
        with pytest.raises(ConfigError) as info:
            load_json(path)
        assert str(info.value) == f"{path}: not valid JSON: {constant} is not a number JSON allows"
    path.write_text('{"schema_version": 7}')
    with pytest.raises(ConfigError) as info:
        load_json(path)
    assert str(info.value) == f"{path}: results schema version 7 is not supported (expected 1)"


def test_a_log_writes_values_json_has_no_form_for_as_text(tmp_path):
    from gpubench.model.results import JsonLinesLog

    log = JsonLinesLog(tmp_path / "r.jsonl", header={"source": Path("sweeps/a.yaml")})
    log.finished(Result("s", "v", {"n": 1}, Status.OK, summary={"median_ms": float("nan")},
                        metrics={"where": Path("out")}))  # fmt: skip
    log.close()
    header, record = (json.loads(line) for line in (tmp_path / "r.jsonl").open())
    assert header["source"] == "sweeps/a.yaml" and record["metrics"] == {"where": "out"}
    assert record["summary"]["median_ms"] is None


def test_a_new_log_replaces_what_the_file_held(tmp_path, monkeypatch):
    from gpubench.model import results

    monkeypatch.setattr(results, "now_iso", lambda: "2026-11-27T09:30:00+00:00")
    # A log of a header only is not set aside (it holds no results): a new run starts it anew.
    path = tmp_path / "r.jsonl"
    JsonLinesLog(path, header={"fingerprint": {"run": 1}}).close()
    JsonLinesLog(path, header={"fingerprint": {"run": 2}}).close()
    (line,) = path.read_text().splitlines()
    assert json.loads(line) == {
        "kind": "header",
        "schema_version": SCHEMA_VERSION,
        "created": "2026-11-27T09:30:00+00:00",
        "fingerprint": {"run": 2},
    }


def test_a_log_s_run_is_dated_by_its_header_else_by_its_last_write(tmp_path):
    import os

    from gpubench.model.results import load_any

    dated = tmp_path / "dated.jsonl"
    dated.write_text('{"kind": "header", "created": "2026-11-20T08:00:00+00:00", "suite": "s"}\n')
    assert load_any(dated).created == "2026-11-20T08:00:00+00:00"
    undated = tmp_path / "undated.jsonl"
    undated.write_text('{"kind": "header", "suite": "s"}\n')
    os.utime(undated, (1_764_230_400, 1_764_230_400))
    assert load_any(undated).created == "2025-11-27T08:00:00+00:00"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('{"kind": "header", "created": "garbage", "suite": "s"}\n', "line 1: created"),
        (
            '{"schema_version": 1, "created": "last tuesday", "suite": "s", "environment": {}, '
            '"spec": {}, "results": []}',
            "created",
        ),
    ],
)
def test_a_created_that_is_no_date_is_one_line(tmp_path, text, key):
    from gpubench.model.results import load_any

    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_any(path)
    found = "'garbage'" if "garbage" in text else "'last tuesday'"
    assert str(info.value) == (
        f"{path}: {key}: expected an ISO 8601 date and time (2026-11-27T09:30:00+00:00), "
        f"got {found}"
    )


def test_infinity_inside_a_tuple_is_written_as_null(tmp_path):
    result_set = sample_set()
    result_set.results[0].timeline = [{"span": (0.0, float("inf"))}]
    saved = json.loads(save_json(result_set, tmp_path / "r.json").read_text())
    assert saved["results"][0]["timeline"] == [{"span": [0.0, None]}]
    log = JsonLinesLog(tmp_path / "r.jsonl", header={"span": (1, float("nan"))})
    log.close()
    assert json.loads((tmp_path / "r.jsonl").read_text())["span"] == [1, None]


def test_a_results_file_written_past_the_read_back_limit_gets_a_note(tmp_path, monkeypatch):
    from gpubench.model import results

    small, large = tmp_path / "small.json", tmp_path / "large.json"
    small.write_text("x" * 100)
    large.write_text("x" * 101)
    monkeypatch.setattr(results, "MAX_RESULTS_BYTES", 100)
    assert results.read_back_note(small) is None
    assert results.read_back_note(large) == (
        f"note: {large} holds 101 bytes, more than gpubench reads back from a results file "
        "(100 bytes): compare, plot and history import read the sweep's JSON-lines log "
        "(--jsonl) instead"
    )
