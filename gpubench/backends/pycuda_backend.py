"""PyCUDA backend: primary context, nvcc compiles and module loads, allocations, launches, events.

The only module that imports pycuda (and pynvml for clocks, UUID and driver version).
"""

from __future__ import annotations

import atexit
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from gpubench.backends.base import KernelAttributes
from gpubench.benchmark import BufferRef, BufferSpec, Launch, LibraryCall, Program, ProgramContext
from gpubench.device import (
    DeviceInfo,
    Environment,
    check_nvcc_supports,
    host_environment,
    nvcc_version,
)
from gpubench.errors import EnvironmentProblem, KernelCompileError, KernelLaunchError

import pycuda.driver as cuda  # isort: skip  (after our own imports: the optional dependency)

_TYPE_CODES = {
    np.dtype(np.int32): "i",
    np.dtype(np.uint32): "I",
    np.dtype(np.int64): "q",
    np.dtype(np.uint64): "Q",
    np.dtype(np.float32): "f",
    np.dtype(np.float64): "d",
}


class _Module:
    def __init__(self, module: Any) -> None:
        self._module = module
        self._functions: dict[str, Any] = {}

    def function(self, kernel: str) -> Any:
        if kernel not in self._functions:
            try:
                self._functions[kernel] = self._module.get_function(kernel)
            except cuda.LogicError as exc:
                raise KernelLaunchError(
                    f"kernel {kernel!r} not found in the module: {exc}"
                ) from None
        return self._functions[kernel]

    def attributes(self, kernel: str) -> KernelAttributes:
        func = self.function(kernel)
        return KernelAttributes(
            registers_per_thread=func.num_regs,
            static_shared_bytes=func.shared_size_bytes,
            local_bytes_per_thread=func.local_size_bytes,
            max_threads_per_block=func.max_threads_per_block,
        )


@dataclass
class _BoundRun:
    calls: list[Callable[[], None]]
    # runs per graph → an instantiated CUDA graph of that many back-to-back runs (hot mode)
    graphs: dict[int, Any] = field(default_factory=dict)

    def enqueue(self) -> None:
        for call in self.calls:
            call()


class _CudaGraphs:
    """Stream capture into CUDA graphs through the driver API (ctypes): this PyCUDA build has
    no graph bindings. A graph of N runs is launched with one call, so even kernels of a few
    microseconds run back to back without launch gaps."""

    RELAXED = 2  # CU_STREAM_CAPTURE_MODE_RELAXED: PyCUDA's own calls may run meanwhile

    def __init__(self) -> None:
        import ctypes

        self._ctypes = ctypes
        self._lib = ctypes.CDLL("libcuda.so.1")
        for name in ("cuStreamBeginCapture_v2", "cuStreamEndCapture", "cuGraphInstantiateWithFlags",
                     "cuGraphLaunch", "cuGraphDestroy", "cuGraphExecDestroy"):  # fmt: skip
            getattr(self._lib, name).restype = ctypes.c_int

    def _check(self, code: int, what: str) -> None:
        if code != 0:
            raise KernelLaunchError(f"{what} failed with CUDA error {code}")

    def capture(self, stream_handle: int, enqueue: Callable[[], None]) -> Any:
        c = self._ctypes
        stream = c.c_void_p(stream_handle)
        self._check(self._lib.cuStreamBeginCapture_v2(stream, self.RELAXED), "cuStreamBeginCapture")
        graph = c.c_void_p()
        try:
            enqueue()
        except Exception as exc:  # an operation that cannot be captured (pageable copy, ...)
            self._lib.cuStreamEndCapture(stream, c.byref(graph))
            if graph.value:
                self._lib.cuGraphDestroy(graph)
            raise KernelLaunchError(f"stream capture failed: {exc}") from None
        self._check(self._lib.cuStreamEndCapture(stream, c.byref(graph)), "cuStreamEndCapture")
        executable = c.c_void_p()
        code = self._lib.cuGraphInstantiateWithFlags(c.byref(executable), graph, c.c_ulonglong(0))
        self._lib.cuGraphDestroy(graph)
        self._check(code, "cuGraphInstantiateWithFlags")
        return executable

    def launch(self, executable: Any, stream_handle: int) -> None:
        self._check(
            self._lib.cuGraphLaunch(executable, self._ctypes.c_void_p(stream_handle)),
            "cuGraphLaunch",
        )

    def destroy(self, executable: Any) -> None:
        self._lib.cuGraphExecDestroy(executable)


