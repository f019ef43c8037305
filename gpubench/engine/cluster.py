"""Many hosts: points sent to the workers of a Dask cluster, one worker per GPU.

The client (this process) hands the points out as the device pool does, problem by problem
(gpubench.engine.dispatch): each Dask worker is a slot of the hand-out and keeps to its
problem while that has points, so a problem's inputs and references are made by as few workers
as the balance allows. Each point is a task pinned to its worker, loosely (a task whose worker
is gone runs on another), one task per worker at a time: Dask's work stealing moves a loosely
pinned task that waits behind another to an idle worker, which then makes the problem's data
for one point (seen on four H200: an idle worker took a queued 16384² point, 1.5 s where the
worker holding the problem takes 0.3 s). So a worker waits for the client's round trip between
two points. The client writes each point's results into the log as its task completes, and the
time the point took on its worker tells the hand-out what the problem's points cost.

On a Dask worker the point runs as it does on one host: in an isolated gpubench worker
process, so a kernel that breaks its CUDA context costs only that variant. A Dask worker that
dies costs the point it runs: the scheduler runs its task again on another worker (the sweep
notes it, as it notes the device pool's retries), and after
`distributed.scheduler.allowed-failures` deaths (set it to 1) the point's variants are
recorded `crashed`.

Each Dask worker compiles the sweep's builds itself (hosts do not share a compile cache), in
the background from the start, as one host's worker does; the slowest one's report counts.

Dask is optional (`pip install ".[cluster]"`) and imported only here.
"""

from __future__ import annotations

import queue
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from gpubench import install_hint
from gpubench.engine import dispatch
from gpubench.engine.pool import remaining_work
from gpubench.engine.runner import Notifier, Observer, Plan, PlanSettings
from gpubench.errors import ConfigError, EnvironmentProblem, quote
from gpubench.model.results import Result, Status

# Well under 30 s: a scheduler that does not answer is reported, not waited for.
CONNECT_TIMEOUT_S = 10


# -- on the Dask workers ----------------------------------------------------------------------
class _PointService:
    """One per Dask worker process and suite: a long-lived thread that owns the isolated
    gpubench worker (created from this thread, which never ends: the kernel kills a child
    when the thread that created it exits) and runs the points the tasks hand it."""

    _services: ClassVar[dict[tuple[str, str], _PointService]] = {}
    _lock = threading.Lock()

    def __init__(self, suite: str, backend: str) -> None:
        self.suite, self.backend = suite, backend
        self.requests: queue.Queue[tuple[Any, queue.Queue[Any]]] = queue.Queue()
        threading.Thread(target=self._serve, daemon=True, name="gpubench-points").start()

    @classmethod
    def get(cls, suite: str, backend: str) -> _PointService:
        import multiprocessing

        if multiprocessing.current_process().daemon:
            raise EnvironmentProblem(
                "this Dask worker runs as a daemon process, which may not start gpubench's "
                "isolated worker: start it with DASK_DISTRIBUTED__WORKER__DAEMON=False (or "
                "dask worker --no-nanny)"
            )
        with cls._lock:
            key = (suite, backend)
            if key not in cls._services:
                cls._services[key] = cls(suite, backend)
            return cls._services[key]

    def call(self, job: Any) -> Any:
        reply: queue.Queue[Any] = queue.Queue()
        self.requests.put((job, reply))
        succeeded, value = reply.get()
        if not succeeded:
            raise value
        return value

    def _serve(self) -> None:
        from gpubench.engine.worker import IsolatedRunner, WorkerSpec

        runner = IsolatedRunner(WorkerSpec(self.suite, 0, self.backend))
        while True:
            job, reply = self.requests.get()
            try:
                reply.put((True, job(runner)))
            except BaseException as exc:  # sent back to the task, raised there
                reply.put((False, exc))


def _host_record(runner: Any) -> dict[str, Any]:
    return {**(runner.device_record or {}), "host": socket.gethostname()}


