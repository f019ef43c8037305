"""The divergence suite: branch efficiency, the reference against a scalar loop on the CPU;
every variant at awkward sizes and block sizes on the GPU."""

from __future__ import annotations

import numpy as np
import pytest

from gpubench.benchmarks.divergence import SIDE_A, SIDE_B, branch_efficiency
from gpubench.engine.runner import Plan, Runner
from gpubench.load import registry
from tests.fakes import FAKE_DEVICE
from tests.policies import CHECK_ONLY

bench = registry.get("divergence")


def test_branch_efficiency_of_each_split():
    assert branch_efficiency("odd_even", 256) == 0.5
    assert branch_efficiency("warp_aligned", 256) == 1.0
    assert branch_efficiency("lane_gt_2", 256) == 1 - 0.5 / 8  # the first of 8 warps splits
    assert branch_efficiency("lane_gt_2", 64) == 0.75
    assert branch_efficiency("warp_gt_2", 64) == 1.0 and branch_efficiency("uniform", 64) == 1.0


def scalar(x: int, side: tuple[int, int], work: int) -> int:
    for _ in range(work):
        x = (x * side[0] + side[1]) % 2**32
    return x


@pytest.mark.parametrize("variant", bench.variant_names)
def test_reference_matches_a_scalar_loop(variant):
    p = {**bench.defaults(), "n": 300, "work": 5, "block": 64}
    inputs = bench.inputs(p, np.random.default_rng(1))
    out = bench.reference(bench.variant(variant).computes, p, inputs)["out"]
    assert bench.case(variant, p, FAKE_DEVICE, inputs).problems(inputs) == []
    for i in (0, 1, 2, 3, 33, 64 + 1, 299):
        thread = i % 64
        a = {"uniform": True, "odd_even": thread % 2 == 0, "predicated": thread % 2 == 0,
             "warp_aligned": (thread // 32) % 2 == 0, "lane_gt_2": thread > 2,
             "warp_gt_2": thread // 32 > 2}[variant]  # fmt: skip
        assert int(out[i]) == scalar(int(inputs["in"][i]), SIDE_A if a else SIDE_B, 5)


@pytest.mark.gpu
@pytest.mark.parametrize("block", [64, 256, 1024])
def test_gpu_every_variant_at_awkward_sizes(gpu_backend, block):
    points = [{**bench.defaults(), "n": n, "work": w, "block": block}
              for n, w in ((1, 3), (37, 1), (1000003, 17))]  # fmt: skip
    results = Runner(gpu_backend).run(Plan(bench, points, bench.variant_names, bench.baseline,
                                           CHECK_ONLY))  # fmt: skip
    bad = [(r.variant, r.point, r.status, r.reason) for r in results if not r.status.is_measured]
    assert not bad
