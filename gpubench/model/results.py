"""Result and ResultSet dataclasses; versioned JSON, JSON lines (written as points finish), CSV."""

from __future__ import annotations

import csv
import json
import math
import os
import stat
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from gpubench.errors import ConfigError, quote

SCHEMA_VERSION = 1


def point_key(point: dict[str, Any]) -> str:
    """A stable identity for a point (resume, grouping and compare match results by it)."""
    return json.dumps(point, sort_keys=True, default=str)


class Status(StrEnum):
    OK = "ok"
    # Verified and measured, but the noise target was missed within the time budget.
    UNSTABLE = "unstable"
    INCORRECT = "incorrect"
    COMPILE_FAILED = "compile_failed"
    # The driver refused the launch; the CUDA context is still usable.
    LAUNCH_FAILED = "launch_failed"
    # The kernel broke the CUDA context (illegal address, ...) or killed its worker process.
    CRASHED = "crashed"
    # No result within the time limit: the worker was killed.
    TIMEOUT = "timeout"
    SKIPPED = "skipped"
    # Timed, but nothing to check it against (a kernel file without a reference, or the
    # variant the others are checked against): shown, never silently trusted.
    UNVERIFIED = "unverified"
    # Verified, but the timing cannot stand: faster than the hardware can go (the ceiling it
    # broke is named), or the run left work or threads behind. Shown, never ranked.
    IMPLAUSIBLE = "implausible"
    # Verified, but timing stopped early in a tuning run: even the fastest of its first
    # samples was slower than the best so far plus a margin. The samples are kept as the
    # evidence; never ranked.
    PRUNED = "pruned"

    @property
    def is_measured(self) -> bool:
        """Timed: these are ranked and compared (unverified ones marked as such)."""
        return self in (Status.OK, Status.UNSTABLE, Status.UNVERIFIED)

    @property
    def is_failure(self) -> bool:
        """Failures make a sweep's exit code 3; a skipped shape is a stated decision, an
        unstable result a measured one with a warning, an unverified one a stated fact."""
        return self not in (
            Status.OK,
            Status.UNSTABLE,
            Status.SKIPPED,
            Status.UNVERIFIED,
            Status.PRUNED,
        )


@dataclass
class Verification:
    passed: bool
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    # Index (per output dimension) of the worst element, and the output it is in.
    worst_output: str | None = None
    worst_index: list[int] | None = None
    got: float | None = None
    expected: float | None = None
    unwritten: int = 0
    # Elements outside the tolerance (unwritten ones included).
    wrong: int = 0
    # Where the comparison ran: "host" (NumPy) or "device" (CuPy, beside the outputs).
    checked_on: str = "host"
    message: str = ""


@dataclass
class Result:
    suite: str
    variant: str
    point: dict[str, Any]
    status: Status
    reason: str = ""
    baseline: str | None = None
    summary: dict[str, Any] | None = None
    converged: bool | None = None
    metrics: dict[str, float | None] = field(default_factory=dict)
    verification: Verification | None = None
    kernel_attributes: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    # The work the metrics were computed from: bytes_moved, flops, elements of one run (for
    # data-aware suites, of the checked run).
    work: dict[str, int] | None = None
    # Spans (stream, op, label, start_ms, end_ms) of one extra run, for suites that
    # record a timeline (`--timeline`).
    timeline: list[dict[str, Any]] = field(default_factory=list)
    # The GPU that measured it: {"index", "uuid", "name"} (a sweep may use several).
    device: dict[str, Any] | None = None
    # Host seconds per phase (gpubench.model.phases): {"point": {...}, "variant": {...}}; the point's
    # phases (compile, inputs, reference, uploads) as they stood when this result was made.
    phases: dict[str, dict[str, float]] = field(default_factory=dict)
    # The energy of one run (`--energy`; gpubench.model.energy.EnergyReading as a dict), or
    # {"missing": why} for a verified result that has none; None where not asked.
    energy: dict[str, Any] | None = None

    @property
    def median_ms(self) -> float | None:
        return self.summary["median_ms"] if self.summary else None

    @property
    def joules_per_run(self) -> float | None:
        """The energy of one run in joules, where measured."""
        return (self.energy or {}).get("joules_per_run")

    def to_dict(self) -> dict[str, Any]:
        record = asdict(self)
        record["status"] = str(self.status)
        if record["energy"] is None:
            del record["energy"]  # a run without --energy writes what it wrote before
        return record

    @classmethod
    def from_dict(cls, record: Any, source: str | None = None, key: str | None = None) -> Result:
        """A result from its JSON form; a ConfigError naming `source`, the field path under
        `key` and the value where the record does not fit the results format."""
        from gpubench.formats import results as formats

        validate(record, formats.Result, source=source, key=key)
        return cls._from_checked(record, source, key)

    @classmethod
    def _from_checked(cls, record: dict[str, Any], source: str | None, key: str | None) -> Result:
        """A result from a record the schema has passed: the rule no schema can say."""
        check_measured(record, source, key)
        record = dict(record, status=Status(record["status"]))
        if record.get("verification") is not None:
            record["verification"] = Verification(**record["verification"])
        return cls(**record)


