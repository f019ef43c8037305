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


def get(name: str, *, source: str | None = None, key: str | None = None) -> Benchmark:
    suites = all_suites()
    if name not in suites:
        known = ", ".join(sorted(suites))
        raise ConfigError(
            f"unknown suite {name!r}{did_you_mean(name, list(suites))}; known suites: {known}",
            source=source,
            key=key,
        )
    return suites[name]
