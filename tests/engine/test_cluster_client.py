"""The cluster runner's start on the client, with a stand-in for Dask's Client: every way the
connection or the workers fail is one line, and the environment it builds is exact. Runs
where Dask is not installed (tests/engine/test_cluster.py runs a real local cluster where it is)."""

from __future__ import annotations

import socket
import sys
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import ClassVar

import pytest

from gpubench.engine import cluster
from gpubench.engine.runner import Plan, PlanSettings
from gpubench.errors import EnvironmentProblem
from gpubench.load import registry
from gpubench.model.results import Result, Status
from gpubench.model.timing import TimingPolicy
from tests.fakes import RecordingObserver

ADDRESS = "tcp://h:8786"
SCALE = str(Path(__file__).resolve().parents[1] / "suites" / "scale.py")


class FakeClient:
    made: ClassVar[list[FakeClient]] = []
    fail: ClassVar[BaseException | None] = None
    workers: ClassVar[dict] = {}
    environments: ClassVar[dict | BaseException] = {}

    def __init__(self, address, timeout=None):
        if FakeClient.fail is not None:
            raise FakeClient.fail
        self.address, self.timeout, self.closed = address, timeout, False
        self.ran, self.submitted, self.reports, self.outcomes = [], [], {}, {}
        FakeClient.made.append(self)

    def scheduler_info(self, n_workers=None):
        assert n_workers == -1
        return {} if FakeClient.workers is None else {"workers": FakeClient.workers}

    def run(self, function, *args):
        self.ran.append((function, args))
        if function is cluster._remote_precompile:
            return {worker: None for worker in self.reports}
        if function is cluster._remote_compile_report:
            return self.reports
        assert function is cluster._remote_environment and args[1] == "fake"
        if isinstance(FakeClient.environments, BaseException):
            raise FakeClient.environments
        return FakeClient.environments

    def submit(self, function, *args, **options):
        self.submitted.append((function, *args, options))
        point = args[3]
        outcome = self.outcomes(point) if callable(self.outcomes) else self.outcomes[point["n"]]
        return FakeFuture(outcome)

    def close(self):
        self.closed = True


class FakeAsCompleted:
    """Dask's as_completed over stand-in futures: each completes in the order submitted, those
    added while it is iterated included."""

    def __init__(self, futures):
        self.waiting = list(futures)

    def add(self, future):
        self.waiting.append(future)

    def __iter__(self):
        while self.waiting:
            yield self.waiting.pop(0)


@pytest.fixture()
def dask(monkeypatch):
    FakeClient.made, FakeClient.fail, FakeClient.workers = [], None, {"w1": {}, "w0": {}}
    FakeClient.environments = {  # the first worker's (by name) is the sweep's environment
        "w1": {"gpubench_version": "y", "device_record": {"name": "B", "uuid": "u1"}},
        "w0": {"gpubench_version": "x", "device_record": {"name": "A", "uuid": "u0"}},
    }  # fmt: skip
    monkeypatch.setitem(
        sys.modules, "distributed", SimpleNamespace(Client=FakeClient, as_completed=FakeAsCompleted)
    )
    # Dask's address parser is Dask's (test_cluster.py checks it against bad addresses).
    monkeypatch.setattr(cluster, "_address_problem", {ADDRESS: None}.__getitem__)
    return FakeClient


def start():
    return cluster.DaskRunner(ADDRESS, "s", "fake").start()


def test_the_environment_names_each_worker_s_gpu_in_order(dask):
    runner = cluster.DaskRunner(ADDRESS, "s", "fake")
    assert runner.environment is None
    assert runner.start() == runner.environment == {
        "gpubench_version": "x", "scheduler": ADDRESS,
        "devices": [{"name": "A", "uuid": "u0", "worker": "w0"},
                    {"name": "B", "uuid": "u1", "worker": "w1"}],
    }  # fmt: skip
    (client,) = dask.made
    assert (client.address, client.timeout, client.closed) == (ADDRESS, cluster.CONNECT_TIMEOUT_S,
                                                               False)  # fmt: skip
    assert client.ran == [(cluster._remote_environment, ("s", "fake"))]  # this suite's workers
    runner = cluster.DaskRunner(ADDRESS, "s", "fake", observers=(1, 2))
    assert (runner.observers, runner.restarts, runner.retried, runner.client) == ([1, 2], 0, [],
                                                                                  None)  # fmt: skip


@pytest.mark.parametrize(("failure", "message"), [
    (OSError("Timed out trying\n  to connect"), "Timed out trying to connect"),
    (OSError(""), "OSError"),
    (ValueError("bad frame"), "something answered there, but not as a Dask scheduler (bad frame)"),
    (MemoryError(), "something answered there, but not as a Dask scheduler (MemoryError)"),
    (TypeError("x" * 300), "something answered there, but not as a Dask scheduler ("
     + "x" * 200 + ")"),
])  # fmt: skip
def test_each_failure_to_connect_is_one_line(dask, failure, message):
    dask.fail = failure
    with pytest.raises(EnvironmentProblem) as info:
        start()
    assert str(info.value) == f"cannot reach the Dask scheduler at {ADDRESS}: {message}"


