"""Host references on every core: each parallel form gives exactly the one-call NumPy values,
at awkward shapes, with the pool path forced on small arrays (tiny tiles and thresholds)."""

from __future__ import annotations

import numpy as np
import pytest

from gpubench.model import hostmath


@pytest.fixture
def pooled(monkeypatch):
    """The pool path for any array of 2+ elements: 3 workers, 2x2 tiles."""
    monkeypatch.setattr(hostmath, "PARALLEL_FROM", 2)
    monkeypatch.setattr(hostmath, "TILE", 2)
    monkeypatch.setattr(hostmath, "workers", lambda: 3)


@pytest.mark.parametrize("cpus", [1, 3, 16, 64])
def test_workers_are_the_cores_from_1_to_16(monkeypatch, cpus):
    monkeypatch.setattr(hostmath, "usable_cpus", lambda: cpus)
    assert hostmath.workers() == {1: 1, 3: 3, 16: 16, 64: 16}[cpus]


def test_each_calls_the_function_once_per_start():
    seen: list[int] = []
    hostmath._each(seen.append, range(0, 10, 3))
    assert sorted(seen) == [0, 3, 6, 9]


@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (7, 1), (3, 5), (5, 3), (7, 9), (8, 8)])
def test_transpose_in_tiles_is_the_transpose(pooled, shape):
    matrix = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) - 3.5
    out = hostmath.transpose(matrix)
    assert out.shape == shape[::-1] and out.dtype == np.float32 and out.flags.c_contiguous
    assert np.array_equal(out, matrix.T)


def test_transpose_of_one_call_sizes_and_of_other_ranks(monkeypatch):
    vector = np.arange(5, dtype=np.int16)
    assert np.array_equal(hostmath.transpose(vector), vector)  # not 2-D: one call
    small = np.arange(6, dtype=np.float64).reshape(2, 3)
    out = hostmath.transpose(small)  # below PARALLEL_FROM: one call
    assert np.array_equal(out, small.T) and out.flags.c_contiguous
    monkeypatch.setattr(hostmath, "PARALLEL_FROM", 2)
    monkeypatch.setattr(hostmath, "workers", lambda: 1)  # one core: one call
    assert np.array_equal(hostmath.transpose(small), small.T)


@pytest.mark.parametrize("size", [2, 3, 13, 24, 97])
def test_elementwise_in_slices_covers_every_element(pooled, size):
    a = np.arange(size, dtype=np.float64)
    b = np.full(size, 0.5)
    out = np.full(size, np.nan)
    returned = hostmath.elementwise(lambda x, y: x * 2 + y, [a, b], out)
    assert returned is out and np.array_equal(out, a * 2 + b)


def test_elementwise_of_a_matrix_writes_through_its_flat_view(pooled):
    a = np.arange(35, dtype=np.float32).reshape(5, 7)
    out = np.zeros_like(a)
    hostmath.elementwise(np.negative, [a], out)
    assert np.array_equal(out, -a)


def test_elementwise_below_the_threshold_is_one_call():
    calls: list[int] = []

    def double(x):
        calls.append(x.size)
        return 2 * x

    values = np.arange(10.0)
    assert np.array_equal(hostmath.elementwise(double, [values], np.empty(10)), 2 * values)
    assert calls == [10]


def test_elementwise_slices_are_a_quarter_of_a_worker_share_or_the_threshold(monkeypatch):
    monkeypatch.setattr(hostmath, "PARALLEL_FROM", 4)
    monkeypatch.setattr(hostmath, "workers", lambda: 2)
    sizes: list[int] = []

    def record(x):
        sizes.append(x.size)
        return x

    hostmath.elementwise(record, [np.arange(40.0)], np.empty(40))
    assert sorted(sizes) == [5] * 8  # ceil(40 / (4 * 2)) = 5, above the threshold of 4
    sizes.clear()
    hostmath.elementwise(record, [np.arange(10.0)], np.empty(10))
    assert sorted(sizes) == [2, 4, 4]  # ceil(10 / 8) = 2 is below the threshold: slices of 4


def test_integer_totals_are_exact_past_float64(pooled):
    values = np.full(101, 2**50 + 1, dtype=np.int64)  # the sum needs 57 bits
    result = hostmath.total(values, np.int64)
    assert result == 101 * (2**50 + 1) and isinstance(result, int)


def test_float_totals_are_exact_sums_of_the_slices(pooled):
    values = np.arange(1, 1001, dtype=np.float64)
    assert hostmath.total(values, np.float64) == 500500.0
    # The partial sums add exactly (math.fsum): left to right, 1e16 + 1 would lose the 1.
    tricky = np.array([1e16, 1.0, 1.0, 0.0, -1e16, 0.0])
    assert hostmath.total(tricky, np.float64) == 2.0


