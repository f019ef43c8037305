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
import itertools
import os
import re
import stat
import warnings
import zlib
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from gpubench.errors import ConfigError, quote

CACHE_VERSION = 2
WEIGHT_KINDS = ("file", "unit", "uniform")
# The convention of published GPU SSSP results: integer weights in [1, 64).
UNIFORM_RANGE = (1, 64)
# The most a graph file may hold, uncompressed (the USA road graph in DIMACS is 1.3 GB).
MAX_GRAPH_BYTES = 2 << 30
# Limits checked while the file streams through once, before it is read whole or parsed, so
# a file that breaks them is refused in bounded memory (a few chunks) and time: a gzip of NUL
# bytes at its first MiB, a few MB of gzip that expand into a billion lines long before then.
# No line of a graph file is longer than this (a NUL or binary file has no lines at all).
MAX_LINE_BYTES = 1 << 20
# A file with a header (DIMACS `p sp N M`, Matrix Market `ROWS COLS ENTRIES`) holds at most
# what its header declares plus this many other lines (comments, blank lines); the header
# comes within this many lines of the start.
SLACK_LINES = 1 << 20
# A file without one (SNAP) holds at most this many lines: 2^26, above the 58M arcs of the
# full USA road graph.
MAX_HEADERLESS_LINES = 1 << 26
# The most arcs a header may declare: 2^30, 18 times the USA road graph.
MAX_ARCS = 1 << 30
# Decompressed bytes looked at at a time by the streaming check.
_CHUNK = 4 << 20
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
def _open(path: Path, source: str) -> Any:
    """A binary handle on the file's bytes, gunzipped where it is a gzip."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise ConfigError("not a regular file", source=source)
    with path.open("rb") as handle:
        head = handle.read(2)
    return gzip.open(path, "rb") if head == b"\x1f\x8b" else open(path, "rb")


def _read_bytes(path: Path, header: Callable[[int, bytes], int | None] | None = None) -> bytes:
    """The file's bytes (gunzipped), once they streamed through `_check_sizes` within every
    limit: a small gzip that expands to gigabytes, a FIFO or /dev/zero is refused, never read
    in full. `header(number, line)` reads a header line's declared count (None: the line is no
    header) for files that have one."""
    source = str(path)
    try:
        with _open(path, source) as handle:
            _check_sizes(handle, source, header)
        with _open(path, source) as handle:
            data = handle.read(MAX_GRAPH_BYTES + 1)
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise ConfigError(
            f"cannot read the graph: {' '.join(str(exc).split())}", source=source
        ) from None
    if len(data) > MAX_GRAPH_BYTES:
        raise ConfigError(
            f"more than {MAX_GRAPH_BYTES >> 30} GiB (uncompressed): larger than "
            "any road graph gpubench is made for",
            source=source,
        )
    return data


def _check_sizes(
    handle: Any, source: str, header: Callable[[int, bytes], int | None] | None
) -> None:
    """Stream the file once, a chunk at a time, and refuse it at the first chunk past a limit:
    the bytes, the longest line, and the lines (past the header's declared count plus
    SLACK_LINES, or past MAX_HEADERLESS_LINES without a header)."""
    total = lines = 0
    allowed = MAX_HEADERLESS_LINES if header is None else SLACK_LINES
    declared: int | None = None
    carry = b""
    while chunk := handle.read(_CHUNK):
        total += len(chunk)
        if total > MAX_GRAPH_BYTES:
            raise ConfigError(
                f"more than {MAX_GRAPH_BYTES >> 30} GiB (uncompressed): larger "
                "than any road graph gpubench is made for",
                source=source,
            )
        buffer = carry + chunk
        cut = buffer.rfind(b"\n") + 1
        whole, carry = buffer[:cut], buffer[cut:]
        _check_line_lengths(whole, carry, lines, source)
        if header is not None and declared is None:
            # split, not splitlines: numbered as the newlines are counted
            for number, line in enumerate(whole.split(b"\n")[:-1], lines + 1):
                declared = header(number, line)
                if declared is not None:
                    allowed += declared
                    break
                if number > SLACK_LINES:
                    break
        lines += whole.count(b"\n")
        if header is not None and declared is None and lines > SLACK_LINES:
            raise ConfigError(f"no header line in the first {SLACK_LINES:,} lines", source=source)
        if lines > allowed:
            raise ConfigError(_too_many_lines(allowed, declared), source=source)
    if carry and header is not None and declared is None:
        header(lines + 1, carry)  # a header on the last line, without a newline: checked
    if lines + bool(carry) > allowed:
        raise ConfigError(_too_many_lines(allowed, declared), source=source)


def _too_many_lines(allowed: int, declared: int | None) -> str:
    if declared is None:
        return (
            f"more than {allowed:,} lines: larger than any road graph gpubench is made for "
            "(a file without a header)"
        )
    return (
        f"more than {allowed:,} lines: its header declares {declared:,} arcs or entries, "
        f"and at most {SLACK_LINES:,} other lines (comments, blank lines) may come with them"
    )


def _check_line_lengths(whole: bytes, carry: bytes, before: int, source: str) -> None:
    """Refuse a line longer than MAX_LINE_BYTES: the unfinished one at the end of the chunk,
    or one inside it (found by NumPy over the newline positions, not a Python loop)."""
    if len(carry) > MAX_LINE_BYTES:
        number = before + whole.count(b"\n") + 1
        raise ConfigError(
            f"line {number}: longer than {MAX_LINE_BYTES:,} bytes: not a graph file", source=source
        )
    # The cheap test first: a line longer than MAX_LINE_BYTES holds a whole window of half
    # that size without a newline; only where such a window is found are the lines measured.
    window = MAX_LINE_BYTES // 2
    if all(whole.find(b"\n", i, i + window) >= 0 for i in range(0, len(whole) - window, window)):
        return
    ends = np.flatnonzero(np.frombuffer(whole, np.uint8) == ord("\n"))
    lengths = np.diff(ends, prepend=-1) - 1
    longest = int(np.argmax(lengths))
    if lengths[longest] > MAX_LINE_BYTES:
        raise ConfigError(
            f"line {before + longest + 1}: longer than {MAX_LINE_BYTES:,} bytes: not a graph file",
            source=source,
        )


# A token NumPy's int64 parser reads: an optional sign and ASCII digits (not `1_0`, which
# Python's int() would take).
_INTEGER = re.compile(rb"[+-]?[0-9]+")


def _first_bad_line(
    body: Iterable[tuple[int, bytes]], width: int, source: str, what: str
) -> ConfigError:
    """The slow path, run only after the fast one failed: find and name the bad line by its
    number in the file (comments and blank lines counted)."""
    for number, line in body:
        tokens = line.split()
        if len(tokens) != width:
            shown_line = quote(line.rstrip(b"\r\n").decode(errors="replace"))
            return ConfigError(
                f"line {number}: expected {width} numbers ({what}), got {shown_line}", source=source
            )
        for token in tokens:
            shown = quote(token.decode(errors="replace"))
            if not _INTEGER.fullmatch(token):
                return ConfigError(f"line {number}: {shown} is not an integer", source=source)
            if not -(2**63) <= int(token) < 2**63:  # NumPy's int64 parser refuses it, rightly
                return ConfigError(f"line {number}: {shown} does not fit in 64 bits", source=source)
    # Not reached while _INTEGER and the range above accept what NumPy's parser accepts.
    return ConfigError(f"cannot read the {what} lines", source=source)


# -- parsing a body without a Python object per line ----------------------------------------
# A DIMACS or Matrix Market file within the limits is parsed by NumPy's C parser straight from
# its bytes (a BytesIO shares them, a seek skips the header), once byte-level checks (counts
# and translations, a chunk at a time) show that its body holds nothing that parser would read
# differently from the line rules: only digits, signs, whitespace (and the arcs' `a`), no lone
# carriage return, as many tokens as the rows need. Any other file, and any file the checks
# refuse, goes to the slow path: a generator over the lines that applies the rules one line at
# a time, names the first bad line, and keeps the numbers in flat arrays, never a list of lines.
_WHITESPACE = b" \t\r\n"
# Whitespace to b" ", any other byte to b"x": tokens are counted by where they start (b" x").
_TOKEN_SHAPE = bytes(ord(" ") if i in _WHITESPACE else ord("x") for i in range(256))


def _numbered_lines(
    data: bytes, start: int = 0, end: int | None = None, first: int = 1
) -> Iterator[tuple[int, bytes, int]]:
    """(line number, line, offset after its newline) lazily from `start` to `end`, numbered as
    bytes.splitlines() numbers lines (a lone carriage return ends one too)."""
    stream = io.BytesIO(data)  # shares the bytes: no copy
    stream.seek(start)
    number, offset = first, start
    split = _lone_carriage_return(data)  # else each newline-ended piece is one line
    for raw in stream:
        if end is not None and offset >= end:
            return
        offset += len(raw)
        for line in raw.splitlines() if split else (raw.rstrip(b"\r\n"),):
            yield number, line, offset
            number += 1


def _plain_tokens(data: bytes, start: int, allowed: bytes) -> int | None:
    """How many whitespace-separated tokens the bytes from `start` on hold, or None where one of
    them is neither whitespace nor in `allowed`."""
    tokens, previous = 0, b" "
    for offset in range(start, len(data), _CHUNK):
        piece = data[offset : offset + _CHUNK]
        if piece.translate(None, allowed + _WHITESPACE):
            return None
        shape = piece.translate(_TOKEN_SHAPE)
        tokens += shape.count(b" x") + (previous + shape[:1] == b" x")
        previous = shape[-1:]
    return tokens


def _lone_carriage_return(data: bytes) -> bool:
    """Whether a carriage return ends a line on its own: bytes.splitlines() (the line rules)
    ends a line there, NumPy's parser does not."""
    return data.count(b"\r") != data.count(b"\r\n")


