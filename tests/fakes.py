"""A CPU stand-in for the PyCUDA backend and a tiny suite whose kernels are Python functions.

It lets the runner's logic (poisoning, verification, skips, compile failures, speedups) be
tested in CI, where there is no GPU.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from gpubench.backends.base import KernelAttributes
from gpubench.benchmark import (
    Benchmark,
    BufferRef,
    BufferSpec,
    Launch,
    Param,
    Point,
    Tolerance,
    Variant,
    Work,
)  # fmt: skip
from gpubench.device import DeviceInfo, Environment, host_environment
from gpubench.errors import KernelCompileError, KernelLaunchError

FAKE_DEVICE = DeviceInfo(
    name="Fake GPU", compute_capability=(9, 0), sm_count=4, sm_clock_mhz=1000.0,
    memory_clock_mhz=1000.0, memory_bus_width_bits=64, memory_bytes=2**30, l2_bytes=2**20,
    shared_per_block_bytes=48 * 1024, shared_per_block_optin_bytes=96 * 1024,
    shared_per_sm_bytes=96 * 1024, registers_per_sm=65536, registers_per_block=65536,
    max_threads_per_block=1024, max_threads_per_sm=2048, warp_size=32,
)  # fmt: skip


def _scale_good(out: np.ndarray, x: np.ndarray, n: int) -> None:
    out[:n] = 2 * x[:n]


def _scale_skips_last(out: np.ndarray, x: np.ndarray, n: int) -> None:
    out[: n - 1] = 2 * x[: n - 1]


def _scale_wrong(out: np.ndarray, x: np.ndarray, n: int) -> None:
    out[:n] = 2 * x[:n]
    out[n // 2] += 1.0


def _scale_crash(out: np.ndarray, x: np.ndarray, n: int) -> None:
    raise KernelLaunchError(
        "LaunchError: cuStreamSynchronize failed: an illegal memory access was encountered"
    )


def _scale_refused(out: np.ndarray, x: np.ndarray, n: int) -> None:
    raise KernelLaunchError(
        "LaunchError: cuLaunchKernel failed: too many resources requested for launch"
    )


def _scale_hang(out: np.ndarray, x: np.ndarray, n: int) -> None:
    time.sleep(3600)  # a kernel that never ends


def _scale_die(out: np.ndarray, x: np.ndarray, n: int) -> None:
    os._exit(3)  # the process dies under us, as with a segfault in a driver


# Fake GPU time per kernel (ms): `fast` is twice as fast as `good`.
KERNELS = {
    "good": (_scale_good, 1.0),
    "fast": (_scale_good, 0.5),
    "skips_last": (_scale_skips_last, 1.0),
    "wrong": (_scale_wrong, 1.0),
    "crash": (_scale_crash, 1.0),
    "refused": (_scale_refused, 1.0),
    "huge_block": (_scale_good, 1.0),
}
# Variants that only make sense behind a worker process (they hang or kill the process).
DANGEROUS = {"hang": (_scale_hang, 1.0), "die": (_scale_die, 1.0), "slow": (_scale_good, 1.0)}
KERNELS.update(DANGEROUS)
SAFE_VARIANTS = tuple(k for k in KERNELS if k not in DANGEROUS)


class FakeModule:
    def attributes(self, kernel: str) -> KernelAttributes:
        if kernel not in KERNELS:
            raise KernelLaunchError(f"kernel {kernel!r} not found in the module")
        return KernelAttributes(registers_per_thread=16, static_shared_bytes=0,
                                local_bytes_per_thread=0, max_threads_per_block=1024)  # fmt: skip


@dataclass
class FakeBound:
    calls: list[tuple[str, tuple[Any, ...]]]

    def enqueue(self) -> None:
        for kernel, args in self.calls:
            KERNELS[kernel][0](*args)


class FakeBackend:
    def __init__(self, device_index: int = 0) -> None:
        self.device = FAKE_DEVICE
        self.compiles: list[list[str]] = []
        self.timed: list[str] = []
        self.live_buffers = 0
        self.context_broken = False

    def environment(self) -> Environment:
        env = host_environment()
        env.device = self.device.to_dict()
        return env

    compiler_id = "fake"

    def compile_binary(self, source: str, options: list[str], include_dirs: list[str]) -> bytes:
        self.compiles.append(options)
        if "-DBROKEN=1" in options:
            raise KernelCompileError(
                "nvcc failed", 'kernel.cu(3): error: identifier "oops" is undefined'
            )
        return b"fake binary"

    def load(self, binary: bytes) -> FakeModule:
        return FakeModule()

    def context_alive(self) -> bool:
        return not self.context_broken

    def sm_clock_mhz(self) -> float | None:
        return self.device.sm_clock_mhz

    def readings(self) -> dict:
        return {"sm_clock_mhz": 1000.0, "temperature_c": 40, "power_w": 100.0}

    def time_hot_ms(self, bound: FakeBound, runs: int) -> float:
        return self.time_once_ms(bound, flush_l2=False)

    def alloc(self, spec: BufferSpec) -> np.ndarray:
        self.live_buffers += 1
        return np.zeros(spec.nbytes, dtype=np.uint8)

    def upload(self, host: np.ndarray) -> np.ndarray:
        self.live_buffers += 1
        return np.ascontiguousarray(host).reshape(-1).view(np.uint8).copy()

    def download(self, buffer: np.ndarray, spec: BufferSpec) -> np.ndarray:
        return buffer.view(spec.dtype).reshape(spec.shape).copy()

    def poison(self, buffer: np.ndarray, spec: BufferSpec) -> None:
        buffer[:] = 0xFF

    def zero(self, buffer: np.ndarray, spec: BufferSpec) -> None:
        buffer[:] = 0

    def free(self, buffer: np.ndarray) -> None:
        self.live_buffers -= 1

    def launch_problem(self, module: FakeModule, launches: list[Launch]) -> str | None:
        for launch in launches:
            if launch.threads_per_block > 1024:
                return (
                    f"{launch.kernel}: {launch.threads_per_block} threads per block; at most 1024"
                )
        return None

    def bind(
        self, module: FakeModule, launches: list[Launch], buffers: dict[str, Any], host_inputs=None
    ) -> FakeBound:
        calls = []
        for launch in launches:
            args = []
            for arg in launch.args:
                if isinstance(arg, BufferRef):
                    args.append(buffers[arg.name].view(np.float32))
                else:
                    args.append(int(arg))
            calls.append((launch.kernel, tuple(args)))
        return FakeBound(calls)

    def run_checked(self, bound: FakeBound) -> None:
        try:
            bound.enqueue()
        except KernelLaunchError:
            if any(kernel == "crash" for kernel, _ in bound.calls):
                self.context_broken = True  # a sticky error, like an illegal address
            raise

    def time_once_ms(self, bound: FakeBound, flush_l2: bool) -> float:
        self.timed.append(bound.calls[0][0])
        if bound.calls[0][0] == "slow":
            time.sleep(0.02)  # gives a signal or a kill -9 time to land mid-sweep
        return KERNELS[bound.calls[0][0]][1]


class ScaleSuite(Benchmark):
    """out = 2 * x, with variants that are right, unwritten, wrong, crashing or unlaunchable."""

    name = "scale"
    description = "test suite"
    baseline = "good"
    source_file: ClassVar[str] = __file__  # any existing file: the fake compiler ignores it
    params = (
        Param("n", int, 1000, "elements", minimum=1),
        Param(
            "broken", int, 0, "1 makes the fake compiler fail", choices=(0, 1), compile_time=True
        ),
        Param("label", str, "a", "free text"),
        Param("scale", float, 1.0, "a float"),
    )
    variants = tuple(Variant(k, k, computes="double") for k in SAFE_VARIANTS)

    def defines(self, point: Point) -> dict[str, str]:
        return {"BROKEN": str(point["broken"])}

    def inputs(self, point: Point, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"x": rng.random(point["n"], dtype=np.float32) + 1}

    def outputs(self, variant: str, point: Point) -> dict[str, BufferSpec]:
        return {"out": BufferSpec((point["n"],), np.dtype(np.float32))}

    def launches(self, variant: str, point: Point, device=None) -> list[Launch]:
        block = (2048 if variant == "huge_block" else 256, 1, 1)
        return [
            Launch(
                variant, (1, 1, 1), block, (BufferRef("out"), BufferRef("x"), np.int32(point["n"]))
            )
        ]

    def reference(
        self, computes: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        return {"out": 2 * inputs["x"]}

    def tolerance(self, variant: str, point: Point, device=None) -> Tolerance:
        return Tolerance(rtol=1e-6)

    def work(self, variant: str, point: Point) -> Work:
        return Work(bytes_moved=8 * point["n"], flops=point["n"], elements=point["n"])


class DangerousScaleSuite(ScaleSuite):
    """ScaleSuite plus variants that hang forever or kill their process: only for tests of
    the worker isolation."""

    name = "dangerous_scale"
    variants = tuple(Variant(k, k, computes="double") for k in KERNELS)
