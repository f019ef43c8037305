"""Sweep expansion: products, zipped groups, constraints, derived params, duplicates."""

from __future__ import annotations

import pytest

from gpubench.load import registry
from gpubench.model.sweep import MAX_COMBINATIONS, Constraint, TooManyPoints, expand

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


# -- property: random conditions parse or are refused; evaluation fails only as ConstraintError
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from gpubench.model.sweep import ConstraintError  # noqa: E402

PROP_NAMES = ["a", "b", "s", "z"]
atoms = st.one_of(st.sampled_from(PROP_NAMES), st.integers(-3, 3).map(str),
                  st.sampled_from(["'x'", "0.5", "0", "1e300"]))  # fmt: skip
expressions = st.recursive(
    atoms,
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "//", "%"]), inner).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(inner, st.sampled_from(["<", "<=", "==", "!=", ">", ">="]), inner).map(
            lambda t: f"{t[0]} {t[1]} {t[2]}"),
        inner.map(lambda e: f"not ({e})"), inner.map(lambda e: f"-({e})"),
        st.tuples(inner, st.sampled_from(["and", "or"]), inner).map(
            lambda t: f"({t[0]}) {t[1]} ({t[2]})"),
    ),
    max_leaves=12,
)  # fmt: skip
values = st.one_of(st.none(), st.integers(-10**6, 10**6), st.floats(allow_nan=False),
                   st.text(max_size=5), st.booleans())  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(text=st.one_of(expressions, st.text(max_size=60)),
       point=st.fixed_dictionaries({n: values for n in PROP_NAMES}))  # fmt: skip
def test_random_conditions_raise_only_their_own_errors(text, point):
    try:
        constraint = Constraint.parse(text, PROP_NAMES)
    except ValueError:
        return
    try:
        assert constraint.holds(point) in (True, False)
    except ConstraintError as exc:
        assert len(str(exc)) < 2000


@pytest.mark.parametrize(("a", "b", "c", "expected"),
                         [(1, 2, 3, True), (1, 3, 2, False), (2, 1, 3, False), (1, 1, 3, False),
                          (3, 2, 1, False)])  # fmt: skip
def test_a_chained_comparison_means_every_link_holds(a, b, c, expected):
    assert (
        Constraint.parse("a < b < c", ["a", "b", "c"]).holds({"a": a, "b": b, "c": c}) is expected
    )
    assert Constraint.parse("a < b <= c", ["a", "b", "c"]).holds(
        {"a": a, "b": b, "c": c}) is (a < b <= c)  # fmt: skip


# -- a suite that derives nothing: distinct axes skip the duplicate check, the rest keep it --
def test_without_derived_parameters_duplicates_are_still_dropped_where_they_can_occur():
    bench = registry.get("reduction")
    assert [p["n"] for p in expand(bench, {"n": [64, 128]})] == [64, 128]
    assert [p["n"] for p in expand(bench, {"n": [64, 64, 128]})] == [64, 128]
    zipped = [{"n": [64, 64], "block_size": [128, 128]}]
    assert [(p["n"], p["block_size"]) for p in expand(bench, {}, zipped)] == [(64, 128)]
    both = expand(bench, {"dtype": ["float32"]}, [{"n": [8, 8]}])
    assert [(p["n"], p["dtype"]) for p in both] == [(8, "float32")]


def test_zipped_lists_of_different_lengths_are_refused_by_expand_itself():
    with pytest.raises(ValueError):
        expand(registry.get("reduction"), {}, [{"n": [64, 128], "block_size": [128]}])


def test_a_condition_that_fails_at_a_point_names_the_point():
    from gpubench.model.sweep import ConstraintError

    rule = Constraint.parse("n // (block_size - 128) > 0", ["n", "block_size", "dtype"])
    with pytest.raises(ConstraintError) as info:
        expand(registry.get("reduction"), {"n": [1], "block_size": [128]}, constraints=[rule])
    assert str(info.value).endswith(", at the point n=1, block_size=128, dtype='float32'")


def test_a_dropped_value_names_what_the_suite_derives_it_from():
    from gpubench.model.sweep import DroppedValue

    with pytest.raises(DroppedValue) as info:
        expand(registry.get("transpose"), {"size": [64], "tile": [32]},
               [{"rows": [8], "cols": [16]}])  # fmt: skip
    assert info.value.name == "size"
    assert str(info.value) == ("size=64 would be ignored where rows=8, cols=16, tile=32 (the suite derives "
                               "size from them there): set either size or the parameters it "
                               "stands for")  # fmt: skip


def test_a_constraint_that_fails_names_the_point_with_long_values_cut():
    from gpubench.errors import ConfigError
    from gpubench.load import config

    with pytest.raises(ConfigError) as info:
        config.spec_from_mapping({"suite": "tests/suites/scale.py",
                                  "params": {"tag": ["x" * 30], "n": [5]},
                                  "constraints": ["n / (n - 5) > 1"]}, "s.yaml")  # fmt: skip
    assert str(info.value) == ("s.yaml: constraints: condition 'n / (n - 5) > 1' divides by zero, "
                               "at the point n=5, broken=0, tag='xxxxxxx...xxxxxxxx', scale=1.0")  # fmt: skip


def test_a_dropped_value_and_the_values_it_names_are_cut_at_twenty_characters():
    from gpubench.model.sweep import DroppedValue

    big = 10**25  # 84 bits: past 20 characters' worth (80), within 21's (84)
    with pytest.raises(DroppedValue) as info:
        expand(registry.get("transpose"), {"size": [big], "tile": [32]},
               [{"rows": [big], "cols": [16]}])  # fmt: skip
    assert str(info.value) == (
        "size=<an integer of about 25 digits> would be ignored where rows=<an integer of about "
        "25 digits>, cols=16, tile=32 (the suite derives size from them there): set either size "
        "or the parameters it stands for")  # fmt: skip


def test_a_product_past_the_limit_is_refused_by_its_count_before_any_point_is_built():
    bench = registry.get("transpose")
    thousand = list(range(1, 1001))
    # 10^12 combinations: built, they would take hours and terabytes; counted, microseconds.
    with pytest.raises(TooManyPoints) as info:
        expand(bench, {"size": thousand, "tile": [16, 32]}, [{"rows": thousand, "cols": thousand}])
    assert str(info.value) == (
        "the sweep asks for 2,000,000 combinations (1,000 size × 2 tile × 1,000 zip[0]); at most "
        "1,000,000 are expanded: narrow an axis or split the sweep into several files"
    )
    assert MAX_COMBINATIONS == 1_000_000
