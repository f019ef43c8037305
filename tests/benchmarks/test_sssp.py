"""The shortest-path suite: inputs, the Dijkstra reference against distances worked out by
hand, declarations and dry runs on the CPU; every variant against Dijkstra on the GPU on small
graphs with known distances, a disconnected graph, awkward sizes and the 2M-vertex graph."""

from __future__ import annotations

import gzip
from dataclasses import replace

import numpy as np
import pytest

from gpubench.benchmarks import sssp
from gpubench.engine.runner import Plan, Runner
from gpubench.errors import ConfigError, PointError
from gpubench.load import registry
from gpubench.model.results import Status
from gpubench.model.steps import Repeat, RunRecord
from tests.fakes import FAKE_DEVICE
from tests.policies import CHECK_ONLY

bench = registry.get("sssp")
H100_LIKE = replace(FAKE_DEVICE, sm_count=132, max_threads_per_sm=2048)
INF = np.iinfo(np.int32).max
GPU_VARIANTS = tuple(v.name for v in bench.variants if v.kind == "kernel")

# 1-based DIMACS arcs: a lighter parallel arc, a self-loop, a zero-weight arc, and vertex 7
# that nothing reaches. From vertex 1 (id 0): worked out by hand below.
DIMACS = """c a small road map
p sp 7 10
a 1 2 10
a 1 2 4
a 1 3 1
a 3 2 2
a 2 4 1
a 3 4 5
a 4 5 3
a 5 5 9
a 5 6 0
a 6 4 1
"""
DIMACS_FROM_0 = [0, 3, 1, 4, 7, 7, INF]
# Two components, both directions listed like SNAP's road files; ids with a gap (no 3).
SNAP = "# two islands\n# FromNodeId\tToNodeId\n0\t1\n1\t0\n1\t2\n2\t1\n4\t5\n5\t4\n"
# The reader numbers the ids 0..V-1 in increasing order: 4 and 5 become 3 and 4.
SNAP_FROM_1_UNIT = [1, 0, 1, INF, INF]


def point(**values):
    return {**bench.defaults(), **values}


@pytest.fixture
def dimacs(tmp_path):
    path = tmp_path / "map.gr"
    path.write_text(DIMACS)
    return str(path)


@pytest.fixture
def islands(tmp_path):
    path = tmp_path / "islands.txt.gz"
    path.write_bytes(gzip.compress(SNAP.encode()))
    return str(path)


def reference(p, seed=0):
    inputs = bench.inputs(p, np.random.default_rng(seed))
    return inputs, bench.reference("paths", p, inputs)["dist"]


def test_dijkstra_reference_matches_distances_worked_out_by_hand(dimacs, islands):
    _, dist = reference(point(graph=dimacs, source=0))
    assert dist.tolist() == [DIMACS_FROM_0]
    _, dist = reference(point(graph=islands, source=1, weights="unit"))
    assert dist.tolist() == [SNAP_FROM_1_UNIT]
    # Unit weights on the DIMACS map: hops.
    _, dist = reference(point(graph=dimacs, source=0, weights="unit"))
    assert dist.tolist() == [[0, 1, 1, 2, 3, 4, INF]]


def test_uniform_weights_come_from_the_seed_and_lie_in_1_to_63(dimacs):
    p = point(graph=dimacs, weights="uniform", source=0)
    a = bench.inputs(p, np.random.default_rng(5))
    b = bench.inputs(p, np.random.default_rng(5))
    assert np.array_equal(a["out_weights"], b["out_weights"])
    assert a["out_weights"].min() >= 1 and a["out_weights"].max() <= 63


def test_the_three_edge_orders_hold_the_same_arcs(dimacs):
    arcs = set()
    for order in sssp.EDGE_ORDERS:
        inputs = bench.inputs(point(graph=dimacs, edge_order=order, source=0),
                              np.random.default_rng(1))  # fmt: skip
        triples = sorted(zip(inputs["coo_src"].tolist(), inputs["coo_dst"].tolist(),
                             inputs["coo_weight"].tolist(), strict=True))  # fmt: skip
        arcs.add(tuple(triples))
        if order == "destination":
            assert np.all(np.diff(inputs["coo_dst"]) >= 0)
        if order == "source":
            assert np.all(np.diff(inputs["coo_src"]) >= 0)
    assert len(arcs) == 1 and len(next(iter(arcs))) == 10


