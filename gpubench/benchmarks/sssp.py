"""Single-source shortest paths on road graphs: Bellman-Ford over an edge list (plain stores,
atomics, three edge orders), a pull sweep over incoming edges, a deduplicated worklist, a
near-far worklist and one whose blocks take several hops per grid barrier on the GPU, against
SciPy's Dijkstra on the CPU. Distances are exact int32; every variant is checked against
Dijkstra's."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from gpubench import install_hint
from gpubench.benchmarks import _road_graphs as road_graphs
from gpubench.errors import PointError
from gpubench.model.benchmark import (
    Benchmark,
    BufferRef,
    BufferSpec,
    Case,
    Launch,
    Param,
    Point,
    Repeat,
    RunRecord,
    Variant,
    ceil_div,
)
from gpubench.model.metrics import Metric

if TYPE_CHECKING:
    from gpubench.model.device import DeviceInfo
    from gpubench.model.results import Result

INF = np.iinfo(np.int32).max
GENERATED = "road-like"
EDGE_ORDERS = ("source", "destination", "random")
MAX_SOURCES = 64
THREADS = 256
# The persistent worklist kernel: one block of this many threads per SM (its
# __launch_bounds__), so every block is resident and the grid barrier cannot deadlock.
PERSISTENT_THREADS = 1024
# Bytes of one source's row of `stats`: steps, edges relaxed, far-pile splits, spare.
STATS_ROW = 4
# near_far's default threshold step in mean weights: measured on the 2M-vertex road graph
# (configs/sssp_tuning.yaml), where a step costs more than relaxing an edge twice.
DELTA_PER_MEAN_WEIGHT = 128

GTEPS = Metric("gteps", "GTEPS", "GTEPS", "{:,.3f}")
RELAXED = Metric("relaxed", "relaxed", "edges", "{:,.0f}", higher_is_better=False)
RELAXED_PER_EDGE = Metric("relaxed_per_edge", "relax/edge", "", "{:,.2f}", higher_is_better=False)
PER_SOURCE = Metric("ms_per_source", "ms/source", "ms", "{:,.3f}", higher_is_better=False)

EDGE_SWEEPS = ("edges", "edges_atomic")
WORKLISTS = ("frontier", "near_far", "near_far_local")
# Out-edges per vertex in the worklist kernels' fixed-width slots (SLOTS in sssp.cu).
SLOTS = 4


def adjacency_slots(
    offsets: np.ndarray, neighbours: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The worklist kernels' adjacency: each vertex's first SLOTS out-edges as (neighbour,
    weight) pairs in a row of its own (neighbour -1 where it has fewer), found from the
    vertex id alone; the edges past SLOTS in a CSR of their own (offsets, neighbours,
    weights). A hop then waits on one load round trip instead of two (offsets, then edges).
    """
    vertices = offsets.size - 1
    degree = np.diff(offsets)
    owner = np.repeat(np.arange(vertices), degree)
    rank = np.arange(int(offsets[-1])) - np.repeat(offsets[:-1], degree)
    in_slot = rank < SLOTS
    slots = np.zeros((vertices, SLOTS, 2), np.int32)
    slots[:, :, 0] = -1
    slots[owner[in_slot], rank[in_slot], 0] = neighbours[in_slot]
    slots[owner[in_slot], rank[in_slot], 1] = weights[in_slot]
    extra_offsets = np.zeros(vertices + 1, np.int64)
    np.cumsum(np.maximum(degree - SLOTS, 0), out=extra_offsets[1:])
    return slots.reshape(-1), extra_offsets, neighbours[~in_slot], weights[~in_slot]


@lru_cache(maxsize=2)
def graph_for(name: str, vertices: int | None) -> road_graphs.Graph:
    """The generated road-like graph, or a file's (parsed once per process, and once per
    file content on disk)."""
    if name == GENERATED:
        return road_graphs.road_like(vertices or 2_000_000)
    return road_graphs.load(name)


def _scipy() -> Any:
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    return csr_matrix, dijkstra


BLOCK = (THREADS, 1, 1)


