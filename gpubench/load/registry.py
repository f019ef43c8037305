"""Suite name → Benchmark. Suites are discovered from the modules of gpubench.benchmarks.

A new suite is a module there that defines `BENCHMARK`; nothing here changes.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from functools import cache
from typing import Any

from gpubench.errors import ConfigError, did_you_mean, quote
from gpubench.formats.python_file import load_python_file
from gpubench.model.benchmark import Benchmark, Param, Variant

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
            "defines no BENCHMARK = <an instance of a gpubench.model.benchmark.Benchmark subclass>",
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
            "gpubench.model.benchmark.Benchmark subclass",
            source=path,
        )
    missing = [
        attribute
        for attribute in ("name", "description", "params", "variants", "baseline")
        if not hasattr(bench, attribute)
    ]
    if missing:
        raise ConfigError(f"the suite does not declare {', '.join(missing)}", source=path)
    problem = _declaration_problem(bench)
    if problem:
        key, message = problem
        raise ConfigError(message, source=path, key=key)
    if bench.baseline not in bench.variant_names:
        raise ConfigError(
            f"baseline {bench.baseline!r} is not one of its variants "
            f"({', '.join(bench.variant_names)})",
            source=path,
        )
    return bench


IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SUITE_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
PARAM_TYPES = (int, float, str, bool)


def _declaration_problem(bench: Benchmark) -> tuple[str, str] | None:
    """(key, message) of the first wrong-typed declaration of a suite file, or None: a wrong
    type here would otherwise surface later as a traceback from deep in the CLI or a sweep."""
    if not isinstance(bench.name, str) or not SUITE_NAME.match(bench.name):
        return "name", f"expected a short name (letters, digits, _ . -), got {quote(bench.name)}"
    if not isinstance(bench.description, str):
        return "description", f"expected text, got {quote(bench.description)}"
    declared = (("params", bench.params, Param), ("variants", bench.variants, Variant))
    for key, items, kind in declared:
        if not isinstance(items, tuple | list):
            return key, f"expected a tuple of {kind.__name__}(...), got {quote(items)}"
        names: set[Any] = set()
        for i, item in enumerate(items):
            if not isinstance(item, kind):
                return f"{key}[{i}]", f"expected a {kind.__name__}(...), got {quote(item)}"
            if not isinstance(item.name, str) or not IDENTIFIER.match(item.name):
                return (
                    f"{key}[{i}]",
                    f"expected a name (a Python identifier), got {quote(item.name)}",
                )
            if item.name in names:
                return f"{key}[{i}]", f"{item.name!r} is declared twice"
            names.add(item.name)
    for i, param in enumerate(bench.params):
        problem = _param_problem(param)
        if problem:
            return f"params[{i}] ({param.name})", problem
    return None


def _param_problem(param: Param) -> str | None:
    if param.type not in PARAM_TYPES:
        return f"type must be int, float, str or bool, got {getattr(param.type, '__name__', quote(param.type))}"
    if param.choices is not None and (
        not isinstance(param.choices, tuple | list) or not param.choices
    ):
        return f"choices must be a non-empty tuple, got {quote(param.choices)}"
    if param.default is None:
        return None  # derived in Benchmark.resolve
    try:
        param.coerce(param.default)
    except ValueError as exc:
        return f"the default does not hold: {exc}"
    return None


def get(name: str, *, source: str | None = None, key: str | None = None) -> Benchmark:
    """A suite by name, or by the path of a .py file that defines one."""
    if name.endswith((".py", ".yaml", ".yml")):
        from pathlib import Path

        try:
            found = Path(name).is_file()
        except (OSError, ValueError) as exc:  # a name past the system's limit, a NUL byte
            reason = getattr(exc, "strerror", None) or str(exc)
            raise ConfigError(
                f"suite file {quote(name)} is no usable file name: {reason}", source=source, key=key
            ) from None
        if not found:
            raise ConfigError(f"suite file {name!r} not found", source=source, key=key)
        if name.endswith(".py"):
            return load_suite_file(str(Path(name).resolve()))
        from gpubench.kernelfile import benchmark as kernelfile_benchmark

        return kernelfile_benchmark.load_benchmark(str(Path(name).resolve()))
    suites = all_suites()
    if name not in suites:
        known = ", ".join(sorted(suites))
        raise ConfigError(
            f"unknown suite {name!r}{did_you_mean(name, list(suites))}; known suites: {known}",
            source=source,
            key=key,
        )
    return suites[name]
