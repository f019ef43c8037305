from __future__ import annotations

import hashlib

import pytest

from gpubench.engine.kernels import CompileCache, define_options, kernels_dir, source_path
from gpubench.errors import KernelCompileError
from gpubench.load import registry
from tests.fakes import FakeBackend, ScaleSuite


def test_every_suite_has_its_kernel_source():
    for bench in registry.all_suites().values():
        if bench.has_kernels:
            assert source_path(bench).parent == kernels_dir()


def test_defines_become_sorted_d_options():
    assert define_options({"TILE": "32", "DTYPE": "float"}) == ["-DDTYPE=float", "-DTILE=32"]


def test_modules_compile_once_per_option_set_and_failures_are_remembered(tmp_path):
    backend = FakeBackend()
    cache = CompileCache(backend, directory=tmp_path)
    bench = ScaleSuite()
    point = bench.defaults()
    assert cache.get(bench, point) is not None
    assert cache.get(bench, point) is cache.get(bench, point)
    broken = {**point, "broken": 1}
    for _ in range(2):
        try:
            cache.get(bench, broken)
        except Exception as exc:
            assert "nvcc failed" in str(exc)
    assert len(backend.compiles) == 2


def test_precompile_builds_each_distinct_configuration_once_then_hits_the_disk_cache(tmp_path):
    bench = ScaleSuite()
    points = [{**bench.defaults(), "n": n, "broken": b} for n in (1, 2, 3) for b in (0, 1)]
    first = CompileCache(FakeBackend(), directory=tmp_path).precompile(bench, points, max_workers=4)
    assert (first.configurations, first.compiled, first.cached, first.failed) == (2, 1, 0, 1)
    again = FakeBackend()
    second = CompileCache(again, directory=tmp_path).precompile(bench, points)
    assert (second.compiled, second.cached, second.failed) == (0, 1, 1)
    assert again.compiles == [["-DBROKEN=1"]]  # only the failing one runs the compiler again


def test_cache_keys_follow_included_files(tmp_path, monkeypatch):
    from gpubench.engine import kernels

    streams = registry.get("streams")
    cache = CompileCache(FakeBackend(), directory=tmp_path)
    point = streams.resolve(streams.defaults())
    before = cache._job(streams, point)[0]
    original = kernels._included_text
    monkeypatch.setattr(
        kernels, "_included_text", lambda d, n, depth=0: original(d, n, depth) + "// edit"
    )
    assert cache._job(streams, point)[0] != before  # matmul.cu changed → streams.cu rebuilds


def test_every_field_of_the_cache_key_counts(tmp_path, monkeypatch):
    from gpubench.engine import kernels

    bench = ScaleSuite()
    point = bench.defaults()
    backend = FakeBackend()
    cache = CompileCache(backend, directory=tmp_path)
    base = cache._job(bench, point)[0]
    assert cache._job(bench, dict(point))[0] == base  # deterministic
    assert cache._job(bench, {**point, "broken": 1})[0] != base  # the -D options
    monkeypatch.setattr(type(backend), "compiler_id", "nvcc 13.1 sm_90")  # another nvcc
    assert cache._job(bench, point)[0] != base
    monkeypatch.setattr(type(backend), "compiler_id", "fake sm_80")  # another architecture
    other_arch = cache._job(bench, point)[0]
    monkeypatch.setattr(type(backend), "compiler_id", "fake")
    assert other_arch != base and cache._job(bench, point)[0] == base
    monkeypatch.setattr(kernels, "CACHE_VERSION", "999")  # a new cache layout
    assert cache._job(bench, point)[0] != base
    monkeypatch.setattr(kernels, "CACHE_VERSION", "1")
    source = tmp_path / "k.cu"
    source.write_text("// one")
    monkeypatch.setattr(ScaleSuite, "source_file", str(source))
    one = cache._job(bench, point)[0]
    source.write_text("// two")  # the kernel source
    assert cache._job(bench, point)[0] != one


