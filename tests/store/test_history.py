"""The history store: runs in and out, filters, concurrent writers and a writer killed
mid-write, and every bad store or path as one line."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpubench.cli import cli
from gpubench.errors import ConfigError
from gpubench.model.results import Result, ResultSet, Status, save_json
from gpubench.store.history import CodeVersion, History, check_label, code_version

REPO = Path(__file__).resolve().parents[2]
FAKE = {"GPUBENCH_BACKEND": "tests.fakes:FakeBackend"}


def result_set(suite="scale", medians=(1.0, 2.0), created="2026-11-20T03:00:00+00:00",
               gpu="Fake GPU") -> ResultSet:  # fmt: skip
    results = [Result(suite, f"v{i}", {"n": 10 * (i + 1)}, Status.OK,
                      summary={"median_ms": m, "rel_noise": 0.01})
               for i, m in enumerate(medians)]  # fmt: skip
    env = {"device": {"name": gpu}, "gpu_uuid": f"GPU-{gpu}", "backend": {"name": "fake"}}
    return ResultSet(suite=suite, environment=env, spec={"suite": suite}, results=results,
                     created=created)  # fmt: skip


def test_a_run_goes_in_and_comes_back_with_its_identity(tmp_path):
    with History.open(tmp_path / "h.sqlite") as store:
        first = store.append(result_set(), label="nightly",
                             version=CodeVersion("ab" * 20, True, "0.1.0"))  # fmt: skip
        second = store.append(result_set("other", (3.0,), "2026-11-21T03:00:00+00:00", "H100"))
        runs = store.runs()
        assert [r.id for r in runs] == [first, second]
        run = runs[0]
        assert (run.suite, run.label, run.commit, run.dirty, run.gpu_name, run.backend,
                run.results) == ("scale", "nightly", "ab" * 20, True, "Fake GPU", "fake", 2)  # fmt: skip
        back = store.result_set(first)
        assert [(r.variant, r.point, r.status, r.median_ms) for r in back.results] == [
            ("v0", {"n": 10}, Status.OK, 1.0), ("v1", {"n": 20}, Status.OK, 2.0)]  # fmt: skip
        assert back.environment["gpu_uuid"] == "GPU-Fake GPU"
        assert [r.id for r in store.runs(suite="other")] == [second]
        assert [r.id for r in store.runs(gpu="H100")] == [second]
        assert [r.id for r in store.runs(gpu="GPU-Fake GPU")] == [first]
        assert [r.id for r in store.runs(label="nightly")] == [first]
        assert [r.id for r in store.runs(commit="abab")] == [first]
        assert store.runs(commit="ffff") == []
        assert store.suites() == ["other", "scale"]
        assert store.delete([first, 999]) == 1 and [r.id for r in store.runs()] == [second]


def _writer(path: str, runs: int, tag: int) -> None:
    with History.open(path) as store:
        for i in range(runs):
            store.append(result_set(medians=(1.0 + tag, 2.0 + i)), label=f"w{tag}",
                         version=CodeVersion(None, None, "0.1.0"))  # fmt: skip


def _killed_writer(path: str, ready: multiprocessing.Event) -> None:
    """Takes the write lock, writes half a run, then waits to be killed."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    db.execute(
        "INSERT INTO runs (created, suite, environment, spec) VALUES ('x', 'half', '{}', '{}')"
    )
    ready.set()
    time.sleep(60)


@pytest.mark.signals
def test_concurrent_writers_lose_nothing_and_a_killed_one_leaves_no_trace(tmp_path):
    path = str(tmp_path / "h.sqlite")
    History.open(path).close()
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    victim = ctx.Process(target=_killed_writer, args=(path, ready))
    victim.start()
    assert ready.wait(30)
    writers = [ctx.Process(target=_writer, args=(path, 10, tag)) for tag in range(4)]
    for w in writers:
        w.start()
    time.sleep(0.5)  # the writers are queued behind the victim's lock
    os.kill(victim.pid, signal.SIGKILL)
    victim.join()
    for w in writers:
        w.join(120)
        assert w.exitcode == 0
    with History.open(path) as store:
        runs = store.runs()
        assert len(runs) == 40 and {r.suite for r in runs} == {"scale"}  # no half run
        assert sorted(r.label for r in runs) == sorted(f"w{t}" for t in range(4) for _ in range(10))
        assert all(r.results == 2 for r in runs)
        assert store._db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def invoke(*args: str, env: dict | None = None):
    return CliRunner().invoke(cli, list(args), env=env)


