"""Suite name → Benchmark. Suites are discovered from the modules of gpubench.benchmarks.

A new suite is a module there that defines `BENCHMARK`; nothing here changes.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from gpubench.benchmark import Benchmark
from gpubench.errors import ConfigError, did_you_mean
from gpubench.pyfiles import load_python_file

__all__ = [
    "all_suites",
    "did_you_mean",
    "get",
    "load_python_file",
    "load_suite_file",
    "suite_names",
]


@cache
def all_suites() -> dict[str, Benchmark]:
    import gpubench.benchmarks as package

    suites: dict[str, Benchmark] = {}
    for module_info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if module_info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package.__name__}.{module_info.name}")
        bench = getattr(module, "BENCHMARK", None)
        if isinstance(bench, Benchmark):
            suites[bench.name] = bench
    return suites


def suite_names() -> list[str]:
    """Names without importing the suites (keeps `gpubench --help` fast)."""
    import gpubench.benchmarks as package

    return sorted(
        m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_")
    )


@cache
def load_suite_file(path: str) -> Benchmark:
    """A user's own suite: a .py file that defines BENCHMARK (a Benchmark instance). Whatever
    goes wrong while loading it is one ConfigError naming the file and the problem."""
    module = load_python_file(path)
    bench = getattr(module, "BENCHMARK", None)
    if bench is None:
        raise ConfigError(
            "defines no BENCHMARK = <an instance of a gpubench.benchmark.Benchmark subclass>",
            source=path,
        )
    if isinstance(bench, type) and issubclass(bench, Benchmark):
        raise ConfigError(
            f"BENCHMARK is the class {bench.__name__}; make it an instance: "
            f"BENCHMARK = {bench.__name__}()",
            source=path,
        )
    if not isinstance(bench, Benchmark):
        raise ConfigError(
            f"BENCHMARK is a {type(bench).__name__}, not an instance of a "
            "gpubench.benchmark.Benchmark subclass",
            source=path,
        )
    missing = [
        attribute
        for attribute in ("name", "description", "params", "variants", "baseline")
        if not hasattr(bench, attribute)
    ]
    if missing:
        raise ConfigError(f"the suite does not declare {', '.join(missing)}", source=path)
    if bench.baseline not in bench.variant_names:
        raise ConfigError(
            f"baseline {bench.baseline!r} is not one of its variants "
            f"({', '.join(bench.variant_names)})",
            source=path,
        )
    return bench


def get(name: str, *, source: str | None = None, key: str | None = None) -> Benchmark:
    """A suite by name, or by the path of a .py file that defines one."""
    if name.endswith((".py", ".yaml", ".yml")):
        from pathlib import Path

        if not Path(name).is_file():
            raise ConfigError(f"suite file {name!r} not found", source=source, key=key)
        if name.endswith(".py"):
            return load_suite_file(str(Path(name).resolve()))
        from gpubench import kernel_suite

        return kernel_suite.load_benchmark(str(Path(name).resolve()))
    suites = all_suites()
    if name not in suites:
        known = ", ".join(sorted(suites))
        raise ConfigError(
            f"unknown suite {name!r}{did_you_mean(name, list(suites))}; known suites: {known}",
            source=source,
            key=key,
        )
    return suites[name]
