"""Shared fixtures; `gpu`-marked tests skip cleanly where there is no PyCUDA or no GPU."""

from __future__ import annotations

import functools
import os
import signal
import sys

import pytest

# Under mutation testing (mutmut), the pass that records which tests reach which function
# runs with MUTANT_UNDER_TEST=stats; a gpubench subprocess started by a test would inherit it
# and fail to report its calls outside the project folder. The test process keeps its own
# copy of the setting, so dropping it from the environment leaves subprocesses unmutated.
if os.environ.get("MUTANT_UNDER_TEST") == "stats":
    del os.environ["MUTANT_UNDER_TEST"]
# Under mutmut, __main__ is mutmut's script: a spawned benchmark worker would import it again
# and fail outside the project folder. Without a path to it, spawn starts the worker plainly.
if "mutmut" in str(getattr(sys.modules["__main__"], "__file__", "")):
    del sys.modules["__main__"].__file__


@functools.cache
def gpu_unavailable_reason(backend: str | None = None) -> str | None:
    """Why the GPU tests cannot run on `backend` (default: the one this run selects; GPU
    tests need PyCUDA unless it is cuda-core)."""
    from gpubench import backends

    backend = backend or backends.selected()
    if backend == "cuda-core":
        return _cuda_core_unavailable_reason()
    try:
        import pycuda.driver as cuda
    except ImportError:
        return "PyCUDA is not installed (pip install '.[cuda]' on a GPU machine)"
    try:
        cuda.init()
        if cuda.Device.count() == 0:
            return "no CUDA GPU found"
    except cuda.Error as exc:
        return f"CUDA driver unavailable: {exc}"
    return None


def _cuda_core_unavailable_reason() -> str | None:
    try:
        from cuda.bindings import driver
    except ImportError:
        return "cuda.core is not installed (pip install '.[cuda-core]' on a GPU machine)"
    try:
        status, *_ = driver.cuInit(0)
        status_count, count = driver.cuDeviceGetCount()
    except (RuntimeError, OSError) as exc:  # no driver library
        return f"CUDA driver unavailable: {exc}"
    if status != driver.CUresult.CUDA_SUCCESS or status_count != driver.CUresult.CUDA_SUCCESS:
        return f"CUDA driver unavailable: {status}"
    return None if count else "no CUDA GPU found"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = None
    for item in items:
        if "gpu" in item.keywords:
            reason = reason or gpu_unavailable_reason()
            if reason:
                item.add_marker(pytest.mark.skip(reason=f"gpu test: {reason}"))


@pytest.fixture(autouse=True, scope="session")
def private_compile_cache(tmp_path_factory):
    """Tests never write into the user's cache (and start from an empty one)."""
    import os

    os.environ["GPUBENCH_CACHE_DIR"] = str(tmp_path_factory.mktemp("gpubench-cache"))


@pytest.fixture(scope="session")
def gpu_backend():
    from gpubench import backends

    return backends.load(0)


@pytest.fixture(autouse=True)
def _stopped_workers_waited_for():
    """A runner's close kills its worker without waiting for its exit (the command waits at
    its end: gpubench.engine.spawned.wait_for_stopped); a test that closed one waits here, so
    that none piles up for the next."""
    yield
    from gpubench.engine import spawned

    spawned.wait_for_stopped()


@pytest.fixture(autouse=True)
def _signal_handlers_restored():
    """An interrupted sweep ignores further Ctrl-C until gpubench exits; in a test that is
    the worker process, and the child processes of its later tests would inherit it (a
    gpubench started there would not stop on SIGINT)."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in saved.items():
        if signal.getsignal(sig) is not handler:
            signal.signal(sig, handler)
