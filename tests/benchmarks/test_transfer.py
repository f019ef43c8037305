from __future__ import annotations

import numpy as np
import pytest

from gpubench import registry
from gpubench.benchmark import Program
from gpubench.results import Status
from gpubench.runner import Plan, Runner
from gpubench.timing import TimingPolicy

bench = registry.get("transfer")


def test_copies_are_programs_and_d2h_lands_in_host_memory():
    point = bench.resolve({**bench.defaults(), "bytes": 1000})
    for variant in bench.variant_names:
        (step,) = bench.launches(variant, point, None)
        assert isinstance(step, Program) and step.body.pinned == variant.endswith("pinned")
    assert bench.outputs("d2h_pinned", point) == {}
    assert bench.outputs("h2d_pinned", point)["dst"].shape == (1000,)
    assert (
        bench.work("d2d", point).bytes_moved == 2000
        and bench.work("h2d_pinned", point).bytes_moved == 1000
    )
    src = bench.inputs(point, np.random.default_rng(0))["src"]
    assert src.max() < 0xFF  # the poison byte never occurs in real data


@pytest.mark.gpu
def test_every_copy_is_checked_at_awkward_sizes(gpu_backend):
    points = [bench.resolve({"bytes": n}) for n in (1, 3, 4097, 1 << 20)]
    policy = TimingPolicy(warmup=0, min_samples=1, max_samples=1, min_time_s=0)
    results = Runner(gpu_backend).run(
        Plan(bench, points, bench.variant_names, bench.baseline, policy)
    )
    assert all(r.status.is_measured for r in results), [(r.variant, r.reason) for r in results]
    assert all(r.status is not Status.INCORRECT for r in results)
