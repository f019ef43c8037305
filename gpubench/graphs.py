"""Road graphs for shortest-path benchmarks: the files people have (SNAP edge lists, DIMACS
shortest-path files, Matrix Market), read vectorised, `.gz` directly, cached on disk by the
file's hash; and a generated road-like graph for machines without a download.

A Graph holds directed arcs as the file states them (COO) with 0-based vertex ids, and
builds CSR (out-arcs by source) or CSC-like in-arcs (by destination) on demand. Bad files are
one ConfigError naming the file, the line and the problem. Nothing here touches the GPU.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import re
import stat
import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gpubench.errors import ConfigError, quote

CACHE_VERSION = 2
WEIGHT_KINDS = ("file", "unit", "uniform")
# The convention of published GPU SSSP results: integer weights in [1, 64).
UNIFORM_RANGE = (1, 64)
# The most a graph file may hold, uncompressed (the USA road graph in DIMACS is 1.3 GB).
MAX_GRAPH_BYTES = 2 << 30
INT32_MAX = int(np.iinfo(np.int32).max)


@dataclass(frozen=True)
class Graph:
    vertices: int
    src: np.ndarray  # int32, arcs as the file gives them
    dst: np.ndarray  # int32
    weight: np.ndarray | None  # int32 weights from the file, or None
    name: str = ""

    @property
    def arcs(self) -> int:
        return int(self.src.size)

    def weights(self, kind: str = "file", seed: int = 0) -> np.ndarray:
        """int32 weights: the file's own (`file`; unit where it has none), `unit`, or
        `uniform` integers in [1, 64) drawn from `seed`."""
        if kind == "unit" or (kind == "file" and self.weight is None):
            return np.ones(self.arcs, np.int32)
        if kind == "file":
            return self.weight  # type: ignore[return-value]
        if kind == "uniform":
            rng = np.random.default_rng(seed)
            return rng.integers(*UNIFORM_RANGE, self.arcs, dtype=np.int32)
        raise ValueError(f"weights {kind!r} is not one of {', '.join(WEIGHT_KINDS)}")

    def csr(
        self, weights: np.ndarray, by: str = "source"
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(offsets int64[V+1], neighbours int32[E], weights int32[E]): out-arcs grouped by
        source, or (by="destination") in-arcs grouped by destination."""
        if by not in ("source", "destination"):
            raise ValueError(f"by={by!r}: 'source' or 'destination'")
        key, other = (self.src, self.dst) if by == "source" else (self.dst, self.src)
        order = np.argsort(key, kind="stable")
        counts = np.bincount(key, minlength=self.vertices)
        offsets = np.zeros(self.vertices + 1, np.int64)
        np.cumsum(counts, out=offsets[1:])
        return offsets, other[order].astype(np.int32), weights[order].astype(np.int32)


# -- reading --------------------------------------------------------------------------------
def _read_bytes(path: Path) -> bytes:
    """The file's bytes (gunzipped), at most MAX_GRAPH_BYTES of them: a small gzip that
    expands to gigabytes, a FIFO or /dev/zero is refused, never read in full."""
    source = str(path)
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise ConfigError("not a regular file", source=source)
        with path.open("rb") as handle:
            head = handle.read(2)
        opener = gzip.open if head == b"\x1f\x8b" else open
        with opener(path, "rb") as handle:
            data = handle.read(MAX_GRAPH_BYTES + 1)
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise ConfigError(f"cannot read the graph: {' '.join(str(exc).split())}",
                          source=source) from None  # fmt: skip
    if len(data) > MAX_GRAPH_BYTES:
        raise ConfigError(f"more than {MAX_GRAPH_BYTES >> 30} GiB (uncompressed): larger than "
                          "any road graph gpubench is made for", source=source)  # fmt: skip
    return data


# A token NumPy's int64 parser reads: an optional sign and ASCII digits (not `1_0`, which
# Python's int() would take).
_INTEGER = re.compile(rb"[+-]?[0-9]+")


def _first_bad_line(body: list[tuple[int, bytes]], width: int, source: str,
                    what: str) -> ConfigError:  # fmt: skip
    """The slow path, run only after the fast one failed: find and name the bad line by its
    number in the file (comments and blank lines counted)."""
    for number, line in body:
        tokens = line.split()
        if len(tokens) != width:
            return ConfigError(f"line {number}: expected {width} numbers ({what}), got "
                               f"{quote(line.decode(errors='replace'))}", source=source)  # fmt: skip
        for token in tokens:
            shown = quote(token.decode(errors="replace"))
            if not _INTEGER.fullmatch(token):
                return ConfigError(f"line {number}: {shown} is not an integer", source=source)
            if not -(2**63) <= int(token) < 2**63:  # NumPy's int64 parser refuses it, rightly
                return ConfigError(f"line {number}: {shown} does not fit in 64 bits",
                                   source=source)  # fmt: skip
    # Not reached while _INTEGER and the range above accept what NumPy's parser accepts.
    return ConfigError(f"cannot read the {what} lines", source=source)


