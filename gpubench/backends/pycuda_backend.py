"""PyCUDA backend: primary context, nvcc compiles and module loads, device and host buffers,
and the driver calls (streams, events, launches, copies) that DriverBackend times runs with.

The only module that imports pycuda (NVML and CUDA graphs have helper modules of their own).
"""

from __future__ import annotations

import atexit
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

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
from gpubench.errors import (
    EnvironmentProblem,
    KernelCompileError,
    KernelLaunchError,
    OutOfMemory,
)
from gpubench.model.benchmark import BufferSpec
from gpubench.model.device import (
    DeviceInfo,
    Environment,
    check_nvcc_supports,
    nvcc_version,
)
from gpubench.model.steps import (
    BufferRef,
    Copy,
    Launch,
)

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
class _Buffer:
    """Device memory, or host memory as a flat byte array (page-locked or pageable)."""

    location: str
    nbytes: int
    device: Any = None
    host: np.ndarray | None = None

    @property
    def pointer(self) -> int:
        return int(self.device)

    def host_bytes(self, offset: int, nbytes: int) -> np.ndarray:
        assert self.host is not None
        return self.host[offset : offset + nbytes]


def _out_of_memory(what: str, spec: BufferSpec, exc: BaseException) -> OutOfMemory:
    return OutOfMemory(f"cannot allocate {spec.nbytes:,} bytes of {what} memory ({exc})")


