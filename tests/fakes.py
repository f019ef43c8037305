"""A CPU stand-in for the PyCUDA backend, and small suites whose kernels are Python functions.

The fake backend implements the whole backend contract (gpubench.backends.base) on NumPy byte
arrays: device and host buffers, launches, copies in every direction, library calls, Repeat
with its flag read back, several streams (run in order), timelines. It lets the runner's
logic (poisoning, in-out buffers, verification, re-checks, skips, convergence, compile
failures, speedups) be tested in CI, where there is no GPU.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from gpubench.backends.base import KernelAttributes
from gpubench.errors import KernelCompileError, KernelLaunchError, OutOfMemory
from gpubench.model.benchmark import (
    Benchmark,
    BufferRef,
    BufferSpec,
    Case,
    Copy,
    Launch,
    LibraryCall,
    Param,
    Point,
    Repeat,
    RunRecord,
    Tolerance,
    Variant,
    Work,
)  # fmt: skip
from gpubench.model.device import DeviceInfo, Environment, host_environment
from gpubench.model.energy import EnergyTrace, idle_watts
from gpubench.model.timing import Batch

# The fake GPU's L2 flush (ms) before each flushed cold sample: a write of its 1 MB of L2.
FAKE_FLUSH_MS = 0.001
FAKE_DEVICE = DeviceInfo(
    name="Fake GPU", compute_capability=(9, 0), sm_count=4, sm_clock_mhz=1000.0,
    memory_clock_mhz=1000.0, memory_bus_width_bits=4096, memory_bytes=2**30, l2_bytes=2**20,
    shared_per_block_bytes=48 * 1024, shared_per_block_optin_bytes=96 * 1024,
    shared_per_sm_bytes=96 * 1024, registers_per_sm=65536, registers_per_block=65536,
    max_threads_per_block=1024, max_threads_per_sm=2048, warp_size=32,
)  # fmt: skip


def f32(buffer: np.ndarray) -> np.ndarray:
    return buffer.view(np.float32)


def _scale_good(out: np.ndarray, x: np.ndarray, n: int) -> None:
    f32(out)[:n] = 2 * f32(x)[:n]


def _scale_skips_last(out: np.ndarray, x: np.ndarray, n: int) -> None:
    f32(out)[: n - 1] = 2 * f32(x)[: n - 1]


def _scale_wrong(out: np.ndarray, x: np.ndarray, n: int) -> None:
    f32(out)[:n] = 2 * f32(x)[:n]
    f32(out)[n // 2] += 1.0


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


def _scale_die_once(out: np.ndarray, x: np.ndarray, n: int) -> None:
    """Kills its process the first time it runs at a size (a worker killed from outside, as
    with kill -9), then computes: a marker file per size in $GPUBENCH_TEST_MARKERS."""
    from pathlib import Path

    marker = Path(os.environ["GPUBENCH_TEST_MARKERS"]) / f"died-{n}"
    if not marker.exists():
        marker.touch()
        os._exit(9)
    _scale_good(out, x, n)


def _scale_first_launch_only(out: np.ndarray, x: np.ndarray, n: int, counter: np.ndarray) -> None:
    """Right on its first launch only: a counter it never resets (the bug the re-check after
    timing exists for)."""
    count = counter.view(np.uint32)
    f32(out)[:n] = 2 * f32(x)[:n] + (1.0 if count[0] else 0.0)
    count[0] += 1


def _scale_writes_once(out: np.ndarray, x: np.ndarray, n: int, counter: np.ndarray) -> None:
    """Writes its output on the first launch only, then nothing."""
    count = counter.view(np.uint32)
    if not count[0]:
        f32(out)[:n] = 2 * f32(x)[:n]
    count[0] += 1


def _scale_crash_when_timed(out: np.ndarray, x: np.ndarray, n: int, counter: np.ndarray) -> None:
    """Right on its checked run, then an illegal address on the first timed run."""
    count = counter.view(np.uint32)
    count[0] += 1
    if count[0] > 1:
        _scale_crash(out, x, n)
    _scale_good(out, x, n)


def _axpy_inplace(y: np.ndarray, x: np.ndarray, a: float, n: int) -> None:
    f32(y)[:n] = np.float32(a) * f32(x)[:n] + f32(y)[:n]


def _count_down(values: np.ndarray, changed: np.ndarray, n: int) -> None:
    """One relaxation: every positive value goes down by one; the flag says whether any did."""
    v = values.view(np.int32)[:n]
    if (v > 0).any():
        changed.view(np.int32)[0] = 1
    np.maximum(v - 1, 0, out=v)


def _reversed_through_shared(out: np.ndarray, x: np.ndarray, n: int) -> None:
    """out = 2 * x reversed, as the contract's kernel stages it through shared memory."""
    f32(out)[:n] = 2.0 * f32(x)[:n][::-1]


