"""Workers started before the sweep file is read, so that their start-up runs beside the
command's own.

A worker's start-up (Python, NumPy, the backend's imports, a CUDA context) took about a second
on the H200 hosts, and the command's (its imports, reading the sweep file, planning) about as
long again before the first worker was asked for. Knowing only the command line (the GPUs and
the backend), `start` spawns the workers the sweep will ask for at once; each opens its GPU
and then waits for its suite. They are kept in gpubench.engine.spawned until the runner that
asks for a worker of the same GPU, backend and share of the host's cores takes one; one
nobody took is stopped, by its process id. Where the command line cannot say (a Dask cluster,
several GPUs of a backend of the user's, a --devices list the parse refuses) nothing starts,
and the sweep starts its workers as before and says what was wrong. Light on purpose: no
NumPy, no CUDA here.
"""

from __future__ import annotations

import multiprocessing
from typing import Any

from gpubench.engine import opening, spawned
from gpubench.engine.devices import DEVICE_INDEX_MAX, count_devices, parse_devices
from gpubench.engine.spawned import AheadKey, interrupts_ignored, thread_share_in_environment
from gpubench.host import usable_cpus

# The backends whose GPUs are counted without CUDA: the built-in ones. A backend of the user's
# counts its own GPUs once its first worker is up, after which the others start.
COUNTED_WITHOUT_CUDA = opening.OPENS_PRIMARY_CONTEXT
DEFAULT_BACKEND = opening.DEFAULT_BACKEND


def start(device: int, devices: str | None, scheduler: str | None, backend: str | None) -> None:
    """Spawn the workers a sweep of this command line will ask for (from the main thread:
    see IsolatedRunner.spawn), without waiting for them."""
    if scheduler is not None or spawned.waiting():
        return
    indices = _indices(device, devices, backend)
    threads = max(1, usable_cpus() // len(indices)) if len(indices) > 1 else None
    context = multiprocessing.get_context("spawn")
    for index in indices:
        key = AheadKey(index, backend, threads)
        conn, child = context.Pipe()
        process = context.Process(target=_main, args=(child, key), daemon=True)
        with thread_share_in_environment(threads), interrupts_ignored():
            process.start()
        child.close()
        spawned.keep(key, process, conn)


def _indices(device: int, devices: str | None, backend: str | None) -> list[int]:
    """The GPUs the command line names, where it can say without CUDA (none otherwise): one
    GPU of any backend, not counted (NVML can be slow to start; a worker for an index past
    the host's says so, as the sweep's own would); several, or all, of a backend that counts
    them without CUDA, each of them on this host (else none: the sweep refuses the list)."""
    if devices is None:
        chosen: list[int] | str = [device] if 0 <= device <= DEVICE_INDEX_MAX else []
    else:
        try:
            chosen = parse_devices(devices)
        except ValueError:
            return []
    if isinstance(chosen, list) and len(chosen) == 1:
        return chosen
    if opening.backend_named(backend) not in COUNTED_WITHOUT_CUDA:
        return []
    count = count_devices()
    if chosen == "all":
        return list(range(count or 0))
    if not count:  # no NVML: several wait for the first worker's count
        return []
    return chosen if all(i < count for i in chosen) else []


def _main(conn: Any, key: AheadKey) -> None:
    """The worker process's entry: the heavy imports happen there, not in the parent, beside
    its GPU's opening (gpubench.engine.opening)."""
    opening.begin(key.device_index, key.backend_choice)
    from gpubench.engine.worker import worker_main_ahead

    worker_main_ahead(conn, key)
