"""Result and ResultSet dataclasses; versioned JSON, JSON lines (written as points finish), CSV."""

from __future__ import annotations

import csv
import json
import math
import os
import stat
from dataclasses import asdict, dataclass, field, fields
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

    @property
    def is_measured(self) -> bool:
        """Timed: these are ranked and compared (unverified ones marked as such)."""
        return self in (Status.OK, Status.UNSTABLE, Status.UNVERIFIED)

    @property
    def is_failure(self) -> bool:
        """Failures make a sweep's exit code 3; a skipped shape is a stated decision, an
        unstable result a measured one with a warning, an unverified one a stated fact."""
        return self not in (Status.OK, Status.UNSTABLE, Status.SKIPPED, Status.UNVERIFIED)


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
    # Host seconds per phase (gpubench.phases): {"point": {...}, "variant": {...}}; the point's
    # phases (compile, inputs, reference, uploads) as they stood when this result was made.
    phases: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def median_ms(self) -> float | None:
        return self.summary["median_ms"] if self.summary else None

    def to_dict(self) -> dict[str, Any]:
        record = asdict(self)
        record["status"] = str(self.status)
        return record

    @classmethod
    def from_dict(cls, record: Any) -> Result:
        """A result from its JSON form; ValueError saying what is wrong with the record."""
        problem = _result_problem(record)
        if problem:
            raise ValueError(problem)
        record = dict(record)
        record["status"] = Status(record["status"])
        if record.get("verification") is not None:
            record["verification"] = Verification(**record["verification"])
        return cls(**record)


RESULT_FIELDS = {f.name for f in fields(Result)}
VERIFICATION_FIELDS = {f.name for f in fields(Verification)}


def _finite(value: Any) -> Any:
    """NaN and infinity have no JSON form: where JSON is written they become null (a noise figure of a single
    sample is unknown, not infinite)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):  # JSON writes a tuple as a list too
        return [_finite(v) for v in value]
    return value


def _number(value: Any) -> bool:
    """A finite JSON number (an integer of 400 digits is none: no float holds it)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _result_problem(record: Any) -> str | None:
    if not isinstance(record, dict):
        return f"expected an object, got {type(record).__name__}"
    unknown = sorted(set(record) - RESULT_FIELDS)
    if unknown:
        return f"unknown field {quote(unknown[0])}"
    for key in ("suite", "variant", "point", "status"):
        if key not in record:
            return f"missing field {key!r}"
    if not isinstance(record["suite"], str) or not isinstance(record["variant"], str):
        return "suite and variant must be text"
    if not isinstance(record["point"], dict):
        return "point must be an object"
    if not isinstance(record["status"], str) or record["status"] not in {str(s) for s in Status}:
        return f"unknown status {quote(record['status'])}"
    for key in ("summary", "work", "verification", "device"):
        if record.get(key) is not None and not isinstance(record[key], dict):
            return f"{key} must be an object or null"
    for key in ("metrics", "kernel_attributes"):
        if key in record and not isinstance(record[key], dict):
            return f"{key} must be an object"
    if "timeline" in record and not isinstance(record["timeline"], list):
        return "timeline must be a list"
    phases = record.get("phases", {})
    if not isinstance(phases, dict) or not all(
        isinstance(v, dict) and all(_number(x) for x in v.values()) for v in phases.values()
    ):
        return "phases must be an object of objects of numbers"
    if not all(v is None or _number(v) for v in (record.get("metrics") or {}).values()):
        return "metrics must be numbers or null"
    if not all(v is None or _number(v) or isinstance(v, bool)
               for v in (record.get("summary") or {}).values()):  # fmt: skip
        return "summary values must be numbers, true/false or null"
    work = record.get("work") or {}
    if not all(_number(v) and v >= 0 for k, v in work.items() if k not in ("level", "precision")):
        return "work values must be non-negative numbers"
    verification = record.get("verification")
    if verification is not None and (
        set(verification) - VERIFICATION_FIELDS or "passed" not in verification
    ):
        return "verification has unknown or missing fields"
    if Status(record["status"]).is_measured:
        median = (record.get("summary") or {}).get("median_ms")
        if not _number(median) or median <= 0:
            return f"a measured result needs a positive median_ms, got {quote(median)}"
    return None


