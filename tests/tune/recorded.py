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
    watts: dict[tuple[int, int, int], float] | None = None,
) -> Path:
    """A results log: each (size, tile, block_rows) with its median, or a failure's status;
    with `watts`, each measured one with an energy reading at that power (a run's energy:
    watts x median)."""
    path = directory / name
    log = JsonLinesLog(path, header={"suite": suite})
    for (size, tile, rows), outcome in times.items():
        if isinstance(outcome, Status):
            result = Result(suite, variant, point(size, tile, rows), outcome, reason="test")
        else:
            summary = {"median_ms": outcome, "rel_noise": 0.01}
            result = Result(suite, variant, point(size, tile, rows), Status.OK, summary=summary)
            if watts is not None:
                result.energy = reading(watts[(size, tile, rows)], outcome)
        log.write(result)
    log.close()
    return path


def reading(watts: float, median_ms: float) -> dict[str, Any]:
    """An energy reading of one run at `watts` for `median_ms` (noise 1%)."""
    from gpubench.model.energy import EnergyReading

    joules = watts * median_ms / 1000.0
    runs = round(1000.0 / median_ms)
    return EnergyReading(
        joules_per_run=joules,
        average_watts=watts,
        idle_watts=50.0,
        above_idle_joules_per_run=(watts - 50.0) * median_ms / 1000.0,
        sm_clock_mhz=1980.0,
        temperature_c=50.0,
        window_s=1.0,
        runs=runs,
        time_per_run_ms=median_ms,
        duty=1.0,
        intervals=9,
        counter_period_ms=100.0,
        noise=0.01,
        counter_joules=0.9 * watts,
        sampled_joules=None,
    ).to_dict()


def frugal_watts(size: int = 64) -> dict[tuple[int, int, int], float]:
    """Power for ten_times' space where the fastest is not the most frugal: 200 W but for
    three configurations. By time tile 32 with 8 rows wins (1 ms, 240 mJ); by energy tile 16
    with 8 rows (2 ms at 80 W: 160 mJ); by the energy-delay product tile 32 with 4 rows
    (1.25 ms at 150 W: 187.5 mJ, 234.4 mJ·ms, against the fastest's 240 mJ·ms)."""
    watts = dict.fromkeys(ten_times(size), 200.0)
    watts |= {(size, 32, 8): 240.0, (size, 16, 8): 80.0, (size, 32, 4): 150.0}
    return watts


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
