"""What the suites share (gpubench/benchmarks/_shared.py): matrix entries, the float32 bound
of a dot product, and the one-word-per-thread inputs."""

from __future__ import annotations

import numpy as np
import pytest

from gpubench.benchmarks import _shared


def test_real_matrix_entries_are_float32_in_half_open_0_5_to_1_5():
    values = _shared.matrix_values("reals", (64, 33), np.random.default_rng(3))
    assert values.dtype == np.float32 and values.shape == (64, 33)
    assert values.min() >= 0.5 and values.max() < 1.5 and values.max() > 1.4


def test_integer_matrix_entries_are_the_exact_values():
    values = _shared.matrix_values("integers", (100,), np.random.default_rng(3))
    assert set(values.tolist()) <= set(np.asarray(_shared.EXACT_VALUES).tolist())


@pytest.mark.parametrize(("k", "bound"), [(1, 16 * 2.0**-24), (64, 128 * 2.0**-24)])
def test_the_dot_product_bound_is_16_sqrt_k_unit_roundoffs(k, bound):
    assert _shared.dot_product_rtol(k) == bound


def test_one_word_per_thread_inputs_span_every_uint32_from_the_seed():
    from gpubench.load import registry

    bench = registry.get("divergence")
    point = {**bench.defaults(), "n": 5}
    words = bench.inputs(point, np.random.default_rng(11))["in"]
    assert words.dtype == np.uint32
    expected = np.random.default_rng(11).integers(0, 2**32, 5, dtype=np.uint32)
    assert words.tolist() == expected.tolist()
