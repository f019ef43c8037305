"""Global-memory access patterns: copies whose reads or writes start at an offset or walk at a
stride, the device-to-device memcpy they are measured against, and a read of a working set
that lands in L1, L2 or DRAM. The table shows the 32-byte sectors a warp's request touches."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpubench.model.benchmark import (
    Benchmark,
    BufferRef,
    BufferSpec,
    Case,
    Copy,
    Launch,
    Param,
    Point,
    Variant,
    Work,
    ceil_div,
)
from gpubench.model.metrics import Metric

if TYPE_CHECKING:
    from gpubench.model.device import DeviceInfo

DTYPES = {"float32": (np.float32, "float"), "float64": (np.float64, "double")}
MAX_SHIFT = 32  # offsets and strides go up to 32 elements
SECTOR = 32
THREADS = 256
PER_THREAD = 4  # elements per thread in the copies (kernels_cu/access.cu)
# cached_read reads at least this many bytes per run, so the first (cold) pass is a small
# part of the time even for a 1 MiB working set.
CACHED_READ_BYTES = 1 << 32

SECTORS = Metric("sectors_per_request", "sectors/req", "sectors", "{:,.1f}", higher_is_better=None)

REPEATED_READS = ("cached_read", "l2_read")

# The parameter that shifts each copy variant's reads or writes.
SHIFTED_BY = {"read_offset": "offset", "write_offset": "offset", "read_stride": "stride",
              "write_stride": "stride"}  # fmt: skip


def sectors_per_request(itemsize: int, offset: int = 0, stride: int = 1) -> float:
    """32-byte sectors one warp's 32 accesses touch: elements lane * stride + offset, from an
    allocation aligned to 256 bytes."""
    addresses = (np.arange(32) * stride + offset) * itemsize
    first, last = addresses // SECTOR, (addresses + itemsize - 1) // SECTOR
    return float(np.unique(np.concatenate([first, last])).size)


class Access(Benchmark):
    name = "access"
    description = "global memory: coalescing vs offset and stride; L1, L2, DRAM vs working set"
    memory_bound = True
    baseline = "memcpy"
    metrics = (SECTORS,)
    params = (
        Param("working_set", int, 1 << 30, "bytes each array spans (default: 20x the H100's "
              "L2, so DRAM is measured)", minimum=1 << 20, maximum=1 << 32),
        Param("offset", int, 0, "elements the shifted side starts past an aligned address",
              minimum=0, maximum=MAX_SHIFT),
        Param("stride", int, 1, "elements between the shifted side's consecutive accesses",
              minimum=1, maximum=MAX_SHIFT),
        Param("dtype", str, "float32", "element type", choices=tuple(DTYPES),
              compile_time=True),
    )  # fmt: skip
    variants = (
        Variant("memcpy", "cudaMemcpy device to device (the reference copy)", "copy"),
        Variant("read_offset", "out[i] = in[i + offset]: misaligned reads", "read_offset"),
        Variant("write_offset", "out[i + offset] = in[i]: misaligned writes", "write_offset"),
        Variant("read_stride", "out[i] = in[i * stride]: strided reads", "read_stride"),
        Variant("write_stride", "out[i * stride] = in[i]: strided writes", "write_stride"),
        Variant("cached_read", "read the working set again and again: L1, L2 or DRAM",
                "cached_read"),
        Variant("l2_read", "cached_read past L1 (ld.global.cg): L2 or DRAM", "cached_read"),
    )  # fmt: skip

    def _dtype(self, point: Point) -> np.dtype:
        return np.dtype(DTYPES[point["dtype"]][0])

    def defines(self, point: Point) -> dict[str, str]:
        return {"DTYPE": DTYPES[point["dtype"]][1]}

    def validate_point(self, point: Point) -> str | None:
        if point["working_set"] % 16:
            return f"working_set={point['working_set']} is not a multiple of 16 bytes"
        return None

    def _counts(self, point: Point) -> tuple[int, int]:
        """(elements each copy moves, elements the arrays hold)."""
        itemsize = self._dtype(point).itemsize
        span = point["working_set"] // itemsize
        return span // point["stride"], span + MAX_SHIFT

    def passes(self, point: Point) -> int:
        return max(1, CACHED_READ_BYTES // point["working_set"])

    def input_specs(self, point: Point) -> dict[str, BufferSpec]:
        _, length = self._counts(point)
        dtype = self._dtype(point)
        return {"in": BufferSpec((length,), dtype), "out": BufferSpec((length,), dtype)}

    def inputs(self, point: Point, rng: np.random.Generator) -> dict[str, np.ndarray]:
        _, length = self._counts(point)
        dtype = self._dtype(point)
        # `out` is what the shifted writes land in: the elements they skip keep these values.
        fresh = rng.random(length, dtype=dtype.type)
        fresh += dtype.type(0.5)
        before = rng.random(length, dtype=dtype.type)
        before -= dtype.type(2.0)
        return {"in": fresh, "out": before}

    def case(
        self, variant: str, point: Point, device: DeviceInfo, inputs: dict[str, np.ndarray]
    ) -> Case:
        dtype = self._dtype(point)
        moved, length = self._counts(point)
        contiguous = point["working_set"] // dtype.itemsize
        out = {"out": BufferSpec((length,), dtype, init="input")}
        if variant == "memcpy":
            nbytes = contiguous * dtype.itemsize
            return Case(
                [Copy("in", "out", nbytes=nbytes)],
                outputs=out,
                work=Work(2 * nbytes, elements=contiguous),
                run_metrics=lambda _: {SECTORS.key: sectors_per_request(dtype.itemsize)},
            )
        if variant in REPEATED_READS:
            words16 = point["working_set"] // 16
            # Enough threads to fill the GPU, but at least 8 words per thread per pass: a
            # small working set spread over every thread leaves each with less than one word
            # and the loop overhead of the passes would be timed instead of the memory.
            full = device.sm_count * max(1, device.max_threads_per_sm // THREADS)
            grid = max(device.sm_count, min(full, ceil_div(words16, THREADS * 8)))
            launch = Launch(
                variant,
                (grid, 1, 1),
                (THREADS, 1, 1),
                (
                    BufferRef("in"),
                    np.uint64(words16),
                    np.uint32(self.passes(point)),
                    BufferRef("total"),
                ),
            )
            return Case(
                [launch],
                outputs={"total": BufferSpec((1,), np.dtype(np.uint64), init="zero")},
                work=Work(
                    point["working_set"] * self.passes(point),
                    level="l2" if point["working_set"] <= device.l2_bytes else "dram",
                    footprint=point["working_set"],
                ),
            )
        how = SHIFTED_BY[variant]
        shift = point[how]
        count = moved if how == "stride" else contiguous
        launch = Launch(
            variant,
            (ceil_div(count, THREADS * PER_THREAD), 1, 1),
            (THREADS, 1, 1),
            (BufferRef("out"), BufferRef("in"), np.uint64(count), np.uint32(shift)),
        )
        sectors = sectors_per_request(dtype.itemsize, **{how: shift})
        return Case(
            [launch],
            outputs=out,
            work=Work(2 * count * dtype.itemsize, elements=count),
            run_metrics=lambda _: {SECTORS.key: sectors},
        )

    def reference(
        self, computes: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        source, out = inputs["in"], inputs["out"].copy()
        moved, _ = self._counts(point)
        contiguous = point["working_set"] // source.itemsize
        offset, stride = point["offset"], point["stride"]
        if computes == "cached_read":
            words = source.view(np.uint32)[: point["working_set"] // 4]
            # Modulo 2^64, like the kernel's unsigned long long sums.
            total = np.uint64(words.sum(dtype=np.uint64)) * np.uint64(self.passes(point))
            return {"total": np.array([total], np.uint64)}
        if computes == "copy":
            out[:contiguous] = source[:contiguous]
        elif computes == "read_offset":
            out[:contiguous] = source[offset : offset + contiguous]
        elif computes == "write_offset":
            out[offset : offset + contiguous] = source[:contiguous]
        elif computes == "read_stride":
            out[:moved] = source[: moved * stride : stride]
        elif computes == "write_stride":
            out[: moved * stride : stride] = source[:moved]
        return {"out": out}


BENCHMARK = Access()
