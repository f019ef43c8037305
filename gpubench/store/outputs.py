"""Where a run's results go, decided in one place: the JSON-lines log (and resuming it),
JSON, CSV and the timeline picture, from the command line and the sweep file together.

Everything here is decided and checked before the first measurement: a bad combination, a
path that cannot be written, a log that would be overwritten, or a missing optional
dependency is refused with one line, instead of being discovered after minutes of measuring.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpubench import install_hint
from gpubench.errors import ConfigError, EnvironmentProblem
from gpubench.load.config import SweepSpec

if TYPE_CHECKING:
    from gpubench.model.results import JsonLinesLog


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
    # The results table as GitHub-flavoured markdown (a CI job summary, a pull request).
    markdown: str | None = None
    # Profile every verified kernel variant once more under Nsight Compute (--profile).
    profile: bool = False
    # Print each result's host-side phases and the GPU's share of the wall time (--verbose).
    verbose: bool = False
    # Append the run to this history store (--history [PATH]), under this label (--label).
    history: str | None = None
    label: str = ""


@dataclass(frozen=True)
class OutputPlan:
    """The files one run writes, resolved and checked."""

    json: str | None
    csv: str | None
    # The JSON-lines log every result is appended to as it finishes.
    log: str | None
    # True: the log already holds results of this run; append to it and skip them.
    resume: bool
    force: bool
    progress: bool
    timeline: str | None
    # An earlier log that --force moved aside instead of overwriting it, if any.
    kept: str | None = None
    markdown: str | None = None
    verbose: bool = False
    history: str | None = None
    label: str = ""

    @property
    def files(self) -> list[str]:
        return [p for p in (self.log, self.json, self.csv, self.markdown) if p]


def plan(spec: SweepSpec, request: OutputRequest, dry: bool = False) -> OutputPlan:
    """Command-line paths win over the sweep file's `outputs:`; --resume names the log.
    `dry`: check everything, change nothing (no earlier log set aside)."""
    if request.resume and request.jsonl and not _same(request.resume, request.jsonl):
        raise ConfigError(
            f"--resume appends to {request.resume}; --jsonl names another log "
            f"({request.jsonl}): give only one of them",
            source="command line",
            key="--jsonl",
        )
    refuse_empty_paths(request)
    if request.resume and not Path(request.resume).is_file():
        raise ConfigError("no such results log to resume from", source=request.resume)
    log = request.resume or request.jsonl or spec.outputs.jsonl or request.default_log
    json_path = request.json or spec.outputs.json
    csv_path = request.csv or spec.outputs.csv
    timeline_png = request.timeline or None
    named = {
        "--jsonl": log,
        "--json": json_path,
        "--csv": csv_path,
        "--timeline": timeline_png,
        "--markdown": request.markdown,
    }
    for option, path in named.items():
        if path:
            check_writable(path, option)
    history_path = request.history or spec.outputs.history
    from gpubench.store.history import check_label

    check_label(request.label)  # a label the store would refuse, refused before measuring
    if history_path:
        _check_history(history_path, dry)
        named["--history"] = history_path
    paths = [Path(p).resolve() for p in named.values() if p]
    if len(paths) != len(set(paths)):
        raise ConfigError("two outputs name the same file", source="command line")
    if timeline_png:
        _check_timeline_picture(timeline_png)
    kept = _earlier_log(log, request, dry)
    return OutputPlan(
        json=json_path,
        csv=csv_path,
        log=log,
        resume=bool(request.resume),
        force=request.force,
        progress=request.progress,
        timeline=request.timeline,
        kept=kept,
        markdown=request.markdown,
        verbose=request.verbose,
        history=history_path,
        label=request.label,
    )


def _earlier_log(log: str | None, request: OutputRequest, dry: bool) -> str | None:
    """Where the results an earlier run left in `log` were set aside, if it left any (None
    when resuming it, or on a dry run)."""
    if not (log and not request.resume and holds_results(log)):
        return None
    # A finished run leaves nothing to resume: the next run sets its log aside (kept
    # beside it) by itself, so a nightly job is one command. Only an unfinished log asks.
    if not request.force and not log_finished(log):
        raise ConfigError(
            "holds results of an earlier run: continue it with --resume, or give --force "
            "to start a new log (the old one is kept beside it)",
            source=log,
        )
    return None if dry else _set_aside(Path(log))


def _check_timeline_picture(path: str) -> None:
    """--timeline FILE: matplotlib installed, and FILE a picture it writes."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise EnvironmentProblem(
            "--timeline FILE draws with matplotlib, which is not installed: "
            f"{install_hint('plot')} (or --timeline without FILE for the text chart)"
        ) from None
    check_picture(path, "--timeline")


