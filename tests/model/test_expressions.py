"""Safe expressions: what they compute, and every way they refuse."""

from __future__ import annotations

import numpy as np
import pytest

from gpubench.model.expressions import Condition, ConstraintError, Expression, ExpressionError


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        ("ceil_div(n, block)", {"n": 1000, "block": 256}, 4),
        ("ceil_div(n, 4 * block)", {"n": 1, "block": 256}, 1),
        ("12 * n", {"n": 2**40}, 12 * 2**40),
        ("min(a, b) + max(a, b)", {"a": 3, "b": 5}, 8),
        ("log2(n)", {"n": 1024}, 10),
        ("round_up(n, 32)", {"n": 33}, 64),
        ("n // 2 + n % 3 - -1", {"n": 7}, 3 + 1 + 1),
        ("1 << k", {"k": 20}, 1 << 20),
        ("n / 4", {"n": 10}, 2.5),
        ("n ** 3 - n", {"n": 5}, 120),
        ("(n & 12) | 1", {"n": 14}, 13),
        ("n ^ 6", {"n": 5}, 3),
        ("n >> 2", {"n": 1000}, 250),
        ("~n", {"n": 0}, -1),
        ("+n", {"n": 3}, 3),
        ("max(a, b, 7) - min(a, b)", {"a": 3, "b": 5}, 4),
        ("abs(a - b) * floor(2.5) + ceil(0.5)", {"a": 3, "b": 5}, 5),
        ("sqrt(n)", {"n": 16}, 4.0),
        ("int(n / 3)", {"n": 10}, 3),
        (4096, {}, 4096),
    ],
)
def test_scalar_expressions_compute_exact_values(text, env, expected):
    value = Expression.parse(text, env).evaluate(env)
    assert value == expected and type(value) is type(expected)


def test_log2_of_a_non_power_of_two_is_a_float():
    assert Expression.parse("log2(n)", ["n"]).evaluate({"n": 10}) == pytest.approx(3.321928)


def test_names_used_are_recorded():
    assert Expression.parse("ceil_div(n, block) * 2", ["n", "block", "x"]).names == {"n", "block"}


@pytest.mark.parametrize(
    ("text", "known", "message"),
    [
        ("n +", ["n"], "cannot parse"),
        ("", [], "empty expression"),
        ("nn * 2", ["n"], "unknown name 'nn' in 'nn * 2' (did you mean 'n'?)"),
        ("ceil(n)", ["n"], None),  # allowed
        ("ceildiv(n, 2)", ["n"], "unknown function 'ceildiv'"),
        ("__import__('os')", [], "unknown function '__import__'"),
        ("n.bit_length()", ["n"], "unknown function 'n.bit_length'"),
        ("n.real", ["n"], "Attribute is not allowed"),
        ("[1, 2]", [], "List is not allowed"),
        ("n if n else 1", ["n"], "IfExp is not allowed"),
        ("lambda: 1", [], "Lambda is not allowed"),
        ("'text' * 3", [], "constant 'text' is not allowed"),
        ("True + 1", [], "constant True is not allowed"),
        ("n > 1", ["n"], "Compare is not allowed"),
        ("x" * 2001, [], "at most 2000 characters"),
        ("(" * 50 + "1" + ")" * 50, [], None),  # parentheses alone nest nothing
        ("-" * 60 + "1", [], "nested more than 40 deep"),
        (None, [], "expected an expression"),
        (True, [], "expected an expression"),
        ("f(**k)", [], "unknown function 'f'"),
    ],
)
def test_parse_refuses_what_is_not_allowed(text, known, message):
    if message is None:
        Expression.parse(text, known)
        return
    with pytest.raises(ExpressionError, match=None) as info:
        Expression.parse(text, known)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("text", "env", "message"),
    [
        ("n / 0", {"n": 1}, "divides by zero"),
        ("ceil_div(n, 0)", {"n": 1}, "ceil_div divides by zero"),
        ("ceil_div(n, 2.5)", {"n": 1}, "ceil_div takes integers"),
        ("10 ** 1000", {}, "exponent 1000 is too large"),
        ("n ** 10", {"n": 2**100}, "bits is too large"),
        ("1 << 1000", {}, "shift by 1000 is too large"),
        ("n * 2", {"n": "abc"}, "arithmetic on 'abc'"),
        ("n * 2", {"n": None}, "n has no value here"),
        ("log2(n)", {"n": 0}, "log2 of 0"),
        ("sqrt(n)", {"n": -1}, "cannot be evaluated"),
        ("2.0 ** 5000", {}, "exponent 5000 is too large"),
        ("2.0 ** 1024.5", {}, "cannot be evaluated"),
    ],
)
def test_evaluation_errors_are_one_line_expression_errors(text, env, message):
    expression = Expression.parse(text, env)
    with pytest.raises(ExpressionError) as info:
        expression.evaluate(env)
    assert message in str(info.value)


