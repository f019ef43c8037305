"""Streams suite: a batch of independent matrix products, each copy-in, multiply, copy-out,
run one after another from pageable or pinned memory, or overlapped on several streams."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gpubench.benchmark import (
    Benchmark,
    BufferSpec,
    Param,
    Point,
    Program,
    Tolerance,
    Variant,
    Work,
    ceil_div,
)
from gpubench.benchmarks._shared import dot_product_rtol

if TYPE_CHECKING:
    from gpubench.benchmark import ProgramContext
    from gpubench.device import DeviceInfo
    from gpubench.results import Result

OVERLAPPED = ("streams", "streams_depth_first")

# One operation of a run: (stream or None for the timing stream, kind, matrix, action).
Op = tuple[Any, str, int, Callable[[], None]]


@dataclass
class _Batch:
    """L products C_i = A_i·B_i with host↔device copies, issued as the variant says."""

    variant: str
    n: int
    matrices: int
    streams: int
    block: int
    _ctx: Any = None
    _state: dict[str, Any] = field(default_factory=dict)

    # -- set-up (on the first, checked run) ---------------------------------------------------
    def _setup(self, ctx: ProgramContext) -> None:
        cuda, n, count = ctx.driver, self.n, self.matrices
        pinned = self.variant != "sequential"
        nbytes = n * n * 4

        def host() -> np.ndarray:
            return (
                cuda.pagelocked_empty((n, n), np.float32)
                if pinned
                else np.empty((n, n), np.float32)
            )

        state = self._state
        state["hA"] = [host() for _ in range(count)]
        state["hB"] = [host() for _ in range(count)]
        state["hC"] = [host() for _ in range(count)]
        for i in range(count):
            state["hA"][i][:] = ctx.host_inputs["A"][i]
            state["hB"][i][:] = ctx.host_inputs["B"][i]
            state["hC"][i][:] = np.nan  # poison: a product never copied back stays NaN
        state["dA"] = [cuda.mem_alloc(nbytes) for _ in range(count)]
        state["dB"] = [cuda.mem_alloc(nbytes) for _ in range(count)]
        state["dC"] = [cuda.mem_alloc(nbytes) for _ in range(count)]
        state["streams"] = [cuda.Stream() for _ in range(self.streams)]
        state["fork"] = cuda.Event()
        state["joins"] = [cuda.Event() for _ in range(self.streams)]
        kernel = ctx.module.function("tiled")
        kernel.prepare("PPPiii")
        state["kernel"] = kernel
        if self.variant in ("copies_only", "kernels_only"):
            # These time one half of the work; the other half runs once here so that C is right.
            for i in range(count):
                cuda.memcpy_htod(state["dA"][i], state["hA"][i])
                cuda.memcpy_htod(state["dB"][i], state["hB"][i])
                self._multiply(i, ctx.stream)
            ctx.stream.synchronize()

    def _multiply(self, i: int, stream: Any) -> None:
        s, grid = self._state, (ceil_div(self.n, self.block), ceil_div(self.n, self.block))
        s["kernel"].prepared_async_call(grid, (self.block, self.block, 1), stream,
                                        s["dC"][i], s["dA"][i], s["dB"][i], self.n, self.n, self.n)  # fmt: skip

    def _ops(self, ctx: ProgramContext) -> list[Op]:
        """The run's operations in issue order."""
        cuda, s, count, v = ctx.driver, self._state, self.matrices, self.variant
        main = ctx.stream

        def h2d(i: int, stream: Any) -> list[Op]:
            if v in ("sequential", "sequential_pinned"):  # synchronous copies
                return [(None, "H2D", i, lambda: (cuda.memcpy_htod(s["dA"][i], s["hA"][i]),
                                                  cuda.memcpy_htod(s["dB"][i], s["hB"][i])))]  # fmt: skip
            return [(stream, "H2D", i, lambda: (cuda.memcpy_htod_async(s["dA"][i], s["hA"][i], stream),
                                                cuda.memcpy_htod_async(s["dB"][i], s["hB"][i], stream)))]  # fmt: skip

        def kernel(i: int, stream: Any) -> list[Op]:
            return [(stream, "kernel", i, lambda: self._multiply(i, stream))]

        def d2h(i: int, stream: Any) -> list[Op]:
            if v in ("sequential", "sequential_pinned"):
                return [(None, "D2H", i, lambda: cuda.memcpy_dtoh(s["hC"][i], s["dC"][i]))]
            return [
                (stream, "D2H", i, lambda: cuda.memcpy_dtoh_async(s["hC"][i], s["dC"][i], stream))
            ]

        ops: list[Op] = []
        if v in ("sequential", "sequential_pinned"):
            for i in range(count):
                ops += h2d(i, main) + kernel(i, main) + d2h(i, main)
        elif v == "copies_only":
            for i in range(count):
                ops += h2d(i, main) + d2h(i, main)
        elif v == "kernels_only":
            for i in range(count):
                ops += kernel(i, main)
        elif v == "streams":  # breadth-first: all copies in, all kernels, all copies out
            pick = lambda i: s["streams"][i % self.streams]  # noqa: E731
            for stage in (h2d, kernel, d2h):
                for i in range(count):
                    ops += stage(i, pick(i))
        else:  # streams_depth_first: each matrix's in, kernel, out on its stream
            for i in range(count):
                stream = s["streams"][i % self.streams]
                ops += h2d(i, stream) + kernel(i, stream) + d2h(i, stream)
        return ops

    def _fork(self, ctx: ProgramContext) -> None:
        s = self._state
        s["fork"].record(ctx.stream)
        for stream in s["streams"]:
            stream.wait_for_event(s["fork"])

    def _join(self, ctx: ProgramContext) -> None:
        s = self._state
        for stream, event in zip(s["streams"], s["joins"], strict=True):
            event.record(stream)
            ctx.stream.wait_for_event(event)

    # -- the Program interface ----------------------------------------------------------------
    def enqueue(self, ctx: ProgramContext) -> None:
        if self._ctx is None:
            self._ctx = ctx
            self._setup(ctx)
        overlapped = self.variant in OVERLAPPED
        if overlapped:
            self._fork(ctx)
        for _, _, _, action in self._ops(ctx):
            action()
        if overlapped:
            self._join(ctx)

    def host_outputs(self) -> dict[str, np.ndarray]:
        ctx, s = self._ctx, self._state
        ctx.stream.synchronize()
        if self.variant == "kernels_only":
            for i in range(self.matrices):
                ctx.driver.memcpy_dtoh(s["hC"][i], s["dC"][i])
        return {"C": np.stack([np.array(c, copy=True) for c in s["hC"]])}

    def timeline(self) -> list[dict[str, Any]]:
        """One run with an event pair around every operation, in ms from the run's start."""
        ctx = self._ctx
        cuda = ctx.driver
        start = cuda.Event()
        start.record(ctx.stream)
        overlapped = self.variant in OVERLAPPED
        if overlapped:
            self._fork(ctx)
        marks = []
        for stream, kind, i, action in self._ops(ctx):
            on = stream or ctx.stream
            before, after = cuda.Event(), cuda.Event()
            before.record(on)
            action()
            after.record(on)
            index = self._state["streams"].index(on) if on in self._state["streams"] else -1
            marks.append((index, kind, i, before, after))
        if overlapped:
            self._join(ctx)
        ctx.stream.synchronize()
        return [
            {"stream": index, "op": kind, "matrix": i,
             "start_ms": before.time_since(start), "end_ms": after.time_since(start)}
            for index, kind, i, before, after in marks
        ]  # fmt: skip

    def close(self) -> None:
        s = self._state
        for name in ("dA", "dB", "dC"):
            for buffer in s.get(name, []):
                buffer.free()
        if self.variant != "sequential":
            for name in ("hA", "hB", "hC"):
                for array in s.get(name, []):
                    array.base.free()
        s.clear()
        self._ctx = None


