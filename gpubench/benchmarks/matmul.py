"""Matrix-multiply suite: naive → shared-memory tiles → register micro-tiles → register-blocked
block tiles → software pipelining → warp tiles (tuned per size) → a multistage cp.async ring
with 128 accumulators per thread, against cuBLAS (through CuPy) and NumPy on the CPU."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from gpubench.benchmarks._shared import (
    VALUE_KINDS,
    cupy_array,
    cupy_stream,
    dot_product_rtol,
    exact_limit_problem,
    matrix_values,
)
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
    ceil_div,
)

if TYPE_CHECKING:
    from gpubench.model.device import DeviceInfo

INT32_MAX = 2**31 - 1
STATIC_SHARED_LIMIT = 48 * 1024
# warp_tiled's ring is dynamic shared memory, opted in past 48 KB: at most what any GPU allows
# a block (227 KB, sm_90); the device's own limit is checked before launch.
DYNAMIC_SHARED_LIMIT = 227 * 1024
MAX_BLOCK_THREADS = 1024
# The CPU reference is timed too; above this many multiply-adds one sample takes seconds.
NUMPY_MAX_FMAS = 4096**3
# multistage's fixed tile (kernels_cu/matmul.cu, MS_*): block rows, columns, depth; threads.
MS_BM, MS_BN, MS_BK, MS_THREADS = 128, 256, 8, 256
# The variants whose cp.async ring is a static array up to 48 KB and dynamic shared memory past
# it (WT_RING_DYNAMIC, MS_RING_BYTES > 49152), opted in by the backends up to the device's limit.
RING_VARIANTS = ("warp_tiled", "multistage")
# Variants that launch the one kernel of their name.
KERNELS_NAMED_AS_VARIANTS = (
    "naive",
    "tiled",
    "register_tile",
    "blocked",
    "pipelined",
    "warp_tiled",
)


def ring_dynamic_bytes(ring: int) -> int:
    """The dynamic shared memory a ring variant's launch gives: none while the ring fits a
    static array."""
    return ring if ring > STATIC_SHARED_LIMIT else 0


@dataclass
class _CupyMatmul:
    """cuBLAS SGEMM through cupy.matmul on the harness's buffers and stream, TF32 off."""

    m: int
    n: int
    k: int
    _arrays: dict[tuple[int, ...], Any] = field(default_factory=dict)

    def __call__(self, pointers: dict[str, int], stream_handle: int) -> None:
        import cupy

        key = (pointers["A"], pointers["B"], pointers["C"])
        if key not in self._arrays:
            f32 = np.dtype(np.float32)
            self._arrays[key] = (
                cupy_array(pointers["A"], (self.m, self.k), f32),
                cupy_array(pointers["B"], (self.k, self.n), f32),
                cupy_array(pointers["C"], (self.m, self.n), f32),
            )
        a, b, c = self._arrays[key]
        with cupy_stream(stream_handle):
            cupy.matmul(a, b, out=c)


# warp_tiled's tile shape, each parameter 0 by default: taken from TUNED_WARP_TILES.
WARP_TILE_PARAMS = ("wbm", "wbn", "wbk", "wtm", "wtn", "wm", "wn", "wniter", "stages")
# The fastest warp_tiled shape per size, from `gpubench sweep configs/matmul_tune.yaml` on an
# NVIDIA H100 80GB HBM3 (2026-11-22): for M x N x K the entry of the largest size not above
# max(M, N) (the smallest entry below it).
TUNED_WARP_TILES: dict[int, dict[str, int]] = {
    1024: {"wbm": 64, "wbn": 128, "wbk": 16, "wtm": 8, "wtn": 8, "wm": 32, "wn": 64,
           "wniter": 1, "stages": 2},
    2048: {"wbm": 64, "wbn": 256, "wbk": 16, "wtm": 8, "wtn": 8, "wm": 32, "wn": 64,
           "wniter": 1, "stages": 2},
    4096: {"wbm": 64, "wbn": 256, "wbk": 16, "wtm": 8, "wtn": 8, "wm": 32, "wn": 64,
           "wniter": 1, "stages": 2},
}  # fmt: skip


