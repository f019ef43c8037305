"""Transfer suite: host→device, device→host and device→device copy bandwidth, from pageable
and from pinned host memory, 1 KiB to 1 GiB; every copy checked."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpubench.model.benchmark import Benchmark, BufferSpec, Case, Copy, Param, Point, Variant, Work

if TYPE_CHECKING:
    from gpubench.model.device import DeviceInfo

# Random bytes are drawn below this value, so a byte still holding the 0xFF poison is caught.
POISON = 0xFF
BYTE = np.dtype(np.uint8)


class Transfer(Benchmark):
    name = "transfer"
    reference_params = frozenset()
    input_params = frozenset({"bytes"})
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

    def input_specs(self, point: Point) -> dict[str, BufferSpec]:
        return {"src": BufferSpec((point["bytes"],), BYTE)}

    def inputs(self, point: Point, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"src": rng.integers(0, POISON, size=point["bytes"], dtype=np.uint8)}

    def case(
        self, variant: str, point: Point, device: DeviceInfo, inputs: dict[str, np.ndarray]
    ) -> Case:
        """One copy on the timing stream. Pinned host buffers are page-locked (the copy engine
        reads them directly); pageable ones are ordinary memory, which CUDA stages
        through a pinned buffer of its own."""
        direction, _, host = variant.partition("_")
        nbytes = point["bytes"]
        src_at = host if direction == "h2d" else "device"
        dst_at = host if direction == "d2h" else "device"
        return Case(
            steps=[Copy("src", "dst", label=direction.upper())],
            input_locations={"src": src_at},
            outputs={"dst": BufferSpec((nbytes,), BYTE, location=dst_at)},
            work=Work(bytes_moved=2 * nbytes if direction == "d2d" else nbytes),
        )

    def reference(
        self, computes: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        return {"dst": inputs["src"]}


BENCHMARK = Transfer()
