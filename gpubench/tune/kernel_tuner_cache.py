"""Kernel Tuner's cache file, written from a recorded space and read back as a recording.

The format (Kernel Tuner's cache schema 1.0.0): a JSON object with device_name, kernel_name,
problem_size, tune_params_keys, tune_params (each parameter's values), objective and cache,
which maps a configuration's key (its values in tune_params_keys order, joined by commas) to
the parameters and their measurements: `time` in milliseconds, or the name of a failure
(CompilationFailedConfig, RuntimeFailedConfig, InvalidConfig). One cache holds one problem, so
a space of several problems is written as one file per problem. Each entry also carries its
gpubench status (`gpubench_status`), which reading back prefers to the failure's name.

Kernel Tuner writes a cache as it tunes and may leave it without its two closing braces; such
a file is read as Kernel Tuner reads it, with them added. A name ending in `.gz` is written and
read gzip-compressed (a recorded space kept in the repository: 2,104 configurations in 43 KB).
"""

from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path
from typing import Any

from gpubench.errors import ConfigError
from gpubench.tune.recording import CANDIDATE_STATUSES, Outcome, Recording
from gpubench.tune.space import VARIANT, Problem

SCHEMA_VERSION = "1.0.0"
STATUS_OF_FAILURE = {
    "CompilationFailedConfig": "compile_failed",
    "RuntimeFailedConfig": "launch_failed",
}
FAILURE_OF_STATUS = {"compile_failed": "CompilationFailedConfig"}
# The measurements Kernel Tuner's schema requires of every entry; a replay knows none of them.
TIMES_REQUIRED = (
    "compile_time",
    "verification_time",
    "benchmark_time",
    "strategy_time",
    "framework_time",
)
MAX_BYTES = 512 * 1024 * 1024


def looks_like(path: str | os.PathLike[str]) -> bool:
    """Whether the file starts like a Kernel Tuner cache: with the device's name, or a schema
    version that is a string ("1.0.0"); a gpubench results file's is a number."""
    try:
        with _open_bytes(path) as handle:
            start = handle.read(4096)
    except (OSError, EOFError):
        return False  # gpubench.model.results says what is wrong with the file
    return re.match(rb'\s*\{\s*"(device_name"|schema_version"\s*:\s*")', start) is not None


def _compressed(path: str | os.PathLike[str]) -> bool:
    return str(path).endswith(".gz")


def _open_bytes(path: str | os.PathLike[str]) -> Any:
    return gzip.open(path, "rb") if _compressed(path) else open(path, "rb")


def read_text(path: str | os.PathLike[str]) -> str:
    """The file's text, decompressed where its name ends in .gz; at most MAX_BYTES of it."""
    with _open_bytes(path) as handle:
        raw = handle.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        raise ConfigError("a Kernel Tuner cache larger than 512 MiB", source=str(path))
    return raw.decode("utf-8", errors="replace")


def tune_params(problem: Problem) -> dict[str, list[Any]]:
    """The parameters Kernel Tuner tunes: each configuration parameter with its values (a
    constant one with its one value), the variant only where it varies."""
    first = problem.configurations[0]
    names = [name for name in first if name != VARIANT or VARIANT in problem.axes]
    return {name: problem.axes.get(name, [first[name]]) for name in names}


def cache_key(values: list[Any]) -> str:
    return ",".join(str(v) for v in values)


def export(
    problem: Problem, recording: Recording, path: Path, extra: dict[str, Any] | None = None
) -> Path:
    """One problem's recorded outcomes as a Kernel Tuner cache file at `path`."""
    params = tune_params(problem)
    cache: dict[str, dict[str, Any]] = {}
    for index, configuration in enumerate(problem.configurations):
        outcome = recording.outcome(*problem.entries[index])
        if outcome is None:
            continue
        values = {name: configuration[name] for name in params}
        time: float | str = (
            outcome.cost
            if outcome.cost is not None
            else FAILURE_OF_STATUS.get(outcome.status, "RuntimeFailedConfig")
        )
        cache[cache_key(list(values.values()))] = {
            **values,
            "time": time,
            "times": [outcome.cost] if outcome.cost is not None else [],
            **dict.fromkeys(TIMES_REQUIRED, 0.0),
            "timestamp": "1970-01-01T00:00:00+00:00",
            "gpubench_status": outcome.status,
        }
    document = {
        "schema_version": SCHEMA_VERSION,
        "device_name": recording.device_name or "unknown",
        "kernel_name": recording.suite or "kernel",
        "problem_size": [v for v in problem.fixed.values() if type(v) is int] or [1],
        "tune_params_keys": list(params),
        "tune_params": params,
        "objective": "time",
        "cache": cache,
        "gpubench": {"suite": recording.suite, "problem": problem.fixed, **(extra or {})},
    }
    if _compressed(path):  # compact: the repository keeps recorded spaces this way
        text = json.dumps(document, separators=(",", ":"), default=str) + "\n"
        path.write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))
    else:
        path.write_text(json.dumps(document, indent=1, default=str) + "\n", encoding="utf-8")
    return path


def _document(path: str | os.PathLike[str]) -> dict[str, Any]:
    source = str(path)
    if os.path.getsize(path) > MAX_BYTES:
        raise ConfigError("a Kernel Tuner cache larger than 512 MiB", source=source)
    try:
        text = read_text(path)
    except (OSError, EOFError) as exc:  # a .gz that is not gzip, or cut short
        raise ConfigError(f"cannot decompress it ({exc})", source=source) from None
    for attempt in (text, text.rstrip().rstrip(",") + "}\n}"):
        try:
            document = json.loads(attempt)
        except ValueError:
            continue
        if (
            isinstance(document, dict)
            and isinstance(document.get("cache"), dict)
            and isinstance(document.get("tune_params_keys"), list)
        ):
            return document
        break
    raise ConfigError(
        "not a Kernel Tuner cache (a JSON object with tune_params_keys and cache)",
        source=source,
    )


def read(path: str | os.PathLike[str]) -> Recording:
    """A Kernel Tuner cache as a recording of one problem; every tuned parameter is
    configuration, a `variant` parameter the variant."""
    document = _document(path)
    kernel = str(document.get("kernel_name") or "kernel")
    recording = Recording(
        suite=kernel,
        source=str(path),
        device_name=str(document.get("device_name") or ""),
        foreign=True,
    )
    keys = [str(k) for k in document["tune_params_keys"]]
    for key, entry in document["cache"].items():
        if not isinstance(entry, dict) or any(k not in entry for k in keys):
            raise ConfigError(
                f"the entry {key!r} lacks a tuned parameter ({', '.join(keys)})",
                source=str(path),
            )
        point = {k: entry[k] for k in keys if k != VARIANT}
        variant = str(entry.get(VARIANT, kernel)) if VARIANT in keys else kernel
        outcome = _outcome(entry)
        if outcome is not None:
            recording.add(point, variant, outcome)
    return recording


def _outcome(entry: dict[str, Any]) -> Outcome | None:
    """A cache entry's outcome; None for an InvalidConfig (outside the space)."""
    time = entry.get("time")
    status = entry.get("gpubench_status")
    number = isinstance(time, int | float) and not isinstance(time, bool) and time > 0
    if number and (status is None or status in CANDIDATE_STATUSES):
        return Outcome(str(status or "ok"), float(time))  # type: ignore[arg-type]
    if time == "InvalidConfig":
        return None
    return Outcome(str(status or STATUS_OF_FAILURE.get(str(time), "launch_failed")))
