from __future__ import annotations

from gpubench import registry
from gpubench.kernels import CompileCache, define_options, kernels_dir, source_path
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
    from gpubench import kernels

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
    from gpubench import kernels

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
