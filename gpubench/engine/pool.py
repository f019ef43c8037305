"""Several GPUs of one host: one isolated worker per GPU, points handed out as GPUs free up.

The parent still never touches CUDA. One thread per GPU takes the next point from a shared
queue and runs it on its worker (which owns the point from first variant to last, so the
speedups of a point compare variants measured on the same GPU); results reach the observers
(the log, the table, the progress bar) under one lock, in the order they finish.

One host, one compile cache: the first worker compiles the sweep's builds in the background,
in the order the points are handed out, from the moment it is up; the other workers start
(imports, CUDA context) meanwhile, and each point waits only for its own build (a build in
progress is waited for, never compiled twice: gpubench.engine.kernels).

Hand-out: problem by problem (gpubench.engine.dispatch), biggest first. A GPU takes its next
point when it is free, so the work balances itself whatever the points cost; it keeps to one
problem while that has points left, so a problem's inputs and references are made by as few
workers as the balance allows; and where every problem left is held, a free GPU joins the
one with the most time left, where that pays for making its data once more. The builds come
ready in the order the points were listed, biggest first.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from gpubench import backends
from gpubench.engine import dispatch
from gpubench.engine.devices import count_devices
from gpubench.engine.input_sets import input_bytes
from gpubench.engine.runner import Notifier, Observer, Plan
from gpubench.engine.worker import IsolatedRunner, WorkerSpec
from gpubench.errors import EnvironmentProblem
from gpubench.host import usable_cpus
from gpubench.model.results import Result, point_key


def host_gpu_count(backend: str) -> int | None:
    """The GPUs "all" means, counted without CUDA (CUDA_VISIBLE_DEVICES, else NVML), for the
    built-in backends; None where that cannot say (a backend of the user's counts its own)."""
    return count_devices() if backend in backends.BUILT_IN else None


def remaining_work(
    plan: Plan, previous: Iterable[Result]
) -> tuple[dict[tuple[str, str], Result], list[tuple[dict[str, Any], list[str]]]]:
    """(results already logged, by point and variant; the points still to run with their
    missing variants, biggest first)."""
    done = {(point_key(r.point), r.variant): r for r in previous}
    todo = [
        (point, [v for v in plan.variants if (point_key(point), v) not in done])
        for point in plan.points
    ]
    return done, largest_first(plan, [(p, variants) for p, variants in todo if variants])


def largest_first(
    plan: Plan, todo: list[tuple[dict[str, Any], list[str]]]
) -> list[tuple[dict[str, Any], list[str]]]:
    """The biggest points first (by their inputs' bytes, where the suite can say): the last
    points handed out are then the short ones, and no GPU waits long for another to finish
    a big one at the end."""

    def size(item: tuple[dict[str, Any], list[str]]) -> int:
        return input_bytes(plan.bench, item[0]) * len(item[1])

    return sorted(todo, key=size, reverse=True)  # stable: equal sizes keep the sweep's order


class DevicePool:
    """The IsolatedRunner interface over several GPUs."""

    def __init__(
        self, suite: str, devices: list[int] | str, backend: str, observers: Iterable[Observer] = ()
    ) -> None:
        self.suite = suite
        self.requested = devices
        self.backend = backend
        self.observers = list(observers)
        self.runners: list[IsolatedRunner] = []
        self.environment: dict[str, Any] | None = None
        self._stop = threading.Event()
        self._compile: tuple[Plan, Callable[[dict[str, Any]], None], float] | None = None
        # The workers of this pool share their builds' failures (see gpubench.engine.kernels).
        self._scope = os.urandom(8).hex()
        self._host_threads: int | None = None  # each worker's share of the host's cores

    def _spec(self, index: int) -> WorkerSpec:
        return WorkerSpec(
            self.suite, index, self.backend, self._scope, host_threads=self._host_threads
        )

    def _first_runner(self, index: int) -> IsolatedRunner:
        """The runner of the first GPU: it compiles for all, asked before it starts (the
        compile begins the moment it is up)."""
        runner = IsolatedRunner(self._spec(index))
        if self._compile is not None:
            runner.precompile(*self._compile)
        return runner

    def _other_runner(self, index: int) -> IsolatedRunner:
        """The runner of a GPU other than the first: its points wait for the builds the first
        worker compiles, as long as that compile may take."""
        runner = IsolatedRunner(self._spec(index))
        if self._compile is not None:
            runner.builds_compiled_elsewhere = self._compile[2]
        return runner

    @property
    def restarts(self) -> int:
        return sum(r.restarts for r in self.runners)

    @property
    def retried(self) -> list[dict[str, Any]]:
        return [entry for r in self.runners for entry in r.retried]

    def start(self) -> dict[str, Any]:
        """Start one worker per device; the environment record is the first device's, with
        every device listed under "devices". Where the devices are known before any worker
        is up (a list, or "all" counted without CUDA), every worker starts at once;
        otherwise the first one counts them, then the others start."""
        indices = self._indices_up_front()
        if indices is None:
            return self._start_after_the_first()
        self._share_host(len(indices))
        first = self._first_runner(indices[0])
        others = [self._other_runner(i) for i in indices[1:]]
        spawned = [runner.spawn() for runner in others]  # spawned here, in the main thread
        errors: list[BaseException] = []
        threads = self._starting(others, spawned, errors)
        try:
            environment = first.start()
        except BaseException as exc:  # raised below, once every worker is closed
            environment = {}
            errors.insert(0, exc)
        for thread in threads:
            thread.join()
        self.runners = [first, *others]
        return self._started(environment, errors)

    def _indices_up_front(self) -> list[int] | None:
        """The devices, where they can be counted before any worker is up (None: the first
        worker counts them); a device that does not exist is refused before any starts."""
        count = host_gpu_count(self.backend)
        if not count:  # none visible: the first worker says why, as it would alone
            return None
        indices = list(range(count)) if self.requested == "all" else list(self.requested)
        self._refuse_missing(indices, count)
        return indices

    def _share_host(self, workers: int) -> None:
        """Each worker's share of the host's cores for its host work (see WorkerSpec)."""
        if workers > 1:
            self._host_threads = max(1, usable_cpus() // workers)

    def _start_after_the_first(self) -> dict[str, Any]:
        """The first worker counts the GPUs (a backend of the user's, or no NVML), then the
        others start, in parallel."""
        first = self._first_runner(0 if self.requested == "all" else self.requested[0])
        environment = first.start()
        self.runners = [first]
        count = environment.get("device_count")
        if self.requested == "all" and not count:
            first.close()
            raise EnvironmentProblem(
                "cannot count this host's GPUs (no NVML): name them, e.g. --devices 0,1"
            )
        indices = list(range(count)) if self.requested == "all" else list(self.requested)
        if count is not None:
            self._refuse_missing(indices, count, started=first)  # before the others start
        self._share_host(len(indices))
        others = [self._other_runner(i) for i in indices[1:]]
        errors: list[BaseException] = []
        for thread in self._starting(others, [runner.spawn() for runner in others], errors):
            thread.join()
        self.runners += others
        return self._started(environment, errors)

    @staticmethod
    def _starting(
        runners: list[IsolatedRunner], spawned: list[Any], errors: list[BaseException]
    ) -> list[threading.Thread]:
        """Threads that wait for the spawned workers' start-up (CUDA initialisation) in
        parallel, each error kept in `errors`."""

        def start(runner: IsolatedRunner, worker: Any) -> None:
            try:
                runner.start(worker)
            except BaseException as exc:  # reported by the caller, in its thread
                errors.append(exc)

        threads = [
            threading.Thread(target=start, args=(r, w), daemon=True)
            for r, w in zip(runners, spawned, strict=True)
        ]
        for thread in threads:
            thread.start()
        return threads

    @staticmethod
    def _refuse_missing(
        indices: list[int], count: int, started: IsolatedRunner | None = None
    ) -> None:
        """A device index past the host's count is refused (the worker `started`, closed)."""
        missing = [i for i in indices if i >= count]
        if missing:
            if started is not None:
                started.close()
            raise EnvironmentProblem(
                f"device {missing[0]} does not exist (this machine has {count})"
            )

    def _started(self, environment: dict[str, Any], errors: list[BaseException]) -> dict[str, Any]:
        """The pool's environment record once every worker is up; the first error otherwise
        (every worker closed)."""
        if errors:
            self.close(graceful=False)
            raise errors[0]
        devices = [dict(r.device_record or {}) for r in self.runners]
        uuids = [d.get("uuid") for d in devices]
        if len(set(uuids)) != len(uuids):
            self.close(graceful=False)
            raise EnvironmentProblem(f"two device indices name the same GPU ({uuids})")
        environment = dict(environment)
        environment["devices"] = devices
        self.environment = environment
        return environment

    def precompile(
        self, plan: Plan, on_report: Callable[[dict[str, Any]], None], limit_s: float = 3600
    ) -> None:
        """One host, one compile cache: the first worker compiles for all of them, in the
        background, in the order the points are handed out (see the module's docstring)."""
        order = [point for point, _ in remaining_work(plan, ())[1]]

        def report(compiled: dict[str, Any]) -> None:
            on_report({**compiled, "devices": len(self.runners)})

        self._compile = (dataclasses.replace(plan, points=order), report, limit_s)
        if self.runners:  # asked after the start (a tuning run's next round)
            self.runners[0].precompile(*self._compile)
            for runner in self.runners[1:]:
                runner.builds_compiled_elsewhere = limit_s

    def close(self, graceful: bool = True) -> dict[str, Any]:
        self._stop.set()
        readings = {}
        for runner in self.runners:
            index = (runner.device_record or {}).get("index", runner.spec.device_index)
            readings[str(index)] = runner.close(graceful)
        return {"devices": readings}

    def run(self, plan: Plan, previous: Iterable[Result] = ()) -> list[Result]:
        done, todo = remaining_work(plan, previous)
        lock = threading.Lock()
        notify = Notifier(self.observers, plan, done)
        with lock:
            notify.started(sum(len(v) for _, v in todo))
        work = dispatch.for_plan(plan, todo)
        failures: list[BaseException] = []

        def emit(result: Result) -> None:
            with lock:
                if not self._stop.is_set():  # interrupted: the worker was killed, no result
                    notify.result(result)

        # A worker that a serve thread restarted dies with the thread (PR_SET_PDEATHSIG), so
        # no thread ends while the others still run: one with nothing left waits for them.
        all_done = threading.Barrier(max(1, len(self.runners)))

        def serve(worker: int, runner: IsolatedRunner) -> None:
            try:
                while not self._stop.is_set():
                    item = work.take(worker)
                    if item is None:
                        return
                    point, variants = item
                    began = time.perf_counter()
                    fresh = runner._run_point(plan, point, variants, emit)
                    work.done(worker, time.perf_counter() - began, point)
                    with lock:
                        if self._stop.is_set():
                            return
                        notify.point_done(point, variants, fresh)
            except BaseException as exc:  # a bug: reported in the main thread
                if not self._stop.is_set():
                    failures.append(exc)
                    self._stop.set()
            finally:
                with contextlib.suppress(threading.BrokenBarrierError):
                    all_done.wait()

        threads = [
            threading.Thread(
                target=serve, args=(i, r), daemon=True, name=f"gpu-{r.spec.device_index}"
            )
            for i, r in enumerate(self.runners)
        ]
        for thread in threads:
            thread.start()
        # Join with a timeout so that Ctrl-C (delivered to this thread) is handled at once.
        for thread in threads:
            while thread.is_alive():
                thread.join(0.2)
        if failures:
            raise failures[0]
        if self._compile is not None and self.runners:
            self.runners[0].wait_for_compile()
        return notify.results
