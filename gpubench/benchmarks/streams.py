"""Streams suite: a batch of independent matrix products, each copy-in, multiply, copy-out,
run one after another from pageable or pinned memory, or overlapped on several streams."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from gpubench.benchmarks._shared import (
    VALUE_KINDS,
    dot_product_rtol,
    exact_limit_problem,
    matrix_values,
)
from gpubench.model.benchmark import (
    Benchmark,
    BufferRef,
    BufferSpec,
    Case,
    Copy,
    Launch,
    Metric,
    Param,
    Point,
    Tolerance,
    Variant,
    Work,
    ceil_div,
)

if TYPE_CHECKING:
    from gpubench.model.device import DeviceInfo
    from gpubench.model.results import Result

OVERLAPPED = ("streams", "streams_depth_first", "streams_depth_first_bands")
SEQUENTIAL = ("sequential", "sequential_pinned")
F32 = np.dtype(np.float32)
OVERLAP = Metric("overlap_efficiency", "overlap", "", "{:.0%}")


@dataclass(frozen=True)
class _Batch:
    """The steps of L products of n×n matrices with their copies, on `streams` streams."""

    n: int
    count: int
    block: int
    streams: int
    synchronous: bool
    bands: int = 1

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.count, self.n, self.n)

    @property
    def size(self) -> int:
        return self.n * self.n * 4  # bytes of one matrix

    @property
    def flops(self) -> int:
        return 2 * self.n**3 * self.count

    @property
    def traffic(self) -> int:
        return 3 * self.size * self.count  # A and B in, C out

    def multiply(
        self, i: int, stream: int, on: tuple[str, str, str] = ("dC", "dA", "dB")
    ) -> Launch:
        c, a, b = (BufferRef(name, i * self.size) for name in on)
        n = np.int32(self.n)
        grid = (ceil_div(self.n, self.block), ceil_div(self.n, self.block), 1)
        return Launch(
            "tiled",
            grid,
            (self.block, self.block, 1),
            (c, a, b, n, n, n),
            stream=stream,
            label=str(i),
        )

    def copy_in(self, i: int, stream: int) -> list[Copy]:
        return [
            Copy(
                name,
                f"d{name}",
                self.size,
                i * self.size,
                i * self.size,
                stream,
                self.synchronous,
                str(i),
            )
            for name in ("A", "B")
        ]

    def copy_out(self, i: int, stream: int, source: str = "dC") -> list[Copy]:
        return [
            Copy(
                source,
                "C",
                self.size,
                i * self.size,
                i * self.size,
                stream,
                self.synchronous,
                str(i),
            )
        ]

    def row_bands(self) -> list[tuple[int, int]]:
        """(first row, rows) of each of the `bands` row bands of a product (fewer when n is
        smaller than `bands`): C's band r0.. needs A's band r0.. and all of B."""
        rows = ceil_div(self.n, min(self.bands, self.n))
        return [(r0, min(rows, self.n - r0)) for r0 in range(0, self.n, rows)]

    def banded(self, i: int, stream: int) -> list[Copy | Launch]:
        """One product on one stream in row bands: B in, then per band A's rows in, the
        band's kernel, C's rows out. The first kernel starts after B and one band of A instead
        of both matrices, and the last copy out is one band: the pipeline fills and drains in
        a band (the bands serialize on their stream; the other streams fill the gaps)."""
        label, row = str(i), self.n * 4  # bytes of one row
        steps: list[Copy | Launch] = [
            Copy("B", "dB", self.size, i * self.size, i * self.size, stream, False, label)
        ]
        grid_x = ceil_div(self.n, self.block)
        for r0, rows in self.row_bands():
            at, nbytes = i * self.size + r0 * row, rows * row
            c, a, b = BufferRef("dC", at), BufferRef("dA", at), BufferRef("dB", i * self.size)
            args = (c, a, b, np.int32(rows), np.int32(self.n), np.int32(self.n))
            grid = (grid_x, ceil_div(rows, self.block), 1)
            steps += [
                Copy("A", "dA", nbytes, at, at, stream, False, label),
                Launch("tiled", grid, (self.block,) * 2 + (1,), args, stream=stream, label=label),
                Copy("dC", "C", nbytes, at, at, stream, False, label),
            ]
        return steps

    def pipeline(self, variant: str) -> list[Copy | Launch]:
        def lane(i: int) -> int:
            return 1 + i % self.streams if variant in OVERLAPPED else 0

        count = range(self.count)
        if variant == "streams":  # breadth-first: all copies in, all kernels, all copies out
            return [
                *(c for i in count for c in self.copy_in(i, lane(i))),
                *(self.multiply(i, lane(i)) for i in count),
                *(c for i in count for c in self.copy_out(i, lane(i))),
            ]
        if variant == "streams_depth_first_bands":
            return [step for i in count for step in self.banded(i, lane(i))]
        steps: list[Copy | Launch] = []
        for i in count:  # sequential, sequential_pinned, streams_depth_first: matrix by matrix
            steps += [
                *self.copy_in(i, lane(i)),
                self.multiply(i, lane(i)),
                *self.copy_out(i, lane(i)),
            ]
        return steps


class Streams(Benchmark):
    name = "streams"
    reference_params = frozenset()
    input_params = frozenset({"size", "matrices", "values"})
    description = "L matrix products with host↔device copies: sequential vs overlapped on streams"
    memory_bound = False
    baseline = "sequential"
    metrics = (OVERLAP,)
    params = (
        Param(
            "size",
            int,
            1728,
            "matrix edge n (each product is n x n times n x n)",
            minimum=1,
            maximum=2**31 - 1,
            maximum_reason="the kernel takes int sizes",
        ),
        Param("block", int, 16, "tiled kernel's tile edge", choices=(8, 16, 32), compile_time=True),
        Param("matrices", int, 10, "products in the batch (L)", minimum=1),
        Param("streams", int, 4, "CUDA streams for the overlapped variants", minimum=1),
        Param(
            "bands",
            int,
            4,
            "row bands per product in streams_depth_first_bands",
            minimum=1,
            maximum=1024,
            maximum_reason="each band is three steps per product; past 16 they only cost",
        ),
        Param(
            "values",
            str,
            "integers",
            "matrix entries: integers (exact check) or reals",
            choices=VALUE_KINDS,
        ),
    )
    variants = (
        Variant("sequential", "pageable memory, synchronous copies, one matrix after another", "C"),
        Variant(
            "sequential_pinned", "the same from pinned memory (the pinned-memory gain alone)", "C"
        ),
        Variant(
            "streams", "async copies from pinned memory on N streams, issued breadth-first", "C"
        ),
        Variant("streams_depth_first", "the same issued per matrix: in, kernel, out", "C"),
        Variant(
            "streams_depth_first_bands",
            "depth-first, each product in row bands: the pipeline fills and drains in a band",
            "C",
        ),
        Variant(
            "copies_only", "just the copies (pinned, one stream; A comes back): T_copies", "copy"
        ),
        Variant("kernels_only", "just the kernels (one stream): T_kernels", "C"),
    )

    def input_specs(self, point: Point) -> dict[str, BufferSpec]:
        shape = (point["matrices"], point["size"], point["size"])
        return {"A": BufferSpec(shape, F32), "B": BufferSpec(shape, F32)}

    def inputs(self, point: Point, rng: np.random.Generator) -> dict[str, np.ndarray]:
        shape = (point["matrices"], point["size"], point["size"])
        kind = point["values"]
        return {"A": matrix_values(kind, shape, rng), "B": matrix_values(kind, shape, rng)}

    def validate_point(self, point: Point) -> str | None:
        return exact_limit_problem(point["values"], point["size"])

    def case(
        self, variant: str, point: Point, device: DeviceInfo, inputs: dict[str, np.ndarray]
    ) -> Case:
        plan = _Batch(
            point["size"],
            point["matrices"],
            point["block"],
            point["streams"],
            synchronous=variant in SEQUENTIAL,
            bands=point["bands"],
        )
        # As matmul: exact for small integers, the float32 bound for reals.
        tolerance = (
            Tolerance()
            if point["values"] == "integers"
            else Tolerance(rtol=dot_product_rtol(point["size"]))
        )
        if variant == "kernels_only":
            # Just the products, on data already on the device: T_kernels.
            return Case(
                steps=[plan.multiply(i, 0, on=("C", "A", "B")) for i in range(plan.count)],
                input_locations={"A": "device", "B": "device"},
                outputs={"C": BufferSpec(plan.shape, F32)},
                work=Work(bytes_moved=0, flops=plan.flops),
                tolerance=tolerance,
            )
        host = "pageable" if variant == "sequential" else "pinned"
        scratch = {"dA": BufferSpec(plan.shape, F32), "dB": BufferSpec(plan.shape, F32)}
        if variant == "copies_only":
            # Just the copies, with the traffic of the full run (A and B in, one matrix out),
            # on one stream: T_copies. What comes back is A, so the check is exact.
            steps = [
                c
                for i in range(plan.count)
                for c in (*plan.copy_in(i, 0), *plan.copy_out(i, 0, source="dA"))
            ]
            return Case(
                steps=steps,
                input_locations={"A": host, "B": host},
                outputs={"C": BufferSpec(plan.shape, F32, location=host)},
                scratch=scratch,
                work=Work(bytes_moved=plan.traffic),
                tolerance=Tolerance(),
            )
        scratch["dC"] = BufferSpec(plan.shape, F32)
        return Case(
            steps=plan.pipeline(variant),
            input_locations={"A": host, "B": host},
            outputs={"C": BufferSpec(plan.shape, F32, location=host)},
            scratch=scratch,
            work=Work(bytes_moved=plan.traffic, flops=plan.flops),
            tolerance=tolerance,
        )

    def reference(
        self, computes: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        if computes == "copy":
            return {"C": inputs["A"]}
        return {"C": np.matmul(inputs["A"].astype(np.float64), inputs["B"].astype(np.float64))}

    def point_metrics(self, results: list[Result]) -> None:
        """Overlap efficiency = (T_sequential_pinned − T) / (T_sequential_pinned −
        max(T_copies, T_kernels)): 1 when the overlapped run takes only as long as its larger
        half, 0 when it is no faster than the pinned sequential run."""
        times = {r.variant: r.median_ms for r in results if r.status.is_measured}
        needed = ("sequential_pinned", "copies_only", "kernels_only")
        if not all(name in times for name in needed):
            return
        sequential, floor = (
            times["sequential_pinned"],
            max(times["copies_only"], times["kernels_only"]),
        )
        if sequential <= floor:
            return
        for r in results:
            if r.variant in OVERLAPPED and r.variant in times:
                r.metrics[OVERLAP.key] = (sequential - times[r.variant]) / (sequential - floor)


BENCHMARK = Streams()
