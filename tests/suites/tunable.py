"""A CPU fake suite with a space to tune (`gpubench tune tests/suites/tunable.yaml`): out = 2 * x,
where the compile-time `block` and `unroll` are the configuration and `n` the problem. Each
configuration's fake time is known and the same at every n, so a test knows the optimum:
block=128, unroll=4 at 1.0 ms. block=1024 with unroll=8 computes a wrong answer and block=512
with unroll=1 is refused at launch: failures, never winners.

Under --energy the fake GPU draws 250 W but for two frugal configurations (`WATTS`), so the
energy per run (power x time) ranks them otherwise: the least energy is block=32, unroll=4
(1.6 ms at 110 W: 176 mJ), the least energy-delay product block=128, unroll=2 (1.2 ms at
170 W: 204 mJ, 244.8 mJ·ms), and the fastest, block=128, unroll=4, spends 250 mJ (250 mJ·ms)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from gpubench.model.benchmark import (
    BufferRef,
    BufferSpec,
    Case,
    Launch,
    Param,
    Point,
    Variant,
    Work,
)
from tests import fakes

BLOCKS = (32, 64, 128, 256, 512, 1024)
UNROLLS = (1, 2, 4, 8)
WRONG = (1024, 8)
REFUSED = (512, 1)
# The configurations that draw less than the fake GPU's 250 W (see the module's docstring).
WATTS = {(32, 4): 110.0, (128, 2): 170.0}


def fake_ms(block: int, unroll: int) -> float:
    """The configuration's time at n=1000: 1.0 ms at the optimum, more away from it."""
    return 1.0 + 0.3 * abs(math.log2(block) - 7) + 0.2 * abs(math.log2(unroll) - 2)


def kernel_name(block: int, unroll: int) -> str:
    return f"tuned_b{block}_u{unroll}"


for _block in BLOCKS:
    for _unroll in UNROLLS:
        if (_block, _unroll) == WRONG:
            body = fakes._scale_wrong
        elif (_block, _unroll) == REFUSED:
            body = fakes._scale_refused
        else:
            body = fakes._scale_good
        fakes.KERNELS[kernel_name(_block, _unroll)] = (body, fake_ms(_block, _unroll))
        if (_block, _unroll) in WATTS:
            fakes.KERNEL_WATTS[kernel_name(_block, _unroll)] = WATTS[(_block, _unroll)]


class TunableSuite(fakes.ScaleSuite):
    name = "tunable"
    baseline = "scale"
    params = (
        Param("n", int, 1000, "elements", minimum=1, maximum=10**6),
        Param("block", int, 128, "threads per block", choices=BLOCKS, compile_time=True),
        Param("unroll", int, 1, "elements per thread", choices=UNROLLS, compile_time=True),
    )
    variants = (Variant("scale", "out = 2 * x", computes="double"),)
    reference_params: ClassVar[frozenset[str] | None] = frozenset({"n"})
    input_params: ClassVar[frozenset[str] | None] = frozenset({"n"})

    def case(self, variant: str, point: Point, device: Any, inputs: dict[str, np.ndarray]) -> Case:
        n = point["n"]
        kernel = kernel_name(point["block"], point["unroll"])
        return Case(
            steps=[
                Launch(
                    kernel, (1, 1, 1), (256, 1, 1), (BufferRef("out"), BufferRef("x"), np.int32(n))
                )
            ],
            outputs={"out": BufferSpec((n,), np.dtype(np.float32))},
            work=Work(bytes_moved=8 * n, flops=n, elements=n),
        )


BENCHMARK = TunableSuite()