def test_a_scheduler_without_workers_or_with_broken_ones_is_one_line(dask):
    for workers in ({}, None):  # None: the scheduler's answer has no "workers" at all
        dask.workers = workers
        with pytest.raises(EnvironmentProblem) as info:
            start()
        assert str(info.value) == f"the Dask scheduler at {ADDRESS} has no workers"
        assert dask.made[-1].closed
    dask.workers = {"w0": {}}
    dask.environments = RuntimeError("no module named gpubench")
    with pytest.raises(EnvironmentProblem) as info:
        start()
    assert str(info.value) == "a Dask worker could not start gpubench: no module named gpubench"
    assert dask.made[-1].closed
    dask.environments = EnvironmentProblem("no GPU on w0")
    with pytest.raises(EnvironmentProblem) as info:
        start()
    assert str(info.value) == "no GPU on w0" and dask.made[-1].closed


def test_without_dask_the_scheduler_option_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(EnvironmentProblem) as info:
        start()
    assert (
        str(info.value)
        == "--scheduler needs Dask distributed: pip install 'gpubench-studies[cluster]'"
    )


# -- on a Dask worker: the point service, with a stand-in for gpubench's isolated worker ----
class FakeIsolated:
    made: ClassVar[list[FakeIsolated]] = []

    def __init__(self, spec):
        self.spec, self.environment, self.calls = spec, None, []
        self.device_record = {"name": "G", "uuid": "u"}
        FakeIsolated.made.append(self)

    def start(self):
        self.calls.append("start")
        self.environment = {"gpubench_version": "x"}
        return self.environment

    def compile_points(self, points, on_report, limit_s, variants=()):
        assert self.environment is not None, "precompiled before start"
        if points == "boom":
            raise RuntimeError("boom")
        self.calls.append(("precompile", points, limit_s, *([variants] if variants else [])))

    def wait_for_compile(self):
        self.calls.append("wait for compile")

    compile_report: ClassVar[dict] = {"seconds": 1.5}

    def _run_point(self, plan, point, variants, emit):
        assert self.environment is not None, "ran before start"
        self.calls.append(("point", plan.bench.name, plan.points, plan.variants, variants))
        for variant in variants:
            emit(Result(suite=plan.bench.name, variant=variant, point=point, status=Status.OK))


@pytest.fixture()
def service(monkeypatch):
    from gpubench.engine import worker

    FakeIsolated.made = []
    monkeypatch.setattr(cluster._PointService, "_services", {})
    monkeypatch.setattr(worker, "IsolatedRunner", FakeIsolated)
    return FakeIsolated


def point_threads():
    return [t for t in threading.enumerate() if t.name == "gpubench-points"]


def test_a_dask_worker_runs_its_points_in_one_isolated_worker_per_suite(service):
    before = len(point_threads())
    host = {"name": "G", "uuid": "u", "host": socket.gethostname()}
    assert cluster._remote_environment("s", "fake") == {"gpubench_version": "x",
                                                         "device_record": host}  # fmt: skip
    assert cluster._remote_environment("s", "fake")["gpubench_version"] == "x"
    assert cluster._remote_precompile("s", "fake", [{"n": 1}], 12.5) is None  # in the background
    assert cluster._remote_compile_report("s", "fake") == {"seconds": 1.5}
    (runner,) = service.made
    assert (runner.spec.suite, runner.spec.device_index, runner.spec.backend) == ("s", 0, "fake")
    assert runner.calls == ["start", ("precompile", [{"n": 1}], 12.5), "wait for compile"]
    # One long-lived daemon thread owns it: the Dask worker can still exit.
    threads = point_threads()
    assert len(threads) == before + 1 and all(t.daemon for t in threads)
    # Another backend is another service, and a precompile first starts its worker.
    assert cluster._remote_precompile("s", "other", [], 3.0) is None
    assert service.made[1].spec.backend == "other"
    assert service.made[1].calls == ["start", ("precompile", [], 3.0)]


def test_a_job_s_exception_is_raised_in_the_task_and_the_service_goes_on(service):
    with pytest.raises(RuntimeError, match=r"^boom$"):
        cluster._remote_precompile("s", "fake", "boom", 1.0)
    assert cluster._remote_precompile("s", "fake", [], 1.0) is None


