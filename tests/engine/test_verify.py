from __future__ import annotations

import math

import numpy as np
import pytest

from gpubench.engine.verify import check_output, check_outputs
from gpubench.model.benchmark import Tolerance
from gpubench.model.results import Verification


def test_exact_match_passes():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert check_output("out", a.copy(), a, Tolerance()).passed


def test_nan_left_by_the_poison_fails_and_says_where():
    expected = np.ones((3, 4), dtype=np.float32)
    got = expected.copy()
    got[2, 1] = np.nan
    v = check_output("out", got, expected, Tolerance(rtol=1e-3))
    assert not v.passed and v.unwritten == 1 and v.worst_index == [2, 1]
    assert "not written" in v.message


def test_the_worst_element_is_the_one_furthest_past_its_tolerance():
    expected = np.full(10, 100.0)
    got = expected.copy()
    got[3] += 0.5  # within 1% of 100
    got[7] += 5.0  # far outside
    v = check_output("out", got, expected, Tolerance(rtol=0.01))
    assert not v.passed and v.worst_index == [7]
    assert v.max_abs_error == pytest.approx(5.0) and v.got == pytest.approx(105.0)


def test_relative_tolerance_scales_with_the_value():
    expected = np.array([1e-6, 1e6])
    got = expected * (1 + 1e-7)
    assert check_output("out", got, expected, Tolerance(rtol=1e-6)).passed
    assert not check_output("out", got, expected, Tolerance()).passed


def test_integers_compare_exactly():
    expected = np.array([1, 2, 3], dtype=np.int32)
    assert not check_output(
        "out", np.array([1, 2, 4], dtype=np.int32), expected, Tolerance()
    ).passed


def test_shape_mismatch_fails():
    v = check_output("out", np.zeros((2, 3)), np.zeros((3, 2)), Tolerance())
    assert not v.passed and "shape" in v.message


def test_empty_outputs_pass_and_the_first_failing_output_is_reported():
    assert check_output("out", np.zeros(0), np.zeros(0), Tolerance()).passed
    v = check_outputs(
        {"a": np.ones(2), "b": np.zeros(2)}, {"a": np.ones(2), "b": np.ones(2)}, Tolerance()
    )
    assert not v.passed and v.worst_output == "b"


# -- every field of the verdict, over several chunks (CHUNK made tiny) -------------------------
@pytest.fixture
def tiny_chunks(monkeypatch):
    from gpubench.engine import verify

    monkeypatch.setattr(verify, "CHUNK", 4)


def test_unwritten_elements_in_every_chunk_are_counted_and_the_first_is_named(tiny_chunks):
    from gpubench.engine.verify import check_output

    expected = np.arange(1, 11, dtype=np.float32).reshape(2, 5)
    got = expected.copy()
    got[0, 4] = got[1, 2] = got[1, 4] = np.nan  # chunks 2, 2 and 3 of [4, 4, 2]
    v = check_output("out", got, expected, Tolerance())
    assert (v.passed, v.unwritten, v.worst_output, v.worst_index) == (False, 3, "out", [0, 4])
    assert math.isnan(v.got) and v.expected == 5.0
    assert (v.max_abs_error, v.max_rel_error) == (math.inf, math.inf)
    assert v.message == "out: 3 of 10 elements not written (still NaN), first at [0, 4]"


def test_a_wrong_element_in_the_last_chunk_is_found_with_its_error(tiny_chunks):
    from gpubench.engine.verify import check_output

    expected = np.arange(1, 11, dtype=np.float64)
    got = expected.copy()
    got[9] = 12.5  # last chunk; error 2.5 on 10 (25%)
    got[1] = 2.0001  # within the tolerance
    v = check_output("y", got, expected, Tolerance(rtol=1e-3))
    assert (v.passed, v.worst_output, v.worst_index, v.got, v.expected) == (
        False, "y", [9], 12.5, 10.0)  # fmt: skip
    assert v.max_abs_error == pytest.approx(2.5) and v.max_rel_error == pytest.approx(0.25)
    assert v.unwritten == 0
    assert v.message == ("y: 1 of 10 elements wrong; worst at [9]: got 12.5, expected 10.0 "
                         "(|error| 2.5 > allowed 0.01)")  # fmt: skip


