"""Loop unrolling: one integer loop unrolled 1 to 16 times and with four independent
accumulators; time beside the registers each version takes (`gpubench inspect unroll` and
`--profile` give the instructions)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpubench.benchmarks._shared import THREADS_PER_BLOCK, WORDS, OneThreadPerWord
from gpubench.model.benchmark import (
    Case,
    Param,
    Point,
    Variant,
)

if TYPE_CHECKING:
    from gpubench.model.device import DeviceInfo

MULTIPLIER = np.uint32(2654435761)


class Unroll(OneThreadPerWord):
    name = "unroll"
    reference_params = frozenset({"work"})
    input_params = frozenset({"n"})
    description = "loop unrolling 1-16x and independent accumulators: time, registers"
    memory_bound = False
    show_resources = True
    baseline = "unroll_1"
    params = (
        WORDS,
        Param("work", int, 256, "loop trips per element (known only at run time)", minimum=0,
              maximum=1 << 16),
        THREADS_PER_BLOCK,
    )  # fmt: skip
    variants = (
        *(Variant(f"unroll_{f}", f"#pragma unroll {f}" + (": the loop as written" if f == 1
                  else ""), "sum") for f in (1, 2, 4, 8, 16)),
        Variant("independent_accumulators", "four sums that do not wait for each other",
                "sum"),
    )  # fmt: skip

    def case(
        self, variant: str, point: Point, device: DeviceInfo, inputs: dict[str, np.ndarray]
    ) -> Case:
        # Useful work: an xor, a multiply and an add per trip.
        return self.word_case(variant, point, ops_per_step=3)

    def reference(
        self, computes: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        x = inputs["in"]
        total = np.zeros_like(x)
        for k in range(point["work"]):
            total += (x ^ np.uint32(k)) * MULTIPLIER
        return {"out": total}


BENCHMARK = Unroll()