def test_random_sources_are_vertices_with_a_road_out(islands):
    inputs = bench.inputs(point(graph=islands, sources=16), np.random.default_rng(2))
    assert inputs["sources"].size == 16
    assert set(inputs["sources"].tolist()) <= {0, 1, 2, 3, 4}


def test_a_graph_without_arcs_gets_no_zero_byte_buffers_and_a_lone_source_reaches_itself(tmp_path):
    path = tmp_path / "lonely.gr"
    path.write_text("p sp 3 1\na 1 2 5\n")
    inputs, dist = reference(point(graph=str(path), source=2))
    assert dist.tolist() == [[INF, INF, 0]]
    assert all(array.size >= 1 for array in inputs.values())
    one = bench.inputs(point(vertices=1), np.random.default_rng(0))  # generated: no roads at all
    assert one["out_offsets"].tolist() == [0, 0] and one["coo_src"].size == 1


def test_declarations_are_consistent_for_every_variant(dimacs):
    p = point(graph=dimacs, sources=3)
    inputs = bench.inputs(p, np.random.default_rng(0))
    for variant in bench.variant_names:
        case = bench.case(variant, p, H100_LIKE, inputs)
        assert case.problems(inputs) == [], variant
        assert case.outputs["dist"].shape == (3, 7)
    case = bench.case("edges", p, H100_LIKE, inputs)
    repeats = [s for s in case.steps if isinstance(s, Repeat)]
    assert len(repeats) == 3 and repeats[0].max_iterations == 8
    # Each source writes its own row: offsets of 0, 1 and 2 rows of 7 int32.
    assert [s.args[0].offset for s in case.steps if getattr(s, "kernel", "") ==
            "init_distances"] == [0, 28, 56]  # fmt: skip
    frontier = bench.case("frontier", p, H100_LIKE, inputs)
    solve = next(s for s in frontier.steps if getattr(s, "kernel", "") == "worklist_sssp")
    assert solve.grid == (132, 1, 1) and solve.block == (1024, 1, 1)
    assert solve.args[-3] == INF and solve.args[-2] == 0  # frontier: no threshold, no local hops
    near_far = bench.case("near_far", p, H100_LIKE, inputs)
    solve = next(s for s in near_far.steps if getattr(s, "kernel", "") == "worklist_sssp")
    mean = inputs["out_weights"][:10].mean()
    assert solve.args[-3] == round(128 * mean) and solve.args[-2] == 0
    assert near_far.read_back == ("stats",)
    local = bench.case("near_far_local", {**p, "local_rounds": 5}, H100_LIKE, inputs)
    solve = next(s for s in local.steps if getattr(s, "kernel", "") == "worklist_sssp")
    assert solve.args[-3] == round(128 * mean) and solve.args[-2] == 5


def test_run_metrics_come_from_the_device_counters_or_the_iterations():
    stats = np.array([[5, 40, 2, 0], [7, 60, 3, 0]], np.uint64)
    worklist = sssp.ShortestPaths._run_metrics("near_far", 10)(
        RunRecord(read_back={"stats": stats})
    )
    assert worklist == {"iterations": 12.0, "relaxed": 100.0}
    sweep = sssp.ShortestPaths._run_metrics("edges", 10)(RunRecord(iterations=9))
    assert sweep == {"relaxed": 90.0}


def test_bad_points_are_one_line(dimacs, tmp_path):
    assert "not a vertex" in bench.validate_point(point(graph=dimacs, source=7))
    assert "give one source" in bench.validate_point(point(graph=dimacs, source=1, sources=2))
    assert bench.validate_point(point(graph=dimacs, source=6)) is None
    bad = tmp_path / "bad.gr"
    bad.write_text("p sp 3 1\na 1 x 2\n")
    with pytest.raises(ConfigError, match="line 2"):
        bench.validate_point(point(graph=str(bad)))
    with pytest.raises(ConfigError, match="not found"):
        bench.validate_point(point(graph=str(tmp_path / "missing.gr")))