def test_a_pass_reports_the_largest_error_over_all_chunks(tiny_chunks):
    from gpubench.engine.verify import check_output

    expected = np.full(10, 100.0)
    got = expected.copy()
    got[7] = 100.05
    v = check_output("c", got, expected, Tolerance(rtol=1e-3))
    assert (v.passed, v.worst_index, v.got, v.expected, v.message) == (True, [7], 100.05, 100.0, "")
    assert v.max_abs_error == pytest.approx(0.05) and v.max_rel_error == pytest.approx(5e-4)
    exact = check_output("c", expected.copy(), expected, Tolerance())
    assert (exact.passed, exact.max_abs_error, exact.max_rel_error) == (True, 0.0, 0.0)


def test_nan_expected_is_not_unwritten_and_nan_against_a_number_fails(tiny_chunks):
    from gpubench.engine.verify import check_output

    expected = np.array([1.0, np.nan, 3.0, 4.0, 5.0])
    assert check_output("o", expected.copy(), expected, Tolerance(rtol=1e-6)).passed
    assert check_output("o", expected.copy(), expected, Tolerance()).passed
    got = expected.copy()
    got[1] = 2.0
    v = check_output("o", got, expected, Tolerance(rtol=1e-6))
    assert not v.passed and v.worst_index == [1] and v.max_abs_error == math.inf


def test_shapes_and_integers_and_missing_outputs():
    from gpubench.engine.verify import check_output, check_outputs

    v = check_output("o", np.zeros((2, 3)), np.zeros((3, 2)), Tolerance())
    assert (v.passed, v.worst_output) == (False, "o")
    assert v.message == "o: shape (2, 3) != expected (3, 2)"
    ints = np.array([1, 2, 3], dtype=np.int32)
    wrong = np.array([1, 2, 4], dtype=np.int32)
    assert check_output("i", ints.copy(), ints, Tolerance()).passed
    assert not check_output("i", wrong, ints, Tolerance()).passed
    missing = check_outputs({}, {"o": ints}, Tolerance())
    assert (missing.passed, missing.worst_output) == (False, "o")
    per_output = check_outputs({"a": ints, "b": wrong}, {"a": ints, "b": ints},
                               {"a": Tolerance(), "b": Tolerance(atol=1.0)})  # fmt: skip
    assert per_output.passed and per_output.max_abs_error == 1.0 and per_output.worst_output == "b"


def test_the_bitwise_fast_path_decides_nothing_the_full_check_would_not():
    from gpubench.engine.verify import check_output
    from gpubench.model.benchmark import Tolerance

    exact = Tolerance()
    reference = np.array([0.0, 1.5, np.nan, 7.0], dtype=np.float32)
    same = reference.copy()
    assert check_output("x", same, reference, exact).passed  # bit for bit
    signed = reference.copy()
    signed[0] = -0.0  # other bits, equal value: the full check passes it
    assert check_output("x", signed, reference, exact).passed
    payload = reference.copy()
    payload.view(np.uint32)[2] = 0x7FC00001  # another NaN where the reference has NaN
    assert check_output("x", payload, reference, exact).passed
    poisoned = reference.copy()
    poisoned.view(np.uint32)[3] = 0xFFFFFFFF  # the poison left where a number belongs
    verdict = check_output("x", poisoned, reference, exact)
    assert not verdict.passed and verdict.unwritten == 1 and verdict.worst_index == [3]
    wrong = reference.copy()
    wrong[1] = 1.25
    verdict = check_output("x", wrong, reference, exact)
    assert not verdict.passed and verdict.worst_index == [1]
    # Another type than the reference's: the full check compares the values.
    assert check_output("x", reference.astype(np.float64), reference, exact).passed


# -- the chunked helpers, with chunks of a few elements so that every path runs ------------------
@pytest.fixture
def small_chunks(monkeypatch):
    from gpubench.engine import verify

    monkeypatch.setattr(verify, "CHUNK", 4)
    return verify


@pytest.mark.parametrize("cpus", [1, 5, 64])
def test_check_workers_are_the_cores_from_1_to_8(monkeypatch, cpus):
    from gpubench.engine import verify

    monkeypatch.setattr(verify, "usable_cpus", lambda: cpus)
    assert verify._workers() == {1: 1, 5: 5, 64: 8}[cpus]


