"""Energy in the history store: each result's energy kept beside its record and read back
field by field, a store of schema 1 (before energy) upgraded or read as it is, and a run's
energy through export and import, a wrong field of it one line."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpubench.cli import cli
from gpubench.errors import ConfigError
from gpubench.model.results import Result, ResultSet, Status
from gpubench.store.history import SCHEMA_VERSION, CodeVersion, History, StoredEnergy
from tests.fakes import ENERGY_READING

REPO = Path(__file__).resolve().parents[2]
FAKE = {"GPUBENCH_BACKEND": "tests.fakes:FakeBackend"}
VERSION = CodeVersion(None, None, "0.1.0")
READING = ENERGY_READING
MISSING = {"missing": "the energy counter changed 2 time(s) inside the 0.05 s window"}
# What the columns keep of READING and of MISSING.
STORED = StoredEnergy(0.25, 250.0, 50.0, 0.004, 1980.0, None)
STORED_MISSING = StoredEnergy(missing=MISSING["missing"])


def energy_run(created: str = "2026-11-20T03:00:00+00:00") -> ResultSet:
    """Three results: one with a reading, one whose energy is missing, one never asked."""
    results = [
        Result("scale", variant, {"n": 10}, Status.OK, energy=energy,
               summary={"median_ms": median, "rel_noise": 0.01})
        for variant, median, energy in (("a", 1.0, READING), ("b", 2.0, MISSING), ("c", 3.0, None))
    ]  # fmt: skip
    env = {"device": {"name": "Fake GPU"}, "gpu_uuid": "GPU-1", "backend": {"name": "fake"}}
    return ResultSet("scale", env, {"suite": "scale"}, results, created=created)


def invoke(*args: str, env: dict | None = None):
    return CliRunner().invoke(cli, list(args), env=env)


def test_a_run_s_energy_is_stored_and_read_back_field_by_field(tmp_path):
    with History.open(tmp_path / "h.sqlite") as store:
        run_id = store.append(energy_run(), version=VERSION)
        assert store.energy(run_id) == [
            ("a", '{"n": 10}', STORED),
            ("b", '{"n": 10}', STORED_MISSING),
            ("c", '{"n": 10}', None),
        ]
        first = store.energy(run_id)[0][2]
        assert (
            first.joules_per_run,
            first.average_watts,
            first.idle_watts,
            first.noise,
            first.sm_clock_mhz,
            first.missing,
        ) == (0.25, 250.0, 50.0, 0.004, 1980.0, None)
        columns = store._db.execute(
            "SELECT energy_joules_per_run, energy_average_watts, energy_idle_watts, "
            "energy_noise, energy_sm_clock_mhz, energy_missing FROM results ORDER BY rowid"
        ).fetchall()
        assert columns == [
            (0.25, 250.0, 50.0, 0.004, 1980.0, None),
            (None, None, None, None, None, MISSING["missing"]),
            (None, None, None, None, None, None),
        ]
        # The record keeps the whole reading: the run comes back as the file it was.
        back = store.result_set(run_id)
        assert [r.energy for r in back.results] == [READING, MISSING, None]
        # The report's series: only the results with an energy per run.
        assert store.energy_series("scale") == [(run_id, "a", '{"n": 10}', "ok", 1.0, STORED)]
        assert store.energy_series("other") == []


def test_a_reading_s_unknown_figures_are_stored_as_null(tmp_path):
    run = energy_run()
    run.results[0].energy = {
        **READING,
        "idle_watts": None,
        "noise": float("nan"),
        "sm_clock_mhz": None,
    }
    with History.open(tmp_path / "h.sqlite") as store:
        run_id = store.append(run, version=VERSION)
        assert store.energy(run_id)[0][2] == StoredEnergy(0.25, 250.0, None, None, None, None)


# The store as the gpubench before energy wrote it: schema 1, no energy columns.
SCHEMA_1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, created TEXT NOT NULL,
    suite TEXT NOT NULL, label TEXT NOT NULL DEFAULT '', git_commit TEXT, dirty INTEGER,
    gpubench_version TEXT, gpu_name TEXT, gpu_uuid TEXT, backend TEXT,
    source TEXT NOT NULL DEFAULT '', environment TEXT NOT NULL, spec TEXT NOT NULL);
CREATE TABLE results (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    variant TEXT NOT NULL, point TEXT NOT NULL, status TEXT NOT NULL, median_ms REAL,
    rel_noise REAL, record TEXT NOT NULL);
CREATE INDEX results_run ON results(run_id);
CREATE INDEX runs_suite ON runs(suite, created);
INSERT INTO meta VALUES ('schema_version', '1');
"""


