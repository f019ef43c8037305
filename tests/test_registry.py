from __future__ import annotations

import pytest

from gpubench import registry
from gpubench.errors import ConfigError


def test_suites_are_discovered_from_the_benchmarks_package():
    assert "transpose" in registry.all_suites()
    assert registry.suite_names() == sorted(registry.all_suites())


def test_every_suite_declares_a_consistent_benchmark():
    for bench in registry.all_suites().values():
        assert bench.baseline in bench.variant_names
        assert len(set(bench.variant_names)) == len(bench.variant_names)
        for param in bench.params:
            if param.default is not None:
                assert param.coerce(param.default) == param.default


def test_unknown_suite_suggests_the_closest():
    with pytest.raises(ConfigError, match="did you mean 'transpose'"):
        registry.get("transpos")
