"""The matmul suite: launch shapes, shared-memory skips, CGMA and the float32 bound on the CPU;
every variant at awkward shapes on the GPU."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from gpubench.engine.runner import Plan, Runner
from gpubench.load import registry
from gpubench.model import metrics
from gpubench.model.benchmark import Tolerance
from gpubench.model.results import Status
from tests.benchmarks import assert_each_set_gets_its_own_product, whole_launches
from tests.fakes import FAKE_DEVICE
from tests.policies import CHECK_ONLY

bench = registry.get("matmul")
H100_LIKE = replace(FAKE_DEVICE, sm_count=132, max_threads_per_sm=2048, shared_per_sm_bytes=233472)


def point(**values):
    return bench.resolve({**bench.defaults(), **values})


def case(variant, p):
    return bench.case(variant, p, H100_LIKE, {})


def test_grids_cover_every_element_of_c():
    p = point(m=33, n=65, k=7, block=16, micro=4)
    (naive,) = case("naive", p).steps
    assert naive.grid == (5, 3, 1) and naive.block == (16, 16, 1)
    (reg,) = case("register_tile", p).steps
    assert reg.grid == (2, 1, 1)  # 64 x 64 tiles
    (blk,) = case("pipelined", p).steps
    assert blk.grid == (1, 1, 1) and blk.block == (256, 1, 1)


def test_tiles_too_large_for_static_shared_memory_are_skipped_with_the_reason():
    assert case("pipelined", point()).skip is None
    reason = case("pipelined", point(bk=32)).skip
    assert reason and "static shared memory" in reason
    assert case("blocked", point(bk=32)).skip is None
    assert case("register_tile", point(block=32, micro=8)).skip
    assert case("numpy", point(size=8192)).skip


def test_cgma_follows_the_tiling():
    assert case("naive", point()).cgma == 1
    assert case("tiled", point(block=16)).cgma == 16
    assert case("register_tile", point(block=16, micro=4)).cgma == 64
    assert case("blocked", point(bm=128, bn=64)).cgma == pytest.approx(2 * 128 * 64 / 192)
    assert case("cublas", point()).cgma is None


def test_the_bound_grows_with_k_and_catches_one_lost_term():
    p = point(m=16, n=16, k=864, values="reals")
    inputs = bench.inputs(p, np.random.default_rng(1))
    ref = bench.reference("product", p, inputs)["C"]
    rtol = case("naive", p).tolerance.rtol
    float32 = np.zeros((16, 16), dtype=np.float32)
    for kk in range(p["k"]):  # the naive kernel's order, in float32
        float32 += np.outer(inputs["A"][:, kk], inputs["B"][kk, :])
    assert np.all(np.abs(float32 - ref) <= rtol * ref)
    lost = float32 - np.outer(inputs["A"][:, 0], inputs["B"][0, :])
    assert np.all(np.abs(lost - ref) > rtol * ref)
    assert case("naive", point(k=8192, values="reals")).tolerance.rtol > rtol


@pytest.mark.parametrize("k", [1, 864, 17_700, 100_000, 2**22])
def test_integer_inputs_are_checked_exactly_and_one_lost_term_fails_at_any_k(k):
    """The float32 bound cannot catch one skipped k-iteration past K ≈ 17,700; with entries
    in {-2, -1, 1, 2} every float32 partial sum is an exact integer up to K = 2^22, so the
    exact check does, at every K the suite allows."""
    p = point(m=2, n=3, k=k)
    assert p["values"] == "integers" and case("naive", p).tolerance == Tolerance()
    inputs = bench.inputs(p, np.random.default_rng(k))
    a, b = inputs["A"], inputs["B"]
    assert set(np.unique(a)) <= {-2.0, -1.0, 1.0, 2.0}  # never zero
    ref = bench.reference("product", p, inputs)["C"]
    float32 = np.zeros((2, 3), dtype=np.float32)
    for start in range(0, k, 4096):  # float32 accumulation, in blocks as a kernel's k-loop
        float32 += (a[:, start : start + 4096] @ b[start : start + 4096, :]).astype(np.float32)
    assert np.array_equal(float32.astype(np.float64), ref)
    lost = float32 - np.outer(a[:, k // 2], b[k // 2, :])
    assert not np.any(lost.astype(np.float64) == ref)
    assert bench.validate_point(point(m=1, n=1, k=2**22 + 1)) is not None  # past exactness
    assert bench.validate_point(point(m=1, n=1, k=2**22 + 1, values="reals")) is None


def test_work_counts_every_operand_once_and_two_flops_per_multiply_add():
    c = case("pipelined", point(m=3, n=5, k=7))
    assert c.work.flops == 2 * 3 * 5 * 7 and c.work.bytes_moved == 4 * (3 * 7 + 7 * 5 + 3 * 5)
    assert bench.defines(point(bm=64)) == {"BLOCK": "16", "MICRO": "4", "BM": "64", "BN": "128",
                                           "BK": "16", "TM": "8", "TN": "8", "WBM": "64",
                                           "WBN": "128", "WBK": "16", "WTM": "8", "WTN": "8",
                                           "WM": "32", "WN": "64", "WNITER": "1", "STAGES": "2",
                                           "A_ASYNC": "0", "FRAGMENTS": "1", "A_PAD": "4", "MIN_BLOCKS": "1",
                                           "MS_STAGES": "3", "GROUP": "8"}  # fmt: skip


def test_occupancy_from_resources():
    # 256 threads x 127 registers: 32 KB of registers per block → 2 blocks, 16 of 64 warps.
    occupancy, limiter = metrics.theoretical_occupancy(256, 127, 16640, H100_LIKE)
    assert occupancy == pytest.approx(0.25) and limiter == "registers"
    occupancy, limiter = metrics.theoretical_occupancy(256, 32, 0, H100_LIKE)
    assert occupancy == pytest.approx(1.0)


def test_invalid_thread_shapes_are_refused():
    assert bench.validate_point(point(bm=32, bn=32, tm=8, tn=8))
    assert bench.validate_point(point()) is None


WARP_128 = {"wbm": 128, "wbn": 128, "wbk": 8, "wtm": 8}
AWKWARD = [
    (1, 1, 1), (17, 31, 5), (1000, 1, 1000), (33, 65, 17), (127, 129, 130), (1, 1000, 3),
    (257, 31, 1023), (64, 64, 64),
    # Whole tiles of every block shape in the tests, K with and without a partial last tile:
    # warp_tiled's unchecked copies.
    (256, 256, 1000), (256, 384, 1004),
    # Whole tiles with fewer K tiles than the cp.async ring holds: warp_tiled's unchecked
    # loop copies past the last tile.
    (256, 512, 8), (256, 512, 16),
    # multistage's two kernels in one product: whole 128 x 256 blocks beside edge blocks.
    (300, 520, 64), (129, 260, 16),
]  # fmt: skip


@pytest.mark.gpu
@pytest.mark.parametrize(
    "tiles",
    [
        {"block": 16, "micro": 4},  # warp_tiled: the tuned shape for the size
        {
            "block": 8,
            "micro": 2,
            "bm": 64,
            "bn": 64,
            "bk": 16,
            "tm": 4,
            "tn": 4,
            "wbm": 64,
            "wbn": 64,
            "wbk": 16,
            "wtm": 4,
            "wtn": 4,
            "wm": 64,
            "wn": 64,
            "wniter": 2,
            "stages": 2,
        },
        {
            "block": 32,
            "micro": 2,
            "bm": 128,
            "bn": 64,
            "bk": 8,
            "tm": 8,
            "tn": 4,
            "wbm": 128,
            "wbn": 64,
            "wbk": 8,
            "wtm": 8,
            "wtn": 4,
            "wm": 64,
            "wn": 64,
            "wniter": 2,
            "stages": 2,
        },
        # warp_tiled with 8 warps, a 4-deep cp.async ring and blocks in row order.
        {**WARP_128, "wtn": 4, "wm": 32, "wn": 64, "wniter": 1, "stages": 4, "group": 1},
        # A by cp.async.
        {**WARP_128, "wtn": 4, "wm": 64, "wn": 32, "wniter": 1, "stages": 3, "a_async": 1},
        # 128 x 256 blocks of 8 warps, register double buffering, unpadded A tiles.
        {
            **WARP_128,
            "wbn": 256,
            "wtn": 8,
            "wm": 64,
            "wn": 64,
            "wniter": 1,
            "stages": 3,
            "fragments": 2,
            "a_pad": 0,
        },
    ],
)
@pytest.mark.parametrize("values", ["integers", "reals"])
def test_every_variant_is_correct_at_awkward_shapes(gpu_backend, tiles, values):
    points = [point(m=m, n=n, k=k, values=values, **tiles) for m, n, k in AWKWARD]
    results = Runner(gpu_backend).run(Plan(bench, points, bench.variant_names, "naive", CHECK_ONLY))
    bad = [(r.variant, r.point["m"], r.point["n"], r.point["k"], r.status, r.reason) for r in results
           if not r.status.is_measured and not (r.variant == "cublas" and r.status is Status.SKIPPED)]  # fmt: skip
    assert not bad


@pytest.mark.gpu
@pytest.mark.parametrize("values", ["integers", "reals"])
def test_gpu_every_tuned_warp_tile_is_correct_at_awkward_shapes(gpu_backend, values):
    from gpubench.benchmarks.matmul import TUNED_WARP_TILES

    shapes = [(1, 1, 1), (17, 31, 5), (257, 383, 1003), (300, 520, 64), (1000, 1, 1000),
              (128, 512, 16)]  # fmt: skip
    points = [point(m=m, n=n, k=k, values=values, **tuned)
              for tuned in TUNED_WARP_TILES.values() for m, n, k in shapes]  # fmt: skip
    results = Runner(gpu_backend).run(Plan(bench, points, ("warp_tiled",), "warp_tiled",
                                           CHECK_ONLY))  # fmt: skip
    assert [(r.point, r.status, r.reason) for r in results if not r.status.is_measured] == []


@pytest.mark.gpu
@pytest.mark.parametrize("values", ["integers", "reals"])
def test_gpu_warp_tiled_rings_past_48_kb_are_correct_at_awkward_shapes(gpu_backend, values):
    """Rings that need more than 48 KB of shared memory are dynamic shared memory the backend
    opts the kernel in to (WT_RING_DYNAMIC): the tuned tile in three and four stages (62 and
    83 KB), and the 256 x 128 x 8 tile in four (the deep sweep's best 128-accumulator shape)."""
    from gpubench.benchmarks.matmul import TUNED_WARP_TILES

    shapes = [(1, 1, 1), (17, 31, 5), (257, 383, 1003), (300, 520, 64), (1000, 1, 1000)]
    tuned = TUNED_WARP_TILES[4096]  # 64 x 256 x 16
    tiles = [{**tuned, "stages": 3}, {**tuned, "stages": 4},
             {"wbm": 256, "wbn": 128, "wbk": 8, "wm": 64, "wn": 64, "wtn": 8, "wniter": 1,
              "stages": 4}]  # fmt: skip
    points = [point(m=m, n=n, k=k, values=values, **tile) for tile in tiles for m, n, k in shapes]
    assert all(case("warp_tiled", p).steps[0].shared_bytes > 48 * 1024 for p in points)
    results = Runner(gpu_backend).run(Plan(bench, points, ("warp_tiled",), "warp_tiled",
                                           CHECK_ONLY))  # fmt: skip
    assert [(r.point, r.status, r.reason) for r in results if not r.status.is_measured] == []


@pytest.mark.gpu
@pytest.mark.parametrize("values", ["integers", "reals"])
def test_gpu_multistage_is_correct_in_every_ring_depth_at_awkward_shapes(gpu_backend, values):
    """Two, three and four tiles in the ring (four: 49,664 bytes, dynamic shared memory), at
    shapes with every block whole, none whole and both kinds, in row order and grouped."""
    shapes = [(1, 1, 1), (17, 31, 5), (128, 256, 8), (256, 512, 24), (300, 520, 64),
              (256, 260, 64), (129, 260, 1000), (257, 383, 1003), (1000, 1, 1000),
              (384, 1024, 2048)]  # fmt: skip
    points = [point(m=m, n=n, k=k, values=values, ms_stages=stages, group=group)
              for stages, group in ((2, 8), (3, 1), (4, 8)) for m, n, k in shapes]  # fmt: skip
    results = Runner(gpu_backend).run(Plan(bench, points, ("multistage",), "multistage",
                                           CHECK_ONLY))  # fmt: skip
    assert len(results) == len(points)
    assert [(r.point, r.status, r.reason) for r in results if not r.status.is_measured] == []


@pytest.mark.gpu
def test_gpu_every_variant_is_exact_at_a_large_k(gpu_backend):
    """At K = 20,000 the float32 bound would let a skipped k-iteration pass; the exact check
    on integer inputs does not."""
    p = point(m=130, n=67, k=20_000)
    variants = tuple(v for v in bench.variant_names if v != "numpy")
    results = Runner(gpu_backend).run(Plan(bench, [p], variants, "naive", CHECK_ONLY))
    bad = [(r.variant, r.status, r.reason) for r in results if not r.status.is_measured
           and not (r.variant == "cublas" and r.status is Status.SKIPPED)]  # fmt: skip
    assert not bad
    assert all(r.verification.max_abs_error == 0 for r in results if r.status.is_measured)


def test_warp_tile_shapes_are_checked_and_set_the_thread_count():
    from gpubench.benchmarks.matmul import warp_shape_problem

    p = point(size=4096)  # tuned: 64 x 256 blocks, 32 x 64 warps, 8 x 8 micro-tiles
    assert warp_shape_problem(p) is None
    (launch,) = case("warp_tiled", p).steps
    assert launch.block == (256, 1, 1) and launch.grid == (16, 64, 1)
    assert case("warp_tiled", p).skip is None
    one_warp = {"wbm": 64, "wbn": 64, "wtm": 4, "wtn": 4, "wm": 64, "wn": 64, "wniter": 2}
    assert warp_shape_problem(point(**one_warp)) is None
    assert "do not tile" in warp_shape_problem(point(wbm=32, wm=64))
    many = point(wbm=256, wbn=256, wm=32, wn=32, wtm=4, wtn=4, wniter=2)
    assert "2048 threads" in warp_shape_problem(many)
    assert "passes" in warp_shape_problem(point(wtm=8, wtn=8, wniter=4, wm=64, wn=64))
    # Within the allowed choices the lanes always divide up; a 4-column sub-tile cannot hold
    # 8-column micro-tiles.
    shape = {"wbm": 256, "wbn": 128, "wm": 256, "wn": 16, "wtm": 4, "wtn": 8, "wniter": 4}
    assert "32 lanes" in warp_shape_problem(shape)
    assert "warp_tiled" in case("warp_tiled", point(wtm=8, wtn=8, wniter=4, wm=64, wn=64)).skip
    # warp_tiled's ring past 48 KB is dynamic shared memory, given at launch and opted in:
    # three stages of 64 x 256 x 16 are 3 x (16 x (64 + 4) + 16 x 256) x 4 bytes. Two
    # (41472 bytes) are a static array, and the launch gives none.
    three = case("warp_tiled", point(size=4096, stages=3))
    assert three.skip is None and three.steps[0].shared_bytes == 62208
    assert case("warp_tiled", point(size=4096)).steps[0].shared_bytes == 0
    # More than any GPU allows a block (227 KB): skipped with the size.
    deep = point(size=4096, stages=12)  # 12 x 20736 bytes
    assert "248832 bytes of shared memory" in case("warp_tiled", deep).skip


def test_warp_tiled_takes_the_tuned_shape_for_its_size_unless_given_one():
    from gpubench.benchmarks.matmul import TUNED_WARP_TILES, WARP_TILE_PARAMS

    for size, tuned in TUNED_WARP_TILES.items():
        p = point(size=size)
        assert {name: p[name] for name in WARP_TILE_PARAMS} == tuned
        assert case("warp_tiled", p).skip is None, size
    # The largest entry not above max(M, N); below the smallest, the smallest.
    assert point(m=100, n=3000, k=7)["wtn"] == TUNED_WARP_TILES[2048]["wtn"]
    assert point(size=1)["wbk"] == TUNED_WARP_TILES[1024]["wbk"]
    assert point(size=16384)["stages"] == TUNED_WARP_TILES[max(TUNED_WARP_TILES)]["stages"]
    # A value given stays; the others still come from the table.
    p = point(size=4096, stages=3, wbk=8)
    assert (p["stages"], p["wbk"]) == (3, 8) and p["wtn"] == TUNED_WARP_TILES[4096]["wtn"]
    # blocked/pipelined keep their own tile parameters.
    assert point(size=4096)["bn"] == 128


def test_the_reference_sums_in_float64():
    """2^24 + 1 - 2^24 is 1 exactly; a float32 running sum loses the 1 (and gives 0)."""
    p = bench.resolve({**bench.defaults(), "m": 1, "n": 1, "k": 3})
    inputs = {"A": np.array([[2.0**24, 1.0, -(2.0**24)]], np.float32),
              "B": np.array([[1.0], [1.0], [1.0]], np.float32)}  # fmt: skip
    computes = bench.variants[0].computes
    assert bench.reference(computes, p, inputs)["C"].tolist() == [[1.0]]


def test_the_tuned_warp_tile_is_picked_by_the_larger_dimension():
    from gpubench.benchmarks.matmul import TUNED_WARP_TILES, tuned_warp_tile

    for m, n in ((1024, 2048), (2048, 1024), (2048, 2048)):
        assert tuned_warp_tile(m, n) == TUNED_WARP_TILES[2048]
    assert tuned_warp_tile(1024, 1024) == TUNED_WARP_TILES[1024]
    assert tuned_warp_tile(100, 1023) == TUNED_WARP_TILES[1024]  # the smallest
    assert tuned_warp_tile(16384, 3) == TUNED_WARP_TILES[4096]
    assert TUNED_WARP_TILES[1024] != TUNED_WARP_TILES[2048]


def _shape(bm, bn, wm, wn, tm, tn, wniter):
    return {"wbm": bm, "wbn": bn, "wm": wm, "wn": wn, "wtm": tm, "wtn": tn, "wniter": wniter}


@pytest.mark.parametrize(("shape", "problem"), [
    (_shape(32, 64, 64, 32, 4, 4, 2), "warps of 64 x 32 do not tile the 32 x 64 block"),
    (_shape(64, 48, 64, 32, 4, 4, 2), "warps of 64 x 32 do not tile the 64 x 48 block"),
    (_shape(256, 256, 32, 32, 4, 4, 2),
     "256 x 256 blocks of 32 x 32 warps need 2048 threads (at most 1024)"),
    (_shape(128, 256, 32, 32, 4, 4, 2), None),  # 1024 threads: the most a block holds
    (_shape(64, 64, 64, 64, 8, 8, 4),
     "a 64 x 64 warp tile is not a whole number of 4 x 8 x 8 passes"),
    (_shape(64, 48, 64, 48, 1, 1, 32),
     "a 64 x 48 warp tile is not a whole number of 32 x 1 x 1 passes"),  # 48 columns, 32 passes
    (_shape(256, 128, 256, 16, 4, 8, 4),
     "the 256 x 4 sub-tiles do not give each of a warp's 32 lanes one 4 x 8 micro-tile"),
    (_shape(48, 64, 48, 64, 1, 1, 1),
     "the 0 x 64 sub-tiles do not give each of a warp's 32 lanes one 1 x 1 micro-tile"),
    (_shape(64, 64, 64, 64, 4, 4, 1), None),
])  # fmt: skip
def test_each_warp_shape_problem_is_its_exact_line(shape, problem):
    from gpubench.benchmarks.matmul import warp_shape_problem

    assert warp_shape_problem(shape) == problem
    skip = case("warp_tiled", point(size=256, **shape)).skip
    if problem:
        assert skip == f"warp_tiled: {problem}"


@pytest.mark.parametrize("params", [dict(block=16, micro=4, bm=128, bn=128, bk=16),
                                    dict(block=32, micro=2, bm=64, bn=128, bk=8)])  # fmt: skip
def test_the_shared_memory_model_is_what_ptxas_allocates(params):
    """The Python model of each kernel's static shared memory (it decides which tile
    parameters are skipped) against ptxas's own count for the same -D values."""
    import shutil

    from gpubench import api

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not on PATH")
    found = api.inspect(bench, "matmul", {"size": 256, **params}, "sm_90", (), want_sass=False)
    smem = {k.name: k.resources.shared_bytes for k in found.report.kernels}
    p = point(size=256, **params)
    for variant in ("register_tile", "blocked", "pipelined"):  # tiled stays far below 48 KB
        assert smem[variant] == bench._shared_bytes(variant, p), variant


def test_the_edges_of_the_point_checks():
    assert bench.validate_point(point(bm=64, tm=8, bn=32, tn=8)) is None  # 8 x 4: one warp
    assert bench.validate_point(point(bm=32, tm=8, bn=32, tn=8)) == (
        "bm/tm x bn/tn = 16 threads: give each block at least one warp"
    )
    assert case("numpy", point(size=4096)).skip is None  # 4096^3 multiply-adds: timed
    assert case("numpy", point(size=4096, m=4097, n=4096, k=4096)).skip == (
        "the CPU reference is timed only up to 4096^3 multiply-adds"
    )


def test_shared_memory_limits_are_inclusive_to_the_byte():
    """Exactly 48 KiB of static shared memory fits (and a warp_tiled ring of exactly 48 KiB
    stays a static array); exactly 227 KiB fits a warp_tiled block; one word more does not."""
    from gpubench.benchmarks.matmul import DYNAMIC_SHARED_LIMIT, STATIC_SHARED_LIMIT

    # blocked: bk x (bm + 4) + bk x bn floats; 32 x (124 + 4 + 64) x 4 = 24,576; pipelined twice.
    at_limit = point(bm=124, bn=64, bk=32)
    assert bench._shared_bytes("pipelined", at_limit) == STATIC_SHARED_LIMIT
    assert case("pipelined", at_limit).skip is None
    over = case("pipelined", point(bm=125, bn=64, bk=32)).skip
    assert over == ("pipelined needs 49408 bytes of static shared memory per block with these "
                    "tile parameters; the limit is 49152")  # fmt: skip
    # warp_tiled: 3 stages x 16 x (128 + 0 + 128) x 4 bytes = 48 KiB, static.
    ring = point(size=4096, wbm=128, wbn=128, wm=64, wn=32, wtm=4, wtn=4, wniter=2, wbk=16,
                 a_pad=0, stages=3)  # fmt: skip
    assert bench._shared_bytes("warp_tiled", ring) == STATIC_SHARED_LIMIT
    assert case("warp_tiled", ring).steps[0].shared_bytes == 0
    assert case("warp_tiled", {**ring, "stages": 4}).steps[0].shared_bytes == 65536
    # 8 stages x 32 x (128 + 35 + 64) x 4 bytes = 227 KiB, the most any GPU gives a block.
    deepest = {**ring, "wbn": 64, "wn": 32, "wm": 32, "a_pad": 35, "wbk": 32, "stages": 8}
    assert bench._shared_bytes("warp_tiled", deepest) == DYNAMIC_SHARED_LIMIT
    assert bench._skip_reason("warp_tiled", deepest) is None
    assert bench._skip_reason("warp_tiled", {**deepest, "a_pad": 36}) == (
        "warp_tiled needs 233472 bytes of shared memory per block with these tile parameters; "
        "no GPU allows more than 232448")  # fmt: skip


@pytest.mark.parametrize(
    ("shape", "kernels"),
    [
        ((4096, 4096, 4096), ["multistage"]),  # every block whole
        ((256, 512, 8), ["multistage"]),  # one K tile
        ((128, 256, 8), ["multistage"]),  # one whole block, nothing else
        ((256, 260, 8), ["multistage", "multistage_edges"]),  # whole rows, a partial column
        ((260, 256, 8), ["multistage", "multistage_edges"]),  # whole columns, a partial row
        ((300, 520, 64), ["multistage", "multistage_edges"]),  # whole blocks and edges
        ((128, 256, 12), ["multistage_edges"]),  # K not whole tiles
        ((128, 258, 8), ["multistage_edges"]),  # rows of B not 16-byte aligned
        ((127, 4096, 8), ["multistage_edges"]),  # no whole block row
        ((4096, 255, 8), ["multistage_edges"]),  # no whole block column
        ((4096, 252, 8), ["multistage_edges"]),  # no whole block column, aligned rows of B
        ((1, 1, 1), ["multistage_edges"]),
    ],
)
def test_multistage_launches_the_kernels_its_blocks_need(shape, kernels):
    m, n, k = shape
    steps = case("multistage", point(m=m, n=n, k=k)).steps
    assert [s.kernel for s in steps] == kernels
    assert {(s.grid, s.block, s.shared_bytes) for s in steps} == {
        ((-(-n // 256), -(-m // 128), 1), (256, 1, 1), 0)
    }


def test_multistage_rings_past_48_kb_are_dynamic_shared_memory():
    assert [bench._shared_bytes("multistage", point(ms_stages=s)) for s in (2, 3, 4)] == [
        24832, 37248, 49664  # stages x (8 x (128 + 4) + 8 x 256) x 4 bytes
    ]  # fmt: skip
    deepest = case("multistage", point(m=300, n=520, k=64, ms_stages=4))
    assert deepest.skip is None
    assert [s.shared_bytes for s in deepest.steps] == [49664, 49664]
    assert case("multistage", point(ms_stages=3)).cgma == pytest.approx(2 * 128 * 256 / 384)


def test_multistage_tile_constants_are_the_kernels():
    """The host's grid and launch shape come from MS_BM, MS_BN, MS_BK and MS_THREADS; the
    kernel's own #defines must say the same."""
    import re
    from pathlib import Path

    from gpubench.benchmarks import matmul

    source = (Path(__file__).resolve().parents[2] / "kernels_cu" / "matmul.cu").read_text()
    defined = dict(re.findall(r"^#define (MS_BM|MS_BN|MS_BK|MS_WM|MS_WN) (\d+)", source, re.M))
    assert {k: int(v) for k, v in defined.items()} == {
        "MS_BM": matmul.MS_BM, "MS_BN": matmul.MS_BN, "MS_BK": matmul.MS_BK, "MS_WM": 64, "MS_WN": 64
    }  # fmt: skip
    warps = (matmul.MS_BM // 64) * (matmul.MS_BN // 64)
    assert matmul.MS_THREADS == 32 * warps == 256


@pytest.mark.parametrize("stages", [2, 3])
def test_multistage_shared_memory_model_is_what_ptxas_allocates(stages):
    import shutil

    from gpubench import api

    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not on PATH")
    found = api.inspect(bench, "matmul", {"size": 256, "ms_stages": stages}, "sm_90", (),
                        want_sass=False)  # fmt: skip
    smem = {k.name: k.resources.shared_bytes for k in found.report.kernels}
    expected = bench._shared_bytes("multistage", point(size=256, ms_stages=stages))
    assert smem["multistage"] == smem["multistage_edges"] == expected


@pytest.mark.parametrize("size", [1, 100, 4096])
def test_every_launch_is_in_whole_threads_and_blocks(size):
    p = point(size=size)
    for variant in bench.variant_names:
        assert whole_launches(case(variant, p).steps), variant


def test_a_size_fills_in_only_the_axes_not_given():
    p = point(size=64, m=48)
    assert (p["m"], p["n"], p["k"], p["size"]) == (48, 64, 64, 64)
    p = point(size=64, m=48, n=40, k=24)
    assert (p["m"], p["n"], p["k"], p["size"]) == (48, 40, 24, None)


@pytest.mark.gpu
def test_gpu_the_cublas_step_on_two_sets_of_buffers_writes_each_its_own_product(gpu_backend):
    """The step caches CuPy views per buffer set: a cache keyed on anything less than all three
    pointers would write the second product into the first set's C."""
    cupy = pytest.importorskip("cupy")
    from gpubench.benchmarks.matmul import _CupyMatmul

    shapes = {"A": (4, 2), "B": (2, 3), "C": (4, 3)}
    assert_each_set_gets_its_own_product(cupy, _CupyMatmul(4, 3, 2), shapes, np.float32)


def test_cublas_is_unavailable_without_cupy_and_asks_cupy_for_fp32_math(monkeypatch):
    import os
    import sys
    import types

    monkeypatch.setenv("CUPY_TF32", "unset")  # restored after the test
    monkeypatch.delenv("CUPY_TF32")
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError
    assert [bench.unavailable(v) for v in ("naive", "warp_tiled", "numpy")] == [None] * 3
    assert "CUPY_TF32" not in os.environ
    assert bench.unavailable("cublas") == "CuPy is not importable: no cuBLAS reference"
    assert os.environ["CUPY_TF32"] == "0"  # FP32 SGEMM, not TF32 tensor-core math
    monkeypatch.setitem(sys.modules, "cupy", types.ModuleType("cupy"))
    monkeypatch.setenv("CUPY_TF32", "1")  # the user's own choice stays
    assert bench.unavailable("cublas") is None and os.environ["CUPY_TF32"] == "1"


def test_matmul_s_variants_launch_only_the_kernels_they_name():
    bench = registry.get("matmul")
    for size in (1, 67, 128, 256, 1000):
        for values in ("reals",):
            point = bench.resolve({**bench.defaults(), "size": size, "values": values})
            for variant in bench.variant_kernels:
                launched = {s.kernel for s in bench._steps(variant, point) if hasattr(s, "kernel")}
                assert launched <= set(bench.variant_kernels[variant]), (variant, size)
    multistage = set()
    for size in (67, 256, 257):
        point = bench.resolve({**bench.defaults(), "size": size})
        multistage |= {s.kernel for s in bench._steps("multistage", point)}
    assert multistage == {"multistage", "multistage_edges"}


@pytest.mark.gpu
@pytest.mark.parametrize(
    "variant", ["naive", "tiled", "register_tile", "blocked", "pipelined", "cublas"]
)
def test_gpu_each_variant_alone_runs_from_a_build_of_its_own_kernels(gpu_backend, variant):
    """A sweep of one variant builds the kernels it names alone (Matmul.variant_kernels): a
    kernel it launches but did not name would fail to load."""
    shapes = ((1, 1, 1), (17, 31, 5), (257, 383, 129))
    points = [point(m=m, n=n, k=k, values="integers") for m, n, k in shapes]
    results = Runner(gpu_backend).run(Plan(bench, points, (variant,), variant, CHECK_ONLY))
    assert [(r.point["m"], r.status.is_measured, r.reason) for r in results] == [
        (m, True, "") for m, _, _ in shapes
    ]