def _loadtxt(
    data: bytes, start: int, usecols: tuple[int, ...] | None, dtype: type
) -> np.ndarray | None:
    """NumPy's C parser over the bytes from `start` on (no comments), or None where it refuses
    them (the slow path then names the line)."""
    stream = io.BytesIO(data)
    stream.seek(start)
    try:
        with warnings.catch_warnings():  # an empty body warns; the row counts refuse it
            warnings.simplefilter("ignore", UserWarning)
            return np.loadtxt(stream, dtype=dtype, usecols=usecols, comments=None, ndmin=2)
    except ValueError:
        return None


def _row_line(data: bytes, start: int, first: int, row: int) -> int:
    """The line number of the fast path's `row` (0-based): its rows are the non-blank lines
    from `start`, line `first`. Walked only to name a row that breaks a rule."""
    rows = (number for number, line, _ in _numbered_lines(data, start, first=first) if line.strip())
    return next(itertools.islice(rows, row, None))


def _is_int64(token: bytes) -> bool:
    return bool(_INTEGER.fullmatch(token)) and -(2**63) <= int(token) < 2**63


def _parse_rows(
    body: Callable[[], Iterable[tuple[int, bytes]]], width: int, source: str, what: str
) -> tuple[np.ndarray, np.ndarray]:
    """The slow path: (int64 rows of `width` numbers, their line numbers) from the (line
    number, line) pairs a fresh `body()` yields, a batch of lines at a time through NumPy's
    parser (a batch it refuses is checked a line at a time, naming the first bad line as
    _first_bad_line names it). A first pass checks every batch and keeps nothing; only a file
    that passes is read again into arrays, so a refusal costs no more memory than its bytes."""
    for batch in _batches(body()):
        if _batch_numbers(batch, width) is None:
            _check_lines(batch, width, source, what)
    rows, numbers = [], array("q")
    for batch in _batches(body()):
        parsed = _batch_numbers(batch, width)
        if parsed is None:  # lines the rules take where NumPy's parser does not (a \x0c)
            parsed = np.array([[int(t) for t in _row_tokens(line)] for _, line in batch])
        rows.append(parsed.astype(np.int64).reshape(-1, width))
        numbers.extend(number for number, _ in batch)
    return np.concatenate(rows), np.frombuffer(numbers, np.int64)