def check_measured(record: dict[str, Any], source: str | None, key: str | None) -> None:
    """A measured result (ok, unstable, unverified) of a record the schema has passed needs
    a positive median: the rule no schema can say."""
    if Status(record["status"]).is_measured:
        median = (record.get("summary") or {}).get("median_ms")
        if median is None or median <= 0:
            raise ConfigError(
                f"a measured result needs a positive median_ms, got {quote(median)}",
                source=source,
                key=key,
            )


def validate(record: Any, schema: type, *, source: str | None, key: str | None = None) -> Any:
    """gpubench.formats.validate, imported when a file is read (msgspec stays off --help)."""
    from gpubench.formats import validate as validate_format

    return validate_format(record, schema, source=source, key=key)


def _finite(value: Any) -> Any:
    """NaN and infinity have no JSON form: where JSON is written they become null (a noise
    figure of a single sample is unknown, not infinite)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):  # JSON writes a tuple as a list too
        return [_finite(v) for v in value]
    return value


def now_iso() -> str:
    """The present moment as results files record it: ISO 8601, UTC, to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def check_created(created: str, source: str | None, key: str) -> None:
    """Refuse a `created` that is not an ISO 8601 date and time: the history store orders
    runs by it, and the report draws them at it."""
    try:
        datetime.fromisoformat(created)
    except ValueError:
        raise ConfigError(
            f"expected an ISO 8601 date and time (2026-11-27T09:30:00+00:00), got {quote(created)}",
            source=source,
            key=key,
        ) from None


@dataclass
class ResultSet:
    suite: str
    environment: dict[str, Any]
    spec: dict[str, Any]
    results: list[Result] = field(default_factory=list)
    created: str = field(default_factory=lambda: now_iso())
    schema_version: int = SCHEMA_VERSION
    # How the sweep's kernels were compiled: configurations, compiled, cached, failed, seconds.
    compile_report: dict[str, Any] = field(default_factory=dict)

    @property
    def failures(self) -> list[Result]:
        return [r for r in self.results if r.status.is_failure]

    def sort_in_order_of(self, points: list[dict[str, Any]], variants: tuple[str, ...]) -> None:
        """In the sweep's order: by point, then by variant (a resumed log's results at points
        or of variants no longer in the sweep first)."""
        order = {point_key(p): i for i, p in enumerate(points)}
        variant_order = {v: i for i, v in enumerate(variants)}
        self.results.sort(
            key=lambda r: (order.get(point_key(r.point), -1), variant_order.get(r.variant, -1))
        )

    def to_dict(self) -> dict[str, Any]:
        return _finite(
            {
                "schema_version": self.schema_version,
                "created": self.created,
                "suite": self.suite,
                "environment": self.environment,
                "spec": self.spec,
                "compile_report": self.compile_report,
                "results": [r.to_dict() for r in self.results],
            }
        )

    @classmethod
    def from_dict(cls, record: Any, source: str | None = None) -> ResultSet:
        """A result set from its JSON form; a ConfigError naming `source`, the field path
        (`results[3].device.uuid`) and the value where the record does not fit the format."""
        from gpubench.formats import results as formats

        if not isinstance(record, dict):
            raise ConfigError(
                f"expected a results object, got {type(record).__name__}", source=source
            )
        version = record.get("schema_version")
        if type(version) is not int or version != SCHEMA_VERSION:
            raise ConfigError(
                f"results schema version {quote(version)} is not supported "
                f"(expected {SCHEMA_VERSION})",
                source=source,
            )
        validate(record, formats.ResultsFile, source=source)
        check_created(record["created"], source, "created")
        results = [
            Result._from_checked(item, source, f"results[{index}]")
            for index, item in enumerate(record["results"])
        ]
        return cls(
            suite=record["suite"],
            environment=record["environment"],
            spec=record["spec"],
            results=results,
            created=record["created"],
            schema_version=version,
            compile_report=report
            if isinstance(report := record.get("compile_report"), dict)
            else {},
        )