def test_distances_that_would_overflow_int32_are_refused(tmp_path):
    path = tmp_path / "long.gr"
    path.write_text("p sp 3 2\na 1 2 2000000000\na 2 3 2000000000\n")
    with pytest.raises(PointError, match="overflow"):
        reference(point(graph=str(path), source=0))


def test_dry_run_notes_name_the_graph_and_its_counts(dimacs):
    (note,) = bench.dry_run_notes([point(graph=dimacs), point(graph=dimacs, source=1)])
    assert note == "graph map.gr: 7 vertices, 10 arcs (mean out-degree 1.43), with weights"


def test_point_metrics_give_gteps_ms_per_source_and_relaxations_per_arc(dimacs):
    from gpubench.model.results import Result

    p = point(graph=dimacs, sources=2)
    summary = {"median_ms": 0.5}
    gpu = Result("sssp", "near_far", p, Status.OK, summary=summary, metrics={"relaxed": 30.0})
    cpu = Result("sssp", "dijkstra_cpu", p, Status.OK, summary=summary)
    bench.point_metrics([gpu, cpu])
    assert gpu.metrics["ms_per_source"] == 0.25
    assert gpu.metrics["gteps"] == pytest.approx(10 / 0.25e-3 / 1e9)
    assert gpu.metrics["relaxed_per_edge"] == 1.5
    assert cpu.metrics["relaxed"] == 20.0 and cpu.metrics["relaxed_per_edge"] == 1.0


# -- on the GPU ----------------------------------------------------------------------------------
def run_all(gpu_backend, points, variants=bench.variant_names):
    results = Runner(gpu_backend).run(Plan(bench, points, variants, bench.baseline, CHECK_ONLY))
    bad = [(r.variant, r.point, r.status, r.reason) for r in results if not r.status.is_measured]
    assert not bad
    return results


def test_adjacency_slots_fill_four_slots_then_an_overflow_csr():
    offsets = np.array([0, 0, 6, 7, 11])
    neighbours = np.array([1, 2, 0, 1, 2, 0, 5, 3, 2, 1, 0], np.int32)
    weights = np.arange(1, 12, dtype=np.int32)
    slots, extra_offsets, extra_neighbours, extra_weights = sssp.adjacency_slots(
        offsets, neighbours, weights
    )
    assert slots.dtype == np.int32 and extra_offsets.dtype == np.int64
    assert slots.reshape(4, 4, 2).tolist() == [
        [[-1, 0], [-1, 0], [-1, 0], [-1, 0]],  # no out-edges: every slot empty
        [[1, 1], [2, 2], [0, 3], [1, 4]],  # six: four in slots, two past them
        [[5, 7], [-1, 0], [-1, 0], [-1, 0]],
        [[3, 8], [2, 9], [1, 10], [0, 11]],  # exactly four: nothing past the slots
    ]
    assert extra_offsets.tolist() == [0, 0, 2, 2, 2]
    assert extra_neighbours.tolist() == [2, 0] and extra_weights.tolist() == [5, 6]


@pytest.mark.gpu
def test_gpu_every_variant_finds_the_hand_worked_distances(gpu_backend, dimacs):
    results = run_all(gpu_backend, [point(graph=dimacs, source=0),
                                    point(graph=dimacs, source=0, weights="unit")])  # fmt: skip
    assert all(r.verification.max_abs_error == 0 for r in results if r.verification)


@pytest.mark.gpu
def test_gpu_unreachable_vertices_stay_at_infinity(gpu_backend, islands):
    run_all(gpu_backend, [point(graph=islands, source=1, weights=w) for w in ("unit", "uniform")])


@pytest.mark.gpu
@pytest.mark.parametrize("order", sssp.EDGE_ORDERS)
def test_gpu_awkward_sizes_and_several_sources(gpu_backend, order):
    points = [point(vertices=v, sources=s, weights=w, edge_order=order)
              for v, s, w in ((1, 1, "unit"), (2, 2, "uniform"), (37, 3, "uniform"),
                              (1009, 5, "unit"), (100_003, 2, "uniform"))]  # fmt: skip
    run_all(gpu_backend, points)