class PyCudaBackend(DriverBackend):
    name = "pycuda"

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
        self._side_streams: dict[int, Any] = {}
        self._flush_buffer: Any = None
        try:
            self._graphs: CudaGraphs | None = CudaGraphs()
        except (OSError, AttributeError):  # no driver library or too old for graphs
            self._graphs = None
        self._flush_value = 0
        # Page-locked slots of large uploads (allocated on the first one).
        self._stage: list[Any] | None = None
        self._stage_streams: list[Any] = []
        # Where Repeat steps read their flag back: page-locked, so the read is a plain DMA.
        self._flag_host = cuda.pagelocked_empty(1, np.uint32)
        self._nvml_handle = nvml.handle_for(self._cu_device.pci_bus_id())
        self._nvml = nvml.readings(self._nvml_handle)
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
        return device_info(
            self._attr,
            self._cu_device.name(),
            self._cu_device.compute_capability(),
            self._cu_device.total_memory(),
            self._nvml,
        )

    def environment(self) -> Environment:
        import pycuda

        env = self._environment(
            {"name": self.name, "version": self.version}, cuda.get_driver_version()
        )
        env.pycuda_version = pycuda.VERSION_TEXT
        env.pycuda_built_for_cuda = ".".join(str(v) for v in cuda.get_version())
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

    @property
    def version(self) -> str:
        import pycuda

        return pycuda.VERSION_TEXT

    def memory_info(self) -> tuple[int, int]:
        free, total = cuda.mem_get_info()
        return int(free), int(total)

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

    # -- buffers --------------------------------------------------------------------------
    def alloc(self, spec: BufferSpec) -> _Buffer:
        nbytes = spec.nbytes
        if spec.location == "device":
            try:
                return _Buffer("device", nbytes, device=cuda.mem_alloc(max(nbytes, 4)))
            except cuda.Error as exc:
                raise _out_of_memory("device", spec, exc) from None
        if spec.location == "pinned":
            try:
                return _Buffer(
                    "pinned", nbytes, host=cuda.pagelocked_empty(max(nbytes, 1), np.uint8)
                )
            except cuda.Error as exc:
                raise _out_of_memory("page-locked host", spec, exc) from None
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
            cuda.memcpy_htod(buffer.device, flat)
        else:
            buffer.host_bytes(0, flat.nbytes)[:] = flat

    def _staged_upload(self, pointer: int, flat: np.ndarray) -> None:
        if self._stage is None:
            self._stage = [cuda.pagelocked_empty(STAGE_BYTES, np.uint8) for _ in range(STAGES)]
            self._stage_streams = [cuda.Stream() for _ in range(STAGES)]
        staged_upload(
            pointer,
            flat,
            self._stage,
            self._stage_streams,
            cuda.memcpy_htod_async,
            cuda.Stream.synchronize,
        )

    def read(self, buffer: _Buffer, spec: BufferSpec) -> np.ndarray:
        out = np.empty(spec.shape, dtype=spec.dtype)
        if not out.nbytes:
            return out
        if buffer.device is not None:
            cuda.memcpy_dtoh(out, buffer.device)
        else:
            out.reshape(-1).view(np.uint8)[:] = buffer.host_bytes(0, out.nbytes)
        return out

    def restore(self, dst: _Buffer, src: _Buffer, spec: BufferSpec) -> None:
        if not spec.nbytes:
            return
        if dst.device is not None and src.device is not None:
            # On the timing stream, before the next start event: outside the timed region.
            cuda.memcpy_dtod_async(dst.device, src.device, spec.nbytes, self._stream)
        elif dst.host is not None and src.host is not None:
            self._stream.synchronize()  # the previous run's copies into dst are done
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
            cuda.memset_d32(buffer.device, byte * 0x01010101, words)
        if tail:
            cuda.memset_d8(buffer.pointer + 4 * words, byte, tail)

    def device_pointer(self, buffer: _Buffer) -> int | None:
        return int(buffer.device) if buffer.device is not None else None

    def free(self, buffer: _Buffer) -> None:
        if buffer.device is not None:
            buffer.device.free()
        elif buffer.location == "pinned" and buffer.host is not None:
            buffer.host.base.free()  # page-locked memory is scarce: give it back now
        buffer.device = buffer.host = None

    # -- launches ---------------------------------------------------------------------------
    def launch_problem(self, module: _Module, launches: list[Launch]) -> str | None:
        """Why the device cannot run these launch shapes, or None."""
        return launch_problem(self.device, module.attributes, launches)

    def _launch_call(
        self, module: _Module | None, step: Launch, pointers: dict[str, int], stream: Any
    ) -> Callable[[], None]:
        if module is None:
            raise KernelLaunchError(f"kernel {step.kernel!r}: this suite compiles no kernels")
        func = module.function(step.kernel)
        self._allow_dynamic_shared(module, step)
        codes, values = [], []
        for arg in step.args:
            if isinstance(arg, BufferRef):
                codes.append("P")
                values.append(pointers[arg.name] + arg.offset)
            else:
                scalar = kernel_scalar(step.kernel, arg)
                codes.append(_TYPE_CODES[scalar.dtype])
                values.append(scalar.item())
        # prepare() once per kernel and signature; the call itself does no parsing.
        func.prepare("".join(codes))
        grid = tuple(int(g) for g in step.grid)
        block = tuple(int(b) for b in step.block)
        # The arguments packed once, as prepared_async_call would pack them on every call:
        # a launch is then one call into the driver (PyCUDA's CUDA 4+ launch), as on the
        # cuda-core backend (loops of short launches, sssp's, timed the same on both).
        from pycuda._pvt_struct import pack

        return partial(
            func._launch_kernel,
            grid,
            block,
            pack(func.arg_format, *values),
            int(step.shared_bytes),
            stream,
        )

    def _copy_call(
        self, step: Copy, buffers: dict[str, _Buffer], stream: Any
    ) -> tuple[str, Callable[[], None]]:
        src, dst = buffers[step.src], buffers[step.dst]
        nbytes = copy_bytes(step, src.nbytes, dst.nbytes)
        # Device ends are pointers, host ends byte views; every memcpy takes (dst, src, ...).
        to = dst.pointer + step.dst_offset if dst.device is not None else None
        frm = src.pointer + step.src_offset if src.device is not None else None
        if to is not None and frm is not None:
            op, sync, async_ = "D2D", cuda.memcpy_dtod, cuda.memcpy_dtod_async
            args: tuple[Any, ...] = (to, frm, nbytes)
        elif to is not None:
            op, sync, async_ = "H2D", cuda.memcpy_htod, cuda.memcpy_htod_async
            args = (to, src.host_bytes(step.src_offset, nbytes))
        elif frm is not None:
            op, sync, async_ = "D2H", cuda.memcpy_dtoh, cuda.memcpy_dtoh_async
            args = (dst.host_bytes(step.dst_offset, nbytes), frm)
        else:
            raise KernelLaunchError(f"copy {step.src}→{step.dst}: host to host is no GPU work")
        if step.synchronous:
            return op, partial(sync, *args)
        return op, partial(async_, *args, stream)

    def _repeat_iteration(
        self, body: list[Callable[[], None]], flag: _Buffer
    ) -> Callable[[], None]:
        stream, flag_host = self._stream, self._flag_host

        def iteration() -> None:
            cuda.memset_d32_async(flag.device, 0, 1, stream)
            for call in body:
                call()
            cuda.memcpy_dtoh_async(flag_host, flag.device, stream)

        return iteration

    # -- the driver calls DriverBackend is built on ------------------------------------------
    def _new_stream(self) -> Any:
        return cuda.Stream()

    def _handle(self, stream: Any) -> int:
        return int(stream.handle)

    def _new_event(self) -> Any:
        return cuda.Event()

    def _new_timing_event(self) -> Any:
        return cuda.Event()  # PyCUDA's events record time unless told not to

    def _record(self, event: Any, stream: Any) -> None:
        event.record(stream)

    def _timing_event_on(self, stream: Any) -> Any:
        event = cuda.Event()
        event.record(stream)
        return event

    def _wait(self, stream: Any, event: Any) -> None:
        stream.wait_for_event(event)

    def _sync(self, stream: Any) -> None:
        stream.synchronize()

    def _sync_event(self, event: Any) -> None:
        event.synchronize()

    def _elapsed_ms(self, start: Any, end: Any) -> float:
        return float(end.time_since(start))

    def _is_driver_error(self, exc: BaseException) -> bool:
        return isinstance(exc, cuda.Error)

    def _set_max_dynamic_shared(self, function: Any, nbytes: int) -> None:
        function.set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes)

    def _flush_l2_async(self) -> None:
        if self._flush_buffer is None:
            self._flush_buffer = cuda.mem_alloc(self.device.l2_bytes)
        self._flush_value ^= 0x5A5A5A5A
        cuda.memset_d32_async(
            self._flush_buffer, self._flush_value, self.device.l2_bytes // 4, self._stream
        )

    def _close(self) -> None:
        try:
            if self._flush_buffer is not None:
                self._flush_buffer.free()
            for slot in self._stage or []:
                slot.base.free()
            self._flag_host.base.free()
            self._context.pop()
            from pycuda.tools import clear_context_caches

            clear_context_caches()
        except cuda.Error:
            pass