def one_line_error(result, code: int, text: str) -> None:
    assert result.exit_code == code, result.output
    assert text in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output


def test_bad_stores_and_paths_are_one_line(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n" * 100)
    one_line_error(
        invoke("history", "list", "--store", str(text)), 2, "not a gpubench history store"
    )
    one_line_error(invoke("history", "list", "--store", str(tmp_path)), 2, "is not a file")
    one_line_error(invoke("history", "list", "--store", str(tmp_path / "none.sqlite")), 2,
                   "no such history store")  # fmt: skip
    store = tmp_path / "h.sqlite"
    History.open(store).close()
    one_line_error(invoke("history", "export", "7", "--store", str(store), "--json",
                          str(tmp_path / "x.json")), 2, "no run 7 in the store")  # fmt: skip
    one_line_error(invoke("history", "delete", "7", "--store", str(store)), 2,
                   "deleted 0 of 1 run(s)")  # fmt: skip
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert invoke("history", "import", str(bad), "--store", str(store)).exit_code == 2
    one_line_error(invoke("report", "--store", str(tmp_path / "none.sqlite")), 2,
                   "no such history store")  # fmt: skip
    other = sqlite3.connect(tmp_path / "other.sqlite")
    other.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    other.execute("INSERT INTO meta VALUES ('schema_version', '99')")
    other.commit()
    other.close()
    one_line_error(invoke("history", "list", "--store", str(tmp_path / "other.sqlite")), 2,
                   "history schema 99")  # fmt: skip
    # A run's --history that cannot be a store is refused before any measurement.
    result = invoke(
        "run", str(REPO / "tests" / "suites" / "scale.py"), "--history", str(text), env=FAKE
    )
    assert result.exit_code == 2 and "not a gpubench history store" in result.output


def test_a_sweep_appends_and_history_lists_exports_and_reports(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    suite = REPO / "tests" / "suites" / "scale.py"
    store = tmp_path / "h.sqlite"
    for label in ("before", "after"):
        result = invoke("run", str(suite), "-v", "good", "-v", "fast", "--history", str(store),
                        "--label", label, "--json", str(tmp_path / f"{label}.json"), env=FAKE)  # fmt: skip
        assert result.exit_code == 0, result.output
        assert "history: run" in result.output
    listed = invoke("history", "list", "--store", str(store))
    assert listed.exit_code == 0 and "before" in listed.output and "after" in listed.output
    exported = tmp_path / "run1.json"
    assert (
        invoke("history", "export", "1", "--store", str(store), "--json", str(exported)).exit_code
        == 0
    )
    before = json.loads((tmp_path / "before.json").read_text())["results"]
    again = json.loads(exported.read_text())["results"]
    assert [(r["variant"], r["summary"]["median_ms"]) for r in again] == [
        (r["variant"], r["summary"]["median_ms"]) for r in before]  # fmt: skip
    compared = invoke("compare", str(tmp_path / "before.json"), str(exported))
    assert compared.exit_code == 0 and "no regressions" in compared.output
    imported = invoke("history", "import", str(tmp_path / "after.json"), "--store", str(store),
                      "--label", "again")  # fmt: skip
    # The sweep stored that run already (--history): the same file is not stored twice.
    assert imported.exit_code == 0, imported.output
    assert " ".join(imported.output.split()) == (
        f"note: {tmp_path / 'after.json'} is run 2 of {store} already: skipped imported no run "
        f"into {store}: every file is stored already"
    )
    assert [r.id for r in History.open(store).runs()] == [1, 2]
    report = invoke("report", "--store", str(store), "-o", str(tmp_path / "site"))
    assert report.exit_code == 0, report.output
    names = sorted(p.name for p in (tmp_path / "site").iterdir())
    assert names == ["index.html", "plotly.min.js", "report.js", "scale.html"]


def test_the_code_version_inside_and_outside_a_repository(tmp_path):
    inside = code_version(REPO)
    assert inside.commit and len(inside.commit) == 40 and inside.dirty in (True, False)
    outside = code_version(tmp_path)
    assert outside.commit is None and outside.dirty is None and outside.gpubench


def test_report_without_plotly_is_one_line(tmp_path, monkeypatch):
    store = tmp_path / "h.sqlite"
    with History.open(store) as h:
        h.append(result_set(), version=CodeVersion(None, None, "0.1.0"))
    monkeypatch.setitem(sys.modules, "plotly", None)
    one_line_error(
        invoke("report", "--store", str(store), "-o", str(tmp_path / "site")),
        4,
        "pip install 'gpubench-studies[report]'",
    )


def test_regressions_are_marked_by_compares_rule(tmp_path):
    from gpubench.report import web

    with History.open(tmp_path / "h.sqlite") as store:
        for day, medians in enumerate([(1.0, 2.0), (1.01, 2.0), (1.5, 1.0)]):
            store.append(result_set(medians=medians, created=f"2026-11-2{day}T03:00:00+00:00"),
                         version=CodeVersion(None, None, "0.1.0"))  # fmt: skip
        data, changes = web.suite_data(store, "scale", store.runs(), threshold=0.02)
    assert sorted((v, verdict) for _, v, verdict, _ in changes) == [("v0", "slower"),
                                                                    ("v1", "faster")]  # fmt: skip
    marked = {p["label"]: p["regressions"] for p in data["points"]}
    assert marked == {
        "n=10": {"runs": [3], "median": [1.5], "variant": ["v0"], "bed": [0]},
        "n=20": {"runs": [], "median": [], "variant": [], "bed": []},
    }
    assert [s["median"] for p in data["points"] for s in p["series"]] == [[1.0, 1.01, 1.5],
                                                                          [2.0, 2.0, 1.0]]  # fmt: skip


def test_history_help_and_report_help_name_their_examples():
    for command in (["history", "--help"], ["report", "--help"]):
        result = invoke(*command)
        assert result.exit_code == 0 and "Example" in result.output


def test_writing_to_a_locked_store_waits_rather_than_failing(tmp_path):
    path = tmp_path / "h.sqlite"
    History.open(path).close()
    holder = subprocess.Popen([sys.executable, "-c", (
        f"import sqlite3, time; db = sqlite3.connect({str(path)!r}, isolation_level=None); "
        "db.execute('BEGIN IMMEDIATE'); print('locked', flush=True); time.sleep(1.5); "
        "db.execute('COMMIT')")], stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert holder.stdout.readline().strip() == "locked"
    started = time.perf_counter()
    with History.open(path) as store:
        store.append(result_set(), version=CodeVersion(None, None, "0.1.0"))
        assert len(store.runs()) == 1
    assert time.perf_counter() - started >= 1.0
    holder.wait(10)


def test_a_store_that_is_a_directory_is_refused_by_the_library_too(tmp_path):
    with pytest.raises(ConfigError, match="is not a file"):
        History.open(tmp_path)


def test_unwritable_places_are_one_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    one_line_error(invoke("history", "import", str(REPO / "configs/baselines/smoke-h100.json"),
                          "--store", str(blocker / "sub" / "h.sqlite")), 2,
                   "cannot create the history store's folder")  # fmt: skip
    store = tmp_path / "h.sqlite"
    with History.open(store) as h:
        h.append(result_set(), version=CodeVersion(None, None, "0.1.0"))
    one_line_error(invoke("report", "--store", str(store), "-o", str(blocker / "site")), 2,
                   "cannot write the report")  # fmt: skip


def test_the_cli_default_store_is_the_history_modules():
    from gpubench.cli.common import HISTORY_DEFAULT
    from gpubench.store.history import DEFAULT_PATH

    assert HISTORY_DEFAULT == DEFAULT_PATH


@pytest.mark.parametrize("run_id", ["99999999999999999999999", "0"])
def test_a_run_id_outside_sqlites_range_is_a_usage_error(tmp_path, run_id):
    store = tmp_path / "h.sqlite"
    History.open(store).close()
    for args in (["delete", run_id], ["export", run_id, "--json", str(tmp_path / "x.json")]):
        result = invoke("history", *args, "--store", str(store))
        assert result.exit_code == 2 and "is not in the range" in result.output
        assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("status", "dirty"), [(" M gpubench/x.py", True), ("", False), (None, None)]
)  # fmt: skip
def test_the_code_version_asks_git_for_the_commit_and_tracked_changes(monkeypatch, status, dirty):
    import subprocess

    from gpubench import __version__
    from gpubench.model import device

    calls = []

    def fake_git(args, **kwargs):
        calls.append((args, kwargs))
        if args[1] == "rev-parse":
            return subprocess.CompletedProcess(args, 0, stdout="abc123\n", stderr="")
        if status is None:
            return subprocess.CompletedProcess(args, 128, stdout="", stderr="fatal")
        return subprocess.CompletedProcess(args, 0, stdout=status + "\n", stderr="")

    monkeypatch.setattr(device.subprocess, "run", fake_git)
    version = code_version("/somewhere")
    assert (version.commit, version.dirty, version.gpubench) == ("abc123", dirty, __version__)
    assert [args for args, _ in calls] == [
        ["git", "rev-parse", "HEAD"], ["git", "status", "--porcelain", "--untracked-files=no"]]  # fmt: skip
    assert calls[0][1] == {"cwd": "/somewhere", "capture_output": True, "text": True,
                           "timeout": 10}  # fmt: skip


def test_a_git_that_hangs_or_is_missing_gives_no_commit(monkeypatch):
    import subprocess

    from gpubench.model import device

    def hangs(args, **kwargs):
        raise subprocess.TimeoutExpired(args, 10)

    monkeypatch.setattr(device.subprocess, "run", hangs)
    assert code_version().commit is None and code_version().dirty is None


def test_every_field_of_a_listed_run_and_filters_that_combine(tmp_path):
    with History.open(tmp_path / "deep" / "new" / "h.sqlite") as store:
        first = store.append(result_set(), label="nightly", source="a.json",
                             version=CodeVersion("ab" * 20, False, "0.9.1"))  # fmt: skip
        second = store.append(result_set("scale", (3.0,), "2026-11-19T03:00:00+00:00", "H100"),
                              label="nightly", version=CodeVersion(None, None, "0.9.2"))  # fmt: skip
        runs = store.runs()
        assert [r.id for r in runs] == [second, first]  # oldest first
        assert runs[1].to_dict() == {
            "id": first, "created": "2026-11-20T03:00:00+00:00", "suite": "scale",
            "label": "nightly", "commit": "ab" * 20, "dirty": False, "gpubench_version": "0.9.1",
            "gpu_name": "Fake GPU", "gpu_uuid": "GPU-Fake GPU", "backend": "fake",
            "source": "a.json", "results": 2}  # fmt: skip
        assert (runs[0].commit, runs[0].dirty, runs[0].results) == (None, None, 1)
        assert [r.id for r in store.runs(suite="scale", label="nightly", gpu="H100")] == [second]
        assert [r.id for r in store.runs(label="nightly", commit="abab")] == [first]
        assert store.runs(suite="scale", gpu="GPU-H100", commit="ab") == []


@pytest.mark.parametrize("case", ["directory", "missing"])
def test_a_store_that_cannot_be_opened_names_itself(tmp_path, case):
    path = tmp_path if case == "directory" else tmp_path / "none.sqlite"
    with pytest.raises(ConfigError) as info:
        History.open(path, create=False) if case == "missing" else History.open(path)
    message = "is not a file" if case == "directory" else "no such history store"
    assert str(info.value) == f"{path}: {message}" and info.value.source == str(path)


def test_opening_a_store_that_cannot_be_one_names_it(tmp_path):
    (tmp_path / "file").write_text("")
    for path, message in [
        (tmp_path / "file" / "h.sqlite", "cannot create the history store's folder (File exists)"),
        (tmp_path / "none.sqlite", "no such history store"),
    ]:  # fmt: skip
        with pytest.raises(ConfigError) as info:
            History.open(path, create=path.name != "none.sqlite")
        assert str(info.value) == f"{path}: {message}"
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(ConfigError) as info:
        History.open(junk)
    assert str(info.value) == f"{junk}: not a gpubench history store (file is not a database)"


def test_a_run_s_values_that_are_not_json_or_not_objects_are_stored_as_text_or_left_out(tmp_path):
    rs = result_set()
    rs.environment = {"device": "H100", "backend": ["x"], "where": Path("/a/b")}
    rs.spec = {"source": Path("s.yaml")}
    with History.open(tmp_path / "h.sqlite") as store:
        run_id = store.append(rs, version=CodeVersion(None, None, "0.1.0"))
        (run,) = store.runs()
        assert (str(store.path), run.id, run.source) == (str(tmp_path / "h.sqlite"), run_id, "")
        assert (run.gpu_name, run.backend) == (None, None)
        assert json.loads(store.environment(run_id))["where"] == "/a/b"
        with pytest.raises(ConfigError) as info:  # read back, the run is one line, no traceback
            store.result_set(run_id)
        assert str(info.value) == (
            f"{tmp_path / 'h.sqlite'} run {run_id}: environment.device: "
            "expected `object | null`, got `str` (found 'H100')"
        )
        rs.environment = {"device": {"name": "G"}, "where": Path("/a/b")}
        again = store.append(rs, version=CodeVersion(None, None, "0.1.0"), source="s.yaml")
        assert store.result_set(again).spec == {"source": "s.yaml"}
        assert store.runs()[-1].source == "s.yaml"


def test_a_stored_run_reads_back_exactly_and_its_series_carries_noise_and_metrics(tmp_path):
    rs = result_set(medians=(1.5,))
    rs.results[0].metrics = {"gbps": 12.5}
    bare = Result("scale", "v9", {"n": 7}, Status.SKIPPED)  # no summary: no noise
    rs.results.append(bare)
    with History.open(tmp_path / "h.sqlite") as store:
        run_id = store.append(rs, version=CodeVersion(None, None, "0.1.0"))
        back = store.result_set(run_id)
        assert (back.suite, back.created) == ("scale", "2026-11-20T03:00:00+00:00")
        assert back.spec == {"suite": "scale"}
        assert store.series("scale") == [
            (run_id, "v0", '{"n": 10}', "ok", 1.5, 0.01, '{"gbps":12.5}'),
            (run_id, "v9", '{"n": 7}', "skipped", None, None, "{}"),
        ]
        assert json.loads(store.environment(run_id)) == rs.environment
        assert store.environment(run_id + 1) == "{}"  # no such run: an empty record
        (run,) = store.runs()
        assert run.to_dict() == {
            "id": run_id, "created": "2026-11-20T03:00:00+00:00", "suite": "scale", "label": "",
            "commit": None, "dirty": None, "gpubench_version": "0.1.0", "gpu_name": "Fake GPU",
            "gpu_uuid": "GPU-Fake GPU", "backend": "fake", "source": "", "results": 2,
        }  # fmt: skip
        with pytest.raises(ConfigError) as info:
            store.result_set(run_id + 1)
        assert str(info.value) == f"{tmp_path / 'h.sqlite'}: no run {run_id + 1} in the store"


def test_a_store_of_another_schema_is_refused_with_its_path(tmp_path):
    path = tmp_path / "h.sqlite"
    History.open(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    db.commit()
    db.close()
    with pytest.raises(ConfigError) as info:
        History.open(path)
    from gpubench.store.history import SCHEMA_VERSION

    assert str(info.value) == f"{path}: history schema 99 is not this gpubench's ({SCHEMA_VERSION})"


def test_the_code_version_is_asked_of_the_working_folder_by_default(monkeypatch):
    from gpubench.model import device

    folders = []

    def fake_git(args, **kwargs):
        folders.append(kwargs["cwd"])
        return subprocess.CompletedProcess(args, 128, stdout="", stderr="not a repository")

    monkeypatch.setattr(device.subprocess, "run", fake_git)
    assert code_version().commit is None and folders == ["."]


def test_the_store_waits_for_a_busy_writer_and_runs_its_own_transactions(tmp_path, monkeypatch):
    """A second writer waits BUSY_TIMEOUT_S for the lock (not sqlite3's 5 s), and the
    connection is in autocommit mode: append and delete open their own BEGIN IMMEDIATE."""
    from gpubench.store import history

    opened = []
    real_connect = sqlite3.connect

    def connect(target, **kwargs):
        opened.append(kwargs)
        return real_connect(target, **kwargs)

    monkeypatch.setattr(history.sqlite3, "connect", connect)
    with History.open(tmp_path / "h.sqlite") as store:
        assert store._db.isolation_level is None
    assert opened == [{"timeout": history.BUSY_TIMEOUT_S, "isolation_level": None}]
    assert history.BUSY_TIMEOUT_S == 120


def test_import_keeps_the_code_version_the_file_records_and_null_where_it_has_none(tmp_path):
    recorded = result_set(created="2026-11-20T03:00:00+00:00")
    recorded.environment.update(git_commit="cd" * 20, git_dirty=True, gpubench_version="0.9.0")
    bare = result_set(created="2026-11-21T03:00:00+00:00")  # from before the fields existed
    save_json(recorded, tmp_path / "recorded.json")
    save_json(bare, tmp_path / "bare.json")
    store = tmp_path / "h.sqlite"
    # Run inside this repository: its commit must not be what the runs are stored with.
    out = invoke(
        "history",
        "import",
        str(tmp_path / "recorded.json"),
        str(tmp_path / "bare.json"),
        "--store",
        str(store),
    )
    assert out.exit_code == 0, out.output
    with History.open(store) as history:
        runs = history.runs()
    assert [(r.commit, r.dirty, r.gpubench_version) for r in runs] == [
        ("cd" * 20, True, "0.9.0"),
        (None, None, None),
    ]


@pytest.mark.parametrize(("environment", "expected"), [
    ({"git_commit": "ab", "git_dirty": False, "gpubench_version": "1.0"}, ("ab", False, "1.0")),
    ({"git_commit": "", "git_dirty": "yes", "gpubench_version": 3}, (None, None, None)),
    ({}, (None, None, None)),
    (None, (None, None, None)),
])  # fmt: skip
def test_the_recorded_version_takes_only_well_typed_fields(environment, expected):
    from gpubench.store.history import recorded_version

    version = recorded_version(environment)
    assert (version.commit, version.dirty, version.gpubench) == expected


def test_a_run_is_found_by_date_suite_card_and_results_and_not_imported_twice(tmp_path):
    with History.open(tmp_path / "h.sqlite") as store:
        first = store.append(result_set(), version=CodeVersion(None, None, "0.1.0"))
        assert store.find(result_set()) == first
        assert store.find(result_set(medians=(1.0, 2.5))) is None  # other results
        assert store.find(result_set(gpu="Other GPU")) is None  # another card
        assert store.find(result_set(created="2026-11-21T03:00:00+00:00")) is None
    save_json(result_set(), tmp_path / "r.json")
    out = invoke(
        "history",
        "import",
        str(tmp_path / "r.json"),
        str(tmp_path / "r.json"),
        "--store",
        str(tmp_path / "h.sqlite"),
    )
    assert out.exit_code == 0, out.output
    assert " ".join(out.output.split()) == (
        f"note: {tmp_path / 'r.json'} is run 1 of {tmp_path / 'h.sqlite'} already: skipped "
        f"note: {tmp_path / 'r.json'} is run 1 of {tmp_path / 'h.sqlite'} already: skipped "
        f"imported no run into {tmp_path / 'h.sqlite'}: every file is stored already"
    )
    assert len(History.open(tmp_path / "h.sqlite").runs()) == 1


def _loose_copy(store: Path, target: Path) -> Path:
    """The store rebuilt without its NOT NULL constraints: what another program (or a hand
    with the sqlite3 shell) could leave in it."""
    db, source = sqlite3.connect(target), sqlite3.connect(store)
    for table in ("meta", "runs", "results"):
        columns = [row[1] for row in source.execute(f"PRAGMA table_info({table})")]
        db.execute(f"CREATE TABLE {table} ({', '.join(columns)})")
        rows = source.execute(f"SELECT * FROM {table}").fetchall()
        db.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(columns))})", rows)
    db.commit()
    db.close()
    source.close()
    return target


