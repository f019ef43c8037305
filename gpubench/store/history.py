"""The history of runs: one SQLite file (the standard library, no server) that `run` and
`sweep` append to with `--history`, that `gpubench history` lists, imports into, exports and
prunes, and that `gpubench report` draws.

Each run is one row of `runs` (when, which suite, label, code version, GPU, backend, the whole
environment record and sweep) and one row of `results` per result (its identity, median and
energy for queries, and the result record itself). A run is written in one IMMEDIATE
transaction: several processes appending at once wait for each other (WAL journal, a generous
busy timeout), and a process killed mid-write leaves the store as it was before that run.

Schema 2 added the energy columns: a store of schema 1 gets them (filled from its records)
the first time it is opened, or where it cannot be written, is read as it is.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpubench.errors import ConfigError
from gpubench.model.device import CodeVersion, code_version
from gpubench.model.results import HISTORY_DEFAULT_PATH, Result, ResultSet, point_key

DEFAULT_PATH = HISTORY_DEFAULT_PATH
# 2: the energy columns of results (schema 1 had none; such a store is upgraded on opening).
SCHEMA_VERSION = 2
UPGRADABLE = ("1",)
# Writers wait this long for another writer's transaction before giving up with one line.
BUSY_TIMEOUT_S = 120
# What a result keeps in the store: everything but its per-step timeline and host phases.
_HEAVY = ("timeline", "phases")
# A run's label is one line of text a list and a web page show whole: this long at most.
MAX_LABEL = 200
# The tables and columns gpubench reads: a file that lacks one is not a store of this version.
_TABLES = {
    "meta": ("key", "value"),
    "runs": (
        "id",
        "created",
        "suite",
        "label",
        "git_commit",
        "dirty",
        "gpubench_version",
        "gpu_name",
        "gpu_uuid",
        "backend",
        "source",
        "environment",
        "spec",
    ),
    "results": ("run_id", "variant", "point", "status", "median_ms", "rel_noise", "record"),
}
# The fields of a result's energy the store keeps as columns of results (for queries and the
# report, beside the whole reading in the record): column energy_<field>, its SQL type.
ENERGY_FIELDS = (
    ("joules_per_run", "REAL"),
    ("average_watts", "REAL"),
    ("idle_watts", "REAL"),
    ("noise", "REAL"),
    ("sm_clock_mhz", "REAL"),
    ("missing", "TEXT"),
)
ENERGY_COLUMNS = tuple(f"energy_{name}" for name, _ in ENERGY_FIELDS)
_RESULT_COLUMNS = (*_TABLES["results"], *ENERGY_COLUMNS)

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
    record TEXT NOT NULL,
    energy_joules_per_run REAL,
    energy_average_watts REAL,
    energy_idle_watts REAL,
    energy_noise REAL,
    energy_sm_clock_mhz REAL,
    energy_missing TEXT
);
CREATE INDEX IF NOT EXISTS results_run ON results(run_id);
CREATE INDEX IF NOT EXISTS runs_suite ON runs(suite, created);
"""


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


@dataclass(frozen=True)
class StoredEnergy:
    """A result's energy as the store's columns keep it: the main figures of its reading
    (gpubench.model.energy.EnergyReading; the record keeps all of them), or why a verified
    result has none (`missing`)."""

    joules_per_run: float | None = None
    average_watts: float | None = None
    idle_watts: float | None = None
    noise: float | None = None
    sm_clock_mhz: float | None = None
    missing: str | None = None


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


