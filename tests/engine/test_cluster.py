"""Sweeps over a Dask cluster, on Dask's local cluster and the CPU fake backend."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")

from gpubench.engine import cluster  # noqa: E402
from gpubench.errors import EnvironmentProblem  # noqa: E402
from gpubench.model.results import Status  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SWEEP = """\
suite: {suite}
variants: {variants}
params: {{n: [1, 2, 3, 4, 5, 6]}}
timing: {{min_samples: 3, max_time_s: 0.05}}
"""


@pytest.fixture
def fake_backend(monkeypatch):
    monkeypatch.setenv("GPUBENCH_BACKEND", "tests.fakes:FakeBackend")


@pytest.fixture
def local_cluster(fake_backend):
    # Workers in this process (threads), reachable over TCP by a gpubench in another process.
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  protocol="tcp", dashboard_address=None) as running:  # fmt: skip
        yield running.scheduler_address


def gpubench(tmp_path, *args):
    env = {**os.environ, "GPUBENCH_BACKEND": "tests.fakes:FakeBackend", "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "gpubench", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def logged(path: Path) -> list[dict]:
    return [r for r in map(json.loads, path.read_text().splitlines()) if r.get("kind") == "result"]


def test_a_sweep_runs_on_the_cluster_and_streams_into_one_log(tmp_path, local_cluster):
    (tmp_path / "s.yaml").write_text(SWEEP.format(suite=REPO / "tests/suites/scale.py",
                                                  variants="[good, fast, wrong]"))  # fmt: skip
    ran = gpubench(tmp_path, "sweep", "s.yaml", "--scheduler", local_cluster, "--jsonl", "l.jsonl")
    assert ran.returncode == 3, ran.stderr  # `wrong` is incorrect: exit 3, like on one GPU
    found = logged(tmp_path / "l.jsonl")
    assert len(found) == 18
    statuses = {(r["point"]["n"], r["variant"]): r["status"] for r in found}
    assert {statuses[(n, "good")] for n in range(1, 7)} == {"ok"}
    assert {statuses[(n, "wrong")] for n in range(1, 7)} == {"incorrect"}
    assert all(r["device"]["host"] and r["device"]["uuid"] == "GPU-fake-0" for r in found)
    header = json.loads((tmp_path / "l.jsonl").read_text().splitlines()[0])
    assert header["environment"]["scheduler"] == local_cluster
    resumed = gpubench(tmp_path, "sweep", "s.yaml", "--scheduler", local_cluster,
                       "--resume", "l.jsonl")  # fmt: skip
    assert resumed.returncode == 3 and len(logged(tmp_path / "l.jsonl")) == 18


def test_a_kernel_that_kills_its_process_costs_only_its_variant(tmp_path, local_cluster):
    (tmp_path / "s.yaml").write_text(SWEEP.format(suite=REPO / "tests/suites/dangerous.py",
                                                  variants="[good, die]"))  # fmt: skip
    ran = gpubench(tmp_path, "sweep", "s.yaml", "--scheduler", local_cluster, "--jsonl", "l.jsonl")
    found = logged(tmp_path / "l.jsonl")
    assert {r["status"] for r in found if r["variant"] == "die"} == {"crashed"}
    assert {r["status"] for r in found if r["variant"] == "good"} == {"ok"}
    assert ran.returncode == 3


def test_an_unreachable_scheduler_is_one_line(monkeypatch, fake_backend):
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 2)
    runner = cluster.DaskRunner("tcp://127.0.0.1:9", "scale", "tests.fakes:FakeBackend")
    with pytest.raises(EnvironmentProblem, match="cannot reach the Dask scheduler at tcp://127"):
        runner.start()


@pytest.mark.parametrize(("address", "why"), [
    ("notaurl", "missing port number in address 'notaurl'"),
    ("tcp://h:x", "invalid literal for int() with base 10: 'x'"),
    ("tcp://h:0", "port 0 is not between 1 and 65535"),
    ("tcp://h:65536", "port 65536 is not between 1 and 65535"),
    ("tcp://a..b:8786", "encoding with 'idna' codec failed (UnicodeError: label empty or too long)"),
])  # fmt: skip
def test_a_malformed_scheduler_address_is_a_usage_error_before_any_connection(
    monkeypatch, address, why
):
    from gpubench.errors import EXIT_USAGE, ConfigError

    monkeypatch.setattr(distributed, "Client", None)  # a connection attempt would fail otherwise
    with pytest.raises(ConfigError) as caught:
        cluster.DaskRunner(address, "scale", "tests.fakes:FakeBackend").start()
    assert caught.value.exit_code == EXIT_USAGE
    assert str(caught.value) == (f"--scheduler: {address!r} is not a Dask scheduler address "
                                 f"such as tcp://HOST:8786 ({why})")  # fmt: skip


def test_a_dask_worker_that_dies_costs_its_point_after_one_retry(tmp_path, fake_backend):
    """The task itself kills its Dask worker at n == 2: the scheduler retries it once on the
    other worker (allowed-failures 1), which dies too; the point is recorded crashed."""
    results, runner = _run_on_dying_workers("die_at_two", ("good",), workers=3)
    found = {r.point["n"]: r for r in results}
    assert found[2].status is Status.CRASHED and "KilledWorker" in found[2].reason
    assert all(entry["point"]["n"] != 2 for entry in runner.retried)  # crashed, not rerun
    assert found[1].status is Status.OK and found[3].status is Status.OK


def test_a_point_whose_dask_worker_died_once_is_run_again_and_noted(tmp_path, monkeypatch,
                                                                     fake_backend):  # fmt: skip
    """The task kills its Dask worker the first time it runs n == 2 only: the scheduler runs
    it again on another worker, its results are recorded once, and `retried` names the point
    with all its variants (the only point whose worker died)."""
    monkeypatch.setenv("GPUBENCH_TEST_DIED_ONCE", str(tmp_path / "died"))  # the workers inherit it
    # 3 goes to one worker, 2 to the other (each point a problem of its own, one task per
    # worker), 1 to the first that is free.
    found, runner = _run_on_dying_workers("die_once_at_two", ("good", "fast"), workers=2)
    assert (tmp_path / "died").exists()  # the first attempt did die
    assert sorted((r.point["n"], r.variant, r.status) for r in found) == [
        (n, v, Status.OK) for n in (1, 2, 3) for v in ("fast", "good")
    ]
    assert [(e["point"]["n"], e["variant"]) for e in runner.retried] == [(2, "good"), (2, "fast")]
    assert runner.retried[0]["reason"] == (
        "the Dask worker running the point died; nothing of the point had been recorded"
    )


def _die_once_at(n, point, variants):
    """Kill this Dask worker the first time point n runs (a marker file says it did)."""
    marker = Path(os.environ["GPUBENCH_TEST_DIED_ONCE"])
    if point["n"] == n and not marker.exists():
        marker.touch()
        os._exit(1)
    return ok_results(point, variants)


def die_once_at_two(suite, backend, plan_args, point, variants):
    return _die_once_at(2, point, variants)


def die_at_two(suite, backend, plan_args, point, variants):
    if point["n"] == 2:
        os._exit(1)
    return ok_results(point, variants)


def _run_on_dying_workers(remote_point: str, variants, workers: int):
    """The scale suite's points n = 1, 2, 3 on a local cluster of `workers` worker processes
    (a task whose worker dies runs once more, then is crashed), each task running the function
    of this module named `remote_point` in place of cluster._remote_point: (the results, the
    runner)."""
    import dask

    import tests.engine.test_cluster as here
    from gpubench.engine.runner import Plan
    from gpubench.load import registry
    from tests.policies import CHECK_ONLY

    bench = registry.get(str(REPO / "tests/suites/scale.py"))
    points = [{**bench.defaults(), "n": n} for n in (1, 2, 3)]
    plan = Plan(bench, points, variants, "good", CHECK_ONLY)
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}), distributed.LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
        worker_class=distributed.Nanny,
    ) as running:  # fmt: skip
        runner = cluster.DaskRunner(running.scheduler_address, str(REPO / "tests/suites/scale.py"),
                                    "tests.fakes:FakeBackend")  # fmt: skip
        runner.client = distributed.Client(running.scheduler_address)
        original = cluster._remote_point
        cluster._remote_point = getattr(here, remote_point)
        try:
            return runner.run(plan), runner
        finally:
            cluster._remote_point = original
            runner.close()


def ok_results(point, variants):
    """What _remote_point returns for a point that ran: its results, and its time there."""
    from gpubench.model.results import Result, Status

    return cluster.RanPoint(
        [
            Result(
                suite="scale",
                variant=v,
                point=point,
                status=Status.OK,
                summary={"median_ms": 1.0, "rel_noise": 0.0},
            )
            for v in variants
        ],
        0.01,
    )


def test_a_dask_worker_that_dies_costs_only_the_point_it_runs(tmp_path, monkeypatch, fake_backend):
    """One task per worker: 3 to one worker, 2 to the other, 1 to the first that is free. The
    task of 3 kills its worker the first time: nothing waits behind it, so only 3 is run
    again elsewhere; each point's results are recorded once, and `retried` names 3 alone."""
    monkeypatch.setenv("GPUBENCH_TEST_DIED_ONCE", str(tmp_path / "died"))
    found, runner = _run_on_dying_workers("die_once_at_three", ("good",), workers=2)
    assert (tmp_path / "died").exists()
    assert sorted((r.point["n"], r.status) for r in found) == [(n, Status.OK) for n in (1, 2, 3)]
    assert [(e["point"]["n"], e["variant"]) for e in runner.retried] == [(3, "good")]


