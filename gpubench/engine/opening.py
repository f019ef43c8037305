"""A worker's GPU opened while the worker imports: the host's GPU count (NVML) and the pinned
GPU's CUDA start-up (cuInit and its primary context, through the driver library with ctypes,
which lets go of the GIL) begun on threads as the worker process starts: a worker started
ahead (gpubench.engine.ahead) begins them before it imports NumPy and the backend; one a
runner starts has imported NumPy already, and begins them beside the backend's imports.

Traced on the H200 hosts, a worker spent about 0.45 s importing, 0.1 s counting the GPUs and
0.33 s starting CUDA, one after the other (two workers starting CUDA at once took 0.6-0.7 s
each). Begun here, the count and CUDA's start-up run beside the imports; the backend's own
cuInit and primary-context retain then find them done. Nothing here reports: a GPU that would
not open fails again, with its message, when the backend opens it. Light on purpose: no NumPy,
no CUDA bindings.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable
from typing import Any

from gpubench.engine import devices

# The built-in backends, which open the pinned GPU's primary context, and the default
# (gpubench.backends.BUILT_IN and DEFAULT, named here so that the modules a worker and the
# command line read before their heavy imports stay light; a test keeps them the same).
OPENS_PRIMARY_CONTEXT = ("pycuda", "cuda-core")
DEFAULT_BACKEND = "pycuda"
DRIVER_LIBRARY = "libcuda.so.1"


def backend_named(choice: str | None) -> str:
    """The backend a choice names without importing the backends: the choice, else
    GPUBENCH_BACKEND, else the default (where PyCUDA is missing the parent picks cuda-core,
    another built-in one)."""
    return choice or os.environ.get("GPUBENCH_BACKEND") or DEFAULT_BACKEND


class _Opening:
    """What `begin` started: the count's answer and the thread retaining the context."""

    def __init__(self) -> None:
        self.count: Callable[[], int | None] = devices.count_devices
        self.thread: threading.Thread | None = None
        self.retained: tuple[Any, Any] | None = None  # (the driver library, its device)


_opening = _Opening()


def begin(device_index: int, backend_choice: str | None) -> None:
    """Count the host's GPUs and start CUDA on the GPU this worker is pinned to, on threads.
    The visible GPUs are read before the pin (which leaves this process one), and the pin is
    written before either thread starts (no thread reads the environment while it changes)."""
    visible = devices.visible_devices()
    pinned = backend_named(backend_choice) in OPENS_PRIMARY_CONTEXT
    if pinned:
        try:
            devices.pin(device_index)
        except ValueError:  # no such device: the backend's load says so
            pinned = False
    _opening.count = devices.count_devices_later(visible)
    if pinned:
        _opening.thread = threading.Thread(
            target=_retain_primary_context, daemon=True, name="gpubench-open-gpu"
        )
        _opening.thread.start()


def host_count() -> int | None:
    """The host's GPU count begun by `begin` (counted now where nothing was begun)."""
    return _opening.count()


def finish() -> None:
    """Once the backend holds the context: give this module's hold on it back."""
    if _opening.thread is not None:
        _opening.thread.join()
        _opening.thread = None
    if _opening.retained is not None:
        library, device = _opening.retained
        _opening.retained = None
        release = getattr(library, "cuDevicePrimaryCtxRelease_v2", None)
        (release or library.cuDevicePrimaryCtxRelease)(device)


def _retain_primary_context() -> None:
    try:
        library = ctypes.CDLL(DRIVER_LIBRARY)
        if library.cuInit(0) != 0:
            return
        device = ctypes.c_int()
        if library.cuDeviceGet(ctypes.byref(device), 0) != 0:
            return
        context = ctypes.c_void_p()
        if library.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) == 0:
            _opening.retained = (library, device)
    except (OSError, AttributeError):  # no driver library here: the backend says so
        return