HINT = "(a store edited by hand? `gpubench history delete` removes the run)"


@pytest.mark.parametrize(
    ("change", "command", "message"),
    [
        ("UPDATE runs SET label = NULL", "list", "run 1: label: expected text, got None"),
        (
            "UPDATE runs SET created = x'00ff'",
            "list",
            "run 1: created: expected text, got b'\\x00\\xff'",
        ),
        ("UPDATE runs SET dirty = 'yes'", "list", "run 1: dirty: expected 0, 1 or NULL, got 'yes'"),
        ("UPDATE runs SET suite = NULL", "report", "run 1: suite: expected text, got None"),
        (
            "UPDATE results SET median_ms = 'fast'",
            "report",
            "run 1: median_ms: expected a number or NULL, got 'fast'",
        ),
        (
            "UPDATE results SET rel_noise = x'01'",
            "report",
            "run 1: rel_noise: expected a number or NULL, got b'\\x01'",
        ),
        ("UPDATE results SET variant = NULL", "report", "run 1: variant: expected text, got None"),
        (
            "UPDATE results SET energy_joules_per_run = 'lots' WHERE run_id = 1",
            "report",
            "run 1: energy_joules_per_run: expected a finite number or NULL, got 'lots'",
        ),
        (
            "UPDATE results SET energy_joules_per_run = 0.5, energy_missing = 7",
            "report",
            "run 1: energy_missing: expected text or NULL, got 7",
        ),
        (
            "UPDATE results SET record = 'not json' WHERE run_id = 1",
            "report",
            "run 1: record: expected JSON text, got '<not JSON>'",
        ),
        (
            "UPDATE results SET record = 'not json' WHERE run_id = 1",
            "export",
            "run 1: record: expected JSON text, got 'not json'",
        ),
        (
            "UPDATE runs SET environment = NULL",
            "export",
            "run 1: environment: expected JSON text, got None",
        ),
        ("UPDATE runs SET spec = '{'", "export", "run 1: spec: expected JSON text, got '{'"),
    ],
)
def test_a_stored_value_of_the_wrong_type_is_one_line_naming_run_and_column(
    tmp_path, change, command, message
):
    store = tmp_path / "h.sqlite"
    with History.open(store) as h:  # run 2 is the latest: the report reads run 1 as a series
        h.append(result_set(), version=CodeVersion(None, None, "0.1.0"))
        h.append(result_set(created="2026-11-21T03:00:00+00:00"))
    loose = _loose_copy(store, tmp_path / "loose.sqlite")
    db = sqlite3.connect(loose)
    db.execute(change)
    db.commit()
    db.close()
    args = {
        "list": ["history", "list"],
        "report": ["report", "-o", str(tmp_path / "site")],
        "export": ["history", "export", "1", "--json", str(tmp_path / "x.json")],
    }[command]
    result = invoke(*args, "--store", str(loose))
    assert result.exit_code == 2, result.output
    assert " ".join(result.output.split()) == f"error: {loose} {message} {HINT}"


