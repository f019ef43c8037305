from __future__ import annotations

import pytest

from gpubench.errors import ConfigError
from gpubench.load import registry


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

    root = Path(__file__).resolve().parents[2]
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


SUITE = """
from gpubench.model.benchmark import Benchmark, Param, Variant


class Mine(Benchmark):
    name = "mine"
    description = "a suite file"
    baseline = "a"
    params = (Param("n", int, 16, "elements", minimum=1), Param("tag", str, "x", "text"))
    variants = (Variant("a", "first"), Variant("b", "second"))

    def inputs(self, point, rng):
        return {}

    def case(self, variant, point, device, inputs):
        raise NotImplementedError

    def reference(self, computes, point, inputs):
        return {}


BENCHMARK = Mine()
"""
MINE = 'params = (Param("n", int, 16, "elements", minimum=1), Param("tag", str, "x", "text"))'


@pytest.mark.parametrize(("old", "new", "message"), [
    ('name = "mine"', "name = 5", "name: expected a short name (letters, digits, _ . -), got 5"),
    ('name = "mine"', 'name = "a/../b"',
     "name: expected a short name (letters, digits, _ . -), got 'a/../b'"),
    ('description = "a suite file"', "description = None", "description: expected text, got None"),
    (MINE, 'params = "oops"', "params: expected a tuple of Param(...), got 'oops'"),
    (MINE, "params = (5,)", "params[0]: expected a Param(...), got 5"),
    (MINE, 'params = (Param("n-1", int, 1, "x"),)',
     "params[0]: expected a name (a Python identifier), got 'n-1'"),
    (MINE, 'params = (Param("n", int, 1, "x"), Param("n", int, 2, "y"))',
     "params[1]: 'n' is declared twice"),
    (MINE, 'params = (Param("n", list, 1, "x"),)',
     "params[0] (n): type must be int, float, str or bool, got list"),
    (MINE, 'params = (Param("n", int, 1, "x", choices=()),)',
     "params[0] (n): choices must be a non-empty tuple, got ()"),
    (MINE, 'params = (Param("n", int, "big", "x"),)',
     "params[0] (n): the default does not hold: expected an integer, got 'big'"),
    (MINE, 'params = (Param("n", int, 1, "x", minimum=10),)',
     "params[0] (n): the default does not hold: 1 is below the minimum 10"),
    ('variants = (Variant("a", "first"), Variant("b", "second"))', "variants = 5",
     "variants: expected a tuple of Variant(...), got 5"),
    ('Variant("b", "second")', 'Variant("a", "second")', "variants[1]: 'a' is declared twice"),
])  # fmt: skip
def test_a_suite_file_s_wrong_declarations_are_one_line_each(tmp_path, old, new, message):
    assert old in SUITE
    path = tmp_path / "mine.py"
    path.write_text(SUITE.replace(old, new, 1))
    with pytest.raises(ConfigError) as info:
        registry.load_suite_file(str(path))
    assert str(info.value) == f"{path}: {message}"


def test_a_suite_file_with_right_declarations_loads(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(SUITE)
    bench = registry.load_suite_file(str(path))
    assert (bench.name, bench.variant_names, bench.defaults()) == (
        "mine",
        ("a", "b"),
        {"n": 16, "tag": "x"},
    )


def test_a_suite_file_name_no_system_can_open_is_one_line():
    with pytest.raises(ConfigError) as info:
        registry.get("x" * 5000 + ".py")
    assert str(info.value).endswith("is no usable file name: File name too long")
    assert len(str(info.value)) < 200  # the name is shown short
    with pytest.raises(ConfigError, match=r"^suite file 'k\\x00.py' not found$"):
        registry.get("k\x00.py")  # a NUL byte: Python's is_file says no
