"""Branch divergence and predication: two equal-work sides of a branch split by lane parity,
by warp, by `threadIdx.x > 2` and by `threadIdx.x / 32 > 2`, a short choice the compiler
predicates, and no branch at all. The table shows the branch efficiency the split implies."""

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
from gpubench.model.metrics import Metric

if TYPE_CHECKING:
    from gpubench.model.device import DeviceInfo

# Each side: x = x * A + C, `work` times (uint32, wrapping): kernels_cu/divergence.cu.
SIDE_A = (1664525, 1013904223)
SIDE_B = (22695477, 12345)

EFFICIENCY = Metric("branch_efficiency", "branch eff.", "%", "{:,.1f}%", scale=100.0)


def side_a(variant: str, thread: np.ndarray) -> np.ndarray:
    """Which threads (index within the block) take side A."""
    if variant == "uniform":
        return np.ones(thread.shape, bool)
    if variant in ("odd_even", "predicated"):
        return thread % 2 == 0
    if variant == "warp_aligned":
        return (thread // 32) % 2 == 0
    if variant == "lane_gt_2":
        return thread > 2
    return thread // 32 > 2  # warp_gt_2


def branch_efficiency(variant: str, block: int) -> float:
    """The fraction of a warp's lanes doing useful work while it runs the branch region: a
    warp whose lanes split runs both sides, each with only that side's lanes active."""
    if variant in ("uniform", "predicated"):
        return 1.0  # no branch (predicated: one instruction stream, every lane busy)
    takes_a = side_a(variant, np.arange(block)).reshape(-1, 32)
    split = takes_a.any(axis=1) & ~takes_a.all(axis=1)
    # A split warp issues both sides: 32 lanes' work in 2 x 32 lane-slots.
    return float(np.mean(np.where(split, 0.5, 1.0)))


class Divergence(OneThreadPerWord):
    name = "divergence"
    reference_params = frozenset({"block", "work"})
    input_params = frozenset({"n"})
    description = "branch divergence: lane-parity vs warp-aligned splits, predication"
    memory_bound = False
    baseline = "uniform"
    metrics = (EFFICIENCY,)
    params = (
        WORDS,
        Param("work", int, 256, "multiply-adds on each side of the branch", minimum=1,
              maximum=1 << 16),
        THREADS_PER_BLOCK,
    )  # fmt: skip
    # Each variant computes its own function (which threads take which side): its own name.
    variants = (
        Variant("uniform", "no branch: every lane takes side A", "uniform"),
        Variant("odd_even", "threadIdx.x % 2 picks the side: every warp runs both", "odd_even"),
        Variant("warp_aligned", "(threadIdx.x / 32) % 2 picks it: each warp runs one",
                "warp_aligned"),
        Variant("predicated", "a per-step choice the compiler turns into a select",
                "predicated"),
        Variant("lane_gt_2", "the classic threadIdx.x > 2: the first warp of a block splits",
                "lane_gt_2"),
        Variant("warp_gt_2", "threadIdx.x / 32 > 2: warps split, lanes do not", "warp_gt_2"),
    )  # fmt: skip

    def case(
        self, variant: str, point: Point, device: DeviceInfo, inputs: dict[str, np.ndarray]
    ) -> Case:
        efficiency = branch_efficiency(variant, point["block"])
        # Useful work: one multiply-add (2 integer ops) per step per element.
        return self.word_case(
            variant, point, ops_per_step=2, run_metrics=lambda _: {EFFICIENCY.key: efficiency}
        )

    def reference(
        self, computes: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        x = inputs["in"].copy()
        takes_a = side_a(computes, np.arange(x.size) % point["block"])
        multiplier = np.where(takes_a, SIDE_A[0], SIDE_B[0]).astype(np.uint32)
        increment = np.where(takes_a, SIDE_A[1], SIDE_B[1]).astype(np.uint32)
        for _ in range(point["work"]):
            x *= multiplier
            x += increment
        return {"out": x}


BENCHMARK = Divergence()