def test_a_gpu_uuid_stored_as_a_number_reads_as_its_text(tmp_path):
    store = tmp_path / "h.sqlite"
    with History.open(store) as h:
        h.append(result_set(), version=CodeVersion(None, None, "0.1.0"))
    loose = _loose_copy(store, tmp_path / "loose.sqlite")
    db = sqlite3.connect(loose)
    db.execute("UPDATE runs SET gpu_uuid = 42")
    db.commit()
    db.close()
    with History.open(loose) as h:
        assert h.runs()[0].gpu_uuid == "42"


def test_another_programs_database_is_refused_and_left_as_it_was(tmp_path):
    other = tmp_path / "app.sqlite"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE users (name TEXT)")
    db.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, x)")
    db.commit()
    db.close()
    for args in (
        ["history", "list"],
        ["history", "import", str(tmp_path / "none.json")],
        ["report", "-o", str(tmp_path / "site")],
        ["history", "delete", "1"],
    ):
        result = invoke(*args, "--store", str(other))
        if args[1] == "import":  # the file is read first: that is the error it names
            assert result.exit_code == 2
            continue
        assert result.exit_code == 2, result.output
        assert result.output.strip() == (
            f"error: {other}: not a gpubench history store (its tables: runs, users)"
        )
    db = sqlite3.connect(other)
    tables = sorted(row[0] for row in db.execute("SELECT name FROM sqlite_master"))
    assert tables == ["runs", "users"]  # nothing created in it
    db.close()


