"""Device backends by name. `load()` opens one; the parent process only calls `preflight()`.

Built in: "pycuda" (the default). A backend of one's own (or the tests' CPU stand-in) is named
"package.module:Class"; GPUBENCH_BACKEND selects one for a whole run.
"""

from __future__ import annotations

import importlib
import os
import shutil

from gpubench.backends.base import Backend, BoundRun, CompiledModule, KernelAttributes
from gpubench.errors import ConfigError, EnvironmentProblem

__all__ = [
    "BUILT_IN", "DEFAULT", "Backend", "BoundRun", "CompiledModule", "KernelAttributes",
    "load", "preflight", "selected",
]  # fmt: skip

DEFAULT = "pycuda"
BUILT_IN = {"pycuda": "gpubench.backends.pycuda_backend:PyCudaBackend"}


def selected() -> str:
    """The backend this run uses: GPUBENCH_BACKEND, else the default."""
    return os.environ.get("GPUBENCH_BACKEND") or DEFAULT


def preflight(name: str = DEFAULT, local: bool = True) -> None:
    """Fail fast, in the parent process and without touching CUDA, when what the backend
    needs is missing (the worker would find out only after starting). A backend of one's own
    is checked to be one; `local=False` (points run on a cluster's machines): nothing the
    backend needs has to be here."""
    if name != "pycuda":
        if local:
            _factory(name)  # GPUBENCH_BACKEND naming no backend class: one line, here
        return
    if not local:
        return
    try:
        import pycuda  # noqa: F401  (the package only: pycuda.driver would load the driver)
    except ImportError as exc:
        raise EnvironmentProblem(
            f"PyCUDA is not installed ({exc}): on a machine with an NVIDIA GPU and driver, "
            "install pycuda and nvidia-ml-py (pip install pycuda nvidia-ml-py; in a gpubench "
            "checkout: pip install '.[cuda]')"
        ) from None
    if shutil.which("nvcc") is None:
        raise EnvironmentProblem(
            "nvcc not found on PATH: PyCUDA compiles kernels with it; install the CUDA toolkit "
            "matching your driver and add its bin/ folder to PATH"
        )


def _factory(name: str) -> type:
    reference = BUILT_IN.get(name, name)
    module, _, attribute = reference.partition(":")
    if not attribute:
        known = ", ".join(BUILT_IN)
        raise ConfigError(
            f"unknown backend {name!r}: use one of {known}, or package.module:Class",
            source="GPUBENCH_BACKEND",
        )
    try:
        found = getattr(importlib.import_module(module), attribute)
    except ImportError as exc:
        if name == "pycuda":
            raise EnvironmentProblem(
                f"PyCUDA could not load the CUDA driver ({exc}): check the NVIDIA driver "
                "(nvidia-smi)"
            ) from None
        raise ConfigError(
            f"cannot import backend {name!r}: {exc}", source="GPUBENCH_BACKEND"
        ) from None
    except AttributeError:
        raise ConfigError(f"{module} has no {attribute}", source="GPUBENCH_BACKEND") from None
    except ValueError as exc:  # ":Class", a relative name
        raise ConfigError(f"cannot import backend {name!r}: {exc}",
                          source="GPUBENCH_BACKEND") from None  # fmt: skip
    missing = [m for m in _CONTRACT if not callable(getattr(found, m, None))]
    if not isinstance(found, type) or missing:
        what = (
            "not a class" if not isinstance(found, type) else f"it lacks {', '.join(missing[:4])}"
        )
        raise ConfigError(f"{reference!r} is not a backend ({what}): name a class that implements "
                          "gpubench.backends.base.Backend", source="GPUBENCH_BACKEND")  # fmt: skip
    return found


# The methods a backend class must have (gpubench.backends.base.Backend declares them all).
_CONTRACT = tuple(n for n, v in vars(Backend).items() if callable(v) and not n.startswith("_"))


def load(device_index: int = 0, name: str | None = None) -> Backend:
    """Open a backend on one GPU, or raise EnvironmentProblem saying what is missing."""
    name = name or selected()
    preflight(name)
    return _factory(name)(device_index)