def check_label(label: str, option: str = "--label") -> None:
    """Refuse a label that is not one short line of text (a list shows one run a line)."""
    if len(label) > MAX_LABEL:
        raise ConfigError(
            f"a label of {len(label):,} characters: at most {MAX_LABEL}",
            source="command line",
            key=option,
        )
    for index, char in enumerate(label):
        if not char.isprintable() and char != " ":
            raise ConfigError(
                f"a label holds the control character {char!r} at {index}: give one line of "
                "printable text",
                source="command line",
                key=option,
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
        # The schema the store is read as: a store of an older one that could not be
        # upgraded (a read-only file) is read as it is, its energy from the records.
        self.schema = SCHEMA_VERSION

    @classmethod
    def open(cls, path: str | os.PathLike[str], create: bool = True) -> History:
        if not str(path).strip():  # Path("") is the working directory: never what was meant
            raise ConfigError(
                "an empty path (''): give the store's file name", source="history store"
            )
        target = Path(path)
        if target.exists() and not target.is_file():
            raise ConfigError("is not a file", source=str(path))
        if not target.exists():
            if not create:
                raise ConfigError("no such history store", source=str(path))
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ConfigError(
                    f"cannot create the history store's folder ({exc.strerror})", source=str(path)
                ) from None
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
        """Check the file is a store of this version; create what a new one lacks. A store
        that has everything is only read: a reader never waits for another writer."""
        tables = {
            name
            for (name,) in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if tables and "meta" not in tables:  # another program's database: never written to
            others = ", ".join(sorted(tables - {"sqlite_sequence"})[:5])
            raise ConfigError(
                f"not a gpubench history store (its tables: {others})", source=self.path
            )
        if not (tables >= _TABLES.keys() and self._stored_version() is not None):
            self._create()
        if self._stored_version() in UPGRADABLE:
            self._upgrade()
        else:
            self._check_version()
        self._check_columns()

    def _stored_version(self) -> object:
        row = self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        return None if row is None else row[0]

    def _check_version(self) -> None:
        version = self._stored_version()
        if version != str(SCHEMA_VERSION):
            raise ConfigError(
                f"history schema {version} is not this gpubench's ({SCHEMA_VERSION})",
                source=self.path,
            )

    def _columns(self, table: str) -> set[str]:
        return {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}

    def _check_columns(self) -> None:
        tables = dict(_TABLES)
        if self.schema == SCHEMA_VERSION:
            tables["results"] = _RESULT_COLUMNS
        for table, wanted in tables.items():
            have = self._columns(table)
            missing = [column for column in wanted if column not in have]
            if missing:
                raise ConfigError(
                    f"not a gpubench history store (table {table} lacks {', '.join(missing)})",
                    source=self.path,
                )

    def _create(self) -> None:
        with self._write():
            for statement in filter(str.strip, _SCHEMA.split(";")):
                self._db.execute(statement)
            row = self._db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None:
                self._db.execute(
                    "INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
                )
            elif row[0] != str(SCHEMA_VERSION) and row[0] not in UPGRADABLE:
                raise ConfigError(
                    f"history schema {row[0]} is not this gpubench's ({SCHEMA_VERSION})",
                    source=self.path,
                )

    def _upgrade(self) -> None:
        """Bring a store of schema 1 to this one where it can be written; else read it as it
        is (a read-only file still lists, exports and reports; writing to it says why not)."""
        try:
            self._write_upgrade()
        except ConfigError:
            self.schema = int(str(self._stored_version()))

    def _write_upgrade(self) -> None:
        """The energy columns, filled from the records that hold an energy (a store written
        by the gpubench that first measured energy), in one transaction: a process killed
        mid-way leaves the store of schema 1; one that finds another upgraded it stops."""
        with self._write():
            if self._stored_version() in UPGRADABLE:
                have = self._columns("results")
                for column, (_, kind) in zip(ENERGY_COLUMNS, ENERGY_FIELDS, strict=True):
                    if column not in have:
                        self._db.execute(f"ALTER TABLE results ADD COLUMN {column} {kind}")
                self._db.execute(
                    f"UPDATE results SET ({', '.join(ENERGY_COLUMNS)}) = "
                    f"({', '.join(_energy_in_record('record'))}) WHERE CASE WHEN json_valid(record) "
                    "THEN json_type(record, '$.energy') = 'object' ELSE 0 END"
                )
                self._db.execute(
                    "UPDATE meta SET value = ? WHERE key = 'schema_version'",
                    (str(SCHEMA_VERSION),),
                )
        self.schema = SCHEMA_VERSION

    @contextmanager
    def _write(self) -> Iterator[None]:
        """One IMMEDIATE transaction: other writers wait; an error or a kill rolls it back."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise ConfigError(f"cannot write the history store ({exc})", source=self.path) from None
        try:
            yield
            self._db.execute("COMMIT")
        except sqlite3.DatabaseError as exc:  # a read-only file or folder, a full disk
            self._roll_back()
            raise ConfigError(f"cannot write the history store ({exc})", source=self.path) from None
        except BaseException:
            self._roll_back()
            raise

    def _roll_back(self) -> None:
        if self._db.in_transaction:  # a failed COMMIT may have ended it already
            self._db.execute("ROLLBACK")

    # -- writing ----------------------------------------------------------------------------
    def append(
        self,
        result_set: ResultSet,
        label: str = "",
        version: CodeVersion | None = None,
        source: str = "",
    ) -> int:
        """Store one run; its id."""
        if self.schema != SCHEMA_VERSION:
            self._write_upgrade()  # says in one line why the store cannot be written
        env = result_set.environment or {}
        # A results file that records its code version (every one gpubench writes now) is
        # stored with it; else the working folder's, which is what just measured.
        version = version or (recorded_version(env) if "git_commit" in env else code_version())
        device = env.get("device") if isinstance(env.get("device"), dict) else {}
        backend = env.get("backend") if isinstance(env.get("backend"), dict) else {}
        rows = [(*_result_row(r), *_energy_row(r.energy)) for r in result_set.results]
        with self._write():
            cursor = self._db.execute(
                "INSERT INTO runs (created, suite, label, git_commit, dirty, gpubench_version, "
                "gpu_name, gpu_uuid, backend, source, environment, spec) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    result_set.created,
                    result_set.suite,
                    label,
                    version.commit,
                    None if version.dirty is None else int(version.dirty),
                    version.gpubench,
                    device.get("name"),
                    env.get("gpu_uuid"),
                    backend.get("name"),
                    source,
                    json.dumps(env, default=str),
                    json.dumps(result_set.spec, default=str),
                ),
            )
            run_id = int(cursor.lastrowid or 0)
            self._db.executemany(
                f"INSERT INTO results ({', '.join(_RESULT_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(_RESULT_COLUMNS))})",
                [(run_id, *row) for row in rows],
            )
        return run_id

    def find(self, result_set: ResultSet) -> int | None:
        """The id of the stored run this results file is (same date, suite, card and result
        records), or None: the candidates share its date and suite, so this reads only them."""
        env = result_set.environment or {}
        uuid = env.get("gpu_uuid")
        records = [_result_row(r)[-1] for r in result_set.results]
        wanted = run_digest(result_set.created, result_set.suite, uuid, records)
        candidates = self._read(
            "SELECT id, gpu_uuid FROM runs WHERE suite = ? AND created = ? ORDER BY id",
            (result_set.suite, result_set.created),
        )
        for run_id, stored_uuid in candidates:
            # str(): a record of another type (a store edited by hand) is simply not this run.
            stored = [
                str(row[0])
                for row in self._read(
                    "SELECT record FROM results WHERE run_id = ? ORDER BY rowid", (run_id,)
                )
            ]
            if run_digest(result_set.created, result_set.suite, stored_uuid, stored) == wanted:
                return int(run_id)
        return None

    def delete(self, run_ids: list[int]) -> int:
        """Remove these runs; how many there were (an id named twice counts once)."""
        run_ids = list(dict.fromkeys(run_ids))
        with self._write():
            found = [
                i
                for i in run_ids
                if self._db.execute("SELECT 1 FROM runs WHERE id=?", (i,)).fetchone()
            ]
            for run_id in found:
                self._db.execute("DELETE FROM results WHERE run_id=?", (run_id,))
                self._db.execute("DELETE FROM runs WHERE id=?", (run_id,))
        return len(found)

    # -- reading ----------------------------------------------------------------------------
    def runs(
        self,
        suite: str | None = None,
        gpu: str | None = None,
        label: str | None = None,
        commit: str | None = None,
    ) -> list[Run]:
        """Runs, oldest first; `gpu` matches the model name or UUID, `commit` a prefix."""
        where, args = [], []
        for clause, value in (
            ("suite = ?", suite),
            ("label = ?", label),
            ("(gpu_name = ? OR gpu_uuid = ?)", gpu),
            ("substr(git_commit, 1, length(?)) = ?", commit),
        ):
            if value is not None:
                where.append(clause)
                args += [value] * clause.count("?")
        sql = (
            "SELECT r.id, r.created, r.suite, r.label, r.git_commit, r.dirty, "
            "r.gpubench_version, r.gpu_name, r.gpu_uuid, r.backend, r.source, "
            "(SELECT COUNT(*) FROM results WHERE run_id = r.id) FROM runs r"
            + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY r.created, r.id"
        )
        return [self._run(row) for row in self._read(sql, args)]

    def _run(self, row: tuple[Any, ...]) -> Run:
        """A runs row as a Run, each value checked: a store edited by hand or written by
        another program must not reach a table or a page in a type nobody expects."""
        run_id = row[0]
        where = f"run {run_id}"
        texts = [
            _text(self.path, where, column, value, nullable=column in _NULLABLE)
            for column, value in zip(_RUN_TEXTS, (*row[1:5], *row[6:11]), strict=True)
        ]
        dirty = row[5]
        if dirty is not None and not isinstance(dirty, int):
            raise _bad_row(self.path, where, "dirty", "0, 1 or NULL", dirty)
        created, suite, label, commit, version, gpu_name, gpu_uuid, backend, source = texts
        return Run(
            run_id,
            created,
            suite,
            label,
            commit,
            None if dirty is None else bool(dirty),
            version,
            gpu_name,
            gpu_uuid,
            backend,
            source,
            row[11],
        )

    def _read(self, sql: str, args: tuple[Any, ...] | list[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of a query; a file that turns out damaged is one line naming the store."""
        try:
            return self._db.execute(sql, args).fetchall()
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f"cannot read the history store ({exc})", source=self.path) from None

    def _json(self, run_id: int, column: str, text: object) -> Any:
        where = f"run {run_id}"
        if not isinstance(text, str):
            raise _bad_row(self.path, where, column, "JSON text", text)
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            raise _bad_row(self.path, where, column, "JSON text", text) from None

    def result_set(self, run_id: int) -> ResultSet:
        """One run as the results file it was (less timelines and phases)."""
        found = self._read(
            "SELECT suite, created, environment, spec FROM runs WHERE id=?", (run_id,)
        )
        if not found:
            raise ConfigError(f"no run {run_id} in the store", source=self.path)
        suite, created, environment, spec = found[0]
        stored = self._read("SELECT record FROM results WHERE run_id=? ORDER BY rowid", (run_id,))
        records = [self._json(run_id, "record", row[0]) for row in stored]
        return ResultSet.from_dict(
            {
                "schema_version": 1,
                "created": created,
                "suite": suite,
                "environment": self._json(run_id, "environment", environment),
                "spec": self._json(run_id, "spec", spec),
                "results": records,
            },
            source=f"{self.path} run {run_id}",
        )

    def series(
        self, suite: str
    ) -> list[tuple[int, str, str, str, float | None, float | None, str | None]]:
        """(run id, variant, point key, status, median ms, noise, metrics as JSON text) of
        every result of a suite, in run order: what the report draws, without parsing whole
        result records."""
        rows = self._read(
            "SELECT x.run_id, x.variant, x.point, x.status, x.median_ms, x.rel_noise, "
            "CASE WHEN json_valid(x.record) THEN json_extract(x.record, '$.metrics') END, "
            "json_valid(x.record) FROM results x JOIN runs r ON r.id = x.run_id "
            "WHERE r.suite = ? ORDER BY r.created, r.id",
            (suite,),
        )
        return [self._series_row(row) for row in rows]

    def _series_row(self, row: tuple[Any, ...]) -> tuple[Any, ...]:
        run_id, variant, point, status, median, noise, metrics, valid = row
        where = f"run {run_id}"
        if not valid:
            raise _bad_row(self.path, where, "record", "JSON text", "<not JSON>")
        for column, value in (("variant", variant), ("point", point), ("status", status)):
            _text(self.path, where, column, value, nullable=False, numbers=False)
        for column, value in (("median_ms", median), ("rel_noise", noise)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float)
            ):
                raise _bad_row(self.path, where, column, "a number or NULL", value)
        if metrics is not None and not isinstance(metrics, str):
            metrics = None  # a record whose metrics are not an object: nothing to draw
        return (run_id, variant, point, status, median, noise, metrics)

    def _energy_columns(self) -> list[str]:
        """The energy columns of results (alias x) as SQL expressions: the columns themselves,
        or where the store is read as schema 1, the same fields from the records."""
        if self.schema == SCHEMA_VERSION:
            return [f"x.{column}" for column in ENERGY_COLUMNS]
        return _energy_in_record("x.record")

    def energy(self, run_id: int) -> list[tuple[str, str, StoredEnergy | None]]:
        """(variant, point key, energy) of each result of a run, in the order stored; None
        for a result without energy (not asked for)."""
        rows = self._read(
            f"SELECT x.variant, x.point, {', '.join(self._energy_columns())} FROM results x "
            "WHERE x.run_id = ? ORDER BY x.rowid",
            (run_id,),
        )
        where = f"run {run_id}"
        found = []
        for variant, point, *values in rows:
            for column, value in (("variant", variant), ("point", point)):
                _text(self.path, where, column, value, nullable=False, numbers=False)
            found.append((variant, point, _stored_energy(self.path, where, values)))
        return found

    def energy_series(
        self, suite: str
    ) -> list[tuple[int, str, str, str, float | None, StoredEnergy]]:
        """(run id, variant, point key, status, median ms, energy) of every result of a
        suite that has an energy per run, in run order: what the report's energy charts
        draw, without parsing whole result records."""
        columns = self._energy_columns()
        rows = self._read(
            f"SELECT x.run_id, x.variant, x.point, x.status, x.median_ms, {', '.join(columns)} "
            "FROM results x JOIN runs r ON r.id = x.run_id WHERE r.suite = ? "
            f"AND ({columns[0]}) IS NOT NULL ORDER BY r.created, r.id, x.rowid",
            (suite,),
        )
        found = []
        for run_id, variant, point, status, median, *values in rows:
            # The same checks as the time series' (the record is not read here).
            self._series_row((run_id, variant, point, status, median, None, None, 1))
            energy = _stored_energy(self.path, f"run {run_id}", values)
            assert energy is not None  # its joules are not NULL
            found.append((run_id, variant, point, status, median, energy))
        return found

    def environment(self, run_id: int) -> str:
        """The run's environment record, as stored (JSON text)."""
        rows = self._read("SELECT environment FROM runs WHERE id=?", (run_id,))
        return rows[0][0] if rows and isinstance(rows[0][0], str) else "{}"

    def suites(self) -> list[str]:
        rows = self._read("SELECT MIN(id), suite FROM runs GROUP BY suite ORDER BY suite")
        for run_id, suite in rows:
            _text(self.path, f"run {run_id}", "suite", suite, nullable=False, numbers=False)
        return [row[1] for row in rows]


