"""Where a variant's outputs are compared with the reference, and the reference kept there.

The float64 host reference is the independent oracle; it is made once per point and
computation and shared by every variant that computes it. The comparison runs where the
outputs are: on the GPU through CuPy when the outputs are device buffers and CuPy is
importable (the reference is uploaded once per point and stays beside them), else on the host
after downloading the outputs. Both run `verify.check_output`, so they give the same verdict.
GPUBENCH_CHECK=host forces the host path (parity checks, machines whose CuPy misbehaves).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from gpubench.engine import memory, verify, verify_device
from gpubench.errors import OutOfMemory
from gpubench.model.benchmark import BufferSpec, Tolerance
from gpubench.model.phases import PhaseClock
from gpubench.model.results import Verification

if TYPE_CHECKING:
    from gpubench.backends.base import Backend

_cupy: Any = None


def cupy_module() -> Any | None:
    """CuPy, imported once, or None where it is missing, broken or switched off."""
    with _import_lock:
        return _import_cupy()


_import_lock = threading.Lock()


def _import_cupy() -> Any | None:
    global _cupy
    if _cupy is None:
        _cupy = False
        if os.environ.get("GPUBENCH_CHECK", "").lower() != "host":
            try:
                import cupy

                cupy.cuda.runtime.getDeviceCount()
                _cupy = cupy
            except Exception:  # not installed, no runtime library, no device: the host path
                _cupy = False
    return _cupy or None


def warm_up_in_background() -> None:
    """Import CuPy and compile the device check on a thread while the worker starts and the
    host makes inputs and references (the first check would otherwise wait for NVRTC)."""

    def warm() -> None:
        cupy = cupy_module()
        if cupy is not None:
            # A failure here shows again, and is reported, at the first check.
            with contextlib.suppress(Exception):
                verify_device.warm_up(cupy)

    threading.Thread(target=warm, name="device-check-warm-up", daemon=True).start()


def device_view(cupy: Any, pointer: int, spec: BufferSpec) -> Any:
    """A CuPy array over memory the backend owns (no copy, no ownership taken)."""
    raw = cupy.cuda.UnownedMemory(pointer, max(spec.nbytes, 1), owner=None)
    return cupy.ndarray(spec.shape, spec.dtype, cupy.cuda.MemoryPointer(raw, 0))


@dataclass
class Checker:
    """One point's references (host, and on the device once uploaded) and the checks
    against them."""

    backend: Backend
    point_clock: PhaseClock
    host: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    _device: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The backend buffers under each device reference (freed with it, or handed over).
    _buffers: dict[str, list[Any]] = field(default_factory=dict)

    def has(self, computes: str) -> bool:
        return computes in self.host

    def set(self, computes: str, reference: dict[str, np.ndarray]) -> None:
        """`reference` as the answer of `computes` (a reference variant's outputs), in place
        of any before it: its device copy, made from the old one, is freed."""
        self.host[computes] = reference
        self._device.pop(computes, None)
        for buffer in self._buffers.pop(computes, []):
            self.backend.free(buffer)

    def make(self, computes: str, make: Callable[[], dict[str, np.ndarray]]) -> None:
        """The reference of `computes`, made once (its time is the point's)."""
        if computes not in self.host:
            with self.point_clock.phase("reference"):
                self.host[computes] = make()

    def hand_over(self, key: str) -> tuple[dict[str, np.ndarray], Any]:
        """The reference under `key`, host and device (views and their buffers, or None),
        given up by this checker: the next point's checker adopts it."""
        device = None
        if key in self._device:
            device = (self._device.pop(key), self._buffers.pop(key, []))
        return self.host.pop(key), device

    def adopt(self, key: str, host: dict[str, np.ndarray], device: Any) -> None:
        """A reference another checker handed over, under `key` (its buffers owned now)."""
        self.host[key] = host
        if device is not None:
            self._device[key], self._buffers[key] = device

    def device_bytes(self) -> int:
        return sum(a.nbytes for ref in self._device.values() for a in ref.values())

    def release(self) -> None:
        """Free the device copies (the point is done, or a variant needs the memory)."""
        self._device.clear()
        for buffers in self._buffers.values():
            for buffer in buffers:
                self.backend.free(buffer)
        self._buffers.clear()
        cupy = cupy_module() if _cupy else None
        if cupy is not None:
            cupy.get_default_memory_pool().free_all_blocks()

    # -- the check ----------------------------------------------------------------------------
    def check(
        self,
        computes: str,
        outputs: dict[str, tuple[Any, BufferSpec]],
        tolerance: dict[str, Tolerance],
        clock: PhaseClock,
        phase: str,
    ) -> Verification:
        """`outputs`: name -> (backend buffer, spec). Timed under `phase` of `clock`."""
        expected = self.host[computes]
        with clock.phase(phase):
            on_device = self._on_device(computes, outputs)
            if on_device is not None:
                got, reference, cupy = on_device
                verdict = verify.check_outputs(got, reference, tolerance, cupy)
                verdict.checked_on = "device"
                cupy.get_default_memory_pool().free_all_blocks()
                return verdict
        with clock.phase("downloads"):
            got = {
                name: self.backend.read(buffer, spec) for name, (buffer, spec) in outputs.items()
            }
        with clock.phase(phase):
            return verify.check_outputs(got, expected, tolerance)

    def _on_device(
        self, computes: str, outputs: dict[str, tuple[Any, BufferSpec]]
    ) -> tuple[Any, Any, Any] | None:
        """CuPy views of the outputs and the device reference, or None for the host path."""
        pointers = {
            name: self.backend.device_pointer(buffer) for name, (buffer, _) in outputs.items()
        }
        if any(p is None for p in pointers.values()) or not outputs:
            return None
        dtypes = [spec.dtype for _, spec in outputs.values()]
        dtypes += [a.dtype for a in self.host[computes].values()]
        if not all(verify_device.supported(d) for d in dtypes):
            return None
        cupy = cupy_module()
        if cupy is None:
            return None
        reference = self._device.get(computes)
        if reference is None:
            reference = self._upload(cupy, computes)
            if reference is None:
                return None
        got = {name: device_view(cupy, pointers[name], spec) for name, (_, spec) in outputs.items()}
        return got, reference, cupy

    def _upload(self, cupy: Any, computes: str) -> dict[str, Any] | None:
        """The reference on the device, once per point, if it fits beside the variant's
        buffers with room for the comparison's temporaries; else None (the host path)."""
        host = self.host[computes]
        need = sum(a.nbytes for a in host.values())
        free, _ = self.backend.memory_info()
        if memory.shortfall(memory.Need(device=need), free, None):
            return None
        with self.point_clock.phase("reference_upload"):
            # Through the backend (CuPy's own upload from pageable memory is several times
            # slower), viewed by CuPy; freed by release().
            views = {}
            try:
                for name, array in host.items():
                    spec = BufferSpec.like(np.ascontiguousarray(array))
                    buffer = self.backend.alloc(spec)
                    self._buffers.setdefault(computes, []).append(buffer)
                    self.backend.write(buffer, spec, array)
                    views[name] = device_view(cupy, self.backend.device_pointer(buffer), spec)
            except OutOfMemory:  # what the estimate above missed: check on the host
                self.release()
                return None
            self._device[computes] = views
        return views