def _grid(count: int, device: DeviceInfo) -> tuple[int, int, int]:
    """Enough blocks of THREADS for `count` items, at most eight per SM (the kernels stride)."""
    return (max(1, min(ceil_div(count, THREADS), device.sm_count * 8)), 1, 1)


def _refs(*names: str) -> tuple[BufferRef, ...]:
    return tuple(BufferRef(name) for name in names)


def _sweep(variant: str, device: DeviceInfo, n: int, m: int, dist: BufferRef) -> Launch:
    """One Bellman-Ford pass: over the arc list, or (pull) over each vertex's incoming arcs."""
    if variant == "pull":
        arrays, count = _refs("in_offsets", "in_sources", "in_weights"), n
    else:
        arrays, count = _refs("coo_src", "coo_dst", "coo_weight"), m
    return Launch(
        variant,
        _grid(count, device),
        BLOCK,
        (*arrays, np.uint32(count), dist, BufferRef("changed")),
    )


def _worklist_steps(
    device: DeviceInfo,
    n: int,
    which: int,
    dist: BufferRef,
    stats: BufferRef,
    delta: int,
    local_rounds: int,
) -> list[Launch]:
    """Seed the worklist with the source, then one persistent launch that empties it."""
    seed = Launch(
        "init_worklist",
        _grid(n, device),
        BLOCK,
        (
            *_refs("near_stamp", "far_stamp"),
            np.uint32(n),
            BufferRef("sources"),
            np.int32(which),
            *_refs("near0", "counts", "barrier"),
        ),
    )
    graph = _refs("slots", "extra_offsets", "extra_neighbours", "extra_weights")
    piles = _refs("near0", "near1", "far0", "far1", "near_stamp", "far_stamp")
    drain = Launch(
        "worklist_sssp",
        (device.sm_count, 1, 1),
        (PERSISTENT_THREADS, 1, 1),
        (
            *graph,
            dist,
            *piles,
            *_refs("counts", "barrier"),
            np.int32(delta),
            np.int32(local_rounds),
            stats,
        ),
    )
    return [seed, drain]


def _scratch(variant: str, n: int, k: int) -> dict[str, BufferSpec]:
    """The device buffers a variant works in besides its inputs and outputs."""
    scratch = {"stats": BufferSpec((k, STATS_ROW), np.dtype(np.uint64))}
    if variant in (*EDGE_SWEEPS, "pull"):
        scratch["changed"] = BufferSpec((1,), np.dtype(np.int32))
    elif variant in WORKLISTS:
        for name in ("near0", "near1", "far0", "far1", "near_stamp", "far_stamp"):
            scratch[name] = BufferSpec((max(n, 1),), np.dtype(np.int32))
        scratch["counts"] = BufferSpec((6,), np.dtype(np.uint32))
        scratch["barrier"] = BufferSpec((2,), np.dtype(np.uint32), init="zero")
    return scratch