class Streams(Benchmark):
    name = "streams"
    description = "L matrix products with host↔device copies: sequential vs overlapped on streams"
    memory_bound = False
    baseline = "sequential"
    extra_columns = (("overlap_efficiency", "overlap", "{:.0%}"),)
    params = (
        Param("size", int, 1728, "matrix edge n (each product is n x n times n x n)", minimum=1),
        Param("block", int, 16, "tiled kernel's tile edge", choices=(8, 16, 32), compile_time=True),
        Param("matrices", int, 10, "products in the batch (L)", minimum=1),
        Param("streams", int, 4, "CUDA streams for the overlapped variants", minimum=1),
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
        Variant("copies_only", "just the copies (pinned, one stream): T_copies", "C"),
        Variant("kernels_only", "just the kernels (one stream): T_kernels", "C"),
    )

    def defines(self, point: Point) -> dict[str, str]:
        return {"BLOCK": str(point["block"])}

    def inputs(self, point: Point, rng: np.random.Generator) -> dict[str, np.ndarray]:
        shape = (point["matrices"], point["size"], point["size"])
        a = rng.random(shape, dtype=np.float32)
        a += np.float32(0.5)
        b = rng.random(shape, dtype=np.float32)
        b += np.float32(0.5)
        return {"A": a, "B": b}

    def outputs(self, variant: str, point: Point) -> dict[str, BufferSpec]:
        return {}  # the products land in host memory: Program.host_outputs

    def launches(self, variant: str, point: Point, device: DeviceInfo) -> list[Program]:
        body = _Batch(variant, point["size"], point["matrices"], point["streams"], point["block"])
        return [Program(variant, body)]

    def reference(
        self, computes: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        return {"C": np.matmul(inputs["A"].astype(np.float64), inputs["B"].astype(np.float64))}

    def tolerance(self, variant: str, point: Point, device: DeviceInfo) -> Tolerance:
        return Tolerance(rtol=dot_product_rtol(point["size"]))  # as matmul

    def work(self, variant: str, point: Point) -> Work:
        n, count = point["size"], point["matrices"]
        return Work(bytes_moved=3 * n * n * 4 * count, flops=2 * n**3 * count)

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
                r.metrics["overlap_efficiency"] = (sequential - times[r.variant]) / (
                    sequential - floor
                )


BENCHMARK = Streams()
