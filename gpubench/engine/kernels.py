"""Find a suite's .cu source, turn a point's compile-time params into -D options, and compile:
all distinct configurations of a sweep up front in parallel, each binary cached on disk.

The cache key is the source text, the options, the target architecture and the compiler's
version, so a changed kernel recompiles and a re-run compiles nothing.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gpubench.caches import cache_root
from gpubench.errors import ConfigError, EnvironmentProblem, KernelCompileError
from gpubench.model.benchmark import Benchmark, Point

CACHE_VERSION = "1"


def kernels_dir() -> Path:
    """kernels_cu/ beside the package in a checkout, or inside it in an installed wheel."""
    package = Path(__file__).resolve().parents[1]  # gpubench/
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


def source_digest(bench: Benchmark) -> str:
    if not bench.has_kernels:
        return ""
    path = source_path(bench)
    text = path.read_text()
    included = "".join(_included_text(path.parent, n) for n in INCLUDE.findall(text))
    return hashlib.sha256((text + included).encode()).hexdigest()


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def _included_text(directory: Path, name: str, depth: int = 0) -> str:
    path = directory / name
    if depth > 8 or not path.is_file():
        return ""
    text = path.read_text()
    return text + "".join(_included_text(path.parent, n, depth + 1) for n in INCLUDE.findall(text))


def define_options(defines: dict[str, str]) -> list[str]:
    return [f"-D{name}={value}" for name, value in sorted(defines.items())]


# More nvcc processes than this is a typo, not a machine (the report would print it).
MAX_COMPILE_WORKERS = 1024


def compile_workers() -> int | None:
    """GPUBENCH_COMPILE_WORKERS as a number of parallel nvcc processes (None: not set)."""
    raw = os.environ.get("GPUBENCH_COMPILE_WORKERS")
    if raw is None or raw.strip() == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_COMPILE_WORKERS:
        raise ConfigError(
            f"expected a whole number of nvcc processes from 1 to {MAX_COMPILE_WORKERS}, got "
            f"{raw[:40]!r}",
            source="GPUBENCH_COMPILE_WORKERS",
        )
    return value


def check_settings() -> None:
    """Refuse, before any worker starts, environment settings the compile step cannot use."""
    compile_workers()
    directory = cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / f".probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ConfigError(
            f"the compile cache {directory} is not writable ({exc.strerror}): set "
            "GPUBENCH_CACHE_DIR to a directory you can write",
            source="GPUBENCH_CACHE_DIR",
        ) from None


def cache_dir() -> Path:
    return cache_root() / f"binaries-v{CACHE_VERSION}"


@dataclass
class CompileReport:
    configurations: int = 0
    compiled: int = 0
    cached: int = 0
    failed: int = 0
    seconds: float = 0.0
    workers: int = 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class CompileCache:
    """Loaded modules in memory, binaries on disk, failures remembered for the process."""

    backend: Any
    directory: Path = field(default_factory=cache_dir)
    _modules: dict[str, Any] = field(default_factory=dict)
    _failures: dict[str, KernelCompileError] = field(default_factory=dict)

    def _job(self, bench: Benchmark, point: Point) -> tuple[str, str, list[str], list[str]]:
        path = source_path(bench)
        source = path.read_text()
        options = define_options(bench.defines(point)) + list(bench.compiler_options(point))
        # Included files count too: an edited matmul.cu must rebuild streams.cu, which
        # includes it (nvcc would, a hash of the including file alone would not).
        included = [_included_text(path.parent, name) for name in INCLUDE.findall(source)]
        key = hashlib.sha256(
            "\0".join(
                [CACHE_VERSION, self.backend.compiler_id, source, *included, *options]
            ).encode()
        ).hexdigest()
        return key, source, options, [str(path.parent)]

    def _binary(
        self, key: str, source: str, options: list[str], include_dirs: list[str]
    ) -> tuple[bytes, bool]:
        """(binary, came from the cache)."""
        cached = self.directory / f"{key}.bin"
        if cached.is_file():
            return cached.read_bytes(), True
        binary = self.backend.compile_binary(source, options, include_dirs)
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f"{cached.name}.{os.getpid()}.tmp")
        tmp.write_bytes(binary)
        tmp.replace(cached)  # atomic: concurrent sweeps never read half a binary
        return binary, False

    def precompile(
        self, bench: Benchmark, points: list[Point], max_workers: int | None = None
    ) -> CompileReport:
        """Compile every distinct configuration of these points, in parallel (nvcc runs as
        separate processes, so threads are enough)."""
        jobs = {}
        if not bench.has_kernels:
            return CompileReport()
        for point in points:
            key, source, options, includes = self._job(bench, point)
            jobs.setdefault(key, (source, options, includes))
        # GPUBENCH_COMPILE_WORKERS=1 gives the one-nvcc-at-a-time baseline.
        workers = max_workers or compile_workers() or min(32, os.cpu_count() or 1)
        report = CompileReport(configurations=len(jobs), workers=workers)
        started = time.perf_counter()

        def build(key: str) -> tuple[str, bool | None, KernelCompileError | None]:
            try:
                _, was_cached = self._binary(key, *jobs[key])
                return key, was_cached, None
            except KernelCompileError as exc:
                return key, None, exc

        with ThreadPoolExecutor(max_workers=workers) as pool:
            for key, was_cached, error in pool.map(build, list(jobs)):
                if error is not None:
                    self._failures[key] = error
                    report.failed += 1
                elif was_cached:
                    report.cached += 1
                else:
                    report.compiled += 1
        report.seconds = time.perf_counter() - started
        return report

    def get(self, bench: Benchmark, point: Point) -> Any:
        if not bench.has_kernels:
            return None
        key, source, options, includes = self._job(bench, point)
        if key in self._failures:
            raise self._failures[key]
        if key not in self._modules:
            try:
                binary, _ = self._binary(key, source, options, includes)
            except KernelCompileError as exc:
                self._failures[key] = exc
                raise
            self._modules[key] = self.backend.load(binary)
        return self._modules[key]