class ShortestPaths(Benchmark):
    name = "sssp"
    reference_params = frozenset()
    input_params = frozenset({"graph", "vertices", "weights", "source", "sources", "edge_order"})
    description = (
        "single-source shortest paths on a road graph: Bellman-Ford, pull, worklists, near-far"
    )
    memory_bound = True
    baseline = "dijkstra_cpu"
    metrics = (GTEPS, RELAXED, RELAXED_PER_EDGE, PER_SOURCE)
    params = (
        Param("graph", str, GENERATED, "a road graph file (SNAP .txt, DIMACS .gr, Matrix Market "
              ".mtx, each optionally .gz), or road-like: a generated grid of road junctions"),
        Param("vertices", int, 2_000_000, "junctions of the generated road-like graph",
              minimum=1, maximum=2**25, maximum_reason="about the full USA road graph; a generated "
              "graph is made in host memory"),
        Param("weights", str, "file", "edge weights: the file's (unit where it has none), "
              "unit, or uniform integers in [1, 64) from the run's seed",
              choices=road_graphs.WEIGHT_KINDS),
        Param("source", int, -1, "the source vertex (0-based; a SNAP file's ids with gaps are "
              "renumbered 0..V-1 in increasing order); -1: random sources", minimum=-1),
        Param("sources", int, 1, "random sources solved one after the other in one run; "
              "times are per run, ms/source divides", minimum=1, maximum=MAX_SOURCES),
        Param("edge_order", str, "source", "order of the edge list the edge sweeps read "
              "(by source, by destination, or shuffled)", choices=EDGE_ORDERS),
        Param("delta", int, 0, "near_far's threshold step; 0: 128 times the mean weight",
              minimum=0, maximum=2**30),
        Param("local_rounds", int, 16, "near_far_local: hops a block relaxes from its own "
              "shared-memory list between grid barriers", minimum=1, maximum=64),
    )  # fmt: skip
    variants = (
        Variant("dijkstra_cpu", "SciPy's Dijkstra on the CPU (baseline and reference)",
                "paths", kind="host"),
        Variant("edges", "Bellman-Ford: every edge every iteration, plain stores", "paths"),
        Variant("edges_atomic", "Bellman-Ford: every edge every iteration, atomicMin", "paths"),
        Variant("pull", "every vertex takes the minimum over its incoming edges (CSR)",
                "paths"),
        Variant("frontier", "only vertices improved last step push (atomicMin, deduplicated "
                "worklist), one persistent launch", "paths"),
        Variant("near_far", "frontier, nearest vertices first: near list below a threshold "
                "rising by delta, far pile split when it runs dry", "paths"),
        Variant("near_far_local", "near_far whose blocks relax what they improve themselves "
                "for up to local_rounds hops between grid barriers", "paths"),
    )  # fmt: skip

    def __init__(self) -> None:
        # (offsets, weights, SciPy matrix) of the last inputs Dijkstra ran on.
        self._graph_cache: tuple[np.ndarray, np.ndarray, Any] | None = None

    # -- points -----------------------------------------------------------------------------
    def resolve(self, point: Point) -> Point:
        """A graph read from a file has the vertices it has: `vertices` (the generated grid's
        size) does not apply, and a table must not show the default as if it did."""
        resolved = dict(point)
        if resolved.get("graph", GENERATED) != GENERATED:
            resolved["vertices"] = None
        return resolved

    def graph(self, point: Point) -> road_graphs.Graph:
        return graph_for(point["graph"], point["vertices"])

    def validate_point(self, point: Point) -> str | None:
        if point["source"] >= 0 and point["sources"] > 1:
            return (
                f"source {point['source']} and sources {point['sources']}: give one source "
                "or a number of random sources"
            )
        graph = self.graph(point)  # a bad file is one ConfigError naming it and the line
        if point["source"] >= graph.vertices:
            return (
                f"source {point['source']} is not a vertex of {graph.name} (0-based ids "
                f"below {graph.vertices:,})"
            )
        return None

    def dry_run_notes(self, points: list[Point]) -> list[str]:
        notes = []
        for name, vertices in dict.fromkeys((p["graph"], p["vertices"]) for p in points):
            graph = graph_for(name, vertices)
            weighted = "with weights" if graph.weight is not None else "no weights"
            notes.append(
                f"graph {graph.name}: {graph.vertices:,} vertices, {graph.arcs:,} "
                f"arcs (mean out-degree {graph.arcs / max(graph.vertices, 1):.2f}), "
                f"{weighted}"
            )
        return notes

    # -- inputs -------------------------------------------------------------------------------
    def inputs(self, point: Point, rng: np.random.Generator) -> dict[str, np.ndarray]:
        graph = self.graph(point)
        weights = graph.weights(point["weights"], seed=int(rng.integers(2**31)))
        out_offsets, out_neighbours, out_weights = graph.csr(weights, by="source")
        in_offsets, in_sources, in_weights = graph.csr(weights, by="destination")
        if point["edge_order"] == "source":
            order = np.argsort(graph.src, kind="stable")
        elif point["edge_order"] == "destination":
            order = np.argsort(graph.dst, kind="stable")
        else:
            order = rng.permutation(graph.arcs)
        if point["source"] >= 0:
            sources = np.array([point["source"]], np.int32)
        else:
            # Random sources among vertices with a road out (an isolated junction is no test).
            candidates = np.flatnonzero(np.diff(out_offsets) > 0)
            if candidates.size == 0:
                candidates = np.arange(graph.vertices)
            sources = rng.choice(
                candidates, size=point["sources"], replace=candidates.size < point["sources"]
            ).astype(np.int32)

        def edge_array(values: np.ndarray) -> np.ndarray:
            # A graph without arcs still gets one (unread) element: no zero-byte buffers.
            values = np.ascontiguousarray(values, dtype=np.int32)
            return values if values.size else np.zeros(1, np.int32)

        slots, extra_offsets, extra_neighbours, extra_weights = adjacency_slots(
            out_offsets, out_neighbours, out_weights
        )
        return {
            "coo_src": edge_array(graph.src[order]),
            "coo_dst": edge_array(graph.dst[order]),
            "coo_weight": edge_array(weights[order]),
            "out_offsets": out_offsets,
            "out_neighbours": edge_array(out_neighbours),
            "out_weights": edge_array(out_weights),
            "in_offsets": in_offsets,
            "in_sources": edge_array(in_sources),
            "in_weights": edge_array(in_weights),
            "slots": slots,  # never empty: a graph has at least one vertex
            "extra_offsets": extra_offsets,
            "extra_neighbours": edge_array(extra_neighbours),
            "extra_weights": edge_array(extra_weights),
            "sources": sources,
        }

    # -- cases --------------------------------------------------------------------------------
    @staticmethod
    def _sizes(inputs: dict[str, np.ndarray]) -> tuple[int, int, int]:
        """(vertices, arcs, sources)."""
        offsets = inputs["out_offsets"]
        return offsets.size - 1, int(offsets[-1]), inputs["sources"].size

    def delta(self, point: Point, inputs: dict[str, np.ndarray]) -> int:
        if point["delta"]:
            return point["delta"]
        _, arcs, _ = self._sizes(inputs)
        mean = float(inputs["out_weights"][:arcs].mean()) if arcs else 1.0
        return max(1, round(DELTA_PER_MEAN_WEIGHT * mean))

    def case(
        self, variant: str, point: Point, device: DeviceInfo, inputs: dict[str, np.ndarray]
    ) -> Case:
        n, m, k = self._sizes(inputs)
        outputs = {"dist": BufferSpec((k, n), np.dtype(np.int32))}
        if variant == "dijkstra_cpu":
            return Case(outputs=outputs)  # no work figures: point_metrics gives GTEPS
        steps: list[Any] = []
        for which in range(k):
            steps += self._source_steps(variant, point, device, inputs, which)
        return Case(
            steps=steps,
            outputs=outputs,
            scratch=_scratch(variant, n, k),
            read_back=("stats",) if variant in WORKLISTS else (),
            run_metrics=self._run_metrics(variant, m),
        )

    def _source_steps(
        self,
        variant: str,
        point: Point,
        device: DeviceInfo,
        inputs: dict[str, np.ndarray],
        which: int,
    ) -> list[Any]:
        """The steps that find the distances from the `which`-th source, in its own row of
        `dist` and `stats`."""
        n, m, _ = self._sizes(inputs)
        dist = BufferRef("dist", which * n * 4)
        stats = BufferRef("stats", which * STATS_ROW * 8)
        steps: list[Any] = [
            Launch(
                "init_distances",
                _grid(n, device),
                BLOCK,
                (dist, np.uint32(n), BufferRef("sources"), np.int32(which), stats),
                label=f"source {which}",
            )
        ]
        if variant in (*EDGE_SWEEPS, "pull"):
            sweep = _sweep(variant, device, n, m, dist)
            steps.append(Repeat((sweep,), flag="changed", max_iterations=n + 1))
        elif variant in WORKLISTS:
            delta = INF if variant == "frontier" else self.delta(point, inputs)
            local_rounds = point["local_rounds"] if variant == "near_far_local" else 0
            steps += _worklist_steps(device, n, which, dist, stats, delta, local_rounds)
        return steps

    @staticmethod
    def _run_metrics(variant: str, arcs: int) -> Any:
        def from_record(record: RunRecord) -> dict[str, float]:
            if variant in WORKLISTS:
                stats = record.read_back["stats"]
                relaxed = float(stats[:, 1].sum())
                return {"iterations": float(stats[:, 0].sum()), RELAXED.key: relaxed}
            # The sweeps relax every edge in every iteration, the last (unchanged) one too.
            return {RELAXED.key: float(record.iterations) * arcs}

        return from_record

    # -- the answer ---------------------------------------------------------------------------
    def unavailable(self, variant: str) -> str | None:
        try:
            _scipy()
        except ImportError:
            return f"SciPy is not importable: no Dijkstra to check against ({install_hint('sssp')})"
        return None

    def _scipy_graph(self, inputs: dict[str, np.ndarray]) -> Any:
        """The point's graph as SciPy's CSR matrix, made once per set of inputs (outside the
        host timing: the GPU variants get their CSR ready-made too). Parallel arcs are reduced
        to the lightest first: SciPy would otherwise sum them."""
        cached = self._graph_cache
        if (
            cached is not None
            and cached[0] is inputs["out_offsets"]
            and cached[1] is inputs["out_weights"]
        ):
            return cached[2]
        csr_matrix, _ = _scipy()
        n, m, _ = self._sizes(inputs)
        offsets = inputs["out_offsets"]
        src = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))
        dst = inputs["out_neighbours"][:m].astype(np.int64)
        weight = inputs["out_weights"][:m]
        order = np.lexsort((weight, dst, src))
        src, dst, weight = src[order], dst[order], weight[order]
        first = np.ones(m, bool)
        first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
        src, dst, weight = src[first], dst[first], weight[first]
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
        # Explicit zeros are edges to SciPy's csgraph when the matrix is sparse.
        matrix = csr_matrix((weight.astype(np.float64), dst, indptr), shape=(n, n))
        # The arrays themselves are kept: an identity check on live objects cannot be fooled
        # by a recycled id.
        self._graph_cache = (inputs["out_offsets"], inputs["out_weights"], matrix)
        return matrix

    def _dijkstra(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """SciPy's distances from every source (float64, inf where unreachable)."""
        _, dijkstra = _scipy()
        matrix = self._scipy_graph(inputs)
        return np.atleast_2d(dijkstra(matrix, directed=True, indices=inputs["sources"]))

    @staticmethod
    def _as_int32(distances: np.ndarray) -> np.ndarray:
        """The kernels' form: int32, INF where unreachable."""
        return np.where(np.isfinite(distances), distances, INF).astype(np.int32)

    def reference(
        self, computes: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        distances = self._dijkstra(inputs)
        reached = np.isfinite(distances)
        longest = float(distances[reached].max()) if reached.any() else 0.0
        _, arcs, _ = self._sizes(inputs)
        heaviest = float(inputs["out_weights"][:arcs].max()) if arcs else 0.0
        if longest + heaviest >= INF:
            raise PointError(f"distances reach {longest:,.0f}: int32 distances would overflow")
        return {"dist": self._as_int32(distances)}

    def host_run(
        self, variant: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        # Timed on the host: Dijkstra from every source and the conversion to the kernels'
        # int32 form; the matrix comes from the cache.
        return {"dist": self._as_int32(self._dijkstra(inputs))}

    def point_metrics(self, results: list[Result]) -> None:
        """GTEPS (arcs in the graph per second, per source), ms per source, and how many
        times each arc was relaxed on average."""
        for r in results:
            if not r.status.is_measured or not r.median_ms:
                continue
            arcs = self.graph(r.point).arcs
            sources = 1 if r.point["source"] >= 0 else r.point["sources"]
            per_source = r.median_ms / sources
            r.metrics[PER_SOURCE.key] = per_source
            if arcs:
                r.metrics[GTEPS.key] = arcs / (per_source * 1e-3) / 1e9
                if r.variant == "dijkstra_cpu":
                    r.metrics[RELAXED.key] = float(arcs * sources)
                if r.metrics.get(RELAXED.key) is not None:
                    r.metrics[RELAXED_PER_EDGE.key] = r.metrics[RELAXED.key] / (arcs * sources)


BENCHMARK = ShortestPaths()
