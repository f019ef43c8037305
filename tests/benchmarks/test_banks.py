"""The banks suite: the bank model (gcd law), references and declarations on the CPU; every
stride, both word sizes and every variant on the GPU, with the clock metric."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpubench.benchmarks.banks import conflict_ways, word_index
from gpubench.engine.runner import Plan, Runner
from gpubench.load import registry
from tests.fakes import FAKE_DEVICE
from tests.policies import CHECK_ONLY

bench = registry.get("banks")


def test_the_model_is_the_gcd_law_for_4_byte_words():
    assert [conflict_ways("strided", s, 4) for s in range(1, 33)] == [
        math.gcd(s, 32) for s in range(1, 33)
    ]
    assert conflict_ways("broadcast", 1, 4) == 1 and conflict_ways("broadcast", 1, 8) == 1
    # The padded tile fixes the column walk (stride 32) and every power of two ...
    assert [conflict_ways("padded", s, 4) for s in (1, 2, 4, 8, 16, 32)] == [1, 1, 1, 1, 1, 1]
    # ... and makes stride 31 the worst (lane * 31 + lane * 31 / 32 lands 32 words apart).
    assert conflict_ways("padded", 31, 4) == 31
    # 8-byte words: a half-warp at a time, 2 without a conflict, 32 at stride 16; a broadcast
    # is still one; padding helps less (measured on the H100: 4 at stride 3, 6 at 20).
    assert [conflict_ways("strided", s, 8) for s in (1, 2, 16, 32)] == [2, 4, 32, 32]
    assert [conflict_ways("padded", s, 8) for s in (1, 3, 13, 20, 32)] == [2, 4, 5, 6, 2]


def test_padded_indices_stay_inside_the_tile():
    assert max(word_index("padded", lane, 32) for lane in range(32)) < 32 * 33


@pytest.mark.parametrize("word", [4, 8])
def test_reference_is_each_lanes_word_times_the_iterations(word):
    p = {**bench.defaults(), "stride": 3, "word": word, "iterations": 8}
    inputs = bench.inputs(p, np.random.default_rng(0))
    case = bench.case("strided", p, FAKE_DEVICE, inputs)
    assert case.problems(inputs) == [] and case.read_back == ("cycles",)
    out = bench.reference("strided", p, inputs)["out"]
    assert out.shape == (FAKE_DEVICE.sm_count * 1024,)
    eight = inputs["in"].dtype.type(8)
    assert out[5] == (inputs["in"][[15]] * eight)[0] and out[37] == out[5]
    assert bench.reference("broadcast", p, inputs)["out"][11] == (inputs["in"][[7]] * eight)[0]
    assert "multiple of 4" in bench.validate_point({**p, "iterations": 6})


@pytest.mark.gpu
@pytest.mark.parametrize("word", [4, 8])
def test_gpu_every_stride_and_variant_is_exact_and_clocked(gpu_backend, word):
    points = [{**bench.defaults(), "stride": s, "word": word, "iterations": 64}
              for s in range(1, 33)]  # fmt: skip
    results = Runner(gpu_backend).run(Plan(bench, points, bench.variant_names, bench.baseline,
                                           CHECK_ONLY))  # fmt: skip
    bad = [(r.variant, r.point, r.status, r.reason) for r in results if not r.status.is_measured]
    assert not bad
    assert all(r.metrics["cycles_per_access"] > 0 for r in results)


def test_padded_4_byte_words_are_counted_over_the_whole_warp():
    # Stride 7 on the padded tile: one bank serves two words to the whole warp, and three if
    # the half-warps were counted apart (4-byte words are served to all 32 lanes at once).
    assert conflict_ways("padded", 7, 4) == 2 and conflict_ways("padded", 12, 4) == 2


def test_each_point_s_reference_has_the_shape_of_its_own_launch():
    """A fresh suite object (not the registry's): the launch shape case() records per point
    is the one reference() uses, in whole threads and warps."""
    from dataclasses import replace

    from gpubench.benchmarks.banks import Banks

    fresh = Banks()
    small, large = (replace(FAKE_DEVICE, sm_count=n) for n in (2, 3))
    p = {**bench.defaults(), "stride": 1}
    q = {**p, "stride": 2}
    inputs = fresh.inputs(p, np.random.default_rng(0))
    first = fresh.case("strided", p, small, inputs)
    fresh.case("strided", q, large, inputs)
    assert fresh.reference("strided", p, inputs)["out"].shape == (2 * 1024,)
    assert fresh.reference("strided", q, inputs)["out"].shape == (3 * 1024,)
    assert type(first.work.elements) is int and first.work.elements == 64 * p["iterations"]
