from __future__ import annotations

from gpubench import registry
from gpubench.kernels import ModuleCache, define_options, kernels_dir, source_path
from tests.fakes import FakeBackend, ScaleSuite


def test_every_suite_has_its_kernel_source():
    for bench in registry.all_suites().values():
        assert source_path(bench).parent == kernels_dir()


def test_defines_become_sorted_d_options():
    assert define_options({"TILE": "32", "DTYPE": "float"}) == ["-DDTYPE=float", "-DTILE=32"]


def test_the_module_cache_compiles_each_option_set_once_and_remembers_failures():
    backend = FakeBackend()
    cache = ModuleCache(backend)
    bench = ScaleSuite()
    point = bench.defaults()
    assert cache.get(bench, point) is cache.get(bench, point)
    broken = {**point, "broken": 1}
    for _ in range(2):
        try:
            cache.get(bench, broken)
        except Exception as exc:
            assert "nvcc failed" in str(exc)
    assert len(backend.compiles) == 2