def die_once_at_three(suite, backend, plan_args, point, variants):
    return _die_once_at(3, point, variants)


TUNABLE = str(REPO / "tests/suites/tunable.py")


@pytest.fixture
def two_workers(fake_backend):
    """A started DaskRunner over two Dask workers of this process, and their addresses in the
    order the hand-out numbers them."""
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, protocol="tcp", dashboard_address=None
    ) as running:
        runner = cluster.DaskRunner(running.scheduler_address, TUNABLE, "tests.fakes:FakeBackend")
        runner.start()
        try:
            yield runner, sorted(d["worker"] for d in runner.environment["devices"])
        finally:
            runner.close()


def tunable_plan(ns, blocks, unrolls=(1,)):
    from gpubench.engine.runner import Plan
    from gpubench.load import registry
    from tests.policies import THREE_SAMPLES

    bench = registry.get(TUNABLE)
    points = [
        {**bench.defaults(), "n": n, "block": b, "unroll": u}
        for n in ns
        for b in blocks
        for u in unrolls
    ]
    return Plan(bench, points, ("scale",), "scale", THREE_SAMPLES)


def test_each_problem_s_points_stay_on_one_dask_worker(two_workers):
    """Two problems (n) of three configurations each over two workers: each worker takes the
    biggest problem nobody holds and keeps to it (with three points a problem, joining the
    other's never pays before it is handed out), so each problem's data is made once.
    Each result names the Dask worker that ran it."""
    runner, addresses = two_workers
    found = runner.run(tunable_plan((1000, 3000), (32, 64, 128)))
    ran_on: dict[int, set[str]] = {}
    for result in found:
        ran_on.setdefault(result.point["n"], set()).add(result.device["worker"])
    assert ran_on == {3000: {addresses[0]}, 1000: {addresses[1]}}
    assert sorted((r.point["n"], r.point["block"], r.status) for r in found) == [
        (n, b, Status.OK) for n in (1000, 3000) for b in (32, 64, 128)
    ]


