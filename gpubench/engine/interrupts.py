"""Ctrl-C and SIGTERM around a sweep: SIGTERM handled like Ctrl-C while points run, both
ignored while results are gathered and written, and the caller's handlers given back."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from typing import Any


def handlers() -> dict[int, Any]:
    """The Ctrl-C and SIGTERM handlers now, to give back with `restore`."""
    return {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}


def restore(handlers: dict[int, Any]) -> None:
    with contextlib.suppress(ValueError, TypeError):  # not the main thread; a C handler
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def ignore_interrupts() -> None:
    """Ctrl-C and SIGTERM ignored from here (the main thread only; elsewhere nothing)."""
    with contextlib.suppress(ValueError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


@contextlib.contextmanager
def protect_outputs() -> Iterator[None]:
    """Ignore Ctrl-C and SIGTERM while the results are gathered or written (after an
    interrupt the command line keeps them ignored until it exits with 130: an impatient
    second Ctrl-C must not turn into a traceback)."""
    previous = handlers()
    ignore_interrupts()  # not the main thread: nothing to protect
    try:
        yield
    finally:
        restore(previous)


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (a CI job cancelled, `kill`) is handled like Ctrl-C: exit 130, outputs written."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
