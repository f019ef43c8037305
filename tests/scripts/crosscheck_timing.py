"""Time one transpose kernel with plain PyCUDA and CUDA events, outside the harness, and
compare with the harness's figure for the same kernel and point (and with CuPy's transpose).

Not a pytest test (performance is checked by runs on the GPU, not by unit tests). Usage:

    gpubench run transpose --size 16384 --json run.json
    python tests/scripts/crosscheck_timing.py --harness-json run.json --size 16384 --variant padded
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import numpy as np
import pycuda.autoprimaryctx  # noqa: F401  (primary context, like the harness)
import pycuda.driver as cuda
from pycuda.compiler import SourceModule

KERNELS = Path(__file__).resolve().parents[2] / "kernels_cu" / "transpose.cu"


def event_median_ms(launch, batches: int, per_batch: int = 20) -> float:
    """Median over batches of (events around `per_batch` back-to-back launches) / per_batch:
    the textbook method, which amortizes host launch overhead without the harness's tricks."""
    start, end = cuda.Event(), cuda.Event()
    for _ in range(5):
        launch()
    cuda.Context.synchronize()
    times = []
    for _ in range(batches):
        start.record()
        for _ in range(per_batch):
            launch()
        end.record()
        end.synchronize()
        times.append(end.time_since(start) / per_batch)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--harness-json", required=True)
    parser.add_argument("--size", type=int, default=16384)
    parser.add_argument("--tile", type=int, default=32)
    parser.add_argument("--block-rows", type=int, default=8)
    parser.add_argument("--variant", action="append", default=None)
    parser.add_argument("--batches", type=int, default=20)
    args = parser.parse_args()
    variants = args.variant or ["padded", "vectorized", "copy"]
    n, tile = args.size, args.tile

    dev = cuda.Context.get_device()
    arch = "sm_{}{}".format(*dev.compute_capability())
    options = ["-DDTYPE=float", f"-DTILE={tile}", f"-DBLOCK_ROWS={args.block_rows}"]
    module = SourceModule(KERNELS.read_text(), options=options, arch=arch, no_extern_c=True)
    a = np.random.default_rng(0).random((n, n), dtype=np.float32) + 1
    d_in = cuda.to_device(a)
    d_out = cuda.mem_alloc(a.nbytes)
    nbytes = 2 * a.nbytes

    harness = {
        r["variant"]: r["summary"]["median_ms"]
        for r in json.loads(Path(args.harness_json).read_text())["results"]
        if r["status"] == "ok" and r["point"]["rows"] == n and r["point"]["tile"] == tile
    }
    print(f"{'variant':12} {'plain ms':>10} {'harness ms':>11} {'diff':>7} {'plain GB/s':>11}")
    for variant in variants:
        func = module.get_function(variant)
        threads_x = tile // 4 if variant == "vectorized" else tile
        grid = ((n + tile - 1) // tile, (n + tile - 1) // tile)

        def launch(func=func, threads_x=threads_x, grid=grid):
            func(
                d_out,
                d_in,
                np.int32(n),
                np.int32(n),
                block=(threads_x, args.block_rows, 1),
                grid=grid,
            )

        plain = event_median_ms(launch, args.batches)
        ref = harness.get(variant)
        diff = f"{100 * (ref - plain) / plain:+.1f}%" if ref else "n/a"
        ref_text = f"{ref:.4f}" if ref else "n/a"
        print(f"{variant:12} {plain:10.4f} {ref_text:>11} {diff:>7} {nbytes / plain / 1e6:11.1f}")

    try:
        import cupy
    except ImportError:
        print("CuPy not importable: no vendor comparison")
        return
    x = cupy.asarray(a)
    cupy_ms = event_median_ms(lambda: cupy.ascontiguousarray(x.T), args.batches)
    print(f"{'cupy .T':12} {cupy_ms:10.4f} {'':>11} {'':>7} {nbytes / cupy_ms / 1e6:11.1f}")


if __name__ == "__main__":
    main()
