"""Parallel inputs: reproducible from the seed alone, the dtypes and ranges asked for."""

from __future__ import annotations

import numpy as np
import pytest

from gpubench.engine import randoms
from gpubench.engine.randoms import ParallelRandom


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


@pytest.mark.parametrize("cpus", [1, 6, 64])
def test_threads_are_the_cores_from_1_to_32(monkeypatch, cpus):
    monkeypatch.setattr(randoms, "usable_cpus", lambda: cpus)
    assert randoms.threads() == {1: 1, 6: 6, 64: 32}[cpus]
    assert ParallelRandom(1).workers == randoms.threads()
    assert ParallelRandom(1, workers=3).workers == 3


def test_a_pool_worker_s_share_limits_its_threads(monkeypatch):
    monkeypatch.setattr(randoms, "usable_cpus", lambda: 64)
    monkeypatch.setattr(randoms, "_limit", None)
    randoms.limit_threads(16)
    assert randoms.threads() == 16
    randoms.limit_threads(0)  # never below one
    assert randoms.threads() == 1


@pytest.mark.parametrize("size", [7, 10_001])  # one generator, and chunks on the pool
def test_every_method_is_reproducible_from_the_seed_alone(small_chunks, size):
    def draws(seed):
        rng = ParallelRandom(seed)
        return [rng.random(size, dtype=np.float32), rng.standard_normal(size, dtype=np.float32),
                rng.integers(0, 1000, size, dtype=np.int32), rng.uniform(-1.0, 1.0, size)]  # fmt: skip

    first, again, other = draws(21), draws(21), draws(22)
    for a, b, c in zip(first, again, other, strict=True):
        assert a.shape == (size,) and np.array_equal(a, b) and not np.array_equal(a, c)
    assert [a.dtype for a in first] == [np.float32, np.float32, np.int32, np.float64]


@pytest.mark.parametrize("size", [7, 10_001])
def test_outputs_given_are_filled_in_place(small_chunks, size):
    rng = ParallelRandom(4)
    for method in (rng.random, rng.standard_normal):
        out = np.full(size, np.nan, dtype=np.float32)
        assert method(out=out, dtype=np.float32) is out and not np.isnan(out).any()
        assert out.std() > 0.1


@pytest.mark.parametrize("size", [50, 10_001])
def test_integers_honour_the_endpoint(small_chunks, size):
    rng = ParallelRandom(8)
    closed = rng.integers(0, 1, size, dtype=np.int8, endpoint=True)
    assert set(np.unique(closed).tolist()) == {0, 1} and closed.dtype == np.int8
    half_open = rng.integers(0, 1, size, dtype=np.int8)
    assert set(np.unique(half_open).tolist()) == {0}


def test_array_bounds_go_to_one_generator():
    rng = ParallelRandom(2)
    low, high = np.array([0, 10, 20]), np.array([1, 11, 21])
    assert rng.integers(low, high).tolist() == [0, 10, 20]
    assert rng.integers(0, high).shape == (3,) and (rng.integers(0, high) < high).all()
    values = rng.uniform(low, high)
    assert values.shape == (3,) and ((low <= values) & (values < high)).all()
    scalar = rng.uniform(2.0, 3.0)
    assert isinstance(scalar, float) and 2.0 <= scalar < 3.0


def test_chunks_are_the_seed_sequence_children_keyed_by_call_and_chunk(small_chunks):
    """The documented construction, value for value: chunk i of the n-th chunked call draws
    from PCG64(SeedSequence(seed, spawn_key=(n, i))); a uniform is low + (high - low) * random."""

    def expected(call, size, draw):
        parts = []
        for index, start in enumerate(range(0, size, 1000)):
            g = np.random.Generator(
                np.random.PCG64(np.random.SeedSequence(5, spawn_key=(call, index)))
            )
            parts.append(draw(g, min(1000, size - start)))
        return np.concatenate(parts)

    size = 2003  # 2 x CHUNK and a bit: three chunks, the last of 3 values
    rng = ParallelRandom(5, workers=2)
    got = [rng.random(size), rng.standard_normal(size, dtype=np.float32),
           rng.integers(-5, 5, size, dtype=np.int16, endpoint=True), rng.uniform(2.0, 3.0, size)]  # fmt: skip
    want = [expected(1, size, lambda g, n: g.random(n)),
            expected(2, size, lambda g, n: g.standard_normal(n, dtype=np.float32)),
            expected(3, size, lambda g, n: g.integers(-5, 5, n, dtype=np.int16, endpoint=True)),
            2.0 + expected(4, size, lambda g, n: g.random(n))]  # fmt: skip
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert np.array_equal(
        ParallelRandom(5).random(size - 4), np.random.default_rng(5).random(size - 4)
    )


def test_chunked_fills_into_outputs_shapes_and_defaults_follow_the_construction(small_chunks):
    def chunked(seed, call, size, draw):
        parts = []
        for index, start in enumerate(range(0, size, 1000)):
            stream = np.random.SeedSequence(seed, spawn_key=(call, index))
            parts.append(
                draw(np.random.Generator(np.random.PCG64(stream)), min(1000, size - start))
            )
        return np.concatenate(parts)

    out = np.empty(2003)
    assert ParallelRandom(6).random(out=out) is out
    assert np.array_equal(out, chunked(6, 1, 2003, lambda g, n: g.random(n)))
    normal = np.empty(2003, dtype=np.float32)
    ParallelRandom(6).standard_normal(out=normal, dtype=np.float32)
    assert np.array_equal(
        normal, chunked(6, 1, 2003, lambda g, n: g.standard_normal(n, dtype=np.float32))
    )
    exactly_two_chunks = ParallelRandom(6).random(2000)  # 2 x CHUNK: chunked already
    assert np.array_equal(exactly_two_chunks, chunked(6, 1, 2000, lambda g, n: g.random(n)))
    matrix = ParallelRandom(6).random((2, 1001))  # chunks run over the flat array
    assert np.array_equal(matrix.reshape(-1), chunked(6, 1, 2002, lambda g, n: g.random(n)))
    below = ParallelRandom(6).integers(7, size=2003)  # high omitted: [0, 7)
    assert np.array_equal(below, chunked(6, 1, 2003, lambda g, n: g.integers(7, size=n)))
    unit = ParallelRandom(6).uniform(size=2003)  # the defaults: [0, 1)
    assert np.array_equal(unit, chunked(6, 1, 2003, lambda g, n: g.random(n)))
    wide = ParallelRandom(6).uniform(2.0, 4.0, 2003)
    assert np.array_equal(wide, 2.0 + 2.0 * chunked(6, 1, 2003, lambda g, n: g.random(n)))


def test_array_bounds_with_a_size_go_to_one_generator(small_chunks):
    low = np.arange(2003) % 5
    got = ParallelRandom(2).integers(low, 10, 2003)
    assert np.array_equal(got, np.random.default_rng(2).integers(low, 10, 2003))
    edges = np.array([0.0, 10.0])
    assert np.array_equal(ParallelRandom(2).uniform(edges, 11.0),
                          np.random.default_rng(2).uniform(edges, 11.0))  # fmt: skip
    assert ParallelRandom(2).uniform(edges, edges + 1, (4, 2)).shape == (4, 2)