def _numbers(body: list[tuple[int, bytes]], width: int, source: str, what: str) -> np.ndarray:
    """The integers of (line number, line) pairs as an int64 array of `width` columns,
    vectorised (the callers hand it at least one line)."""
    try:
        flat = np.loadtxt(io.BytesIO(b"\n".join(line for _, line in body)), dtype=np.int64,
                          ndmin=2)  # fmt: skip
    except ValueError:
        raise _first_bad_line(body, width, source, what) from None
    if flat.shape[1] != width:
        raise _first_bad_line(body, width, source, what)
    return flat


def read_snap(path: Path) -> Graph:
    """SNAP edge list: `#` comments, two ids per line (any whitespace), ids with gaps
    (renumbered 0..V-1 in increasing order), arcs as listed (road graphs list both ways)."""
    source = str(path)
    data = _read_bytes(path)
    try:
        # The fast path: NumPy's C parser over the whole file, comments and all.
        with warnings.catch_warnings():  # an empty file warns; it is refused below
            warnings.simplefilter("ignore", UserWarning)
            numbers = np.loadtxt(io.BytesIO(data), dtype=np.int64, comments="#", ndmin=2)
        if numbers.size and numbers.shape[1] != 2:
            raise ValueError
    except ValueError:
        # The slow path, only to say which line is wrong.
        body = [(i, line) for i, line in enumerate(data.splitlines(), 1)
                if line.strip() and not line.lstrip().startswith(b"#")]  # fmt: skip
        numbers = _numbers(body, 2, source, "source and target")
    if numbers.size == 0:
        raise ConfigError("no edges in the file", source=source)
    if (numbers < 0).any():
        row = int(np.argmax((numbers < 0).any(axis=1)))
        raise ConfigError(f"edge {row + 1}: a negative vertex id", source=source)
    ids, compact = np.unique(numbers.ravel(), return_inverse=True)
    compact = compact.reshape(numbers.shape).astype(np.int32)
    return Graph(int(ids.size), compact[:, 0].copy(), compact[:, 1].copy(), None, path.name)


def read_dimacs(path: Path) -> Graph:
    """DIMACS shortest paths: `c` comments, `p sp N M`, then `a U V W` arcs, 1-based."""
    source = str(path)
    lines = _read_bytes(path).splitlines()
    vertices = arcs_declared = None
    arc_lines: list[tuple[int, bytes]] = []
    for number, line in enumerate(lines, 1):
        head = line[:1]
        if head == b"c" or not line.strip():
            continue
        if head == b"p":
            parts = line.split()
            if len(parts) != 4 or parts[1] != b"sp":
                raise ConfigError(f"line {number}: expected `p sp VERTICES ARCS`, got "
                                  f"{quote(line.decode(errors='replace'))}", source=source)  # fmt: skip
            try:
                vertices, arcs_declared = int(parts[2]), int(parts[3])
            except ValueError:
                raise ConfigError(f"line {number}: the vertex and arc counts must be integers",
                                  source=source) from None  # fmt: skip
            continue
        if head == b"a":
            if vertices is None:
                raise ConfigError(f"line {number}: an arc before the `p sp` line", source=source)
            arc_lines.append((number, line[1:]))
            continue
        raise ConfigError(f"line {number}: a line must start with c, p or a, got "
                          f"{quote(line.decode(errors='replace'))}", source=source)  # fmt: skip
    if vertices is None:
        raise ConfigError("no `p sp VERTICES ARCS` line", source=source)
    if not arc_lines:
        raise ConfigError("no arcs (`a U V W` lines)", source=source)
    numbers = _numbers(arc_lines, 3, source, "arc U V W")
    ends = numbers[:, :2]
    bad = (ends < 1) | (ends > vertices)
    if bad.any():
        row = int(np.argmax(bad.any(axis=1)))
        raise ConfigError(f"line {arc_lines[row][0]}: vertex id {int(ends[row][bad[row]][0])} "
                          f"is out of range 1..{vertices}", source=source)  # fmt: skip
    if (numbers[:, 2] < 0).any():
        row = int(np.argmax(numbers[:, 2] < 0))
        raise ConfigError(f"line {arc_lines[row][0]}: negative weight {int(numbers[row, 2])}",
                          source=source)  # fmt: skip
    if numbers[:, 2].max() > np.iinfo(np.int32).max:
        raise ConfigError("a weight does not fit in 32 bits", source=source)
    if arcs_declared is not None and arcs_declared != len(arc_lines):
        raise ConfigError(f"the p line declares {arcs_declared} arcs; the file has "
                          f"{len(arc_lines)}", source=source)  # fmt: skip
    return Graph(vertices, (ends[:, 0] - 1).astype(np.int32), (ends[:, 1] - 1).astype(np.int32),
                 numbers[:, 2].astype(np.int32), path.name)  # fmt: skip


