"""Small recorded sweeps made in the test: a sweep file of the transpose suite and a results
log whose times are chosen by hand (no GPU)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gpubench.model.results import JsonLinesLog, Result, Status

# Ten configurations (tile x block_rows) of one problem, or of each size given.
TILES = [16, 32]
BLOCK_ROWS = [1, 2, 4, 8, 16]


def sweep_file(
    directory: Path,
    sizes: list[int],
    name: str = "space.yaml",
    tiles: list[int] = TILES,
    block_rows: list[int] = BLOCK_ROWS,
    variants: tuple[str, ...] = ("coalesced",),
) -> Path:
    path = directory / name
    params = {"size": sizes, "tile": tiles, "block_rows": block_rows}
    path.write_text(
        yaml.safe_dump({"suite": "transpose", "variants": list(variants), "params": params})
    )
    return path


def point(size: int, tile: int, block_rows: int) -> dict[str, Any]:
    return {
        "size": size,
        "rows": size,
        "cols": size,
        "tile": tile,
        "block_rows": block_rows,
        "dtype": "float32",
    }


def log_file(
    directory: Path,
    times: dict[tuple[int, int, int], float | Status],
    suite: str = "transpose",
    name: str = "space.jsonl",
    variant: str = "coalesced",
) -> Path:
    """A results log: each (size, tile, block_rows) with its median, or a failure's status."""
    path = directory / name
    log = JsonLinesLog(path, header={"suite": suite})
    for (size, tile, rows), outcome in times.items():
        if isinstance(outcome, Status):
            result = Result(suite, variant, point(size, tile, rows), outcome, reason="test")
        else:
            summary = {"median_ms": outcome, "rel_noise": 0.01}
            result = Result(suite, variant, point(size, tile, rows), Status.OK, summary=summary)
        log.write(result)
    log.close()
    return path


def ten_times(size: int = 64, offset: float = 0.0) -> dict[tuple[int, int, int], float]:
    """A hand-made space: time (ms) = 1 + |tile - 32| / 16 + |log2(block_rows) - 3| / 4,
    so tile 32 with 8 rows is the optimum (1.0 ms)."""
    import math

    return {
        (size, tile, rows): round(
            1 + offset + abs(tile - 32) / 16 + abs(math.log2(rows) - 3) / 4, 6
        )
        for tile in TILES
        for rows in BLOCK_ROWS
    }
