"""Find kernels_cu/<suite>.cu, turn a point's compile-time params into -D options, cache modules."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpubench.benchmark import Benchmark, Point
from gpubench.errors import EnvironmentProblem


def kernels_dir() -> Path:
    """kernels_cu/ beside the package in a checkout, or inside it in an installed wheel."""
    package = Path(__file__).resolve().parent
    for candidate in (package.parent / "kernels_cu", package / "kernels_cu"):
        if candidate.is_dir():
            return candidate
    raise EnvironmentProblem("kernels_cu/ not found: reinstall gpubench")


def source_path(bench: Benchmark) -> Path:
    path = (
        Path(bench.source_file) if bench.source_file else kernels_dir() / f"{bench.source_stem}.cu"
    )
    if not path.is_file():
        raise EnvironmentProblem(f"kernel source {path} is missing")
    return path


def define_options(defines: dict[str, str]) -> list[str]:
    return [f"-D{name}={value}" for name, value in sorted(defines.items())]


@dataclass
class ModuleCache:
    """One compiled module per (source, options); PyCUDA's disk cache covers re-runs."""

    backend: Any
    _modules: dict[tuple[str, tuple[str, ...]], Any] = field(default_factory=dict)
    _failures: dict[tuple[str, tuple[str, ...]], Exception] = field(default_factory=dict)

    def get(self, bench: Benchmark, point: Point) -> Any:
        path = source_path(bench)
        options = tuple(define_options(bench.defines(point)))
        key = (str(path), options)
        if key in self._failures:
            raise self._failures[key]
        if key not in self._modules:
            try:
                self._modules[key] = self.backend.compile(
                    path.read_text(), list(options), include_dirs=[str(path.parent)]
                )
            except Exception as exc:
                self._failures[key] = exc
                raise
        return self._modules[key]
