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


def test_the_documented_suite_example_is_the_tested_suite_file():
    """The docs' "write your own suite" example is tests/suites/saxpy.py, verbatim (the GPU
    tests run it), and it loads and declares its cases without a GPU."""
    from pathlib import Path

    import numpy as np

    root = Path(__file__).resolve().parents[1]
    source = (root / "tests/suites/saxpy.py").read_text()
    assert f"```python\n{source}```" in (root / "docs" / "writing-suites.md").read_text()
    bench = registry.get(str(root / "tests/suites/saxpy.py"))
    point = bench.resolve(bench.defaults())
    assert bench.defines(point) == {"BLOCK": "256"}
    inputs = bench.inputs({**point, "n": 10}, np.random.default_rng(0))
    for variant in bench.variant_names:
        case = bench.case(variant, {**point, "n": 10}, None, inputs)
        assert case.problems(inputs) == []


def test_a_missing_suite_file_and_an_unknown_name_are_one_line_with_where_they_came_from(tmp_path):
    for name in ("gone.py", "gone.yaml", "gone.yml"):
        with pytest.raises(ConfigError) as info:
            registry.get(str(tmp_path / name), source="s.yaml", key="suite")
        assert str(info.value) == f"s.yaml: suite: suite file {str(tmp_path / name)!r} not found"
    with pytest.raises(ConfigError) as info:
        registry.get("transpos", source="s.yaml", key="suite")
    known = ", ".join(sorted(registry.all_suites()))
    assert str(info.value) == (f"s.yaml: suite: unknown suite 'transpos' (did you mean "
                               f"'transpose'?); known suites: {known}")  # fmt: skip