# The runs columns read as text, in the order Run holds them; those that may be NULL.
_RUN_TEXTS = (
    "created",
    "suite",
    "label",
    "git_commit",
    "gpubench_version",
    "gpu_name",
    "gpu_uuid",
    "backend",
    "source",
)
_NULLABLE = {"git_commit", "gpubench_version", "gpu_name", "gpu_uuid", "backend"}


def _bad_row(path: str, where: str, column: str, expected: str, value: object) -> ConfigError:
    from gpubench.errors import quote

    return ConfigError(
        f"{column}: expected {expected}, got {quote(value)} (a store edited "
        f"by hand? `gpubench history delete` removes the run)",
        source=f"{path} {where}",
    )


def _text(
    path: str, where: str, column: str, value: object, *, nullable: bool, numbers: bool = True
) -> str | None:
    """A text column's value: text; NULL where the column allows it; a number as its text
    where `numbers` (what SQLite's own text affinity would have stored)."""
    if isinstance(value, str) or (value is None and nullable):
        return value
    if numbers and isinstance(value, int | float):
        return str(value)
    raise _bad_row(path, where, column, "text" + (" or NULL" if nullable else ""), value)


def _energy_in_record(record: str) -> list[str]:
    """The energy columns' values read from a record (SQL expressions over `record`)."""
    return [
        f"CASE WHEN json_valid({record}) THEN json_extract({record}, '$.energy.{name}') END"
        for name, _ in ENERGY_FIELDS
    ]