def test_a_point_runs_on_the_worker_and_each_result_names_its_gpu_and_host(service):
    bench = registry.get(SCALE)
    settings = PlanSettings(("good", "fast"), "good", TimingPolicy(min_samples=1))
    point = {**bench.defaults(), "n": 3}
    ran = cluster._remote_point(SCALE, "fake", settings, point, ["fast"])
    (runner,) = service.made
    assert runner.calls == ["start", ("point", bench.name, [point], ("good", "fast"), ["fast"])]
    # Outside a Dask worker's task no worker is named; the time is the point's on the worker.
    assert 0 < ran.seconds < 5
    assert [(r.variant, r.point, r.device) for r in ran.results] == [
        ("fast", point, {"name": "G", "uuid": "u", "host": socket.gethostname()})
    ]
    assert runner.spec.backend == "fake"


# -- on the client: precompile, close and run, with a stand-in for Dask's client ------------
class FakeFuture:
    def __init__(self, outcome):
        self.outcome, self.cancelled = outcome, False

    def result(self):
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome

    def cancel(self):
        self.cancelled = True


def test_precompile_runs_on_every_worker_and_reports_the_slowest(dask):
    runner = cluster.DaskRunner(ADDRESS, "s", "fake")
    runner.start()
    client = dask.made[-1]
    client.reports = {"w0": {"seconds": 0.5, "compiled": 1}, "w1": {"seconds": 2.5, "compiled": 2},
                      "w2": {"compiled": 3}}  # fmt: skip
    bench = registry.get(SCALE)
    points = [{**bench.defaults(), "n": n} for n in (1, 3)]
    plan = Plan(bench, points, ("good",), "good", TimingPolicy(min_samples=1))
    heard = []
    runner.precompile(plan, heard.append, 60)  # started on every worker, in submission order
    assert client.ran[-1] == (
        cluster._remote_precompile,
        ("s", "fake", points[::-1], 60, ("good",)),
    )
    client.outcomes = {n: cluster.RanPoint([], 0.1) for n in (1, 3)}
    runner.run(plan)
    assert client.ran[-1] == (cluster._remote_compile_report, ("s", "fake"))
    assert heard == [{"seconds": 2.5, "compiled": 2, "devices": 3}]  # the slowest, at the end


def test_close_cancels_what_is_in_flight_once(dask):
    runner = cluster.DaskRunner(ADDRESS, "s", "fake")
    runner.start()
    client = dask.made[-1]
    runner._futures = [FakeFuture(None), FakeFuture(None)]
    assert runner.close() == {} and client.closed and runner.client is None
    assert all(f.cancelled for f in runner._futures)
    assert runner.close(graceful=False) == {}


def test_a_run_submits_each_point_and_records_a_lost_one_as_crashed(dask):
    bench = registry.get(SCALE)
    points = [{**bench.defaults(), "n": n} for n in (1, 2, 3)]
    plan = Plan(bench, points, ("good", "fast"), "good", TimingPolicy(min_samples=1))

    def ok(point, variants, median):
        return [Result(suite=bench.name, variant=v, point=point, status=Status.OK,
                       summary={"median_ms": median[v]}) for v in variants]  # fmt: skip

    # Point 1 was logged before (resumed) for `good` only; point 2's task dies.
    previous = ok(points[0], ["good"], {"good": 4.0})
    outcomes = {
        1: cluster.RanPoint(ok(points[0], ["fast"], {"fast": 1.0}), 0.5),
        2: RuntimeError("x" * 400),
        3: cluster.RanPoint(ok(points[2], ["good", "fast"], {"good": 3.0, "fast": 6.0}), 0.5),
    }
    recorder = RecordingObserver("n")
    runner = cluster.DaskRunner(ADDRESS, SCALE, "fake", observers=[recorder])
    runner.start()
    client = dask.made[-1]
    client.outcomes = outcomes
    found = runner.run(plan, previous)
    # Each point a problem of its own: the biggest to w0, the next to w1, the last to w0 (two
    # tasks per worker at once), each pinned loosely to its worker.
    assert [(kind, args) for kind, *args in client.submitted] == [
        (
            cluster._remote_point,
            [
                SCALE,
                "fake",
                plan.settings,
                p,
                v,
                {"pure": False, "workers": [w], "allow_other_workers": True},
            ],
        )
        for p, v, w in (
            (points[2], ["good", "fast"], "w0"),
            (points[1], ["good", "fast"], "w1"),
            (points[0], ["fast"], "w0"),
        )
    ]
    assert recorder.events[0] == ("started", 5)
    assert recorder.events[1:] == [  # the biggest point first
        ("finished", 3, "good"), ("finished", 3, "fast"), ("point", [(3, "good"), (3, "fast")]),
        ("finished", 2, "good"), ("finished", 2, "fast"), ("point", [(2, "good"), (2, "fast")]),
        ("finished", 1, "fast"), ("point", [(1, "fast")]),
    ]  # fmt: skip
    assert [(r.point["n"], r.variant, r.status) for r in found] == [
        (3, "good", Status.OK), (3, "fast", Status.OK), (2, "good", Status.CRASHED),
        (2, "fast", Status.CRASHED), (1, "fast", Status.OK)]  # fmt: skip
    lost = found[2]
    assert (lost.suite, lost.point, lost.baseline) == (bench.name, points[1], "good")
    assert lost.reason == ("the Dask worker running this point died (RuntimeError: "
                           + "x" * 300 + ")")  # fmt: skip
    # Speedups against the baseline, the resumed one included.
    assert found[1].metrics["speedup"] == 0.5 and found[4].metrics["speedup"] == 4.0