@dataclass
class ResultSet:
    suite: str
    environment: dict[str, Any]
    spec: dict[str, Any]
    results: list[Result] = field(default_factory=list)
    created: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    schema_version: int = SCHEMA_VERSION
    # How the sweep's kernels were compiled: configurations, compiled, cached, failed, seconds.
    compile_report: dict[str, Any] = field(default_factory=dict)

    @property
    def failures(self) -> list[Result]:
        return [r for r in self.results if r.status.is_failure]

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
        if not isinstance(record, dict):
            raise ConfigError(
                f"expected a results object, got {type(record).__name__}", source=source
            )
        version = record.get("schema_version")
        if version != SCHEMA_VERSION:
            raise ConfigError(
                f"results schema version {quote(version)} is not supported "
                f"(expected {SCHEMA_VERSION})",
                source=source,
            )
        for key, kind in (("suite", str), ("environment", dict), ("spec", dict),
                          ("results", list), ("created", str)):  # fmt: skip
            if not isinstance(record.get(key), kind):
                raise ConfigError(
                    f"{key!r} is missing or not a {kind.__name__}", source=source, key=key
                )
        for key in ("device", "backend"):
            if record["environment"].get(key) is not None and not isinstance(
                record["environment"][key], dict
            ):
                raise ConfigError(f"environment.{key} must be an object", source=source,
                                  key=f"environment.{key}")  # fmt: skip
        results = []
        for index, item in enumerate(record["results"]):
            try:
                results.append(Result.from_dict(item))
            except ValueError as exc:
                raise ConfigError(str(exc), source=source, key=f"results[{index}]") from None
        compile_report = record.get("compile_report") or {}
        return cls(
            suite=record["suite"],
            environment=record["environment"],
            spec=record["spec"],
            results=results,
            created=record["created"],
            schema_version=version,
            compile_report=compile_report if isinstance(compile_report, dict) else {},
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


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


# The largest results file read (JSON or a JSON-lines log): about 200,000 results. Larger
# ones are refused before they are read: a file is parsed in memory whole.
MAX_RESULTS_BYTES = 1 << 30


def check_readable(path: str | os.PathLike[str], what: str, kind: str) -> None:
    """Refuse, before it is opened, anything but a regular file of at most MAX_RESULTS_BYTES
    (a FIFO would block the open, /dev/zero never end the read); OSError passes through.
    `what` says what the file should be, `kind` names it in the size limit."""
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"not a regular file: {what}", source=str(path))
    if info.st_size > MAX_RESULTS_BYTES:
        raise ConfigError(f"{info.st_size:,} bytes: {kind} is at most {MAX_RESULTS_BYTES >> 30} "
                          "GiB", source=str(path))  # fmt: skip


def _open_results(path: str | os.PathLike[str]) -> Any:
    """The file opened for reading in binary, once check_readable has passed it."""
    try:
        check_readable(path, "a results file is a JSON or JSON-lines file", "a results file")
        return open(path, "rb")  # the caller closes it
    except OSError as exc:
        raise ConfigError(f"cannot read results: {exc.strerror}", source=str(path)) from None


def _read_text(path: str | os.PathLike[str]) -> str:
    with _open_results(path) as handle:
        raw = handle.read(MAX_RESULTS_BYTES + 1)  # the file may have grown since the check
    if len(raw) > MAX_RESULTS_BYTES:
        raise ConfigError(f"more than {MAX_RESULTS_BYTES >> 30} GiB: a results file is at most "
                          f"{MAX_RESULTS_BYTES >> 30} GiB", source=str(path))  # fmt: skip
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text (byte {exc.start})", source=str(path)) from None


def _parse(text: str) -> Any:
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
    from gpubench.metrics import CATALOG, TIME

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
        writer.writerow([*param_names, "suite", "variant", "status", "reason",
                         *SUMMARY_FIELDS, *work_keys, *metric_keys])  # fmt: skip
        for r in result_set.results:
            summary = r.summary or {}
            work = r.work or {}
            values = [
                *(r.point.get(p, "") for p in param_names),
                r.suite, r.variant, str(r.status), r.reason,
                *(summary.get(k) for k in SUMMARY_FIELDS),
                *(work.get(k) for k in work_keys),
                *(r.metrics.get(k) for k in metric_keys),
            ]  # fmt: skip
            writer.writerow(["" if v is None else v for v in values])
    return target


