"""DriverBackend, the class the PyCUDA and cuda.core backends derive from: a variant's steps
bound to calls on the timing stream and its side streams, timed with events, cold, hot (as
CUDA graphs where they can be captured) and step by step (timelines), and Repeat loops.

A backend built on this supplies the driver calls it is made of (the abstract methods below)
and the attributes: `device`, `_stream` (the timing stream), `_side_streams` (index → stream),
`_start` and `_end` (timing events), `_graphs` (CudaGraphs or None), `_flag_host` (where a
Repeat reads its flag back) and `_nvml_handle` (this GPU in NVML, or None). The timing logic
then is one, whichever library calls the driver.

Cold samples come in batches (`enqueue_cold_batch`): each sample its own flush and its own
pair of events from a pool (`_event_pool`, made as the largest batch needs, one per batch in
flight), the batch enqueued back to back and waited for once, so the GPU does not idle while
the host reads one sample and enqueues the next; the next batch can be enqueued before the wait
for this one.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
from collections.abc import Callable
from functools import partial
from typing import Any

from gpubench.backends import nvml
from gpubench.backends.driver_steps import (
    BoundRun,
    Op,
    driver_api_version,
    needs_opt_in,
    run_repeat,
)
from gpubench.errors import KernelLaunchError
from gpubench.model.benchmark import BufferSpec
from gpubench.model.device import Environment, host_environment
from gpubench.model.steps import Copy, Launch, LibraryCall, Repeat, RunRecord, Step, streams_used
from gpubench.model.timing import Batch


@functools.cache
def _libcuda() -> ctypes.CDLL:
    return ctypes.CDLL("libcuda.so.1")


def _driver_call(name: str) -> None:
    """A driver call with no arguments on the current context (both backends make the
    device's primary context current in the thread that runs the harness)."""
    code = getattr(_libcuda(), name)()
    if code:
        raise KernelLaunchError(f"{name} failed with CUDA error {code}")


class DriverBackend:
    device: Any
    _stream: Any
    _side_streams: dict[int, Any]
    _start: Any
    _end: Any
    _graphs: Any
    _flag_host: Any
    _nvml_handle: Any
    _event_pools: list[list[Any]]  # timing events no batch in flight holds (_event_pool)

    # -- the driver calls a backend supplies ----------------------------------------------------
    def _new_stream(self) -> Any:
        raise NotImplementedError

    def _handle(self, stream: Any) -> int:
        """The stream's CUstream, as an integer (for graphs and library calls)."""
        raise NotImplementedError

    def _new_event(self) -> Any:
        raise NotImplementedError

    def _new_timing_event(self) -> Any:
        """A new event that records a time (for the pool the batches draw from)."""
        raise NotImplementedError

    def _record(self, event: Any, stream: Any) -> None:
        raise NotImplementedError

    def _timing_event_on(self, stream: Any) -> Any:
        """A new timing event, recorded on `stream` now."""
        raise NotImplementedError

    def _wait(self, stream: Any, event: Any) -> None:
        raise NotImplementedError

    def _sync(self, stream: Any) -> None:
        raise NotImplementedError

    def _sync_event(self, event: Any) -> None:
        raise NotImplementedError

    def _elapsed_ms(self, start: Any, end: Any) -> float:
        raise NotImplementedError

    def _is_driver_error(self, exc: BaseException) -> bool:
        """An error the driver reported (a launch that failed, a faulting kernel)."""
        raise NotImplementedError

    def _flush_l2_async(self) -> None:
        """Write an L2-sized buffer on the timing stream."""
        raise NotImplementedError

    def _repeat_iteration(self, body: list[Callable[[], None]], flag: Any) -> Callable[[], None]:
        """One iteration of a Repeat on the timing stream: clear the flag, run the body,
        copy the flag to `_flag_host`."""
        raise NotImplementedError

    def _set_max_dynamic_shared(self, function: Any, nbytes: int) -> None:
        """cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) for a kernel of a loaded module."""
        raise NotImplementedError

    def _launch_call(
        self, module: Any, step: Any, pointers: dict[str, int], stream: Any
    ) -> Callable[[], None]:
        raise NotImplementedError

    def _copy_call(
        self, step: Copy, buffers: dict[str, Any], stream: Any
    ) -> tuple[str, Callable[[], None]]:
        raise NotImplementedError

    # -- what they share ------------------------------------------------------------------
    def readings(self) -> dict[str, Any]:
        """SM clock, temperature and power now (for the start and end of a run)."""
        reading = nvml.readings(self._nvml_handle)
        return {k: reading.get(k) for k in ("sm_clock_mhz", "temperature_c", "power_w")}

    def sm_clock_mhz(self) -> float | None:
        return nvml.sm_clock(self._nvml_handle) if self._nvml_handle is not None else None

    def energy_meter(self) -> nvml.NvmlEnergyMeter | None:
        """NVML's energy counter for this GPU, opened once (None where there is none)."""
        if not hasattr(self, "_energy_meter"):
            self._energy_meter = nvml.NvmlEnergyMeter.open(self._nvml_handle)
        return self._energy_meter

    def _environment(self, backend: dict[str, str], driver_api: int) -> Environment:
        """The host, the device, the backend's own versions, and the driver and GPU state as
        NVML reads them now."""
        env = host_environment()
        env.backend = backend
        env.device = self.device.to_dict()
        reading = nvml.readings(self._nvml_handle)
        env.gpu_uuid = reading.get("uuid")
        env.driver_version = reading.get("driver")
        env.cuda_driver_api_version = driver_api_version(driver_api)
        env.sm_clock_mhz_at_start = reading.get("sm_clock_mhz")
        env.temperature_c_at_start = reading.get("temperature_c")
        env.power_w_at_start = reading.get("power_w")
        env.energy_counter = self.energy_meter() is not None
        return env

    def _driver_failure(self, exc: BaseException) -> BaseException:
        """`exc` as the KernelLaunchError the harness reports, if the driver raised it."""
        if not self._is_driver_error(exc):
            return exc
        return KernelLaunchError(f"{type(exc).__name__}: {exc}")

    def _allow_dynamic_shared(self, module: Any, step: Launch) -> None:
        """Past the default 48 KB per block, allow the kernel the dynamic shared memory its
        launch asks for (up to the device's opt-in limit, which launch_problem checks)."""
        if not needs_opt_in(self.device, module.attributes(step.kernel), step):
            return
        try:
            self._set_max_dynamic_shared(module.function(step.kernel), int(step.shared_bytes))
        except Exception as exc:
            if not self._is_driver_error(exc):
                raise
            raise KernelLaunchError(
                f"kernel {step.kernel!r}: cannot opt in to "
                f"{step.shared_bytes} bytes of shared memory: {exc}"
            ) from None

    def _stream_for(self, index: int) -> Any:
        if index == 0:
            return self._stream
        if index not in self._side_streams:
            self._side_streams[index] = self._new_stream()
        return self._side_streams[index]

    def bind(
        self, module: Any, steps: list[Step], buffers: dict[str, Any], specs: dict[str, BufferSpec]
    ) -> BoundRun:
        side = {index: self._stream_for(index) for index in streams_used(steps)}
        bound = BoundRun(ops=[])
        pointers = {n: b.pointer for n, b in buffers.items() if b.device is not None}

        def resolve(step: Any) -> Op:
            stream = self._stream_for(step.stream)
            if isinstance(step, LibraryCall):
                call = partial(step.run, pointers, self._handle(stream))
                return Op(step.stream, "library", step.label or step.name, call)
            if isinstance(step, Copy):
                op, call = self._copy_call(step, buffers, stream)
                pageable = "pageable" in (buffers[step.src].location, buffers[step.dst].location)
                if step.synchronous or pageable:
                    bound.capturable = False
                return Op(step.stream, op, step.label, call)
            return Op(
                step.stream,
                "kernel",
                step.label or step.kernel,
                self._launch_call(module, step, pointers, stream),
            )

        for step in steps:
            if isinstance(step, Repeat):
                body = [resolve(s).call for s in step.body]
                bound.capturable = False  # the flag is read back by the host every iteration
                bound.has_repeat = True
                iteration = self._repeat_iteration(body, buffers[step.flag])
                call = partial(
                    run_repeat,
                    bound,
                    step,
                    iteration,
                    partial(self._sync, self._stream),
                    self._flag_host,
                    self._graphs,
                    self._handle(self._stream),
                )
                bound.ops.append(Op(0, "repeat", step.label or "repeat", call))
            else:
                bound.ops.append(resolve(step))
        if side:
            bound.fork, bound.join = self._fork_and_join(side)
        bound.calls = [op.call for op in bound.ops]
        return bound

    def _fork_and_join(self, side: dict[int, Any]) -> tuple[Callable[[], None], Callable[[], None]]:
        main, forked = self._stream, self._new_event()
        joins = {index: self._new_event() for index in side}

        def fork() -> None:  # side streams start after what the timing stream holds...
            self._record(forked, main)
            for stream in side.values():
                self._wait(stream, forked)

        def join() -> None:  # ...and the timing stream's end event waits for all of them
            for index, stream in side.items():
                self._record(joins[index], stream)
                self._wait(main, joins[index])

        return fork, join

    def run_checked(self, bound: BoundRun) -> RunRecord:
        try:
            bound.enqueue()
            self._sync(self._stream)
        except Exception as exc:
            raise self._driver_failure(exc) from None
        return bound.record

    def time_once_ms(self, bound: BoundRun, flush_l2: bool) -> float:
        if flush_l2 and self.device.l2_bytes:
            # Writing an L2-sized buffer evicts the previous sample's data (nvbench's method).
            # It also keeps the GPU busy while the host enqueues the timed launches, so
            # host-side launch overhead does not leak into the measured interval.
            self._flush_l2_async()
        return self._event_interval_ms(bound.enqueue)

    def enqueue_cold_batch(
        self, bound: BoundRun, flush_l2: bool, samples: int, before_each: Callable[[], None]
    ) -> Callable[[], Batch]:
        """`samples` cold samples back to back on the timing stream, each: `before_each()`
        (device work it enqueues on the timing stream stays ahead of the run), the L2 flush if
        asked, a start event, the run, an end event. The wait returned waits on the last end
        event, then reads every interval. An event before the batch and one before each flush
        say how long the GPU spent between the intervals and flushing. The events are the
        batch's own until its wait returns, so a second batch can queue behind it."""
        flush = flush_l2 and bool(self.device.l2_bytes)
        pool = self._event_pool(1 + 3 * samples)
        opened, marks = pool[0], [pool[1 + 3 * i : 4 + 3 * i] for i in range(samples)]
        try:
            self._record(opened, self._stream)
            for before_flush, start, end in marks:
                before_each()
                if flush:
                    self._record(before_flush, self._stream)
                    self._flush_l2_async()
                self._record(start, self._stream)
                bound.enqueue()
                self._record(end, self._stream)
        except Exception as exc:
            self._abandon()
            self._event_pools.append(pool)
            raise self._driver_failure(exc) from None

        def wait() -> Batch:
            try:
                self._sync_event(marks[-1][2])
                return Batch(
                    [self._elapsed_ms(start, end) for _, start, end in marks],
                    self._elapsed_ms(opened, marks[-1][2]),
                    sum(self._elapsed_ms(b, s) for b, s, _ in marks) if flush else 0.0,
                )
            except Exception as exc:
                self._abandon()
                raise self._driver_failure(exc) from None
            finally:
                self._event_pools.append(pool)  # free for the next batch

        return wait

    def _event_pool(self, count: int) -> list[Any]:
        """At least `count` timing events no batch in flight holds: the largest of the pools
        kept between batches (making an event is a driver call), one per batch in flight at
        once, each grown to the largest batch it served."""
        pools = self.__dict__.setdefault("_event_pools", [])
        pool = pools.pop(max(range(len(pools)), key=lambda i: len(pools[i]))) if pools else []
        while len(pool) < count:
            pool.append(self._new_timing_event())
        return pool

    def _abandon(self) -> None:
        """After a failure in a batch: wait for what the timing stream holds (any error it
        reports is the one being raised), so nothing of the batch runs on past it."""
        with contextlib.suppress(Exception):
            self._sync(self._stream)

    def _event_interval_ms(self, enqueue: Callable[[], None]) -> float:
        """GPU time between two events on the timing stream around `enqueue()`."""
        try:
            self._record(self._start, self._stream)
            enqueue()
            self._record(self._end, self._stream)
            self._sync_event(self._end)
        except Exception as exc:
            raise self._driver_failure(exc) from None
        return self._elapsed_ms(self._start, self._end)

    def time_hot_ms(self, bound: BoundRun, runs: int, use_graph: bool = True) -> float:
        """`runs` back-to-back runs between two events, per run, no flush: as one CUDA graph
        where the driver and the steps allow it, else as `runs` runs in the queue."""
        graphs = self._graphs if use_graph and bound.capturable else None
        handle = self._handle(self._stream)
        if graphs is not None and runs not in bound.graphs:
            # A capture the driver refuses (a library call inside, say) leaves plain launches.
            with contextlib.suppress(KernelLaunchError):
                bound.graphs[runs] = graphs.capture(
                    handle, lambda: [bound.enqueue() for _ in range(runs)]
                )
        if graphs is not None and runs in bound.graphs:
            executable = bound.graphs[runs]
            return self._event_interval_ms(lambda: graphs.launch(executable, handle)) / runs

        def back_to_back() -> None:
            for _ in range(runs):
                bound.enqueue()

        return self._event_interval_ms(back_to_back) / runs

    def timeline(self, bound: BoundRun) -> list[dict[str, Any]]:
        """One run with an event pair around every step, in ms from the run's start."""
        try:
            start = self._timing_event_on(self._stream)
            bound.record = RunRecord()
            if bound.fork is not None:
                bound.fork()
            marks = []
            for op in bound.ops:
                stream = self._stream_for(op.stream)
                before = self._timing_event_on(stream)
                op.call()
                marks.append((op, before, self._timing_event_on(stream)))
            if bound.join is not None:
                bound.join()
            self._sync(self._stream)
            return [
                {
                    "stream": op.stream,
                    "op": op.op,
                    "label": op.label,
                    "start_ms": self._elapsed_ms(start, before),
                    "end_ms": self._elapsed_ms(start, after),
                }
                for op, before, after in marks
            ]
        except Exception as exc:
            raise self._driver_failure(exc) from None

    def release(self, bound: BoundRun) -> None:
        """Free what timing attached to a bound run (CUDA graphs)."""
        if self._graphs is not None:
            for executable in bound.graphs.values():
                if executable is not None:  # None: a Repeat that could not be captured
                    self._graphs.destroy(executable)
        bound.graphs.clear()

    def synchronize_device(self) -> None:
        """cuCtxSynchronize: every stream of this context, the library calls' own included."""
        _driver_call("cuCtxSynchronize")

    def reset_persisting_l2(self) -> None:
        # Devices without persisting L2 (before compute capability 8.0) refuse the call: there
        # is nothing to reset there.
        with contextlib.suppress(KernelLaunchError, OSError):
            _driver_call("cuCtxResetPersistingL2Cache")

    @property
    def graphs_available(self) -> bool:
        return self._graphs is not None
