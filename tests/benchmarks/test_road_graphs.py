"""Graph files (SNAP, DIMACS, Matrix Market, gzip), the cache and the road-like generator:
exact contents, and every malformed case as one line naming the file and the line."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from gpubench.benchmarks import _road_graphs as road_graphs
from gpubench.errors import ConfigError


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path / "cache"))


def write(tmp_path: Path, name: str, text: str, zipped: bool = False) -> Path:
    path = tmp_path / name
    if zipped:
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


SNAP = "# Directed graph (each unordered pair of nodes is saved once): roadNet-like\n" \
       "# FromNodeId\tToNodeId\n0\t7\n7\t0\n7\t30\n30\t7\n# a comment in the middle\n30 0\n"  # fmt: skip


@pytest.mark.parametrize("zipped", [False, True])
def test_snap_ids_with_gaps_are_renumbered_and_both_directions_kept(tmp_path, zipped):
    path = write(tmp_path, "road.txt.gz" if zipped else "road.txt", SNAP, zipped)
    graph = road_graphs.load(path)
    assert graph.vertices == 3 and graph.weight is None
    assert graph.src.tolist() == [0, 1, 1, 2, 2] and graph.dst.tolist() == [1, 0, 2, 1, 0]
    assert graph.src.dtype == np.int32


DIMACS = """c 9th DIMACS challenge style
c
p sp 4 5
a 1 2 10
a 2 1 10
a 2 3 5
a 3 4 7
a 4 1 1
"""


def test_dimacs_is_one_based_with_integer_weights(tmp_path):
    graph = road_graphs.load(write(tmp_path, "usa.gr", DIMACS))
    assert graph.vertices == 4
    assert graph.src.tolist() == [0, 1, 1, 2, 3] and graph.dst.tolist() == [1, 0, 2, 3, 0]
    assert graph.weight.tolist() == [10, 10, 5, 7, 1]
    offsets, neighbours, weights = graph.csr(graph.weights("file"))
    assert offsets.tolist() == [0, 1, 3, 4, 5]
    assert neighbours.tolist() == [1, 0, 2, 3, 0] and weights.tolist() == [10, 10, 5, 7, 1]
    offsets, sources, _ = graph.csr(graph.weights("unit"), by="destination")
    assert offsets.tolist() == [0, 2, 3, 4, 5] and sorted(sources[:2].tolist()) == [1, 3]


MTX = """%%MatrixMarket matrix coordinate integer symmetric
% a road graph from SuiteSparse
3 3 2
2 1 4
3 2 6
"""


def test_matrix_market_symmetric_entries_stand_for_both_directions(tmp_path):
    graph = road_graphs.load(write(tmp_path, "roads.mtx", MTX))
    assert graph.vertices == 3
    pairs = sorted(zip(graph.src.tolist(), graph.dst.tolist(), graph.weight.tolist(), strict=True))
    assert pairs == [(0, 1, 4), (1, 0, 4), (1, 2, 6), (2, 1, 6)]
    pattern = road_graphs.load(write(tmp_path, "p.mtx", MTX.replace("integer", "pattern")
                                .replace("2 1 4", "2 1").replace("3 2 6", "3 2")))  # fmt: skip
    assert pattern.weight is None and pattern.arcs == 4
    real = road_graphs.load(
        write(tmp_path, "r.mtx", MTX.replace("integer", "real").replace(" 4", " 4.0"))
    )
    assert real.weight.tolist()[:2] == [4, 6]


BAD = [
    ("a.txt", "0 1\n1 x\n", "line 2: 'x' is not an integer"),
    ("a.txt", "# c\n0 1\n\n1 2 3\n", "line 4: expected 2 numbers"),
    ("a.txt", "# only comments\n", "no edges"),
    ("a.txt", "0 1\n-1 2\n", "edge 2: a negative vertex id"),
    ("a.gr", "a 1 2 3\np sp 2 1\n", "line 1: an arc before the `p sp` line"),
    ("a.gr", "p sp 2 1\na 1 3 4\n", "line 2: vertex id 3 is out of range 1..2"),
    ("a.gr", "p sp 2 1\na 1 2 -4\n", "line 2: negative weight -4"),
    ("a.gr", "p sp 2 1\nc\na 1 2 4.5\n", "line 3: '4.5' is not an integer"),
    ("a.gr", "p sp 2 2\na 1 2 4\n", "declares 2 arcs; the file has 1"),
    ("a.gr", "p max 2 1\n", "line 1: expected `p sp VERTICES ARCS`"),
    ("a.gr", "c nothing\n", "no `p sp VERTICES ARCS` line"),
    ("a.gr", "p sp 2 1\nx 1 2 3\n", "line 2: a line must start with c, p or a"),
    ("a.mtx", "3 3 1\n1 2\n", "line 1: expected a %%MatrixMarket header"),
    ("a.mtx", "%%MatrixMarket matrix array real general\n", "only `matrix coordinate`"),
    ("a.mtx", MTX.replace("3 3 2", "3 4 2"), "square"),
    ("a.mtx", MTX.replace("3 3 2", "3 3 3"), "declares 3 entries; the file has 2"),
    ("a.mtx", MTX.replace("3 2 6", "4 2 6"), "line 5: vertex id out of range 1..3"),
    (
        "a.mtx",
        MTX.replace("integer", "real").replace("3 2 6", "3 2 6.5"),
        "line 5: weight 6.5 is not an integer",
    ),
    ("a.mtx", MTX.replace("3 2 6", "3 2 -6"), "line 5: negative weight -6"),
    ("a.csv", "0,1\n", "unknown graph format '.csv'"),
]


@pytest.mark.parametrize(("name", "text", "message"), BAD)
def test_malformed_files_are_one_line_naming_file_and_line(tmp_path, name, text, message):
    path = write(tmp_path, name, text)
    with pytest.raises(ConfigError) as info:
        road_graphs.load(path)
    assert str(path) in str(info.value) and message in str(info.value), str(info.value)
    assert "\n" not in str(info.value)


def test_a_truncated_gzip_and_a_missing_file_are_one_line(tmp_path):
    broken = tmp_path / "b.txt.gz"
    broken.write_bytes(gzip.compress(SNAP.encode())[:20])
    with pytest.raises(ConfigError, match="cannot read the graph"):
        road_graphs.load(broken)
    with pytest.raises(ConfigError, match="graph file not found"):
        road_graphs.load(tmp_path / "nope.gr")


def test_the_cache_returns_the_same_graph_and_notices_an_edited_file(tmp_path):
    path = write(tmp_path, "usa.gr", DIMACS)
    first = road_graphs.load(path)
    assert len(list((tmp_path / "cache").rglob("*.npz"))) == 1
    again = road_graphs.load(path)
    assert again.vertices == first.vertices and np.array_equal(again.weight, first.weight)
    path.write_text(DIMACS.replace("a 4 1 1", "a 4 1 2"))
    assert road_graphs.load(path).weight.tolist()[-1] == 2


def test_uniform_weights_follow_the_published_convention_and_the_seed():
    graph = road_graphs.road_like(10_000, seed=1)
    weights = graph.weights("uniform", seed=7)
    assert weights.dtype == np.int32 and weights.min() >= 1 and weights.max() <= 63
    assert np.array_equal(weights, graph.weights("uniform", seed=7))
    assert not np.array_equal(weights, graph.weights("uniform", seed=8))
    assert (graph.weights("file") == 1).all()  # no file weights: unit


def test_the_road_like_graph_is_sized_like_a_road_network():
    graph = road_graphs.road_like(2_000_000)
    assert graph.vertices == 2_000_000
    assert 2.7 < graph.arcs / graph.vertices < 2.9  # roadNet-CA: 2.8
    assert graph.src.max() < graph.vertices and graph.dst.max() < graph.vertices
    # Every road both ways, no self loops.
    pairs = set(zip(graph.src[:1000].tolist(), graph.dst[:1000].tolist(), strict=True))
    back = set(zip(graph.dst.tolist(), graph.src.tolist(), strict=True))
    assert pairs <= back and not (graph.src == graph.dst).any()
    assert np.array_equal(
        road_graphs.road_like(1000, seed=3).src, road_graphs.road_like(1000, seed=3).src
    )


# -- inputs that would wrap, grow without bound or hang ------------------------------------------
MTX_TEMPLATE = "%%MatrixMarket matrix coordinate {field} general\n3 3 {n}\n{body}"


@pytest.mark.parametrize("field, n, body, text", [
    ("integer", 1, "1 2 4294967295\n", "does not fit the kernels' int32"),
    ("real", 1, "1 2 1e30\n", "does not fit the kernels' int32"),
    ("pattern", 0, "", "at least one edge"),
])  # fmt: skip
def test_matrix_market_values_the_kernels_cannot_hold_are_refused(tmp_path, field, n, body, text):
    from gpubench.errors import ConfigError

    path = tmp_path / "g.mtx"
    path.write_text(MTX_TEMPLATE.format(field=field, n=n, body=body))
    with pytest.raises(ConfigError, match=text):
        road_graphs.read_matrix_market(path)


def test_a_gzip_that_expands_past_the_limit_and_broken_gzip_are_one_line(tmp_path, monkeypatch):
    import gzip

    from gpubench.errors import ConfigError

    monkeypatch.setattr(road_graphs, "MAX_GRAPH_BYTES", 1 << 20)
    bomb = tmp_path / "bomb.txt.gz"
    with gzip.open(bomb, "wb") as handle:
        handle.write(b"0 1\n" * (1 << 19))  # 2 MiB uncompressed, a few KiB on disk
    with pytest.raises(ConfigError, match="uncompressed"):
        road_graphs.read_snap(bomb)
    broken = tmp_path / "broken.txt.gz"
    broken.write_bytes(b"\x1f\x8b\x08\x00" + b"garbage")
    with pytest.raises(ConfigError, match="cannot read the graph"):
        road_graphs.read_snap(broken)


def test_a_fifo_is_refused_not_waited_on(tmp_path):
    import os

    from gpubench.errors import ConfigError

    fifo = tmp_path / "g.txt"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="not a regular file"):
        road_graphs.read_snap(fifo)


@pytest.mark.parametrize("damage", ["truncated", "not an archive", "missing array",
                                    "ids out of range", "wrong type", "empty file"])  # fmt: skip
def test_a_damaged_cache_entry_is_parsed_again(tmp_path, damage):
    path = tmp_path / "g.gr"
    path.write_text("p sp 3 2\na 1 2 5\na 2 3 7\n")
    first = road_graphs.load(path)
    (entry,) = (tmp_path / "cache").rglob("*.npz")
    if damage == "truncated":
        entry.write_bytes(entry.read_bytes()[:60])
    elif damage == "not an archive":
        entry.write_text("hello")
    elif damage == "empty file":
        entry.write_bytes(b"")
    else:
        src = np.array([0, 7], np.int32) if damage == "ids out of range" else first.src
        src = src.astype(np.int64) if damage == "wrong type" else src
        arrays = {"vertices": 3, "src": src, "dst": first.dst, "weight": first.weight}
        if damage == "missing array":
            del arrays["dst"]
        np.savez(entry.with_suffix(""), **arrays)
    again = road_graphs.load(path)
    assert again.vertices == 3 and again.src.tolist() == first.src.tolist()
    assert again.dst.tolist() == first.dst.tolist() and again.weight.tolist() == [5, 7]
    assert road_graphs.load(path).src.tolist() == first.src.tolist()  # the entry was rewritten


# Every refusal of the three readers: (file name, content, the whole message after the path).
BAD_GRAPH_FILES = [
    ("g.gr", "p sp 3\n", "line 1: expected `p sp VERTICES ARCS`, got 'p sp 3'"),
    ("g.gr", "p xx 3 1\n", "line 1: expected `p sp VERTICES ARCS`, got 'p xx 3 1'"),
    ("g.gr", "p sp x 2\n", "line 1: the vertex and arc counts must be integers"),
    ("g.gr", "c hi\na 1 2 3\n", "line 2: an arc before the `p sp` line"),
    ("g.gr", "p sp 2 1\nx 1 2\n", "line 2: a line must start with c, p or a, got 'x 1 2'"),
    ("g.gr", "c only a comment\n", "no `p sp VERTICES ARCS` line"),
    ("g.gr", "p sp 2 0\n\nc\n", "no arcs (`a U V W` lines)"),
    ("g.gr", "p sp 2 2\na 1 2 3\na 1 2\n",
     "line 3: expected 3 numbers (arc U V W), got ' 1 2'"),
    ("g.gr", "c x\n\np sp 2 1\n\na 1 q 3\n", "line 5: 'q' is not an integer"),
    ("g.gr", "p sp 2 2\na 1 2 3\na 0 2 1\n", "line 3: vertex id 0 is out of range 1..2"),
    ("g.gr", "p sp 2 2\na 1 2 3\na 2 3 1\n", "line 3: vertex id 3 is out of range 1..2"),
    ("g.gr", "p sp 2 3\na 1 2 3\na 2 1 -4\na 2 1 -5\n", "line 3: negative weight -4"),
    ("g.gr", "p sp 2 1\na 1 2 2147483648\n", "a weight does not fit in 32 bits"),
    ("g.gr", "p sp 2 1\na 1 99999999999999999999 3\n",
     "line 2: '99999999999999999999' does not fit in 64 bits"),
    ("g.gr", "p sp 2 1\na 1 -9223372036854775809 3\n",
     "line 2: '-9223372036854775809' does not fit in 64 bits"),
    ("g.gr", "p sp 2 1\na 1 9223372036854775807 3\n",
     "line 2: vertex id 9223372036854775807 is out of range 1..2"),
    ("g.txt", "0 1\n0 99999999999999999999\n",
     "line 2: '99999999999999999999' does not fit in 64 bits"),
    ("g.mtx", "%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 2 99999999999999999999\n",
     "line 3: '99999999999999999999' does not fit in 64 bits"),

    ("g.gr", "p sp 2 3\na 1 2 3\n", "the p line declares 3 arcs; the file has 1"),
    ("g.mtx", "", "line 1: expected a %%MatrixMarket header"),
    ("g.mtx", "% no header\n", "line 1: expected a %%MatrixMarket header"),
    ("g.mtx", "%%MatrixMarket matrix array real general\n",
     "line 1: only `matrix coordinate` files hold graphs"),
    ("g.mtx", "%%MatrixMarket vector coordinate real general\n",
     "line 1: only `matrix coordinate` files hold graphs"),
    ("g.mtx", "%%MatrixMarket matrix coordinate\n",
     "line 1: only `matrix coordinate` files hold graphs"),
    ("g.mtx", "%%MatrixMarket matrix coordinate integer general\n% c\n\n", "no size line"),
    ("g.mtx", "%%MatrixMarket matrix coordinate integer general\n2 x 1\n",
     "line 2: expected `ROWS COLS ENTRIES`"),
    ("g.mtx", "%%MatrixMarket matrix coordinate integer general\n%c\n2 3 1\n",
     "line 3: a graph's matrix is square, got 2×3"),
    ("g.mtx", "%%MatrixMarket matrix coordinate integer general\n0 0 1\n",
     "line 2: 0 vertices and 1 entries: a graph needs 1 to 2,147,483,647 vertices (the "
     "kernels' int32 ids) and at least one edge"),
    ("g.mtx", "%%MatrixMarket matrix coordinate integer general\n2 2 0\n",
     "line 2: 2 vertices and 0 entries: a graph needs 1 to 2,147,483,647 vertices (the "
     "kernels' int32 ids) and at least one edge"),
    ("g.mtx", "%%MatrixMarket matrix coordinate integer general\n2147483648 2147483648 1\n1 1 1\n",
     "line 2: 2147483648 vertices and 1 entries: a graph needs 1 to 2,147,483,647 vertices "
     "(the kernels' int32 ids) and at least one edge"),
    ("g.mtx", "%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 2 3\n",
     "line 2 declares 2 entries; the file has 1"),
    ("g.mtx", "%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 2 3\n1 3 4\n",
     "line 4: vertex id out of range 1..2"),
    ("g.mtx", "%%MatrixMarket matrix coordinate integer general\n2 2 2\n0 2 3\n1 2 4\n",
     "line 3: vertex id out of range 1..2"),
    ("g.mtx", "%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 2 3\n2 1 -5\n",
     "line 4: negative weight -5"),
    ("g.mtx", "%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 2 4294967295\n",
     "line 3: weight 4294967295 does not fit the kernels' int32 (at most 2,147,483,647)"),
    ("g.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 1.5\n",
     "line 3: weight 1.5 is not an integer (distances are computed exactly)"),
    ("g.mtx", "%%MatrixMarket matrix coordinate double general\n2 2 1\n1 2 1e12\n",
     "line 3: weight 1e+12 does not fit the kernels' int32"),
    ("g.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2\n",
     "line 3: expected `ROW COL VALUE`"),
    ("g.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 -2.0\n",
     "line 3: negative weight -2"),
    ("g.mtx", "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 2 3\n",
     "line 3: expected 2 numbers (row column [value]), got '1 2 3'"),
    ("g.txt", "0 1 5\n1 2 6\n", "line 1: expected 2 numbers (source and target), got '0 1 5'"),
    ("g.txt", "  # an indented comment\n1 2\nx 3\n", "line 3: 'x' is not an integer"),
    ("g.mtx", "%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 2 0\n2 1 -5\n",
     "line 4: negative weight -5"),
    ("g.mtx", "%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 2 2147483647\n"
     "2 1 4294967295\n",
     "line 4: weight 4294967295 does not fit the kernels' int32 (at most 2,147,483,647)"),
    ("g.txt", "# only comments\n\n", "no edges in the file"),
    ("g.txt", "1 2\n3\n", "line 2: expected 2 numbers (source and target), got '3'"),
    ("g.txt", "# c\n1 2\n3 4 5\n", "line 3: expected 2 numbers (source and target), got '3 4 5'"),
    ("g.txt", "1 2\n5 -2\n", "edge 2: a negative vertex id"),
    ("g.xyz", "1 2\n", "unknown graph format '.xyz': .txt (SNAP), .gr (DIMACS), .mtx (Matrix "
     "Market), each optionally .gz"),
    ("graph", "1 2\n", "unknown graph format '(none)': .txt (SNAP), .gr (DIMACS), .mtx (Matrix "
     "Market), each optionally .gz"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "content", "message"), BAD_GRAPH_FILES)
def test_each_bad_graph_file_is_one_line_naming_the_file_and_the_line(tmp_path, name, content,
                                                                     message):  # fmt: skip
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(ConfigError) as error:
        road_graphs.reader_for(path)(path)
    assert str(error.value) == f"{path}: {message}"
    assert error.value.source == str(path)


@pytest.mark.parametrize(("name", "content", "vertices", "src", "dst", "weight"), [
    # The largest weight the kernels' int32 holds is accepted.
    ("g.gr", "c\np sp 2 2\na 1 2 2147483647\na 2 1 0\n", 2, [0, 1], [1, 0], [2147483647, 0]),
    # Symmetric files stand for both directions; a self-loop once; real values that are
    # integers become them.
    ("g.mtx", "%%MatrixMarket matrix coordinate real symmetric\n% c\n3 3 2\n1 2 3.0\n3 3 1\n",
     3, [0, 2, 1], [1, 2, 0], [3, 1, 3]),
    ("g.mtx", "%%MatrixMarket matrix coordinate pattern skew-symmetric\n2 2 1\n2 1\n",
     2, [1, 0], [0, 1], None),
    ("g.mtx", "%%MatrixMarket MATRIX Coordinate Integer General\n2 2 1\n1 2 2147483647\n",
     2, [0], [1], [2147483647]),
    ("g.mtx", "%%MatrixMarket matrix coordinate integer hermitian\n2 2 1\n2 1 0\n",
     2, [1, 0], [0, 1], [0, 0]),  # zero weights are roads too

    # SNAP ids with gaps are renumbered in increasing order; any whitespace separates.
    ("g.txt", "# c\n0\t5\n5  9\n\n9 0\n", 3, [0, 1, 2], [1, 2, 0], None),
    ("g.GR.gz", None, 2, [0], [1], [7]),
])  # fmt: skip
def test_the_readers_read_exactly(tmp_path, name, content, vertices, src, dst, weight):
    path = tmp_path / name
    if content is None:
        path.write_bytes(gzip.compress(b"p sp 2 1\na 1 2 7\n"))
    else:
        path.write_text(content)
    graph = road_graphs.reader_for(path)(path)
    assert graph.vertices == vertices and graph.name == name
    assert graph.src.dtype == np.int32 and graph.dst.dtype == np.int32
    assert graph.src.tolist() == src and graph.dst.tolist() == dst
    if weight is None:
        assert graph.weight is None
    else:
        assert graph.weight.dtype == np.int32 and graph.weight.tolist() == weight


def test_the_cache_entry_holds_the_graph_and_a_second_load_parses_nothing(tmp_path, monkeypatch):
    import hashlib

    weighted = write(tmp_path, "w.gr", "p sp 3 2\na 1 2 5\na 3 2 7\n")
    plain = write(tmp_path, "p.txt", "4 8\n8 4\n")
    for path in (weighted, plain):
        road_graphs.load(path)
    entries = sorted(p.name for p in (tmp_path / "cache").rglob("*.npz"))
    digests = sorted(f"{hashlib.sha256(p.read_bytes()).hexdigest()}.npz" for p in (weighted, plain))
    assert entries == digests  # one entry per content, no temporary file left
    with np.load(
        road_graphs.cache_dir() / f"{hashlib.sha256(weighted.read_bytes()).hexdigest()}.npz"
    ) as data:
        assert int(data["vertices"]) == 3 and sorted(data.files) == [
            "dst",
            "src",
            "vertices",
            "weight",
        ]
        assert data["src"].tolist() == [0, 2] and data["dst"].tolist() == [1, 1]
        assert data["weight"].tolist() == [5, 7] and data["weight"].dtype == np.int32
    with np.load(
        road_graphs.cache_dir() / f"{hashlib.sha256(plain.read_bytes()).hexdigest()}.npz"
    ) as data:
        assert sorted(data.files) == ["dst", "src", "vertices"]  # unweighted: no weight array
        assert data["src"].tolist() == [0, 1] and data["dst"].tolist() == [1, 0]

    def parse(path):
        raise AssertionError(f"{path} parsed again")

    monkeypatch.setattr(road_graphs, "reader_for", lambda path: parse)
    copy = tmp_path / "renamed.gr"
    copy.write_bytes(weighted.read_bytes())
    again = road_graphs.load(copy)  # same content, another name: from the cache, under its name
    assert again.name == "renamed.gr" and again.vertices == 3 and again.weight.tolist() == [5, 7]
    assert road_graphs.load(plain).weight is None and road_graphs.load(plain).vertices == 2


def test_without_a_usable_cache_every_load_parses(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(blocker))
    path = write(tmp_path, "g.gr", "p sp 2 1\na 1 2 3\n")
    assert road_graphs.load(path).weight.tolist() == [3]
    assert road_graphs.load(path).weight.tolist() == [3]


@pytest.mark.parametrize("damage", ["no vertices", "too many vertices", "a 2-D array",
                                    "sizes differ", "negative id", "weight of another type"])  # fmt: skip
def test_each_inconsistent_cache_entry_is_ignored(tmp_path, damage):
    path = write(tmp_path, "g.gr", "p sp 3 2\na 1 2 5\na 2 3 7\n")
    road_graphs.load(path)
    (entry,) = (tmp_path / "cache").rglob("*.npz")
    arrays = {
        "vertices": 3,
        "src": np.array([0, 1], np.int32),
        "dst": np.array([1, 2], np.int32),
        "weight": np.array([5, 7], np.int32),
    }
    changed = {"no vertices": {"vertices": 0}, "too many vertices": {"vertices": 2**31},
               "a 2-D array": {"dst": np.array([[1, 2]], np.int32)},
               "sizes differ": {"weight": np.array([5], np.int32)},
               "negative id": {"dst": np.array([1, -1], np.int32)},
               "weight of another type": {"weight": np.array([5, 7], np.int64)}}[damage]  # fmt: skip
    np.savez(entry.with_suffix(""), **{**arrays, **changed, "src": np.array([2, 1], np.int32)})
    graph = road_graphs.load(path)
    assert graph.src.tolist() == [0, 1] and graph.weight.tolist() == [5, 7]


def test_read_failures_and_the_size_limit_are_exact(tmp_path, monkeypatch):
    broken = tmp_path / "b.txt.gz"
    broken.write_bytes(gzip.compress(b"0 1\n" * 100)[:20])
    with pytest.raises(ConfigError) as error:
        road_graphs.read_snap(broken)
    assert str(error.value) == (f"{broken}: cannot read the graph: Compressed file ended "
                                "before the end-of-stream marker was reached")  # fmt: skip
    with pytest.raises(ConfigError) as error:
        road_graphs.read_snap(tmp_path)
    assert str(error.value) == f"{tmp_path}: not a regular file"
    with pytest.raises(ConfigError) as error:
        road_graphs.load(tmp_path / "nope.gr")
    assert str(error.value) == f"{tmp_path / 'nope.gr'}: graph file not found"
    exact = write(tmp_path, "e.txt", "0 1\n1 2\n")  # 8 bytes
    monkeypatch.setattr(road_graphs, "MAX_GRAPH_BYTES", 8)
    assert road_graphs.read_snap(exact).vertices == 3  # at the limit: read
    monkeypatch.setattr(road_graphs, "MAX_GRAPH_BYTES", 7)
    with pytest.raises(ConfigError) as error:
        road_graphs.read_snap(exact)
    assert str(error.value) == (f"{exact}: more than 0 GiB (uncompressed): larger than any road "
                                "graph gpubench is made for")  # fmt: skip


def test_weight_kinds_and_the_road_like_generator_at_their_edges():
    graph = road_graphs.road_like(1)
    assert graph.vertices == 1 and graph.arcs == 0 and graph.name == "road-like grid (1 vertices)"
    unit = road_graphs.road_like(9, keep=1.0).weights("unit")
    assert unit.dtype == np.int32 and unit.tolist() == [1] * 24  # a full 3 x 3 grid, both ways
    assert (
        road_graphs.road_like(9, keep=1.0).weights("file").tolist() == [1] * 24
    )  # no weights: unit
    with pytest.raises(ValueError) as error:
        graph.weights("heavy")
    assert str(error.value) == "weights 'heavy' is not one of file, unit, uniform"
    with pytest.raises(ValueError, match=r"^a graph has at least one vertex$"):
        road_graphs.road_like(0)
    ten = road_graphs.road_like(10, keep=1.0)  # 4 x 3 ids, the last two past the 10 vertices
    assert ten.vertices == 10 and max(ten.src.max(), ten.dst.max()) == 9


# Lines with bytes that are not UTF-8 are shown with replacement characters, never a traceback;
# numbers NumPy's parser refuses are named even where Python's int() would take them.
BAD_BYTES = [
    ("g.gr", b"p sp 2\xff\n", "line 1: expected `p sp VERTICES ARCS`, got 'p sp 2\ufffd'"),
    ("g.gr", b"p sp 2 1\n\xfe 1 2\n", "line 2: a line must start with c, p or a, got '\ufffd 1 2'"),
    ("g.gr", b"p sp 2 1\na 1 2 \xff\n", "line 2: '\ufffd' is not an integer"),
    ("g.gr", b"p sp 2 1\na 1 2 3 \xff\n", "line 2: expected 3 numbers (arc U V W), got ' 1 2 3 \ufffd'"),
    ("g.gr", b"p sp 2 1\na 1 2 1_0\n", "line 2: '1_0' is not an integer"),
    ("g.txt", b"0 1\n# c\n1 0x2\n", "line 3: '0x2' is not an integer"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "content", "message"), BAD_BYTES)
def test_bad_bytes_and_numbers_numpy_refuses_are_named(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ConfigError) as error:
        road_graphs.reader_for(path)(path)
    assert str(error.value) == f"{path}: {message}"


@pytest.mark.parametrize(("body", "message"), [
    # Values before the bad line that fit in 64 bits are not blamed, at both ends of the range.
    ("a 1 2 -200\na 1 2 300\na 1 x 3\n", "line 5: 'x' is not an integer"),
    ("a 1 2 -9223372036854775808\na 1 2 9223372036854775807\na 1 x 3\n",
     "line 5: 'x' is not an integer"),
    ("a 1 2 9223372036854775808\n", "line 3: '9223372036854775808' does not fit in 64 bits"),
    ("a 1 2 -9223372036854775809\n", "line 3: '-9223372036854775809' does not fit in 64 bits"),
    # The first negative weight is named, not a zero before it.
    ("a 1 2 0\na 2 1 -4\na 1 1 -5\n", "line 4: negative weight -4"),
])  # fmt: skip
def test_the_bad_line_is_the_first_bad_one(tmp_path, body, message):
    path = write(tmp_path, "g.gr", f"c\np sp 2 {body.count(chr(10))}\n{body}")
    with pytest.raises(ConfigError) as error:
        road_graphs.read_dimacs(path)
    assert str(error.value) == f"{path}: {message}"


def test_graphs_at_the_edges_of_their_sizes(tmp_path):
    def matrix_market(name, field, body):
        header = f"%%MatrixMarket matrix coordinate {field} general\n"
        return road_graphs.read_matrix_market(write(tmp_path, name, header + body))

    one_edge = road_graphs.read_snap(write(tmp_path, "one.txt", "5 9\n"))
    assert (one_edge.vertices, one_edge.src.tolist(), one_edge.dst.tolist()) == (2, [0], [1])
    one_vertex = matrix_market("one.mtx", "real", "1 1 1\n1 1 2147483647.0\n")
    assert one_vertex.vertices == 1 and one_vertex.weight.tolist() == [2147483647]
    largest = matrix_market("big.mtx", "pattern", "2147483647 2147483647 1\n1 2\n")
    assert largest.vertices == 2147483647 and largest.src.tolist() == [0]
    bad_column = write(
        tmp_path, "c.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 x 2.0\n"
    )
    with pytest.raises(ConfigError) as error:
        road_graphs.read_matrix_market(bad_column)
    assert str(error.value) == f"{bad_column}: line 3: 'x' is not an integer"


@pytest.mark.parametrize("content", [
    "%%MatrixMarket matrix coordinate pattern general\n1 1 1\n1 1\n",  # one vertex
    "%%MatrixMarket matrix coordinate pattern general\n2147483647 2147483647 1\n9 2147483647\n",
])  # fmt: skip
def test_graphs_at_the_vertex_limits_come_back_from_the_cache(tmp_path, monkeypatch, content):
    path = write(tmp_path, "g.mtx", content)
    first = road_graphs.load(path)
    monkeypatch.setattr(road_graphs, "reader_for", lambda path: pytest.fail(f"{path} parsed again"))
    again = road_graphs.load(path)
    assert again.vertices == first.vertices and again.dst.tolist() == first.dst.tolist()


@pytest.mark.parametrize("arrays", [
    {"vertices": 0, "src": np.zeros(0, np.int32), "dst": np.zeros(0, np.int32)},
    {"vertices": 3, "src": np.array([5], np.int32), "dst": np.array([0], np.int32)},
    {"vertices": 3, "src": np.array([0, 1], np.int32), "dst": np.array([1, 3], np.int32)},
])  # fmt: skip
def test_cache_entries_with_ids_or_counts_out_of_range_are_parsed_again(tmp_path, arrays):
    path = write(tmp_path, "g.gr", "p sp 3 2\na 1 2 5\na 2 3 7\n")
    road_graphs.load(path)
    (entry,) = (tmp_path / "cache").rglob("*.npz")
    np.savez(entry.with_suffix(""), **arrays)
    graph = road_graphs.load(path)
    assert graph.vertices == 3 and graph.src.tolist() == [0, 1] and graph.weight.tolist() == [5, 7]


class _Unpickled:
    """An object array's element: unpickling it would run code."""

    ran = False

    def __reduce__(self):
        return (_Unpickled._run, ())

    @staticmethod
    def _run():
        _Unpickled.ran = True
        return 0