def test_a_store_lacking_a_column_is_refused(tmp_path):
    store = tmp_path / "h.sqlite"
    History.open(store).close()
    db = sqlite3.connect(store)
    db.execute("ALTER TABLE runs DROP COLUMN source")
    db.commit()
    db.close()
    result = invoke("history", "list", "--store", str(store))
    assert result.exit_code == 2
    assert result.output.strip() == (
        f"error: {store}: not a gpubench history store (table runs lacks source)"
    )


def test_reading_a_store_never_waits_for_a_writer(tmp_path):
    path = tmp_path / "h.sqlite"
    with History.open(path) as store:
        store.append(result_set(), version=CodeVersion(None, None, "0.1.0"))
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                f"import sqlite3, time; db = sqlite3.connect({str(path)!r}, isolation_level=None); "
                "db.execute('BEGIN IMMEDIATE'); print('locked', flush=True); time.sleep(20)"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        started = time.perf_counter()
        with History.open(path, create=False) as store:
            assert [r.id for r in store.runs()] == [1]
            assert store.result_set(1).suite == "scale"
        assert time.perf_counter() - started < 5
    finally:
        holder.kill()
        holder.wait(10)


@pytest.mark.parametrize(
    ("label", "message"),
    [
        ("x" * 100_000, "a label of 100,000 characters: at most 200"),
        ("a\nb", "a label holds the control character '\\n' at 1: give one line of printable text"),
        (
            "\x1b[31m",
            "a label holds the control character '\\x1b' at 0: give one line of printable text",
        ),
        (
            "tab\there",
            "a label holds the control character '\\t' at 3: give one line of printable text",
        ),
    ],
)
def test_a_label_is_one_short_line_of_text(tmp_path, label, message):
    with pytest.raises(ConfigError) as info:
        check_label(label)
    assert str(info.value) == f"command line: --label: {message}"
    results_file = tmp_path / "r.json"
    save_json(result_set(), str(results_file))
    store = tmp_path / "h.sqlite"
    imported = invoke(
        "history", "import", str(results_file), "--store", str(store), "--label", label
    )
    assert imported.exit_code == 2
    assert imported.output.strip() == f"error: command line: --label: {message}"
    assert not store.exists()  # refused before the store was made
    ran = invoke(
        "run",
        str(REPO / "tests" / "suites" / "scale.py"),
        "--history",
        str(store),
        "--label",
        label,
        env=FAKE,
    )
    assert ran.exit_code == 2 and ran.output.strip() == f"error: command line: --label: {message}"