def tuned_warp_tile(m: int, n: int) -> dict[str, int]:
    """TUNED_WARP_TILES's entry for an M x N result."""
    sizes = sorted(TUNED_WARP_TILES)
    fitting = [size for size in sizes if size <= max(m, n)]
    return TUNED_WARP_TILES[fitting[-1] if fitting else sizes[0]]


def warp_shape_problem(point: Point) -> str | None:
    """Why wm, wn, wniter, wtm, wtn cannot tile wbm x wbn (kernels_cu/matmul.cu,
    warp_tiled), or None: warps must tile the block, a warp's 32 lanes its WSUBM x WSUBN
    sub-tile."""
    bm, bn, wm, wn = point["wbm"], point["wbn"], point["wm"], point["wn"]
    tm, tn, wniter = point["wtm"], point["wtn"], point["wniter"]
    if bm % wm or bn % wn:
        return f"warps of {wm} x {wn} do not tile the {bm} x {bn} block"
    threads = (bm // wm) * (bn // wn) * 32
    if threads > MAX_BLOCK_THREADS:
        return f"{bm} x {bn} blocks of {wm} x {wn} warps need {threads} threads (at most 1024)"
    per_pass = 32 * tm * tn * wniter
    if (wm * wn) % per_pass or wn % wniter:
        return f"a {wm} x {wn} warp tile is not a whole number of {wniter} x {tm} x {tn} passes"
    wmiter = wm * wn // per_pass
    wsubm, wsubn = wm // wmiter, wn // wniter
    if wm % wmiter or wsubm % tm or wsubn % tn or (wsubm // tm) * (wsubn // tn) != 32:
        return (
            f"the {wsubm} x {wsubn} sub-tiles do not give each of a warp's 32 lanes one "
            f"{tm} x {tn} micro-tile"
        )
    return None


class Matmul(Benchmark):
    name = "matmul"
    reference_params = frozenset()
    input_params = frozenset({"m", "n", "k", "values"})
    description = (
        "C = A·B in float32 (M×K times K×N): from naive to pipelined, warp-tiled and multistage"
    )
    memory_bound = False
    baseline = "naive"
    vendor_reference = "cublas"
    show_resources = True
    params = (
        Param(
            "size",
            int,
            1024,
            "M = N = K (m, n, k override)",
            minimum=1,
            maximum=INT32_MAX,
            maximum_reason="the kernels take int m, n, k",
        ),
        Param(
            "m",
            int,
            None,
            "rows of A and C (default: size)",
            minimum=1,
            derived_from="size",
            maximum=INT32_MAX,
            maximum_reason="the kernels take int m, n, k",
        ),
        Param(
            "n",
            int,
            None,
            "columns of B and C (default: size)",
            minimum=1,
            derived_from="size",
            maximum=INT32_MAX,
            maximum_reason="the kernels take int m, n, k",
        ),
        Param(
            "k",
            int,
            None,
            "columns of A, rows of B (default: size)",
            minimum=1,
            derived_from="size",
            maximum=INT32_MAX,
            maximum_reason="the kernels take int m, n, k",
        ),
        Param(
            "block",
            int,
            16,
            "naive/tiled/register: thread block edge (tile is block x block)",
            choices=(8, 16, 32),
            compile_time=True,
        ),
        Param(
            "micro",
            int,
            4,
            "register: micro-tile edge per thread",
            choices=(2, 4, 8),
            compile_time=True,
        ),
        Param(
            "bm",
            int,
            128,
            "blocked/pipelined: block tile rows",
            choices=(32, 64, 128),
            compile_time=True,
        ),
        Param(
            "bn",
            int,
            128,
            "blocked/pipelined: block tile columns",
            choices=(32, 64, 128),
            compile_time=True,
        ),
        Param(
            "bk",
            int,
            16,
            "blocked/pipelined: block tile depth",
            choices=(8, 16, 32),
            compile_time=True,
        ),
        Param(
            "tm", int, 8, "blocked/pipelined: rows per thread", choices=(4, 8), compile_time=True
        ),
        Param(
            "tn", int, 8, "blocked/pipelined: columns per thread", choices=(4, 8), compile_time=True
        ),
        Param(
            "wbm",
            int,
            0,
            "warp_tiled: block tile rows (0: tuned for the size)",
            choices=(0, 32, 64, 128, 256),
            compile_time=True,
        ),
        Param(
            "wbn",
            int,
            0,
            "warp_tiled: block tile columns (0: tuned for the size)",
            choices=(0, 32, 64, 128, 256),
            compile_time=True,
        ),
        Param(
            "wbk",
            int,
            0,
            "warp_tiled: block tile depth (0: tuned for the size)",
            choices=(0, 8, 16, 32),
            compile_time=True,
        ),
        Param(
            "wtm",
            int,
            0,
            "warp_tiled: rows of a thread's micro-tile (0: tuned for the size)",
            choices=(0, 4, 8),
            compile_time=True,
        ),
        Param(
            "wtn",
            int,
            0,
            "warp_tiled: columns of a thread's micro-tile (0: tuned for the size)",
            choices=(0, 4, 8),
            compile_time=True,
        ),
        Param(
            "wm",
            int,
            0,
            "warp_tiled: rows of C per warp (0: tuned for the size)",
            choices=(0, 16, 32, 64, 128),
            compile_time=True,
        ),
        Param(
            "wn",
            int,
            0,
            "warp_tiled: columns of C per warp (0: tuned for the size)",
            choices=(0, 16, 32, 64, 128),
            compile_time=True,
        ),
        Param(
            "wniter",
            int,
            0,
            "warp_tiled: micro-tiles per thread along a warp's columns (0: tuned for the size)",
            choices=(0, 1, 2, 4, 8),
            compile_time=True,
        ),
        Param(
            "stages",
            int,
            0,
            "warp_tiled: tiles in the cp.async ring, stages - 1 in flight "
            "during a compute (0: tuned for the size)",
            choices=(0, 2, 3, 4, 5),
            compile_time=True,
        ),
        Param(
            "a_async",
            int,
            0,
            "warp_tiled: A by cp.async, 4 bytes a copy (1), or through registers (0)",
            choices=(0, 1),
            compile_time=True,
        ),
        Param(
            "fragments",
            int,
            1,
            "warp_tiled: register buffers for the shared-memory operands (2: load k+1 "
            "during the FMAs of k)",
            choices=(1, 2),
            compile_time=True,
        ),
        Param(
            "a_pad",
            int,
            4,
            "warp_tiled: padding of the transposed A tile's rows (0 saves shared memory, "
            "4 avoids bank conflicts on the transposing stores)",
            choices=(0, 4),
            compile_time=True,
        ),
        Param(
            "min_blocks",
            int,
            1,
            "warp_tiled: blocks per SM the registers must allow (__launch_bounds__)",
            choices=(1, 2),
            compile_time=True,
        ),
        Param(
            "ms_stages",
            int,
            3,
            "multistage: tiles in its cp.async ring, ms_stages - 1 in flight during a compute",
            choices=(2, 3, 4),
            compile_time=True,
        ),
        Param(
            "group",
            int,
            8,
            "warp_tiled/multistage: block-rows numbered together, for L2 reuse (1: row by row)",
            choices=(1, 2, 4, 8, 16),
            compile_time=True,
        ),
        Param(
            "values",
            str,
            "integers",
            "integers: entries in {-2, -1, 1, 2}, checked exactly (k <= 2^22); reals: in "
            "[0.5, 1.5), checked against the float32 error bound",
            choices=VALUE_KINDS,
        ),
    )
    variants = (
        Variant("naive", "one thread per element of C, operands from global memory", "product"),
        Variant("tiled", "block x block tiles of A and B in shared memory", "product"),
        Variant("register_tile", "micro x micro outputs per thread in registers", "product"),
        Variant(
            "blocked",
            "bm x bn x bk tiles, A transposed, tm x tn per thread, 16-byte loads",
            "product",
        ),
        Variant(
            "pipelined",
            "blocked + double buffering: next tile loads (cp.async) during compute",
            "product",
        ),
        Variant(
            "warp_tiled",
            "warp tiles (wm x wn per warp, wtm x wtn micro-tiles per thread), B by cp.async "
            "into a ring of stages, grouped block order; tile shape tuned per size",
            "product",
        ),
        Variant(
            "multistage",
            "128 x 256 x 8 blocks, 128 accumulators per thread (16 x 8), both operands by "
            "cp.async into a ring of ms_stages, fragments double-buffered across tiles",
            "product",
        ),
        Variant(
            "cublas",
            "cupy.matmul: cuBLAS SGEMM, TF32 off (vendor reference)",
            "product",
            kind="library",
        ),
        Variant("numpy", "numpy.matmul on the CPU (CPU reference)", "product", kind="host"),
    )
    # What each variant launches (kernels_cu/matmul.cu guards each kernel): a sweep of one
    # kernel's tile shapes builds that kernel alone.
    variant_kernels: ClassVar[dict[str, tuple[str, ...]]] = {
        **{name: (name,) for name in KERNELS_NAMED_AS_VARIANTS},
        "multistage": ("multistage", "multistage_edges"),
        "cublas": (),
        "numpy": (),
    }

    def resolve(self, point: Point) -> Point:
        point = dict(point)
        if point.get("m") and point.get("n") and point.get("k"):
            point["size"] = None
        for axis in ("m", "n", "k"):
            point[axis] = point.get(axis) or point["size"]
        if any(not point.get(name) for name in WARP_TILE_PARAMS):
            tuned = tuned_warp_tile(point["m"], point["n"])
            for name in WARP_TILE_PARAMS:
                point[name] = point.get(name) or tuned[name]
        return point

    def validate_point(self, point: Point) -> str | None:
        threads = (point["bm"] // point["tm"]) * (point["bn"] // point["tn"])
        if threads < 32:
            return f"bm/tm x bn/tn = {threads} threads: give each block at least one warp"
        return exact_limit_problem(point["values"], point["k"])

    def inputs(self, point: Point, rng: np.random.Generator) -> dict[str, np.ndarray]:
        kind = point["values"]
        return {
            "A": matrix_values(kind, (point["m"], point["k"]), rng),
            "B": matrix_values(kind, (point["k"], point["n"]), rng),
        }

    def input_specs(self, point: Point) -> dict[str, BufferSpec]:
        f32 = np.dtype(np.float32)
        return {
            "A": BufferSpec((point["m"], point["k"]), f32),
            "B": BufferSpec((point["k"], point["n"]), f32),
        }

    def case(
        self, variant: str, point: Point, device: DeviceInfo, inputs: dict[str, np.ndarray]
    ) -> Case:
        m, n, k = point["m"], point["n"], point["k"]
        return Case(
            steps=self._steps(variant, point),
            outputs={"C": BufferSpec((m, n), np.dtype(np.float32))},
            work=Work(bytes_moved=4 * (m * k + k * n + m * n), flops=2 * m * n * k),
            # Small integers: exact. Reals (positive): the float32 dot-product bound.
            tolerance=Tolerance()
            if point["values"] == "integers"
            else Tolerance(rtol=dot_product_rtol(k)),
            skip=self._skip_reason(variant, point),
            cgma=self._cgma(variant, point),
        )

    def _shared_bytes(self, variant: str, point: Point) -> int:
        block, micro, bm, bn, bk = (point[k] for k in ("block", "micro", "bm", "bn", "bk"))
        if variant == "register_tile":
            return (block * micro * (block + 1) + block * block * micro) * 4
        if variant == "warp_tiled":
            wbm, wbn, wbk = point["wbm"], point["wbn"], point["wbk"]
            return point["stages"] * (wbk * (wbm + point["a_pad"]) + wbk * wbn) * 4
        if variant == "multistage":  # MS_RING_BYTES: A rows padded by 4
            return point["ms_stages"] * (MS_BK * (MS_BM + 4) + MS_BK * MS_BN) * 4
        one_stage = (bk * (bm + 4) + bk * bn) * 4
        return {"blocked": one_stage, "pipelined": 2 * one_stage}.get(variant, 0)

    def _skip_reason(self, variant: str, point: Point) -> str | None:
        if variant == "warp_tiled":
            problem = warp_shape_problem(point)
            if problem:
                return f"warp_tiled: {problem}"
        shared = self._shared_bytes(variant, point)
        if variant in RING_VARIANTS and shared > DYNAMIC_SHARED_LIMIT:
            return (
                f"{variant} needs {shared} bytes of shared memory per block with these "
                f"tile parameters; no GPU allows more than {DYNAMIC_SHARED_LIMIT}"
            )
        if variant not in RING_VARIANTS and shared > STATIC_SHARED_LIMIT:
            return (
                f"{variant} needs {shared} bytes of static shared memory per block with these "
                f"tile parameters; the limit is {STATIC_SHARED_LIMIT}"
            )
        if variant == "numpy" and point["m"] * point["n"] * point["k"] > NUMPY_MAX_FMAS:
            return "the CPU reference is timed only up to 4096^3 multiply-adds"
        return None

    def _steps(self, variant: str, point: Point) -> list[Launch | LibraryCall]:
        m, n, k = point["m"], point["n"], point["k"]
        if variant == "numpy":
            return []
        if variant == "cublas":
            return [LibraryCall("cupy.matmul", _CupyMatmul(m, n, k))]
        args = (
            BufferRef("C"),
            BufferRef("A"),
            BufferRef("B"),
            np.int32(m),
            np.int32(n),
            np.int32(k),
        )
        block = point["block"]
        if variant in ("naive", "tiled"):
            return [
                Launch(
                    variant, (ceil_div(n, block), ceil_div(m, block), 1), (block, block, 1), args
                )
            ]
        if variant == "register_tile":
            tile = block * point["micro"]
            return [
                Launch(variant, (ceil_div(n, tile), ceil_div(m, tile), 1), (block, block, 1), args)
            ]
        if variant == "multistage":
            return multistage_launches(m, n, k, args, self._shared_bytes(variant, point))
        if variant == "warp_tiled":
            threads = (point["wbm"] // point["wm"]) * (point["wbn"] // point["wn"]) * 32
            grid = (ceil_div(n, point["wbn"]), ceil_div(m, point["wbm"]), 1)
            dynamic = ring_dynamic_bytes(self._shared_bytes(variant, point))
            return [Launch(variant, grid, (threads, 1, 1), args, shared_bytes=dynamic)]
        threads = (point["bm"] // point["tm"]) * (point["bn"] // point["tn"])
        grid = (ceil_div(n, point["bn"]), ceil_div(m, point["bm"]), 1)
        return [Launch(variant, grid, (threads, 1, 1), args)]

    def unavailable(self, variant: str) -> str | None:
        if variant != "cublas":
            return None
        os.environ.setdefault("CUPY_TF32", "0")  # FP32 SGEMM, not TF32 tensor-core math
        try:
            import cupy  # noqa: F401
        except ImportError:
            return "CuPy is not importable: no cuBLAS reference"
        return None

    def host_run(
        self, variant: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        return {"C": np.matmul(inputs["A"], inputs["B"])}

    def reference(
        self, computes: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        return {"C": inputs["A"].astype(np.float64) @ inputs["B"].astype(np.float64)}

    def _cgma(self, variant: str, point: Point) -> float | None:
        """Flops per float loaded from global memory, from the tiling (not measured)."""
        if variant == "naive":
            return 1.0
        if variant == "tiled":
            return float(point["block"])
        if variant == "register_tile":
            return float(point["block"] * point["micro"])
        if variant in ("blocked", "pipelined"):
            return 2 * point["bm"] * point["bn"] / (point["bm"] + point["bn"])
        if variant == "warp_tiled":
            return 2 * point["wbm"] * point["wbn"] / (point["wbm"] + point["wbn"])
        if variant == "multistage":
            return 2 * MS_BM * MS_BN / (MS_BM + MS_BN)
        return None


def multistage_launches(m: int, n: int, k: int, args: tuple[Any, ...], ring: int) -> list[Launch]:
    """multistage's launches over the same grid: `multistage` computes the blocks wholly inside
    C when B's rows are 16-byte aligned and K is whole tiles, `multistage_edges` the others
    (each kernel returns at once from the other's blocks); each only where it has blocks."""
    grid = (ceil_div(n, MS_BN), ceil_div(m, MS_BM), 1)
    aligned = n % 4 == 0 and k % MS_BK == 0
    some_whole = aligned and m >= MS_BM and n >= MS_BN
    all_whole = aligned and m % MS_BM == 0 and n % MS_BN == 0
    kernels = ["multistage"] * some_whole + ["multistage_edges"] * (not all_whole)
    return [
        Launch(kernel, grid, (MS_THREADS, 1, 1), args, shared_bytes=ring_dynamic_bytes(ring))
        for kernel in kernels
    ]


BENCHMARK = Matmul()