def _open_for_writing(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def save_json(result_set: ResultSet, path: str | os.PathLike[str]) -> Path:
    """Write atomically (temp file then rename): an interrupted save never leaves half a file,
    and a failed one leaves no temp file behind."""
    target = _open_for_writing(Path(path))
    tmp = target.with_name(target.name + ".tmp")
    try:
        tmp.write_text(
            json.dumps(result_set.to_dict(), indent=2, default=str, allow_nan=False) + "\n"
        )
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


# The limits below keep refusing a damaged or hostile file well under 500 MB: JSON of
# nothing but `{},` takes about 25 bytes of Python objects per byte once parsed, and again
# while it is checked against its schema, so the size alone cannot bound it; the number of
# objects and arrays does. Measured (tests/formats): the costliest results file or log line
# within the limits (empty objects, or an object of 400,000 short keys, the wrong value last)
# is refused in at most about 110 MB and under a second.
#
# A results file (JSON) is parsed whole: at most 16 MiB, about 8,000 results as --json writes
# them (2 KB each with their host phases)
# (the 500,000 objects and arrays below allow about 50,000). A larger sweep belongs in a
# results log (JSON lines), which is read a line at a time; save_json says so when it writes
# a file past this limit.
MAX_RESULTS_BYTES = 16 << 20
# A results log may be much larger: a 10^6-point sweep writes about 1 GB of it. Each line (one
# result; a long timeline at most a few MB) is parsed on its own.
MAX_LOG_BYTES = 16 << 30
# The history store that `--history` without a path (and `history: true`) appends to.
HISTORY_DEFAULT_PATH = "results/history.sqlite"
MAX_LOG_LINE_BYTES = 4 << 20
FAST_CHECK_BYTES = 1 << 20
# The results a log holds are kept in memory (2 to 3 KB each): a log is checked line by line
# first, keeping nothing, and refused past this many results before any is built.
MAX_LOG_RESULTS = 2_000_000
# A result and its metrics line, and the header: counted first, at the speed of reading the
# file, so that a log of far too many results is refused in a second rather than after
# checking every line.
MAX_LOG_LINES = 2 * MAX_LOG_RESULTS + 1
# Objects and arrays in one JSON document (a results file, a line of a log), counted as `{`
# and `[` characters before it is parsed: each costs at least 64 bytes once built, where a
# result of gpubench's own has about 10 in 700 bytes of JSON.
MAX_JSON_CONTAINERS = 500_000
LARGER_SWEEPS = "a larger sweep belongs in a results log (--jsonl), read a line at a time"


def save_jsonl(result_set: ResultSet, path: str | os.PathLike[str]) -> Path:
    """The set as a results log (a header, then a line per result): read back a line at a
    time, so it may hold far more than a results file."""
    header = {
        "created": result_set.created,
        "suite": result_set.suite,
        "environment": result_set.environment,
        "spec": result_set.spec,
    }
    log = JsonLinesLog(path, header=header)
    try:
        for result in result_set.results:
            log.write(result)
    finally:
        log.close()
    return log.path


def read_back_note(path: str | os.PathLike[str]) -> str | None:
    """A note for a results file just written past what a results file may hold when read
    back (MAX_RESULTS_BYTES): compare, plot and history import would refuse it."""
    size = os.stat(path).st_size
    if size <= MAX_RESULTS_BYTES:
        return None
    return (
        f"note: {path} holds {size_text(size)}, more than gpubench reads back from a results "
        f"file ({size_text(MAX_RESULTS_BYTES)}): compare, plot and history import read the "
        "sweep's JSON-lines log (--jsonl) instead"
    )


def size_text(size: int) -> str:
    """A byte count in the unit that fits: `100 bytes`, `1.5 KiB`, `8 MiB`, `16 GiB`."""
    for unit, name in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if size >= unit:
            return f"{size / unit:.1f}".removesuffix(".0") + f" {name}"
    return f"{size} byte" + ("" if size == 1 else "s")


def check_containers(
    raw: bytes, source: str, what: str, advice: str = "", key: str | None = None
) -> None:
    """Refuse, before it is parsed, a JSON document of more than MAX_JSON_CONTAINERS objects
    and arrays (`what` names the kind of document: `a results file`)."""
    found = raw.count(b"{") + raw.count(b"[")
    if found > MAX_JSON_CONTAINERS:
        raise ConfigError(
            f"{found:,} objects and arrays: {what} holds at most {MAX_JSON_CONTAINERS:,}"
            + (f"; {advice}" if advice else ""),
            source=source,
            key=key,
        )


def check_readable(
    path: str | os.PathLike[str], what: str, kind: str, limit: int | None = None
) -> None:
    """Refuse, before it is opened, anything but a regular file of at most `limit` bytes
    (MAX_RESULTS_BYTES unless given; a FIFO would block the open, /dev/zero never end the
    read); OSError passes through. `what` says what the file should be, `kind` names it in
    the size limit (past the results file's, where a larger sweep belongs)."""
    advice = f"; {LARGER_SWEEPS}" if limit is None else ""
    limit = MAX_RESULTS_BYTES if limit is None else limit
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"not a regular file: {what}", source=str(path))
    if info.st_size > limit:
        raise ConfigError(
            f"{info.st_size:,} bytes: {kind} is at most {size_text(limit)}{advice}",
            source=str(path),
        )


