"""The Dask preload: the Dask worker's gpubench worker started ahead, taken by the first
sweep's runner on that Dask worker."""

from pathlib import Path

import pytest

from gpubench.engine import dask_preload, spawned
from gpubench.engine.worker import IsolatedRunner, WorkerSpec

FAKE = "tests.fakes:FakeBackend"
SCALE = str(Path(__file__).parents[1] / "suites" / "scale.py")


def test_the_preload_starts_gpu_0_s_worker_which_the_first_runner_takes(monkeypatch):
    monkeypatch.setenv("GPUBENCH_BACKEND", FAKE)  # as the Dask worker's environment names it
    monkeypatch.delenv("GPUBENCH_FAKE_DEVICES", raising=False)
    try:
        dask_preload.dask_setup(worker=None)
        ((key, process, _),) = spawned._started.values()
        assert key == spawned.AheadKey(0, None, None) and process.is_alive()
        runner = IsolatedRunner(WorkerSpec(SCALE, 0, FAKE))  # what the point service makes
        environment = runner.start()
        assert spawned._started == {} and runner._worker.process is process  # taken
        assert environment["gpu_uuid"] == "GPU-fake-0"
        runner.close()
    finally:
        spawned.discard()
    assert spawned._started == {}


def test_a_daemonic_dask_worker_starts_nothing_and_a_failed_spawn_is_a_warning(monkeypatch, caplog):
    import multiprocessing
    from types import SimpleNamespace

    from gpubench.engine import ahead

    monkeypatch.setattr(multiprocessing, "current_process", lambda: SimpleNamespace(daemon=True))
    dask_preload.dask_setup(worker=None)
    assert spawned._started == {}
    monkeypatch.undo()

    def refuse(*args):
        raise OSError("no more processes")

    monkeypatch.setattr(ahead, "start", refuse)
    dask_preload.dask_setup(worker=None)  # no exception: the Dask worker starts
    assert spawned._started == {}
    assert caplog.messages == ["gpubench worker not started ahead: no more processes"]


def waiting_ahead() -> list[int]:
    """On a Dask worker: the GPUs whose gpubench worker waits to be taken."""
    return sorted(key.device_index for key, _, _ in spawned._started.values())


def test_a_preloaded_cluster_s_first_sweep_takes_the_workers_started_ahead(tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed")
    import dask

    from tests.engine.test_cluster import SWEEP, gpubench, logged

    monkeypatch.setenv("GPUBENCH_BACKEND", FAKE)
    monkeypatch.delenv("GPUBENCH_FAKE_DEVICES", raising=False)
    (tmp_path / "s.yaml").write_text(SWEEP.format(suite=SCALE, variants="[good]"))
    with (
        dask.config.set({"distributed.worker.daemon": False}),
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            worker_class=distributed.Nanny,
            preload=["gpubench.engine.dask_preload"],
        ) as running,
        distributed.Client(running.scheduler_address) as client,
    ):
        before = client.run(waiting_ahead)
        ran = gpubench(
            tmp_path,
            "sweep",
            "s.yaml",
            "--scheduler",
            running.scheduler_address,
            "--jsonl",
            "l.jsonl",
        )
        after = client.run(waiting_ahead)
    assert ran.returncode == 0, ran.stderr
    assert sorted(before.values()) == [[0], [0]]  # up before the sweep began
    assert sorted(after.values()) == [[], []]  # and taken by it
    assert sorted(r["point"]["n"] for r in logged(tmp_path / "l.jsonl")) == [1, 2, 3, 4, 5, 6]