def refuse_empty_paths(request: OutputRequest) -> None:
    """An empty path names no file: refused, rather than taken as "not given" (which would
    silently write nothing) or as the working directory. `--timeline` without FILE is the
    text chart, not an empty path. (The sweep file's `outputs:` are checked where it is
    read.)"""
    given = {
        "--json": request.json,
        "--csv": request.csv,
        "--jsonl": request.jsonl,
        "--resume": request.resume,
        "--markdown": request.markdown,
        "--history": request.history,
    }
    for option, path in given.items():
        if path is not None and not path.strip():
            raise ConfigError(
                f"an empty path ({path!r}): give a file name", source="command line", key=option
            )
    from gpubench.store.history import check_label

    check_label(request.label)  # as the real run would


def check_picture(path: str, option: str) -> None:
    """Refuse, before anything is measured or read, a picture path whose extension matplotlib
    does not write (its savefig would raise a ValueError listing its formats, after the
    work), or which has none (savefig would add one, writing a file other than the named)."""
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in formats:
        shown = f"'.{suffix}'" if suffix else "no extension"
        raise ConfigError(
            f"a picture needs an extension matplotlib writes, got {shown}: .png, "
            f".svg or .pdf (or {', '.join(f'.{f}' for f in sorted(formats))})",
            source=path,
            key=option,
        )


def _check_history(path: str, dry: bool) -> None:
    """A history store that cannot be opened is refused before the first measurement (a
    dry check opens only one that exists: it creates nothing)."""
    from gpubench.store.history import History

    check_writable(path, "--history")
    if dry and not Path(path).exists():
        return
    History.open(path).close()


def check_writable(path: str, option: str) -> None:
    """Refuse, before anything runs, a path that cannot become a file we write: by trying
    (permission bits do not tell about /proc, read-only mounts or names that are too long)."""
    if not path.strip():  # Path("") is the working directory: never what was meant
        raise ConfigError(
            f"an empty path ({path!r}): give a file name", source="command line", key=option
        )
    target = Path(path)
    try:
        if target.is_dir():
            raise ConfigError("is a directory; give a file name", source=path, key=option)
        if target.is_fifo() or target.is_socket():  # opening one to try it would block
            raise ConfigError("is a pipe or socket; give a file name", source=path, key=option)
        parent = target.parent
        while not parent.exists():
            parent = parent.parent
        if not parent.is_dir():
            raise ConfigError(f"{parent} is a file, not a directory", source=path, key=option)
        checked = target if target.exists() else parent
        if not os.access(checked, os.W_OK):
            raise ConfigError(
                f"cannot write here ({checked} is read-only for you)", source=path, key=option
            )
        if target.parent.is_dir():
            existed = target.exists()
            with target.open("a"):
                pass
            if not existed:
                target.unlink()
    except OSError as exc:
        raise ConfigError(f"cannot write here ({exc.strerror})", source=path, key=option) from None


def holds_results(log: str) -> bool:
    """True if the file exists and has any line after its header."""
    path = Path(log)
    if not path.is_file():
        return False
    try:
        with path.open("rb") as handle:
            return sum(1 for line in handle if line.strip()) > 1
    except OSError:
        return False


def log_finished(log: str) -> bool:
    """True if the log holds a result for every point and variant its header plans (the
    fingerprint's points and variants). Read line by line: memory stays bounded by the plan."""
    import json

    try:
        with Path(log).open("rb") as handle:
            header = json.loads(handle.readline() or b"{}")
            stamp = header.get("fingerprint") if isinstance(header, dict) else None
            if not isinstance(stamp, dict):
                return False
            points, variants = stamp.get("points"), stamp.get("variants")
            if not (isinstance(points, list) and isinstance(variants, list)):
                return False
            planned, done = len(points) * len(variants), set()
            for line in handle:
                record = json.loads(line) if line.strip() else None
                if isinstance(record, dict) and record.get("kind") == "result":
                    done.add(
                        (
                            json.dumps(record.get("point"), sort_keys=True),
                            str(record.get("variant")),
                        )
                    )
            return planned > 0 and len(done) >= planned
    except (OSError, ValueError):
        return False


def _set_aside(path: Path) -> str:
    for n in range(1, 10_000):
        kept = path.with_name(f"{path.name}.{n}")
        if not kept.exists():
            path.rename(kept)
            return str(kept)
    raise ConfigError("too many earlier logs kept beside it; remove some", source=str(path))


def _same(a: str, b: str) -> bool:
    return Path(a).resolve() == Path(b).resolve()


def results_log(files: OutputPlan, header: dict[str, Any]) -> JsonLinesLog | None:
    """The JSON-lines results log as an observer (where the plan has one): each result
    appended and synced the moment it arrives, the header first (or a resumed log continued):
    the default observer of every sweep, and the file --resume reads."""
    from gpubench.model.results import JsonLinesLog

    return JsonLinesLog(files.log, header=header, append=files.resume) if files.log else None
