"""Ceilings: what this GPU can do at best, measured and checked like every other kernel.

DRAM read, write and copy bandwidth over a working set far larger than L2; L2 bandwidth
over one well inside it; shared-memory bandwidth; FP32, FP64 and half2 FP16 FMA throughput;
the tensor-core FP16 GEMM rate through cuBLAS (CuPy). `gpubench ceilings` runs this suite and
keeps the figures per GPU for `gpubench roofline`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpubench.benchmarks._shared import EXACT_VALUES, cupy_array, cupy_stream
from gpubench.model.benchmark import (
    Benchmark,
    BufferRef,
    BufferSpec,
    Case,
    Launch,
    LibraryCall,
    Param,
    Point,
    Tolerance,
    Variant,
    Work,
)
from gpubench.model.results import point_key

# Threads per SM the grid-stride kernels fill (a full H100 SM: 2048).
CHAINS = 8
FP32_STEP = 2.0**-20  # exact increments of chains that start in [1, 2): 4096 steps stay < 2
FP64_STEP = 2.0**-40
FP16_ITERATIONS = 960  # half chains start at 1024..1080, spacing 1: exact below 2048
# The ceilings input holds 16-bit values, so a thread's 32-bit running sums of 4096 of them
# cannot wrap (kernels_cu/ceilings.cu, shared_read).
INPUT_LIMIT = 1 << 16


@dataclass
class _CupyHalfGemm:
    """cuBLAS FP16 GEMM (tensor cores) through cupy.matmul on the harness's buffers."""

    size: int
    _arrays: dict[tuple[int, ...], Any] = field(default_factory=dict)

    def __call__(self, pointers: dict[str, int], stream_handle: int) -> None:
        import cupy

        key = (pointers["A"], pointers["B"], pointers["C"])
        if key not in self._arrays:
            f16, shape = np.dtype(np.float16), (self.size, self.size)
            self._arrays[key] = tuple(cupy_array(pointers[n], shape, f16) for n in "ABC")
        a, b, c = self._arrays[key]
        with cupy_stream(stream_handle):
            cupy.matmul(a, b, out=c)


MEMORY_VARIANTS = ("dram_read", "dram_write", "dram_copy", "l2_read", "shared_read")


def _launch(kernel: str, args: tuple, grid: int, block: int) -> Launch:
    return Launch(kernel, (grid, 1, 1), (block, 1, 1), args)