def test_labels_that_are_fine(tmp_path):
    for label in ("", "nightly", "</script><b>", "x" * 200, "ünïcode · 夜"):
        check_label(label)


def test_an_empty_store_path_is_refused_not_taken_as_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for args in (["history", "list"], ["history", "delete", "1"], ["report"]):
        result = invoke(*args, "--store", "")
        assert result.exit_code == 2
        assert result.output.strip() == (
            "error: command line: --store: an empty path (''): give the store's file name"
        )
    with pytest.raises(ConfigError) as info:
        History.open("")
    assert str(info.value) == "history store: an empty path (''): give the store's file name"
    assert list(tmp_path.iterdir()) == []


def test_an_id_named_twice_is_deleted_once(tmp_path):
    store = tmp_path / "h.sqlite"
    with History.open(store) as h:
        h.append(result_set(), version=CodeVersion(None, None, "0.1.0"))
    result = invoke("history", "delete", "1", "1", "--store", str(store))
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"deleted 1 run(s) from {store}"


def test_the_commit_filter_is_a_prefix_not_a_pattern(tmp_path):
    with History.open(tmp_path / "h.sqlite") as store:
        store.append(result_set(), version=CodeVersion("ab" * 20, False, "0.1.0"))
        assert [r.id for r in store.runs(commit="abab")] == [1]
        assert store.runs(commit="%") == [] and store.runs(commit="_b") == []
        assert store.runs(commit="a" * 100_000) == []  # no "pattern too complex"


