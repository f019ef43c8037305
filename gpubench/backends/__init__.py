"""Device backends by name. `load()` opens one; the parent process only calls `preflight()`.

Built in: "pycuda" (the default) and "cuda-core" (NVIDIA's cuda.core with NVRTC, from wheels
alone; chosen by itself, with one line saying so, where PyCUDA is not installed and cuda.core
is). A backend of one's own (or the tests' CPU stand-in) is named "package.module:Class".
`--backend` or GPUBENCH_BACKEND selects one for a whole run.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import sys

from gpubench.backends.base import Backend, BoundRun, CompiledModule, KernelAttributes
from gpubench.errors import ConfigError, EnvironmentProblem

__all__ = [
    "BUILT_IN", "DEFAULT", "Backend", "BoundRun", "CompiledModule", "KernelAttributes",
    "choose", "installed", "load", "preflight", "selected",
]  # fmt: skip

DEFAULT = "pycuda"
BUILT_IN = {
    "pycuda": "gpubench.backends.pycuda_backend:PyCudaBackend",
    "cuda-core": "gpubench.backends.cuda_core_backend:CudaCoreBackend",
}
# Where the backend's name came from, for the line that refuses a bad one.
_source = "GPUBENCH_BACKEND"
# Whether this process said that it chose cuda-core by itself.
_announced = False


def choose(name: str, source: str) -> None:
    """Select a backend for this process and the workers it starts (--backend)."""
    global _source
    os.environ["GPUBENCH_BACKEND"] = name
    _source = source


def installed(module: str) -> bool:
    """Whether `module` can be imported, without importing it (nor loading any driver)."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def selected() -> str:
    """The backend this run uses: --backend or GPUBENCH_BACKEND, else PyCUDA; cuda-core, said
    once, where PyCUDA is not installed and cuda.core is."""
    name = os.environ.get("GPUBENCH_BACKEND")
    if name:
        return name
    if installed("pycuda") or not installed("cuda.core"):
        return DEFAULT
    global _announced
    if not _announced:  # once per process (the workers get the name in their WorkerSpec)
        print("note: PyCUDA is not installed; using the cuda-core backend (cuda.core, NVRTC)",
              file=sys.stderr)  # fmt: skip
        _announced = True
    return "cuda-core"


def preflight(name: str = DEFAULT, local: bool = True) -> None:
    """Fail fast, in the parent process and without touching CUDA, when what the backend
    needs is missing (the worker would find out only after starting). A backend of one's own
    is checked to be one; `local=False` (points run on a cluster's machines): nothing the
    backend needs has to be here."""
    if name == "cuda-core":
        if local and not installed("cuda.core"):
            raise EnvironmentProblem(
                "cuda.core is not installed: pip install 'gpubench[cuda-core]' (wheels only, no "
                "CUDA toolkit), or pip install cuda-core cuda-bindings nvidia-cuda-nvrtc"
            )
        return
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
            "checkout: pip install '.[cuda]'), or, without a CUDA toolkit, the cuda-core "
            "backend: pip install 'gpubench[cuda-core]' and --backend cuda-core"
        ) from None
    if shutil.which("nvcc") is None:
        raise EnvironmentProblem(
            "nvcc not found on PATH: PyCUDA compiles kernels with it; install the CUDA toolkit "
            "matching your driver and add its bin/ folder to PATH, or use --backend cuda-core "
            "(NVRTC from wheels, no toolkit)"
        )


def _factory(name: str) -> type:
    reference = BUILT_IN.get(name, name)
    module, _, attribute = reference.partition(":")
    if not attribute:
        known = ", ".join(BUILT_IN)
        raise ConfigError(
            f"unknown backend {name!r}: use one of {known}, or package.module:Class",
            source=_source,
        )
    try:
        found = getattr(importlib.import_module(module), attribute)
    except ImportError as exc:
        if name in BUILT_IN:
            raise EnvironmentProblem(
                f"the {name} backend could not load ({exc}): check the NVIDIA driver "
                "(nvidia-smi) and that the backend's packages are installed"
            ) from None
        raise ConfigError(f"cannot import backend {name!r}: {exc}", source=_source) from None
    except AttributeError:
        raise ConfigError(f"{module} has no {attribute}", source=_source) from None
    except ValueError as exc:  # ":Class", a relative name
        raise ConfigError(f"cannot import backend {name!r}: {exc}",
                          source=_source) from None  # fmt: skip
    missing = [m for m in _CONTRACT if not callable(getattr(found, m, None))]
    if not isinstance(found, type) or missing:
        what = (
            "not a class" if not isinstance(found, type) else f"it lacks {', '.join(missing[:4])}"
        )
        raise ConfigError(f"{reference!r} is not a backend ({what}): name a class that implements "
                          "gpubench.backends.base.Backend", source=_source)  # fmt: skip
    return found


# The methods a backend class must have (gpubench.backends.base.Backend declares them all).
_CONTRACT = tuple(n for n, v in vars(Backend).items() if callable(v) and not n.startswith("_"))


def load(device_index: int = 0, name: str | None = None) -> Backend:
    """Open a backend on one GPU, or raise EnvironmentProblem saying what is missing."""
    name = name or selected()
    preflight(name)
    return _factory(name)(device_index)