def test_a_run_keeps_each_worker_to_its_problem_one_task_at_a_time(dask, monkeypatch):
    """Two problems (n) of three configurations (block) over two workers: each worker gets one
    task, then its next each time that finishes and before that point's results are written,
    all of its own problem and pinned to it (never one queued behind another: Dask's work
    stealing would move it to an idle worker); once its problem is handed out it gets no
    more. The hand-out hears the seconds each point took on its worker."""
    from gpubench.engine import dispatch

    tunable = str(Path(__file__).resolve().parents[1] / "suites" / "tunable.py")
    bench = registry.get(tunable)
    blocks = {1000: (256, 512, 1024), 3000: (32, 64, 128)}  # a block names its point here
    points = [{**bench.defaults(), "n": n, "block": b} for n in blocks for b in blocks[n]]
    plan = Plan(bench, points, ("scale",), "scale", TimingPolicy(min_samples=1))
    heard = []
    real_done = dispatch.ProblemDispatch.done

    def done(self, worker, seconds, point):
        heard.append((worker, seconds, point["block"]))
        real_done(self, worker, seconds, point)

    monkeypatch.setattr(dispatch.ProblemDispatch, "done", done)
    recorder = RecordingObserver("block")
    runner = cluster.DaskRunner(ADDRESS, tunable, "fake", observers=[recorder])
    runner.start()
    client = dask.made[-1]
    client.outcomes = lambda point: cluster.RanPoint(
        [Result(suite=bench.name, variant="scale", point=point, status=Status.OK)],
        point["block"] / 100,
    )
    client.submitted = recorder.events  # one list: the submissions among what is written
    found = runner.run(plan)
    events = [
        ("submit", e[4]["block"], e[6]["workers"]) if e[0] is cluster._remote_point else e
        for e in recorder.events
    ]
    assert events == [
        ("started", 6),
        ("submit", 32, ["w0"]),  # the biggest problem (n=3000) to w0
        ("submit", 256, ["w1"]),  # the biggest nobody holds (n=1000) to w1
        ("submit", 64, ["w0"]),  # 32 finished: w0's next goes out before 32 is written
        ("finished", 32, "scale"),
        ("point", [(32, "scale")]),
        ("submit", 512, ["w1"]),
        ("finished", 256, "scale"),
        ("point", [(256, "scale")]),
        ("submit", 128, ["w0"]),
        ("finished", 64, "scale"),
        ("point", [(64, "scale")]),
        ("submit", 1024, ["w1"]),
        ("finished", 512, "scale"),
        ("point", [(512, "scale")]),
        ("finished", 128, "scale"),
        ("point", [(128, "scale")]),  # nothing more for w0
        ("finished", 1024, "scale"),
        ("point", [(1024, "scale")]),
    ]
    submitted = [e for e in recorder.events if e[0] is cluster._remote_point]
    assert all(
        (suite, backend, settings, variants, set(options))
        == (tunable, "fake", plan.settings, ["scale"], {"pure", "workers", "allow_other_workers"})
        and options["pure"] is False
        and options["allow_other_workers"] is True
        for _, suite, backend, settings, _, variants, options in submitted
    )
    assert heard == [
        (0, 0.32, 32),
        (1, 2.56, 256),
        (0, 0.64, 64),
        (1, 5.12, 512),
        (0, 1.28, 128),
        (1, 10.24, 1024),
    ]
    assert [r.point["block"] for r in found] == [32, 256, 64, 512, 128, 1024]
    runner.close()  # cancels every task submitted, the later ones included
    assert len(runner._futures) == 6 and all(f.cancelled for f in runner._futures)


def test_a_daemon_dask_worker_says_how_to_start_it(service, monkeypatch):
    import multiprocessing
    from types import SimpleNamespace

    monkeypatch.setattr(multiprocessing, "current_process", lambda: SimpleNamespace(daemon=True))
    with pytest.raises(EnvironmentProblem) as info:
        cluster._remote_environment("s", "fake")
    assert str(info.value) == (
        "this Dask worker runs as a daemon process, which may not start gpubench's isolated "
        "worker: start it with DASK_DISTRIBUTED__WORKER__DAEMON=False (or dask worker "
        "--no-nanny)")  # fmt: skip
    assert service.made == []