def test_included_text_follows_nested_includes_relative_to_each_file_eight_deep(tmp_path):
    from gpubench.engine.kernels import _included_text

    (tmp_path / "sub").mkdir()
    (tmp_path / "a.cuh").write_text('// a\n#include "sub/b.cuh"\n#include "missing.cuh"\n')
    (tmp_path / "sub" / "b.cuh").write_text('// b\n  #  include "c.cuh"\n')
    (tmp_path / "sub" / "c.cuh").write_text("// c\n")
    assert _included_text(tmp_path, "a.cuh") == (
        '// a\n#include "sub/b.cuh"\n#include "missing.cuh"\n// b\n  #  include "c.cuh"\n// c\n'
    )
    assert _included_text(tmp_path, "missing.cuh") == ""
    assert _included_text(tmp_path, "sub") == ""  # a directory is not a file
    for level in range(11):  # l0 includes l1 includes ... l10
        (tmp_path / f"l{level}.cuh").write_text(f'#include "l{level + 1}.cuh"\n// {level}\n')
    text = _included_text(tmp_path, "l0.cuh")
    assert [line for line in text.splitlines() if line.startswith("//")] == [
        f"// {level}"
        for level in range(9)  # depth 0 to 8: a cycle cannot recurse forever
    ]


class RecordingBackend(FakeBackend):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, list[str], list[str]]] = []
        self.loaded: list[bytes] = []

    def compile_binary(self, source, options, include_dirs):
        self.calls.append((source, options, include_dirs))
        return super().compile_binary(source, options, include_dirs)

    def load(self, binary):
        self.loaded.append(binary)
        return super().load(binary)


def test_the_compiler_gets_the_source_its_options_and_the_kernels_folder(tmp_path, monkeypatch):
    bench = ScaleSuite()
    monkeypatch.setattr(
        ScaleSuite, "compiler_options", lambda self, point: [f"-DEXTRA={point['n']}"]
    )
    backend = RecordingBackend()
    module = CompileCache(backend, directory=tmp_path / "new" / "cache").get(
        bench, {**bench.defaults(), "n": 7}
    )
    assert module is not None and backend.loaded == [b"fake binary"]
    ((source, options, include_dirs),) = backend.calls
    assert source == source_path(bench).read_text()
    assert options == ["-DBROKEN=0", "-DEXTRA=7"]
    assert include_dirs == [str(source_path(bench).parent)]
    again = RecordingBackend()
    CompileCache(again, directory=tmp_path / "new" / "cache").get(
        bench, {**bench.defaults(), "n": 7}
    )
    assert again.calls == [] and again.loaded == [b"fake binary"]  # read from the disk cache


def test_precompile_counts_each_outcome_and_says_how_many_workers(tmp_path, monkeypatch):
    bench = ScaleSuite()
    monkeypatch.setattr(
        ScaleSuite, "compiler_options", lambda self, point: [f"-DEXTRA={point['n']}"]
    )
    points = [{**bench.defaults(), "n": n, "broken": b} for n in (1, 2) for b in (0, 1)]
    first = CompileCache(FakeBackend(), directory=tmp_path).precompile(bench, points, max_workers=3)
    assert (first.configurations, first.compiled, first.cached, first.failed) == (4, 2, 0, 2)
    assert first.workers == 3 and 0 <= first.seconds < 60
    monkeypatch.setenv("GPUBENCH_COMPILE_WORKERS", "5")
    cache = CompileCache(FakeBackend(), directory=tmp_path)
    second = cache.precompile(bench, points)
    assert (second.compiled, second.cached, second.failed, second.workers) == (0, 2, 2, 5)
    with pytest.raises(KernelCompileError, match="nvcc failed"):
        cache.get(bench, points[1])  # the failure is remembered: no second compile
    # The two failures recompile in parallel workers, so their order is the pool's.
    assert sorted(cache.backend.compiles) == [
        ["-DBROKEN=1", "-DEXTRA=1"],
        ["-DBROKEN=1", "-DEXTRA=2"],
    ]
    monkeypatch.delenv("GPUBENCH_COMPILE_WORKERS")
    from gpubench.host import usable_cpus

    default = CompileCache(FakeBackend(), directory=tmp_path).precompile(bench, points)
    assert default.workers == min(32, usable_cpus())


