"""The steps a variant's run is made of: plain data that any backend can execute.

A suite never drives the device itself. It declares buffers (device or host, by name) and a
list of steps; the backend launches, copies, repeats and times them, and the harness
allocates, fills, poisons and checks every buffer the steps touch.

    Launch       a kernel on a stream, its arguments buffer references and NumPy scalars
    Copy         bytes between two buffers; the direction follows from where they live
    LibraryCall  a vendor library (cuBLAS, CUB) on the harness's buffers and stream
    Repeat       a body run until a device flag stays zero (iteration to convergence)

Streams follow CUDA's rules: steps on one stream run in order; steps on different streams
are not ordered against each other. A run forks its side streams (1, 2, ...) from the
timing stream (0) when it starts and joins them back when it ends, so the end event and the
check that follows see every step finished. A synchronous Copy blocks the host, so every
step issued after it starts after it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class BufferRef:
    """A kernel argument that is one of the harness's buffers, by name, `offset` bytes in."""

    name: str
    offset: int = 0


@dataclass(frozen=True)
class Launch:
    """One kernel launch: scalars are NumPy scalars so their C type is explicit."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple[Any, ...]
    shared_bytes: int = 0
    # 0 is the timing stream; 1, 2, ... are side streams the backend forks from it at the
    # start of the run and joins back into it at the end.
    stream: int = 0
    # Shown in timelines (e.g. the matrix a launch works on).
    label: str = ""

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


@dataclass(frozen=True)
class Copy:
    """`nbytes` (default: all of `src` past its offset) from buffer `src` to buffer `dst`.
    Host→device, device→host or device→device, from where the two buffers live."""

    src: str
    dst: str
    nbytes: int | None = None
    src_offset: int = 0
    dst_offset: int = 0
    stream: int = 0
    # True: the host waits for the copy (cudaMemcpy without a stream), as a program without
    # streams does. Only on the timing stream.
    synchronous: bool = False
    label: str = ""


@dataclass(frozen=True)
class LibraryCall:
    """A step done by a library (CuPy/CUB, cuBLAS) on the harness's buffers and stream:
    `run(pointers, stream_handle)` gets the device pointers by buffer name."""

    name: str
    run: Callable[[dict[str, int], int], None]
    stream: int = 0
    label: str = ""


@dataclass(frozen=True)
class Repeat:
    """Run `body` until the one-element integer device buffer `flag` is still zero after an
    iteration, at most `max_iterations` times. The backend zeroes the flag before each
    iteration and reads it back after it, inside the timed region (a real solver pays that
    round trip); kernels set it to non-zero when they changed something. The number of
    iterations run becomes part of the result."""

    body: tuple[Launch | Copy | LibraryCall, ...]
    flag: str
    max_iterations: int
    label: str = ""


Step = Launch | Copy | LibraryCall | Repeat


@dataclass
class RunRecord:
    """What one run of a variant recorded besides its outputs."""

    # Body runs of every Repeat in the run (0 without a Repeat).
    iterations: int = 0
    # False when a Repeat reached max_iterations with its flag still set.
    converged: bool = True
    # Which Repeat did not converge, for the message.
    unconverged: list[str] = field(default_factory=list)
    # The buffers a Case names in `read_back`, as the checked run left them (counters a
    # solver keeps on the device: steps taken, edges relaxed).
    read_back: dict[str, Any] = field(default_factory=dict)


def flatten(steps: list[Step] | tuple[Step, ...]) -> Iterator[Launch | Copy | LibraryCall]:
    """Every step, with Repeat bodies opened."""
    for step in steps:
        if isinstance(step, Repeat):
            yield from step.body
        else:
            yield step


def kernel_launches(steps: list[Step] | tuple[Step, ...]) -> list[Launch]:
    return [step for step in flatten(steps) if isinstance(step, Launch)]


def has_repeat(steps: list[Step] | tuple[Step, ...]) -> bool:
    return any(isinstance(step, Repeat) for step in steps)


def referenced_buffers(steps: list[Step] | tuple[Step, ...]) -> set[str]:
    """Names of the buffers the steps read or write (library calls excepted: they receive
    every buffer's pointer)."""
    names: set[str] = set()
    for step in steps:
        if isinstance(step, Repeat):
            names.add(step.flag)
    for step in flatten(steps):
        if isinstance(step, Launch):
            names.update(arg.name for arg in step.args if isinstance(arg, BufferRef))
        elif isinstance(step, Copy):
            names.update((step.src, step.dst))
    return names


def streams_used(steps: list[Step] | tuple[Step, ...]) -> list[int]:
    """Side streams (not 0) used by the steps, in order of first use."""
    seen: list[int] = []
    for step in flatten(steps):
        if step.stream and step.stream not in seen:
            seen.append(step.stream)
    return seen