def _energy_row(energy: dict[str, Any] | None) -> tuple[float | str | None, ...]:
    """The energy columns of a result: its reading's figures (a number that is not finite is
    unknown: NULL), or why it has none; NULL throughout for a result without energy."""
    energy = energy or {}
    values: list[float | str | None] = []
    for name, kind in ENERGY_FIELDS:
        value = energy.get(name)
        if kind == "TEXT":
            values.append(value if isinstance(value, str) else None)
        else:
            values.append(float(value) if _finite_number(value) else None)
    return tuple(values)


def _finite_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _stored_energy(path: str, where: str, values: list[Any]) -> StoredEnergy | None:
    """The energy columns of a row, each checked (a store edited by hand); None where they
    are all NULL."""
    if all(value is None for value in values):
        return None
    for column, (_, kind), value in zip(ENERGY_COLUMNS, ENERGY_FIELDS, values, strict=True):
        if value is None:
            continue
        if kind == "TEXT" and not isinstance(value, str):
            raise _bad_row(path, where, column, "text or NULL", value)
        if kind == "REAL" and not _finite_number(value):
            raise _bad_row(path, where, column, "a finite number or NULL", value)
    return StoredEnergy(
        *(
            float(value) if kind == "REAL" and value is not None else value
            for (_, kind), value in zip(ENERGY_FIELDS, values, strict=True)
        )
    )


def _result_row(result: Result) -> tuple[str, str, str, float | None, float | None, str]:
    record = {k: v for k, v in result.to_dict().items() if k not in _HEAVY}
    summary = result.summary or {}
    return (
        result.variant,
        point_key(result.point),
        str(result.status.value),
        result.median_ms,
        summary.get("rel_noise"),
        json.dumps(record, default=str),
    )