def _open_results(
    path: str | os.PathLike[str], kind: str = "a results file", limit: int | None = None
) -> Any:
    """The file opened for reading in binary, once check_readable has passed it."""
    try:
        check_readable(path, "a results file is a JSON or JSON-lines file", kind, limit)
        return open(path, "rb")  # the caller closes it
    except OSError as exc:
        raise ConfigError(f"cannot read results: {exc.strerror}", source=str(path)) from None


def _read_text(path: str | os.PathLike[str]) -> str:
    with _open_results(path) as handle:
        raw = handle.read(MAX_RESULTS_BYTES + 1)  # the file may have grown since the check
    if len(raw) > MAX_RESULTS_BYTES:
        raise ConfigError(
            f"more than {size_text(MAX_RESULTS_BYTES)}: a results file is at "
            f"most {size_text(MAX_RESULTS_BYTES)}; {LARGER_SWEEPS}",
            source=str(path),
        )
    check_containers(raw, str(path), "a results file", LARGER_SWEEPS)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text (byte {exc.start})", source=str(path)) from None


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


def _parse(text: str | bytes) -> Any:
    """json.loads without NaN or Infinity (ValueError), and without deep-nesting crashes."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def load_json(path: str | os.PathLike[str]) -> ResultSet:
    try:
        record = _parse(_read_text(path))
    except ValueError as exc:
        raise ConfigError(f"not valid JSON: {str(exc)[:200]}", source=str(path)) from None
    return ResultSet.from_dict(record, source=str(path))


SUMMARY_FIELDS = ("median_ms", "min_ms", "mean_ms", "stdev_ms", "rel_noise", "samples")


def save_csv(result_set: ResultSet, path: str | os.PathLike[str]) -> Path:
    """One row per result: the point's parameters, status, the timing summary, the work and
    every metric any result carries (declared metrics first, in their declared order)."""
    from gpubench.model.metrics import CATALOG, TIME

    target = _open_for_writing(Path(path))
    param_names: list[str] = []
    for r in result_set.results:
        for name in r.point:
            if name not in param_names:
                param_names.append(name)
    present = {key for r in result_set.results for key in r.metrics}
    metric_keys = [m.key for m in CATALOG if m.key in present and m.key != TIME.key]
    metric_keys += sorted(present - set(metric_keys) - {TIME.key})
    work_keys = ("bytes_moved", "flops", "elements")
    with target.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                *param_names,
                "suite",
                "variant",
                "status",
                "reason",
                *SUMMARY_FIELDS,
                *work_keys,
                *metric_keys,
            ]
        )
        for r in result_set.results:
            summary = r.summary or {}
            work = r.work or {}
            values = [
                *(r.point.get(p, "") for p in param_names),
                r.suite,
                r.variant,
                str(r.status),
                r.reason,
                *(summary.get(k) for k in SUMMARY_FIELDS),
                *(work.get(k) for k in work_keys),
                *(r.metrics.get(k) for k in metric_keys),
            ]
            writer.writerow(["" if v is None else v for v in values])
    return target


class JsonLinesLog:
    """Appends each result as one JSON line the moment it finishes, flushed and synced: a
    kill -9 leaves a readable file. The first line is a header that says what run the results
    belong to. Once a point is complete, a "metrics" line per result adds the metrics that
    compare its variants (speedup, % of vendor, overlap)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        header: dict[str, Any] | None = None,
        append: bool = False,
    ) -> None:
        self.path = _open_for_writing(Path(path))
        if append:
            repair_tail(self.path)
        self._handle = self.path.open("a" if append else "w", encoding="utf-8")
        if not append:
            first = {"kind": "header", "schema_version": SCHEMA_VERSION, "created": now_iso()}
            self._write({**first, **(header or {})})

    def _write(self, record: dict[str, Any]) -> None:
        self._handle.write(json.dumps(_finite(record), default=str, allow_nan=False) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def started(self, total: int) -> None:
        """Observer hook: nothing to do before the first result."""

    def finished(self, result: Result) -> None:
        self.write(result)

    def point_finished(self, results: list[Result]) -> None:
        for result in results:
            if result.metrics:
                self._write(
                    {
                        "kind": "metrics",
                        "point": result.point,
                        "variant": result.variant,
                        "metrics": result.metrics,
                    }
                )

    def write(self, result: Result) -> None:
        self._write({"kind": "result", **result.to_dict()})

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> JsonLinesLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def repair_tail(path: Path) -> bool:
    """Cut a last line that a kill left without its newline, so that appended records start
    on a line of their own. True if something was cut."""
    with path.open("rb+") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return False
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return False
        # Find the last newline (reading backwards in blocks) and cut after it.
        position = size
        while position > 0:
            start = max(0, position - 65536)
            handle.seek(start)
            block = handle.read(position - start)
            newline = block.rfind(b"\n")
            if newline >= 0:
                handle.truncate(start + newline + 1)
                return True
            position = start
        handle.truncate(0)
        return True


def _log_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, line, whether it is the last one and lacks its newline) of a results
    log, a line at a time: memory beyond the results stays at one line."""
    kind = "a results log"
    with _open_results(path, kind, MAX_LOG_BYTES) as handle:
        number = 0
        # The limit is on a line's content: its newline may come after it.
        while line := handle.readline(MAX_LOG_LINE_BYTES + 2):
            number += 1
            if len(line.removesuffix(b"\n")) > MAX_LOG_LINE_BYTES:
                raise ConfigError(
                    f"line {number} is longer than "
                    f"{size_text(MAX_LOG_LINE_BYTES)}: a line of {kind} is at "
                    f"most {size_text(MAX_LOG_LINE_BYTES)}",
                    source=str(path),
                )
            yield number, line, not line.endswith(b"\n")


def _log_record(line: bytes, number: int, cut_short: bool, source: str) -> dict[str, Any] | None:
    """The object on one line of a log; None for a blank line or the last line a kill cut."""
    if not line.strip():
        return None
    try:
        record = _parse(line)
    except ValueError:  # UnicodeDecodeError included
        if cut_short:
            return None  # the write a kill interrupted
        raise ConfigError(f"line {number} is not JSON", source=source) from None
    if not isinstance(record, dict):
        raise ConfigError(f"line {number}: expected an object", source=source)
    return record


def _validate_line(record: dict[str, Any], schema: type, source: str, number: int) -> None:
    """validate, with the line number before the field path: `line 3: results.device`."""
    try:
        validate(record, schema, source=source)
    except ConfigError as exc:
        where = f"line {number}: {exc.key}" if exc.key else f"line {number}"
        raise ConfigError(exc.message, source=source, key=where) from None


def _log_entry(
    line: bytes, number: int, cut_short: bool, source: str, header_seen: bool, check: bool
) -> tuple[str, dict[str, Any]] | None:
    """(kind, record less its kind) of one line of a log, or None for a blank line or a last
    line a kill cut short. The order of the lines is checked (`header_seen`: whether a header
    came before); with `check`, the line's schema and the rule no schema says too."""
    from gpubench.formats import results_log as formats

    record = _log_record(line, number, cut_short, source)
    if record is None:
        return None
    kind, where = record.get("kind"), f"line {number}"
    schemas: dict[str, type] = {"result": formats.ResultLine, "metrics": formats.MetricsLine}
    if kind == "header" and not header_seen:
        schema = formats.Header
    elif not header_seen:
        raise ConfigError("no header line: not a gpubench results log", source=source)
    elif kind == "header":
        raise ConfigError(f"{where}: a second header line (one log holds one run)", source=source)
    elif isinstance(kind, str) and kind in schemas:
        schema = schemas[kind]
    else:
        raise ConfigError(f"{where}: unknown kind of line {quote(kind)}", source=source)
    fields = {k: v for k, v in record.items() if k != "kind"}
    if check:
        _validate_line(record, schema, source, number)
        if kind == "result":
            check_measured(fields, source, where)
    return kind, fields