def test_array_expressions_call_numpy_compare_and_slice():
    x = np.arange(6, dtype=np.float64)
    env = {"x": x, "y": np.ones(6), "a": 2.5, "bins": 8}
    np.testing.assert_array_equal(Expression.parse("a * x + y", env, arrays=True).evaluate(env),
                                  2.5 * x + 1)  # fmt: skip
    np.testing.assert_array_equal(
        Expression.parse("where(x > 2, x, 0)", env, arrays=True).evaluate(env), [0, 0, 0, 3, 4, 5]
    )
    np.testing.assert_array_equal(
        Expression.parse("roll(x, 1)[::2]", env, arrays=True).evaluate(env), [5, 1, 3]
    )
    counts = Expression.parse("bincount(int64(x), minlength=bins)", env, arrays=True)
    np.testing.assert_array_equal(counts.evaluate(env), [1, 1, 1, 1, 1, 1, 0, 0])
    with pytest.raises(ExpressionError, match="Compare is not allowed"):
        Expression.parse("x > 2", env)  # not in the scalar dialect
    with pytest.raises(ExpressionError, match="unknown function 'load'"):
        Expression.parse("load('file.npy')", env, arrays=True)
    with pytest.raises(ExpressionError, match="cannot be evaluated"):
        Expression.parse("reshape(x, (4, 4))", env, arrays=True).evaluate(env)


@pytest.mark.parametrize(("n", "block", "blocks"), [(1024, 256, 4), (1025, 256, 5), (256, 256, 1),
                                                     (1, 256, 1), (255, 256, 1), (0, 256, 0)])  # fmt: skip
def test_ceil_div_at_exact_multiples_on_every_path(n, block, blocks):
    """The walker, the compiled scalar path and the array dialect agree, exact multiples too."""
    scalar = Expression.parse("ceil_div(n, block)", ["n", "block"])
    assert scalar.evaluate({"n": n, "block": block}) == blocks
    compiled = scalar.compiled()
    if compiled is not None:
        assert compiled(**{"n": n, "block": block}) == blocks
    array = Expression.parse("ceil_div(n, block)", ["n", "block"], arrays=True)
    got = array.evaluate({"n": np.array([n, n]), "block": block})
    assert got.tolist() == [blocks, blocks]


@pytest.mark.parametrize(
    ("text", "maker"),
    [
        ("zeros(n ** 3)", "zeros"),
        ("ones((n, n, n))", "ones"),
        ("full(n ** 3, 1.5)", "full"),
        ("arange(0, n ** 3, 1)", "arange"),
        ("outer(x, arange(n ** 2))", "outer"),
        ("broadcast_to(x, (n, n, n))", "broadcast_to"),
        ("bincount(x * n ** 3)", "bincount"),
    ],
)
def test_a_reference_that_would_allocate_gigabytes_is_refused_first(text, maker):
    n = 2**11  # n ** 3 is 2^33 elements: 64 GiB of float64
    expression = Expression.parse(text, ["n", "x"], arrays=True)
    with pytest.raises(ExpressionError, match=f"{maker}\\(\\) would make [0-9,]+ elements"):
        expression.evaluate({"n": n, "x": np.arange(n)})


def test_the_same_makers_at_a_reference_s_size_still_work():
    x = np.arange(1000)
    for text, size in (("zeros(n)", 1000), ("outer(x, x)", 10**6), ("arange(n)", 1000),
                       ("bincount(x)", 1000), ("broadcast_to(x, (3, n))", 3000)):  # fmt: skip
        got = Expression.parse(text, ["n", "x"], arrays=True).evaluate({"n": 1000, "x": x})
        assert got.size == size


