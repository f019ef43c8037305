"""Where a run's results go, decided in one place: the JSON-lines log (and resuming it),
JSON, CSV and the timeline picture, from the command line and the sweep file together.

Everything here is decided before the first measurement, so a bad combination is refused
with exit 2 instead of being discovered (or silently ignored) after the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpubench.config import SweepSpec
from gpubench.errors import ConfigError


@dataclass(frozen=True)
class OutputRequest:
    """What the user asked for on the command line."""

    json: str | None = None
    csv: str | None = None
    jsonl: str | None = None
    resume: str | None = None
    force: bool = False
    progress: bool = False
    # None: no timeline; "": record and print it; a path: also draw it there (PNG).
    timeline: str | None = None
    # The log a sweep writes when nothing else names one (results/<config>.jsonl).
    default_log: str | None = None


@dataclass(frozen=True)
class OutputPlan:
    """The files one run writes, resolved."""

    json: str | None
    csv: str | None
    # The JSON-lines log every result is appended to as it finishes.
    log: str | None
    # True: the log already holds results of this run; append to it and skip them.
    resume: bool
    force: bool
    progress: bool
    timeline: str | None

    @property
    def files(self) -> list[str]:
        return [p for p in (self.log, self.json, self.csv) if p]


def plan(spec: SweepSpec, request: OutputRequest) -> OutputPlan:
    """Command-line paths win over the sweep file's `outputs:`; --resume names the log."""
    if request.resume and request.jsonl and _same(request.resume, request.jsonl) is False:
        raise ConfigError(
            f"--resume appends to {request.resume}; --jsonl names another log "
            f"({request.jsonl}): give only one of them",
            source="command line",
            key="--jsonl",
        )
    if request.resume and not Path(request.resume).is_file():
        raise ConfigError("no such results log to resume from", source=request.resume)
    log = request.resume or request.jsonl or spec.outputs.jsonl or request.default_log
    return OutputPlan(
        json=request.json or spec.outputs.json,
        csv=request.csv or spec.outputs.csv,
        log=log,
        resume=bool(request.resume),
        force=request.force,
        progress=request.progress,
        timeline=request.timeline,
    )


def _same(a: str, b: str) -> bool:
    return Path(a).resolve() == Path(b).resolve()