@pytest.mark.gpu
@pytest.mark.parametrize("weights", ["unit", "uniform"])
def test_gpu_every_variant_on_the_2m_vertex_road_graph(gpu_backend, weights):
    results = run_all(gpu_backend, [point(weights=weights, sources=2)])
    by_variant = {r.variant: r for r in results}
    # The worklists relax edges of improved vertices only; the sweeps relax every edge often.
    assert by_variant["near_far"].metrics["relaxed"] < by_variant["edges_atomic"].metrics["relaxed"]
    assert by_variant["frontier"].metrics["iterations"] > 100


@pytest.mark.gpu
def test_gpu_near_far_with_small_and_huge_delta(gpu_backend):
    run_all(gpu_backend, [point(vertices=20_000, weights="uniform", delta=d, sources=2)
                          for d in (1, 7, 10**9)], ("near_far",))  # fmt: skip


@pytest.mark.gpu
def test_gpu_near_far_local_at_any_number_of_local_hops(gpu_backend):
    run_all(gpu_backend, [point(vertices=20_000, weights=w, delta=d, local_rounds=r, sources=2)
                          for w in ("unit", "uniform") for d in (1, 10**9) for r in (1, 3, 64)],
            ("near_far_local",))  # fmt: skip


@pytest.mark.gpu
def test_gpu_a_block_list_that_overflows_spills_to_the_global_list(gpu_backend, tmp_path):
    """A hub with 9,000 spokes, each the start of a 3-vertex chain, the chains' ends wired
    back to other spokes: the one thread that relaxes the hub improves more vertices than a
    block's local list holds (4,096), so the rest must go to the next step's list."""
    spokes = 9_000
    arcs = []
    for s in range(spokes):
        spoke, middle, end = 2 + 3 * s, 3 + 3 * s, 4 + 3 * s
        arcs += [(1, spoke, 1 + s % 50), (spoke, middle, 2), (middle, end, 1 + s % 7),
                 (end, 2 + 3 * ((s * 7919) % spokes), 1)]  # fmt: skip
    text = f"p sp {1 + 3 * spokes} {len(arcs)}\n" + "".join(f"a {u} {v} {w}\n" for u, v, w in arcs)
    path = tmp_path / "hub.gr"
    path.write_text(text)
    run_all(gpu_backend, [point(graph=str(path), source=0, delta=d, local_rounds=r)
                          for d in (1, 10**9) for r in (1, 8)],
            ("frontier", "near_far", "near_far_local"))  # fmt: skip


@pytest.mark.gpu
def test_gpu_junctions_with_more_roads_than_slots(gpu_backend, tmp_path):
    """Out-degrees 0 to 12 around the worklist kernels' four slots: vertex i has an arc to
    each of the next i % 13 vertices (cyclically), so the slots are empty, partly filled,
    full, and full with 1 to 8 edges in the overflow CSR, in every variant."""
    vertices = 53
    arcs = [(u, (u + j) % vertices, 1 + (u * 7 + j * 3) % 11)
            for u in range(vertices) for j in range(1, u % 13 + 1)]  # fmt: skip
    text = f"p sp {vertices} {len(arcs)}\n" + "".join(
        f"a {u + 1} {v + 1} {w}\n" for u, v, w in arcs
    )
    path = tmp_path / "junctions.gr"
    path.write_text(text)
    run_all(gpu_backend, [point(graph=str(path), source=s, delta=d, local_rounds=r)
                          for s in (0, 12, 25) for d in (1, 10**9) for r in (1, 8)])  # fmt: skip


# -- the command line ----------------------------------------------------------------------------
def invoke(*args):
    from click.testing import CliRunner

    from gpubench.cli import cli

    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.mark.parametrize(("text", "expected"), [
    ("p sp 3 2\na 1 2 5\na 2 x 1\n", "line 3: 'x' is not an integer"),
    ("p sp 3 1\na 1 2 -5\n", "line 2: negative weight -5"),
    ("a 1 2 5\np sp 3 1\n", "line 1: an arc before the `p sp` line"),
    ("p sp 3 1\na 1 9 5\n", "line 2: vertex id 9 is out of range 1..3"),
])  # fmt: skip
def test_cli_a_bad_graph_file_is_one_line_with_exit_2(tmp_path, text, expected):
    path = tmp_path / "bad.gr"
    path.write_text(text)
    result = invoke("run", "sssp", "--graph", str(path))
    assert result.exit_code == 2
    assert result.output.strip() == f"error: {path}: {expected}"


