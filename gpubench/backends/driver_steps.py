"""Plain functions and data on a variant's steps, for both driver backends (no backend class
here; the class they derive from is driver_backend.DriverBackend): the device description from
its attributes, the launch-shape check, a copy's byte range, kernel scalars, and a bound run's
calls forked across streams and joined back.

A backend keeps only what differs: how it allocates, copies, launches and records events.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from gpubench.backends.base import KernelAttributes
from gpubench.errors import KernelLaunchError
from gpubench.model.device import DeviceInfo
from gpubench.model.steps import Copy, Launch, Repeat, RunRecord

# Uploads at least this large go through page-locked staging slots (staged_upload).
STAGED_UPLOAD_FROM = 256 * 2**20
STAGES = 3
STAGE_BYTES = 64 * 2**20
STAGE_COPY_THREADS = 4

# The C types a kernel scalar may have, as NumPy dtypes (a Launch's scalars are NumPy scalars).
SCALAR_TYPES = (np.int32, np.uint32, np.int64, np.uint64, np.float32, np.float64)
_SCALAR_DTYPES = frozenset(np.dtype(t) for t in SCALAR_TYPES)


def device_info(
    attribute: Callable[[str], int | None],
    name: str,
    compute_capability: tuple[int, int],
    memory_bytes: int,
    nvml_reading: dict[str, Any],
) -> DeviceInfo:
    """The device from its driver attributes, named as the driver API names them without the
    CU_DEVICE_ATTRIBUTE_ prefix (`attribute` returns None for one the driver lacks)."""
    a = attribute
    sm_clock_khz = a("CLOCK_RATE")
    mem_clock_khz = a("MEMORY_CLOCK_RATE")
    # CUDA 13 deprecates the clock attributes; NVML's max clocks are the fallback.
    sm_clock = sm_clock_khz / 1000 if sm_clock_khz else nvml_reading.get("max_sm_clock_mhz")
    mem_clock = mem_clock_khz / 1000 if mem_clock_khz else nvml_reading.get("max_mem_clock_mhz")
    return DeviceInfo(
        name=name,
        compute_capability=compute_capability,
        sm_count=a("MULTIPROCESSOR_COUNT") or 0,
        sm_clock_mhz=sm_clock,
        memory_clock_mhz=mem_clock,
        memory_bus_width_bits=a("GLOBAL_MEMORY_BUS_WIDTH"),
        memory_bytes=memory_bytes,
        l2_bytes=a("L2_CACHE_SIZE") or 0,
        shared_per_block_bytes=a("MAX_SHARED_MEMORY_PER_BLOCK") or 48 * 1024,
        shared_per_block_optin_bytes=a("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN") or 48 * 1024,
        shared_per_sm_bytes=a("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR") or 0,
        registers_per_sm=a("MAX_REGISTERS_PER_MULTIPROCESSOR") or 0,
        registers_per_block=a("MAX_REGISTERS_PER_BLOCK") or 0,
        max_threads_per_block=a("MAX_THREADS_PER_BLOCK") or 1024,
        max_threads_per_sm=a("MAX_THREADS_PER_MULTIPROCESSOR") or 2048,
        warp_size=a("WARP_SIZE") or 32,
        max_blocks_per_sm=a("MAX_BLOCKS_PER_MULTIPROCESSOR") or 32,
        max_block_dims=(a("MAX_BLOCK_DIM_X"), a("MAX_BLOCK_DIM_Y"), a("MAX_BLOCK_DIM_Z")),
        max_grid_dims=(a("MAX_GRID_DIM_X"), a("MAX_GRID_DIM_Y"), a("MAX_GRID_DIM_Z")),
    )


def driver_api_version(api: int) -> str:
    """The CUDA version a driver supports, as cuDriverGetVersion gives it (12040 → "12.4")."""
    return f"{api // 1000}.{api % 1000 // 10}"


def launch_problem(
    dev: DeviceInfo, attributes: Callable[[str], KernelAttributes], launches: list[Launch]
) -> str | None:
    """Why the device cannot run these launch shapes, or None."""
    for launch in launches:
        attrs = attributes(launch.kernel)
        for axis, (size, limit) in enumerate(zip(launch.block, dev.max_block_dims, strict=True)):
            if size > limit:
                return f"{launch.kernel}: block dimension {'xyz'[axis]}={size} exceeds the device limit {limit}"
        for axis, (size, limit) in enumerate(zip(launch.grid, dev.max_grid_dims, strict=True)):
            if size > limit:
                return f"{launch.kernel}: grid dimension {'xyz'[axis]}={size} exceeds the device limit {limit}"
        if launch.threads_per_block > attrs.max_threads_per_block:
            return (
                f"{launch.kernel}: {launch.threads_per_block} threads per block; this kernel "
                f"allows at most {attrs.max_threads_per_block} "
                f"({attrs.registers_per_thread} registers/thread, device max {dev.max_threads_per_block})"
            )
        shared = attrs.static_shared_bytes + launch.shared_bytes
        if shared > dev.shared_per_block_optin_bytes:
            return (
                f"{launch.kernel}: needs {shared} bytes of shared memory per block; "
                f"the device allows {dev.shared_per_block_optin_bytes} "
                f"({dev.shared_per_block_bytes} without opting in)"
            )
    return None


def needs_opt_in(dev: DeviceInfo, attributes: KernelAttributes, launch: Launch) -> bool:
    """True when a launch's shared memory passes the default per-block limit (48 KB): the
    backend then raises the kernel's dynamic shared-memory limit to what the launch asks
    (cuFuncSetAttribute, MAX_DYNAMIC_SHARED_SIZE_BYTES), up to the device's opt-in limit."""
    return attributes.static_shared_bytes + launch.shared_bytes > dev.shared_per_block_bytes


