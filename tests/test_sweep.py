"""Sweep expansion: products, zipped groups, constraints, derived params, duplicates."""

from __future__ import annotations

import pytest

from gpubench import registry
from gpubench.sweep import Constraint, expand

NAMES = ["tile", "block_rows", "size", "rows", "cols", "dtype"]


def test_lists_form_a_cartesian_product_in_order():
    bench = registry.get("transpose")
    points = expand(bench, {"tile": [16, 32], "block_rows": [4, 8]})
    assert [(p["tile"], p["block_rows"]) for p in points] == [(16, 4), (16, 8), (32, 4), (32, 8)]
    assert all(p["dtype"] == "float32" for p in points)  # defaults filled in


def test_zipped_params_vary_together():
    bench = registry.get("transpose")
    points = expand(bench, {"tile": [16, 32]}, [{"rows": [1, 33], "cols": [1000, 65]}])
    assert [(p["tile"], p["rows"], p["cols"]) for p in points] == [
        (16, 1, 1000), (16, 33, 65), (32, 1, 1000), (32, 33, 65),
    ]  # fmt: skip


def test_derived_params_follow_size():
    bench = registry.get("transpose")
    (point,) = expand(bench, {"size": [77]})
    assert point["rows"] == 77 and point["cols"] == 77


def test_constraints_filter_points():
    bench = registry.get("transpose")
    rule = Constraint.parse("tile % block_rows == 0 and tile * block_rows <= 512", NAMES)
    points = expand(bench, {"tile": [16, 32], "block_rows": [8, 32]}, constraints=[rule])
    assert [(p["tile"], p["block_rows"]) for p in points] == [(16, 8), (32, 8)]


def test_duplicate_points_are_dropped():
    bench = registry.get("transpose")
    points = expand(bench, {"size": [64, 64], "tile": [32]})
    assert len(points) == 1


@pytest.mark.parametrize(
    "text, point, expected",
    [
        ("block_rows <= tile", {"block_rows": 8, "tile": 32}, True),
        ("block_rows <= tile", {"block_rows": 64, "tile": 32}, False),
        ("4 <= block_rows < tile", {"block_rows": 8, "tile": 32}, True),
        ("not tile == 16", {"tile": 16}, False),
        ("tile - block_rows > -1 or tile == 64", {"tile": 64, "block_rows": 128}, True),
        ("dtype == 'float64'", {"dtype": "float64"}, True),
        ("size // tile >= 2", {"size": 64, "tile": 32}, True),
    ],
)
def test_constraint_evaluation(text, point, expected):
    assert Constraint.parse(text, NAMES).holds(point) is expected


@pytest.mark.parametrize(
    "text, message",
    [
        ("__import__('os').system('true')", "not allowed"),
        ("tile.bit_length() > 2", "not allowed"),
        ("[x for x in tile]", "not allowed"),
        ("tiel <= 32", "unknown parameter 'tiel'"),
        ("tile <=", "cannot parse"),
        ("tile + 1", "must be a comparison"),
        ("", "expected a condition"),
        (3, "expected a condition"),
    ],
)
def test_constraints_refuse_anything_but_arithmetic_and_comparisons(text, message):
    with pytest.raises(ValueError, match=message):
        Constraint.parse(text, NAMES)