def test_a_cache_entry_is_never_unpickled(tmp_path):
    path = write(tmp_path, "g.gr", "p sp 3 2\na 1 2 5\na 2 3 7\n")
    road_graphs.load(path)
    (entry,) = (tmp_path / "cache").rglob("*.npz")
    np.savez(entry.with_suffix(""), vertices=3, src=np.array([_Unpickled()], dtype=object),
             dst=np.array([1, 2], np.int32))  # fmt: skip
    assert road_graphs.load(path).src.tolist() == [0, 1]
    assert not _Unpickled.ran


class _Endless:
    """A stream without end (a FIFO, /dev/zero, a gzip bomb), counting what is asked of it."""

    def __init__(self, line: bytes):
        self.line, self.asked = line, []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def read(self, size=-1):
        self.asked.append(size)
        return self.line * (size // len(self.line))


def test_a_graph_file_streams_in_chunks_and_stops_at_the_first_past_the_limit(
    tmp_path, monkeypatch
):
    path = write(tmp_path, "g.txt", "0 1\n")
    stream = _Endless(b"0 1\n")
    monkeypatch.setattr(road_graphs, "_open", lambda path, source: stream)
    monkeypatch.setattr(road_graphs, "MAX_HEADERLESS_LINES", 1 << 40)  # the bytes' limit first
    monkeypatch.setattr(road_graphs, "MAX_GRAPH_BYTES", 5 * road_graphs._CHUNK)
    with pytest.raises(ConfigError) as error:
        road_graphs.read_snap(path)
    assert stream.asked == [road_graphs._CHUNK] * 6  # the sixth chunk is past the limit
    assert str(error.value) == (f"{path}: more than 0 GiB (uncompressed): larger than any road "
                                "graph gpubench is made for")  # fmt: skip


def _bomb(path: Path, head: bytes, line: bytes, count: int) -> Path:
    """A gzip of `head` and then `line` `count` times: one member per MiB, compressed once
    and repeated (gzip readers read the members one after another)."""
    block = line * ((1 << 20) // len(line))
    member = gzip.compress(block, compresslevel=9)
    path.write_bytes(gzip.compress(head) + member * (count * len(line) // len(block)))
    return path


@pytest.mark.parametrize(
    ("name", "head", "line", "count", "message"),
    [
        # No newline at all: refused at the first chunk.
        (
            "zeros.txt.gz",
            b"",
            b"\0",
            64 << 20,
            "line 1: longer than 1,048,576 bytes: not a graph file",
        ),
        (
            "zeros.gr.gz",
            b"p sp 2 1\n",
            b"\0",
            64 << 20,
            "line 2: longer than 1,048,576 bytes: not a graph file",
        ),
        # More lines than a file without a header may have.
        (
            "lines.txt.gz",
            b"",
            b"1 2\n",
            (1 << 26) + (1 << 20),
            "more than 67,108,864 lines: larger than any road graph gpubench is made for (a file "
            "without a header)",
        ),
        # More lines than the header declares, comments and blank lines counted.
        (
            "arcs.gr.gz",
            b"p sp 2 3\n",
            b"a 1 2 3\n",
            1 << 22,
            "more than 1,048,579 lines: its header declares 3 arcs or entries, and at most 1,048,576 "
            "other lines (comments, blank lines) may come with them",
        ),
        (
            "comments.gr.gz",
            b"p sp 2 1\n",
            b"c\n",
            1 << 22,
            "more than 1,048,577 lines: its header declares 1 arcs or entries, and at most 1,048,576 "
            "other lines (comments, blank lines) may come with them",
        ),
        (
            "entries.mtx.gz",
            b"%%MatrixMarket matrix coordinate pattern general\n2 2 1\n",
            b"1 2\n",
            1 << 22,
            "more than 1,048,577 lines: its header declares 1 arcs or entries, and at most "
            "1,048,576 other lines (comments, blank lines) may come with them",
        ),
        ("late.gr.gz", b"", b"c\n", 1 << 22, "no header line in the first 1,048,576 lines"),
        ("early.gr.gz", b"c\n", b"a 1 2 3\n", 1 << 22, "line 2: an arc before the `p sp` line"),
        (
            "huge.gr.gz",
            b"p sp 2 2000000000\n",
            b"a 1 2 3\n",
            1 << 20,
            "line 1: 2 vertices and 2000000000 arcs: gpubench holds 1 to 2,147,483,647 vertices (the "
            "kernels' int32 ids) and at most 1,073,741,824 arcs",
        ),
        (
            "huge.mtx.gz",
            b"%%MatrixMarket matrix coordinate pattern general\n2 2 2000000000\n",
            b"1 2\n",
            1 << 20,
            "line 2: 2,000,000,000 entries: gpubench holds at most 1,073,741,824",
        ),
    ],
)
def test_bombs_are_refused_while_streaming_in_bounded_memory_and_time(
    tmp_path, name, head, line, count, message
):
    """Each refused in a fresh process, its peak memory (ru_maxrss) and time measured."""
    import json
    import os
    import subprocess
    import sys

    path = _bomb(tmp_path / name, head, line, count)
    env = {**os.environ, "GPUBENCH_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    measured = json.loads(done.stdout)
    assert measured["error"] == f"{path}: {message}", done.stderr
    assert measured["seconds"] < 8  # 2 s and less on a quiet machine; 4.2 s seen on a loaded one
    assert measured["peak_mb"] < 500


# Run in a small process of its own, so that the forked copy of pytest (which may be large)
# is not what ru_maxrss reports: it starts the load in a child and measures that child.
_MEASURE = """
import json, resource, subprocess, sys, time
load = ("import sys\\nfrom gpubench.benchmarks import _road_graphs as road_graphs\\nfrom gpubench.errors import ConfigError\\n"
        "try:\\n    road_graphs.load(sys.argv[1])\\nexcept ConfigError as exc:\\n    print(exc)\\n")
started = time.perf_counter()
done = subprocess.run([sys.executable, "-c", load, sys.argv[1]], capture_output=True, text=True)
print(json.dumps({"error": done.stdout.strip() or done.stderr[-300:],
                  "seconds": time.perf_counter() - started,
                  "peak_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def test_csr_groups_by_source_or_destination_and_nothing_else():
    graph = road_graphs.Graph(3, np.array([0, 2, 0], np.int32), np.array([1, 1, 2], np.int32), None)
    weights = np.array([7, 8, 9], np.int32)
    offsets, other, w = graph.csr(weights)
    assert (offsets.tolist(), other.tolist(), w.tolist()) == ([0, 2, 2, 3], [1, 2, 1], [7, 9, 8])
    offsets, other, w = graph.csr(weights, by="destination")
    assert (offsets.tolist(), other.tolist(), w.tolist()) == ([0, 0, 2, 3], [0, 2, 0], [7, 8, 9])
    with pytest.raises(ValueError, match=r"^by='DESTINATION': 'source' or 'destination'$"):
        graph.csr(weights, by="DESTINATION")


def test_an_empty_path_a_directory_and_a_device_are_one_line(tmp_path):
    with pytest.raises(ConfigError) as error:
        road_graphs.load("")
    assert str(error.value) == "an empty graph path (''): give a graph file"
    for path in (tmp_path, Path("/dev/zero")):
        with pytest.raises(ConfigError) as error:
            road_graphs.load(path)
        assert str(error.value) == f"{path}: not a regular file"


def test_a_name_too_long_for_the_file_system_or_its_cache_is_one_line(tmp_path, monkeypatch):
    longest = write(tmp_path, "g" * 250 + ".gr", "p sp 2 1\na 1 2 3\n")  # 253 bytes: a name
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path / ("c" * 300)))  # no cache: parsed
    assert road_graphs.load(longest).weight.tolist() == [3]
    too_long = tmp_path / ("g" * 256 + ".gr")
    with pytest.raises(ConfigError) as error:
        road_graphs.load(too_long)
    assert str(error.value).endswith(": cannot read the graph: File name too long")
    assert error.value.source == str(too_long)


# A large file within the limits whose last line is bad: refused in a fresh process, its peak
# memory read from /proc/self/status (VmHWM, this process's own since its exec: ru_maxrss of a
# child would carry over the parent's peak). The body is parsed from the file's bytes without
# a Python object per line, and the bad line found a batch of lines at a time, keeping no
# numbers: ~70 MB here for 1,000,000 arcs (8 MB of file, 2 s), where a list of lines took
# ~320 MB (9 s).
_MEASURE_OWN_PEAK = """
import re, sys, time
from pathlib import Path
from gpubench.benchmarks import _road_graphs as road_graphs
from gpubench.errors import ConfigError
started = time.perf_counter()
try:
    getattr(road_graphs, sys.argv[2])(Path(sys.argv[1]))
    print("accepted")
except ConfigError as exc:
    print(exc)
print(time.perf_counter() - started)
print(int(re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1)) // 1024)
"""


@pytest.mark.parametrize(
    ("name", "reader", "head", "line", "last", "message"),
    [
        ("big.gr", "read_dimacs", b"c big\np sp 3 1000000\n", b"a 1 2 3\n", b"a 1 x 3\n",
         "line 1000002: 'x' is not an integer"),
        ("big.mtx", "read_matrix_market",
         b"%%MatrixMarket matrix coordinate integer general\n3 3 1000000\n", b"1 2 3\n",
         b"1 2 3 4\n", "line 1000002: expected 3 numbers (row column [value]), got '1 2 3 4'"),
    ],
)  # fmt: skip
def test_a_large_file_with_a_bad_last_line_is_refused_in_memory_proportional_to_it(
    tmp_path, name, reader, head, line, last, message
):
    import os
    import subprocess
    import sys

    path = tmp_path / name
    path.write_bytes(head + line * 999_999 + last)
    env = {**os.environ, "GPUBENCH_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE_OWN_PEAK, str(path), reader],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    error, seconds, peak_mb = done.stdout.splitlines()
    assert error == f"{path}: {message}", done.stderr
    assert int(peak_mb) < 150, peak_mb
    assert float(seconds) < 30  # ~3 s on a shared 2-core machine


def test_a_clean_body_is_parsed_by_numpy_and_any_other_a_line_at_a_time(tmp_path, monkeypatch):
    """The fast path takes a file of plain arc or entry lines; a comment among the arcs, a
    trailing `#` note or a lone carriage return go to the slow path, which reads the same."""
    slow = []
    real_parse_rows = road_graphs._parse_rows

    def counting(*args, **kwargs):
        slow.append(args[3])
        return real_parse_rows(*args, **kwargs)

    monkeypatch.setattr(road_graphs, "_parse_rows", counting)
    clean = road_graphs.read_dimacs(
        write(tmp_path, "a.gr", "c x\np sp 3 2\n\na 1 2 7\na\t3 1 +8\r\n")
    )
    entries = "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 7.0\n3 1 8e0\n"
    clean_mtx = road_graphs.read_matrix_market(write(tmp_path, "a.mtx", entries))
    assert slow == []
    for graph in (clean, clean_mtx):
        assert (graph.src.tolist(), graph.dst.tolist(), graph.weight.tolist()) == (
            [0, 2],
            [1, 0],
            [7, 8],
        )
    for text in (
        "p sp 3 2\na 1 2 7\nc between\na 3 1 8\n",
        "p sp 3 2\na 1 2 7 # a note\na 3 1 8\n",
        "p sp 3 2\na 1 2 7\ra 3 1 8\n",
    ):
        graph = road_graphs.read_dimacs(write(tmp_path, "b.gr", text))
        assert (graph.src.tolist(), graph.dst.tolist(), graph.weight.tolist()) == (
            [0, 2],
            [1, 0],
            [7, 8],
        )
    assert slow == ["arc U V W"] * 3