def test_the_bitwise_fast_path_compares_bits_chunk_by_chunk(small_chunks):
    verify = small_chunks
    a = np.arange(11, dtype=np.float32)
    assert verify._bitwise_equal(a, a.copy())
    for index in (0, 5, 10):  # a difference in the first, a middle and the last chunk
        b = a.copy()
        b[index] += 1
        assert not verify._bitwise_equal(a, b)
    negative_zero = np.array([0.0, -0.0], dtype=np.float64)
    assert not verify._bitwise_equal(negative_zero, np.zeros(2))  # equal values, other bits
    assert not verify._bitwise_equal(a, a.astype(np.float64))  # another type: the full check
    for dtype in (np.int8, np.float16, np.uint32, np.int64):
        values = np.arange(9).astype(dtype)
        assert verify._bitwise_equal(values, values.copy())
    assert not verify._bitwise_equal(np.zeros(3, np.complex128), np.zeros(3, np.complex128))


def test_unwritten_counts_poison_where_the_reference_is_a_number(small_chunks):
    verify = small_chunks
    expected = np.ones(13)
    got = expected.copy()
    assert verify._unwritten(got, expected) == (0, -1)
    got[[0, 6, 12]] = np.nan  # the first element, then later chunks: the first one is kept
    assert verify._unwritten(got, expected) == (3, 0)
    expected[0] = np.nan  # NaN expected there: not poison
    assert verify._unwritten(got, expected) == (2, 6)
    only_expected = np.ones(13)
    only_expected[6] = np.nan
    got = np.ones(13)
    got[6] = np.nan
    assert verify._unwritten(got, only_expected) == (0, -1)  # NaN where NaN is right


def test_index_of_a_scalar_output_is_empty():
    from gpubench.engine.verify import _index

    assert _index(0, ()) == [] and _index(7, (2, 4)) == [1, 3]


INF, NAN = float("inf"), float("nan")
# (got, expected, tolerance, passed, wrong, worst index, max |error|, max relative error,
#  the message): every field of the verdict, at the rule's edges.
VERDICTS = [
    # An infinite reference allows no error: a finite value or the other infinity is wrong.
    ([1.0, 2.0], [INF, 2.0], Tolerance(rtol=1e-6), False, 1, [0], INF, INF,
     "x: 1 of 2 elements wrong; worst at [0]: got 1.0, expected inf (|error| inf > allowed 0)"),
    ([-INF], [INF], Tolerance(rtol=0.5, atol=1.0), False, 1, [0], INF, INF,
     "x: 1 of 1 elements wrong; worst at [0]: got -inf, expected inf (|error| inf > allowed 0)"),
    ([INF, -INF, 0.0], [INF, -INF, 0.0], Tolerance(rtol=1e-6), True, 0, [0], 0.0, 0.0, ""),
    ([INF], [1.0], Tolerance(rtol=1e-6), False, 1, [0], INF, INF,
     "x: 1 of 1 elements wrong; worst at [0]: got inf, expected 1.0 (|error| inf > allowed 1e-06)"),
    # NaN where the reference is NaN is right; rel of a zero reference: inf if off, 0 if not.
    ([NAN, 1.0], [NAN, 1.0], Tolerance(rtol=1e-6), True, 0, [0], 0.0, 0.0, ""),
    ([0.5, 0.0], [0.0, 0.0], Tolerance(atol=1.0), True, 0, [0], 0.5, INF, ""),
    # The worst is the furthest past its allowance, not the largest error.
    ([10.5, 1.3], [10.0, 1.0], Tolerance(rtol=0.1), False, 1, [1], 0.5, 0.3,
     "x: 1 of 2 elements wrong; worst at [1]: got 1.2999999523162842, expected 1.0 "
     "(|error| 0.3 > allowed 0.1)"),
    # rtol and atol add up: 0.1 * 2 + 0.05 = 0.25 allowed, 0.25 is not past it.
    ([2.25, 2.3], [2.0, 2.0], Tolerance(rtol=0.1, atol=0.05), False, 1, [1], 0.3, 0.15,
     "x: 1 of 2 elements wrong; worst at [1]: got 2.299999952316284, expected 2.0 "
     "(|error| 0.3 > allowed 0.25)"),
]  # fmt: skip


@pytest.mark.parametrize(("got", "expected", "tol", "passed", "wrong", "index", "max_abs",
                          "max_rel", "message"), VERDICTS)  # fmt: skip
def test_each_verdict_field_at_the_rule_s_edges(got, expected, tol, passed, wrong, index,
                                                max_abs, max_rel, message):  # fmt: skip
    v = check_output("x", np.array(got, np.float32), np.array(expected), tol)
    assert (v.passed, v.message or "") == (passed, message)
    assert v.max_abs_error == pytest.approx(max_abs) and v.max_rel_error == pytest.approx(max_rel)
    if not passed:
        assert (v.wrong, v.worst_index) == (wrong, index)


