"""The backend contract: every member the harness uses, declared here and nowhere else.

A backend owns one device. It compiles and loads kernels, allocates device and host buffers,
runs the backend-neutral steps of `gpubench.model.steps` (launches, copies, library calls, repeats,
on several streams) and times them with device events. The harness never reaches past it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import numpy as np

from gpubench.model.benchmark import BufferSpec
from gpubench.model.device import DeviceInfo, Environment
from gpubench.model.energy import EnergyTrace
from gpubench.model.steps import Launch, RunRecord, Step
from gpubench.model.timing import Batch


@dataclass(frozen=True)
class KernelAttributes:
    """What the compiler decided for one kernel: the inputs to occupancy and shape checks."""

    registers_per_thread: int
    static_shared_bytes: int
    local_bytes_per_thread: int
    max_threads_per_block: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class CompiledModule(Protocol):
    def attributes(self, kernel: str) -> KernelAttributes:
        """Raises KernelLaunchError when the module has no such kernel."""
        ...


class BoundRun(Protocol):
    """A variant's steps with their buffers resolved, ready to run with no lookups."""

    # What the latest run recorded (iterations of its Repeat steps).
    record: RunRecord

    def enqueue(self) -> None: ...


class EnergyMeter(Protocol):
    """A GPU's energy counter and power, read in the background over a window of runs
    (gpubench.engine.energy); NVML's on a GPU (gpubench.backends.nvml)."""

    def now(self) -> float:
        """The meter's clock, in seconds: the trace's times are on it."""
        ...

    def start(self) -> None:
        """Begin reading the counter, the power and the SM clock in the background."""
        ...

    def stop(self) -> EnergyTrace:
        """Stop reading; what was read since `start`."""
        ...

    def idle_watts(self) -> float | None:
        """The GPU's power with nothing of ours running, measured on the first call (a few
        counter intervals of waiting) and remembered; None if it could not be read."""
        ...


class Backend(Protocol):
    # Recorded with every result set: which backend measured, and its version.
    name: str
    version: str
    device: DeviceInfo
    # What compiled binaries depend on besides source and options (compiler, architecture).
    compiler_id: str

    # -- device and environment -----------------------------------------------------------
    def environment(self) -> Environment: ...

    def readings(self) -> dict[str, Any]:
        """SM clock, temperature and power now."""
        ...

    def sm_clock_mhz(self) -> float | None: ...

    def energy_meter(self) -> EnergyMeter | None:
        """The device's energy meter, or None where it has no energy counter to read."""
        ...

    def memory_info(self) -> tuple[int, int]:
        """(free, total) device memory in bytes."""
        ...

    def context_alive(self) -> bool:
        """False once a kernel broke the device context (the worker must be replaced)."""
        ...

    # -- compile ----------------------------------------------------------------------------
    def compile_binary(self, source: str, options: list[str], include_dirs: list[str]) -> bytes:
        """Raises KernelCompileError with the compiler's output."""
        ...

    def load(self, binary: bytes) -> CompiledModule: ...

    # -- buffers (device or host, from spec.location) ---------------------------------------
    def alloc(self, spec: BufferSpec) -> Any:
        """Raises OutOfMemory when the device or the host cannot provide it."""
        ...

    def write(self, buffer: Any, spec: BufferSpec, host: np.ndarray) -> None: ...

    def read(self, buffer: Any, spec: BufferSpec) -> np.ndarray: ...

    def restore(self, dst: Any, src: Any, spec: BufferSpec) -> None:
        """Copy all of `src` into `dst` ahead of the next run, outside any timed region."""
        ...

    def poison(self, buffer: Any, spec: BufferSpec) -> None: ...

    def zero(self, buffer: Any, spec: BufferSpec) -> None: ...

    def free(self, buffer: Any) -> None: ...

    def device_pointer(self, buffer: Any) -> int | None:
        """The device address of a device buffer (the GPU-side check reads outputs there
        through CuPy), or None for host buffers and backends without one."""
        ...

    # -- runs ---------------------------------------------------------------------------------
    def launch_problem(self, module: CompiledModule, launches: list[Launch]) -> str | None:
        """Why the device cannot run these launch shapes, or None."""
        ...

    def bind(
        self,
        module: CompiledModule | None,
        steps: list[Step],
        buffers: dict[str, Any],
        specs: dict[str, BufferSpec],
    ) -> BoundRun: ...

    def run_checked(self, bound: BoundRun) -> RunRecord:
        """One run, waited for; raises KernelLaunchError if any step fails."""
        ...

    def time_once_ms(self, bound: BoundRun, flush_l2: bool) -> float:
        """One run between two device events (L2 flushed first if asked), in ms."""
        ...

    def enqueue_cold_batch(
        self, bound: BoundRun, flush_l2: bool, samples: int, before_each: Callable[[], None]
    ) -> Callable[[], Batch]:
        """`samples` cold samples enqueued back to back on the timing stream, each its own
        interval between its own two events (L2 flushed before its start event if asked),
        `before_each()` called before each one's flush (device work it enqueues stays ahead
        of that run); no wait. Returns the wait, to be called once: it waits for the last
        end event and returns the samples' times and what the backend can tell of the GPU's
        time between them (Batch.span_ms, Batch.flush_ms).

        A second batch may be enqueued before the first one's wait (the timing loop's
        `Ahead`): it queues behind the first on the timing stream, with events of its own, so
        at most two batches are in flight. A driver failure raises KernelLaunchError from the
        enqueue or the wait, with nothing of that batch left running; the caller still waits
        for any other batch it has in flight."""
        ...

    def time_hot_ms(self, bound: BoundRun, runs: int) -> float:
        """`runs` back-to-back runs between two events, per run, in ms."""
        ...

    def timeline(self, bound: BoundRun) -> list[dict[str, Any]]:
        """One more run with events around every step: spans with stream, op, label,
        start_ms and end_ms from the run's start."""
        ...

    def release(self, bound: BoundRun) -> None:
        """Free what timing attached to a bound run (CUDA graphs)."""
        ...

    def synchronize_device(self) -> None:
        """Wait for all work in the context, on every stream (the audits' idle check)."""
        ...

    def reset_persisting_l2(self) -> None:
        """Return every persisting-L2 line to normal (cuCtxResetPersistingL2Cache), so no
        set-aside window keeps a variant's inputs resident into its timing."""
        ...