def _too_many_results(source: str, key: str | None = None) -> ConfigError:
    return ConfigError(
        f"more than {MAX_LOG_RESULTS:,} results: a results log holds at most "
        f"{MAX_LOG_RESULTS:,} (split the sweep with --shard I/N)",
        source=source,
        key=key,
    )


# How gpubench writes a result line's kind (json.dumps' separators). Outside a string a quote
# is a quote, inside one it is escaped: the bytes occur once per result line gpubench wrote.
RESULT_KIND = b'"kind": "result"'


def _count_lines(path: str | os.PathLike[str]) -> None:
    """Refuse a log of more than MAX_LOG_LINES lines, or of more results lines than
    MAX_LOG_RESULTS as gpubench writes them, counted a block at a time (and no further than
    the limit) before any line is parsed: refused at the speed of reading, not of checking.
    (A hand-written line with other spacing escapes this count; the check of every line that
    follows counts it.)"""
    lines = found = 0
    with _open_results(path, "a results log", MAX_LOG_BYTES) as handle:
        while block := handle.read(16 << 20):
            lines += block.count(b"\n")
            found += block.count(RESULT_KIND)
            if lines > MAX_LOG_LINES:
                raise ConfigError(
                    f"more than {MAX_LOG_LINES:,} lines: a results log holds at most "
                    f"{MAX_LOG_RESULTS:,} results, each with at most one metrics line (split "
                    "the sweep with --shard I/N)",
                    source=str(path),
                )
            if found > MAX_LOG_RESULTS:
                raise _too_many_results(str(path))