def test_element_error_is_the_rule_for_one_element():
    from gpubench.engine.verify import element_error

    assert element_error(1.0, INF, Tolerance(rtol=1.0), False) == (INF, 0.0)
    assert element_error(INF, INF, Tolerance(rtol=1.0), False) == (0.0, 0.0)
    assert element_error(NAN, NAN, Tolerance(atol=2.0), False) == (0.0, 2.0)
    assert element_error(NAN, 1.0, Tolerance(), False) == (INF, 0.0)
    assert element_error(1.0, NAN, Tolerance(rtol=3.0, atol=0.5), False) == (INF, 0.5)
    assert element_error(2.5, -2.0, Tolerance(rtol=0.25, atol=0.5), False) == (4.5, 1.0)
    big = 2**62
    assert element_error(big + 1, big, Tolerance(), True) == (1.0, 0.0)  # float64 sees 0
    assert element_error(3, 3, Tolerance(), True) == (0.0, 0.0)


def test_the_verdict_of_empty_and_unwritten_outputs_field_by_field():
    empty = check_output("x", np.zeros((0, 3), np.float32), np.zeros((0, 3)), Tolerance())
    assert (empty.passed, empty.max_abs_error, empty.max_rel_error) == (True, 0.0, 0.0)
    got = np.array([[1.0, NAN], [NAN, 4.0]], np.float32)
    v = check_output("x", got, np.array([[1.0, 2.0], [3.0, 4.0]]), Tolerance(rtol=1e-3))
    assert (v.passed, v.unwritten, v.wrong, v.worst_index) == (False, 2, 2, [0, 1])
    assert math.isnan(v.got) and v.expected == 2.0 and v.worst_output == "x"
    assert v.max_abs_error == INF and v.max_rel_error == INF
    assert v.message == "x: 2 of 4 elements not written (still NaN), first at [0, 1]"
    # Integers have no poison: a wrong integer is wrong, whatever its bits.
    ints = check_output("n", np.array([-1, 5], np.int32), np.array([7, 5]), Tolerance())
    assert (
        ints.message == "n: 1 of 2 elements wrong; worst at [0]: got -1, expected 7 "
        "(|error| 8 > allowed 0)"
    )


def test_integers_past_float64_precision_and_an_infinite_allowance():
    big = np.array([2**62 + 1, 7], np.int64)  # float64 sees 2**62 + 1 as 2**62
    v = check_output("n", big, np.array([2**62, 7], np.int64), Tolerance())
    assert (v.passed, v.wrong, v.worst_index) == (False, 1, [0])
    assert v.message == ("n: 1 of 2 elements wrong; worst at [0]: got 4611686018427387905, "
                         "expected 4611686018427387904 (|error| 1 > allowed 0)")  # fmt: skip
    anything = check_output("x", np.array([INF, 2.0], np.float32), np.array([1.0, 5.0]),
                            Tolerance(atol=INF))  # fmt: skip
    assert anything.passed and anything.wrong == 0


def test_the_exact_fast_paths_report_no_error():
    same = np.array([1.5, -2.0, 0.0], np.float32)
    bits = check_output("x", same, same.copy(), Tolerance())  # the same bits
    values = check_output("x", np.array([-0.0], np.float32), np.array([0.0]), Tolerance())
    for v in (bits, values):
        assert (v.passed, v.max_abs_error, v.max_rel_error) == (True, 0.0, 0.0)


