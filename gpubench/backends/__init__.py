"""The device backend: the only package that talks to CUDA. `load()` picks and opens it."""

from __future__ import annotations

import shutil

from gpubench.backends.base import Backend, BoundRun, CompiledModule, KernelAttributes
from gpubench.errors import EnvironmentProblem

__all__ = ["Backend", "BoundRun", "CompiledModule", "KernelAttributes", "load"]


def preflight() -> None:
    """Fail fast, in the parent process and without touching CUDA, when PyCUDA or nvcc is
    missing (the worker would find out only after starting)."""
    try:
        import pycuda  # noqa: F401  (the package only: pycuda.driver would load the driver)
    except ImportError as exc:
        raise EnvironmentProblem(
            f"PyCUDA is not installed ({exc}): on a machine with an NVIDIA GPU and driver, "
            "run  pip install 'gpubench[cuda]'"
        ) from None
    if shutil.which("nvcc") is None:
        raise EnvironmentProblem(
            "nvcc not found on PATH: PyCUDA compiles kernels with it; install the CUDA toolkit "
            "matching your driver and add its bin/ folder to PATH"
        )


def load(device_index: int = 0) -> Backend:
    """Open the PyCUDA backend on one GPU, or raise EnvironmentProblem saying what is missing."""
    preflight()
    try:
        import pycuda.driver  # noqa: F401
    except ImportError as exc:
        raise EnvironmentProblem(
            f"PyCUDA could not load the CUDA driver ({exc}): check the NVIDIA driver (nvidia-smi)"
        ) from None
    from gpubench.backends.pycuda_backend import PyCudaBackend

    return PyCudaBackend(device_index)