def test_cli_a_source_outside_the_graph_is_exit_2(dimacs):
    result = invoke("run", "sssp", "--graph", dimacs, "--source", "7")
    assert result.exit_code == 2 and "source 7 is not a vertex of map.gr" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_cli_dry_run_of_a_sweep_naming_a_graph_file_prints_its_counts(tmp_path, dimacs):
    config = tmp_path / "s.yaml"
    config.write_text(f"suite: sssp\nparams:\n  graph: {dimacs}\n  source: [0, 6]\n")
    result = invoke("sweep", str(config), "--dry-run")
    assert result.exit_code == 0
    assert "graph map.gr: 7 vertices, 10 arcs (mean out-degree 1.43), with weights" in result.output
    assert "2 point(s) × 7 variant(s)" in result.output


def test_scipys_matrix_is_made_once_per_inputs_and_not_in_the_host_timing(dimacs):
    p = point(graph=dimacs, source=0)
    inputs = bench.inputs(p, np.random.default_rng(0))
    reference = bench.reference("paths", p, inputs)["dist"]
    matrix = bench._graph_cache[2]
    assert np.array_equal(bench.host_run("dijkstra_cpu", p, inputs)["dist"], reference)
    assert bench._graph_cache[2] is matrix  # the timed runs reuse it
    other = bench.inputs(point(graph=dimacs, source=0, weights="unit"), np.random.default_rng(0))
    bench.host_run("dijkstra_cpu", p, other)
    assert bench._graph_cache[2] is not matrix  # new inputs, new matrix


def test_a_graph_from_a_file_has_no_generated_size(tmp_path):
    """A file's graph has its own vertices: the table must not show the generated grid's
    default, and sweeping `vertices` with a file graph is refused (it would do nothing)."""
    from gpubench.errors import ConfigError
    from gpubench.load import config, registry

    bench = registry.get("sssp")
    graph = tmp_path / "tiny.gr"
    graph.write_text("p sp 3 2\na 1 2 5\na 2 3 7\n")
    point = bench.resolve({**bench.defaults(), "graph": str(graph)})
    assert point["vertices"] is None and point["graph"] == str(graph)
    generated = bench.resolve(bench.defaults())
    assert generated["vertices"] == 2_000_000
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f"suite: sssp\nparams:\n  graph: {graph}\n  vertices: [1000, 2000]\n")
    with pytest.raises(ConfigError, match="vertices=1000 would be ignored"):
        config.load(sweep).points(bench)


@pytest.mark.parametrize("arcs", ["a 1 2 10\na 1 2 4\n", "a 1 2 4\na 1 2 10\n"])
def test_the_reference_takes_the_lightest_of_parallel_arcs_in_either_order(tmp_path, arcs):
    """Only the direct arcs reach vertex 2, so its distance is the lighter one's weight,
    whichever comes first (SciPy alone would sum them: 14)."""
    path = tmp_path / "parallel.gr"
    path.write_text("p sp 2 2\n" + arcs)
    _, dist = reference(point(graph=str(path), source=0))
    assert dist.tolist() == [[0, 4]]


def _inputs(vertices, src, dst, weight, sources, offsets=None):
    from gpubench.benchmarks._road_graphs import Graph

    graph = Graph(vertices, np.array(src, np.int32), np.array(dst, np.int32),
                  np.array(weight, np.int32), "g")  # fmt: skip
    out_offsets, out_neighbours, out_weights = graph.csr(graph.weight, by="source")
    return {"out_offsets": out_offsets if offsets is None else offsets,
            "out_neighbours": out_neighbours, "out_weights": out_weights,
            "sources": np.array(sources, np.int32)}  # fmt: skip


def _python_dijkstra(vertices, arcs, source):
    import heapq

    dist = [INF] * vertices
    dist[source] = 0
    queue = [(0, source)]
    while queue:
        d, u = heapq.heappop(queue)
        if d > dist[u]:
            continue
        for a, b, w in arcs:
            if a == u and d + w < dist[b]:
                dist[b] = d + w
                heapq.heappush(queue, (d + w, b))
    return dist


