"""Fresh random inputs, made in parallel: the fills suites use, on every core.

A suite's `inputs(point, rng)` asks for arrays of up to billions of elements; NumPy's
Generator fills them on one core (two 2^28-element arrays take seconds). `ParallelRandom`
has the same methods for the fills that matter (`random`, `standard_normal`, `integers`,
`uniform`): large arrays are cut into fixed chunks, each chunk drawn from its own stream
(SeedSequence children keyed by call and chunk), on a thread pool (NumPy releases the GIL
while it fills). The values depend on the seed only, never on the number of threads, so a
result's recorded seed still reproduces its inputs. Everything else (`choice`,
`permutation`, small arrays) goes to an ordinary Generator seeded from the same seed.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from gpubench.host import usable_cpus

# Elements per chunk: large enough that a thread's start-up is noise, small enough that a
# 2^28-element array keeps 16 cores busy.
CHUNK = 1 << 22


# The threads this process's fills may use at most (None: every core, up to 32): a pool
# worker's share of the host (gpubench.engine.worker.WorkerSpec.host_threads).
_limit: int | None = None


def limit_threads(count: int) -> None:
    global _limit
    _limit = max(1, count)


def threads() -> int:
    return max(1, min(32, _limit or usable_cpus()))


class ParallelRandom:
    """np.random.Generator's large fills on every core, reproducible from one seed."""

    def __init__(self, seed: int, workers: int | None = None) -> None:
        self.seed = seed
        self.workers = workers or threads()
        self._generator = np.random.default_rng(seed)
        self._calls = 0

    def __getattr__(self, name: str) -> Any:
        # choice, permutation, shuffle, ...: the sequential generator.
        return getattr(self._generator, name)

    # -- the parallel fills -------------------------------------------------------------------
    def random(self, size: Any = None, dtype: Any = np.float64, out: Any = None) -> Any:
        return self._fill(
            size,
            dtype,
            out,
            lambda g, o: g.random(dtype=o.dtype, out=o),
            lambda: self._generator.random(size, dtype=dtype, out=out),
        )

    def standard_normal(self, size: Any = None, dtype: Any = np.float64, out: Any = None) -> Any:
        return self._fill(
            size,
            dtype,
            out,
            lambda g, o: g.standard_normal(dtype=o.dtype, out=o),
            lambda: self._generator.standard_normal(size, dtype=dtype, out=out),
        )

    def integers(
        self,
        low: Any,
        high: Any = None,
        size: Any = None,
        dtype: Any = np.int64,
        endpoint: bool = False,
    ) -> Any:
        def chunk(g: np.random.Generator, o: np.ndarray) -> None:
            o[...] = g.integers(low, high, o.shape, dtype=o.dtype, endpoint=endpoint)

        def sequential() -> Any:
            return self._generator.integers(low, high, size, dtype=dtype, endpoint=endpoint)

        if not (np.isscalar(low) and (high is None or np.isscalar(high))):
            return sequential()
        return self._fill(size, dtype, None, chunk, sequential)

    def uniform(self, low: float = 0.0, high: float = 1.0, size: Any = None) -> Any:
        if not (np.isscalar(low) and np.isscalar(high)):
            return self._generator.uniform(low, high, size)
        values = self.random(size)
        if isinstance(values, np.ndarray):
            values *= high - low
            values += low
            return values
        return low + (high - low) * values

    # -- chunks -------------------------------------------------------------------------------
    def _fill(
        self,
        size: Any,
        dtype: Any,
        out: Any,
        draw: Callable[[np.random.Generator, np.ndarray], None],
        sequential: Callable[[], Any],
    ) -> Any:
        shape = _shape(size, out)
        count = int(np.prod(shape, dtype=np.int64)) if shape is not None else 0
        if shape is None or count < 2 * CHUNK:
            return sequential()
        result = out if out is not None else np.empty(shape, dtype=dtype)
        if not result.flags.c_contiguous:
            return sequential()
        flat = result.reshape(-1)
        self._calls += 1
        call = self._calls
        starts = range(0, count, CHUNK)

        def one(index_start: tuple[int, int]) -> None:
            index, start = index_start
            stream = np.random.SeedSequence(self.seed, spawn_key=(call, index))
            draw(np.random.Generator(np.random.PCG64(stream)), flat[start : start + CHUNK])

        with ThreadPoolExecutor(self.workers, thread_name_prefix="gpubench-random") as pool:
            list(pool.map(one, enumerate(starts)))
        return result


def _shape(size: Any, out: Any) -> tuple[int, ...] | None:
    if out is not None:
        return tuple(out.shape)
    if size is None:
        return None
    if isinstance(size, int | np.integer):
        return (int(size),)
    return tuple(int(s) for s in size)
