"""The history export (gpubench.formats.history_export: a results file): an exported run
fits the schema and reads back; `gpubench history import` of damaged results files (JSON or a
log) is exit 2, one line on stderr, no traceback, and nothing imported."""

from __future__ import annotations

import json

import msgspec
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpubench.cli import cli
from gpubench.formats import history_export
from gpubench.store.history import History
from tests.formats.test_results import BASE, PATHS, SMOKE, WRONG, replaced
from tests.formats.test_results_log import LOG, log_text


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def stored_runs(store) -> int:
    if not store.exists():
        return 0
    with History.open(store, create=False) as history:
        return len(history.runs())


def test_an_exported_run_fits_the_schema_and_reads_back(tmp_path):
    store, out = tmp_path / "h.sqlite", tmp_path / "run.json"
    assert invoke("history", "import", "--store", str(store), str(SMOKE)).exit_code == 0
    exported = invoke("history", "export", "--store", str(store), "1", "--json", str(out))
    assert exported.exit_code == 0, exported.output
    (schema,) = history_export.SCHEMAS.values()
    record = msgspec.convert(json.loads(out.read_text()), schema, strict=True)
    assert len(record.results) == len(json.loads(SMOKE.read_text())["results"])
    again = invoke("history", "import", "--store", str(tmp_path / "again.sqlite"), str(out))
    assert again.exit_code == 0, again.output


def test_a_run_exported_as_a_log_reads_back_the_same(tmp_path, monkeypatch):
    from gpubench.model import results

    store, as_json, as_log = (tmp_path / n for n in ("h.sqlite", "run.json", "run.jsonl"))
    assert invoke("history", "import", "--store", str(store), str(SMOKE)).exit_code == 0
    for option, path in (("--json", as_json), ("--jsonl", as_log)):
        ran = invoke("history", "export", "--store", str(store), "1", option, str(path))
        assert (ran.exit_code, ran.stderr) == (0, f"run 1: {path}\n")
    from_json, from_log = results.load_any(as_json), results.load_any(as_log)
    assert from_log.created == from_json.created and from_log.suite == from_json.suite
    assert from_log.environment == from_json.environment
    assert [r.to_dict() for r in from_log.results] == [r.to_dict() for r in from_json.results]
    # A results file past what one may hold is written, and says where to look instead.
    monkeypatch.setattr(results, "MAX_RESULTS_BYTES", 100)
    ran = invoke("history", "export", "--store", str(store), "1", "--json", str(as_json))
    size = results.size_text(as_json.stat().st_size)
    assert ran.exit_code == 0 and " ".join(ran.stderr.split()).startswith(
        f"note: {as_json} holds {size}, more than gpubench reads back from a results file "
        "(100 bytes): compare, plot and history import read the sweep's JSON-lines log "
        "(--jsonl) instead"
    )


@pytest.mark.parametrize("options", [[], ["--json", "a.json", "--jsonl", "a.jsonl"]])
def test_an_export_names_one_file(tmp_path, options):
    store = tmp_path / "h.sqlite"
    assert invoke("history", "import", "--store", str(store), str(SMOKE)).exit_code == 0
    ran = invoke("history", "export", "--store", str(store), "1", *options)
    assert (ran.exit_code, ran.stderr) == (
        2,
        "error: command line: give one of --json FILE and --jsonl FILE\n",
    )


def refused_import(tmp_path, damaged) -> str:
    """`history import` of a good file and a damaged one: exit 2, nothing stored; stderr."""
    store = tmp_path / "h.sqlite"
    ran = invoke("history", "import", "--store", str(store), str(SMOKE), str(damaged))
    assert ran.exit_code == 2 and "Traceback" not in ran.output
    assert ran.stderr.count("\n") == 1 and str(damaged) in ran.stderr
    assert stored_runs(store) == 0
    return ran.stderr


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.sampled_from([p for p in PATHS if p[0] in ("results", "environment", "suite")]),
    st.sampled_from([v for v in WRONG if v not in ({"a": 1},)]),
    st.booleans(),
)
def test_import_of_a_damaged_file_is_one_line_and_stores_nothing(tmp_path, path, value, as_log):
    if as_log:
        damaged = tmp_path / "bad.jsonl"
        lines = replaced(LOG, (1, *path[2:]) if path[0] == "results" else (0, *path), value)
        damaged.write_text(log_text(lines))
    else:
        damaged = tmp_path / "bad.json"
        damaged.write_text(json.dumps(replaced(BASE, path, value)))
    store = tmp_path / "h.sqlite"
    store.unlink(missing_ok=True)  # tmp_path is shared by the examples
    ran = invoke("history", "import", "--store", str(store), str(SMOKE), str(damaged))
    if ran.exit_code == 0:  # the wrong value fits the format (a null where null is allowed)
        return
    assert ran.exit_code == 2 and "Traceback" not in ran.output
    assert ran.stderr.count("\n") == 1 and str(damaged) in ran.stderr
    assert stored_runs(store) == 0


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("cut.json", json.dumps(BASE)[:100], "not valid JSON: "),
        ("device.json", json.dumps(replaced(BASE, ("environment", "device"), "H100")),
         "environment.device: expected `object | null`, got `str` (found 'H100')"),
        ("metric.jsonl", log_text(replaced(LOG, (1, "metrics"), {"gbps": "fast"})),
         "line 2: metrics.gbps: expected `float | null`, got `str` (found 'fast')"),
    ],
)  # fmt: skip
def test_import_of_a_damaged_file_names_the_file_and_the_field(tmp_path, name, text, message):
    damaged = tmp_path / name
    damaged.write_text(text)
    assert refused_import(tmp_path, damaged).startswith(f"error: {damaged}: {message}")
