"""Time matmul's `multistage` kernel against cuBLAS outside the harness: the kernel's source
compiled with nvcc (or NVRTC, --nvrtc) into a cubin, loaded by CuPy, launched in turns with
`cupy.matmul` (TF32 off) under CUDA events; each output first checked exactly on integer
inputs, poisoned before.

Not a pytest test (performance is checked by runs on the GPU, not by unit tests). Usage:

    python tests/scripts/matmul_vs_cublas.py --sizes 4096,8192,16384 --rounds 10
    python tests/scripts/matmul_vs_cublas.py --sizes 4096 --define MS_STAGES=4 --nvrtc
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("CUPY_TF32", "0")

import cupy as cp
import numpy as np

from gpubench.benchmarks.matmul import MS_BM as BM
from gpubench.benchmarks.matmul import MS_BN as BN
from gpubench.benchmarks.matmul import MS_THREADS as THREADS
from gpubench.benchmarks.matmul import ring_dynamic_bytes
from gpubench.load import registry

KERNELS = Path(__file__).resolve().parents[2] / "kernels_cu" / "matmul.cu"


def cubin(defines: list[str], arch: str, nvrtc: bool) -> bytes:
    options = [f"-D{d}" for d in defines]
    if nvrtc:
        from gpubench.backends.cuda_core_backend import compile_cubin

        return compile_cubin(KERNELS.read_text(), options, [], arch)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "matmul.cubin"
        command = ["nvcc", "-cubin", f"-arch={arch}", *options, "-o", str(out), str(KERNELS)]
        subprocess.run(command, check=True)
        return out.read_bytes()


def time_size(kernel: Any, dynamic: int, size: int, rounds: int, rng: np.random.Generator) -> None:
    """Check both at `size`, then time them in turns; print the medians."""
    values = np.array([-2, -1, 1, 2], np.float32)
    a = cp.asarray(values[rng.integers(0, 4, (size, size))])
    b = cp.asarray(values[rng.integers(0, 4, (size, size))])
    c = cp.empty((size, size), cp.float32)
    grid, n = (size // BN, size // BM, 1), np.int32(size)

    def multistage() -> None:
        kernel(grid, (THREADS, 1, 1), (c, a, b, n, n, n), shared_mem=dynamic)

    runs = {"cublas": lambda: cp.matmul(a, b, out=c), "multistage": multistage}
    expected = cp.matmul(a, b)
    for name, run in runs.items():  # exact: integer products and sums below 2^24
        c.fill(cp.nan)
        run()
        assert bool(cp.array_equal(c, expected)), f"{name} is wrong at {size}"
    reps = max(1, int(0.02 / (2 * size**3 / 50e12)))  # about 20 ms per sample
    start, end = cp.cuda.Event(), cp.cuda.Event()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for run in runs.values():
        run()
    for r in range(rounds):
        for name in runs if r % 2 == 0 else reversed(list(runs)):
            start.record()
            for _ in range(reps):
                runs[name]()
            end.record()
            end.synchronize()
            times[name].append(cp.cuda.get_elapsed_time(start, end) / reps)
    medians = {name: float(np.median(t)) for name, t in times.items()}
    for name, median in medians.items():
        share = medians["cublas"] / median * 100
        print(f"{size}^3 {name:10s} {median:9.4f} ms {2 * size**3 / median / 1e9:6.2f} TFLOP/s "
              f"{share:6.1f}% of cuBLAS")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4096,8192", help="square sizes, multiples of 256")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--define", action="append", default=[], help="NAME=VALUE (MS_STAGES=3)")
    parser.add_argument("--nvrtc", action="store_true", help="compile with NVRTC (cuda-core)")
    args = parser.parse_args()
    major, minor = divmod(int(cp.cuda.Device().compute_capability), 10)  # "90": sm_90
    stages = int(dict(d.split("=", 1) for d in args.define).get("MS_STAGES", 3))
    bench = registry.get("matmul")
    ring = bench._shared_bytes(
        "multistage", bench.resolve({**bench.defaults(), "ms_stages": stages})
    )
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin(args.define, f"sm_{major}{minor}", args.nvrtc))
        f.flush()
        module = cp.RawModule(path=f.name)
        kernel = module.get_function("multistage")
    dynamic = ring_dynamic_bytes(ring)
    if dynamic:
        kernel.max_dynamic_shared_size_bytes = dynamic
    print(f"multistage: {kernel.num_regs} registers, {'NVRTC' if args.nvrtc else 'nvcc'}")
    rng = np.random.default_rng(1)
    for size in (int(s) for s in args.sizes.split(",")):
        if size % BN:
            raise SystemExit(f"{size}: multistage alone computes whole 128 x 256 blocks")
        time_size(kernel, dynamic, size, args.rounds, rng)


if __name__ == "__main__":
    main()