# The verdicts in full: which path decided (the exact fast paths report no worst element),
# and the first of equal worst elements and outputs.
FAST_PASS = Verification(passed=True, max_abs_error=0.0, max_rel_error=0.0)


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize(("got", "expected"), [
    (np.array([-0.0, 1.0]), np.array([0.0, 1.0])),  # equal values, other bits
    (np.array([np.nan, -0.0], np.float32), np.array([np.nan, 0.0], np.float32)),
    (np.array([1, 2], np.int32), np.array([1, 2], np.int64)),  # equal values, other types
    (np.array(7.0), np.array(7.0)),  # a 0-d output
])  # fmt: skip
def test_an_exact_check_of_equal_values_takes_the_fast_path(got, expected):
    assert check_output("c", got, expected, Tolerance()) == FAST_PASS


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize(
    "tol", [Tolerance(atol=0.5), Tolerance(rtol=0.5), Tolerance(rtol=1e-3, atol=1e-3)]
)
def test_a_tolerant_check_reports_its_worst_element_even_when_everything_passes(tol):
    got = np.array([1.0, 2.0, np.inf, -np.inf])
    verdict = check_output("c", got, got.copy(), tol)
    # An infinite reference allows no error, so equal infinities are the first largest excess
    # (0) ahead of the finite elements' (minus their allowance).
    assert verdict == Verification(passed=True, max_abs_error=0.0, max_rel_error=0.0,
                                   worst_output="c", worst_index=[2], got=math.inf,
                                   expected=math.inf, wrong=0)  # fmt: skip


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_infinities_and_nan_against_numbers_raise_no_warnings():
    got = np.array([np.inf, 1.0, -np.inf, np.inf], np.float64)
    expected = np.array([np.inf, np.inf, np.inf, 0.0], np.float64)
    verdict = check_output("c", got, expected, Tolerance(rtol=1e-3))
    assert (verdict.passed, verdict.wrong, verdict.worst_index) == (False, 3, [1])
    assert verdict.max_abs_error == math.inf and verdict.max_rel_error == math.inf
    assert verdict.message == ("c: 3 of 4 elements wrong; worst at [1]: got 1.0, expected inf "
                               "(|error| inf > allowed 0)")  # fmt: skip
    # A zero reference with an error (a relative error of inf), an allowance that overflows.
    zero = check_output(
        "c", np.array([0.0, 1.0, 0.0]), np.array([0.0, 1.0, 1e-3]), Tolerance(rtol=0.5)
    )
    assert (zero.wrong, zero.worst_index, zero.max_rel_error) == (1, [2], 1.0)
    zero = check_output("c", np.array([1.0]), np.array([0.0]), Tolerance(rtol=0.5))
    assert (zero.wrong, zero.max_rel_error) == (1, math.inf)
    overflow = check_output(
        "c", np.array([np.inf, 1.0]), np.array([1e308, 1.0]), Tolerance(rtol=10)
    )
    # inf within an infinite allowance passes and is never the worst element.
    assert (overflow.passed, overflow.wrong, overflow.worst_index) == (True, 0, [1])
    nan_reference = check_output("c", np.array([np.nan, 2.0]), np.array([np.nan, 1.0]), Tolerance())
    assert (nan_reference.passed, nan_reference.wrong, nan_reference.worst_index) == (False, 1, [1])


def test_a_nan_reference_allows_only_the_absolute_tolerance():
    # NaN against NaN is no error, and its excess is minus the absolute tolerance (0 here), not
    # minus a relative allowance: it is the worst element.
    verdict = check_output("c", np.array([np.nan, 0.1]), np.array([np.nan, 0.1]), Tolerance(rtol=2))
    assert (verdict.passed, verdict.worst_index) == (True, [0])


def test_equal_errors_in_two_chunks_name_the_first(monkeypatch):
    from gpubench.engine import verify

    monkeypatch.setattr(verify, "CHUNK", 2)
    expected = np.zeros(6)
    got = np.array([0.0, 0.0, 0.0, 3.0, 0.0, 3.0])
    verdict = check_output("c", got, expected, Tolerance(atol=1.0))
    assert (verdict.worst_index, verdict.wrong) == ([3], 2)
    got = np.array([0.0, 0.0, 3.0, 0.0, 3.0, 0.0])
    assert check_output("c", got, expected, Tolerance()).worst_index == [2]


def test_check_outputs_reports_the_first_of_the_largest_errors_and_a_missing_output():
    tol = Tolerance(atol=1.0)
    same = np.array([1.0, 2.0])
    verdict = check_outputs({"a": same, "b": same}, {"a": same, "b": same.copy()}, tol)
    assert verdict.worst_output == "a"  # equal (zero) errors: the first output
    off_a, off_b = np.array([1.5, 2.0]), np.array([1.25, 2.0])
    verdict = check_outputs({"a": off_a, "b": off_b}, {"a": same, "b": same}, tol)
    assert (verdict.worst_output, verdict.max_abs_error) == ("a", 0.5)
    verdict = check_outputs({"a": off_b, "b": off_a}, {"a": same, "b": same}, tol)
    assert (verdict.worst_output, verdict.max_abs_error) == ("b", 0.5)
    assert check_outputs({}, {}, tol) == Verification(passed=True)
    missing = check_outputs({"a": same}, {"a": same, "z": same}, tol)
    assert missing == Verification(passed=False, worst_output="z",
                                   message="z: the variant produced no such output")  # fmt: skip