@pytest.mark.parametrize("seed", range(6))
def test_the_reference_is_dijkstra_over_multigraphs_with_parallel_arcs(seed):
    """Random multigraphs (parallel arcs in any order of weight, self-loops, zero weights,
    unreachable vertices), several sources: the reference equals a plain Dijkstra."""
    pytest.importorskip("scipy")
    rng = np.random.default_rng(seed)
    vertices = int(rng.integers(2, 40))
    count = int(rng.integers(1, 120))
    src = rng.integers(0, vertices, count)
    dst = rng.integers(0, vertices, count)
    weight = rng.integers(0, 20, count)
    # Parallel copies, heavier and lighter, after the originals.
    src = np.concatenate([src, src[: count // 2]])
    dst = np.concatenate([dst, dst[: count // 2]])
    weight = np.concatenate([weight, rng.integers(0, 20, count // 2)])
    sources = rng.integers(0, vertices, 3)
    inputs = _inputs(vertices, src, dst, weight, sources)
    got = bench.reference("paths", bench.defaults(), inputs)["dist"]
    arcs = list(zip(src.tolist(), dst.tolist(), weight.tolist(), strict=True))
    assert got.dtype == np.int32
    assert got.tolist() == [_python_dijkstra(vertices, arcs, int(s)) for s in sources]


def test_the_reference_graph_is_made_again_for_new_weights_and_overflow_is_refused():
    pytest.importorskip("scipy")
    first = _inputs(3, [0, 1], [1, 2], [5, 7], [0])
    assert bench.reference("paths", bench.defaults(), first)["dist"].tolist() == [[0, 5, 12]]
    # The same offsets array, other weights: not the cached graph.
    second = _inputs(3, [0, 1], [1, 2], [1, 1], [0], offsets=first["out_offsets"])
    assert bench.reference("paths", bench.defaults(), second)["dist"].tolist() == [[0, 1, 2]]
    # A distance plus the heaviest arc must stay below INF (the kernels add before comparing).
    edge = INF // 2
    fits = _inputs(3, [0, 1], [1, 2], [edge, INF - 1 - 2 * edge], [0])
    assert bench.reference("paths", bench.defaults(), fits)["dist"].max() == INF - 1 - edge
    over = _inputs(3, [0, 1], [1, 2], [edge, INF - 2 * edge], [0])
    with pytest.raises(PointError, match="int32 distances would overflow"):
        bench.reference("paths", bench.defaults(), over)
    lonely = _inputs(3, [1], [2], [4], [0])  # nothing reached from the source but itself
    assert bench.reference("paths", bench.defaults(), lonely)["dist"].tolist() == [[0, INF, INF]]


def test_point_metrics_per_source_and_per_arc():
    from gpubench.model.results import Result

    def result(variant, status, median, **point):
        p = bench.resolve({**bench.defaults(), "vertices": 100, "weights": "unit", **point})
        return Result(suite="sssp", variant=variant, point=p, status=status,
                      summary={"median_ms": median}, metrics={"relaxed": 452.0})  # fmt: skip

    arcs = bench.graph(result("x", Status.OK, 1.0).point).arcs
    results = [
        result("edges", Status.INCORRECT, 2.0),  # not measured: no metrics, the rest go on
        result("edges", Status.OK, 0.0),  # no time: nothing to divide by
        result("pull", Status.OK, 2.0, source=0, sources=4),  # one given source
        result("edges", Status.OK, 2.0, source=-1, sources=4),  # four random ones
        result("dijkstra_cpu", Status.OK, 8.0, source=-1, sources=4),
    ]
    bench.point_metrics(results)
    assert results[0].metrics == {"relaxed": 452.0} and results[1].metrics == {"relaxed": 452.0}
    one, four, cpu = results[2].metrics, results[3].metrics, results[4].metrics
    assert (
        one["ms_per_source"] == 2.0 and four["ms_per_source"] == 0.5 and cpu["ms_per_source"] == 2.0
    )
    assert one["gteps"] == arcs / (2.0 * 1e-3) / 1e9  # exactly: GTEPS is a ratio, not a guess
    assert four["gteps"] == arcs / (0.5 * 1e-3) / 1e9
    assert one["relaxed_per_edge"] == pytest.approx(452.0 / arcs)
    assert four["relaxed_per_edge"] == pytest.approx(452.0 / (4 * arcs))
    assert cpu["relaxed"] == 4 * arcs and cpu["relaxed_per_edge"] == 1.0


def test_one_source_and_random_sources_do_not_mix():
    p = bench.resolve({**bench.defaults(), "vertices": 100})
    assert bench.validate_point({**p, "source": 0, "sources": 1}) is None
    assert bench.validate_point({**p, "source": -1, "sources": 4}) is None
    assert bench.validate_point({**p, "source": 0, "sources": 2}) == (
        "source 0 and sources 2: give one source or a number of random sources"
    )
    assert bench.validate_point({**p, "source": 1, "sources": 3}) == (
        "source 1 and sources 3: give one source or a number of random sources"
    )


def test_the_reference_keeps_arcs_into_one_vertex_from_different_tails():
    """Arcs sorted by tail then head: (0, 1), (0, 2), (1, 2). Only parallel arcs (same tail and
    head) are reduced; 1 -> 2 is another road into 2, and the shorter way."""
    pytest.importorskip("scipy")
    inputs = _inputs(3, [0, 1, 0], [2, 2, 1], [5, 1, 1], [0, 1])
    assert bench.reference("paths", bench.defaults(), inputs)["dist"].tolist() == [
        [0, 1, 2], [INF, 0, 1]]  # fmt: skip


@pytest.mark.parametrize("seed", range(12))
def test_the_reference_is_dijkstra_over_dense_multigraphs(seed):
    """Few vertices, many arcs: tails and heads repeat across neighbouring sorted arcs."""
    pytest.importorskip("scipy")
    rng = np.random.default_rng(100 + seed)
    vertices = int(rng.integers(2, 9))
    count = int(rng.integers(10, 60))
    src, dst = rng.integers(0, vertices, count), rng.integers(0, vertices, count)
    weight = rng.integers(0, 9, count)
    sources = np.arange(vertices)
    got = bench.reference("paths", bench.defaults(), _inputs(vertices, src, dst, weight, sources))
    arcs = list(zip(src.tolist(), dst.tolist(), weight.tolist(), strict=True))
    assert got["dist"].tolist() == [_python_dijkstra(vertices, arcs, int(s)) for s in sources]


def test_random_sources_are_distinct_while_there_are_enough_candidates():
    """As many sources as vertices with a road out: each of them once, none drawn twice."""
    point = bench.resolve({**bench.defaults(), "vertices": 16, "weights": "unit", "source": -1})
    graph = bench.graph(point)
    candidates = int(np.count_nonzero(np.bincount(graph.src, minlength=graph.vertices)))
    point = bench.resolve({**point, "sources": candidates})
    sources = bench.inputs(point, np.random.default_rng(3))["sources"]
    assert sorted(sources.tolist()) == sorted(np.unique(graph.src).tolist())


def test_the_bucket_width_is_at_least_one_and_follows_the_mean_weight():
    point = bench.defaults()
    light = {"out_offsets": np.array([0, 2, 2]), "out_weights": np.array([0, 0], np.int32),
             "out_neighbours": np.array([1, 1], np.int32), "sources": np.array([0], np.int32)}  # fmt: skip
    assert bench.delta(point, light) == 1
    assert bench.delta({**point, "delta": 7}, light) == 7


def test_every_variant_is_unavailable_without_scipy_and_says_how_to_get_it(monkeypatch):
    def no_scipy():
        raise ImportError("No module named 'scipy'")

    monkeypatch.setattr(sssp, "_scipy", no_scipy)
    words = "SciPy is not importable: no Dijkstra to check against (pip install 'gpubench-studies[sssp]')"
    assert {bench.unavailable(v) for v in bench.variant_names} == {words}
    monkeypatch.setattr(sssp, "_scipy", lambda: None)
    assert {bench.unavailable(v) for v in bench.variant_names} == {None}
