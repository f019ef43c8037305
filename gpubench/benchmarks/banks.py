"""Shared-memory bank conflicts: a warp reading words `stride` apart, the padded fix and a
broadcast, with 4- and 8-byte words. Timed with events and, inside the kernel, with the SM's
clock: the table shows the cycles per warp access beside the conflict ways the bank model
predicts (gcd(stride, 32) for 4-byte words)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpubench.model.benchmark import (
    Benchmark,
    BufferRef,
    BufferSpec,
    Case,
    Launch,
    Param,
    Point,
    RunRecord,
    Variant,
    Work,
)
from gpubench.model.metrics import Metric
from gpubench.model.results import point_key

if TYPE_CHECKING:
    from gpubench.model.device import DeviceInfo

BANKS = 32
SLOTS = 32 * 33  # words in the kernel's shared tile
THREADS = 1024  # one block per SM: every warp on the SM is one of ours
WORDS = {4: np.uint32, 8: np.uint64}

WAYS = Metric("ways", "ways (model)", "", "{:,.0f}", higher_is_better=None)
CYCLES = Metric("cycles_per_access", "clk/access", "cycles", "{:,.2f}", higher_is_better=False)


def word_index(variant: str, lane: int, stride: int) -> int:
    """The word lane `lane` reads (kernels_cu/banks.cu)."""
    if variant == "broadcast":
        return 7
    word = lane * stride
    return word + word // 32 if variant == "padded" else word


def _worst_bank(variant: str, stride: int, word_bytes: int, lanes: range) -> int:
    """The most distinct 4-byte words one bank must deliver to these lanes (lanes on one word
    share it)."""
    per_bank: dict[int, set[int]] = {}
    for lane in lanes:
        first = word_index(variant, lane, stride) * (word_bytes // 4)
        for word in range(first, first + word_bytes // 4):
            per_bank.setdefault(word % BANKS, set()).add(word)
    return max(len(words) for words in per_bank.values())


def conflict_ways(variant: str, stride: int, word_bytes: int) -> int:
    """Shared-memory wavefronts one warp request takes in the bank model: for 4-byte words the
    most distinct words any bank must deliver (gcd(stride, 32) for a stride); 8-byte words are
    served a half-warp at a time, each half in as many wavefronts as its worst bank, unless
    the whole warp needs one (a broadcast). The 8-byte rule is the one the H100 follows in
    configs/banks.yaml, every stride and variant within 10%."""
    whole = _worst_bank(variant, stride, word_bytes, range(32))
    if word_bytes == 4 or whole == 1:
        return whole
    return sum(
        _worst_bank(variant, stride, word_bytes, half) for half in (range(16), range(16, 32))
    )


class Banks(Benchmark):
    name = "banks"
    description = "shared-memory bank conflicts vs stride, the padded fix, broadcast"
    memory_bound = False
    baseline = "strided"
    metrics = (WAYS, CYCLES)
    params = (
        Param("stride", int, 1, "words between the addresses of neighbouring lanes",
              minimum=1, maximum=32),
        Param("word", int, 4, "bytes per word", choices=(4, 8), compile_time=True),
        Param("iterations", int, 4096, "reads per thread (a multiple of 4)", minimum=4,
              maximum=1 << 24),
    )  # fmt: skip
    variants = (
        Variant("strided", "lane l reads word l * stride", "strided"),
        Variant("padded", "the same with a padding word after every 32 (a [32][33] tile)",
                "padded"),
        Variant("broadcast", "every lane reads the same word", "broadcast"),
    )  # fmt: skip

    def __init__(self) -> None:
        self._threads: dict[str, int] = {}

    def validate_point(self, point: Point) -> str | None:
        if point["iterations"] % 4:
            return f"iterations={point['iterations']} is not a multiple of 4"
        return None

    def inputs(self, point: Point, rng: np.random.Generator) -> dict[str, np.ndarray]:
        dtype = WORDS[point["word"]]
        return {"in": rng.integers(1, 1 << 30, SLOTS, dtype=np.uint64).astype(dtype)}

    def case(
        self, variant: str, point: Point, device: DeviceInfo, inputs: dict[str, np.ndarray]
    ) -> Case:
        blocks = device.sm_count
        threads = blocks * THREADS
        iterations = point["iterations"]
        dtype = np.dtype(WORDS[point["word"]])
        launch = Launch(
            variant,
            (blocks, 1, 1),
            (THREADS, 1, 1),
            (
                BufferRef("in"),
                BufferRef("out"),
                np.uint32(point["stride"]),
                np.uint32(iterations),
                BufferRef("cycles"),
            ),
        )
        warps = threads // 32
        ways = conflict_ways(variant, point["stride"], point["word"])

        def from_clock(record: RunRecord) -> dict[str, float]:
            # Summed over every warp's loop; all 32 warps of a block share their SM's banks,
            # so one warp's access costs its loop time / (iterations * warps per SM).
            total = float(record.read_back["cycles"][0])
            per_warp = total / warps / iterations
            return {WAYS.key: float(ways), CYCLES.key: per_warp / (THREADS // 32)}

        # The reference depends on the launch shape, hence on the device: case() records it.
        self._threads[point_key(point)] = threads
        # `cycles` is an output without a reference: never checked, zeroed before every run
        # that is checked or read back.
        return Case(
            [launch],
            outputs={
                "out": BufferSpec((threads,), dtype),
                "cycles": BufferSpec((1,), np.dtype(np.uint64), init="zero"),
            },
            work=Work(
                threads * iterations * dtype.itemsize, elements=warps * iterations, level="shared"
            ),
            read_back=("cycles",),
            run_metrics=from_clock,
        )

    def reference(
        self, computes: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        tile = inputs["in"]
        per_lane = np.array(
            [tile[word_index(computes, lane, point["stride"])] for lane in range(32)],
            dtype=tile.dtype,
        )
        # Each thread adds its word `iterations` times, wrapping like the kernel's unsigned sum.
        sums = per_lane * tile.dtype.type(point["iterations"])
        return {"out": np.resize(sums, self._threads[point_key(point)])}


BENCHMARK = Banks()