def _count_down_restless(
    values: np.ndarray, changed: np.ndarray, n: int, launches: np.ndarray
) -> None:
    """Counts down right, but from its 21st launch on always says it changed something: the
    checked run converges, the runs after it never do (their answer is still right)."""
    count = launches.view(np.uint32)
    count[0] += 1
    _count_down(values, changed, n)
    if count[0] > 20:
        changed.view(np.int32)[0] = 1


def _count_down_never_done(values: np.ndarray, changed: np.ndarray, n: int) -> None:
    changed.view(np.int32)[0] = 1


# -- kernels that game the harness (gpubench.engine.audit, gpubench.engine.input_sets catch each) ----------
# What a cheating kernel keeps between launches (FakeBackend() clears it), and the share of
# its usual time the last launch took (a memo hit or a skipped launch is cheap).
CHEAT_STATE: dict[Any, Any] = {}
LAUNCH_COST = [1.0]


def _scale_skips_filled(out: np.ndarray, x: np.ndarray, n: int) -> None:
    """Computes only the elements whose output is not a number yet (the poison is NaN)."""
    o, v = f32(out)[:n], f32(x)[:n]
    todo = np.isnan(o)
    o[todo] = 2 * v[todo]
    LAUNCH_COST[0] = 1.0 if todo.any() else 0.1


def _memo(key: Any, out: np.ndarray, x: np.ndarray, n: int, entries: int | None) -> None:
    """out from the cache under `key`, else computed and cached (keeping at most `entries`)."""
    if key in CHEAT_STATE:
        f32(out)[:n] = CHEAT_STATE[key]
        LAUNCH_COST[0] = 0.1
        return
    _scale_good(out, x, n)
    if entries is not None and len(CHEAT_STATE) >= entries:
        CHEAT_STATE.clear()
    CHEAT_STATE[key] = f32(out)[:n].copy()


def _scale_memo_by_address(out: np.ndarray, x: np.ndarray, n: int) -> None:
    """Keeps its answer and returns it while the input buffer's address is unchanged."""
    _memo(("address", x.ctypes.data, n), out, x, n, None)