@pytest.mark.parametrize(
    ("name", "args", "kwargs", "expected"),
    [
        ("zeros", [(3, 4)], {}, 12),
        ("ones", [5], {}, 5),
        ("full", [np.int64(7), 1.0], {}, 7),
        ("zeros", [-2], {}, 0),
        ("zeros", [(3, -1)], {}, 0),
        ("zeros", [(3, "x")], {}, 3),  # a dimension that is not a count: NumPy will say
        ("zeros", ["x"], {}, 0),
        ("zeros", [], {}, 0),
        ("broadcast_to", [np.ones(3), (2, 3)], {}, 6),
        ("broadcast_to", [np.ones(3)], {}, 0),
        ("arange", [5], {}, 5),
        ("arange", [2, 10], {}, 8),
        ("arange", [2, 10, 3], {}, 3),
        ("arange", [10, 2], {}, 0),
        ("arange", [0, 1, 0.25], {}, 4),
        ("arange", [1, 5, 0], {}, 0),
        ("arange", [np.arange(3)], {}, 0),  # not scalars: not estimated
        ("outer", [np.ones(3), np.ones(4)], {}, 12),
        ("outer", [np.ones(3)], {}, 0),
        ("matmul", [np.ones((2, 3, 4)), np.ones((4, 5))], {}, 30),
        ("dot", [np.ones(4), np.ones((4, 5))], {}, 5),
        ("matmul", [np.ones((3, 4)), np.ones(4)], {}, 3),
        ("matmul", [np.ones(4), np.ones(4)], {}, 1),
        ("matmul", [np.ones((3, 4)), np.ones((4, 5)), np.ones(5)], {}, 0),
        ("bincount", [np.array([0, 7, 2])], {}, 8),
        ("bincount", [np.array([0, 7, 2])], {"minlength": 20}, 20),
        ("bincount", [np.array([], dtype=np.int64)], {"minlength": 20}, 0),
        ("sum", [np.ones(10)], {}, 0),  # not an array maker
    ],
)
def test_the_size_an_array_function_would_make_is_estimated_exactly(name, args, kwargs, expected):
    from gpubench.model.expressions import _result_elements

    assert _result_elements(name, args, kwargs) == expected


def test_an_array_maker_up_to_the_limit_runs_and_one_past_it_is_refused(monkeypatch):
    from gpubench.model import expressions

    monkeypatch.setattr(expressions, "MAX_RESULT_ELEMENTS", 12)
    expressions._check_result_size("zeros", [(3, 4)], {})  # exactly at the limit
    with pytest.raises(ExpressionError, match=r"zeros\(\) would make 13 elements, more than 12"):
        expressions._check_result_size("zeros", [13], {})


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        ("log2(n)", {"n": 1}, 0),
        ("log2(n)", {"n": 2}, 1),
        ("1 ** 256", {}, 1),  # the exponent at its limit (the value's own limit is 256 bits)
        ("2 ** -256", {}, 2.0**-256),
        ("0 << 256", {}, 0),
        ("n * 300", {"n": 2}, 600),
        ("n + 1000", {"n": 2}, 1002),
        ("2.0 ** 0.5", {}, 2.0**0.5),
        ("-n", {"n": 3}, -3),
    ],
)
def test_the_guards_stop_exactly_at_their_limits(text, env, expected):
    value = Expression.parse(text, env).evaluate(env)
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize(
    ("text", "message"),
    [("1 ** 257", "exponent 257 is too large"), ("2 ** -257", "exponent -257 is too large"),
     ("0 << 257", "shift by 257 is too large"), ("log2(n)", "log2 of 0"),
     ("-n", "arithmetic on 'abc'")],
)  # fmt: skip
def test_one_past_each_guard_is_refused(text, message):
    env = {"n": 0} if "log2" in text else {"n": "abc"}
    with pytest.raises(ExpressionError) as info:
        Expression.parse(text, env).evaluate(env)
    assert message in str(info.value)


