"""Parallel inputs: reproducible from the seed alone, the dtypes and ranges asked for."""

from __future__ import annotations

import numpy as np
import pytest

from gpubench import randoms
from gpubench.randoms import ParallelRandom


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(randoms, "CHUNK", 1000)


def test_the_values_depend_on_the_seed_not_on_the_threads(small_chunks):
    one = ParallelRandom(11, workers=1).random(10_001, dtype=np.float32)
    many = ParallelRandom(11, workers=8).random(10_001, dtype=np.float32)
    other = ParallelRandom(12, workers=8).random(10_001, dtype=np.float32)
    assert np.array_equal(one, many) and not np.array_equal(one, other)
    assert one.dtype == np.float32 and one.min() >= 0 and one.max() < 1


def test_each_call_draws_fresh_values_and_chunks_differ(small_chunks):
    rng = ParallelRandom(3)
    a, b = rng.random(5000), rng.random(5000)
    assert not np.array_equal(a, b)
    assert not np.array_equal(a[:1000], a[1000:2000])


def test_fills_keep_type_shape_and_range(small_chunks):
    rng = ParallelRandom(5)
    ints = rng.integers(-3, 4, (50, 100), dtype=np.int32)
    assert ints.shape == (50, 100) and ints.dtype == np.int32
    assert ints.min() == -3 and ints.max() == 3
    normal = rng.standard_normal(20_000, dtype=np.float32)
    assert normal.dtype == np.float32 and abs(float(normal.mean())) < 0.05
    uniform = rng.uniform(2.0, 3.0, 5000)
    assert uniform.dtype == np.float64 and uniform.min() >= 2.0 and uniform.max() < 3.0
    out = np.empty(4000, np.float64)
    assert rng.random(out=out) is out


def test_small_arrays_scalars_and_other_methods_go_to_one_generator():
    rng = ParallelRandom(9)
    assert isinstance(rng.random(), float)
    assert rng.integers(5, size=3).shape == (3,)
    assert sorted(rng.permutation(5)) == [0, 1, 2, 3, 4]
    assert rng.choice([7], size=2).tolist() == [7, 7]
