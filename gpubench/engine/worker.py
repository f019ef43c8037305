"""Points run in a worker process, so a broken kernel takes down only the worker.

An illegal address (and the other sticky CUDA errors) leaves a CUDA context unusable for the
rest of its process, and a kernel that never ends never returns control. The parent process
here never touches CUDA: it sends one point at a time to a worker (spawn start method:
forking after CUDA initialisation is not safe), watches the time, and when a worker crashes,
dies or overruns the time limit, records that variant as `crashed` or `timeout`, starts a
fresh worker and goes on with the rest of the point. Checks and timing both run in the worker.

Compiling overlaps measuring: asked to precompile, the worker compiles the sweep's builds in
background threads (gpubench.engine.kernels, at a lower CPU priority) while it runs points, each of
which waits only for its own build, and says "compiled" with the report when the last is done.
The worker leads its own process group, so that killing it (a crash, Ctrl-C) kills the
compiler processes it started too, by the group's id.

`gpubench sweep` starts its workers before it reads the sweep file (gpubench.engine.ahead):
such a worker opens its GPU, then waits for its spec; the first runner that asks for a worker
of that GPU takes it (`_Worker`) instead of spawning one.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpubench import backends
from gpubench.engine import kernels, opening, spawned
from gpubench.engine.devices import pin
from gpubench.engine.runner import Notifier, Observer, Plan, Runner
from gpubench.errors import EnvironmentProblem, GpubenchError
from gpubench.model.results import Result, Status, point_key

if TYPE_CHECKING:
    from gpubench.backends.base import Backend

# Starting a worker imports NumPy and PyCUDA and creates a CUDA context.
START_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class WorkerSpec:
    suite: str  # a registry name, or the path of a suite .py file
    device_index: int = 0
    # A backend name (gpubench.backends): "pycuda", or "package.module:Class" (the tests'
    # CPU stand-in is one); --backend or GPUBENCH_BACKEND chooses it.
    backend: str = backends.DEFAULT
    # The workers of one sweep (its replacements, a pool's GPUs) share their compile failures.
    compile_scope: str = field(default_factory=lambda: os.urandom(8).hex(), compare=False)
    # The host's CPU threads this worker's host work may use (None: all of them). A pool gives
    # each of its workers a share: four workers that each start a thread per core for their
    # BLAS references and random fills ran those 5 to 20 times slower than one worker alone.
    host_threads: int | None = None

    @classmethod
    def for_suite(cls, suite: str, device_index: int = 0, backend: str | None = None) -> WorkerSpec:
        return cls(suite, device_index, backends.selected(backend))


def _die_with_parent() -> None:
    """The worker must not outlive the parent (kill -9 of the parent would leave it measuring
    and holding the GPU): the kernel kills it when the parent dies (Linux), and a watchdog
    thread checks elsewhere."""
    parent = os.getppid()
    try:
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, daemon=True, name="parent-watchdog").start()


def _load_pinned(spec: WorkerSpec) -> Any:
    """The backend on the spec's device. For the built-in backends the device is chosen before
    CUDA starts: this process sees only that GPU (CUDA_VISIBLE_DEVICES), so libraries that
    pick "the current device" themselves (CuPy, cuBLAS) cannot land on another one."""
    if spec.backend not in backends.BUILT_IN:
        return backends.load(spec.device_index, spec.backend)
    try:
        pin(spec.device_index)  # where opening.begin pinned it already, nothing
    except ValueError as exc:
        raise EnvironmentProblem(str(exc)) from None
    return backends.load(0, spec.backend)


def _environment(backend: Backend, spec: WorkerSpec, host_count: int | None) -> dict[str, Any]:
    environment = backend.environment().to_dict()
    environment["device_index"] = spec.device_index
    if spec.backend in backends.BUILT_IN:
        environment["device_count"] = host_count
    return environment


def worker_main(conn: Any, spec: WorkerSpec) -> None:
    """The worker's loop: one message in, progress messages out, until told to stop."""
    send = _set_up(conn, spec.host_threads)
    opening.begin(spec.device_index, spec.backend)  # the count before the device is pinned
    try:
        backend = _load_pinned(spec)
    except GpubenchError as exc:
        send(("error", str(exc), exc.exit_code))
        return
    finally:
        opening.finish()
    _serve(conn, send, spec, backend, opening.host_count())


