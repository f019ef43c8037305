"""A Repeat-until-converged toy on the GPU: values count down to zero; the iteration count
(largest value + 1) and the work (every value read and written per iteration) come from the
run.

    gpubench run tests/suites/converge.py --top 100
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
    Repeat,
    Variant,
    Work,
    ceil_div,
)


class Converge(Benchmark):
    name = "converge"
    description = "count down to zero, one step per iteration, until nothing changes"
    baseline = "count_down"
    memory_bound = False
    source_file: ClassVar[str] = str(Path(__file__).with_name("converge.cu"))
    params = (
        Param("n", int, 1 << 20, "values", minimum=1, maximum=2**32 - 1),
        Param("top", int, 50, "the largest value (iterations = top + 1)", minimum=0),
        Param("max_iterations", int, 1000, "Repeat's cap", minimum=1),
    )
    variants = (
        Variant("count_down", "converges after top + 1 iterations", "zeros"),
        Variant("never_done", "always raises the flag: stops at max_iterations", "zeros"),
    )

    def inputs(self, point, rng):
        values = rng.integers(0, point["top"] + 1, size=point["n"], dtype=np.int32)
        values[rng.integers(point["n"])] = point["top"]
        return {"values": values}

    def case(self, variant, point, device, inputs):
        n = point["n"]
        launch = Launch(variant, (ceil_div(n, 256), 1, 1), (256, 1, 1),
                        (BufferRef("values"), BufferRef("changed"), np.uint32(n)))  # fmt: skip
        return Case(
            steps=[Repeat((launch,), flag="changed", max_iterations=point["max_iterations"])],
            outputs={"values": BufferSpec.like(inputs["values"], init="input")},
            scratch={"changed": BufferSpec((1,), np.dtype(np.int32))},
            work=lambda record: Work(
                bytes_moved=8 * n * record.iterations, elements=n * record.iterations
            ),
        )

    def reference(self, computes, point, inputs):
        return {"values": np.zeros_like(inputs["values"])}


BENCHMARK = Converge()