def old_store(path: Path) -> Path:
    """A schema-1 store of one run: a result without energy, and one whose record holds an
    energy (the gpubench that first measured energy kept it only in the record)."""
    db = sqlite3.connect(path)
    db.executescript(SCHEMA_1)
    env = json.dumps({"device": {"name": "Fake GPU"}, "gpu_uuid": "GPU-1"})
    db.execute(
        "INSERT INTO runs (created, suite, gpu_name, gpu_uuid, backend, environment, spec) "
        "VALUES ('2026-11-19T03:00:00+00:00', 'scale', 'Fake GPU', 'GPU-1', 'fake', ?, '{}')",
        (env,),
    )
    for variant, energy in (("a", None), ("b", READING)):
        record = {
            "suite": "scale",
            "variant": variant,
            "point": {"n": 10},
            "status": "ok",
            "summary": {"median_ms": 1.0, "rel_noise": 0.01},
        }
        if energy is not None:
            record["energy"] = energy
        db.execute(
            "INSERT INTO results VALUES (1, ?, '{\"n\": 10}', 'ok', 1.0, 0.01, ?)",
            (variant, json.dumps(record)),
        )
    db.commit()
    db.close()
    return path


def test_a_store_of_schema_1_opens_upgraded_with_its_energy_from_the_records(tmp_path):
    path = old_store(tmp_path / "old.sqlite")
    listed = invoke("history", "list", "--store", str(path))
    assert listed.exit_code == 0, listed.output
    assert "scale" in listed.output and "Fake GPU" in listed.output
    with History.open(path) as store:
        assert store.schema == SCHEMA_VERSION == 2
        assert store._stored_version() == "2"
        assert store.energy(1) == [("a", '{"n": 10}', None), ("b", '{"n": 10}', STORED)]
        assert [r.energy for r in store.result_set(1).results] == [None, READING]
        new = store.append(energy_run(), version=VERSION)
        assert [e for _, _, e in store.energy(new)] == [STORED, STORED_MISSING, None]
        assert [r.id for r in store.runs()] == [1, new]
    with History.open(path) as again:  # upgraded once: the second opening only reads
        assert again.schema == 2 and again.energy(1)[1][2] == STORED


def test_a_read_only_store_of_schema_1_is_read_as_it_is(tmp_path):
    path = old_store(tmp_path / "old.sqlite")
    # A read-only connection stands for a read-only file (permission bits do not stop root).
    read_only = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    with History(path, read_only) as store:
        store._initialise()
        assert store.schema == 1
        assert [r.id for r in store.runs()] == [1]
        assert store.energy(1) == [("a", '{"n": 10}', None), ("b", '{"n": 10}', STORED)]
        assert store.energy_series("scale") == [(1, "b", '{"n": 10}', "ok", 1.0, STORED)]
        assert [r.energy for r in store.result_set(1).results] == [None, READING]
        with pytest.raises(ConfigError) as info:
            store.append(energy_run())
        assert str(info.value) == (
            f"{path}: cannot write the history store (attempt to write a readonly database)"
        )
    # Another process upgrades the store; a writer that opened it before writes to it then.
    stale = History(path, sqlite3.connect(path, isolation_level=None))
    stale.schema = 1
    with History.open(path) as store:
        assert store.schema == 2
    with stale:
        run_id = stale.append(energy_run(), version=VERSION)
        assert stale.schema == 2 and stale.energy(run_id)[0][2] == STORED


