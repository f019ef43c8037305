"""The small interface the runner needs from a device backend."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Protocol

import numpy as np

from gpubench.benchmark import BufferSpec, Launch, LibraryCall
from gpubench.device import DeviceInfo, Environment


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
    def attributes(self, kernel: str) -> KernelAttributes: ...


class BoundRun(Protocol):
    """A variant's launches with their arguments resolved, ready to enqueue with no lookups."""

    def enqueue(self) -> None: ...


class Backend(Protocol):
    device: DeviceInfo

    def environment(self) -> Environment: ...

    def compile(
        self, source: str, options: list[str], include_dirs: list[str]
    ) -> CompiledModule: ...

    def alloc(self, spec: BufferSpec) -> Any: ...

    def upload(self, host: np.ndarray) -> Any: ...

    def download(self, buffer: Any, spec: BufferSpec) -> np.ndarray: ...

    def poison(self, buffer: Any, spec: BufferSpec) -> None: ...

    def zero(self, buffer: Any, spec: BufferSpec) -> None: ...

    def free(self, buffer: Any) -> None: ...

    def launch_problem(self, module: CompiledModule, launches: list[Launch]) -> str | None: ...

    def bind(
        self, module: CompiledModule, steps: list[Launch | LibraryCall], buffers: dict[str, Any]
    ) -> BoundRun: ...

    def run_checked(self, bound: BoundRun) -> None: ...

    def time_once_ms(self, bound: BoundRun, flush_l2: bool) -> float: ...