def test_the_cache_root_from_the_environment(monkeypatch, tmp_path):
    from gpubench.engine import kernels

    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path / "mine"))
    assert kernels.cache_root() == tmp_path / "mine"
    monkeypatch.delenv("GPUBENCH_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert kernels.cache_root() == tmp_path / "xdg" / "gpubench"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert kernels.cache_root() == tmp_path / "home" / ".cache" / "gpubench"
    assert kernels.cache_dir() == kernels.cache_root() / f"binaries-v{kernels.CACHE_VERSION}"


@pytest.mark.parametrize(("raw", "workers"), [(None, None), ("", None), ("  ", None), ("1", 1),
                                              (" 4 ", 4), ("1024", 1024)])  # fmt: skip
def test_compile_workers_from_the_environment(monkeypatch, raw, workers):
    from gpubench.engine import kernels
    from tests.envvars import set_or_unset

    set_or_unset(monkeypatch, "GPUBENCH_COMPILE_WORKERS", raw)
    assert kernels.compile_workers() == workers


@pytest.mark.parametrize("raw", ["0", "-2", "x", "1.5", "1025", "9" * 60])
def test_a_bad_number_of_compile_workers_is_one_line(monkeypatch, raw):
    from gpubench.engine import kernels
    from gpubench.errors import ConfigError

    monkeypatch.setenv("GPUBENCH_COMPILE_WORKERS", raw)
    with pytest.raises(ConfigError) as info:
        kernels.compile_workers()
    assert str(info.value) == ("GPUBENCH_COMPILE_WORKERS: expected a whole number of nvcc "
                               f"processes from 1 to 1024, got {raw[:40]!r}")  # fmt: skip


def test_the_compile_cache_is_made_and_an_unwritable_one_is_one_line(monkeypatch, tmp_path):
    from gpubench.engine import kernels
    from gpubench.errors import ConfigError

    monkeypatch.delenv("GPUBENCH_COMPILE_WORKERS", raising=False)
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path / "a" / "b"))
    kernels.check_settings()
    assert list(kernels.cache_dir().iterdir()) == []  # made, the probe gone
    kernels.check_settings()  # and once it is there, it is used as it is
    assert list(kernels.cache_dir().iterdir()) == []
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path / "file"))
    with pytest.raises(ConfigError) as info:
        kernels.check_settings()
    assert str(info.value) == (f"GPUBENCH_CACHE_DIR: the compile cache {kernels.cache_dir()} is "
                               "not writable (Not a directory): set GPUBENCH_CACHE_DIR to a "
                               "directory you can write")  # fmt: skip