class PointsSeen:
    """An observer that counts what it is told of each point (n, block, unroll)."""

    def __init__(self) -> None:
        self.total: list[int] = []
        self.results: list[tuple] = []
        self.points: list[tuple] = []

    @staticmethod
    def name(result):
        return (result.point["n"], result.point["block"], result.point["unroll"])

    def started(self, total: int) -> None:
        self.total.append(total)

    def finished(self, result) -> None:
        self.results.append(self.name(result))

    def point_finished(self, results) -> None:
        self.points.append(tuple(self.name(r) for r in results))


def test_every_point_is_run_and_reported_exactly_once(two_workers):
    """Three problems of eight configurations over two workers, four points already logged
    (resumed): the other 20 each run once, each reported once as a result and once as a point,
    none of the logged ones again."""
    from gpubench.model.results import Result

    runner, _ = two_workers
    plan = tunable_plan((1000, 2000, 3000), (32, 64, 128, 256), (1, 2))
    logged = {(2000, 32, 1), (2000, 64, 2), (3000, 256, 1), (1000, 128, 2)}
    previous = [
        Result(
            suite="tunable",
            variant="scale",
            point=point,
            status=Status.OK,
            summary={"median_ms": 1.0, "rel_noise": 0.0},
        )
        for point in plan.points
        if (point["n"], point["block"], point["unroll"]) in logged
    ]
    seen = PointsSeen()
    runner.observers = [seen]
    found = runner.run(plan, previous)
    expected = [
        (n, b, u)
        for n in (1000, 2000, 3000)
        for b in (32, 64, 128, 256)
        for u in (1, 2)
        if (n, b, u) not in logged
    ]
    assert len(previous) == 4 and len(expected) == 20
    assert sorted(PointsSeen.name(r) for r in found) == expected
    assert (seen.total, sorted(seen.results)) == ([20], expected)
    assert sorted(seen.points) == [(p,) for p in expected]
    assert {r.status for r in found} == {Status.OK}


def test_a_server_that_is_not_dask_is_one_line_in_seconds(monkeypatch):
    import socket
    import threading
    import time

    from gpubench.errors import EnvironmentProblem

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)

    def answer_garbage() -> None:
        while True:
            conn, _ = server.accept()
            with contextlib.suppress(OSError):
                conn.sendall(b"\xff" * 4096)

    threading.Thread(target=answer_garbage, daemon=True).start()
    default = cluster.CONNECT_TIMEOUT_S
    assert 0 < default <= 10  # every network wait bounded well under 30 s
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 5)
    started = time.monotonic()
    with pytest.raises(EnvironmentProblem, match="cannot reach the Dask scheduler") as caught:
        cluster.DaskRunner(f"tcp://127.0.0.1:{server.getsockname()[1]}", "scale",
                           "tests.fakes:FakeBackend").start()  # fmt: skip
    assert "\n" not in str(caught.value) and time.monotonic() - started < 20
    assert "something answered there, but not as a Dask scheduler" in str(caught.value)


def test_a_cluster_client_needs_no_cuda_here():
    from gpubench import backends

    backends.preflight("pycuda", local=False)  # no PyCUDA on this machine: still fine