# Lines read together by the slow path: a bounded list, a few MB.
_BATCH = 1 << 16


def _batches(pairs: Iterable[tuple[int, bytes]]) -> Iterator[list[tuple[int, bytes]]]:
    iterator = iter(pairs)
    while batch := list(itertools.islice(iterator, _BATCH)):
        yield batch


def _batch_numbers(batch: list[tuple[int, bytes]], width: int) -> np.ndarray | None:
    """The batch's rows by NumPy's parser (which ends a line at `#`), or None where it refuses
    a line or a line holds no row."""
    try:
        with warnings.catch_warnings():  # a batch of comments only warns; refused below
            warnings.simplefilter("ignore", UserWarning)
            text = io.BytesIO(b"\n".join(line for _, line in batch))
            parsed = np.loadtxt(text, dtype=np.int64, ndmin=2)
    except ValueError:
        return None
    return parsed if parsed.shape == (len(batch), width) else None


def _check_lines(batch: list[tuple[int, bytes]], width: int, source: str, what: str) -> None:
    """Name the first line of the batch that is not `width` 64-bit integers."""
    for number, line in batch:
        tokens = _row_tokens(line)
        if len(tokens) != width or not all(_is_int64(token) for token in tokens):
            raise _first_bad_line([(number, line)], width, source, what)


