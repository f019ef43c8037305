"""Join the JSON-lines logs of one sweep's shards (`sweep --shard I/N`) into one log.

Logs of different sweeps, suites or kernel sources are refused: their results do not belong
in one table. The merged log's header covers the union of the shards' points, so when every
shard is there it is the log of the whole sweep (and `--resume` continues it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpubench.errors import ConfigError, quote
from gpubench.model import results
from gpubench.model.results import point_key

# Fingerprint entries that must agree; the points, the shard and the GPUs may differ.
MUST_AGREE = ("suite", "kernel_source_sha256", "declarations_sha256", "variants", "baseline",
              "timing")  # fmt: skip


def _gather(
    logs: list[tuple[str, dict[str, Any], list[results.Result]]],
    first_path: str,
    first_header: dict[str, Any],
) -> tuple[list[results.Result], set[str], list[dict]]:
    """The results of every log (each once), the sweep's points and the GPUs that measured,
    after checking the logs belong to one sweep."""
    first = first_header.get("fingerprint") or {}
    seen: dict[tuple[str, str], str] = {}
    merged: list[results.Result] = []
    points: set[str] = set()
    devices: list[dict[str, Any]] = []
    for path, header, found in logs:
        stamp = header.get("fingerprint") or {}
        for key in MUST_AGREE:
            if stamp.get(key) != first.get(key):
                raise ConfigError(
                    f"{key} differs from {first_path}'s ({quote(stamp.get(key))} vs "
                    f"{quote(first.get(key))}): logs of different sweeps or kernel sources",
                    source=path,
                )
        if (header.get("spec") or {}).get("axes") != (first_header.get("spec") or {}).get("axes"):
            raise ConfigError(f"its sweep's parameters differ from {first_path}'s", source=path)
        points.update(stamp.get("points") or [])
        environment = header.get("environment") or {}
        for device in environment.get("devices") or [
            {
                "uuid": environment.get("gpu_uuid"),
                "name": (environment.get("device") or {}).get("name"),
            }
        ]:
            if device not in devices:
                devices.append(device)
        for result in found:
            key = (point_key(result.point), result.variant)
            if key in seen:
                raise ConfigError(
                    f"{result.variant} at {point_key(result.point)} is also in "
                    f"{seen[key]}: shards never overlap",
                    source=path,
                )
            seen[key] = path
            merged.append(result)
    return merged, points, devices


def merge(paths: list[str], output: str, force: bool = False) -> tuple[int, int]:
    """Write the merged log; (logs, results) merged."""
    from gpubench.store import outputs

    if len(paths) < 2:
        raise ConfigError("give at least two logs to merge", key="LOGS")
    if any(Path(p).resolve() == Path(output).resolve() for p in paths):
        raise ConfigError("the output is one of the logs being merged", source=output)
    outputs.check_writable(output, "--output")
    if outputs.holds_results(output) and not force:
        raise ConfigError("holds results already: give --force to replace it", source=output)
    logs = [(path, *results.load_jsonl(path)) for path in paths]
    first_path, first_header, _ = logs[0]
    first = first_header.get("fingerprint") or {}
    if not first:
        raise ConfigError("the header has no fingerprint: not a sweep log", source=first_path)
    merged, points, devices = _gather(logs, first_path, first_header)
    fingerprint = {k: v for k, v in first.items() if k not in ("shard", "points", "gpu_uuids")}
    fingerprint["points"] = sorted(points)
    uuids = sorted({str(d.get("uuid")) for d in devices})
    if len(uuids) > 1:
        fingerprint["gpu_uuids"] = uuids
    environment = dict(first_header.get("environment") or {})
    environment["devices"] = devices
    header = {
        "fingerprint": fingerprint,
        "suite": first_header.get("suite"),
        "spec": first_header.get("spec"),
        "environment": environment,
        "merged_from": [str(p) for p in paths],
    }
    log = results.JsonLinesLog(output, header=header)
    try:
        for result in merged:
            log.write(result)
    finally:
        log.close()
    return len(logs), len(merged)