def _remote_environment(suite: str, backend: str) -> dict[str, Any]:
    def job(runner: Any) -> dict[str, Any]:
        environment = runner.environment or runner.start()
        return {**environment, "device_record": _host_record(runner)}

    return _PointService.get(suite, backend).call(job)


def _remote_precompile(
    suite: str,
    backend: str,
    points: list[dict[str, Any]],
    limit_s: float,
    variants: tuple[str, ...] = (),
) -> None:
    """Start compiling the builds of these points in the background on this worker."""

    def job(runner: Any) -> None:
        if runner.environment is None:
            runner.start()
        runner.compile_points(points, lambda report: None, limit_s, variants)

    _PointService.get(suite, backend).call(job)


def _remote_compile_report(suite: str, backend: str) -> dict[str, Any]:
    """This worker's compile report, once its background compile is done."""

    def job(runner: Any) -> dict[str, Any]:
        runner.wait_for_compile()
        return runner.compile_report or {}

    return _PointService.get(suite, backend).call(job)


@dataclass
class RanPoint:
    """A point's results from a Dask worker, and the seconds it took there (not the client's
    wait, which counts the queueing too: the hand-out compares problems by it)."""

    results: list[Result]
    seconds: float


def _dask_worker() -> str | None:
    """The address of the Dask worker running this task (None outside a task)."""
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):  # ValueError: not in a Dask worker's task
        return None


def _remote_point(
    suite: str, backend: str, settings: PlanSettings, point: dict[str, Any], variants: list[str]
) -> RanPoint:
    """One point on this worker's GPU, isolated; its results, each naming the GPU and the Dask
    worker (as the environment's devices do), and the seconds it took."""
    worker = _dask_worker()  # here: the service's thread is not the task's

    def job(runner: Any) -> RanPoint:
        from gpubench.load import registry

        if runner.environment is None:
            runner.start()
        plan = settings.plan(registry.get(suite), [point])
        out: list[Result] = []
        began = time.perf_counter()
        runner._run_point(plan, point, list(variants), out.append)
        seconds = time.perf_counter() - began
        record = _host_record(runner)
        if worker is not None:
            record["worker"] = worker
        for result in out:
            result.device = record
        return RanPoint(out, seconds)

    return _PointService.get(suite, backend).call(job)


def _worker_deaths(dask_scheduler: Any, keys: list[Any]) -> dict[Any, int]:
    """On the scheduler: how many times a Dask worker died while it held each task (Dask's
    `suspicious` count, the one `allowed-failures` is compared with)."""
    tasks = dask_scheduler.tasks
    return {key: tasks[key].suspicious for key in keys if key in tasks and tasks[key].suspicious}


# -- on the client ------------------------------------------------------------------------------
def _address_problem(address: str) -> str | None:
    """Why Dask's parser, or the resolver after it, would refuse this scheduler address; None
    where it is well formed."""
    from distributed.comm import get_address_host_port

    try:
        host, port = get_address_host_port(address)
        host.encode("idna")  # a name the resolver takes: labels of at most 63 characters
    except ValueError as exc:  # UnicodeError (the host name) included
        return str(exc)
    return None if 0 < port < 65536 else f"port {port} is not between 1 and 65535"