def _scale_memo_by_values(out: np.ndarray, x: np.ndarray, n: int) -> None:
    """Keeps every answer keyed by three input values (first, middle, last)."""
    v = f32(x)[:n]
    _memo(("values", float(v[0]), float(v[n // 2]), float(v[-1])), out, x, n, None)


def _scale_memo_last_values(out: np.ndarray, x: np.ndarray, n: int) -> None:
    """Keeps its last answer keyed by the input values (a full compare: never wrong)."""
    _memo(("last", f32(x)[:n].tobytes()), out, x, n, 1)


def _scale_even_launches(out: np.ndarray, x: np.ndarray, n: int, counter: np.ndarray) -> None:
    """Works on even launches only (the checked run is launch 0)."""
    count = counter.view(np.uint32)
    if count[0] % 2 == 0:
        _scale_good(out, x, n)
    LAUNCH_COST[0] = 1.0 if count[0] % 2 == 0 else 0.0
    count[0] += 1


def _scale_lazy_every_fifth(out: np.ndarray, x: np.ndarray, n: int, counter: np.ndarray) -> None:
    """Skips one launch in five: too rare for the default mode to be sure of, never missed
    in untrusted mode."""
    count = counter.view(np.uint32)
    if count[0] % 5 != 4:
        _scale_good(out, x, n)
    count[0] += 1


def _scale_skips_unchanged(out: np.ndarray, x: np.ndarray, n: int) -> None:
    """Does nothing while two input values are those of its previous launch."""
    v = f32(x)[:n]
    key = (float(v[0]), float(v[-1]))
    if CHEAT_STATE.get("previous") == key:
        LAUNCH_COST[0] = 0.0
        return
    CHEAT_STATE["previous"] = key
    _scale_good(out, x, n)


def _scale_writes_input(out: np.ndarray, x: np.ndarray, n: int) -> None:
    """Right, then adds one to its first input element."""
    _scale_good(out, x, n)
    f32(x)[0] += 1


def _scale_leaves_a_thread(out: np.ndarray, x: np.ndarray, n: int) -> None:
    """Right, and starts a host thread that outlives the variant."""
    import threading

    _scale_good(out, x, n)
    if "thread" not in CHEAT_STATE:
        CHEAT_STATE["thread"] = threading.Thread(
            target=time.sleep, args=(5.0,), name="cheat", daemon=True
        )
        CHEAT_STATE["thread"].start()


# Fake GPU time per kernel (ms): `fast` is twice as fast as `good`.
KERNELS: dict[str, tuple[Any, float]] = {
    "good": (_scale_good, 1.0),
    "fast": (_scale_good, 0.5),
    "skips_last": (_scale_skips_last, 1.0),
    "wrong": (_scale_wrong, 1.0),
    "crash": (_scale_crash, 1.0),
    "refused": (_scale_refused, 1.0),
    "huge_block": (_scale_good, 1.0),
    "first_launch_only": (_scale_first_launch_only, 1.0),
    "writes_once": (_scale_writes_once, 1.0),
    "crash_when_timed": (_scale_crash_when_timed, 1.0),
    "axpy_inplace": (_axpy_inplace, 1.0),
    "count_down": (_count_down, 0.25),
    "reversed_through_shared": (_reversed_through_shared, 1.0),
    "count_down_never_done": (_count_down_never_done, 0.25),
    "count_down_restless": (_count_down_restless, 0.25),
    "skips_filled": (_scale_skips_filled, 1.0),
    "memo_by_address": (_scale_memo_by_address, 1.0),
    "memo_by_values": (_scale_memo_by_values, 1.0),
    "memo_last_values": (_scale_memo_last_values, 1.0),
    "even_launches": (_scale_even_launches, 1.0),
    "lazy_every_fifth": (_scale_lazy_every_fifth, 1.0),
    "skips_unchanged": (_scale_skips_unchanged, 1.0),
    "writes_input": (_scale_writes_input, 1.0),
    "leaves_a_thread": (_scale_leaves_a_thread, 1.0),
    # Right, at a speed no device has (8 MB in 1 µs, past the fake's 4 SMs x 128 B x 1 GHz).
    "too_fast": (_scale_good, 1e-3),
    # Right, and timed at a fraction of a microsecond: a patched timer.
    "untimed": (_scale_good, 1e-7),
}
# An energy reading as a results file keeps it (gpubench.model.energy), for the tests of the
# files and stores that carry it.
ENERGY_READING = {
    "joules_per_run": 0.25,
    "average_watts": 250.0,
    "idle_watts": 50.0,
    "above_idle_joules_per_run": 0.2,
    "sm_clock_mhz": 1980.0,
    "window_s": 1.0,
    "runs": 1000,
    "time_per_run_ms": 1.0,
    "duty": 0.99,
    "intervals": 9,
    "counter_period_ms": 100.0,
    "noise": 0.004,
    "counter_joules": 225.0,
    "sampled_joules": 226.0,
}
# Fake power (W) per kernel while its runs go back to back, where it is not the meter's
# `busy_watts`: a kernel slower in time may then spend less energy per run
# (tests/suites/tunable.py).
KERNEL_WATTS: dict[str, float] = {}
# The cheats, each with the words of the checks that catch it in the default mode (in
# untrusted mode, which checks every timed run, another check may come first).
STALE = "outputs left as the previous run wrote them"
AUDIT = "outputs poisoned before it, checked after it"
CHEATS = {
    "skips_filled": (STALE,),
    "memo_by_address": (STALE,),
    "memo_by_values": (STALE,),  # on a near copy; a handed-over second set misses it
    "even_launches": (STALE, AUDIT),  # the audit catches it when it falls on an odd launch
    "skips_unchanged": (AUDIT,),
    "writes_input": ("wrote its inputs: 'x' (1 of",),
    "leaves_a_thread": ("left host threads running (cheat)",),
    "too_fast": ("faster than the hardware allows",),
    "untimed": ("below the launch floor",),
}
# Variants that only make sense behind a worker process (they hang or kill the process).
DANGEROUS = {"hang": (_scale_hang, 1.0), "die": (_scale_die, 1.0), "slow": (_scale_good, 1.0),
             "die_once": (_scale_die_once, 1.0)}  # fmt: skip
KERNELS.update(DANGEROUS)
SCALE_VARIANTS = ("good", "fast", "skips_last", "wrong", "crash", "refused", "huge_block",
                  "first_launch_only", "writes_once")  # fmt: skip


class RecordingObserver:
    """A runner's observer that keeps what it is told, in order, each result named by its
    point's `key` parameter and its variant."""

    def __init__(self, key: str) -> None:
        self.key, self.events = key, []

    def started(self, total: int) -> None:
        self.events.append(("started", total))

    def finished(self, result: Any) -> None:
        self.events.append(("finished", result.point[self.key], result.variant))

    def point_finished(self, results: list[Any]) -> None:
        self.events.append(("point", [(r.point[self.key], r.variant) for r in results]))


class FakeModule:
    def attributes(self, kernel: str) -> KernelAttributes:
        if kernel not in KERNELS:
            raise KernelLaunchError(f"kernel {kernel!r} not found in the module")
        return KernelAttributes(registers_per_thread=16, static_shared_bytes=0,
                                local_bytes_per_thread=0, max_threads_per_block=1024)  # fmt: skip


@dataclass
class FakeBuffer:
    location: str
    data: np.ndarray  # uint8


def _default_label(step: Any) -> str:
    """What a timeline calls a step without a label, as the driver backends do."""
    if isinstance(step, Launch):
        return step.kernel
    if isinstance(step, LibraryCall):
        return step.name
    return "repeat" if isinstance(step, Repeat) else ""


@dataclass
class FakeBound:
    steps: list[Any]
    buffers: dict[str, FakeBuffer]
    record: RunRecord = field(default_factory=RunRecord)
    runs: int = 0
    released: bool = False

    @property
    def first_kernel(self) -> str | None:
        for step in self.steps:
            for inner in step.body if isinstance(step, Repeat) else (step,):
                if isinstance(inner, Launch):
                    return inner.kernel
        return None

    def _do(self, step: Any) -> None:
        if isinstance(step, Launch):
            args = [
                self.buffers[a.name].data[a.offset :] if isinstance(a, BufferRef) else a.item()
                for a in step.args
            ]
            KERNELS[step.kernel][0](*args)
        elif isinstance(step, Copy):
            src, dst = self.buffers[step.src].data, self.buffers[step.dst].data
            n = len(src) - step.src_offset if step.nbytes is None else step.nbytes
            dst[step.dst_offset : step.dst_offset + n] = src[step.src_offset : step.src_offset + n]
        elif isinstance(step, LibraryCall):
            step.run({name: id(b) for name, b in self.buffers.items()}, 0)

    def enqueue(self) -> None:
        self.record = RunRecord()
        self.runs += 1
        for step in self.steps:
            if not isinstance(step, Repeat):
                self._do(step)
                continue
            flag = self.buffers[step.flag].data
            for iteration in range(1, step.max_iterations + 1):
                flag[:] = 0
                for inner in step.body:
                    self._do(inner)
                if not flag.any():
                    self.record.iterations += iteration
                    break
            else:
                self.record.iterations += step.max_iterations
                self.record.converged = False
                self.record.unconverged.append(step.label or f"repeat on {step.flag!r}")


class FakeMeter:
    """An energy counter on a clock of its own: the fake backend's hot runs move it on at
    `busy_watts`, the idle measurement at `idle_watts_drawn`; the counter changes every
    `period_s`, exactly, as NVML's does every 100 ms."""

    def __init__(
        self, busy_watts: float = 250.0, idle_watts_drawn: float = 50.0, period_s: float = 0.1
    ) -> None:
        self.busy_watts, self.idle_watts_drawn, self.period_s = (
            busy_watts,
            idle_watts_drawn,
            period_s,
        )
        self.t = 0.0
        self.millijoules = 0.0
        self.trace: EnergyTrace | None = None
        self.idle_reads = 0
        self._idle: float | bool | None = False

    def now(self) -> float:
        return self.t

    def advance(self, seconds: float, watts: float) -> None:
        """`seconds` at `watts`: a tick (and a power sample) at every period boundary."""
        end = self.t + seconds
        boundary = (math.floor(self.t / self.period_s + 1e-9) + 1) * self.period_s
        while boundary <= end + 1e-12:
            self.millijoules += watts * (boundary - self.t) * 1000.0
            self.t = boundary
            if self.trace is not None:
                self.trace.ticks.append((self.t, self.millijoules))
                self.trace.power.append((self.t, watts))
                self.trace.clocks_mhz.append(1000.0)
                self.trace.temperatures_c.append(45.0)
            boundary += self.period_s
        self.millijoules += watts * (end - self.t) * 1000.0
        self.t = end

    def start(self) -> None:
        self.trace = EnergyTrace()

    def stop(self) -> EnergyTrace:
        trace, self.trace = self.trace, None
        assert trace is not None, "stop without start"
        return trace

    def idle_watts(self) -> float | None:
        if self._idle is False:
            self.idle_reads += 1
            self.start()
            began = self.now()
            self.advance(0.45, self.idle_watts_drawn)
            self._idle = idle_watts(self.stop(), began, self.now())
        return self._idle  # type: ignore[return-value]


class FakeBackend:
    name = "fake"
    version = "1"
    compiler_id = "fake"
    # Device memory the fake reports free; tests lower it to exercise the preflight.
    free_device_bytes: ClassVar[int] = 2**30
    # Seconds a device-wide synchronize waits (tests of the idle check raise it).
    pending_work_s: ClassVar[float] = 0.0
    # Whether the fake GPU has an energy counter (tests of --energy without one lower it).
    has_energy_counter: ClassVar[bool] = True

    def __init__(self, device_index: int = 0) -> None:
        from dataclasses import replace

        count = int(os.environ.get("GPUBENCH_FAKE_DEVICES", "1"))
        if not 0 <= device_index < count:
            from gpubench.errors import EnvironmentProblem

            raise EnvironmentProblem(f"device {device_index} does not exist (this machine has "
                                     f"{count})")  # fmt: skip
        models = os.environ.get("GPUBENCH_FAKE_MODELS", "").split(",")
        name = models[device_index] if device_index < len(models) and models[device_index] else None
        self.device = replace(FAKE_DEVICE, name=name) if name else FAKE_DEVICE
        self.device_index = device_index
        self.compiles: list[list[str]] = []
        self.timed: list[str] = []
        self.batches: list[int] = []  # the size of each batch of cold samples asked for
        # The cold batches' enqueues and waits in order: ("enqueue", n, samples), ("wait", n),
        # n counting them from 1; the batches enqueued and not yet waited for.
        self.queue: list[tuple[Any, ...]] = []
        self.in_flight: set[int] = set()
        self.live_buffers = 0
        self.context_broken = False
        CHEAT_STATE.clear()
        LAUNCH_COST[0] = 1.0
        self.restores = 0
        self.synchronizes = 0
        self.l2_resets = 0
        self._live: set[int] = set()
        self.meter = FakeMeter()
        self.hot_calls: list[int] = []  # the runs of each hot call

    def environment(self) -> Environment:
        env = host_environment()
        env.backend = {"name": self.name, "version": self.version}
        env.device = self.device.to_dict()
        # Several fake GPUs for the multi-device tests: GPUBENCH_FAKE_DEVICES=2, and their
        # models (GPUBENCH_FAKE_MODELS="Fake GPU,Other GPU").
        env.device_index = self.device_index
        env.device_count = int(os.environ.get("GPUBENCH_FAKE_DEVICES", "1"))
        env.gpu_uuid = f"GPU-fake-{self.device_index}"
        env.energy_counter = self.energy_meter() is not None
        return env

    def compile_binary(self, source: str, options: list[str], include_dirs: list[str]) -> bytes:
        self.compiles.append(options)
        if "-DBROKEN=1" in options:
            raise KernelCompileError(
                f"nvcc failed ({' '.join(options)})",
                'kernel.cu(3): error: identifier "oops" is undefined',
            )
        return b"fake binary"

    def load(self, binary: bytes) -> FakeModule:
        return FakeModule()

    def context_alive(self) -> bool:
        return not self.context_broken

    def sm_clock_mhz(self) -> float | None:
        return self.device.sm_clock_mhz

    def energy_meter(self) -> FakeMeter | None:
        # GPUBENCH_FAKE_NO_ENERGY=1: a GPU without a counter, in worker processes too.
        if not self.has_energy_counter or os.environ.get("GPUBENCH_FAKE_NO_ENERGY") == "1":
            return None
        return self.meter

    def readings(self) -> dict:
        return {"sm_clock_mhz": 1000.0, "temperature_c": 40, "power_w": 100.0}

    def memory_info(self) -> tuple[int, int]:
        return self.free_device_bytes, 2**30

    # -- buffers --------------------------------------------------------------------------
    # As strict as a driver: every call gets a live buffer of its own and the spec it was made
    # for, and new memory holds garbage (as device memory does), so a buffer the runner
    # forgets to fill, zero or poison shows.
    def _check_live(self, buffer: FakeBuffer) -> None:
        assert isinstance(buffer, FakeBuffer) and id(buffer) in self._live, buffer

    def _check(self, buffer: FakeBuffer, spec: BufferSpec) -> None:
        self._check_live(buffer)
        assert isinstance(spec, BufferSpec) and spec.location == buffer.location, spec
        assert spec.nbytes <= buffer.data.size, (spec.nbytes, buffer.data.size)

    def alloc(self, spec: BufferSpec) -> FakeBuffer:
        assert isinstance(spec, BufferSpec), spec
        if spec.location == "device" and spec.nbytes > self.free_device_bytes:
            raise OutOfMemory(
                f"cannot allocate {spec.nbytes:,} bytes of device memory "
                f"(out of memory: {self.free_device_bytes:,} bytes free)"
            )
        self.live_buffers += 1
        buffer = FakeBuffer(spec.location, np.full(max(spec.nbytes, 4), 0xA5, dtype=np.uint8))
        self._live.add(id(buffer))
        return buffer

    def write(self, buffer: FakeBuffer, spec: BufferSpec, host: np.ndarray) -> None:
        self._check(buffer, spec)
        flat = np.ascontiguousarray(host).reshape(-1).view(np.uint8)
        buffer.data[: flat.nbytes] = flat

    def read(self, buffer: FakeBuffer, spec: BufferSpec) -> np.ndarray:
        self._check(buffer, spec)
        assert not self.in_flight, f"outputs read with batches in flight: {self.in_flight}"
        return buffer.data[: spec.nbytes].view(spec.dtype).reshape(spec.shape).copy()

    def restore(self, dst: FakeBuffer, src: FakeBuffer, spec: BufferSpec) -> None:
        self._check(dst, spec)
        self._check(src, spec)
        self.restores += 1
        dst.data[: spec.nbytes] = src.data[: spec.nbytes]

    def poison(self, buffer: FakeBuffer, spec: BufferSpec) -> None:
        self._check(buffer, spec)
        buffer.data[:] = 0xFF

    def zero(self, buffer: FakeBuffer, spec: BufferSpec) -> None:
        self._check(buffer, spec)
        buffer.data[:] = 0

    def device_pointer(self, buffer: FakeBuffer) -> int | None:
        return None  # NumPy memory: the host check

    def free(self, buffer: FakeBuffer) -> None:
        assert not self.context_broken, "a free in a dead context fails (a driver error)"
        self._check_live(buffer)  # freed once
        self._live.discard(id(buffer))
        self.live_buffers -= 1

    # -- runs -----------------------------------------------------------------------------
    def launch_problem(self, module: FakeModule, launches: list[Launch]) -> str | None:
        assert isinstance(module, FakeModule), module
        for launch in launches:
            if launch.threads_per_block > 1024:
                return (
                    f"{launch.kernel}: {launch.threads_per_block} threads per block; at most 1024"
                )
            if launch.shared_bytes > self.device.shared_per_block_optin_bytes:
                return (f"{launch.kernel}: needs {launch.shared_bytes} bytes of shared memory "
                        f"per block; the device allows {self.device.shared_per_block_optin_bytes}")  # fmt: skip
        return None

    def bind(self, module: FakeModule | None, steps: list[Any], buffers: dict[str, FakeBuffer],
             specs: dict[str, BufferSpec]) -> FakeBound:  # fmt: skip
        if any(isinstance(step, (Launch, Repeat)) for step in steps):
            assert isinstance(module, FakeModule), module
        assert specs.keys() == buffers.keys(), (specs.keys(), buffers.keys())
        for name, buffer in buffers.items():
            self._check(buffer, specs[name])
        return FakeBound(list(steps), dict(buffers))

    def _enqueue(self, bound: FakeBound) -> None:
        assert not self.context_broken, "a run in a dead context"
        try:
            bound.enqueue()
        except KernelLaunchError as exc:
            if "illegal memory access" in str(exc):
                self.context_broken = True  # a sticky error: the context is gone
            raise

    def run_checked(self, bound: FakeBound) -> RunRecord:
        assert isinstance(bound, FakeBound) and not bound.released, bound
        self._enqueue(bound)
        return bound.record

    def time_once_ms(self, bound: FakeBound, flush_l2: bool) -> float:
        assert isinstance(bound, FakeBound) and not bound.released, bound
        assert isinstance(flush_l2, bool), flush_l2
        kernel = bound.first_kernel
        self.timed.append(kernel or "copy")
        self._enqueue(bound)
        if kernel == "slow":
            time.sleep(0.02)  # gives a signal or a kill -9 time to land mid-sweep
        per_launch = KERNELS[kernel][1] if kernel else 1.0
        cost, LAUNCH_COST[0] = LAUNCH_COST[0], 1.0
        return per_launch * cost * max(1, bound.record.iterations)

    def enqueue_cold_batch(
        self, bound: FakeBound, flush_l2: bool, samples: int, before_each: Any
    ) -> Any:
        """Each sample as time_once_ms takes it, its before_each first, run as it is enqueued
        (the fake's device is synchronous); the wait says so in `queue` and returns the times,
        and the batch's span on the fake GPU's clock: its flushes and samples back to back."""
        assert isinstance(samples, int) and samples >= 1, samples
        assert len(self.in_flight) < 2, f"a third batch in flight: {self.in_flight}"
        self.batches.append(samples)
        number = len(self.batches)
        self.queue.append(("enqueue", number, samples))
        self.in_flight.add(number)
        times = []
        try:
            for _ in range(samples):
                before_each()
                times.append(self.time_once_ms(bound, flush_l2))
        except BaseException:
            self.in_flight.discard(number)  # as a driver backend, it waits for what ran
            raise
        flush_ms = FAKE_FLUSH_MS * samples if flush_l2 else 0.0

        def wait() -> Batch:
            assert number in self.in_flight, f"batch {number} waited for twice"
            self.in_flight.discard(number)
            self.queue.append(("wait", number))
            return Batch(times, flush_ms + sum(times), flush_ms)

        return wait

    def time_hot_ms(self, bound: FakeBound, runs: int) -> float:
        assert isinstance(runs, int) and runs >= 1, runs
        total = sum(self.time_once_ms(bound, flush_l2=False) for _ in range(min(runs, 3)))
        per_run = total / min(runs, 3)
        self.hot_calls.append(runs)
        watts = KERNEL_WATTS.get(bound.first_kernel or "", self.meter.busy_watts)
        self.meter.advance(per_run * runs / 1000.0, watts)
        return per_run

    def timeline(self, bound: FakeBound) -> list[dict[str, Any]]:
        spans, clock = [], 0.0
        for step in bound.steps:
            op = {Launch: "kernel", LibraryCall: "library", Repeat: "repeat"}.get(type(step))
            if isinstance(step, Copy):
                where = (bound.buffers[step.src].location, bound.buffers[step.dst].location)
                op = {"device": "D"}.get(where[0], "H") + "2" + {"device": "D"}.get(where[1], "H")
            spans.append({"stream": getattr(step, "stream", 0), "op": op,
                          "label": step.label or _default_label(step),
                          "start_ms": clock, "end_ms": clock + 1.0})  # fmt: skip
            clock += 1.0
        bound.enqueue()
        return spans

    def release(self, bound: FakeBound) -> None:
        assert not self.context_broken, "a release in a dead context fails (a driver error)"
        assert isinstance(bound, FakeBound) and not bound.released, bound  # released once
        bound.released = True

    def synchronize_device(self) -> None:
        assert not self.context_broken, "a synchronize in a dead context fails"
        # The audits' idle check: a batch of the timing loop still in flight would be timed
        # as work the audited run left running.
        assert not self.in_flight, (
            f"the device synchronized with batches in flight: {self.in_flight}"
        )
        self.synchronizes += 1
        if self.pending_work_s:  # a kernel's work still running after its end event
            time.sleep(self.pending_work_s)

    def reset_persisting_l2(self) -> None:
        self.l2_resets += 1


class ScaleSuite(Benchmark):
    """out = 2 * x, with variants that are right, unwritten, wrong, crashing or unlaunchable."""

    name = "scale"
    description = "test suite"
    baseline = "good"
    source_file: ClassVar[str] = __file__  # any existing file: the fake compiler ignores it
    params = (
        Param("n", int, 1000, "elements", minimum=1, maximum=10**9),
        Param(
            "broken", int, 0, "1 makes the fake compiler fail", choices=(0, 1), compile_time=True
        ),
        Param("tag", str, "a", "free text"),
        Param("scale", float, 1.0, "a float"),
    )
    variants = tuple(Variant(k, k, computes="double") for k in SCALE_VARIANTS)
    cgma_value: ClassVar[float | None] = None

    def input_specs(self, point: Point) -> dict[str, BufferSpec]:
        return {"x": BufferSpec((point["n"],), np.dtype(np.float32))}

    def inputs(self, point: Point, rng: np.random.Generator) -> dict[str, np.ndarray]:
        return {"x": rng.random(point["n"], dtype=np.float32) + 1}

    def case(self, variant: str, point: Point, device: Any, inputs: dict[str, np.ndarray]) -> Case:
        n = point["n"]
        block = (2048 if variant == "huge_block" else 256, 1, 1)
        args: tuple[Any, ...] = (BufferRef("out"), BufferRef("x"), np.int32(n))
        scratch = {}
        if variant in (
            "first_launch_only",
            "writes_once",
            "crash_when_timed",
            "even_launches",
            "lazy_every_fifth",
        ):
            args += (BufferRef("counter"),)
            scratch["counter"] = BufferSpec((1,), np.dtype(np.uint32), init="zero")
        return Case(
            steps=[Launch(variant, (1, 1, 1), block, args)],
            outputs={"out": BufferSpec((n,), np.dtype(np.float32))},
            scratch=scratch,
            work=Work(bytes_moved=8 * n, flops=n, elements=n),
            tolerance=Tolerance(rtol=1e-6),
            cgma=self.cgma_value,
        )

    def reference(
        self, computes: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        return {"out": 2 * inputs["x"]}


class CheatingScaleSuite(ScaleSuite):
    """ScaleSuite's honest kernel beside kernels that game the harness (CHEATS)."""

    name = "cheating_scale"
    variants = tuple(
        Variant(k, k, computes="double")
        for k in ("good", *CHEATS, "memo_last_values", "lazy_every_fifth")
    )


class DangerousScaleSuite(ScaleSuite):
    """ScaleSuite plus variants that hang forever or kill their process: only for tests of
    the worker isolation."""

    name = "dangerous_scale"
    variants = tuple(Variant(k, k, computes="double") for k in (*SCALE_VARIANTS, *DANGEROUS))


class InPlaceSuite(Benchmark):
    """y = a*x + y in place, and the same from pinned host memory through copies."""

    name = "inplace"
    description = "in-place axpy"
    baseline = "device"
    source_file: ClassVar[str] = __file__
    params = (Param("n", int, 100, "elements", minimum=1),)
    variants = (Variant("device", "in place on the device", "axpy"),
                Variant("via_host", "copies in and out of an in-out pinned buffer", "axpy"))  # fmt: skip

    def inputs(self, point: Point, rng: np.random.Generator) -> dict[str, np.ndarray]:
        n = point["n"]
        return {"x": rng.random(n, dtype=np.float32) + 1, "y": rng.random(n, dtype=np.float32)}

    def case(self, variant: str, point: Point, device: Any, inputs: dict[str, np.ndarray]) -> Case:
        n = point["n"]
        if variant == "device":
            return Case(
                steps=[Launch("axpy_inplace", (1, 1, 1), (128, 1, 1),
                              (BufferRef("y"), BufferRef("x"), np.float32(2.5), np.int32(n)))],
                outputs={"y": BufferSpec.like(inputs["y"], init="input")},
                work=Work(bytes_moved=12 * n, flops=2 * n),
            )  # fmt: skip
        return Case(
            steps=[Copy("y", "dy"),
                   Launch("axpy_inplace", (1, 1, 1), (128, 1, 1),
                          (BufferRef("dy"), BufferRef("x"), np.float32(2.5), np.int32(n))),
                   Copy("dy", "y")],
            outputs={"y": BufferSpec.like(inputs["y"], location="pinned", init="input")},
            scratch={"dy": BufferSpec.like(inputs["y"])},
            work=Work(bytes_moved=12 * n, flops=2 * n),
        )  # fmt: skip

    def reference(
        self, computes: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        return {"y": np.float32(2.5) * inputs["x"] + inputs["y"]}


class CountDownSuite(Benchmark):
    """Every value counts down to zero, one step per iteration, until nothing changes."""

    name = "countdown"
    description = "iteration to convergence"
    baseline = "converges"
    source_file: ClassVar[str] = __file__
    params = (Param("n", int, 50, "elements", minimum=1), Param("top", int, 7, "largest value"),
              Param("max_iterations", int, 100, "iteration cap"))  # fmt: skip
    variants = (Variant("converges", "counts down", "zeros"),
                Variant("never_done", "always says it changed something", "zeros"),
                Variant("restless", "converges once, never after", "zeros"))  # fmt: skip

    def inputs(self, point: Point, rng: np.random.Generator) -> dict[str, np.ndarray]:
        values = rng.integers(0, point["top"], size=point["n"], dtype=np.int32)
        values[0] = point["top"]
        return {"values": values}

    def case(self, variant: str, point: Point, device: Any, inputs: dict[str, np.ndarray]) -> Case:
        n = point["n"]
        kernel = {"converges": "count_down", "never_done": "count_down_never_done",
                  "restless": "count_down_restless"}[variant]  # fmt: skip
        args = (BufferRef("values"), BufferRef("changed"), np.int32(n))
        scratch = {"changed": BufferSpec((1,), np.dtype(np.int32))}
        if variant == "restless":
            args += (BufferRef("launches"),)
            scratch["launches"] = BufferSpec((1,), np.dtype(np.uint32), init="zero")
        body = (Launch(kernel, (1, 1, 1), (64, 1, 1), args),)
        return Case(
            steps=[Repeat(body, flag="changed", max_iterations=point["max_iterations"])],
            outputs={"values": BufferSpec.like(inputs["values"], init="input")},
            scratch=scratch,
            # Data-aware work: every iteration reads and writes every value.
            work=lambda record: Work(
                bytes_moved=8 * n * record.iterations, elements=n * record.iterations
            ),
        )

    def reference(
        self, computes: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        return {"values": np.zeros_like(inputs["values"])}