def _mtx_size(number: int, line: bytes, source: str) -> tuple[int, int]:
    """(vertices, entries) from a Matrix Market size line, checked."""
    try:
        rows, cols, entries = (int(t) for t in line.split())
    except ValueError:
        raise ConfigError(f"line {number}: expected `ROWS COLS ENTRIES`", source=source) from None
    if rows != cols:
        raise ConfigError(f"line {number}: a graph's matrix is square, got {rows}×{cols}",
                          source=source)  # fmt: skip
    if not 0 < rows <= INT32_MAX or entries < 1:
        raise ConfigError(f"line {number}: {rows} vertices and {entries} entries: a graph "
                          f"needs 1 to {INT32_MAX:,} vertices (the kernels' int32 ids) and "
                          "at least one edge", source=source)  # fmt: skip
    return rows, entries


def read_matrix_market(path: Path) -> Graph:
    """Matrix Market coordinate: `%%MatrixMarket matrix coordinate FIELD SYMMETRY`, `%`
    comments, `ROWS COLS ENTRIES`, then `I J [V]` 1-based; symmetric files stand for both
    directions; values must be non-negative integers (distances are exact)."""
    source = str(path)
    lines = _read_bytes(path).splitlines()
    if not lines or not lines[0].lower().startswith(b"%%matrixmarket"):
        raise ConfigError("line 1: expected a %%MatrixMarket header", source=source)
    header = lines[0].lower().split()
    if len(header) < 5 or header[1] != b"matrix" or header[2] != b"coordinate":
        raise ConfigError("line 1: only `matrix coordinate` files hold graphs", source=source)
    field, symmetry = header[3], header[4]
    body = [(i, line) for i, line in enumerate(lines[1:], 2)
            if line.strip() and not line.startswith(b"%")]  # fmt: skip
    if not body:
        raise ConfigError("no size line", source=source)
    size_number, size_line = body[0]
    rows, entries = _mtx_size(size_number, size_line, source)
    entry_lines = body[1:]
    if len(entry_lines) != entries:
        raise ConfigError(f"line {size_number} declares {entries} entries; the file has "
                          f"{len(entry_lines)}", source=source)  # fmt: skip
    width = 2 if field == b"pattern" else 3
    if field in (b"real", b"double"):
        values = _float_values(entry_lines, source)
        numbers = _numbers([(n, b" ".join(text.split()[:2])) for n, text in entry_lines], 2,
                           source, "row and column")  # fmt: skip
    else:
        numbers = _numbers(entry_lines, width, source, "row column [value]")
        values = numbers[:, 2] if width == 3 else None
    ends = numbers[:, :2]
    bad = (ends < 1) | (ends > rows)
    if bad.any():
        row = int(np.argmax(bad.any(axis=1)))
        raise ConfigError(f"line {entry_lines[row][0]}: vertex id out of range 1..{rows}",
                          source=source)  # fmt: skip
    src, dst = ends[:, 0] - 1, ends[:, 1] - 1
    weights = values  # int64: the checks below see the file's values before any cast
    if weights is not None and (weights < 0).any():
        row = int(np.argmax(weights < 0))
        raise ConfigError(f"line {entry_lines[row][0]}: negative weight {int(weights[row])}",
                          source=source)  # fmt: skip
    if weights is not None and (weights > INT32_MAX).any():  # would wrap in the kernels' int32
        row = int(np.argmax(weights > INT32_MAX))
        raise ConfigError(f"line {entry_lines[row][0]}: weight {int(weights[row])} does not fit "
                          f"the kernels' int32 (at most {INT32_MAX:,})", source=source)  # fmt: skip
    if symmetry in (b"symmetric", b"hermitian", b"skew-symmetric"):
        off = src != dst
        src, dst = np.concatenate([src, dst[off]]), np.concatenate([dst, src[off]])
        if weights is not None:
            weights = np.concatenate([weights, weights[off]])
    return Graph(rows, src.astype(np.int32), dst.astype(np.int32),
                 None if weights is None else weights.astype(np.int32), path.name)  # fmt: skip


