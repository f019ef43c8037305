from __future__ import annotations

import numpy as np
import pytest

from gpubench.benchmark import Tolerance
from gpubench.verify import check_output, check_outputs


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
