"""Matrix transpose suite: coalescing and bank conflicts, from a naive kernel to the copy ceiling."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpubench.model import hostmath
from gpubench.model.benchmark import (
    Benchmark,
    BufferRef,
    BufferSpec,
    Case,
    Launch,
    Param,
    Point,
    Tolerance,
    Variant,
    Work,
    ceil_div,
)

if TYPE_CHECKING:
    from gpubench.model.device import DeviceInfo

INT32_MAX = 2**31 - 1
DTYPES = {"float32": (np.float32, "float"), "float64": (np.float64, "double")}


class Transpose(Benchmark):
    name = "transpose"
    reference_params = frozenset()
    input_params = frozenset({"rows", "cols", "dtype"})
    description = (
        "out = in^T for a rows x cols matrix: coalescing, shared-memory tiles, bank conflicts"
    )
    memory_bound = True
    baseline = "naive"
    params = (
        Param(
            "size",
            int,
            8192,
            "rows and cols of a square matrix (rows/cols override)",
            minimum=1,
            maximum=INT32_MAX,
            maximum_reason="the kernels take int rows and cols",
        ),
        Param(
            "rows",
            int,
            None,
            "rows of the input (default: size)",
            minimum=1,
            derived_from="size",
            maximum=INT32_MAX,
            maximum_reason="the kernels take int rows and cols",
        ),
        Param(
            "cols",
            int,
            None,
            "cols of the input (default: size)",
            minimum=1,
            derived_from="size",
            maximum=INT32_MAX,
            maximum_reason="the kernels take int rows and cols",
        ),
        Param(
            "tile",
            int,
            32,
            "tile edge in elements (shared-memory tile is tile x tile)",
            choices=(16, 32, 64),
            compile_time=True,
        ),
        Param(
            "block_rows",
            int,
            8,
            "threads per tile column: each thread moves tile/block_rows elements",
            choices=(1, 2, 4, 8, 16, 32, 64),
            compile_time=True,
        ),
        Param("dtype", str, "float32", "element type", choices=tuple(DTYPES), compile_time=True),
    )
    variants = (
        Variant("copy", "same-shape copy, same thread layout: the ceiling", computes="copy"),
        Variant("naive", "coalesced reads, strided writes", computes="transpose"),
        Variant(
            "coalesced",
            "tile through shared memory: coalesced reads and writes, bank conflicts",
            computes="transpose",
        ),
        Variant("padded", "tile[T][T+1]: no bank conflicts", computes="transpose"),
        Variant(
            "diagonal",
            "padded + diagonal block order (against partition camping)",
            computes="transpose",
        ),
        Variant(
            "vectorized",
            "padded + 16-byte global loads and stores per thread",
            computes="transpose",
        ),
        Variant(
            "bulk_store",
            "padded + each output row segment written by one TMA bulk copy (sm_90+)",
            computes="transpose",
        ),
    )

    def resolve(self, point: Point) -> Point:
        point = dict(point)
        if point.get("rows") and point.get("cols"):
            point["size"] = None  # both given: size says nothing about this point
        point["rows"] = point.get("rows") or point["size"]
        point["cols"] = point.get("cols") or point["size"]
        return point

    def validate_point(self, point: Point) -> str | None:
        if point["tile"] % point["block_rows"]:
            return (
                f"block_rows={point['block_rows']} must divide tile={point['tile']} "
                "(add the constraint 'tile % block_rows == 0')"
            )
        return None

    def _dtype(self, point: Point) -> np.dtype:
        return np.dtype(DTYPES[point["dtype"]][0])

    def defines(self, point: Point) -> dict[str, str]:
        return {
            "DTYPE": DTYPES[point["dtype"]][1],
            "TILE": str(point["tile"]),
            "BLOCK_ROWS": str(point["block_rows"]),
        }

    def input_specs(self, point: Point) -> dict[str, BufferSpec]:
        return {"in": BufferSpec((point["rows"], point["cols"]), self._dtype(point))}

    def inputs(self, point: Point, rng: np.random.Generator) -> dict[str, np.ndarray]:
        # Uniform in [1, 2): distinct, non-zero values, so any misplaced element shows.
        matrix = rng.random((point["rows"], point["cols"]), dtype=self._dtype(point))
        matrix += 1
        return {"in": matrix}

    def case(
        self, variant: str, point: Point, device: DeviceInfo, inputs: dict[str, np.ndarray]
    ) -> Case:
        rows, cols, tile = point["rows"], point["cols"], point["tile"]
        dtype = self._dtype(point)
        threads_x = tile
        if variant == "vectorized":
            threads_x = tile // (16 // dtype.itemsize)
        grid = (ceil_div(cols, tile), ceil_div(rows, tile), 1)
        block = (threads_x, point["block_rows"], 1)
        args = (BufferRef("out"), BufferRef("in"), np.int32(rows), np.int32(cols))
        shape = (rows, cols) if variant == "copy" else (cols, rows)
        elements = rows * cols
        return Case(
            steps=[Launch(variant, grid, block, args)],
            outputs={"out": BufferSpec(shape, dtype)},
            # Each element is read once and written once.
            work=Work(bytes_moved=2 * elements * dtype.itemsize, elements=elements),
            tolerance=Tolerance(),  # moving elements is exact
        )

    def reference(
        self, computes: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        if computes == "copy":
            return {"out": inputs["in"]}
        return {"out": hostmath.transpose(inputs["in"])}


BENCHMARK = Transpose()
