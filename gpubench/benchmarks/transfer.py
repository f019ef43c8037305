"""Transfer suite: host→device, device→host and device→device copy bandwidth, from pageable
and from pinned host memory, 1 KiB to 1 GiB; every copy checked."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gpubench.benchmark import Benchmark, BufferSpec, Param, Point, Program, Variant, Work

if TYPE_CHECKING:
    from gpubench.benchmark import ProgramContext
    from gpubench.device import DeviceInfo

# Random bytes are drawn below this value, so a byte still holding the 0xFF poison is caught.
POISON = 0xFF


@dataclass
class _Copy:
    """One copy per run on the harness's stream. Pinned host buffers come from
    cuMemHostAlloc (page-locked: the copy engine reads them directly); pageable ones are plain
    NumPy arrays, which the driver stages through its own pinned buffer."""

    direction: str  # "h2d", "d2h", "d2d"
    pinned: bool
    nbytes: int
    _host: Any = None
    _context: Any = None
    _pinned_allocation: Any = field(default=None, repr=False)

    def _host_buffer(self, ctx: ProgramContext) -> np.ndarray:
        if self._host is None:
            if self.pinned:
                self._host = ctx.driver.pagelocked_empty(self.nbytes, np.uint8)
            else:
                self._host = np.empty(self.nbytes, np.uint8)
            if self.direction == "h2d":
                self._host[:] = ctx.host_inputs["src"]
            else:
                self._host[:] = POISON
        return self._host

    def enqueue(self, ctx: ProgramContext) -> None:
        self._context = ctx
        cuda, stream = ctx.driver, ctx.stream
        if self.direction == "d2d":
            cuda.memcpy_dtod_async(ctx.pointers["dst"], ctx.pointers["src"], self.nbytes, stream)
        elif self.direction == "h2d":
            cuda.memcpy_htod_async(ctx.pointers["dst"], self._host_buffer(ctx), stream)
        else:
            cuda.memcpy_dtoh_async(self._host_buffer(ctx), ctx.pointers["src"], stream)

    def host_outputs(self) -> dict[str, np.ndarray]:
        if self.direction != "d2h":
            return {}
        self._context.stream.synchronize()
        return {"dst": np.array(self._host, copy=True)}

    def close(self) -> None:
        if self._host is not None and self.pinned:
            self._host.base.free()  # page-locked memory is scarce: give it back now
        self._host = None


class Transfer(Benchmark):
    name = "transfer"
    description = "copy bandwidth host↔device and device↔device, pageable vs pinned host memory"
    has_kernels = False
    memory_bound = True
    baseline = "h2d_pageable"
    params = (Param("bytes", int, 256 * 2**20, "bytes per copy", minimum=1),)
    variants = (
        Variant("h2d_pageable", "host→device from a pageable NumPy array", "copy"),
        Variant("h2d_pinned", "host→device from page-locked memory", "copy"),
        Variant("d2h_pageable", "device→host into a pageable NumPy array", "copy"),
        Variant("d2h_pinned", "device→host into page-locked memory", "copy"),
        Variant("d2d", "device→device (bandwidth counts the read and the write)", "copy"),
    )

    def defines(self, point: Point) -> dict[str, str]:
        return {}

    def inputs(self, point: Point, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"src": rng.integers(0, POISON, size=point["bytes"], dtype=np.uint8)}

    def outputs(self, variant: str, point: Point) -> dict[str, BufferSpec]:
        if variant.startswith("d2h"):
            return {}  # the destination is host memory: Program.host_outputs
        return {"dst": BufferSpec((point["bytes"],), np.dtype(np.uint8))}

    def launches(self, variant: str, point: Point, device: DeviceInfo) -> list[Program]:
        direction = variant.split("_")[0]
        return [Program(variant, _Copy(direction, variant.endswith("pinned"), point["bytes"]))]

    def reference(
        self, computes: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        return {"dst": inputs["src"]}

    def work(self, variant: str, point: Point) -> Work:
        nbytes = point["bytes"]
        return Work(bytes_moved=2 * nbytes if variant == "d2d" else nbytes)


BENCHMARK = Transfer()