def test_list_shows_the_newest_runs_and_says_how_many_it_left_out(tmp_path):
    store = tmp_path / "h.sqlite"
    with History.open(store) as h:
        for day in range(1, 6):
            created = f"2026-11-0{day}T03:00:00+00:00"
            version = CodeVersion(None, None, "0.1.0")
            h.append(result_set(created=created), label=f"day{day}", version=version)
    args = ["history", "list", "--store", str(store), "--last", "2"]
    result = CliRunner().invoke(cli, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "day4" in result.output and "day5" in result.output and "day3" not in result.output
    assert result.output.strip().endswith("showing the newest 2 of 5 runs: --last 0 lists them all")
    every = invoke("history", "list", "--store", str(store), "--last", "0")
    assert all(f"day{day}" in every.output for day in range(1, 6))
    assert "showing" not in every.output


def test_import_reads_every_file_before_writing_and_holds_one_at_a_time(tmp_path, monkeypatch):
    from gpubench.model import results

    files = []
    for day in range(1, 4):
        path = tmp_path / f"r{day}.json"
        save_json(result_set(created=f"2026-11-0{day}T03:00:00+00:00"), str(path))
        files.append(str(path))
    (tmp_path / "bad.json").write_text("{")
    store = tmp_path / "h.sqlite"
    refused = invoke("history", "import", *files, str(tmp_path / "bad.json"), "--store", str(store))
    assert refused.exit_code == 2 and not store.exists()  # nothing written before the bad file
    reads = []
    load_any = results.load_any
    monkeypatch.setattr(results, "load_any", lambda path: reads.append(path) or load_any(path))
    assert invoke("history", "import", files[0], "--store", str(store)).exit_code == 0
    assert reads == [files[0]]  # one file: read once
    reads.clear()
    imported = invoke("history", "import", *files[1:], "--store", str(store))
    assert imported.exit_code == 0, imported.output
    assert reads == [files[1], files[2], files[1]]  # checked, then stored one at a time
    assert [run.created[:10] for run in History.open(store).runs()] == [
        "2026-11-01",
        "2026-11-02",
        "2026-11-03",
    ]


def test_writing_a_read_only_store_is_one_line_and_changes_nothing(tmp_path):
    path = tmp_path / "h.sqlite"
    with History.open(path) as store:
        store.append(result_set(), version=CodeVersion(None, None, "0.1.0"))
    # A read-only connection stands for a read-only file (permission bits do not stop root).
    read_only = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    with History(path, read_only) as store:
        for write in (
            lambda: store.append(result_set(created="2026-11-22T03:00:00+00:00")),
            lambda: store.delete([1]),
        ):
            with pytest.raises(ConfigError) as info:
                write()
            assert str(info.value) == (
                f"{path}: cannot write the history store (attempt to write a readonly database)"
            )
            assert not read_only.in_transaction
        assert [run.id for run in store.runs()] == [1]
