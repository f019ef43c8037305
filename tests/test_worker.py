"""Worker isolation on a real GPU: kernels that write out of bounds, never end, need too
many registers or too much shared memory, or fail to compile."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpubench import registry
from gpubench.results import Status
from gpubench.runner import Plan
from gpubench.timing import TimingPolicy
from gpubench.worker import IsolatedRunner, WorkerSpec

FAULTY = str(Path(__file__).parent / "suites" / "faulty.py")


@pytest.mark.gpu
def test_broken_kernels_cost_one_result_each_and_the_sweep_goes_on():
    bench = registry.get(FAULTY)
    points = [
        bench.resolve({**bench.defaults(), "case": c, "n": 1 << 20})
        for c in (0, 6, 1, 12, 2, 17, 3)
    ]
    policy = TimingPolicy(warmup=1, min_samples=5, max_time_s=0.2, time_limit_s=10)
    runner = IsolatedRunner(WorkerSpec(FAULTY))
    runner.start()
    try:
        results = runner.run(Plan(bench, points, bench.variant_names, "kernel", policy))
    finally:
        runner.close()
    status = {(r.point["case"], r.variant): r for r in results}
    for case in (0, 1, 2, 3):
        assert status[(case, "kernel")].status.is_measured
    assert status[(6, "kernel")].status is Status.CRASHED
    assert "illegal" in status[(6, "kernel")].reason.lower()
    assert status[(12, "kernel")].status is Status.TIMEOUT
    assert status[(17, "kernel")].status is Status.COMPILE_FAILED
    assert "broken on purpose" in status[(17, "kernel")].reason
    hog = status[(0, "register_hog")]
    assert hog.status is Status.SKIPPED and "registers/thread" in hog.reason
    assert status[(0, "shared_hog")].status is Status.SKIPPED
    assert "shared memory" in status[(0, "shared_hog")].reason
    # The crashed point's later variants ran in a fresh worker.
    assert status[(6, "register_hog")].status is Status.SKIPPED
    assert runner.restarts >= 2


@pytest.mark.gpu
@pytest.mark.parametrize("case", [21, 22, 23])  # misaligned address, trap, illegal instruction
def test_every_sticky_error_is_a_crash_of_one_worker(case):
    bench = registry.get(FAULTY)
    points = [bench.resolve({**bench.defaults(), "case": c, "n": 1 << 16}) for c in (case, 0)]
    policy = TimingPolicy(warmup=1, min_samples=5, max_time_s=0.2, time_limit_s=10)
    runner = IsolatedRunner(WorkerSpec(FAULTY))
    runner.start()
    try:
        first, second = runner.run(Plan(bench, points, ("kernel",), "kernel", policy))
    finally:
        runner.close()
    assert first.status is Status.CRASHED, first.reason
    assert second.status.is_measured and runner.restarts == 1
    print(case, first.reason)


def test_a_closed_runner_neither_retries_nor_starts_workers(tmp_path, monkeypatch):
    """After close (Ctrl-C: the pool kills its workers), a worker that died is not replaced to
    run its variant again: the point ends with what it has; a fresh start allows runs again."""
    monkeypatch.setenv("GPUBENCH_TEST_MARKERS", str(tmp_path))
    dangerous = str(Path(__file__).parent / "suites" / "dangerous.py")
    bench = registry.get(dangerous)
    point = bench.resolve({**bench.defaults(), "n": 10})
    policy = TimingPolicy(warmup=0, min_samples=2, max_time_s=0.05, time_limit_s=10)
    plan = Plan(bench, [point], ("die_once", "good"), "good", policy)
    runner = IsolatedRunner(WorkerSpec(dangerous, backend="tests.fakes:FakeBackend"))
    runner.close()
    emitted = []
    assert runner._run_point(plan, point, ["die_once", "good"], emitted.append) == {}
    assert emitted == [] and runner._worker is None and runner.retried == []
    runner.start()
    try:
        fresh = runner._run_point(plan, point, ["die_once", "good"], emitted.append)
    finally:
        runner.close()
    assert {v: r.status for v, r in fresh.items()} == {"die_once": Status.OK, "good": Status.OK}
    assert [r["variant"] for r in runner.retried] == ["die_once"]
