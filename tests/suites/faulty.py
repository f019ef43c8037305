"""A suite of kernels that go wrong on purpose (out-of-bounds writes, endless loops, compile
errors, impossible launch shapes), for the harness's isolation tests on a GPU.

    gpubench sweep tests/suites/faulty.yaml      # 20 points, 3 of them broken
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import numpy as np

from gpubench.model.benchmark import (
    Benchmark,
    BufferRef,
    BufferSpec,
    Case,
    Launch,
    Param,
    Point,
    Variant,
    Work,
    ceil_div,
)  # fmt: skip

# case → FAULT define: which points of a 20-point sweep break, and how.
FAULTS = {6: 1, 12: 2, 17: 3}  # out of bounds, endless, compile error
# Further sticky errors, outside the 20-point sweep: misaligned address, trap, breakpoint.
FAULTS.update({21: 4, 22: 5, 23: 6})


class Faulty(Benchmark):
    name = "faulty"
    description = "out = 2 * in + 1, with cases that crash, hang or fail to compile"
    baseline = "kernel"
    source_file: ClassVar[str] = str(Path(__file__).with_name("faulty.cu"))
    params = (
        Param(
            "case",
            int,
            0,
            "which point of the sweep (6 crashes, 12 hangs, 17 fails to compile)",
            minimum=0,
            compile_time=True,
        ),
        Param("n", int, 1 << 24, "elements", minimum=1),
        Param("unroll", int, 4, "elements per thread (compile-time)", minimum=1, compile_time=True),
    )
    variants = (
        Variant("kernel", "the kernel of this case", "affine"),
        Variant("register_hog", "needs more registers than 1024 threads can have", "hog"),
        Variant("shared_hog", "asks for 256 KB of dynamic shared memory", "hog"),
    )

    def defines(self, point: Point) -> dict[str, str]:
        return {"FAULT": str(FAULTS.get(point["case"], 0)), "UNROLL": str(point["unroll"])}

    def inputs(self, point: Point, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"in": rng.random(point["n"], dtype=np.float32) + 1}

    def case(self, variant: str, point: Point, device, inputs) -> Case:
        n = point["n"]
        args = (BufferRef("out"), BufferRef("in"), np.uint32(n))
        if variant == "register_hog":
            launch = Launch(variant, (1, 1, 1), (1024, 1, 1), args)
        elif variant == "shared_hog":
            launch = Launch(variant, (1, 1, 1), (256, 1, 1), args, shared_bytes=256 * 1024)
        else:
            launch = Launch(variant, (ceil_div(n, 256 * point["unroll"]), 1, 1), (256, 1, 1), args)
        return Case(
            steps=[launch],
            outputs={"out": BufferSpec((n,), np.dtype(np.float32))},
            work=Work(bytes_moved=8 * n, elements=n),
        )

    def reference(
        self, computes: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        return {"out": 2 * inputs["in"] + 1}


BENCHMARK = Faulty()
