from __future__ import annotations

import numpy as np
import pytest

from gpubench.engine.runner import Plan, Runner
from gpubench.load import registry
from gpubench.model.benchmark import Copy, Launch, Tolerance, Work
from gpubench.model.results import Result, Status
from tests.fakes import FAKE_DEVICE
from tests.policies import CHECK_ONLY, THREE_SAMPLES

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


def case(variant, **values):
    point = bench.resolve({**bench.defaults(), "size": 10, "matrices": 3, **values})
    return bench.case(variant, point, FAKE_DEVICE, {})


def test_work_is_per_variant():
    assert case("streams").work == Work(bytes_moved=3 * 100 * 4 * 3, flops=2 * 1000 * 3)
    assert case("sequential").work == case("streams").work
    assert case("copies_only").work == Work(bytes_moved=3 * 100 * 4 * 3)  # no flops
    assert case("kernels_only").work == Work(bytes_moved=0, flops=2 * 1000 * 3)  # no copies
    point = bench.resolve({**bench.defaults(), "size": 10, "matrices": 3})
    inputs = bench.inputs(point, np.random.default_rng(0))
    assert bench.reference("C", point, inputs)["C"].shape == (3, 10, 10)
    assert bench.reference("copy", point, inputs)["C"] is inputs["A"]


def test_steps_say_where_and_on_which_stream():
    seq = case("sequential")
    assert seq.input_locations == {"A": "pageable", "B": "pageable"}
    assert all(s.stream == 0 for s in seq.steps)
    assert all(s.synchronous for s in seq.steps if isinstance(s, Copy))
    assert case("sequential_pinned").outputs["C"].location == "pinned"
    overlapped = case("streams", streams=2)
    assert [s.stream for s in overlapped.steps if isinstance(s, Launch)] == [1, 2, 1]
    assert not any(s.synchronous for s in overlapped.steps if isinstance(s, Copy))
    kinds = [type(s).__name__ for s in case("streams_depth_first").steps]
    assert kinds[:4] == ["Copy", "Copy", "Launch", "Copy"]
    assert case("kernels_only").input_locations == {"A": "device", "B": "device"}
    copies = case("copies_only")
    assert {s.src for s in copies.steps if s.dst == "C"} == {"dA"}


def test_every_variant_checks_on_the_fake_backend():
    from tests.fakes import KERNELS, FakeBackend

    def tiled(c, a, b, m, n, k):  # C (m×n) = A (m×k) · B (k×n), from each argument's offset
        c.view(np.float32)[: m * n] = (
            a.view(np.float32)[: m * k].reshape(m, k) @ b.view(np.float32)[: k * n].reshape(k, n)
        ).reshape(-1)

    KERNELS["tiled"] = (tiled, 1.0)
    try:
        points = [bench.resolve({**bench.defaults(), "size": 5, "matrices": 3, "streams": 2})]
        results = Runner(FakeBackend()).run(
            Plan(bench, points, bench.variant_names, bench.baseline, THREE_SAMPLES)
        )
    finally:
        del KERNELS["tiled"]
    assert [r.status for r in results] == [Status.OK] * 7, [r.reason for r in results]


@pytest.mark.parametrize(("size", "bands", "expected"), [
    (10, 4, [(0, 3), (3, 3), (6, 3), (9, 1)]),
    (8, 4, [(0, 2), (2, 2), (4, 2), (6, 2)]),
    (3, 8, [(0, 1), (1, 1), (2, 1)]),  # never more bands than rows
    (1, 4, [(0, 1)]),
    (7, 1, [(0, 7)]),
])  # fmt: skip
def test_row_bands_cover_every_row_once(size, bands, expected):
    from gpubench.benchmarks.streams import _Batch

    assert _Batch(size, 1, 16, 1, synchronous=False, bands=bands).row_bands() == expected


def test_banded_product_steps():
    """B whole first, then per band: A's rows in, the band's kernel, C's rows out, all on the
    product's stream at the band's byte offset; a kernel's M is the band's rows."""
    steps = case("streams_depth_first_bands", size=10, matrices=2, streams=2, bands=4).steps
    first = steps[: 1 + 3 * 4]
    assert [type(s).__name__ for s in first[:4]] == ["Copy", "Copy", "Launch", "Copy"]
    assert (first[0].src, first[0].nbytes, first[0].src_offset) == ("B", 400, 0)
    copies_in = [s for s in first if isinstance(s, Copy) and s.src == "A"]
    assert [(s.src_offset, s.nbytes) for s in copies_in] == [(0, 120), (120, 120), (240, 120),
                                                              (360, 40)]  # fmt: skip
    kernels = [s for s in first if isinstance(s, Launch)]
    assert [int(s.args[3]) for s in kernels] == [3, 3, 3, 1]
    assert [s.args[0].offset for s in kernels] == [0, 120, 240, 360]
    assert {s.args[2].offset for s in kernels} == {0}
    assert [s.grid for s in kernels] == [(1, 1, 1)] * 4
    assert {s.stream for s in first} == {1}
    second = steps[13:]
    assert second[0].src_offset == 400 and {s.stream for s in second} == {2}
    assert [s.args[0].offset for s in second if isinstance(s, Launch)] == [400, 520, 640, 760]


@pytest.mark.gpu
def test_every_variant_checks_every_product(gpu_backend):
    points = [bench.resolve({**bench.defaults(), "size": s, "matrices": m, "streams": k,
                             "bands": b})
              for s, m, k, b in ((33, 3, 2, 4), (65, 5, 4, 3), (1, 1, 1, 4), (97, 2, 2, 97))]  # fmt: skip
    plan = Plan(bench, points, bench.variant_names, bench.baseline, CHECK_ONLY, timeline=True)
    results = Runner(gpu_backend).run(plan)
    assert all(r.status.is_measured for r in results), [(r.variant, r.reason) for r in results]
    overlapped = [r for r in results if r.variant == "streams" and r.point["streams"] == 4]
    spans = overlapped[0].timeline
    assert {s["op"] for s in spans} == {"H2D", "kernel", "D2H"} and len(spans) == 4 * 5
    assert {s["stream"] for s in spans} == {1, 2, 3, 4}
    assert {s["label"] for s in spans} == {"0", "1", "2", "3", "4"}


def test_bands_are_bounded():
    """Each band is three steps per product: a huge count would build millions of steps."""
    bands = bench.param("bands")
    assert bands.coerce(1) == 1 and bands.coerce(1024) == 1024
    for bad in (0, 1025):
        with pytest.raises(ValueError, match=r"minimum 1|maximum 1024"):
            bands.coerce(bad)


def test_integer_products_past_the_exact_limit_are_refused_and_reals_get_the_dot_bound():
    from gpubench.benchmarks._shared import EXACT_MAX_K, dot_product_rtol

    p = {**bench.defaults(), "values": "integers", "size": EXACT_MAX_K + 1}
    assert bench.validate_point(p) == (
        f"k={EXACT_MAX_K + 1} is beyond {EXACT_MAX_K} (2^22), where sums of small integers stop "
        "being exact in float32: use values: reals")  # fmt: skip
    assert bench.validate_point({**p, "size": EXACT_MAX_K}) is None
    assert bench.validate_point({**p, "values": "reals"}) is None
    assert case("streams", values="integers").tolerance == Tolerance()
    assert case("streams", values="reals", size=100).tolerance == Tolerance(
        rtol=dot_product_rtol(100))  # fmt: skip
    assert dot_product_rtol(100) == 16 * 10 * 2.0**-24