# Both ways a scalar expression is evaluated, the compiled function and the tree walker
# (arrays, unhashable values), at the guards' edges: the same value or the same one line.
BOTH_WAYS = [
    ("2 ** e", {"e": 127}, 2**127),  # 128 bits: the largest integer allowed
    ("2 ** e", {"e": 128}, "'2 ** e': an integer of 129 bits is too large"),
    ("2 ** e", {"e": 257}, "'2 ** e': exponent 257 is too large"),  # refused before computing
    ("2 ** e", {"e": -257}, "'2 ** e': exponent -257 is too large"),
    ("2.0 ** e", {"e": -256}, 2.0**-256),
    ("1 << s", {"s": 127}, 1 << 127),
    ("1 << s", {"s": 128}, "'1 << s': an integer of 129 bits is too large"),
    ("1 << s", {"s": 257}, "'1 << s': shift by 257 is too large"),
    ("x >> s", {"x": 5, "s": 300}, 0),  # right shifts cannot grow
    ("a + 1", {"a": True}, "'a + 1': arithmetic on True"),
    ("1 - a", {"a": "text"}, "'1 - a': arithmetic on 'text'"),
    ("-a", {"a": False}, "'-a': arithmetic on False"),
    ("~a", {"a": "x"}, "'~a': arithmetic on 'x'"),
    ("a * 2", {"a": None}, "'a * 2': a has no value here"),
    ("max(2 ** 60, a) * 2 ** 60", {"a": 1}, 2**120),
    ("max(a, 1) * 2 ** 127 * 2", {"a": 1},
     "'max(a, 1) * 2 ** 127 * 2': an integer of 129 bits is too large"),
    ("max(a, 2 ** 127) * 2", {"a": 1},
     "'max(a, 2 ** 127) * 2': an integer of 129 bits is too large"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "env", "expected"), BOTH_WAYS)
def test_compiled_and_walked_evaluations_agree_at_the_edges(text, env, expected):
    expression = Expression.parse(text, env)
    for evaluate in (expression.evaluate, expression._evaluate):
        if isinstance(expected, str):
            with pytest.raises(ExpressionError) as error:
                evaluate(env)
            assert str(error.value) == expected
        else:
            value = evaluate(env)
            assert value == expected and type(value) is type(expected)


def test_array_comparisons_chain_element_by_element():
    x = np.array([1, 5, 3])
    expression = Expression.parse("0 < x <= 3", ["x"], arrays=True)
    assert expression.evaluate({"x": x}).tolist() == [True, False, True]
    assert Expression.parse("x < 4 < 5", ["x"], arrays=True).evaluate({"x": x}).tolist() == [
        True,
        False,
        True,
    ]


@pytest.mark.parametrize(("text", "point", "holds"), [
    ("-a < 0", {"a": 5}, True),
    ("-a < 0", {"a": -5}, False),
    ("not a", {"a": 0}, True),
    ("a - -b == 7", {"a": 3, "b": 4}, True),
    ("dtype == 'float32' or -tile < -32", {"dtype": "float64", "tile": 64}, True),
])  # fmt: skip
def test_conditions_negate_numbers(text, point, holds):
    assert Condition.parse(text, point).holds(point) is holds


@pytest.mark.parametrize(("text", "point", "message"), [
    ("a + 1 > 0", {"a": "x"}, "condition 'a + 1 > 0': arithmetic on text ('x', 1)"),
    ("1 + a > 0", {"a": "x"}, "condition '1 + a > 0': arithmetic on text (1, 'x')"),
    ("-a > 0", {"a": "x"}, "condition '-a > 0': minus of text ('x')"),
    ("a < 3", {"a": "x"}, "condition 'a < 3': compares text with a number ('x', 3)"),
    ("3 < a", {"a": "x"}, "condition '3 < a': compares text with a number (3, 'x')"),
        (
            "a * 1.5 > 0",
            {"a": 10**400},
            "condition 'a * 1.5 > 0' cannot be evaluated: int too large to convert to float",
        ),
])  # fmt: skip
def test_conditions_that_cannot_be_evaluated_say_so_in_full(text, point, message):
    with pytest.raises(ConstraintError) as error:
        Condition.parse(text, point).holds(point)
    assert str(error.value) == message


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_array_expressions_overflow_and_divide_without_warnings():
    env = {"x": np.array([0.0, 1.0, 1e308])}
    result = Expression.parse("x / 0 + x * 10", env, arrays=True).evaluate(env)
    assert np.isnan(result[0]) and result[1] == np.inf and result[2] == np.inf