def _nvml_handle(bus_id: str) -> Any:
    """NVML's handle for this GPU (initialised once per process), or None without NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return pynvml.nvmlDeviceGetHandleByPciBusId(bus_id)
        except pynvml.NVMLError:
            return pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception:  # NVML missing or unusable: clocks simply go unread
        return None


def _nvml_readings(handle: Any) -> dict[str, Any]:
    """UUID, driver version, clocks, temperature and power through NVML; {} if unavailable."""
    if handle is None:
        return {}
    import pynvml

    readings: dict[str, Any] = {}
    for key, read in (
        ("uuid", lambda: pynvml.nvmlDeviceGetUUID(handle)),
        ("driver", pynvml.nvmlSystemGetDriverVersion),
        ("sm_clock_mhz", lambda: pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)),
        (
            "max_sm_clock_mhz",
            lambda: pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM),
        ),
        (
            "max_mem_clock_mhz",
            lambda: pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM),
        ),
        (
            "temperature_c",
            lambda: pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
        ),
        ("power_w", lambda: pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0),
    ):
        try:
            value = read()
            readings[key] = value.decode() if isinstance(value, bytes) else value
        except pynvml.NVMLError:
            pass
    return readings


def _nvml_sm_clock(handle: Any) -> float | None:
    import pynvml

    try:
        return float(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
    except pynvml.NVMLError:
        return None


class PyCudaBackend:
    def __init__(self, device_index: int = 0) -> None:
        try:
            cuda.init()
            count = cuda.Device.count()
        except cuda.Error as exc:
            raise EnvironmentProblem(
                f"the CUDA driver could not start ({exc}): check that an NVIDIA GPU and its driver "
                "are present (nvidia-smi)"
            ) from None
        if count == 0:
            raise EnvironmentProblem(
                "no CUDA GPU found: run gpubench on a machine with an NVIDIA GPU"
            )
        if not 0 <= device_index < count:
            raise EnvironmentProblem(
                f"device {device_index} does not exist (this machine has {count})"
            )
        self._cu_device = cuda.Device(device_index)
        # The primary context coexists with CuPy, cuBLAS and other runtime-API users.
        self._context = self._cu_device.retain_primary_context()
        self._context.push()
        atexit.register(self._close)
        self._stream = cuda.Stream()
        self._start = cuda.Event()
        self._end = cuda.Event()
        self._flush_buffer: Any = None
        try:
            self._graphs: _CudaGraphs | None = _CudaGraphs()
        except (OSError, AttributeError):  # no driver library or too old for graphs
            self._graphs = None
        self._flush_value = 0
        self._nvml_handle = _nvml_handle(self._cu_device.pci_bus_id())
        self._nvml = _nvml_readings(self._nvml_handle)
        self.device = self._read_device_info()
        self._nvcc_version = nvcc_version()
        check_nvcc_supports(self.device.arch, self._nvcc_version)

    # -- device and environment -----------------------------------------------------------
    def _attr(self, name: str) -> int | None:
        attribute = getattr(cuda.device_attribute, name, None)
        if attribute is None:
            return None
        try:
            return self._cu_device.get_attribute(attribute)
        except cuda.Error:
            return None

    def _read_device_info(self) -> DeviceInfo:
        a = self._attr
        sm_clock_khz = a("CLOCK_RATE")
        mem_clock_khz = a("MEMORY_CLOCK_RATE")
        # CUDA 13 deprecates the clock attributes; NVML's max clocks are the fallback.
        sm_clock = sm_clock_khz / 1000 if sm_clock_khz else self._nvml.get("max_sm_clock_mhz")
        mem_clock = mem_clock_khz / 1000 if mem_clock_khz else self._nvml.get("max_mem_clock_mhz")
        return DeviceInfo(
            name=self._cu_device.name(),
            compute_capability=self._cu_device.compute_capability(),
            sm_count=a("MULTIPROCESSOR_COUNT") or 0,
            sm_clock_mhz=sm_clock,
            memory_clock_mhz=mem_clock,
            memory_bus_width_bits=a("GLOBAL_MEMORY_BUS_WIDTH"),
            memory_bytes=self._cu_device.total_memory(),
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

    def readings(self) -> dict[str, Any]:
        """SM clock, temperature and power now (for the start and end of a run)."""
        nvml = _nvml_readings(self._nvml_handle)
        return {k: nvml.get(k) for k in ("sm_clock_mhz", "temperature_c", "power_w")}

    def environment(self) -> Environment:
        import pycuda

        env = host_environment()
        env.device = self.device.to_dict()
        nvml = _nvml_readings(self._nvml_handle)
        env.gpu_uuid = nvml.get("uuid")
        env.driver_version = nvml.get("driver")
        api = cuda.get_driver_version()
        env.cuda_driver_api_version = f"{api // 1000}.{api % 1000 // 10}"
        env.pycuda_version = pycuda.VERSION_TEXT
        env.pycuda_built_for_cuda = ".".join(str(v) for v in cuda.get_version())
        env.sm_clock_mhz_at_start = nvml.get("sm_clock_mhz")
        env.temperature_c_at_start = nvml.get("temperature_c")
        env.power_w_at_start = nvml.get("power_w")
        return env

    # -- compile ----------------------------------------------------------------------------
    @property
    def compiler_id(self) -> str:
        """What the compiled binaries depend on besides source and options."""
        return f"nvcc {self._nvcc_version} {self.device.arch}"

    def compile_binary(self, source: str, options: list[str], include_dirs: list[str]) -> bytes:
        """nvcc → cubin for this device's architecture; safe to call from several threads."""
        from pycuda.compiler import compile as nvcc_compile

        try:
            return nvcc_compile(
                source,
                options=list(options),
                arch=self.device.arch,
                no_extern_c=True,  # the sources declare extern "C" themselves
                include_dirs=include_dirs,
                cache_dir=False,  # gpubench keeps its own cache (kernels.CompileCache)
            )
        except cuda.CompileError as exc:
            raise KernelCompileError(
                f"nvcc failed ({' '.join(options)})", compiler_output=exc.stderr or str(exc)
            ) from None

    def load(self, binary: bytes) -> _Module:
        return _Module(cuda.module_from_buffer(binary))

    def compile(self, source: str, options: list[str], include_dirs: list[str]) -> _Module:
        return self.load(self.compile_binary(source, options, include_dirs))

    def context_alive(self) -> bool:
        """False once a kernel has broken the context (illegal address and friends): every
        later CUDA call in this process fails, so the worker must be replaced."""
        try:
            cuda.Context.synchronize()
            probe = cuda.mem_alloc(4)
            probe.free()
            return True
        except cuda.Error:
            return False

    def sm_clock_mhz(self) -> float | None:
        return _nvml_sm_clock(self._nvml_handle) if self._nvml_handle is not None else None

    # -- memory -----------------------------------------------------------------------------
    def alloc(self, spec: BufferSpec) -> Any:
        return cuda.mem_alloc(max(spec.nbytes, 4))

    def upload(self, host: np.ndarray) -> Any:
        return cuda.to_device(np.ascontiguousarray(host))

    def download(self, buffer: Any, spec: BufferSpec) -> np.ndarray:
        host = np.empty(spec.shape, dtype=spec.dtype)
        if host.nbytes:
            cuda.memcpy_dtoh(host, buffer)
        return host

    def poison(self, buffer: Any, spec: BufferSpec) -> None:
        # All-ones bytes are NaN in float32 and float64 (and -1 in integers): an element
        # the kernel never writes cannot pass for a right answer.
        words, tail = divmod(spec.nbytes, 4)
        if words:
            cuda.memset_d32(buffer, 0xFFFFFFFF, words)
        if tail:
            cuda.memset_d8(int(buffer) + 4 * words, 0xFF, tail)

    def zero(self, buffer: Any, spec: BufferSpec) -> None:
        cuda.memset_d8(buffer, 0, max(spec.nbytes, 1))

    def free(self, buffer: Any) -> None:
        buffer.free()

    # -- launches ---------------------------------------------------------------------------
    def launch_problem(self, module: _Module, launches: list[Launch]) -> str | None:
        """Why the device cannot run these launch shapes, or None."""
        dev = self.device
        for launch in launches:
            if not isinstance(launch, Launch):
                continue
            attrs = module.attributes(launch.kernel)
            for axis, (size, limit) in enumerate(
                zip(launch.block, dev.max_block_dims, strict=True)
            ):
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
            if shared > dev.shared_per_block_bytes:
                return (
                    f"{launch.kernel}: needs {shared} bytes of shared memory per block; "
                    f"the device allows {dev.shared_per_block_bytes}"
                )
        return None

    def bind(
        self,
        module: _Module | None,
        steps: list[Launch | LibraryCall | Program],
        buffers: dict[str, Any],
        host_inputs: dict[str, np.ndarray] | None = None,
    ) -> _BoundRun:
        calls: list[Callable[[], None]] = []
        pointers = {name: int(buffer) for name, buffer in buffers.items()}
        stream = self._stream
        for step in steps:
            if isinstance(step, LibraryCall):
                calls.append(partial(step.run, pointers, stream.handle))
                continue
            if isinstance(step, Program):
                context = ProgramContext(stream, module, pointers, host_inputs or {}, cuda)
                calls.append(partial(step.body.enqueue, context))
                continue
            func = module.function(step.kernel)
            codes, values = [], []
            for arg in step.args:
                if isinstance(arg, BufferRef):
                    codes.append("P")
                    values.append(pointers[arg.name])
                else:
                    scalar = np.asarray(arg)
                    codes.append(_TYPE_CODES[scalar.dtype])
                    values.append(scalar.item())
            func.prepare("".join(codes))
            grid = tuple(int(g) for g in step.grid)
            block = tuple(int(b) for b in step.block)
            calls.append(partial(func.prepared_async_call, grid, block, stream, *values,
                                 shared_size=step.shared_bytes))  # fmt: skip
        return _BoundRun(calls)

    def run_checked(self, bound: _BoundRun) -> None:
        try:
            bound.enqueue()
            self._stream.synchronize()
        except cuda.Error as exc:
            raise KernelLaunchError(f"{type(exc).__name__}: {exc}") from None

    def time_once_ms(self, bound: _BoundRun, flush_l2: bool) -> float:
        if flush_l2 and self.device.l2_bytes:
            if self._flush_buffer is None:
                self._flush_buffer = cuda.mem_alloc(self.device.l2_bytes)
            # Writing an L2-sized buffer evicts the previous sample's data (nvbench's method).
            # It also keeps the GPU busy while the host enqueues the timed launches, so
            # host-side launch overhead does not leak into the measured interval.
            self._flush_value ^= 0x5A5A5A5A
            cuda.memset_d32_async(
                self._flush_buffer, self._flush_value, self.device.l2_bytes // 4, self._stream
            )
        return self._event_interval_ms(bound.enqueue)

    def _event_interval_ms(self, enqueue: Callable[[], None]) -> float:
        """GPU time between two events on the timing stream around `enqueue()`."""
        try:
            self._start.record(self._stream)
            enqueue()
            self._end.record(self._stream)
            self._end.synchronize()
        except cuda.Error as exc:
            raise KernelLaunchError(f"{type(exc).__name__}: {exc}") from None
        return self._end.time_since(self._start)

    def time_hot_ms(self, bound: _BoundRun, runs: int, use_graph: bool = True) -> float:
        """`runs` back-to-back runs between two events, per run, no flush: as one CUDA graph
        where the driver supports it, else as `runs` launches in the queue."""
        graphs = self._graphs if use_graph else None
        if graphs is not None and runs not in bound.graphs:
            # A capture the driver refuses (a library call inside, say) leaves plain launches.
            with contextlib.suppress(KernelLaunchError):
                bound.graphs[runs] = graphs.capture(
                    self._stream.handle, lambda: [bound.enqueue() for _ in range(runs)]
                )
        if graphs is not None and runs in bound.graphs:
            executable = bound.graphs[runs]
            return (
                self._event_interval_ms(lambda: graphs.launch(executable, self._stream.handle))
                / runs
            )

        def back_to_back() -> None:
            for _ in range(runs):
                bound.enqueue()

        return self._event_interval_ms(back_to_back) / runs

    def release(self, bound: _BoundRun) -> None:
        """Free what timing attached to a bound run (CUDA graphs)."""
        for executable in bound.graphs.values():
            self._graphs.destroy(executable)
        bound.graphs.clear()

    @property
    def graphs_available(self) -> bool:
        return self._graphs is not None

    def _close(self) -> None:
        try:
            if self._flush_buffer is not None:
                self._flush_buffer.free()
            self._context.pop()
            from pycuda.tools import clear_context_caches

            clear_context_caches()
        except cuda.Error:
            pass