def _check_log(path: str | os.PathLike[str]) -> int:
    """Check every line of a log, keeping nothing, and count its results; the number of its
    last line. A line msgspec decodes against the log's schema is checked in that one step
    (about 5 times faster than parsing it, then checking it); any other goes through
    _log_entry, which skips it (blank, cut short) or says exactly what is wrong with it."""
    import msgspec

    from gpubench.formats import results_log as formats

    source = str(path)
    _count_lines(path)
    decoder = msgspec.json.Decoder(formats.Line)
    kinds = {formats.Header: "header", formats.ResultLine: "result", formats.MetricsLine: "metrics"}
    header_seen, count, last = False, 0, 0
    for number, line, cut_short in _log_lines(path):
        where = f"line {number}"
        check_containers(line, source, "a line of a results log", key=where)
        if not line.strip():
            continue
        entry, kind = None, None
        # A long line (a long timeline; or a hostile one) goes straight to the check that
        # names what is wrong: decoding it first would build it a third time when it is bad.
        if len(line) <= FAST_CHECK_BYTES:
            try:
                entry = decoder.decode(line)
                kind = kinds[type(entry)]
            except (msgspec.DecodeError, RecursionError):  # ValidationError included
                entry, kind = None, None
        if kind is None or (kind == "header") == header_seen:  # refused, or out of order
            checked = _log_entry(line, number, cut_short, source, header_seen, check=True)
            if checked is None:
                continue
            kind = checked[0]
        elif isinstance(entry, formats.ResultLine):
            check_measured({"status": entry.status, "summary": entry.summary}, source, where)
        header_seen, last = True, number
        count += kind == "result"
        if count > MAX_LOG_RESULTS:
            raise _too_many_results(source, where)
    if not header_seen:
        raise ConfigError("no header line: not a gpubench results log", source=source)
    return last


