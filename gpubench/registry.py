"""Suite name → Benchmark. Suites are discovered from the modules of gpubench.benchmarks.

A new suite is a module there that defines `BENCHMARK`; nothing here changes.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from functools import cache

from gpubench.benchmark import Benchmark
from gpubench.errors import ConfigError


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


def did_you_mean(word: str, candidates: list[str] | tuple[str, ...]) -> str:
    close = difflib.get_close_matches(word, list(candidates), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


@cache
def load_suite_file(path: str) -> Benchmark:
    """A user's own suite: a .py file that defines BENCHMARK (a Benchmark instance)."""
    import hashlib
    import importlib.util
    import sys
    from pathlib import Path

    file = Path(path).resolve()
    name = f"gpubench_user_suite_{hashlib.sha1(str(file).encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot load suite file {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    spec.loader.exec_module(module)
    bench = getattr(module, "BENCHMARK", None)
    if not isinstance(bench, Benchmark):
        raise ConfigError(
            f"{path} defines no BENCHMARK = <a gpubench.benchmark.Benchmark instance>"
        )
    return bench


def get(name: str, *, source: str | None = None, key: str | None = None) -> Benchmark:
    """A suite by name, or by the path of a .py file that defines one."""
    if name.endswith(".py"):
        from pathlib import Path

        if not Path(name).is_file():
            raise ConfigError(f"suite file {name!r} not found", source=source, key=key)
        return load_suite_file(str(Path(name).resolve()))
    suites = all_suites()
    if name not in suites:
        known = ", ".join(sorted(suites))
        raise ConfigError(
            f"unknown suite {name!r}{did_you_mean(name, list(suites))}; known suites: {known}",
            source=source,
            key=key,
        )
    return suites[name]