class DaskRunner:
    """The IsolatedRunner interface over a Dask cluster's workers."""

    def __init__(
        self, address: str, suite: str, backend: str, observers: Iterable[Observer] = ()
    ) -> None:
        self.address, self.suite, self.backend = address, suite, backend
        self.observers = list(observers)
        self.environment: dict[str, Any] | None = None
        self.restarts = 0
        self.retried: list[dict[str, Any]] = []  # points the scheduler ran again after a death
        self.client: Any = None
        self._futures: list[Any] = []
        # The background compile asked for: (points, who hears the report, its limit, variants).
        self._compile: (
            tuple[list[dict[str, Any]], Callable[[dict[str, Any]], None], float, tuple[str, ...]]
            | None
        ) = None

    def start(self) -> dict[str, Any]:
        try:
            from distributed import Client
        except ImportError:
            raise EnvironmentProblem(
                "--scheduler needs Dask distributed: " + install_hint("cluster")
            ) from None
        problem = _address_problem(self.address)
        if problem:  # the user's to mend, not something that answered
            raise ConfigError(
                f"{quote(self.address)} is not a Dask scheduler address such as "
                f"tcp://HOST:8786 ({problem})",
                key="--scheduler",
            )
        try:
            self.client = Client(self.address, timeout=CONNECT_TIMEOUT_S)
        except Exception as exc:  # refused, timed out, or a server that is not Dask's
            message = " ".join(str(exc).split())[:200] or type(exc).__name__
            if isinstance(exc, MemoryError | ValueError | TypeError):
                # Dask reads a frame length from whatever answered: garbage from a server
                # that is not a scheduler reads as a length of exabytes, or does not parse.
                message = f"something answered there, but not as a Dask scheduler ({message})"
            raise EnvironmentProblem(
                f"cannot reach the Dask scheduler at {self.address}: {message}"
            ) from None
        workers = list(self.client.scheduler_info(n_workers=-1).get("workers", {}))
        if not workers:
            self.close()
            raise EnvironmentProblem(f"the Dask scheduler at {self.address} has no workers")
        try:
            environments = self.client.run(_remote_environment, self.suite, self.backend)
        except EnvironmentProblem:
            self.close()
            raise
        except Exception as exc:  # a worker that cannot start gpubench: one line
            self.close()
            raise EnvironmentProblem(f"a Dask worker could not start gpubench: {exc}") from None
        ordered = [environments[w] for w in sorted(environments)]
        environment = {k: v for k, v in ordered[0].items() if k != "device_record"}
        environment["devices"] = [
            {**e["device_record"], "worker": w} for w, e in sorted(environments.items())
        ]
        environment["scheduler"] = self.address
        self.environment = environment
        if self._compile is not None:
            self._start_compiles()
        return environment

    def precompile(
        self, plan: Plan, on_report: Callable[[dict[str, Any]], None], limit_s: float = 3600
    ) -> None:
        """Every worker compiles in the background (hosts do not share a compile cache), the
        biggest points first, as the hand-out takes them; `on_report` hears the slowest's
        report when the run ends."""
        _, todo = remaining_work(plan, ())
        self._compile = ([point for point, _ in todo], on_report, limit_s, tuple(plan.variants))
        if self.client is not None:
            self._start_compiles()

    def _start_compiles(self) -> None:
        assert self._compile is not None
        points, _, limit_s, variants = self._compile
        self.client.run(_remote_precompile, self.suite, self.backend, points, limit_s, variants)

    def _report_compiles(self) -> None:
        if self._compile is None:
            return
        reports = self.client.run(_remote_compile_report, self.suite, self.backend)
        report = max(reports.values(), key=lambda r: r.get("seconds", 0))
        self._compile[1]({**report, "devices": len(reports)})

    def close(self, graceful: bool = True) -> dict[str, Any]:
        if self.client is not None:
            for future in self._futures:
                future.cancel()
            self.client.close()
            self.client = None
        return {}

    def run(self, plan: Plan, previous: Iterable[Result] = ()) -> list[Result]:
        from distributed import as_completed

        done, todo = remaining_work(plan, previous)
        notify = Notifier(self.observers, plan, done)
        notify.started(sum(len(v) for _, v in todo))
        hand_out = _HandOut(
            self.client,
            (self.suite, self.backend, plan.settings),
            dispatch.for_plan(plan, todo),
            self._worker_addresses(),
        )
        self._futures = hand_out.futures  # every task submitted, for close to cancel
        finished = as_completed(hand_out.start())
        for future in finished:
            task = hand_out.tasks[future]
            try:
                ran: RanPoint = future.result()
            except Exception as exc:
                # The task's worker died (KilledWorker, after the retries the scheduler
                # allows) or the task failed: the point's variants are lost, nothing else.
                fresh = _crashed(plan, task.point, task.variants, exc)
                hand_out.work.lost(task.slot, task.point)
            else:
                hand_out.work.done(task.slot, ran.seconds, task.point)
                fresh = {r.variant: r for r in ran.results}
            following = hand_out.next(task.slot)  # before the log: the worker waits for it
            if following is not None:
                finished.add(following)
            for variant in task.variants:
                if variant in fresh:
                    notify.result(fresh[variant])
            notify.point_done(task.point, task.variants, fresh)
        self._record_retries(hand_out.tasks)
        self._report_compiles()
        return notify.results

    def _worker_addresses(self) -> list[str | None]:
        """The hand-out's slots: the Dask workers up now, by address (one slot for any worker
        where none is up: the scheduler waits for one)."""
        workers = self.client.scheduler_info(n_workers=-1).get("workers", {})
        return sorted(workers) or [None]

    def _record_retries(self, tasks: dict[Any, _Task]) -> None:
        """Points whose Dask worker died under them and that the scheduler then ran on another
        worker, in `retried` as the device pool lists its own. Asked once, at the end, while
        this client still holds every task (the scheduler forgets released ones)."""
        try:
            deaths = self.client.run_on_scheduler(_worker_deaths, keys=[f.key for f in tasks])
        except Exception:  # a scheduler gone by now: the results stand, the notes are lost
            return
        for future, task in tasks.items():
            if deaths.get(future.key) and future.status == "finished":
                reason = (
                    "the Dask worker running the point died; nothing of the point had been recorded"
                )
                self.retried += [
                    {"variant": v, "point": dict(task.point), "reason": reason}
                    for v in task.variants
                ]


