"""The transfer suite: one Copy step per variant, host buffers where the variant says; every
copy checked on the GPU at awkward sizes."""

from __future__ import annotations

import numpy as np
import pytest

from gpubench.engine.runner import Plan, Runner
from gpubench.load import registry
from gpubench.model.benchmark import Copy, Work
from gpubench.model.results import Status
from tests.fakes import FAKE_DEVICE, FakeBackend
from tests.policies import CHECK_ONLY, THREE_SAMPLES

bench = registry.get("transfer")
WHERE = {
    "h2d_pageable": ("pageable", "device"),
    "h2d_pinned": ("pinned", "device"),
    "d2h_pageable": ("device", "pageable"),
    "d2h_pinned": ("device", "pinned"),
    "d2d": ("device", "device"),
}


def test_each_variant_is_one_copy_between_buffers_where_it_says():
    point = bench.resolve({**bench.defaults(), "bytes": 1000})
    for variant, (src, dst) in WHERE.items():
        case = bench.case(variant, point, FAKE_DEVICE, {})
        assert case.steps == [Copy("src", "dst", label=variant[:3].upper())]
        assert case.input_locations == {"src": src}
        assert case.outputs["dst"].location == dst and case.outputs["dst"].shape == (1000,)
        expected = Work(bytes_moved=2000 if variant == "d2d" else 1000)
        assert case.work == expected
    src = bench.inputs(point, np.random.default_rng(0))["src"]
    assert src.max() < 0xFF  # the poison byte never occurs in real data


def test_every_copy_checks_on_the_fake_backend():
    points = [bench.resolve({"bytes": n}) for n in (1, 3, 4097)]
    results = Runner(FakeBackend()).run(
        Plan(bench, points, bench.variant_names, bench.baseline, THREE_SAMPLES)
    )
    assert [r.status for r in results] == [Status.OK] * 15
    assert all(r.work["bytes_moved"] in (r.point["bytes"], 2 * r.point["bytes"]) for r in results)


@pytest.mark.gpu
def test_every_copy_is_checked_at_awkward_sizes(gpu_backend):
    points = [bench.resolve({"bytes": n}) for n in (1, 3, 4097, 1 << 20)]
    results = Runner(gpu_backend).run(
        Plan(bench, points, bench.variant_names, bench.baseline, CHECK_ONLY)
    )
    assert all(r.status.is_measured for r in results), [(r.variant, r.reason) for r in results]
