"""Device backends by name. `load()` opens one; the parent process only calls `preflight()`.

Built in: "pycuda" (the default) and "cuda-core" (NVIDIA's cuda.core with NVRTC, from wheels
alone; chosen by itself, with one line saying so, where PyCUDA is not installed and cuda.core
is). A backend of one's own (or the tests' CPU stand-in) is named "package.module:Class".
`--backend` or GPUBENCH_BACKEND selects one for a whole run.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import shutil
import sys

from gpubench import install_hint
from gpubench.backends.base import Backend, BoundRun, CompiledModule, KernelAttributes
from gpubench.errors import ConfigError, EnvironmentProblem, quote

__all__ = [
    "BUILT_IN", "DEFAULT", "FROM_ENVIRONMENT", "Backend", "BoundRun", "CompiledModule",
    "KernelAttributes", "installed", "load", "preflight", "selected", "source_of",
]  # fmt: skip

DEFAULT = "pycuda"
BUILT_IN = {
    "pycuda": "gpubench.backends.pycuda_backend:PyCudaBackend",
    "cuda-core": "gpubench.backends.cuda_core_backend:CudaCoreBackend",
}
NO_PYCUDA = "PyCUDA is not installed: pip install '.[cuda]', or --backend cuda-core"
NO_NVCC = "nvcc not found on PATH: install the CUDA toolkit or --backend cuda-core"
# Where a backend's name came from when no option named it, for the line that refuses a bad one.
FROM_ENVIRONMENT = "GPUBENCH_BACKEND"
# Whether this process said that it chose cuda-core by itself.


def source_of(name: str | None) -> str:
    """Where a run's backend name came from: --backend where one was given to it."""
    return "--backend" if name else FROM_ENVIRONMENT


def installed(module: str) -> bool:
    """Whether `module` can be imported, without importing it (nor loading any driver)."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def selected(name: str | None = None) -> str:
    """The backend a run uses: `name` (--backend), else GPUBENCH_BACKEND, else PyCUDA;
    cuda-core where PyCUDA is not installed and cuda.core is (`chosen_automatically`)."""
    name = name or os.environ.get("GPUBENCH_BACKEND")
    if name:
        return name
    if installed("pycuda") or not installed("cuda.core") or not driver_present():
        # Without a driver cuda-core cannot start either: the default's one line says what
        # to install, rather than a note about cuda-core and then its failure.
        return DEFAULT
    return "cuda-core"


def chosen_automatically(name: str | None = None) -> bool:
    """Whether `selected` took cuda-core on its own (nobody named a backend and PyCUDA is
    missing): the caller says so (gpubench.model.notices.BackendChosen)."""
    return not name and not os.environ.get("GPUBENCH_BACKEND") and selected() == "cuda-core"


@functools.cache
def driver_present() -> bool:
    """Whether the NVIDIA driver's library can be loaded (loaded only: CUDA is not started,
    so forking workers stays safe)."""
    import ctypes

    names = ("nvcuda.dll",) if sys.platform == "win32" else ("libcuda.so.1", "libcuda.so")
    for name in names:
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            continue
    return False


def preflight(name: str = DEFAULT, local: bool = True, source: str = FROM_ENVIRONMENT) -> None:
    """Fail fast, in the parent process and without touching CUDA, when what the backend
    needs is missing (the worker would find out only after starting). A backend of one's own
    is checked to be one; `local=False` (points run on a cluster's machines): nothing the
    backend needs has to be here."""
    if name == "cuda-core":
        if local and not installed("cuda.core"):
            raise EnvironmentProblem(
                f"cuda.core is not installed: {install_hint('cuda-core')} (wheels only, no "
                "CUDA toolkit), or pip install cuda-core cuda-bindings nvidia-cuda-nvrtc"
            )
        return
    if name != "pycuda":
        if local:
            _factory(name, source)  # a name of no backend class: one line, here
        return
    if not local:
        return
    # Each message fits one line of an 80-column terminal with its `error: ` (the backends
    # page of the docs says the rest: what each backend needs, how to install it).
    try:
        import pycuda  # noqa: F401  (the package only: pycuda.driver would load the driver)
    except ImportError:
        raise EnvironmentProblem(NO_PYCUDA) from None
    if shutil.which("nvcc") is None:
        raise EnvironmentProblem(NO_NVCC)


def _split_reference(name: str, source: str) -> tuple[str, str]:
    """(module, attribute) of a built-in name or `package.module:Class`, checked before any
    import: a relative module (`..x`), an empty part, a second colon or a name that is no
    Python identifier is one line, never importlib's TypeError."""
    reference = BUILT_IN.get(name, name)
    module, colon, attribute = reference.partition(":")
    if not colon:
        known = ", ".join(BUILT_IN)
        raise ConfigError(
            f"unknown backend {quote(name)}: use one of {known}, or package.module:Class",
            source=source,
        )
    dotted = module.split(".")
    if not (all(part.isidentifier() for part in dotted) and attribute.isidentifier()):
        raise ConfigError(
            f"backend {quote(name)}: expected package.module:Class (an absolute module, dotted "
            "names, one colon, a class name)",
            source=source,
        )
    return module, attribute


def _refuse_user_backend(
    name: str, module: str, attribute: str, exc: BaseException, source: str
) -> None:
    """A GPUBENCH_BACKEND of the user's own that cannot be imported: one line naming why."""
    if isinstance(exc, ImportError):
        raise ConfigError(f"cannot import backend {quote(name)}: {exc}", source=source) from None
    if isinstance(exc, AttributeError):
        raise ConfigError(f"{module} has no {attribute}", source=source) from None
    # The module's own code raised (or exited) on import.
    raise ConfigError(
        f"importing backend {quote(name)} raised {type(exc).__name__}: {exc}", source=source
    ) from None


def _factory(name: str, source: str = FROM_ENVIRONMENT) -> type:
    module, attribute = _split_reference(name, source)
    reference = f"{module}:{attribute}"
    try:
        found = getattr(importlib.import_module(module), attribute)
    except (Exception, SystemExit) as exc:
        if name in BUILT_IN:  # ours: its packages or the driver are what is wrong, not a name
            detail = exc if isinstance(exc, ImportError) else f"{type(exc).__name__}: {exc}"
            raise EnvironmentProblem(
                f"the {name} backend could not load ({detail}): check the NVIDIA driver "
                "(nvidia-smi) and that the backend's packages are installed"
            ) from None
        _refuse_user_backend(name, module, attribute, exc, source)
    missing = [m for m in _CONTRACT if not callable(getattr(found, m, None))]
    if not isinstance(found, type) or missing:
        what = (
            "not a class" if not isinstance(found, type) else f"it lacks {', '.join(missing[:4])}"
        )
        raise ConfigError(
            f"{reference!r} is not a backend ({what}): name a class that implements "
            "gpubench.backends.base.Backend",
            source=source,
        )
    return found


# The methods a backend class must have (gpubench.backends.base.Backend declares them all).
_CONTRACT = tuple(n for n, v in vars(Backend).items() if callable(v) and not n.startswith("_"))


def load(device_index: int = 0, name: str | None = None, source: str = FROM_ENVIRONMENT) -> Backend:
    """Open a backend on one GPU, or raise EnvironmentProblem saying what is missing."""
    name = selected(name)
    preflight(name, source=source)
    return _factory(name, source)(device_index)
