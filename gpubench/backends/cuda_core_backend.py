"""cuda.core backend: NVIDIA's own Python stack, installed from wheels alone (cuda-core,
cuda-bindings, the NVRTC wheel); no CUDA toolkit, no nvcc, no PyCUDA build.

Kernels compile in-process with NVRTC (cuda.core's Program); the device, streams and events
are cuda.core's; modules, launches, memory and copies go through the driver API of
cuda-bindings, as PyCUDA's do (see _Module for why not cuda.core's ObjectCode). Everything
the two backends share is in `driver_backend` (binding, timing, timelines, Repeat) and
`shared` (device description, launch-shape checks, staged uploads), so the same steps run
the same way on either.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from cuda.bindings import driver, nvrtc
from cuda.core import Device, EventOptions, Program, StreamOptions

from gpubench import DISTRIBUTION
from gpubench.backends import nvml
from gpubench.backends.base import KernelAttributes
from gpubench.backends.cuda_graphs import CudaGraphs
from gpubench.backends.driver_backend import DriverBackend
from gpubench.backends.driver_steps import (
    STAGE_BYTES,
    STAGED_UPLOAD_FROM,
    STAGES,
    copy_bytes,
    device_info,
    kernel_scalar,
    launch_problem,
    staged_upload,
)
from gpubench.backends.nvrtc_options import program_options
from gpubench.errors import (
    EnvironmentProblem,
    KernelCompileError,
    KernelLaunchError,
    OutOfMemory,
)
from gpubench.model.benchmark import BufferSpec
from gpubench.model.device import DeviceInfo, Environment
from gpubench.model.steps import (
    BufferRef,
    Copy,
    Launch,
)

_TIMING = EventOptions(timing_enabled=True)
# Streams that wait for the legacy default stream, as PyCUDA's do: the driver's memsets and
# synchronous copies (poison, zero, uploads) run there and return before the device is done,
# so a cuda.core stream of its default kind (non-blocking) could run a kernel before its
# output is poisoned, or read its inputs before they arrive.
_ORDERED = StreamOptions(nonblocking=False)


class CudaError(KernelLaunchError):
    """A driver call failed (named as the driver names the error)."""


def _check(result: Any) -> Any:
    """cuda-bindings returns (status, values...): the values, or CudaError."""
    status, *values = result if isinstance(result, tuple) else (result,)
    if status != driver.CUresult.CUDA_SUCCESS:
        _, name = driver.cuGetErrorName(status)
        raise CudaError(name.decode() if isinstance(name, bytes) else str(status))
    return values[0] if len(values) == 1 else tuple(values)


def _driver_errors(exc: BaseException) -> bool:
    """A failure of the driver as cuda.core or cuda-bindings report it."""
    return isinstance(exc, CudaError) or type(exc).__name__ == "CUDAError"


class _Module:
    """A cubin loaded into this context with the driver's module API, as PyCUDA loads it.

    Not cuda.core's ObjectCode (cuda.core 1.2.2, driver 580): with two cubins loaded that
    hold kernels of the same name (a suite's builds for two compile-time configurations),
    launching the first one's kernel ran the other's: on the H100 the plain build of
    intrinsics' sin_standard gave the --use_fast_math build's errors. A context-bound
    module per build and its CUfunctions keep each build's kernels apart.
    """

    def __init__(self, binary: bytes) -> None:
        self._binary = binary  # the image must outlive the load call
        self._handle = _check(driver.cuModuleLoadData(binary))
        self._functions: dict[str, Any] = {}

    def function(self, kernel: str) -> Any:
        if kernel not in self._functions:
            try:
                self._functions[kernel] = _check(
                    driver.cuModuleGetFunction(self._handle, kernel.encode())
                )
            except CudaError as exc:
                raise KernelLaunchError(
                    f"kernel {kernel!r} not found in the module: {exc}"
                ) from None
        return self._functions[kernel]

    def attributes(self, kernel: str) -> KernelAttributes:
        function = self.function(kernel)
        a = driver.CUfunction_attribute

        def get(attribute: Any) -> int:
            return int(_check(driver.cuFuncGetAttribute(attribute, function)))

        return KernelAttributes(
            registers_per_thread=get(a.CU_FUNC_ATTRIBUTE_NUM_REGS),
            static_shared_bytes=get(a.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
            local_bytes_per_thread=get(a.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES),
            max_threads_per_block=get(a.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
        )


# The C type of each kernel scalar's NumPy type, for the launch's parameter array.
_C_TYPES = {
    np.dtype(np.int32): ctypes.c_int32,
    np.dtype(np.uint32): ctypes.c_uint32,
    np.dtype(np.int64): ctypes.c_int64,
    np.dtype(np.uint64): ctypes.c_uint64,
    np.dtype(np.float32): ctypes.c_float,
    np.dtype(np.float64): ctypes.c_double,
}


@dataclass
class _Buffer:
    """Device memory (an address), or host memory as a flat byte array (page-locked from the
    driver, or pageable from NumPy)."""

    location: str
    nbytes: int
    device: int | None = None
    host: np.ndarray | None = None
    pinned_address: int | None = None

    @property
    def pointer(self) -> int:
        assert self.device is not None
        return self.device

    def host_bytes(self, offset: int, nbytes: int) -> np.ndarray:
        assert self.host is not None
        return self.host[offset : offset + nbytes]


def _pinned(nbytes: int) -> tuple[int, np.ndarray]:
    """Page-locked host memory from the driver, as (address, a NumPy view of its bytes)."""
    address = _check(driver.cuMemHostAlloc(nbytes, 0))
    view = np.ctypeslib.as_array((ctypes.c_ubyte * nbytes).from_address(int(address)))
    return int(address), view


def _out_of_memory(what: str, spec: BufferSpec, exc: BaseException) -> OutOfMemory:
    return OutOfMemory(f"cannot allocate {spec.nbytes:,} bytes of {what} memory ({exc})")


class CudaCoreBackend(DriverBackend):
    name = "cuda-core"

    def __init__(self, device_index: int = 0) -> None:
        self._start_device(device_index)
        self._stream = self._device.create_stream(options=_ORDERED)
        self._start = self._device.create_event(_TIMING)
        self._end = self._device.create_event(_TIMING)
        self._side_streams: dict[int, Any] = {}
        self._flush_buffer: int | None = None
        self._flush_value = 0
        try:
            self._graphs: CudaGraphs | None = CudaGraphs()
        except (OSError, AttributeError):
            self._graphs = None
        self._stage: list[np.ndarray] | None = None
        self._stage_addresses: list[int] = []
        self._stage_streams: list[Any] = []
        # Where Repeat steps read their flag back: page-locked, so the read is a plain DMA.
        self._flag_address, flag_bytes = _pinned(4)
        self._flag_host = flag_bytes.view(np.uint32)
        self._nvml_handle = nvml.handle_for(self._device.pci_bus_id)
        self._nvml = nvml.readings(self._nvml_handle)
        self.device = self._read_device_info()
        self._nvrtc_version = self._read_nvrtc_version()
        atexit.register(self._close)

    def _start_device(self, device_index: int) -> None:
        try:
            _check(driver.cuInit(0))
            count = _check(driver.cuDeviceGetCount())
        except (CudaError, RuntimeError) as exc:
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
        # The primary context, as PyCUDA's backend uses: CuPy and cuBLAS share it.
        self._device = Device(device_index)
        self._device.set_current()
        self._cu_device = _check(driver.cuDeviceGet(device_index))

    @staticmethod
    def _read_nvrtc_version() -> tuple[int, int]:
        try:
            _, major, minor = nvrtc.nvrtcVersion()
        except (RuntimeError, OSError) as exc:  # cuda-pathfinder found no libnvrtc
            raise EnvironmentProblem(
                f"NVRTC is not available ({exc}): install it with pip install "
                f"nvidia-cuda-nvrtc (or {DISTRIBUTION}[cuda-core]), or use a CUDA toolkit's libnvrtc"
            ) from None
        return int(major), int(minor)

    # -- device and environment -----------------------------------------------------------
    def _attr(self, name: str) -> int | None:
        attribute = getattr(driver.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}", None)
        if attribute is None:
            return None
        status, value = driver.cuDeviceGetAttribute(attribute, self._cu_device)
        return int(value) if status == driver.CUresult.CUDA_SUCCESS else None

    def _read_device_info(self) -> DeviceInfo:
        cc = self._device.compute_capability
        total = _check(driver.cuDeviceTotalMem(self._cu_device))
        return device_info(
            self._attr, self._device.name, (int(cc.major), int(cc.minor)), int(total), self._nvml
        )

    def environment(self) -> Environment:
        backend = {
            "name": self.name,
            "version": self.version,
            "cuda_bindings": _package_version("cuda-bindings"),
            "compiler": "NVRTC {}.{}".format(*self._nvrtc_version),
        }
        return self._environment(backend, int(_check(driver.cuDriverGetVersion())))

    @property
    def version(self) -> str:
        return _package_version("cuda-core")

    def memory_info(self) -> tuple[int, int]:
        free, total = _check(driver.cuMemGetInfo())
        return int(free), int(total)

    def context_alive(self) -> bool:
        """False once a kernel has broken the context (illegal address and friends)."""
        try:
            _check(driver.cuCtxSynchronize())
            probe = _check(driver.cuMemAlloc(4))
            _check(driver.cuMemFree(probe))
            return True
        except CudaError:
            return False

    # -- compile ----------------------------------------------------------------------------
    @property
    def compiler_id(self) -> str:
        """What the compiled binaries depend on besides source and options."""
        return "nvrtc {}.{} {}".format(*self._nvrtc_version, self.device.arch)

    def compile_binary(self, source: str, options: list[str], include_dirs: list[str]) -> bytes:
        """NVRTC → cubin for this device, in-process; safe to call from several threads."""
        return compile_cubin(source, options, include_dirs, self.device.arch)

    def load(self, binary: bytes) -> _Module:
        try:
            return _Module(binary)
        except CudaError as exc:
            raise KernelLaunchError(f"cannot load the compiled module: {exc}") from None

    # -- buffers --------------------------------------------------------------------------
    def alloc(self, spec: BufferSpec) -> _Buffer:
        nbytes = spec.nbytes
        if spec.location == "device":
            try:
                return _Buffer(
                    "device", nbytes, device=int(_check(driver.cuMemAlloc(max(nbytes, 4))))
                )
            except CudaError as exc:
                raise _out_of_memory("device", spec, exc) from None
        if spec.location == "pinned":
            try:
                address, view = _pinned(max(nbytes, 1))
            except CudaError as exc:
                raise _out_of_memory("page-locked host", spec, exc) from None
            return _Buffer("pinned", nbytes, host=view, pinned_address=address)
        try:
            return _Buffer("pageable", nbytes, host=np.empty(max(nbytes, 1), np.uint8))
        except MemoryError as exc:
            raise _out_of_memory("host", spec, exc) from None

    def write(self, buffer: _Buffer, spec: BufferSpec, host: np.ndarray) -> None:
        flat = np.ascontiguousarray(host).reshape(-1).view(np.uint8)
        if not flat.nbytes:
            return
        if buffer.device is not None and flat.nbytes >= STAGED_UPLOAD_FROM:
            self._staged_upload(buffer.pointer, flat)
        elif buffer.device is not None:
            _check(driver.cuMemcpyHtoD(buffer.pointer, flat.ctypes.data, flat.nbytes))
        else:
            buffer.host_bytes(0, flat.nbytes)[:] = flat

    def _staged_upload(self, pointer: int, flat: np.ndarray) -> None:
        if self._stage is None:
            pinned = [_pinned(STAGE_BYTES) for _ in range(STAGES)]
            self._stage_addresses = [address for address, _ in pinned]
            self._stage = [view for _, view in pinned]
            self._stage_streams = [
                self._device.create_stream(options=_ORDERED) for _ in range(STAGES)
            ]

        def copy_async(to: int, piece: np.ndarray, stream: Any) -> None:
            _check(driver.cuMemcpyHtoDAsync(to, piece.ctypes.data, piece.nbytes, stream.handle))

        staged_upload(
            pointer,
            flat,
            self._stage,
            self._stage_streams,
            copy_async,
            lambda stream: stream.sync(),
        )

    def read(self, buffer: _Buffer, spec: BufferSpec) -> np.ndarray:
        out = np.empty(spec.shape, dtype=spec.dtype)
        if not out.nbytes:
            return out
        if buffer.device is not None:
            _check(driver.cuMemcpyDtoH(out.ctypes.data, buffer.pointer, out.nbytes))
        else:
            out.reshape(-1).view(np.uint8)[:] = buffer.host_bytes(0, out.nbytes)
        return out

    def restore(self, dst: _Buffer, src: _Buffer, spec: BufferSpec) -> None:
        if not spec.nbytes:
            return
        if dst.device is not None and src.device is not None:
            # On the timing stream, before the next start event: outside the timed region.
            _check(
                driver.cuMemcpyDtoDAsync(dst.pointer, src.pointer, spec.nbytes, self._stream.handle)
            )
        elif dst.host is not None and src.host is not None:
            self._stream.sync()  # the previous run's copies into dst are done
            dst.host_bytes(0, spec.nbytes)[:] = src.host_bytes(0, spec.nbytes)
        else:
            raise KernelLaunchError("restore needs two buffers in the same place")

    def poison(self, buffer: _Buffer, spec: BufferSpec) -> None:
        # All-ones bytes are NaN in float32 and float64 (and -1 in integers): an element
        # the kernel never writes cannot pass for a right answer.
        self._fill(buffer, spec, 0xFF)

    def zero(self, buffer: _Buffer, spec: BufferSpec) -> None:
        self._fill(buffer, spec, 0)

    def _fill(self, buffer: _Buffer, spec: BufferSpec, byte: int) -> None:
        if buffer.host is not None:
            buffer.host[:] = byte
            return
        words, tail = divmod(spec.nbytes, 4)
        if words:
            _check(driver.cuMemsetD32(buffer.pointer, byte * 0x01010101, words))
        if tail:
            _check(driver.cuMemsetD8(buffer.pointer + 4 * words, byte, tail))

    def device_pointer(self, buffer: _Buffer) -> int | None:
        return buffer.device

    def free(self, buffer: _Buffer) -> None:
        if buffer.device is not None:
            _check(driver.cuMemFree(buffer.device))
        elif buffer.pinned_address is not None:
            _check(driver.cuMemFreeHost(buffer.pinned_address))  # page-locked memory is scarce
        buffer.device = buffer.host = buffer.pinned_address = None

    # -- launches ---------------------------------------------------------------------------
    def launch_problem(self, module: _Module, launches: list[Launch]) -> str | None:
        """Why the device cannot run these launch shapes, or None."""
        return launch_problem(self.device, module.attributes, launches)

    def _launch_call(
        self, module: _Module | None, step: Launch, pointers: dict[str, int], stream: Any
    ) -> Callable[[], None]:
        if module is None:
            raise KernelLaunchError(f"kernel {step.kernel!r}: this suite compiles no kernels")
        function = module.function(step.kernel)
        self._allow_dynamic_shared(module, step)
        values: list[Any] = []
        for arg in step.args:
            if isinstance(arg, BufferRef):
                values.append(ctypes.c_uint64(pointers[arg.name] + arg.offset))
            else:
                scalar = kernel_scalar(step.kernel, arg)
                values.append(_C_TYPES[scalar.dtype](scalar.item()))
        # The driver reads the parameters through an array of pointers to them, built once:
        # the call itself converts nothing.
        params = (ctypes.c_void_p * max(1, len(values)))(*[ctypes.addressof(v) for v in values])
        grid = tuple(int(g) for g in step.grid)
        block = tuple(int(b) for b in step.block)
        handle = stream.handle

        def call(keep: tuple[Any, ...] = (values, params)) -> None:
            _check(
                driver.cuLaunchKernel(
                    function,
                    *grid,
                    *block,
                    int(step.shared_bytes),
                    handle,
                    ctypes.addressof(params),
                    0,
                )
            )

        return call

    def _copy_call(
        self, step: Copy, buffers: dict[str, _Buffer], stream: Any
    ) -> tuple[str, Callable[[], None]]:
        src, dst = buffers[step.src], buffers[step.dst]
        nbytes = copy_bytes(step, src.nbytes, dst.nbytes)
        to = dst.pointer + step.dst_offset if dst.device is not None else None
        frm = src.pointer + step.src_offset if src.device is not None else None
        if to is not None and frm is not None:
            op, sync, async_ = "D2D", driver.cuMemcpyDtoD, driver.cuMemcpyDtoDAsync
            args: tuple[Any, ...] = (to, frm, nbytes)
        elif to is not None:
            op, sync, async_ = "H2D", driver.cuMemcpyHtoD, driver.cuMemcpyHtoDAsync
            args = (to, src.host_bytes(step.src_offset, nbytes).ctypes.data, nbytes)
        elif frm is not None:
            op, sync, async_ = "D2H", driver.cuMemcpyDtoH, driver.cuMemcpyDtoHAsync
            args = (dst.host_bytes(step.dst_offset, nbytes).ctypes.data, frm, nbytes)
        else:
            raise KernelLaunchError(f"copy {step.src}→{step.dst}: host to host is no GPU work")
        if step.synchronous:
            return op, lambda: _check(sync(*args))
        handle = stream.handle
        return op, lambda: _check(async_(*args, handle))

    def _repeat_iteration(
        self, body: list[Callable[[], None]], flag: _Buffer
    ) -> Callable[[], None]:
        handle = self._stream.handle

        def iteration() -> None:
            _check(driver.cuMemsetD32Async(flag.pointer, 0, 1, handle))
            for call in body:
                call()
            _check(driver.cuMemcpyDtoHAsync(self._flag_address, flag.pointer, 4, handle))

        return iteration

    # -- the driver calls DriverBackend is built on ------------------------------------------
    def _new_stream(self) -> Any:
        return self._device.create_stream(options=_ORDERED)

    def _handle(self, stream: Any) -> int:
        return int(stream.handle)

    def _new_event(self) -> Any:
        return self._device.create_event()

    def _new_timing_event(self) -> Any:
        return self._device.create_event(_TIMING)

    def _record(self, event: Any, stream: Any) -> None:
        stream.record(event)

    def _timing_event_on(self, stream: Any) -> Any:
        return stream.record(options=_TIMING)

    def _wait(self, stream: Any, event: Any) -> None:
        stream.wait(event)

    def _sync(self, stream: Any) -> None:
        stream.sync()

    def _sync_event(self, event: Any) -> None:
        event.sync()

    def _elapsed_ms(self, start: Any, end: Any) -> float:
        return float(end - start)

    def _is_driver_error(self, exc: BaseException) -> bool:
        return _driver_errors(exc)

    def _set_max_dynamic_shared(self, function: Any, nbytes: int) -> None:
        _check(
            driver.cuFuncSetAttribute(
                function,
                driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                nbytes,
            )
        )

    def _flush_l2_async(self) -> None:
        if self._flush_buffer is None:
            self._flush_buffer = int(_check(driver.cuMemAlloc(self.device.l2_bytes)))
        self._flush_value ^= 0x5A5A5A5A
        _check(
            driver.cuMemsetD32Async(
                self._flush_buffer,
                self._flush_value,
                self.device.l2_bytes // 4,
                self._stream.handle,
            )
        )

    def _close(self) -> None:
        with contextlib.suppress(Exception):  # at exit: the context may already be gone
            self._stream.sync()
            if self._flush_buffer is not None:
                driver.cuMemFree(self._flush_buffer)
            for address in [*self._stage_addresses, self._flag_address]:
                driver.cuMemFreeHost(address)


def compile_cubin(source: str, options: list[str], include_dirs: list[str], arch: str) -> bytes:
    """NVRTC → cubin for `arch` (sm_XY); KernelCompileError with NVRTC's log on failure.
    Needs no GPU: the CPU tests compile every kernel with it."""
    program_opts = program_options(options, include_dirs, arch)
    # NVRTC's cubins go through the driver's compute cache (~/.nv/ComputeCache) where a
    # driver is installed, keyed by the compiled code but not by every option: on the H100
    # (driver 580, NVRTC 13.0) a plain build of a source first built with --use_fast_math
    # came back as the fast-math one (intrinsics' sinf ran __sinf); a comment changes
    # nothing. A device variable named after the options makes each build's code its own.
    digest = hashlib.sha256("\0".join([arch, *options]).encode()).hexdigest()[:16]
    source = f'{source}\nextern "C" __device__ char gpubench_build_options[] = "{digest}";\n'
    try:
        program = Program(source, "c++", program_opts)
    except Exception as exc:  # an option NVRTC refuses
        raise KernelCompileError(
            f"NVRTC failed ({' '.join(options)})", compiler_output=str(exc)
        ) from None
    try:
        return bytes(program.compile("cubin").code)
    except Exception as exc:  # cuda.core's NVRTCError carries the compilation log
        raise KernelCompileError(
            f"NVRTC failed ({' '.join(options)})", compiler_output=_nvrtc_log(str(exc))
        ) from None
    finally:
        program.close()


def _nvrtc_log(message: str) -> str:
    """NVRTC's compilation log out of cuda.core's error message."""
    marker = "compilation log:"
    return message.split(marker, 1)[1].strip() if marker in message else message


def _package_version(distribution: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return "unknown"