@pytest.mark.parametrize(("text", "known", "arrays", "message"), [
    ("min(**k)", ["k"], False, "**arguments are not allowed in 'min(**k)'"),
    ("foo(1)", ["n"], False, "unknown function 'foo' in 'foo(1)' (did you mean 'floor'?)"),
    ("x.astype('f4')", ["x"], True, "unknown function 'x.astype' in \"x.astype('f4')\""),
    ("n > 1", ["n"], False, "Compare is not allowed in 'n > 1' (use names, numbers, arithmetic "
     "and the functions abs, ceil, ceil_div, floor, int, log2, max, min, round_up, sqrt, ...)"),
    ("lambda: 1", ["x"], True, "Lambda is not allowed in 'lambda: 1' (use names, numbers, "
     "arithmetic, comparisons, slices and the functions abs, amax, amin, arange, arccos, arcsin, "
     "arctan, arctan2, argmax, argmin, argsort, bincount, ...)"),
    ("m + 1", [], False, "unknown name 'm' in 'm + 1'"),
    ("m + 1", ["n", "k"], False, "unknown name 'm' in 'm + 1' (known: k, n)"),
    ("'a' + n", ["n"], False, "constant 'a' is not allowed in \"'a' + n\""),
    ("-" * 38 + "n", ["n"], False, f"'{'-' * 38}n' is nested more than 40 deep"),
])  # fmt: skip
def test_each_refused_expression_is_named_in_full(text, known, arrays, message):
    with pytest.raises(ExpressionError) as info:
        Expression.parse(text, known, arrays=arrays)
    assert str(info.value) == message


def test_nesting_is_allowed_up_to_its_limit_and_refused_however_deep_past_it():
    assert Expression.parse("-" * 37 + "n", ["n"]).evaluate({"n": 2}) == -2  # 40 levels
    with pytest.raises(ExpressionError, match="is nested more than 40 deep"):
        Expression.parse("-" * 1990 + "n", ["n"])  # deeper than Python's recursion limit
    assert Expression.parse("sum(x, dtype='float64')", ["x"], arrays=True).names == {"x"}


@pytest.mark.parametrize(("text", "message"), [
    ("", "expected a condition such as 'block_rows <= tile', got ''"),
    (5, "expected a condition such as 'block_rows <= tile', got 5"),
    ("a <", "cannot parse condition 'a <'"),
    ("-" * 38 + "a < 1", f"condition '{'-' * 38}a < 1' is nested more than 40 deep"),
    ("d < 1", "unknown parameter 'd' in condition 'd < 1'"),
    ("a < True", "unsupported constant True in 'a < True'"),
    ("a(1) < 2", "Call is not allowed in condition 'a(1) < 2' (use parameters, numbers, + - * / "
     "// %, comparisons, and/or/not)"),
    ("a + 1", "condition 'a + 1' must be a comparison, such as 'a <= b'"),
    ("-a", "condition '-a' must be a comparison, such as 'a <= b'"),
    ("a < " + "1" * 497, "a condition is at most 500 characters"),
])  # fmt: skip
def test_each_refused_condition_is_named_in_full(text, message):
    with pytest.raises(ExpressionError) as info:
        Condition.parse(text, ["a", "b", "c"])
    assert str(info.value) == message


def test_a_condition_of_exactly_the_longest_length_and_its_chains_and_connectives():
    assert Condition.parse("a < " + "1" * 496, ["a"]).holds({"a": 1})  # 500 characters
    chain = Condition.parse("a < b < c", ["a", "b", "c"])
    assert chain.holds({"a": 1, "b": 2, "c": 3}) and not chain.holds({"a": 1, "b": 3, "c": 2})
    both = Condition.parse("a < b and b < c", ["a", "b", "c"])
    either = Condition.parse("a < b or b < c", ["a", "b", "c"])
    assert not both.holds({"a": 1, "b": 3, "c": 2}) and either.holds({"a": 1, "b": 3, "c": 2})
    assert Condition.parse("not a < b", ["a", "b"]).holds({"a": 2, "b": 1})


@pytest.mark.parametrize(("text", "point", "message"), [
    ("a // b > 0", {"a": 1, "b": 0}, "condition 'a // b > 0' divides by zero"),
    ("a < b", {"a": None, "b": 0}, "condition 'a < b': a has no value at this point"),
])  # fmt: skip
def test_a_condition_that_cannot_be_evaluated_at_a_point_says_why(text, point, message):
    with pytest.raises(ConstraintError) as info:
        Condition.parse(text, ["a", "b"]).holds(point)
    assert str(info.value) == message