def _row_tokens(line: bytes) -> list[bytes]:
    """A row's tokens as NumPy's parser reads them: the line ends at a `#`."""
    return line.split(b"#", 1)[0].split()


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
        # Lazily, line by line: a list of every line would take gigabytes for a large file.
        body = (
            (i, line)
            for i, line in enumerate(io.BytesIO(data), 1)
            if line.strip() and not line.lstrip().startswith(b"#")
        )
        raise _first_bad_line(body, 2, source, "source and target") from None
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
    data = _read_bytes(path, _dimacs_header(source))
    vertices, arcs_declared, numbers, line_of = _dimacs_fast(data, source) or _dimacs_slow(
        data, source
    )
    ends = numbers[:, :2]
    bad = (ends < 1) | (ends > vertices)
    if bad.any():
        row = int(np.argmax(bad.any(axis=1)))
        raise ConfigError(
            f"line {line_of(row)}: vertex id {int(ends[row][bad[row]][0])} "
            f"is out of range 1..{vertices}",
            source=source,
        )
    if (numbers[:, 2] < 0).any():
        row = int(np.argmax(numbers[:, 2] < 0))
        raise ConfigError(
            f"line {line_of(row)}: negative weight {int(numbers[row, 2])}", source=source
        )
    if numbers[:, 2].max() > np.iinfo(np.int32).max:
        raise ConfigError("a weight does not fit in 32 bits", source=source)
    if arcs_declared is not None and arcs_declared != len(numbers):
        raise ConfigError(
            f"the p line declares {arcs_declared} arcs; the file has {len(numbers)}",
            source=source,
        )
    return Graph(
        vertices,
        (ends[:, 0] - 1).astype(np.int32),
        (ends[:, 1] - 1).astype(np.int32),
        numbers[:, 2].astype(np.int32),
        path.name,
    )


