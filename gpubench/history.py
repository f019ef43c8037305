"""The history of runs: one SQLite file (the standard library, no server) that `run` and
`sweep` append to with `--history`, that `gpubench history` lists, imports into, exports and
prunes, and that `gpubench report` draws.

Each run is one row of `runs` (when, which suite, label, code version, GPU, backend, the whole
environment record and sweep) and one row of `results` per result (its identity and median for
queries, and the result record itself). A run is written in one IMMEDIATE transaction: several
processes appending at once wait for each other (WAL journal, a generous busy timeout), and a
process killed mid-write leaves the store as it was before that run.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpubench.errors import ConfigError
from gpubench.results import Result, ResultSet, point_key

DEFAULT_PATH = "results/history.sqlite"
SCHEMA_VERSION = 1
# Writers wait this long for another writer's transaction before giving up with one line.
BUSY_TIMEOUT_S = 120
# What a result keeps in the store: everything but its per-step timeline and host phases.
_HEAVY = ("timeline", "phases")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created TEXT NOT NULL,
    suite TEXT NOT NULL,
    label TEXT NOT NULL DEFAULT '',
    git_commit TEXT,
    dirty INTEGER,
    gpubench_version TEXT,
    gpu_name TEXT,
    gpu_uuid TEXT,
    backend TEXT,
    source TEXT NOT NULL DEFAULT '',
    environment TEXT NOT NULL,
    spec TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS results (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    variant TEXT NOT NULL,
    point TEXT NOT NULL,
    status TEXT NOT NULL,
    median_ms REAL,
    rel_noise REAL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS results_run ON results(run_id);
CREATE INDEX IF NOT EXISTS runs_suite ON runs(suite, created);
"""


@dataclass(frozen=True)
class CodeVersion:
    """Which code measured: the git commit and whether the tree had changes, inside a
    repository; the gpubench version always."""

    commit: str | None
    dirty: bool | None
    gpubench: str | None


@dataclass(frozen=True)
class Run:
    id: int
    created: str
    suite: str
    label: str
    commit: str | None
    dirty: bool | None
    gpubench_version: str | None
    gpu_name: str | None
    gpu_uuid: str | None
    backend: str | None
    source: str
    results: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def code_version(directory: str | os.PathLike[str] = ".") -> CodeVersion:
    from gpubench import __version__

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=directory, capture_output=True, text=True,
                                  timeout=10)  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return CodeVersion(None, None, __version__)
    status = git("status", "--porcelain", "--untracked-files=no")
    return CodeVersion(commit, bool(status) if status is not None else None, __version__)


def recorded_version(environment: dict[str, Any] | None) -> CodeVersion:
    """The code version a results file records (its environment's `git_commit`, `git_dirty`
    and `gpubench_version`): what measured it, wherever it is imported from. A field the file
    lacks, or holds in another type, is None: never the commit of the folder importing it."""
    env = environment if isinstance(environment, dict) else {}
    commit, dirty, version = (
        env.get("git_commit"),
        env.get("git_dirty"),
        env.get("gpubench_version"),
    )
    return CodeVersion(
        commit if isinstance(commit, str) and commit else None,
        dirty if isinstance(dirty, bool) else None,
        version if isinstance(version, str) else None,
    )


def run_digest(created: str, suite: str, gpu_uuid: object, records: list[str]) -> str:
    """What identifies a run across imports: its date, suite, card and every stored result
    record (as the store keeps them, so a stored run's digest is computed from the store)."""
    digest = hashlib.sha256()
    for part in (created, suite, str(gpu_uuid), *records):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