@pytest.mark.parametrize(("text", "env", "message"), [
    ("n // 0", {"n": 1}, "'n // 0' divides by zero"),
    ("_gpb_n // 0", {"_gpb_n": 1}, "'_gpb_n // 0' divides by zero"),  # not compiled, walked
    ("1 << 256", {}, "'1 << 256': an integer of 257 bits is too large"),
    ("1 << 257", {}, "'1 << 257': shift by 257 is too large"),
    ("_gpb_n << 256", {"_gpb_n": 1}, "'_gpb_n << 256': an integer of 257 bits is too large"),
    ("ceil_div(n, 2.5)", {"n": 3}, "'ceil_div(n, 2.5)': ceil_div takes integers, got 3 and 2.5"),
    ("n + 1", {"n": [1]}, "'n + 1': arithmetic on [1]"),  # a value that is no memo key
    ("   ", {}, "empty expression"),
])  # fmt: skip
def test_a_scalar_expression_that_has_no_value_says_why(text, env, message):
    with pytest.raises(ExpressionError) as info:
        Expression.parse(text, ["n", "_gpb_n"]).evaluate(env)
    assert str(info.value) == message


def test_the_longest_expression_and_its_limit():
    longest = "n" + " " * 1996 + "+ 1"  # 2,000 characters
    assert Expression.parse(longest, ["n"]).evaluate({"n": 1}) == 2
    with pytest.raises(ExpressionError, match=r"^an expression is at most 2000 characters$"):
        Expression.parse(longest + "1", ["n"])
    with pytest.raises(ExpressionError, match=r"^expected an expression, got \[1\]$"):
        Expression.parse([1], [])


def test_names_that_would_shadow_a_helper_are_walked_instead_of_compiled():
    plain = Expression.parse("n + 1", ["n"])
    assert plain.compiled() is not None and plain.evaluate({"n": 2}) == 3
    shadow = Expression.parse("min(_gpb_f_min, 3)", ["_gpb_f_min"])
    assert shadow.compiled() is None and shadow.evaluate({"_gpb_f_min": 5}) == 3
    assert Expression.parse("x * 2", ["x"], arrays=True).compiled() is None


def test_an_array_expression_negates_and_names_what_failed():
    x = np.array([1.0, -2.0])
    assert np.array_equal(Expression.parse("-x", ["x"], arrays=True).evaluate({"x": x}),
                          [-1.0, 2.0])  # fmt: skip
    expr = Expression.parse("x[5]", ["x"], arrays=True)
    with pytest.raises(ExpressionError) as info:
        expr.evaluate({"x": x})
    assert str(info.value) == ("'x[5]' cannot be evaluated: index 5 is out of bounds for axis 0 "
                               "with size 2")  # fmt: skip

    def exhausted():
        raise MemoryError

    with pytest.raises(ExpressionError, match=r"^'x\[5\]': out of host memory$"):
        expr._guarded(exhausted)


@pytest.mark.parametrize(("a", "b"), [
    ((4, 5), (2, 5, 7)), ((3, 1, 4, 5), (2, 5, 7)), ((5,), (5,)), ((5,), (2, 5, 7)),
    ((2, 3, 5), (5,)), ((4, 5), (5, 7)), ((6, 4, 5), (6, 5, 7)),
])  # fmt: skip
@pytest.mark.parametrize("name", ["matmul", "dot"])
def test_a_product_s_size_is_known_before_it_is_made_batches_included(name, a, b):
    from gpubench.model.expressions import _result_elements

    x, y = np.ones(a), np.ones(b)
    assert _result_elements(name, [x, y], {}) == getattr(np, name)(x, y).size


# -- matrix products in the reference dialect ---------------------------------------------------
PRODUCT_ENV = {
    "A": np.arange(6.0).reshape(2, 3) - 2.5,
    "B": np.arange(12.0).reshape(3, 4) / 7,
    "x": np.arange(3.0),
}


@pytest.mark.parametrize(
    "text",
    ["A @ B", "matmul(A, B)", "dot(A, B)", "einsum('ij,jk->ik', A, B)", "einsum('ij, jk', A, B)"],
)
def test_a_matrix_product_is_exactly_numpy_s_matmul(text):
    got = Expression.parse(text, PRODUCT_ENV, arrays=True).evaluate(PRODUCT_ENV)
    np.testing.assert_allclose(got, np.matmul(PRODUCT_ENV["A"], PRODUCT_ENV["B"]), rtol=1e-15)
    assert got.shape == (2, 4)