def load_jsonl(path: str | os.PathLike[str]) -> tuple[dict[str, Any], list[Result]]:
    """(header, results) of a JSON-lines log. A last line cut short by a kill is ignored; any
    other problem is a ConfigError naming the line (and, for a wrong field, its path).

    The log is read three times: its lines counted (MAX_LOG_LINES), at the speed of reading;
    every line checked and the results counted, keeping nothing, so that a damaged log (or one
    of more than MAX_LOG_RESULTS results) is refused in the memory of one line, however many
    results come before the damage; then the results built from the lines that were checked
    (lines appended since are left for later)."""
    source = str(path)
    last = _check_log(path)
    header: dict[str, Any] = {}
    results: dict[tuple[str, str], Result] = {}
    header_seen = False
    for number, line, cut_short in _log_lines(path):
        if number > last:
            break
        entry = _log_entry(line, number, cut_short, source, header_seen, check=False)
        if entry is None:
            continue
        header_seen, (kind, record) = True, entry
        if kind == "header":
            header = record
        elif kind == "result":
            result = Result._from_checked(record, source, f"line {number}")
            results[(point_key(result.point), result.variant)] = result
        elif (key := (point_key(record["point"]), record["variant"])) in results:
            results[key].metrics.update(record["metrics"])
    return header, list(results.values())


def load_any(path: str | os.PathLike[str]) -> ResultSet:
    """A results file of either kind: JSON (`--json`) or a JSON-lines log (`--jsonl`, the
    default output of `sweep`)."""
    with _open_results(path, "a results log", MAX_LOG_BYTES) as handle:
        start = handle.read(4096).lstrip()
    first_line = start.split(b"\n", 1)[0]
    if b'"kind"' in first_line and b'"header"' in first_line:
        header, loaded = load_jsonl(path)
        created = header.get("created")
        if created is None:  # a log from before the header said when: its last write
            modified = datetime.fromtimestamp(os.stat(path).st_mtime, UTC)
            created = modified.isoformat(timespec="seconds")
        check_created(created, str(path), "line 1: created")
        return ResultSet(
            suite=header.get("suite") or (loaded[0].suite if loaded else ""),
            environment=dict(header.get("environment") or {}),
            spec=dict(header.get("spec") or {}),
            results=loaded,
            created=created,
        )
    return load_json(path)
