"""In-place saxpy on the GPU: y is an in-out buffer, on the device or in pinned host memory
copied in and out on a side stream. No defines(): BLOCK comes from the compile-time param.

    gpubench run tests/suites/saxpy.py --n 1000003
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
    Copy,
    Launch,
    Param,
    Variant,
    Work,
    ceil_div,
)

A = np.float32(2.5)


class Saxpy(Benchmark):
    name = "saxpy"
    description = "y = a*x + y in place"
    baseline = "in_place"
    source_file: ClassVar[str] = str(Path(__file__).with_name("saxpy.cu"))
    params = (
        Param("n", int, 1 << 20, "elements", minimum=1, maximum=2**32 - 1),
        Param("block", int, 256, "threads per block", choices=(128, 256, 512), compile_time=True),
    )
    variants = (
        Variant("in_place", "y on the device, updated in place", "axpy"),
        Variant("staged", "y in pinned host memory: copy in, saxpy, copy out on stream 1", "axpy"),
    )

    def input_specs(self, point):
        spec = BufferSpec((point["n"],), np.dtype(np.float32))
        return {"x": spec, "y": spec}

    def inputs(self, point, rng):
        n = point["n"]
        return {"x": rng.random(n, dtype=np.float32) + 1, "y": rng.random(n, dtype=np.float32) + 1}

    def case(self, variant, point, device, inputs):
        n, block = point["n"], point["block"]
        grid = (ceil_div(n, block), 1, 1)
        if variant == "in_place":
            args = (BufferRef("y"), BufferRef("x"), A, np.uint32(n))
            return Case(
                steps=[Launch("saxpy", grid, (block, 1, 1), args)],
                outputs={"y": BufferSpec.like(inputs["y"], init="input")},
                work=Work(bytes_moved=12 * n, flops=2 * n, elements=n),
            )
        args = (BufferRef("dy"), BufferRef("x"), A, np.uint32(n))
        return Case(
            steps=[
                Copy("y", "dy", stream=1, label="y in"),
                Launch("saxpy", grid, (block, 1, 1), args, stream=1),
                Copy("dy", "y", stream=1, label="y out"),
            ],
            outputs={"y": BufferSpec.like(inputs["y"], location="pinned", init="input")},
            scratch={"dy": BufferSpec.like(inputs["y"])},
            work=Work(bytes_moved=12 * n, flops=2 * n, elements=n),
        )

    def reference(self, computes, point, inputs):
        return {"y": A * inputs["x"] + inputs["y"]}


BENCHMARK = Saxpy()
