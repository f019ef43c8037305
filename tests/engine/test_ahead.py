"""Workers started before the sweep file is read: which, taken by the runner that asks for
one of the same GPU, backend and share of the host, the rest stopped."""

from pathlib import Path

import pytest

from gpubench.engine import ahead, spawned
from gpubench.engine.runner import Plan
from gpubench.engine.worker import IsolatedRunner, WorkerSpec
from gpubench.errors import EnvironmentProblem
from gpubench.host import usable_cpus
from gpubench.load import registry
from gpubench.model.results import Status
from gpubench.model.timing import TimingPolicy

FAKE = "tests.fakes:FakeBackend"
SCALE = str(Path(__file__).parents[1] / "suites" / "scale.py")


@pytest.fixture(autouse=True)
def nothing_left_behind():
    yield
    spawned.discard()
    assert spawned._started == {}


def test_the_backends_counted_without_cuda_are_the_built_in_ones():
    from gpubench import backends

    assert set(ahead.COUNTED_WITHOUT_CUDA) == set(backends.BUILT_IN)
    assert ahead.DEFAULT_BACKEND == backends.DEFAULT


@pytest.mark.parametrize(("device", "devices", "backend", "count", "expected"), [
    (0, None, None, 4, [0]),
    (3, None, "cuda-core", 4, [3]),
    (5, None, None, 4, [5]),  # one GPU is not counted: past the host's, its worker says so
    (0, "all", None, 4, [0, 1, 2, 3]),
    (0, "0,2", "pycuda", 4, [0, 2]),
    (0, "0,5", None, 4, []),
    (0, ",".join(str(i) for i in range(3000)), None, 2, []),
    (0, "0,1", None, None, []),  # no NVML: the first worker counts them
    (1, None, None, None, [1]),
    (0, "1", FAKE, None, [1]),  # a backend of the user's: one GPU as asked
    (0, "0,1", FAKE, 4, []),  # several: its first worker counts them
    (0, "all", FAKE, 4, []),
    (0, "7", None, None, [7]),
    (0, "zero", None, 4, []),  # refused by the sweep, in one line
    (2**31, None, None, 4, []),
])  # fmt: skip
def test_the_gpus_started_for_are_those_the_command_line_names(
    monkeypatch, device, devices, backend, count, expected
):
    monkeypatch.delenv("GPUBENCH_BACKEND", raising=False)
    monkeypatch.setattr(ahead, "count_devices", lambda: count)
    assert ahead._indices(device, devices, backend) == expected


def test_the_backend_may_come_from_the_environment(monkeypatch):
    monkeypatch.setattr(ahead, "count_devices", lambda: 4)
    monkeypatch.setenv("GPUBENCH_BACKEND", FAKE)
    assert ahead._indices(0, "0,1", None) == []
    monkeypatch.setenv("GPUBENCH_BACKEND", "cuda-core")
    assert ahead._indices(0, "0,1", None) == [0, 1]


def test_a_cluster_starts_nothing_here(monkeypatch):
    monkeypatch.setattr(ahead, "count_devices", lambda: 4)
    ahead.start(0, None, "tcp://host:8786", FAKE)
    assert spawned._started == {}


def test_a_worker_started_ahead_is_taken_and_runs_the_sweep(monkeypatch):
    monkeypatch.delenv("GPUBENCH_FAKE_DEVICES", raising=False)
    ahead.start(0, None, None, FAKE)
    ((key, process, _),) = spawned._started.values()
    assert key == spawned.AheadKey(0, FAKE, None) and process.is_alive()
    runner = IsolatedRunner(WorkerSpec(SCALE, 0, FAKE))
    environment = runner.start()
    assert spawned._started == {} and runner._worker.process is process  # taken, not spawned
    assert environment["gpu_uuid"] == "GPU-fake-0"
    bench = registry.get(SCALE)
    point = bench.resolve({**bench.defaults(), "n": 3})
    plan = Plan(bench, [point], ("good",), "good", TimingPolicy(warmup=0, min_samples=3))
    try:
        (result,) = runner.run(plan)
    finally:
        runner.close()
    assert spawned._stopping == [process]  # killed; its exit waited for by the command
    spawned.wait_for_stopped()
    assert result.status is Status.OK and not process.is_alive()


def test_a_worker_started_for_another_share_or_backend_is_stopped_not_taken():
    ahead.start(0, None, None, FAKE)
    ((_, process, _),) = spawned._started.values()
    assert spawned.take(0, FAKE, 8) is None  # the pool gave its workers a share: not this one
    assert not process.is_alive() and spawned._started == {}
    ahead.start(0, None, None, FAKE)
    ((_, process, _),) = spawned._started.values()
    assert spawned.take(0, "cuda-core", None) is None and not process.is_alive()
    assert spawned.take(0, FAKE, None) is None  # nothing left for that GPU: spawned as before


def test_one_whose_gpu_would_not_open_says_why_as_a_worker_spawned_then_would(monkeypatch):
    monkeypatch.setenv("GPUBENCH_FAKE_DEVICES", "1")
    messages = []
    for started_ahead in (False, True):
        if started_ahead:
            ahead.start(3, None, None, FAKE)
        runner = IsolatedRunner(WorkerSpec(SCALE, 3, FAKE))
        with pytest.raises(EnvironmentProblem) as error:
            runner.start()
        messages.append(str(error.value))
    assert messages[0] == messages[1]
    assert messages[0].startswith("device 3 does not exist")


def test_discard_stops_every_worker_nobody_took(monkeypatch):
    monkeypatch.setattr(ahead, "count_devices", lambda: 2)
    monkeypatch.setattr(ahead, "COUNTED_WITHOUT_CUDA", (FAKE,))
    ahead.start(0, "0,1", None, FAKE)
    processes = [process for _, process, _ in spawned._started.values()]
    assert len(processes) == 2 and all(p.is_alive() for p in processes)
    assert {key.host_threads for key, _, _ in spawned._started.values()} == {
        max(1, usable_cpus() // 2)
    }
    spawned.discard()
    assert spawned._started == {} and not any(p.is_alive() for p in processes)
