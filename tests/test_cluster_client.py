"""The cluster runner's start on the client, with a stand-in for Dask's Client: every way the
connection or the workers fail is one line, and the environment it builds is exact. Runs
where Dask is not installed (tests/test_cluster.py runs a real local cluster where it is)."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import ClassVar

import pytest

from gpubench import cluster
from gpubench.errors import EnvironmentProblem

ADDRESS = "tcp://h:8786"


class FakeClient:
    made: ClassVar[list[FakeClient]] = []
    fail: ClassVar[BaseException | None] = None
    workers: ClassVar[dict] = {}
    environments: ClassVar[dict | BaseException] = {}

    def __init__(self, address, timeout=None):
        if FakeClient.fail is not None:
            raise FakeClient.fail
        self.address, self.timeout, self.closed = address, timeout, False
        FakeClient.made.append(self)

    def scheduler_info(self, n_workers=None):
        assert n_workers == -1
        return {"workers": FakeClient.workers}

    def run(self, function, suite, backend):
        assert function is cluster._remote_environment and (suite, backend) == ("s", "fake")
        if isinstance(FakeClient.environments, BaseException):
            raise FakeClient.environments
        return FakeClient.environments

    def close(self):
        self.closed = True


@pytest.fixture()
def dask(monkeypatch):
    FakeClient.made, FakeClient.fail, FakeClient.workers = [], None, {"w1": {}, "w0": {}}
    FakeClient.environments = {
        "w1": {"gpubench_version": "x", "device_record": {"name": "B", "uuid": "u1"}},
        "w0": {"gpubench_version": "x", "device_record": {"name": "A", "uuid": "u0"}},
    }  # fmt: skip
    monkeypatch.setitem(sys.modules, "distributed", SimpleNamespace(Client=FakeClient))
    return FakeClient


def start():
    return cluster.DaskRunner(ADDRESS, "s", "fake").start()


def test_the_environment_names_each_worker_s_gpu_in_order(dask):
    assert start() == {
        "gpubench_version": "x", "scheduler": ADDRESS,
        "devices": [{"name": "A", "uuid": "u0", "worker": "w0"},
                    {"name": "B", "uuid": "u1", "worker": "w1"}],
    }  # fmt: skip
    (client,) = dask.made
    assert (client.address, client.timeout, client.closed) == (ADDRESS, cluster.CONNECT_TIMEOUT_S,
                                                               False)  # fmt: skip
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
    dask.workers = {}
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
    assert str(info.value) == "--scheduler needs Dask distributed: pip install 'gpubench[cluster]'"
