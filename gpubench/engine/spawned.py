"""Worker processes spawned before a runner asked for them (gpubench.engine.ahead starts them):
kept here until the runner that asks for a worker of the same GPU, backend and share of the
host's cores takes one; the rest stopped, by process id. Also how a worker is stopped, and its
share of the host's threads put in the environment it is spawned with. No NumPy, no CUDA."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@contextlib.contextmanager
def interrupts_ignored() -> Iterator[None]:
    """Ctrl-C ignored while a worker is spawned: the child starts with it ignored (an
    ignored signal survives the exec, and Python keeps it so), where it would otherwise
    print a traceback if pressed before the worker set its own handlers up."""
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: the caller's signals are not ours to touch
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def thread_share_in_environment(threads: int | None) -> Iterator[None]:
    """The thread variables the user left unset, set to `threads` while a worker is spawned
    (a spawned process copies the environment as it starts)."""
    added = [name for name in THREAD_VARIABLES if name not in os.environ] if threads else []
    for name in added:
        os.environ[name] = str(threads)
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


@dataclass(frozen=True)
class AheadKey:
    """What a worker started ahead was started for: its GPU, the backend the command named
    (None: GPUBENCH_BACKEND or the default, resolved in the worker as in the parent), and its
    share of the host's cores (None: all of them)."""

    device_index: int
    backend_choice: str | None
    host_threads: int | None


# Device index -> (what it was started for, its process, the parent's end of its pipe).
_started: dict[int, tuple[AheadKey, Any, Any]] = {}


def keep(key: AheadKey, process: Any, conn: Any) -> None:
    """Keep a worker spawned ahead until a runner takes it."""
    _started[key.device_index] = (key, process, conn)


def waiting() -> bool:
    """Whether any worker spawned ahead is still waiting to be taken."""
    return bool(_started)


def take(device_index: int, backend: str, host_threads: int | None) -> tuple[Any, Any] | None:
    """The worker started ahead for this GPU, if it was started for this backend and share
    of the cores and is still alive: (its process, the parent's end of its pipe); the worker
    then waits for its suite. One that does not fit is stopped."""
    entry = _started.pop(device_index, None)
    if entry is None:
        return None
    key, process, conn = entry
    from gpubench import backends

    fits = (backends.selected(key.backend_choice), key.host_threads) == (backend, host_threads)
    if not fits or not process.is_alive():
        stop(process, conn)
        return None
    return process, conn


def discard() -> None:
    """Stop every worker started ahead that no runner took."""
    while _started:
        _, process, conn = _started.popitem()[1]
        stop(process, conn)


# Workers killed without waiting for their exit (stop(wait=False)), until wait_for_stopped.
_stopping: list[Any] = []


def stop(process: Any, conn: Any, wait: bool = True) -> None:
    """Kill a worker and the compiler processes it started (its process group, by the
    group's id: the worker's own), then wait for it; or, `wait=False`, leave its exit to
    run beside what the caller does next, until wait_for_stopped: a worker's exit is the
    kernel tearing its CUDA context down, 0.1-0.2 s on the H200s, while the command prints."""
    with contextlib.suppress(OSError):  # not its own group yet, or nothing left in it
        os.killpg(process.pid, signal.SIGKILL)
    if process.is_alive():
        process.kill()
    conn.close()
    if wait:
        process.join(timeout=10)
    else:
        _stopping.append(process)


def wait_for_stopped(timeout_s: float = 10.0) -> None:
    """Wait for the exit of every worker stopped without waiting (killed already: nothing
    of theirs runs on)."""
    while _stopping:
        _stopping.pop().join(timeout=timeout_s)