def _crashed(
    plan: Plan, point: dict[str, Any], variants: list[str], exc: BaseException
) -> dict[str, Result]:
    """A lost point's variants, recorded crashed with why."""
    reason = f"the Dask worker running this point died ({type(exc).__name__}: {str(exc)[:300]})"
    return {
        v: Result(
            suite=plan.bench.name,
            variant=v,
            point=dict(point),
            status=Status.CRASHED,
            reason=reason,
            baseline=plan.baseline,
        )
        for v in variants
    }


@dataclass
class _Task:
    """A submitted point: the hand-out slot (Dask worker) it was given to, and its variants."""

    slot: int
    point: dict[str, Any]
    variants: list[str]


@dataclass
class _HandOut:
    """A run's points handed to the Dask workers problem by problem: one slot of the dispatch
    per worker (`addresses`, sorted), each with one task at a time pinned to it."""

    client: Any
    call: tuple[str, str, PlanSettings]  # suite, backend, settings: _remote_point's first
    work: dispatch.ProblemDispatch
    addresses: list[str | None]
    tasks: dict[Any, _Task] = field(default_factory=dict)
    futures: list[Any] = field(default_factory=list)

    def start(self) -> list[Any]:
        """The first tasks, one per worker in turn: each worker's first point is of the
        biggest problem nobody holds yet."""
        slots = range(len(self.addresses))
        return [future for slot in slots if (future := self.next(slot)) is not None]

    def next(self, slot: int) -> Any | None:
        """The task of this worker's next point, once its last one finished (None: the
        dispatch has nothing worth doing for it: it gets no more)."""
        item = self.work.take(slot)
        if item is None:
            return None
        point, variants = item
        address = self.addresses[slot]
        # Loose: a task whose worker died runs on another (the scheduler's retries count).
        where = {} if address is None else {"workers": [address], "allow_other_workers": True}
        future = self.client.submit(_remote_point, *self.call, point, variants, pure=False, **where)
        self.tasks[future] = _Task(slot, point, variants)
        self.futures.append(future)
        return future