def test_matrix_vector_and_batched_products_follow_numpy():
    env = {**PRODUCT_ENV, "T": np.arange(24.0).reshape(2, 3, 4)}
    for text, expected in (
        ("A @ x", PRODUCT_ENV["A"] @ PRODUCT_ENV["x"]),
        ("A @ T", PRODUCT_ENV["A"] @ env["T"]),
        ("einsum('i,i->', x, x)", 5.0),
    ):
        got = Expression.parse(text, env, arrays=True).evaluate(env)
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "B @ A",
            "'B @ A': matmul of shapes (3, 4) and (2, 3): the inner dimensions 4 and 2 differ",
        ),
        (
            "dot(B, A)",
            "'dot(B, A)': dot of shapes (3, 4) and (2, 3): the inner dimensions 4 and 2 differ",
        ),
        (
            "A @ 3",
            "'A @ 3': matmul takes arrays of at least one dimension, got shapes (2, 3) and ()",
        ),
        (
            "einsum('ij,jk->ik', A)",
            "\"einsum('ij,jk->ik', A)\": einsum subscripts 'ij,jk->ik' name 2 operand(s), given 1",
        ),
        (
            "einsum('i...,jk->ik', A, B)",
            "\"einsum('i...,jk->ik', A, B)\": einsum subscripts "
            "'i...,jk->ik': letters, commas and one -> only (such as 'ij,jk->ik'; no ...)",
        ),
        (
            "einsum('ijk,jk->ik', A, B)",
            "\"einsum('ijk,jk->ik', A, B)\": einsum subscripts "
            "'ijk,jk->ik': operand 1 has shape (2, 3), but 'ijk' names 3 dimension(s)",
        ),
        (
            "einsum('ij,ik->jk', A, B)",
            "\"einsum('ij,ik->jk', A, B)\": einsum subscripts "
            "'ij,ik->jk': 'i' is 2 in one operand and 3 in operand 2",
        ),
        (
            "einsum('ij,jk->iik', A, B)",
            "\"einsum('ij,jk->iik', A, B)\": einsum subscripts "
            "'ij,jk->iik': the output 'iik' must name input letters, each once",
        ),
        (
            "einsum(A, B)",
            "'einsum(A, B)': einsum takes the subscripts first, as text such as 'ij,jk->ik'",
        ),
    ],
)
def test_products_whose_shapes_do_not_fit_are_one_line_naming_the_shapes(text, message):
    with pytest.raises(ExpressionError) as caught:
        Expression.parse(text, PRODUCT_ENV, arrays=True).evaluate(PRODUCT_ENV)
    assert str(caught.value) == message


def test_a_product_past_the_cost_limit_is_refused_before_it_runs(monkeypatch):
    from gpubench.model import expressions

    monkeypatch.setattr(expressions, "MAX_PRODUCT_MACS", 24)  # A @ B is 2 * 4 * 3
    Expression.parse("A @ B", PRODUCT_ENV, arrays=True).evaluate(PRODUCT_ENV)
    monkeypatch.setattr(expressions, "MAX_PRODUCT_MACS", 23)
    for text, name in (("A @ B", "matmul"), ("einsum('ij,jk->ik', A, B)", "einsum")):
        with pytest.raises(ExpressionError) as caught:
            Expression.parse(text, PRODUCT_ENV, arrays=True).evaluate(PRODUCT_ENV)
        assert str(caught.value).endswith(f"{name}() would take 24 multiply-adds, more than 23")


