"""CUDA graphs through the driver API (ctypes): stream capture, instantiate, launch.

The PyCUDA build gpubench runs with has no graph bindings. A graph of N runs is launched with
one call, so even kernels of a few microseconds run back to back without launch gaps (hot
mode).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpubench.errors import KernelLaunchError


class CudaGraphs:
    """Stream capture into CUDA graphs through the driver API (ctypes): this PyCUDA build has
    no graph bindings. A graph of N runs is launched with one call, so even kernels of a few
    microseconds run back to back without launch gaps."""

    RELAXED = 2  # CU_STREAM_CAPTURE_MODE_RELAXED: PyCUDA's own calls may run meanwhile

    def __init__(self) -> None:
        import ctypes

        self._ctypes = ctypes
        self._lib = ctypes.CDLL("libcuda.so.1")
        for name in (
            "cuStreamBeginCapture_v2",
            "cuStreamEndCapture",
            "cuGraphInstantiateWithFlags",
            "cuGraphLaunch",
            "cuGraphDestroy",
            "cuGraphExecDestroy",
        ):
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