def _float_values(entry_lines: list[tuple[int, bytes]], source: str) -> np.ndarray:
    values = []
    for number, line in entry_lines:
        tokens = line.split()
        try:
            value = float(tokens[2])
        except (IndexError, ValueError):
            raise ConfigError(f"line {number}: expected `ROW COL VALUE`", source=source) from None
        if not value.is_integer():
            raise ConfigError(f"line {number}: weight {value} is not an integer (distances are "
                              "computed exactly)", source=source)  # fmt: skip
        if abs(value) > INT32_MAX:
            raise ConfigError(f"line {number}: weight {value:g} does not fit the kernels' int32",
                              source=source)  # fmt: skip
        values.append(int(value))
    return np.array(values, np.int64)


READERS = {".txt": read_snap, ".tsv": read_snap, ".el": read_snap, ".gr": read_dimacs,
           ".mtx": read_matrix_market}  # fmt: skip


def reader_for(path: Path) -> Callable[[Path], Graph]:
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    suffix = Path(name).suffix.lower()
    if suffix not in READERS:
        raise ConfigError(f"unknown graph format {suffix or '(none)'!r}: .txt (SNAP), .gr "
                          "(DIMACS), .mtx (Matrix Market), each optionally .gz", source=str(path))  # fmt: skip
    return READERS[suffix]


def cache_dir() -> Path:
    from gpubench.kernels import cache_root

    return cache_root() / f"graphs-v{CACHE_VERSION}"


def load(path: str | Path) -> Graph:
    """The graph in a file, parsed once and then read from the cache (keyed by the file's
    content, so an edited file is parsed again)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError("graph file not found", source=str(path))
    with path.open("rb") as handle:
        digest = hashlib.file_digest(handle, "sha256")
    cached = cache_dir() / f"{digest.hexdigest()}.npz"
    if cached.is_file():
        graph = _from_cache(cached, path.name)
        if graph is not None:
            return graph
    graph = reader_for(path)(path)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f"{cached.stem}.{os.getpid()}.tmp.npz")
        weight = {} if graph.weight is None else {"weight": graph.weight}  # absent: unweighted
        np.savez(tmp, vertices=graph.vertices, src=graph.src, dst=graph.dst, **weight)
        tmp.replace(cached)
    except OSError:
        pass  # no cache: parse each time
    return graph


def _from_cache(cached: Path, name: str) -> Graph | None:
    """The cached graph, or None where the entry is damaged (truncated, not an archive,
    arrays missing or of the wrong type or size, ids out of range): then the file is parsed
    again and the entry rewritten."""
    try:
        with np.load(cached, allow_pickle=False) as data:
            vertices = int(data["vertices"])
            src, dst = data["src"], data["dst"]
            weight = data["weight"] if "weight" in data.files else None
    except Exception:  # zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError, ...
        return None
    arrays = [src, dst] + ([weight] if weight is not None else [])
    if not (0 < vertices <= np.iinfo(np.int32).max
            and all(a.dtype == np.int32 and a.ndim == 1 and a.size == src.size for a in arrays)
            and (src.size == 0 or (min(src.min(), dst.min()) >= 0
                                   and max(src.max(), dst.max()) < vertices))):  # fmt: skip
        return None
    return Graph(vertices, src, dst, weight, name)


# -- a road-like graph, generated ------------------------------------------------------------
def road_like(vertices: int = 2_000_000, keep: float = 0.7, seed: int = 0) -> Graph:
    """A 2-D grid of about `vertices` junctions whose roads (to the right and down
    neighbours) each exist with probability `keep`, both directions listed, as road graphs
    are: mean degree about 4·keep (2.8 at the default, roadNet-CA's is 2.8), thousands of
    hops across, a giant component and small islands. Vertex ids run row by row, so
    neighbours have near ids, as in real road files."""
    if vertices < 1:
        raise ValueError("a graph has at least one vertex")
    side = max(1, round(vertices**0.5))
    rows, cols = -(-vertices // side), side
    ids = np.arange(rows * cols, dtype=np.int64).reshape(rows, cols)
    rng = np.random.default_rng(seed)
    right = (ids[:, :-1].reshape(-1), ids[:, 1:].reshape(-1))
    down = (ids[:-1, :].reshape(-1), ids[1:, :].reshape(-1))
    src = np.concatenate([right[0], down[0]])
    dst = np.concatenate([right[1], down[1]])
    kept = rng.random(src.size) < keep
    src, dst = src[kept], dst[kept]
    inside = (src < vertices) & (dst < vertices)
    src, dst = src[inside], dst[inside]
    both_src = np.concatenate([src, dst]).astype(np.int32)
    both_dst = np.concatenate([dst, src]).astype(np.int32)
    return Graph(vertices, both_src, both_dst, None, f"road-like grid ({vertices:,} vertices)")