def copy_bytes(step: Copy, src_nbytes: int, dst_nbytes: int) -> int:
    """How many bytes `step` copies; KernelLaunchError when they do not fit either buffer."""
    nbytes = src_nbytes - step.src_offset if step.nbytes is None else step.nbytes
    if nbytes < 0 or step.src_offset + nbytes > src_nbytes or step.dst_offset + nbytes > dst_nbytes:
        raise KernelLaunchError(
            f"copy {step.src}→{step.dst}: {nbytes} bytes at offsets {step.src_offset}/"
            f"{step.dst_offset} do not fit the buffers ({src_nbytes}/{dst_nbytes} bytes)"
        )
    return nbytes


def kernel_scalar(kernel: str, arg: Any) -> np.generic:
    """A launch scalar as a NumPy scalar of one of the C types kernels take."""
    scalar = np.asarray(arg)
    if scalar.dtype not in _SCALAR_DTYPES:
        raise KernelLaunchError(
            f"kernel {kernel!r}: argument of type {scalar.dtype} is not supported "
            f"(use one of {', '.join(np.dtype(t).name for t in SCALAR_TYPES)})"
        )
    return scalar[()]


@dataclass
class Op:
    """One top-level step, resolved: the stream it runs on, what it is, and the call."""

    stream: int
    op: str
    label: str
    call: Callable[[], None]


@dataclass
class BoundRun:
    """A variant's steps as calls. With side streams, `fork` makes them start after what the
    timing stream already holds and `join` makes the timing stream wait for them, so its end
    event closes the whole run."""

    ops: list[Op]
    # Not capturable into a CUDA graph (host round trips, synchronous or pageable copies).
    capturable: bool = True
    record: RunRecord = field(default_factory=RunRecord)
    # runs per graph → an instantiated CUDA graph of that many back-to-back runs (hot mode);
    # ("repeat", id of a Repeat step) → the graph of one of its iterations, None where it
    # could not be captured
    graphs: dict[Any, Any] = field(default_factory=dict)
    fork: Callable[[], None] | None = None
    join: Callable[[], None] | None = None
    # The calls of `ops`, flattened once: between the start and end events every host
    # microsecond counts for small copies.
    calls: list[Callable[[], None]] = field(default_factory=list)
    has_repeat: bool = False

    def enqueue(self) -> None:
        if self.has_repeat:
            self.record = RunRecord()
        if self.fork is not None:
            self.fork()
        for call in self.calls:
            call()
        if self.join is not None:
            self.join()


def staged_upload(
    pointer: int,
    flat: np.ndarray,
    slots: list[np.ndarray],
    streams: list[Any],
    copy_async: Callable[[int, np.ndarray, Any], None],
    synchronize: Callable[[Any], None],
) -> None:
    """A large upload through page-locked staging `slots` (one stream each): host copies into
    a slot on a thread pool (NumPy releases the GIL) while the copy engine drains the others,
    several times the driver's own staging of pageable memory. Outside any timed region."""
    slice_bytes = -(-STAGE_BYTES // STAGE_COPY_THREADS)
    with ThreadPoolExecutor(max_workers=STAGE_COPY_THREADS) as pool:
        for i, lo in enumerate(range(0, flat.nbytes, STAGE_BYTES)):
            slot, stream = slots[i % len(slots)], streams[i % len(slots)]
            piece = flat[lo : lo + STAGE_BYTES]
            synchronize(stream)  # the slot's previous copy to the device is done

            def copy(a: int, slot: np.ndarray = slot, piece: np.ndarray = piece) -> None:
                end = min(a + slice_bytes, piece.nbytes)  # the last piece may be short
                np.copyto(slot[a:end], piece[a:end])

            list(pool.map(copy, range(0, piece.nbytes, slice_bytes)))
            copy_async(pointer + lo, slot[: piece.nbytes], stream)
    for stream in streams:
        synchronize(stream)


def run_repeat(
    bound: BoundRun,
    step: Repeat,
    iteration: Callable[[], None],
    sync: Callable[[], None],
    flag_host: np.ndarray,
    graphs: Any,
    stream_handle: int,
) -> None:
    """A Repeat step: `iteration` (clear the flag, run the body, copy the flag to the host)
    until the kernels leave the flag clear, at most step.max_iterations times.

    Each iteration runs as one CUDA graph where it can be captured (one driver call instead of
    one per step: the host's share of each round trip shrinks, and is the same on every
    backend), else as its calls. The graph is captured at the run's first iteration, which the
    harness runs to check the result, before any timing."""
    key = ("repeat", id(step))
    if key not in bound.graphs:
        bound.graphs[key] = None
        # A step that cannot be captured: the iteration runs as its calls.
        with contextlib.suppress(KernelLaunchError):
            if graphs is not None:
                bound.graphs[key] = graphs.capture(stream_handle, iteration)
    executable = bound.graphs[key]
    run = iteration if executable is None else partial(graphs.launch, executable, stream_handle)
    for count in range(1, step.max_iterations + 1):
        run()
        sync()  # the host decides: another iteration or done
        if flag_host[0] == 0:
            bound.record.iterations += count
            return
    bound.record.iterations += step.max_iterations
    bound.record.converged = False
    bound.record.unconverged.append(step.label or f"repeat on {step.flag!r}")