def test_energy_survives_export_and_import_both_ways(tmp_path):
    store, other = tmp_path / "h.sqlite", tmp_path / "other.sqlite"
    with History.open(store) as history:
        history.append(energy_run(), version=VERSION)
    for option, name in (("--json", "run1.json"), ("--jsonl", "run1.jsonl")):
        exported = tmp_path / name
        out = invoke("history", "export", "1", "--store", str(store), option, str(exported))
        assert out.exit_code == 0, out.output
        imported = invoke("history", "import", str(exported), "--store", str(other))
        assert imported.exit_code == 0, imported.output
    written = json.loads((tmp_path / "run1.json").read_text())["results"]
    assert [r.get("energy") for r in written] == [READING, MISSING, None]
    with History.open(other) as history:
        # The JSON export is stored once: the results log of the same run is found in it.
        assert [r.id for r in history.runs()] == [1]
        assert [e for _, _, e in history.energy(1)] == [STORED, STORED_MISSING, None]
        assert [r.energy for r in history.result_set(1).results] == [READING, MISSING, None]


@pytest.mark.parametrize(("field", "value", "message"), [
    ("average_watts", "hot",
     "results[0].energy.average_watts: expected `float | null`, got `str` (found 'hot')"),
    ("noise", -0.5, "results[0].energy.noise: expected `float` >= 0.0 (found -0.5)"),
    ("missing", 3, "results[0].energy.missing: expected `str | null`, got `int` (found 3)"),
])  # fmt: skip
def test_a_wrong_energy_field_in_an_exported_file_is_one_line_naming_it(
    tmp_path, field, value, message
):
    store = tmp_path / "h.sqlite"
    with History.open(store) as history:
        history.append(energy_run(), version=VERSION)
    exported = tmp_path / "run1.json"
    assert (
        invoke("history", "export", "1", "--store", str(store), "--json", str(exported)).exit_code
        == 0
    )
    record = json.loads(exported.read_text())
    record["results"][0]["energy"][field] = value
    exported.write_text(json.dumps(record))
    other = tmp_path / "other.sqlite"
    result = invoke("history", "import", str(exported), "--store", str(other))
    assert result.exit_code == 2, result.output
    assert " ".join(result.output.split()) == f"error: {exported}: {message}"
    assert "Traceback" not in result.output and not other.exists()


def test_a_run_measured_with_energy_goes_into_the_store_and_out_again(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "h.sqlite"
    suite = REPO / "tests" / "suites" / "scale.py"
    result = invoke(
        "run",
        str(suite),
        "-v",
        "good",
        "-v",
        "fast",
        "--energy",
        "--history",
        str(store),
        "--json",
        str(tmp_path / "run.json"),
        env=FAKE,
    )
    assert result.exit_code == 0, result.output
    measured = {
        r["variant"]: r["energy"]
        for r in json.loads((tmp_path / "run.json").read_text())["results"]
    }
    with History.open(store) as history:
        stored = {variant: energy for variant, _, energy in history.energy(1)}
        back = {r.variant: r.energy for r in history.result_set(1).results}
    assert back == measured
    for variant, energy in measured.items():
        assert stored[variant] == StoredEnergy(
            energy["joules_per_run"],
            energy["average_watts"],
            energy["idle_watts"],
            energy["noise"],
            energy["sm_clock_mhz"],
            None,
        )
    # The stand-in meter: 250 W busy, 50 W idle; good takes 1 ms a run, fast 0.5 ms.
    assert stored["good"].joules_per_run == pytest.approx(0.25)
    assert stored["fast"].joules_per_run == pytest.approx(0.125)
    assert (stored["good"].average_watts, stored["good"].idle_watts) == (
        pytest.approx(250.0),
        pytest.approx(50.0),
    )
