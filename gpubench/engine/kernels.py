"""Find a suite's .cu source, turn a point's compile-time params into -D options, and compile:
all distinct configurations of a sweep in parallel, in the background while the first points
run, each binary cached on disk.

The cache key is the source text, the options, the target architecture and the compiler's
version, so a changed kernel recompiles and a re-run compiles nothing.

Each build is compiled once, whoever asks first: the background compile of a sweep, or a
point that needs its build before the background got to it. The processes of one host share
the cache directory; a lock file per build makes a second asker (another thread, another
GPU's worker) wait for the build in progress and then read it. A failed build leaves a note
beside the binaries, scoped to the sweep (`CompileCache.scope`), so the workers of that sweep
report the compiler's message without compiling it again, and a later sweep tries afresh.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpubench.caches import cache_root
from gpubench.errors import ConfigError, EnvironmentProblem, KernelCompileError
from gpubench.host import usable_cpus
from gpubench.model.benchmark import Benchmark, Point

if TYPE_CHECKING:
    from gpubench.backends.base import Backend

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


def selection_options(kernels: tuple[str, ...] | None) -> list[str]:
    """The macros that tell a guarded source (Benchmark.variant_kernels) which kernels to
    compile; none: all of them."""
    if kernels is None:
        return []
    return ["-DGPUBENCH_SELECTED=1", *(f"-DGPUBENCH_WANTS_{name}=1" for name in kernels)]


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


# Background compiles yield the CPU to the threads that launch and time kernels: nvcc and
# its children inherit the niceness of the thread that starts them (Linux: per thread).
BACKGROUND_NICENESS = 10


def _lower_priority(niceness: int) -> None:
    if niceness <= 0:
        return
    with contextlib.suppress(OSError, AttributeError):  # not Linux: full priority
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), niceness)


@contextlib.contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    """Hold the lock file `path` (threads and processes alike wait for it); released when
    the holder ends, even by a kill."""
    try:
        import fcntl
    except ImportError:  # no flock: builds may be compiled twice, never read half-written
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


Job = tuple[str, list[str], list[str]]  # source, options, include directories


@dataclass
class CompileCache:
    """Loaded modules in memory, binaries on disk, failures remembered for the sweep (`scope`:
    the processes that share one, e.g. the workers of a device pool, share its failures)."""

    backend: Backend
    directory: Path = field(default_factory=cache_dir)
    scope: str = field(default_factory=lambda: secrets.token_hex(8))
    _modules: dict[str, Any] = field(default_factory=dict)
    _failures: dict[str, KernelCompileError] = field(default_factory=dict)
    # Compiled by this process (a point that needed its build first): new, in the report.
    _built_here: set[str] = field(default_factory=set)

    def _job(
        self, bench: Benchmark, point: Point, variants: tuple[str, ...] = ()
    ) -> tuple[str, str, list[str], list[str]]:
        """(cache key, source, options, include directories) of the build that runs
        `variants` (all of the sweep's) at `point`."""
        path = source_path(bench)
        source = path.read_text()
        options = [
            *define_options(bench.defines(point)),
            *bench.compiler_options(point),
            *selection_options(bench.kernels_to_build(variants)),
        ]
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
        """(binary, was on disk before this sweep asked): compiled here unless it is on disk,
        or another thread or process is compiling it (then waited for and read)."""
        cached = self.directory / f"{key}.bin"
        if cached.is_file():
            return cached.read_bytes(), True
        self._raise_known_failure(key)
        with _exclusive(self.directory / f"{key}.lock"):
            if cached.is_file():  # built while this one waited: new to the sweep
                return cached.read_bytes(), False
            self._raise_known_failure(key)
            try:
                binary = self.backend.compile_binary(source, options, include_dirs)
            except KernelCompileError as exc:
                self._remember_failure(key, exc)
                raise
            self.directory.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_name(f"{cached.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_bytes(binary)
            tmp.replace(cached)  # atomic: concurrent sweeps never read half a binary
        self._built_here.add(key)
        return binary, False

    def _remember_failure(self, key: str, error: KernelCompileError) -> None:
        self._failures[key] = error
        note = {"scope": self.scope, "message": str(error), "output": error.compiler_output}
        with contextlib.suppress(OSError):  # unwritten: the others compile it once more
            self.directory.mkdir(parents=True, exist_ok=True)
            tmp = self.directory / f"{key}.failed.{os.getpid()}.{threading.get_ident()}.tmp"
            tmp.write_text(json.dumps(note))
            tmp.replace(self.directory / f"{key}.failed")

    def _raise_known_failure(self, key: str) -> None:
        """The build failed earlier in this sweep (in this process, or in another of its
        workers): the same error, without compiling it again."""
        if key in self._failures:
            raise self._failures[key]
        try:
            note = json.loads((self.directory / f"{key}.failed").read_text())
        except (OSError, ValueError):
            return
        if isinstance(note, dict) and note.get("scope") == self.scope:
            error = KernelCompileError(str(note.get("message")), str(note.get("output") or ""))
            self._failures[key] = error
            raise error

    def precompile(
        self,
        bench: Benchmark,
        points: list[Point],
        max_workers: int | None = None,
        niceness: int = 0,
        variants: tuple[str, ...] = (),
    ) -> CompileReport:
        """Compile every distinct configuration of these points, in parallel (nvcc runs as
        separate processes, so threads are enough), in the points' order; `niceness` lowers
        the compiles' CPU priority (the background compile of a sweep that is measuring)."""
        jobs: dict[str, Job] = {}
        if not bench.has_kernels:
            return CompileReport()
        for point in points:
            key, source, options, includes = self._job(bench, point, variants)
            jobs.setdefault(key, (source, options, includes))
        # GPUBENCH_COMPILE_WORKERS=1 gives the one-nvcc-at-a-time baseline.
        workers = max_workers or compile_workers() or min(32, usable_cpus())
        report = CompileReport(configurations=len(jobs), workers=workers)
        started = time.perf_counter()

        def build(key: str) -> tuple[str, bool | None]:
            _lower_priority(niceness)
            try:
                _, was_cached = self._binary(key, *jobs[key])
                return key, was_cached and key not in self._built_here
            except KernelCompileError:
                return key, None

        # Named as gpubench's own: a variant that runs meanwhile is not blamed for them (audit).
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="gpubench-compile") as pool:
            for _, was_cached in pool.map(build, list(jobs)):
                if was_cached is None:
                    report.failed += 1
                elif was_cached:
                    report.cached += 1
                else:
                    report.compiled += 1
        report.seconds = time.perf_counter() - started
        return report

    def get(self, bench: Benchmark, point: Point, variants: tuple[str, ...] = ()) -> Any:
        """The point's loaded module for `variants` (the sweep's): from memory, from disk,
        from the compile in progress (waited for) or compiled now (raises
        KernelCompileError)."""
        if not bench.has_kernels:
            return None
        key, source, options, includes = self._job(bench, point, variants)
        if key not in self._modules:
            binary, _ = self._binary(key, source, options, includes)
            self._modules[key] = self.backend.load(binary)
        return self._modules[key]