def test_total_below_the_threshold_is_numpys():
    values = np.arange(10, dtype=np.int32)
    assert hostmath.total(values, np.int64) == 45
    assert hostmath.total(values.reshape(2, 5), np.float64) == 45.0


@pytest.mark.parametrize(("scale", "shift", "expected"), [
    (2.0, 1.0, [1.0, 3.0, 5.0, 7.0, 9.0]),
    (None, 1.0, [1.0, 2.0, 3.0, 4.0, 5.0]),
    (3.0, None, [0.0, 3.0, 6.0, 9.0, 12.0]),
    (None, None, [0.0, 1.0, 2.0, 3.0, 4.0]),
])  # fmt: skip
def test_scale_shift_in_place(pooled, scale, shift, expected):
    values = np.arange(5, dtype=np.float64)
    returned = hostmath.scale_shift(values, scale, shift)
    assert returned is values and values.tolist() == expected


@pytest.mark.parametrize(("size", "workers", "pooled_calls"),
                         [(15, 2, 0), (16, 2, 1), (16, 1, 0), (64, 4, 1)])  # fmt: skip
def test_the_pool_runs_from_the_threshold_on_with_two_workers_or_more(monkeypatch, size, workers,
                                                                      pooled_calls):  # fmt: skip
    """Each operation takes the pool exactly when it has PARALLEL_FROM elements or more and
    more than one worker (the one-call form gives the same values; this pins the choice)."""
    monkeypatch.setattr(hostmath, "PARALLEL_FROM", 16)
    monkeypatch.setattr(hostmath, "TILE", 2)
    monkeypatch.setattr(hostmath, "workers", lambda: workers)
    calls = []
    each = hostmath._each
    monkeypatch.setattr(
        hostmath, "_each", lambda f, starts: (calls.append(starts), each(f, starts))
    )
    matrix = np.arange(size, dtype=np.float64).reshape(size // 4 if size % 4 == 0 else 1, -1)
    assert np.array_equal(hostmath.transpose(matrix), matrix.T)
    out = np.empty_like(matrix)
    assert np.array_equal(hostmath.elementwise(np.negative, [matrix], out), -matrix)
    assert hostmath.total(matrix, np.float64) == matrix.sum()
    assert len(calls) == 3 * pooled_calls
    if pooled_calls:
        assert calls[0] == range(0, matrix.shape[0], 2)  # a band of TILE rows per task


def test_a_float32_total_accumulates_in_the_dtype_asked_for(pooled):
    values = np.full(100_001, 0.1, np.float32)
    exact = 100_001 * float(np.float32(0.1))
    assert hostmath.total(values, np.float64) == pytest.approx(exact, rel=1e-12)
    assert isinstance(hostmath.total(values, np.float64), float)
    assert hostmath.total(np.full(5, 7, np.int8), np.int64) == 35  # no int8 wrap-around


def test_a_float64_total_of_float32_values_below_the_threshold_adds_in_float64():
    # In float32, 2^24 + 1 rounds back to 2^24: both ones would be lost.
    assert hostmath.total(np.array([2**24, 1, 1], np.float32), np.float64) == 2**24 + 2


def test_a_total_on_the_pool_of_a_matrix_counts_each_element_once(pooled):
    values = np.arange(63, dtype=np.int64).reshape(7, 9)
    assert hostmath.total(values, np.int64) == 63 * 62 // 2
    assert hostmath.total(values.T, np.float64) == 63 * 62 // 2


def test_total_slices_are_a_quarter_of_a_worker_share(monkeypatch):
    monkeypatch.setattr(hostmath, "PARALLEL_FROM", 4)
    monkeypatch.setattr(hostmath, "workers", lambda: 2)
    starts: list[range] = []
    each = hostmath._each
    monkeypatch.setattr(hostmath, "_each", lambda f, s: starts.append(s) or each(f, s))
    assert hostmath.total(np.arange(40, dtype=np.int64), np.int64) == 780
    assert starts == [range(0, 40, 5)]  # ceil(40 / (4 * 2))


def test_the_pool_has_as_many_threads_as_workers(monkeypatch):
    sizes = []
    real = hostmath.ThreadPoolExecutor

    def pool(max_workers):
        sizes.append(max_workers)
        return real(max_workers=max_workers)

    monkeypatch.setattr(hostmath, "ThreadPoolExecutor", pool)
    monkeypatch.setattr(hostmath, "workers", lambda: 3)
    hostmath._each(lambda start: None, range(4))
    assert sizes == [3]
