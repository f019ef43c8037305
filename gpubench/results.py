"""Result and ResultSet dataclasses; versioned JSON, JSON lines (written as points finish), CSV."""

from __future__ import annotations

import csv
import json
import os
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from gpubench.errors import ConfigError

SCHEMA_VERSION = 1


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

    @property
    def is_measured(self) -> bool:
        """Verified and timed: these are ranked and compared."""
        return self in (Status.OK, Status.UNSTABLE)

    @property
    def is_failure(self) -> bool:
        """Failures make a sweep's exit code 3; a skipped shape is a stated decision and an
        unstable result is a measured one with a warning."""
        return self not in (Status.OK, Status.UNSTABLE, Status.SKIPPED)


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

    @property
    def median_ms(self) -> float | None:
        return self.summary["median_ms"] if self.summary else None

    def to_dict(self) -> dict[str, Any]:
        record = asdict(self)
        record["status"] = str(self.status)
        return record

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> Result:
        record = dict(record)
        record["status"] = Status(record["status"])
        if record.get("verification") is not None:
            record["verification"] = Verification(**record["verification"])
        return cls(**record)


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
        return {
            "schema_version": self.schema_version,
            "created": self.created,
            "suite": self.suite,
            "environment": self.environment,
            "spec": self.spec,
            "compile_report": self.compile_report,
            "results": [r.to_dict() for r in self.results],
        }

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> ResultSet:
        version = record.get("schema_version")
        if version != SCHEMA_VERSION:
            raise ConfigError(
                f"results schema version {version!r} is not supported (expected {SCHEMA_VERSION})"
            )
        return cls(
            suite=record["suite"],
            environment=record["environment"],
            spec=record["spec"],
            results=[Result.from_dict(r) for r in record["results"]],
            created=record["created"],
            schema_version=version,
            compile_report=record.get("compile_report", {}),
        )


def _open_for_writing(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def save_json(result_set: ResultSet, path: str | os.PathLike[str]) -> Path:
    """Write atomically (temp file then rename): an interrupted save never leaves half a file."""
    target = _open_for_writing(Path(path))
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(json.dumps(result_set.to_dict(), indent=2, default=str) + "\n")
    tmp.replace(target)
    return target


def load_json(path: str | os.PathLike[str]) -> ResultSet:
    try:
        record = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read results: {exc}", source=str(path)) from None
    return ResultSet.from_dict(record)


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
    """Appends each finished result as one JSON line, flushed and synced: a kill -9 leaves a
    readable file. The first line is a header that says what run the results belong to."""

    def __init__(self, path: str | os.PathLike[str], header: dict[str, Any] | None = None,
                 append: bool = False) -> None:  # fmt: skip
        self.path = _open_for_writing(Path(path))
        self._handle = self.path.open("a" if append else "w")
        if not append:
            self._write({"kind": "header", "schema_version": SCHEMA_VERSION, **(header or {})})

    def _write(self, record: dict[str, Any]) -> None:
        self._handle.write(json.dumps(record, default=str) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def started(self, total: int) -> None:
        """Observer hook: nothing to do before the first result."""

    def finished(self, result: Result) -> None:
        self.write(result)

    def write(self, result: Result) -> None:
        self._write({"kind": "result", **result.to_dict()})

    def close(self) -> None:
        self._handle.close()


def load_jsonl(path: str | os.PathLike[str]) -> tuple[dict[str, Any], list[Result]]:
    """(header, results) of a JSON-lines log. A last line cut short by a kill is ignored."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise ConfigError(
            f"cannot read the results log: {exc.strerror}", source=str(path)
        ) from None
    header: dict[str, Any] = {}
    results = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):
                break  # the write a kill interrupted
            raise ConfigError(f"line {number} is not JSON", source=str(path)) from None
        kind = record.pop("kind", None)
        if kind == "header":
            header = record
        elif kind == "result" and header:
            results.append(Result.from_dict(record))
        else:
            raise ConfigError("no header line: not a gpubench results log", source=str(path))
    if not header:
        raise ConfigError("no header line: not a gpubench results log", source=str(path))
    return header, results


def load_any(path: str | os.PathLike[str]) -> ResultSet:
    """A results file of either kind: JSON (`--json`) or a JSON-lines log (`--jsonl`, the
    default output of `sweep`)."""
    try:
        with open(path, "rb") as handle:
            start = handle.read(4096).lstrip()
    except OSError as exc:
        raise ConfigError(f"cannot read results: {exc.strerror}", source=str(path)) from None
    first_line = start.split(b"\n", 1)[0]
    if b'"kind"' in first_line and b'"header"' in first_line:
        header, loaded = load_jsonl(path)
        return ResultSet(
            suite=str(header.get("suite") or (loaded[0].suite if loaded else "")),
            environment=dict(header.get("environment") or {}),
            spec=dict(header.get("spec") or {}),
            results=loaded,
        )
    return load_json(path)