# What a reader's fast or slow path hands on: the header's counts, the rows as int64, and the
# line number of a row (to name a row that breaks a rule).
_DimacsRows = tuple[int, int, np.ndarray, Callable[[int], int]]


def _dimacs_scan(
    lines: Iterable[tuple[int, bytes, int]], source: str
) -> tuple[int | None, int | None, int]:
    """(vertices, declared arcs, arc lines) by the line rules: c comments and blank lines,
    p lines (the last one counts), a lines after a p line; anything else is refused."""
    vertices = arcs_declared = None
    arcs = 0
    for number, line, _ in lines:
        head = line[:1]
        if head == b"c" or not line.strip():
            continue
        if head == b"p":
            vertices, arcs_declared = _p_line(number, line, source)
        elif head == b"a":
            if vertices is None:
                raise ConfigError(f"line {number}: an arc before the `p sp` line", source=source)
            arcs += 1
        else:
            raise ConfigError(
                f"line {number}: a line must start with c, p or a, got "
                f"{quote(line.decode(errors='replace'))}",
                source=source,
            )
    return vertices, arcs_declared, arcs


def _dimacs_fast(data: bytes, source: str) -> _DimacsRows | None:
    """The header (every line before the first arc) by the line rules, then the arcs by NumPy,
    where from the first arc on the file holds nothing but `a U V W` lines and blank lines:
    every `a` starts a line and is followed by a blank, four tokens a line. None otherwise."""
    first_arc = 0 if data[:1] == b"a" else data.find(b"\na") + 1
    if first_arc == 0 or _lone_carriage_return(data):
        return None  # no arcs, an arc first, or lines split where NumPy would not split them
    head = _numbered_lines(data, end=first_arc)
    vertices, arcs_declared, _ = _dimacs_scan(head, source)
    first_number = data.count(b"\n", 0, first_arc) + 1
    if vertices is None:
        raise ConfigError(f"line {first_number}: an arc before the `p sp` line", source=source)
    tokens = _plain_tokens(data, first_arc, b"0123456789+-a")
    arcs = data.count(b"\na", first_arc) + 1
    alone = data.count(b"a ", first_arc) + data.count(b"a\t", first_arc)
    if tokens != 4 * arcs or data.count(b"a", first_arc) != arcs or alone != arcs:
        return None
    numbers = _loadtxt(data, first_arc, (1, 2, 3), np.int64)
    if numbers is None or len(numbers) != arcs:
        return None
    return vertices, arcs_declared, numbers, partial(_row_line, data, first_arc, first_number)


def _dimacs_slow(data: bytes, source: str) -> _DimacsRows:
    """The old rules, a line at a time: the first bad line is named."""
    vertices, arcs_declared, arcs = _dimacs_scan(_numbered_lines(data), source)
    if vertices is None:
        raise ConfigError("no `p sp VERTICES ARCS` line", source=source)
    if not arcs:
        raise ConfigError("no arcs (`a U V W` lines)", source=source)

    def arc_lines() -> Iterator[tuple[int, bytes]]:
        return ((n, line[1:]) for n, line, _ in _numbered_lines(data) if line[:1] == b"a")

    numbers, numbered = _parse_rows(arc_lines, 3, source, "arc U V W")
    return vertices, arcs_declared, numbers, lambda row: int(numbered[row])


def _p_line(number: int, line: bytes, source: str) -> tuple[int, int]:
    """(vertices, arcs) from a DIMACS `p sp N M` line, checked against what gpubench holds."""
    parts = line.split()
    if len(parts) != 4 or parts[1] != b"sp":
        raise ConfigError(
            f"line {number}: expected `p sp VERTICES ARCS`, got "
            f"{quote(line.decode(errors='replace'))}",
            source=source,
        )
    try:
        vertices, arcs = int(parts[2]), int(parts[3])
    except ValueError:
        raise ConfigError(
            f"line {number}: the vertex and arc counts must be integers", source=source
        ) from None
    if not 0 < vertices <= INT32_MAX or not 0 <= arcs <= MAX_ARCS:
        raise ConfigError(
            f"line {number}: {vertices} vertices and {arcs} arcs: gpubench "
            f"holds 1 to {INT32_MAX:,} vertices (the kernels' int32 ids) and at "
            f"most {MAX_ARCS:,} arcs",
            source=source,
        )
    return vertices, arcs