# -- every array a reference builds, bounded before it is built -----------------------------------
def test_the_array_limit_is_four_times_the_largest_array_with_a_floor_and_a_ceiling():
    from gpubench.model.expressions import array_limit

    assert array_limit(0) == 2**26
    assert array_limit(2**24) == 2**26
    assert array_limit(2**28) == 2**30
    assert array_limit(2**40) == 2**31


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "ones((20000, 20000))",
            "'ones((20000, 20000))': ones() would make 400,000,000 "
            "elements, more than 1,000 (3.0 GiB as float64)",
        ),
        (
            "sum(arange(300000000))",
            "'sum(arange(300000000))': arange() would make 300,000,000 "
            "elements, more than 1,000 (2.2 GiB as float64)",
        ),
        (
            "outer(x, x)",
            "'outer(x, x)': outer() would make 1,024 elements, more than 1,000 "
            "(0.0 MiB as float64)",
        ),
        (
            "pad(x, 500)",
            "'pad(x, 500)': pad() would make 1,032 elements, more than 1,000 (0.0 MiB as float64)",
        ),
        (
            "ones(shape=(n, n))",
            "'ones(shape=(n, n))': ones() would make 1,024 elements, more "
            "than 1,000 (0.0 MiB as float64)",
        ),
        (
            "reshape(x, (32, 1)) + x",
            "'reshape(x, (32, 1)) + x': add would make 1,024 elements, "
            "more than 1,000 (0.0 MiB as float64)",
        ),
        (
            "reshape(x, (32, 1)) < x",
            "'reshape(x, (32, 1)) < x': comparison would make 1,024 "
            "elements, more than 1,000 (0.0 MiB as float64)",
        ),
        (
            "where(reshape(x, (32, 1)) > 0, x, 0)",
            "'where(reshape(x, (32, 1)) > 0, x, 0)': "
            "where() would make 1,024 elements, more than 1,000 (0.0 MiB as float64)",
        ),
        (
            "reshape(x, (4, 8))[zeros(200, 'int64')]",
            "\"reshape(x, (4, 8))[zeros(200, 'int64')]"
            '": an index would make 1,600 elements, more than 1,000 (0.0 MiB as float64)',
        ),
    ],
)
def test_an_array_past_the_limit_is_refused_before_it_is_built(text, message):
    env = {"x": np.arange(32.0), "n": 32}
    expression = Expression.parse(text, env, arrays=True)
    if "GiB" not in message:  # the small ones run under a higher limit
        assert expression.evaluate(env, max_elements=2000) is not None
    with pytest.raises(ExpressionError) as caught:
        expression.evaluate(env, max_elements=1000)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("'ab' * n", "\"'ab' * n\": arithmetic on 'ab'"),
        (
            "(n, n) * 10**9",
            "'(n, n) * 10**9': a list or tuple of 2,000,000,000 elements, more than 65,536",
        ),
        ("(n, n) - (n,)", "'(n, n) - (n,)': arithmetic on (32, 32)"),
        ("(n, n) * 2.5", "'(n, n) * 2.5': arithmetic on (32, 32)"),
    ],
)
def test_text_and_long_sequences_take_no_arithmetic_in_a_reference(text, message):
    with pytest.raises(ExpressionError) as caught:
        Expression.parse(text, ["n"], arrays=True).evaluate({"n": 32})
    assert str(caught.value) == message


def test_a_short_literal_is_numpy_s_operand_beside_an_array_and_python_s_beside_a_number():
    x = np.arange(4.0)
    weighted = Expression.parse("x * [0.5, 1.0, 2.0, 4.0]", ["x"], arrays=True)
    assert weighted.evaluate({"x": x}).tolist() == [0.0, 1.0, 4.0, 12.0]
    assert Expression.parse("x + (1,)", ["x"], arrays=True).evaluate({"x": x}).tolist() == [
        1.0,
        2.0,
        3.0,
        4.0,
    ]
    square = Expression.parse("ones((n,) * 2)", ["n"], arrays=True).evaluate({"n": 3})
    assert square.shape == (3, 3)
    assert Expression.parse("(n,) + (2,)", ["n"], arrays=True).evaluate({"n": 3}) == (3, 2)


@pytest.mark.parametrize("arrays", [False, True])
def test_an_integer_constant_past_128_bits_is_refused_when_parsed(arrays):
    with pytest.raises(ExpressionError) as caught:
        Expression.parse("n + " + "9" * 400, ["n"], arrays=arrays)
    assert (
        str(caught.value)
        == f"an integer of 1329 bits is too large in 'n + {'9' * 23}...{'9' * 28}'"
    )


def test_an_einsum_of_three_operands_is_contracted_pairwise_within_the_limit():
    env = {"x": np.arange(40.0), "M": np.arange(1600.0).reshape(40, 40) / 1600}
    expression = Expression.parse("einsum('ij,jk,k->i', M, M, x)", env, arrays=True)
    got = expression.evaluate(env, max_elements=1600)
    np.testing.assert_allclose(got, env["M"] @ env["M"] @ env["x"], rtol=1e-12)
    with pytest.raises(ExpressionError) as caught:
        Expression.parse("einsum('i,j,k->ij', x, x, x)", env, arrays=True).evaluate(
            env, max_elements=1000
        )
    assert str(caught.value) == (
        "\"einsum('i,j,k->ij', x, x, x)\": einsum() would make 1,600 elements, more than 1,000 "
        "(0.0 MiB as float64)"
    )
