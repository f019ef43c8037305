from __future__ import annotations

import math

import pytest

from gpubench.model.stats import robust_noise, summarize


def test_summary_of_known_samples():
    s = summarize([4.0, 1.0, 3.0, 2.0, 5.0])
    assert (s.samples, s.median_ms, s.min_ms, s.max_ms, s.mean_ms) == (5, 3.0, 1.0, 5.0, 3.0)
    assert s.stdev_ms == pytest.approx(math.sqrt(2.5))
    assert s.rel_stdev == pytest.approx(math.sqrt(2.5) / 3)
    assert (s.q1_ms, s.q3_ms) == (2.0, 4.0)


def test_one_sample_has_no_spread():
    s = summarize([2.0])
    assert s.stdev_ms == 0 and s.median_ms == 2.0 and math.isinf(s.rel_noise)


def test_empty_samples_are_refused():
    with pytest.raises(ValueError):
        summarize([])


def test_robust_noise_ignores_a_rare_outlier_that_dominates_the_stdev():
    samples = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98] * 10 + [50.0]
    s = summarize(samples)
    assert s.rel_stdev > 1.0
    assert s.rel_noise < 0.03


def test_robust_noise_matches_the_stdev_scale_for_normal_samples():
    import numpy as np

    samples = list(np.random.default_rng(1).normal(100.0, 2.0, 20000))
    assert robust_noise(samples) == pytest.approx(0.02, rel=0.05)


def test_median_and_mean_differ_and_are_not_confused():
    s = summarize([1.0, 2.0, 2.5, 10.0, 2.2])
    assert s.median_ms == 2.2 and s.mean_ms == pytest.approx(3.54)
    assert (s.min_ms, s.max_ms, s.q1_ms, s.q3_ms) == (1.0, 10.0, 2.0, 2.5)
    assert s.rel_noise == pytest.approx(0.7413 * 0.5 / 2.2)
    assert s.rel_stdev == pytest.approx(s.stdev_ms / 3.54)


def test_two_samples_have_a_spread_and_a_zero_median_has_no_relative_noise():
    s = summarize([1.0, 3.0])
    assert (s.median_ms, s.mean_ms, s.q1_ms, s.q3_ms) == (2.0, 2.0, 1.5, 2.5)
    assert s.stdev_ms == pytest.approx(math.sqrt(2)) and s.rel_noise == pytest.approx(0.7413 / 2)
    assert math.isinf(robust_noise([0.0, 0.0, 0.0]))
    assert robust_noise([1.0, 1.0]) == 0.0
    zero = summarize([0.0, 0.0])
    assert math.isinf(zero.rel_stdev) and math.isinf(zero.rel_noise)


def test_one_sample_is_its_own_quartiles_and_sub_millisecond_means_have_a_finite_stdev():
    one = summarize([0.25])
    assert (one.q1_ms, one.median_ms, one.q3_ms) == (0.25, 0.25, 0.25)
    small = summarize([0.5, 0.7])
    assert math.isfinite(small.rel_stdev) and small.rel_stdev == pytest.approx(0.1414213 / 0.6)


def test_no_samples_is_refused_with_its_reason():
    with pytest.raises(ValueError, match=r"^cannot summarize zero samples$"):
        summarize([])