def _dimacs_header(source: str) -> Callable[[int, bytes], int | None]:
    """For the streaming check: the arcs a `p sp` line declares; an arc before it is
    refused there, before the file is read whole."""

    def header(number: int, line: bytes) -> int | None:
        if line[:1] == b"a":
            raise ConfigError(f"line {number}: an arc before the `p sp` line", source=source)
        return _p_line(number, line, source)[1] if line[:1] == b"p" else None

    return header


def _mtx_header(source: str) -> Callable[[int, bytes], int | None]:
    """For the streaming check: the entries a Matrix Market size line declares (the first
    line after the banner that is no comment)."""

    def header(number: int, line: bytes) -> int | None:
        if number == 1:
            _mtx_banner(line, source)
            return None
        if line.startswith(b"%") or not line.strip():
            return None
        entries = _mtx_size(number, line, source)[1]
        if entries > MAX_ARCS:
            raise ConfigError(
                f"line {number}: {entries:,} entries: gpubench holds at most {MAX_ARCS:,}",
                source=source,
            )
        return entries

    return header


def _mtx_banner(line: bytes, source: str) -> tuple[bytes, bytes]:
    """(field, symmetry) from a Matrix Market banner, lower-cased, checked."""
    if not line.lower().startswith(b"%%matrixmarket"):
        raise ConfigError("line 1: expected a %%MatrixMarket header", source=source)
    banner = line.lower().split()
    if len(banner) < 5 or banner[1] != b"matrix" or banner[2] != b"coordinate":
        raise ConfigError("line 1: only `matrix coordinate` files hold graphs", source=source)
    return banner[3], banner[4]


def _mtx_size(number: int, line: bytes, source: str) -> tuple[int, int]:
    """(vertices, entries) from a Matrix Market size line, checked."""
    try:
        rows, cols, entries = (int(t) for t in line.split())
    except ValueError:
        raise ConfigError(f"line {number}: expected `ROWS COLS ENTRIES`", source=source) from None
    if rows != cols:
        raise ConfigError(
            f"line {number}: a graph's matrix is square, got {rows}×{cols}", source=source
        )
    if not 0 < rows <= INT32_MAX or entries < 1:
        raise ConfigError(
            f"line {number}: {rows} vertices and {entries} entries: a graph "
            f"needs 1 to {INT32_MAX:,} vertices (the kernels' int32 ids) and "
            "at least one edge",
            source=source,
        )
    return rows, entries


