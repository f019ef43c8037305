"""Loop unrolling: one integer loop unrolled 1 to 16 times and with four independent
accumulators; time beside the registers each version takes (`gpubench inspect unroll` and
`--profile` give the instructions)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpubench.benchmark import (
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
)

if TYPE_CHECKING:
    from gpubench.device import DeviceInfo

MULTIPLIER = np.uint32(2654435761)


class Unroll(Benchmark):
    name = "unroll"
    description = "loop unrolling 1-16x and independent accumulators: time, registers"
    memory_bound = False
    show_resources = True
    baseline = "unroll_1"
    params = (
        Param("n", int, 1 << 22, "elements (one thread each)", minimum=1,
              maximum=2**32 - 1, maximum_reason="the kernels take an unsigned int n"),
        Param("work", int, 256, "loop trips per element (known only at run time)", minimum=0,
              maximum=1 << 16),
        Param("block", int, 256, "threads per block", choices=(64, 128, 256, 512, 1024)),
    )  # fmt: skip
    variants = (
        *(Variant(f"unroll_{f}", f"#pragma unroll {f}" + (": the loop as written" if f == 1
                  else ""), "sum") for f in (1, 2, 4, 8, 16)),
        Variant("independent_accumulators", "four sums that do not wait for each other",
                "sum"),
    )  # fmt: skip

    def input_specs(self, point: Point) -> dict[str, BufferSpec]:
        return {"in": BufferSpec((point["n"],), np.dtype(np.uint32))}

    def inputs(self, point: Point, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"in": rng.integers(0, 2**32, point["n"], dtype=np.uint32)}

    def case(
        self, variant: str, point: Point, device: DeviceInfo, inputs: dict[str, np.ndarray]
    ) -> Case:
        n, block = point["n"], point["block"]
        launch = Launch(variant, (ceil_div(n, block), 1, 1), (block, 1, 1), (BufferRef("out"),
                        BufferRef("in"), np.uint32(n), np.uint32(point["work"])))  # fmt: skip
        # Useful work: an xor, a multiply and an add per trip.
        return Case([launch], outputs={"out": BufferSpec((n,), np.dtype(np.uint32))},
                    work=Work(8 * n, flops=3 * n * point["work"], elements=n))  # fmt: skip

    def reference(
        self, computes: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        x = inputs["in"]
        total = np.zeros_like(x)
        for k in range(point["work"]):
            total += (x ^ np.uint32(k)) * MULTIPLIER
        return {"out": total}


BENCHMARK = Unroll()
