"""What the engine tells its caller while a sweep runs, as data: the caller decides how to show
it (gpubench.report.notices words each one as the command line prints it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class BackendChosen:
    """Nobody named a backend and PyCUDA is missing: this one was taken instead."""

    backend: str


@dataclass(frozen=True)
class LogKept:
    """A results log that was there is kept under another name (a sweep not resumed)."""

    path: str


@dataclass(frozen=True)
class SweepStarting:
    """The GPU (the first, and all of them for a sweep over several), the points and
    variants, and the results a resumed log already holds."""

    device: dict[str, Any]
    devices: list[dict[str, Any]]
    points: int
    variants: int
    resumed: int = 0
    log: str | None = None


@dataclass(frozen=True)
class Compiled:
    """The background compile's report (gpubench.engine.kernels.CompileReport.to_dict)."""

    report: dict[str, Any]


@dataclass(frozen=True)
class CompileStopped:
    """The background compile stopped (why: the last line of its traceback); each point
    compiled its own build."""

    error: str


@dataclass(frozen=True)
class RanAgain:
    """Variants of one point whose worker died under them, run once more on a fresh one."""

    variants: list[str]
    point: dict[str, Any]
    reason: str


@dataclass(frozen=True)
class NoProfiler:
    """--profile, without Nsight Compute on PATH: the results have no profiler metrics."""


@dataclass(frozen=True)
class ProfileFailed:
    variant: str
    point: dict[str, Any]
    error: str


@dataclass(frozen=True)
class LeftOutOfSearch:
    """Variants a tuning search leaves out: they compute something other than the baseline
    (variant -> what it computes)."""

    variants: dict[str, str]


@dataclass(frozen=True)
class TuningObjective:
    """A tuning run ranks by energy (`--objective energy` or `edp`): each configuration's
    energy is measured, and none is pruned on time (pruning judges time alone)."""

    objective: str
    noun: str  # what it ranks: "energy", "energy-delay product"


Notice = (
    BackendChosen
    | LogKept
    | SweepStarting
    | Compiled
    | CompileStopped
    | RanAgain
    | NoProfiler
    | ProfileFailed
    | LeftOutOfSearch
    | TuningObjective
)
__all__ = [
    "BackendChosen",
    "CompileStopped",
    "Compiled",
    "LogKept",
    "NoProfiler",
    "Notice",
    "ProfileFailed",
    "RanAgain",
    "SweepStarting",
    "TuningObjective",
]