def read_matrix_market(path: Path) -> Graph:
    """Matrix Market coordinate: `%%MatrixMarket matrix coordinate FIELD SYMMETRY`, `%`
    comments, `ROWS COLS ENTRIES`, then `I J [V]` 1-based; symmetric files stand for both
    directions; values must be non-negative integers (distances are exact)."""
    source = str(path)
    data = _read_bytes(path, _mtx_header(source))
    lines = _numbered_lines(data)
    field, symmetry = _mtx_banner(next(lines, (1, b"", 0))[1], source)
    size = next((item for item in lines if item[1].strip() and not item[1].startswith(b"%")), None)
    if size is None:
        raise ConfigError("no size line", source=source)
    size_number, size_line, after_size = size
    rows, entries = _mtx_size(size_number, size_line, source)
    shape = _MtxShape(entries, 2 if field == b"pattern" else 3, field in (b"real", b"double"))
    ends, values, line_of = _mtx_fast(data, after_size, size_number + 1, shape) or _mtx_slow(
        data, size_number, shape, source
    )
    bad = (ends < 1) | (ends > rows)
    if bad.any():
        row = int(np.argmax(bad.any(axis=1)))
        raise ConfigError(f"line {line_of(row)}: vertex id out of range 1..{rows}", source=source)
    src, dst = ends[:, 0] - 1, ends[:, 1] - 1
    weights = values  # int64: the checks below see the file's values before any cast
    if weights is not None and (weights < 0).any():
        row = int(np.argmax(weights < 0))
        raise ConfigError(
            f"line {line_of(row)}: negative weight {int(weights[row])}", source=source
        )
    if weights is not None and (weights > INT32_MAX).any():  # would wrap in the kernels' int32
        row = int(np.argmax(weights > INT32_MAX))
        raise ConfigError(
            f"line {line_of(row)}: weight {int(weights[row])} does not fit "
            f"the kernels' int32 (at most {INT32_MAX:,})",
            source=source,
        )
    if symmetry in (b"symmetric", b"hermitian", b"skew-symmetric"):
        off = src != dst
        src, dst = np.concatenate([src, dst[off]]), np.concatenate([dst, src[off]])
        if weights is not None:
            weights = np.concatenate([weights, weights[off]])
    return Graph(
        rows,
        src.astype(np.int32),
        dst.astype(np.int32),
        None if weights is None else weights.astype(np.int32),
        path.name,
    )


@dataclass(frozen=True)
class _MtxShape:
    """What the size line and the banner say the entry lines hold."""

    entries: int
    width: int  # numbers a line: 2 (pattern) or 3
    real: bool  # values written as reals (that must be integers)


# (row and column ids int64[E, 2], values int64[E] or None, line number of an entry row)
_MtxRows = tuple[np.ndarray, np.ndarray | None, Callable[[int], int]]


def _mtx_fast(data: bytes, start: int, first: int, shape: _MtxShape) -> _MtxRows | None:
    """The entries by NumPy, where after the size line the file holds nothing but entry lines
    of `width` numbers and blank lines, as many as declared, and real values are integers in
    the kernels' range. None otherwise."""
    if _lone_carriage_return(data):
        return None
    tokens = _plain_tokens(data, start, b"0123456789+-" + (b".eE" if shape.real else b""))
    if tokens != shape.width * shape.entries:
        return None
    if shape.real:
        ends = _loadtxt(data, start, (0, 1), np.int64)
        reals = _loadtxt(data, start, (2,), np.float64)
        if ends is None or reals is None or len(ends) != shape.entries:
            return None
        reals = reals[:, 0]
        integral = np.isfinite(reals) & (reals == np.floor(reals)) & (np.abs(reals) <= INT32_MAX)
        if not integral.all():
            return None  # the slow path names the line
        values: np.ndarray | None = reals.astype(np.int64)
    else:
        numbers = _loadtxt(data, start, None, np.int64)
        if numbers is None or numbers.shape != (shape.entries, shape.width):
            return None
        ends, values = numbers[:, :2], (numbers[:, 2] if shape.width == 3 else None)
    return ends, values, partial(_row_line, data, start, first)


def _mtx_slow(data: bytes, size_number: int, shape: _MtxShape, source: str) -> _MtxRows:
    """The old rules, a line at a time: the entries are the lines after the size line that are
    neither blank nor `%` comments; the first bad one is named."""

    def entry_lines() -> Iterator[tuple[int, bytes]]:
        body = (
            (n, line)
            for n, line, _ in _numbered_lines(data)
            if n > 1 and line.strip() and not line.startswith(b"%")
        )
        return itertools.islice(body, 1, None)  # after the size line

    found = sum(1 for _ in entry_lines())
    if found != shape.entries:
        raise ConfigError(
            f"line {size_number} declares {shape.entries} entries; the file has {found}",
            source=source,
        )
    if shape.real:
        values: np.ndarray | None = _float_values(entry_lines(), source)

        def ids() -> Iterator[tuple[int, bytes]]:
            return ((n, b" ".join(text.split()[:2])) for n, text in entry_lines())

        ends, numbered = _parse_rows(ids, 2, source, "row and column")
    else:
        numbers, numbered = _parse_rows(entry_lines, shape.width, source, "row column [value]")
        ends, values = numbers[:, :2], (numbers[:, 2] if shape.width == 3 else None)
    return ends, values, lambda row: int(numbered[row])