class History:
    """An open store. `History.open(path)` creates it where there is none."""

    def __init__(self, path: str | os.PathLike[str], connection: sqlite3.Connection) -> None:
        self.path = str(path)
        self._db = connection

    @classmethod
    def open(cls, path: str | os.PathLike[str], create: bool = True) -> History:
        target = Path(path)
        if target.exists() and not target.is_file():
            raise ConfigError("is not a file", source=str(path))
        if not target.exists():
            if not create:
                raise ConfigError("no such history store", source=str(path))
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ConfigError(f"cannot create the history store's folder ({exc.strerror})",
                                  source=str(path)) from None  # fmt: skip
        try:
            db = sqlite3.connect(target, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA foreign_keys=ON")
            store = cls(path, db)
            store._initialise()
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f"not a gpubench history store ({exc})", source=str(path)) from None
        return store

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _initialise(self) -> None:
        with self._write():
            for statement in filter(str.strip, _SCHEMA.split(";")):
                self._db.execute(statement)
            row = self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None:
                self._db.execute("INSERT INTO meta VALUES ('schema_version', ?)",
                                 (str(SCHEMA_VERSION),))  # fmt: skip
            elif row[0] != str(SCHEMA_VERSION):
                raise ConfigError(f"history schema {row[0]} is not this gpubench's "
                                  f"({SCHEMA_VERSION})", source=self.path)  # fmt: skip

    @contextmanager
    def _write(self) -> Iterator[None]:
        """One IMMEDIATE transaction: other writers wait; an error or a kill rolls it back."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise ConfigError(f"cannot write the history store ({exc})", source=self.path) from None
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # -- writing ----------------------------------------------------------------------------
    def append(self, result_set: ResultSet, label: str = "", version: CodeVersion | None = None,
               source: str = "") -> int:  # fmt: skip
        """Store one run; its id."""
        env = result_set.environment or {}
        # A results file that records its code version (every one gpubench writes now) is
        # stored with it; else the working folder's, which is what just measured.
        version = version or (recorded_version(env) if "git_commit" in env else code_version())
        device = env.get("device") if isinstance(env.get("device"), dict) else {}
        backend = env.get("backend") if isinstance(env.get("backend"), dict) else {}
        rows = [_result_row(r) for r in result_set.results]
        with self._write():
            cursor = self._db.execute(
                "INSERT INTO runs (created, suite, label, git_commit, dirty, gpubench_version, "
                "gpu_name, gpu_uuid, backend, source, environment, spec) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (result_set.created, result_set.suite, label, version.commit,
                 None if version.dirty is None else int(version.dirty), version.gpubench,
                 device.get("name"), env.get("gpu_uuid"), backend.get("name"), source,
                 json.dumps(env, default=str), json.dumps(result_set.spec, default=str)),
            )  # fmt: skip
            run_id = int(cursor.lastrowid or 0)
            self._db.executemany("INSERT INTO results VALUES (?, ?, ?, ?, ?, ?, ?)",
                                 [(run_id, *row) for row in rows])  # fmt: skip
        return run_id

    def find(self, result_set: ResultSet) -> int | None:
        """The id of the stored run this results file is (same date, suite, card and result
        records), or None: the candidates share its date and suite, so this reads only them."""
        env = result_set.environment or {}
        uuid = env.get("gpu_uuid")
        records = [_result_row(r)[-1] for r in result_set.results]
        wanted = run_digest(result_set.created, result_set.suite, uuid, records)
        candidates = self._db.execute(
            "SELECT id, gpu_uuid FROM runs WHERE suite = ? AND created = ? ORDER BY id",
            (result_set.suite, result_set.created),
        ).fetchall()
        for run_id, stored_uuid in candidates:
            stored = [row[0] for row in self._db.execute(
                "SELECT record FROM results WHERE run_id = ? ORDER BY rowid", (run_id,))]  # fmt: skip
            if run_digest(result_set.created, result_set.suite, stored_uuid, stored) == wanted:
                return int(run_id)
        return None

    def delete(self, run_ids: list[int]) -> int:
        """Remove these runs; how many there were."""
        with self._write():
            found = [i for i in run_ids
                     if self._db.execute("SELECT 1 FROM runs WHERE id=?", (i,)).fetchone()]  # fmt: skip
            for run_id in found:
                self._db.execute("DELETE FROM results WHERE run_id=?", (run_id,))
                self._db.execute("DELETE FROM runs WHERE id=?", (run_id,))
        return len(found)

    # -- reading ----------------------------------------------------------------------------
    def runs(self, suite: str | None = None, gpu: str | None = None, label: str | None = None,
             commit: str | None = None) -> list[Run]:  # fmt: skip
        """Runs, oldest first; `gpu` matches the model name or UUID, `commit` a prefix."""
        where, args = [], []
        for clause, value in (("suite = ?", suite), ("label = ?", label),
                              ("(gpu_name = ? OR gpu_uuid = ?)", gpu),
                              ("git_commit LIKE ? || '%'", commit)):  # fmt: skip
            if value is not None:
                where.append(clause)
                args += [value] * clause.count("?")
        sql = ("SELECT r.id, r.created, r.suite, r.label, r.git_commit, r.dirty, "
               "r.gpubench_version, r.gpu_name, r.gpu_uuid, r.backend, r.source, "
               "(SELECT COUNT(*) FROM results WHERE run_id = r.id) FROM runs r"
               + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY r.created, r.id")  # fmt: skip
        return [Run(row[0], row[1], row[2], row[3], row[4], None if row[5] is None else bool(row[5]),
                    *row[6:]) for row in self._db.execute(sql, args)]  # fmt: skip

    def result_set(self, run_id: int) -> ResultSet:
        """One run as the results file it was (less timelines and phases)."""
        row = self._db.execute("SELECT suite, created, environment, spec FROM runs WHERE id=?",
                               (run_id,)).fetchone()  # fmt: skip
        if row is None:
            raise ConfigError(f"no run {run_id} in the store", source=self.path)
        records = [json.loads(r[0]) for r in self._db.execute(
            "SELECT record FROM results WHERE run_id=? ORDER BY rowid", (run_id,))]  # fmt: skip
        return ResultSet.from_dict({"schema_version": 1, "created": row[1], "suite": row[0],
                                    "environment": json.loads(row[2]), "spec": json.loads(row[3]),
                                    "results": records}, source=f"{self.path} run {run_id}")  # fmt: skip

    def series(self, suite: str) -> list[tuple[int, str, str, str, float | None, float | None,
                                              str | None]]:  # fmt: skip
        """(run id, variant, point key, status, median ms, noise, metrics as JSON text) of
        every result of a suite, in run order: what the report draws, without parsing whole
        result records."""
        return list(self._db.execute(
            "SELECT x.run_id, x.variant, x.point, x.status, x.median_ms, x.rel_noise, "
            "json_extract(x.record, '$.metrics') "
            "FROM results x JOIN runs r ON r.id = x.run_id WHERE r.suite = ? "
            "ORDER BY r.created, r.id", (suite,)))  # fmt: skip

    def environment(self, run_id: int) -> str:
        """The run's environment record, as stored (JSON text)."""
        row = self._db.execute("SELECT environment FROM runs WHERE id=?", (run_id,)).fetchone()
        return row[0] if row else "{}"

    def suites(self) -> list[str]:
        return [r[0] for r in self._db.execute("SELECT DISTINCT suite FROM runs ORDER BY suite")]


def _result_row(result: Result) -> tuple[str, str, str, float | None, float | None, str]:
    record = {k: v for k, v in result.to_dict().items() if k not in _HEAVY}
    summary = result.summary or {}
    return (result.variant, point_key(result.point), str(result.status.value),
            result.median_ms, summary.get("rel_noise"), json.dumps(record, default=str))  # fmt: skip
