"""Does the naive transpose's time depend on where its buffers lie in device memory?

The harness change of 2026-11-27 made `naive` at 2048 x 2048 9-17% slower (H200) while every
other variant stayed the same; it also added device buffers (pristine input copies, a second
input set) beside the ones the kernel uses. This script times `naive` alone, outside
gpubench, with CuPy and CUDA events, with `out` placed after a padding buffer of growing size:
if the median moves by more than its noise as the padding changes, placement explains the
shift. Run on a GPU machine (CuPy installed), from the project root:

    python3 tests/scripts/transpose_placement.py [--size 2048] [--tile 16] [--block-rows 4]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import cupy

SOURCE = Path(__file__).resolve().parents[2] / "kernels_cu" / "transpose.cu"
MIB = 1 << 20


def median_ms(kernel, grid, block, args, flush, samples: int = 60) -> tuple[float, float]:
    """Median and median absolute deviation of `samples` cold runs (L2 flushed before each)."""
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(samples + 5):
        flush.fill(1)  # writes an L2-sized buffer, as gpubench's cold mode does
        start.record()
        kernel(grid, block, args)
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end))
    times = times[5:]
    middle = statistics.median(times)
    return middle, statistics.median(abs(t - middle) for t in times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--tile", type=int, default=16)
    parser.add_argument("--block-rows", type=int, default=4)
    parser.add_argument("--max-padding-mib", type=int, default=96)
    parser.add_argument("--step-mib", type=int, default=8)
    options = parser.parse_args()
    n, tile = options.size, options.tile
    defines = ("-DDTYPE=float", f"-DTILE={tile}", f"-DBLOCK_ROWS={options.block_rows}")
    module = cupy.RawModule(code=SOURCE.read_text(), options=defines)
    kernel = module.get_function("naive")
    device = cupy.cuda.Device()
    l2 = device.attributes["L2CacheSize"]
    flush = cupy.empty(l2 // 4, dtype=cupy.float32)
    source = cupy.random.random((n, n), dtype=cupy.float32) + 1
    grid = ((n + tile - 1) // tile, (n + tile - 1) // tile, 1)
    block = (tile, options.block_rows, 1)
    name = cupy.cuda.runtime.getDeviceProperties(device.id)["name"].decode()
    print(
        f"{name}, naive {n}x{n}, tile {tile}, block rows {options.block_rows}, L2 {l2 / MIB:.0f} MiB"
    )
    print("padding MiB   out offset from in (MiB)   median us   MAD us")
    for padding in range(0, options.max_padding_mib + 1, options.step_mib):
        pad = cupy.empty(padding * MIB // 4 or 1, dtype=cupy.float32)
        out = cupy.empty((n, n), dtype=cupy.float32)
        args = (out, source, cupy.int32(n), cupy.int32(n))
        middle, spread = median_ms(kernel, grid, block, args, flush)
        assert cupy.array_equal(out, source.T), "naive transposed wrongly"
        offset = (out.data.ptr - source.data.ptr) / MIB
        print(f"{padding:11d}   {offset:24.1f}   {middle * 1e3:9.2f}   {spread * 1e3:6.2f}")
        del out, pad
        cupy.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