def _float_values(entry_lines: Iterable[tuple[int, bytes]], source: str) -> np.ndarray:
    """The third number of each entry line, a real that must be an integer the kernels hold."""
    values = array("q")
    for number, line in entry_lines:
        tokens = line.split()
        try:
            value = float(tokens[2])
        except (IndexError, ValueError):
            raise ConfigError(f"line {number}: expected `ROW COL VALUE`", source=source) from None
        if not value.is_integer():
            raise ConfigError(
                f"line {number}: weight {value} is not an integer (distances are computed exactly)",
                source=source,
            )
        if abs(value) > INT32_MAX:
            raise ConfigError(
                f"line {number}: weight {value:g} does not fit the kernels' int32", source=source
            )
        values.append(int(value))
    return np.frombuffer(values, np.int64)


READERS = {".txt": read_snap, ".tsv": read_snap, ".el": read_snap, ".gr": read_dimacs,
           ".mtx": read_matrix_market}  # fmt: skip


def reader_for(path: Path) -> Callable[[Path], Graph]:
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    suffix = Path(name).suffix.lower()
    if suffix not in READERS:
        raise ConfigError(
            f"unknown graph format {suffix or '(none)'!r}: .txt (SNAP), .gr "
            "(DIMACS), .mtx (Matrix Market), each optionally .gz",
            source=str(path),
        )
    return READERS[suffix]


def cache_dir() -> Path:
    from gpubench.caches import cache_root

    return cache_root() / f"graphs-v{CACHE_VERSION}"


def load(path: str | Path) -> Graph:
    """The graph in a file, parsed once and then read from the cache (keyed by the file's
    content, so an edited file is parsed again)."""
    if not str(path).strip():  # Path("") would be the working directory
        raise ConfigError(f"an empty graph path ({str(path)!r}): give a graph file")
    path = Path(path)
    try:
        if not path.is_file():
            missing = "not a regular file" if path.exists() else "graph file not found"
            raise ConfigError(missing, source=str(path))
        with path.open("rb") as handle:
            digest = hashlib.file_digest(handle, "sha256")
    except OSError as exc:  # a name too long for the file system, no permission, ...
        raise ConfigError(f"cannot read the graph: {exc.strerror}", source=str(path)) from None
    try:
        cached = cache_dir() / f"{digest.hexdigest()}.npz"
        graph = _from_cache(cached, path.name) if cached.is_file() else None
    except OSError:  # a cache directory whose path the file system refuses: no cache
        cached, graph = None, None
    if graph is not None:
        return graph
    graph = reader_for(path)(path)
    if cached is not None:
        _store(cached, graph)
    return graph


def _store(cached: Path, graph: Graph) -> None:
    """Write the cache entry (atomically: a temporary file, then a rename), or nothing where
    the cache cannot be written: the file is then parsed each time."""
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f"{cached.stem}.{os.getpid()}.tmp.npz")
        weight = {} if graph.weight is None else {"weight": graph.weight}  # absent: unweighted
        np.savez(tmp, vertices=graph.vertices, src=graph.src, dst=graph.dst, **weight)
        tmp.replace(cached)
    except OSError:
        pass


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
    if not (
        0 < vertices <= np.iinfo(np.int32).max
        and all(a.dtype == np.int32 and a.ndim == 1 and a.size == src.size for a in arrays)
        and (
            src.size == 0
            or (min(src.min(), dst.min()) >= 0 and max(src.max(), dst.max()) < vertices)
        )
    ):
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