def test_the_source_digest_follows_the_source_and_what_it_includes(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from gpubench.engine import kernels

    (tmp_path / "k.cu").write_text('#include "a.cuh"\n// k\n')
    (tmp_path / "a.cuh").write_text('#include "b.cuh"\n// a\n')
    (tmp_path / "b.cuh").write_text("// b\n")
    monkeypatch.setattr(kernels, "source_path", lambda bench: tmp_path / "k.cu")
    bench = SimpleNamespace(has_kernels=True)
    expected = hashlib.sha256(b'#include "a.cuh"\n// k\n' b'#include "b.cuh"\n// a\n' b"// b\n"
).hexdigest()  # fmt: skip
    assert kernels.source_digest(bench) == expected
    (tmp_path / "b.cuh").write_text("// b changed\n")
    assert kernels.source_digest(bench) != expected
    assert kernels.source_digest(SimpleNamespace(has_kernels=False)) == ""


def test_without_kernels_cu_beside_or_inside_the_package_reinstalling_is_the_advice(monkeypatch):
    from pathlib import Path

    from gpubench.engine import kernels
    from gpubench.errors import EnvironmentProblem

    seen = []
    monkeypatch.setattr(Path, "is_dir", lambda self: seen.append(self) and False)
    with pytest.raises(EnvironmentProblem) as info:
        kernels.kernels_dir()
    assert str(info.value) == "kernels_cu/ not found: reinstall gpubench"
    package = Path(kernels.__file__).resolve().parents[1]  # gpubench/
    assert seen == [package.parent / "kernels_cu", package / "kernels_cu"]


def test_a_compile_report_is_its_counts_as_a_dict():
    from gpubench.engine.kernels import CompileReport

    report = CompileReport(configurations=5, compiled=3, cached=1, failed=1, seconds=2.5,
                           workers=4)  # fmt: skip
    assert report.to_dict() == {"configurations": 5, "compiled": 3, "cached": 1, "failed": 1,
                                "seconds": 2.5, "workers": 4}  # fmt: skip


class _GatedBackend(FakeBackend):
    """The fake compiler, counting its compiles per option set; the compile of `gated`
    options waits for `gate` (a build in progress for as long as a test likes)."""

    def __init__(self, gated: list[str] | None = None) -> None:
        super().__init__()
        import threading

        self.gate = threading.Event()
        self.gated = gated
        self.started = threading.Event()
        self.niceness: list[int] = []

    def compile_binary(self, source, options, include_dirs):
        import os
        import threading

        self.niceness.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        if options == self.gated:
            self.started.set()
            assert self.gate.wait(30), "the gate was never opened"
        return super().compile_binary(source, options, include_dirs)


def test_a_build_in_progress_is_waited_for_not_compiled_again(tmp_path):
    import threading

    bench = ScaleSuite()
    points = [{**bench.defaults(), "broken": 0}, {**bench.defaults(), "broken": 1}]
    backend = _GatedBackend(gated=["-DBROKEN=0"])  # the good build waits for the gate
    cache = CompileCache(backend, directory=tmp_path)
    reports = []
    background = threading.Thread(target=lambda: reports.append(cache.precompile(bench, points)))
    background.start()
    assert backend.started.wait(10)
    asker = CompileCache(FakeBackend(), directory=tmp_path, scope=cache.scope)  # another worker
    modules = []
    waiting = threading.Thread(target=lambda: modules.append(asker.get(bench, points[0])))
    waiting.start()
    waiting.join(0.3)
    assert waiting.is_alive() and modules == []  # waits for the build in progress
    backend.gate.set()
    waiting.join(30)
    background.join(30)
    assert len(modules) == 1 and asker.backend.compiles == []  # read from the disk, not built
    assert sorted(backend.compiles) == [["-DBROKEN=0"], ["-DBROKEN=1"]]
    (report,) = reports
    assert (report.compiled, report.cached, report.failed) == (1, 0, 1)


def test_a_failed_build_is_reported_to_the_whole_sweep_and_tried_afresh_by_the_next(tmp_path):
    bench = ScaleSuite()
    broken = {**bench.defaults(), "broken": 1}
    first = CompileCache(FakeBackend(), directory=tmp_path, scope="sweep-1")
    assert first.precompile(bench, [broken]).failed == 1
    sibling = CompileCache(FakeBackend(), directory=tmp_path, scope="sweep-1")
    with pytest.raises(KernelCompileError) as error:
        sibling.get(bench, broken)
    assert str(error.value) == "nvcc failed (-DBROKEN=1)"
    assert error.value.compiler_output == 'kernel.cu(3): error: identifier "oops" is undefined'
    assert sibling.backend.compiles == []  # the sweep's other worker does not compile it again
    later = CompileCache(FakeBackend(), directory=tmp_path, scope="sweep-2")
    with pytest.raises(KernelCompileError):
        later.get(bench, broken)
    assert later.backend.compiles == [["-DBROKEN=1"]]


def test_background_compiles_run_at_a_lower_cpu_priority(tmp_path):
    import os

    bench = ScaleSuite()
    points = [{**bench.defaults(), "broken": b} for b in (0, 1)]
    backend = _GatedBackend()
    CompileCache(backend, directory=tmp_path).precompile(bench, points, niceness=10)
    assert backend.niceness == [max(10, os.getpriority(os.PRIO_PROCESS, 0))] * 2
    foreground = _GatedBackend()
    CompileCache(foreground, directory=tmp_path / "other").precompile(bench, points)
    assert foreground.niceness == [os.getpriority(os.PRIO_PROCESS, 0)] * 2


def test_a_build_for_variants_that_name_their_kernels_asks_for_those_alone(tmp_path, monkeypatch):
    from gpubench.engine.kernels import selection_options

    assert selection_options(None) == []
    assert selection_options(("a", "b")) == [
        "-DGPUBENCH_SELECTED=1",
        "-DGPUBENCH_WANTS_a=1",
        "-DGPUBENCH_WANTS_b=1",
    ]
    bench = ScaleSuite()
    point = {**bench.defaults(), "n": 7}
    monkeypatch.setattr(ScaleSuite, "variant_kernels", {"good": ("scale",), "fast": ("scale", "x")})
    assert bench.kernels_to_build(["good", "fast"]) == ("scale", "x")
    assert bench.kernels_to_build(["good", "wrong"]) is None  # one unnamed: the whole file
    assert bench.kernels_to_build([]) is None
    backend = RecordingBackend()
    cache = CompileCache(backend, directory=tmp_path)
    cache.get(bench, point, ("good",))
    cache.get(bench, point, ("good", "wrong"))
    cache.get(bench, point, ("good",))  # the same build: from memory
    assert [options for _, options, _ in backend.calls] == [
        ["-DBROKEN=0", "-DGPUBENCH_SELECTED=1", "-DGPUBENCH_WANTS_scale=1"],
        ["-DBROKEN=0"],
    ]
    report = CompileCache(RecordingBackend(), directory=tmp_path).precompile(
        bench, [point], variants=("good",)
    )
    assert (report.configurations, report.cached) == (1, 1)  # the build `get` made, on disk
