"""`dask worker --preload gpubench.engine.dask_preload`: this Dask worker's gpubench worker
started as the Dask worker starts (its imports and its GPU's CUDA context), as `sweep` starts
its own before it reads the sweep file (gpubench.engine.ahead), so that a cluster's first
sweep does not wait for them: on four H200 of one host, without it, a fresh cluster's first
`configs/transpose.yaml` began measuring 3.8 s after the command, `--devices all` 2.0 s after.

The worker opens GPU 0 of what the Dask worker sees (pin the Dask worker with
CUDA_VISIBLE_DEVICES, one per GPU) with the backend GPUBENCH_BACKEND names (else the default),
and waits for the first sweep's suite; a sweep run with another backend starts its own (this
one is stopped). It holds its CUDA context for as long as the Dask worker lives.
"""

from __future__ import annotations

import logging
from typing import Any


def dask_setup(worker: Any) -> None:
    """Dask's preload hook, called as the Dask worker starts. Never in its way: a daemonic
    Dask worker (which may not start processes: the first sweep says how to start it) and any
    failure to spawn leave the start to the first sweep, as without the preload."""
    import multiprocessing

    if multiprocessing.current_process().daemon:
        return
    from gpubench.engine import ahead

    try:
        ahead.start(0, None, None, None)
    except Exception as exc:  # the Dask worker starts all the same
        logging.getLogger("gpubench").warning("gpubench worker not started ahead: %s", exc)