class JsonLinesLog:
    """Appends each result as one JSON line the moment it finishes, flushed and synced: a
    kill -9 leaves a readable file. The first line is a header that says what run the results
    belong to. Once a point is complete, a "metrics" line per result adds the metrics that
    compare its variants (speedup, % of vendor, overlap)."""

    def __init__(self, path: str | os.PathLike[str], header: dict[str, Any] | None = None,
                 append: bool = False) -> None:  # fmt: skip
        self.path = _open_for_writing(Path(path))
        if append:
            repair_tail(self.path)
        self._handle = self.path.open("a" if append else "w", encoding="utf-8")
        if not append:
            self._write({"kind": "header", "schema_version": SCHEMA_VERSION, **(header or {})})

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
                self._write({"kind": "metrics", "point": result.point,
                             "variant": result.variant, "metrics": result.metrics})  # fmt: skip

    def write(self, result: Result) -> None:
        self._write({"kind": "result", **result.to_dict()})

    def close(self) -> None:
        self._handle.close()


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


def load_jsonl(path: str | os.PathLike[str]) -> tuple[dict[str, Any], list[Result]]:
    """(header, results) of a JSON-lines log. A last line cut short by a kill is ignored; any
    other problem is a ConfigError naming the line."""
    text = _read_text(path)
    lines = text.splitlines()
    cut_short = bool(text) and not text.endswith("\n")
    header: dict[str, Any] | None = None  # a header of no fields but its kind is a header
    results: dict[tuple[str, str], Result] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = _parse(line)
        except ValueError:
            if number == len(lines) and cut_short:
                break  # the write a kill interrupted
            raise ConfigError(f"line {number} is not JSON", source=str(path)) from None
        if not isinstance(record, dict):
            raise ConfigError(f"line {number}: expected an object", source=str(path))
        kind = record.pop("kind", None)
        if kind == "header" and header is None:
            for key, expected in (("suite", str), ("environment", dict), ("spec", dict),
                                  ("fingerprint", dict)):  # fmt: skip
                if key in record and not isinstance(record[key], expected):
                    raise ConfigError(f"line {number}: header field {key!r} must be "
                                      f"{'text' if expected is str else 'an object'}",
                                      source=str(path))  # fmt: skip
            header = record
            continue
        if header is None:
            raise ConfigError("no header line: not a gpubench results log", source=str(path))
        try:
            if kind == "result":
                result = Result.from_dict(record)
                results[(point_key(result.point), result.variant)] = result
            elif kind == "metrics":
                metrics = record["metrics"]
                if not isinstance(record["point"], dict) or not isinstance(metrics, dict):
                    raise ValueError("a metrics line needs a point and metrics objects")
                if not all(v is None or _number(v) for v in metrics.values()):
                    raise ValueError("metrics must be numbers or null")
                key = (point_key(record["point"]), record["variant"])
                if key in results:
                    results[key].metrics.update(metrics)
            elif kind == "header":
                raise ValueError("a second header line (one log holds one run)")
            else:
                raise ValueError(f"unknown kind of line {quote(kind)}")
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"line {number}: {exc}", source=str(path)) from None
    if header is None:
        raise ConfigError("no header line: not a gpubench results log", source=str(path))
    return header, list(results.values())


def load_any(path: str | os.PathLike[str]) -> ResultSet:
    """A results file of either kind: JSON (`--json`) or a JSON-lines log (`--jsonl`, the
    default output of `sweep`)."""
    with _open_results(path) as handle:
        start = handle.read(4096).lstrip()
    first_line = start.split(b"\n", 1)[0]
    if b'"kind"' in first_line and b'"header"' in first_line:
        header, loaded = load_jsonl(path)

        def mapping(key: str) -> dict[str, Any]:
            value = header.get(key)
            return dict(value) if isinstance(value, dict) else {}

        return ResultSet(
            suite=str(header.get("suite") or (loaded[0].suite if loaded else "")),
            environment=mapping("environment"),
            spec=mapping("spec"),
            results=loaded,
        )
    return load_json(path)
