from __future__ import annotations

import numpy as np
import pytest

from gpubench import registry
from gpubench.results import Result, Status
from gpubench.runner import Plan, Runner
from gpubench.timing import TimingPolicy

bench = registry.get("streams")


def result(variant: str, median: float) -> Result:
    return Result(suite="streams", variant=variant, point={}, status=Status.OK,
                  summary={"median_ms": median})  # fmt: skip


def test_overlap_efficiency_formula():
    results = [result("sequential_pinned", 20.0), result("copies_only", 7.0),
               result("kernels_only", 13.0), result("streams", 14.0),
               result("streams_depth_first", 20.0), result("sequential", 30.0)]  # fmt: skip
    bench.point_metrics(results)
    by = {r.variant: r.metrics.get("overlap_efficiency") for r in results}
    assert by["streams"] == pytest.approx((20 - 14) / (20 - 13))
    assert by["streams_depth_first"] == pytest.approx(0.0)
    assert by["sequential"] is None


def test_work_counts_every_copy_and_product():
    point = bench.resolve({**bench.defaults(), "size": 10, "matrices": 3})
    work = bench.work("streams", point)
    assert work.flops == 2 * 1000 * 3 and work.bytes_moved == 3 * 100 * 4 * 3
    inputs = bench.inputs(point, np.random.default_rng(0))
    assert bench.reference("C", point, inputs)["C"].shape == (3, 10, 10)


@pytest.mark.gpu
def test_every_variant_checks_every_product(gpu_backend):
    points = [bench.resolve({**bench.defaults(), "size": s, "matrices": m, "streams": k})
              for s, m, k in ((33, 3, 2), (65, 5, 4), (1, 1, 1))]  # fmt: skip
    policy = TimingPolicy(warmup=0, min_samples=1, max_samples=1, min_time_s=0)
    plan = Plan(bench, points, bench.variant_names, bench.baseline, policy, timeline=True)
    results = Runner(gpu_backend).run(plan)
    assert all(r.status.is_measured for r in results), [(r.variant, r.reason) for r in results]
    overlapped = [r for r in results if r.variant == "streams" and r.point["streams"] == 4]
    spans = overlapped[0].timeline
    assert {s["op"] for s in spans} == {"H2D", "kernel", "D2H"} and len(spans) == 3 * 5
    assert {s["stream"] for s in spans} == {0, 1, 2, 3}