def _memory_case(variant: str, point: Point, one_wave: int) -> Case:
    """A bandwidth kernel, one wave of blocks striding over its bytes."""
    block = point["block"]
    n4 = np.uint64(point["dram_bytes"] // 16)
    total = {"total": BufferSpec((1,), np.dtype(np.uint64), init="input")}
    words = BufferSpec((point["dram_bytes"] // 4,), np.dtype(np.uint32))
    if variant == "dram_read":
        return Case(
            [_launch("dram_read", (BufferRef("data"), n4, BufferRef("total")), one_wave, block)],
            outputs=total,
            work=Work(point["dram_bytes"]),
        )
    if variant == "dram_write":
        return Case(
            [_launch("dram_write", (BufferRef("out"), n4), one_wave, block)],
            outputs={"out": words},
            work=Work(point["dram_bytes"]),
        )
    if variant == "dram_copy":
        return Case(
            [_launch("dram_copy", (BufferRef("out"), BufferRef("data"), n4), one_wave, block)],
            outputs={"out": words},
            work=Work(2 * point["dram_bytes"]),
        )
    if variant == "l2_read":
        args = (
            BufferRef("data"),
            np.uint64(point["l2_bytes"] // 16),
            np.uint32(point["l2_passes"]),
            BufferRef("total"),
        )
        return Case(
            [_launch("l2_read", args, one_wave, block)],
            outputs=total,
            work=Work(point["l2_bytes"] * point["l2_passes"], level="l2"),
        )
    iterations = point["shared_iterations"]  # shared_read
    args = (BufferRef("data"), np.uint32(iterations), BufferRef("total"))
    return Case(
        [_launch("shared_read", args, one_wave, block)],
        outputs=total,
        work=Work(one_wave * block * iterations * 16, level="shared"),
    )


def _tensor_case(g: int) -> Case:
    """A g×g FP16 GEMM through cuBLAS: the tensor cores' rate."""
    return Case(
        [LibraryCall("cupy.matmul", _CupyHalfGemm(g))],
        outputs={"C": BufferSpec((g, g), np.dtype(np.float16))},
        work=Work(6 * g * g, flops=2 * g**3, precision="tensor"),
        tolerance=Tolerance(),
    )


def _fma_case(variant: str, point: Point, grid: int) -> Case:
    """Chains of dependent FMAs in every thread of `grid` blocks: the FP32, FP64 or FP16 rate."""
    block = point["block"]
    threads = grid * block
    kinds = {
        "fp32_fma": (np.float32, np.float32(FP32_STEP), point["fma_iterations"], 2),
        "fp64_fma": (np.float64, np.float64(FP64_STEP), point["fma_iterations"], 2),
        "fp16_fma": (np.float32, np.float32(1.0), FP16_ITERATIONS, 4),
    }
    dtype, step, iterations, flops_per_fma = kinds[variant]
    one = dtype(1.0)
    args = (BufferRef("out"), one, step, np.uint32(iterations))
    return Case(
        [_launch(variant, args, grid, block)],
        outputs={"out": BufferSpec((threads,), np.dtype(dtype))},
        work=Work(
            threads * np.dtype(dtype).itemsize,
            flops=flops_per_fma * CHAINS * iterations * threads,
            precision=variant.split("_")[0],
        ),  # fp32, fp64, fp16
        tolerance=Tolerance(),
    )


class Ceilings(Benchmark):
    name = "ceilings"
    description = "the GPU's best: DRAM, L2 and shared-memory bandwidth, FMA throughput"
    baseline = "dram_read"
    memory_bound = False  # the DRAM working set dwarfs L2; the L2 kernel wants a warm L2
    params = (
        Param("dram_bytes", int, 1 << 31, "DRAM working set, bytes (far larger than L2)",
              minimum=1 << 24, maximum=1 << 34),
        Param("l2_bytes", int, 1 << 24, "L2 working set, bytes (well inside L2)",
              minimum=1 << 16, maximum=1 << 30),
        Param("l2_passes", int, 64, "times the L2 working set is read per run", minimum=1,
              maximum=4096),
        Param("shared_iterations", int, 1 << 14, "16-byte shared-memory loads per thread",
              minimum=4, maximum=1 << 24),
        Param("fma_iterations", int, 4096, "FMA steps per chain (FP32 and FP64)", minimum=1,
              maximum=4096),
        Param("waves", int, 8, "full waves of blocks per SM for the FMA kernels", minimum=1,
              maximum=1024),
        Param("gemm_size", int, 8192, "M = N = K of the FP16 tensor-core GEMM", minimum=16,
              maximum=16384),
        Param("block", int, 256, "threads per block", choices=(128, 256, 512),
              compile_time=True),
    )  # fmt: skip
    variants = (
        Variant("dram_read", "read a buffer far larger than L2 once", "dram_read"),
        Variant("dram_write", "write it once (streaming stores)", "dram_write"),
        Variant("dram_copy", "copy it (bytes read + written)", "dram_copy"),
        Variant("l2_read", "read a working set inside L2, L1 bypassed", "l2_read"),
        Variant("shared_read", "16-byte shared-memory loads, no bank conflicts", "shared_read"),
        Variant("fp32_fma", "8 independent FP32 FMA chains per thread", "fp32_fma"),
        Variant("fp64_fma", "8 independent FP64 FMA chains per thread", "fp64_fma"),
        Variant("fp16_fma", "8 independent half2 FMA chains per thread", "fp16_fma"),
        Variant("tensor_fp16", "cuBLAS FP16 GEMM on the tensor cores (CuPy)", "tensor_fp16",
                kind="library"),
    )  # fmt: skip

    def __init__(self) -> None:
        self._shape: dict[str, tuple[int, int]] = {}

    def validate_point(self, point: Point) -> str | None:
        for name in ("dram_bytes", "l2_bytes"):
            if point[name] % 16:
                return f"{name}={point[name]} is not a multiple of 16 (the kernels move uint4)"
        if point["l2_bytes"] > point["dram_bytes"]:
            return "l2_bytes is larger than dram_bytes (the L2 kernel reads a prefix of it)"
        if point["shared_iterations"] % 4:
            return "shared_iterations must be a multiple of 4"
        return None

    def input_specs(self, point: Point) -> dict[str, BufferSpec]:
        g = point["gemm_size"]
        f16 = np.dtype(np.float16)
        return {
            "data": BufferSpec((point["dram_bytes"] // 4,), np.dtype(np.uint32)),
            "total": BufferSpec((1,), np.dtype(np.uint64)),
            "A": BufferSpec((g, g), f16),
            "B": BufferSpec((g, g), f16),
        }

    def inputs(self, point: Point, rng: np.random.Generator) -> dict[str, np.ndarray]:
        g = point["gemm_size"]
        return {
            "data": rng.integers(0, INPUT_LIMIT, point["dram_bytes"] // 4, dtype=np.uint32),
            "total": np.zeros(1, np.uint64),  # the sums are added into it: restored per run
            # Small integers: every product and partial sum is exact in FP16 and FP32.
            "A": rng.choice(EXACT_VALUES, (g, g)).astype(np.float16),
            "B": rng.choice(EXACT_VALUES, (g, g)).astype(np.float16),
        }

    def case(self, variant: str, point: Point, device: Any, inputs: dict[str, np.ndarray]) -> Case:
        block = point["block"]
        one_wave = device.sm_count * max(1, device.max_threads_per_sm // block)
        # The reference depends on the launch shape, hence on the device; case() runs before
        # every check, so it records the shape for reference().
        self._shape[point_key(point)] = (one_wave, one_wave * point["waves"] * block)
        if variant in MEMORY_VARIANTS:
            return _memory_case(variant, point, one_wave)
        if variant == "tensor_fp16":
            return _tensor_case(point["gemm_size"])
        return _fma_case(variant, point, one_wave * point["waves"])

    def reference(
        self, computes: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        data = inputs["data"]
        if computes == "dram_read":
            return {"total": np.array([data.sum(dtype=np.uint64)])}
        if computes == "dram_write":
            return {"out": np.arange(data.size, dtype=np.uint64).astype(np.uint32)}
        if computes == "dram_copy":
            return {"out": data}
        if computes == "l2_read":
            prefix = data[: point["l2_bytes"] // 4].sum(dtype=np.uint64)
            return {"total": np.array([prefix * np.uint64(point["l2_passes"])])}
        if computes == "shared_read":
            # Every block loads the first 4·BLOCK 16-byte words and reads each of them
            # iterations / 4 times.
            block = point["block"]
            words = data[: 16 * block].sum(dtype=np.uint64)
            blocks = self._launch_shape(point)[0]
            return {
                "total": np.array(
                    [words * np.uint64(point["shared_iterations"] // 4) * np.uint64(blocks)]
                )
            }
        if computes == "tensor_fp16":
            a, b = inputs["A"].astype(np.float32), inputs["B"].astype(np.float32)
            return {"C": a @ b}
        # Chain j of every thread starts at start_j and gains `step` per iteration, exactly.
        threads = self._launch_shape(point)[1]
        if computes == "fp16_fma":
            per_lane = sum(1024.0 + 8 * j + FP16_ITERATIONS for j in range(CHAINS))
            return {"out": np.full(threads, 2 * per_lane)}
        step = FP32_STEP if computes == "fp32_fma" else FP64_STEP
        value = sum(1.0 + j / 8 + point["fma_iterations"] * step for j in range(CHAINS))
        return {"out": np.full(threads, value)}

    def _launch_shape(self, point: Point) -> tuple[int, int]:
        """(blocks of one full wave, threads of the FMA kernels) recorded by case()."""
        return self._shape[point_key(point)]

    def unavailable(self, variant: str) -> str | None:
        if variant != "tensor_fp16":
            return None
        try:
            import cupy  # noqa: F401
        except ImportError:
            return (
                "CuPy is not installed (pip install cupy-cuda12x) for the cuBLAS tensor-core GEMM"
            )
        return None


BENCHMARK = Ceilings()