def worker_main_ahead(conn: Any, key: spawned.AheadKey) -> None:
    """A worker started before the sweep was read (gpubench.engine.ahead): its GPU opened,
    then it waits for its spec (the suite, the compile scope) and serves as any worker; one
    whose GPU would not open says why once it has its spec, as worker_main would."""
    send = _set_up(conn, key.host_threads)
    backend = backends.selected(key.backend_choice)  # as the parent resolves it
    opened: Backend | GpubenchError
    try:
        opened = _load_pinned(WorkerSpec("", key.device_index, backend))
    except GpubenchError as exc:
        opened = exc
    finally:
        opening.finish()
    host_count = opening.host_count()  # begun by ahead._main, before the device was pinned
    from gpubench.engine import checking

    if not isinstance(opened, GpubenchError):
        checking.warm_up_in_background()  # while it waits
    try:
        message = conn.recv()
    except EOFError:
        return
    if message[0] != "suite":  # stopped before it was needed
        return
    if isinstance(opened, GpubenchError):
        send(("error", str(opened), opened.exit_code))
        return
    _serve(conn, send, message[1], opened, host_count, warming=False)


def _set_up(conn: Any, host_threads: int | None) -> Callable[[Any], None]:
    """The worker process's own set-up: signals, its process group, the parent watch, its
    share of the host's threads; the sender its threads share."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with contextlib.suppress(OSError):  # its own group: killed with the compilers it starts
        os.setpgid(0, 0)
    _die_with_parent()
    if host_threads:
        from gpubench.engine import randoms

        randoms.limit_threads(host_threads)
    return _locked(conn.send)  # the background compile reports from its own thread


def _serve(
    conn: Any,
    send: Callable[[Any], None],
    spec: WorkerSpec,
    backend: Backend,
    host_count: int | None,
    warming: bool = True,
) -> None:
    """Say ready (or why not), then run what the parent asks until it says stop."""
    from gpubench.load import registry

    try:
        bench = registry.get(spec.suite)
        send(("ready", _environment(backend, spec, host_count)))
    except GpubenchError as exc:
        send(("error", str(exc), exc.exit_code))
        return
    runner = Runner(backend)
    runner.modules.scope = spec.compile_scope
    if warming:
        from gpubench.engine import checking

        checking.warm_up_in_background()
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message[0] == "stop":
            send(("readings", backend.readings()))
            return
        try:
            _handle(message, runner, bench, send, conn)
        except Exception:  # a bug in a suite or in gpubench: report it, then give up
            send(("bug", traceback.format_exc(limit=8)))
            return


def _handle(
    message: Any, runner: Runner, bench: Any, send: Callable[[Any], None], conn: Any
) -> None:
    """One message from the parent: compile in the background, or run a point."""
    kind = message[0]
    if kind == "precompile":
        _compile_in_background(runner.modules, bench, message[1], message[2], send)
    elif kind == "point":
        _, point, variants, settings = message
        plan = settings.plan(bench, [point])
        results = runner.run_point(
            plan,
            point,
            variants,
            on_start=lambda v: send(("started", v)),
            on_result=lambda r: send(("result", r)),
            on_built=lambda: send(("built",)),
        )
        if results and results[-1].status is Status.CRASHED:
            # The context is dead: the parent starts a fresh worker. Leave without the
            # atexit clean-up, whose every CUDA call would fail and print a warning.
            conn.close()
            os._exit(0)
        send(("point_done",))


def _locked(send: Callable[[Any], None]) -> Callable[[Any], None]:
    lock = threading.Lock()

    def locked(message: Any) -> None:
        with lock:
            send(message)

    return locked


def _compile_in_background(
    modules: kernels.CompileCache,
    bench: Any,
    points: list[Any],
    variants: tuple[str, ...],
    send: Callable[[Any], None],
) -> None:
    """Compile the builds of these points, in their order, on threads of this worker while
    it measures; "compiled" with the report at the end ("compile_failed": why it could not)."""

    def compile_all() -> None:
        try:
            report = modules.precompile(
                bench, points, niceness=kernels.BACKGROUND_NICENESS, variants=variants
            )
            send(("compiled", report.to_dict()))
        except Exception:  # a cache that cannot be written, a bug: the report says so
            send(("compile_failed", traceback.format_exc(limit=8)))

    threading.Thread(target=compile_all, daemon=True, name="gpubench-background-compile").start()


class _WorkerGone(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# What BLAS and OpenMP read, once, when NumPy loads in the worker: set for its spawn.
class _Worker:
    def __init__(self, spec: WorkerSpec) -> None:
        started = spawned.take(spec.device_index, spec.backend, spec.host_threads)
        if started is not None:  # started before the sweep was read: given its spec now
            self.process, self.conn = started
            with contextlib.suppress(OSError):  # gone: receive() says how it died
                self.conn.send(("suite", spec))
            return
        context = multiprocessing.get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=worker_main, args=(child, spec), daemon=True)
        with spawned.thread_share_in_environment(spec.host_threads), spawned.interrupts_ignored():
            self.process.start()
        child.close()

    def receive(self, timeout: float) -> Any:
        """The next message; None after `timeout` seconds; _WorkerGone if the worker died."""
        if not self.conn.poll(timeout) and self.process.is_alive():
            return None
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            self.process.join(timeout=5)
            code = self.process.exitcode
            why = (
                f"killed by signal {-code}"
                if code is not None and code < 0
                else f"exit code {code}"
            )
            raise _WorkerGone(f"the worker process died ({why})") from None

    def kill(self, wait: bool = True) -> None:
        """Kill the worker and the compiler processes it started (spawned.stop)."""
        spawned.stop(self.process, self.conn, wait)


@dataclass
class _CompileRequest:
    """A sweep's background compile: its points in the order they run, who hears the report,
    how long the report may be waited for once the points are done, and the report."""

    points: list[dict[str, Any]]
    on_report: Callable[[dict[str, Any]], None]
    limit_s: float
    variants: tuple[str, ...] = ()  # the sweep's: a build holds the kernels they launch
    report: dict[str, Any] | None = None

    @property
    def message(self) -> tuple[str, list[dict[str, Any]], tuple[str, ...]]:
        return ("precompile", self.points, self.variants)


class IsolatedRunner:
    """Runs a plan point by point in worker processes, replacing any worker that breaks."""

    def __init__(self, spec: WorkerSpec, observers: Iterable[Observer] = ()) -> None:
        self.spec = spec
        self.observers = list(observers)
        self.environment: dict[str, Any] | None = None
        self.restarts = 0
        # Variants whose worker died under them and were run once more (point, reason).
        self.retried: list[dict[str, Any]] = []
        self._closed = False  # closed (after Ctrl-C, the pool kills its workers): no retry
        self._worker: _Worker | None = None
        self.device_record: dict[str, Any] | None = None
        self._compile: _CompileRequest | None = None
        # In a pool: how long its points may wait for builds another worker compiles.
        self.builds_compiled_elsewhere: float | None = None

    # -- worker lifecycle -------------------------------------------------------------------
    def spawn(self) -> _Worker:
        """Start the worker process without waiting for it. Processes are spawned from the
        main thread: the kernel kills a worker when the *thread* that created it ends
        (PR_SET_PDEATHSIG), so a helper thread must never create one that should live on."""
        return _Worker(self.spec)

    def start(self, worker: _Worker | None = None) -> dict[str, Any]:
        """Start a worker (or wait for one spawned earlier) and return its environment
        record (raises EnvironmentProblem)."""
        self._closed = False
        worker = worker or _Worker(self.spec)
        try:
            message = self._ready(worker)
        except BaseException:  # Ctrl-C while it starts too: no worker outlives its start
            worker.kill()
            raise
        if self.environment is None:
            self.environment = message[1]
            device = message[1].get("device") or {}
            self.device_record = {
                "index": message[1].get("device_index", self.spec.device_index),
                "uuid": message[1].get("gpu_uuid"),
                "name": device.get("name"),
            }
        else:
            self.restarts += 1
        self._worker = worker
        if self._compile is not None and self._compile.report is None:
            # A worker that died compiling leaves its builds on disk: the next goes on.
            worker.conn.send(self._compile.message)
        return message[1]

    @staticmethod
    def _ready(worker: _Worker) -> Any:
        """The worker's "ready" message (raises EnvironmentProblem where it says otherwise,
        dies or does not answer in time)."""
        try:
            message = worker.receive(START_TIMEOUT_S)
        except _WorkerGone as gone:
            raise EnvironmentProblem(
                f"the benchmark worker could not start: {gone.reason}"
            ) from None
        if message is None:
            raise EnvironmentProblem(
                f"the benchmark worker did not start within {START_TIMEOUT_S:.0f} s"
            )
        if message[0] == "error":
            error = EnvironmentProblem(message[1])
            error.exit_code = message[2]
            raise error
        if message[0] != "ready":
            raise EnvironmentProblem(f"the benchmark worker could not start: it said {message!r}")
        return message

    def _ensure_worker(self) -> _Worker:
        if self._worker is None or not self._worker.process.is_alive():
            self.start()
        assert self._worker is not None
        return self._worker

    def _discard_worker(self, wait: bool = True) -> None:
        if self._worker is not None:
            self._worker.kill(wait)
            self._worker = None

    def close(self, graceful: bool = True) -> dict[str, Any]:
        """Stop the worker; returns its last clock/temperature/power readings (or {}).
        Not graceful: kill it at once (after Ctrl-C it may be stuck in a kernel). Its exit
        is not waited for here: spawned.wait_for_stopped, once the results are shown."""
        readings: dict[str, Any] = {}
        self._closed = True
        if graceful and self._worker is not None and self._worker.process.is_alive():
            try:
                self._worker.conn.send(("stop",))
                message = self._worker.receive(30)
                while message and message[0] in ("compiled", "compile_failed"):
                    message = self._worker.receive(30)
                if message and message[0] == "readings":
                    readings = message[1]
            except (_WorkerGone, OSError):
                pass
        self._discard_worker(wait=False)
        return readings

    # -- work -------------------------------------------------------------------------------
    def precompile(
        self,
        plan: Plan,
        on_report: Callable[[dict[str, Any]], None],
        limit_s: float = 3600,
    ) -> None:
        """Compile the plan's builds in the background, in the order its points run, from the
        moment the worker is up (now, or when it starts); `on_report(report)` once the last is
        done. The points do not wait for it: each waits for its own build."""
        self.compile_points(list(plan.points), on_report, limit_s, tuple(plan.variants))

    def compile_points(
        self,
        points: list[dict[str, Any]],
        on_report: Callable[[dict[str, Any]], None],
        limit_s: float = 3600,
        variants: tuple[str, ...] = (),
    ) -> None:
        """precompile, for these points in this order (the builds that run `variants`)."""
        self._compile = _CompileRequest(points, on_report, limit_s, variants)
        if self._worker is not None and self._worker.process.is_alive():
            self._worker.conn.send(self._compile.message)

    @property
    def compile_report(self) -> dict[str, Any] | None:
        """The background compile's report, once it is in."""
        return self._compile.report if self._compile else None

    def _compile_message(self, message: Any) -> bool:
        """Whether the message was the background compile's: its report, or why it stopped
        (the report's `error`). A stopped background compile does not stop the sweep, which
        may be nearly done: each point still compiles its own build (or records why it
        cannot) before it runs."""
        if message[0] not in ("compiled", "compile_failed") or self._compile is None:
            return False
        report = message[1] if message[0] == "compiled" else {"error": str(message[1])}
        self._compile.report = report
        self._compile.on_report(report)
        return True

    def wait_for_compile(self) -> None:
        """Wait for the background compile's report (when the points are done, it is due:
        they needed every build), at most its limit; a worker that dies meanwhile is replaced
        once and compiles the rest."""
        request = self._compile
        for _ in range(2):
            if request is None or request.report is not None or self._closed:
                return
            worker = self._ensure_worker()
            try:
                message = worker.receive(request.limit_s)
            except _WorkerGone:
                self._discard_worker()
                continue
            if message is None or not self._compile_message(message):
                self._discard_worker()
                raise EnvironmentProblem(f"compiling the sweep's kernels failed: {message!r}")
        if request is not None and request.report is None and not self._closed:
            raise EnvironmentProblem("compiling the sweep's kernels failed: its worker died twice")

    def run(self, plan: Plan, previous: Iterable[Result] = ()) -> list[Result]:
        done = {(point_key(r.point), r.variant): r for r in previous}
        notify = Notifier(self.observers, plan, done)
        notify.started(
            sum((point_key(p), v) not in done for p in plan.points for v in plan.variants)
        )
        for point in plan.points:
            key = point_key(point)
            remaining = [v for v in plan.variants if (key, v) not in done]
            if remaining:
                # Each result reaches the log the moment it arrives, not when its point ends.
                fresh = self._run_point(plan, point, remaining, notify.result)
                notify.point_done(point, remaining, fresh)
        self.wait_for_compile()
        return notify.results

    def _build_wait_s(self) -> float | None:
        """How long a point may wait for its build: until a background compile (its own
        worker's, or, in a pool, the first worker's) may be done; None where none runs."""
        return self._compile.limit_s if self._compile else self.builds_compiled_elsewhere

    def _follow(
        self,
        worker: _Worker,
        limit: float,
        remaining: list[str],
        fresh: dict[str, Result],
        emit: Callable[[Result], None],
        lost: Callable[..., None],
    ) -> None:
        """The worker's messages about one point, until it is done or the worker is gone
        (crashed, killed at the time limit, or broken by a bug: the variant it was on is
        recorded and the worker replaced)."""
        current: str | None = None
        compile_limit = self._build_wait_s()
        built = compile_limit is None
        while True:
            wait = limit if built else max(limit, compile_limit or 0)
            try:
                message = worker.receive(wait)
            except _WorkerGone as gone:  # killed, or died under the variant: run it once more
                lost(current or remaining[0], Status.CRASHED, gone.reason, retry=True)
                self._discard_worker()
                return
            if message is None:
                lost(
                    current or remaining[0],
                    Status.TIMEOUT,
                    f"no result within the {limit:g} s time limit (timing.time_limit_s): "
                    "the worker was killed"
                    if built
                    else f"its build was not ready within {wait:g} s: the worker was killed",
                )
                self._discard_worker()
                return
            kind = message[0]
            if self._compile_message(message):
                continue
            if kind == "built":
                built = True
            elif kind == "started":
                current = message[1]
            elif kind == "result":
                result: Result = message[1]
                fresh[result.variant] = result
                remaining.remove(result.variant)
                emit(result)
                current = None
                if result.status is Status.CRASHED:
                    self._discard_worker()  # it exits by itself; make sure of it
                    return
            elif kind == "bug":
                lost(
                    current or remaining[0],
                    Status.CRASHED,
                    f"internal error in the worker:\n{message[1]}",
                )
                self._discard_worker()
                return
            elif kind == "point_done":
                return

    def _run_point(
        self,
        plan: Plan,
        point: dict[str, Any],
        variants: list[str],
        emit: Callable[[Result], None],
    ) -> dict[str, Result]:
        fresh: dict[str, Result] = {}
        remaining = list(variants)
        limit = plan.policy.time_limit_s
        stamp = emit

        def emit(result: Result) -> None:  # every result says which GPU measured it
            result.device = self.device_record
            stamp(result)

        def lost(variant: str, status: Status, reason: str, retry: bool = False) -> None:
            """The variant's worker is gone. A worker that died (a kill, a crash of the
            process) costs the variant one more run on a fresh worker, as a Dask task gets;
            dying again records it. Nothing of the lost run was recorded: no result is
            measured twice."""
            if retry and not self._closed and variant not in retried:
                retried.add(variant)
                self.retried.append({"variant": variant, "point": dict(point), "reason": reason})
                return  # still in `remaining`: the next worker runs it first
            if variant in retried:
                reason = f"{reason} (its worker died twice: run once more, then recorded)"
            fresh[variant] = Result(
                suite=plan.bench.name,
                variant=variant,
                point=dict(point),
                status=status,
                reason=reason,
                baseline=plan.baseline,
            )
            remaining.remove(variant)
            emit(fresh[variant])

        retried: set[str] = set()

        while remaining and not self._closed:
            worker = self._ensure_worker()
            worker.conn.send(("point", point, list(remaining), plan.settings))
            self._follow(worker, limit, remaining, fresh, emit, lost)
        return fresh
