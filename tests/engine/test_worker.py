"""Worker isolation on a real GPU: kernels that write out of bounds, never end, need too
many registers or too much shared memory, or fail to compile."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from gpubench.engine import devices, worker
from gpubench.engine.runner import Plan
from gpubench.engine.worker import IsolatedRunner, WorkerSpec
from gpubench.load import registry
from gpubench.model import metrics
from gpubench.model.results import Status
from gpubench.model.timing import TimingPolicy

FAULTY = str(Path(__file__).parents[1] / "suites" / "faulty.py")


@pytest.mark.gpu
def test_broken_kernels_cost_one_result_each_and_the_sweep_goes_on():
    bench = registry.get(FAULTY)
    points = [
        bench.resolve({**bench.defaults(), "case": c, "n": 1 << 20})
        for c in (0, 6, 1, 12, 2, 17, 3)
    ]
    policy = TimingPolicy(warmup=1, min_samples=5, max_time_s=0.2, time_limit_s=10)
    runner = IsolatedRunner(WorkerSpec(FAULTY))
    environment = runner.start()
    # The host's GPUs, counted before CUDA started (as this process counts them).
    assert environment["device_count"] == devices.count_devices() >= 1
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
    dangerous = str(Path(__file__).parents[1] / "suites" / "dangerous.py")
    bench = registry.get(dangerous)
    point = bench.resolve({**bench.defaults(), "n": 10})
    policy = TimingPolicy(warmup=0, min_samples=2, max_time_s=0.05, time_limit_s=10)
    plan = Plan(bench, [point], ("die_once", "good"), "good", policy)
    runner = IsolatedRunner(WorkerSpec(dangerous, backend="tests.fakes:FakeBackend"))
    assert runner.close() == {}  # no worker: no readings
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


# -- the worker process's set-up, in this process: device pinning and the parent watch -------
def test_a_built_in_backend_sees_only_its_device_and_another_backend_is_given_the_index(
    monkeypatch,
):
    from gpubench import backends
    from gpubench.engine import worker
    from gpubench.errors import EnvironmentProblem

    loaded = []
    monkeypatch.setattr(backends, "load", lambda index, name: loaded.append((index, name)) or "B")
    # Set first, so that the value _load_pinned writes is undone after the test too.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert worker._load_pinned(WorkerSpec("s", 2, "pycuda")) == "B"
    assert loaded[-1] == (0, "pycuda") and worker.os.environ["CUDA_VISIBLE_DEVICES"] == "2"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,GPU-x")
    worker._load_pinned(WorkerSpec("s", 1, "cuda-core"))
    assert loaded[-1] == (0, "cuda-core") and worker.os.environ["CUDA_VISIBLE_DEVICES"] == "GPU-x"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5")
    worker._load_pinned(WorkerSpec("s", 0, "pycuda"))
    assert worker.os.environ["CUDA_VISIBLE_DEVICES"] == "4"
    for index in (2, -1):
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5")
        with pytest.raises(EnvironmentProblem) as info:
            worker._load_pinned(WorkerSpec("s", index, "pycuda"))
        assert str(info.value) == (f"device {index} does not exist (CUDA_VISIBLE_DEVICES='4,5' "
                                   "shows 2)")  # fmt: skip
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")
    assert worker._load_pinned(WorkerSpec("s", 3, "tests.fakes:FakeBackend")) == "B"
    assert loaded[-1] == (3, "tests.fakes:FakeBackend")
    assert worker.os.environ["CUDA_VISIBLE_DEVICES"] == "7"  # left as it was


def test_the_worker_s_environment_names_its_device_and_for_a_gpu_the_host_s_count():
    from types import SimpleNamespace

    backend = SimpleNamespace(environment=lambda: SimpleNamespace(to_dict=lambda: {"a": 1}))
    assert worker._environment(backend, WorkerSpec("s", 2, "pycuda"), 4) == {
        "a": 1, "device_index": 2, "device_count": 4}  # fmt: skip
    assert worker._environment(backend, WorkerSpec("s", 1, "x:Y"), 4) == {"a": 1,
                                                                          "device_index": 1}  # fmt: skip


class _Exited(Exception):
    pass


def test_the_worker_asks_to_die_with_its_parent_and_watches_it(monkeypatch):
    import ctypes
    import signal

    calls, threads, parents = [], [], iter([10, 10, 10, 11])

    class Libc:
        def __init__(self, name, use_errno=False):
            calls.append(("CDLL", name, use_errno))

        def prctl(self, *args):
            calls.append(("prctl", *args))

    class Thread:
        def __init__(self, target=None, daemon=None, name=None):
            threads.append((target, daemon, name))

        def start(self):
            calls.append(("start",))

    def exit_(code):
        raise _Exited(code)

    monkeypatch.setattr(ctypes, "CDLL", Libc)
    monkeypatch.setattr(worker.threading, "Thread", Thread)
    monkeypatch.setattr(worker.os, "getppid", lambda: next(parents))
    monkeypatch.setattr(worker.os, "_exit", exit_)
    monkeypatch.setattr(worker.time, "sleep", lambda s: calls.append(("sleep", s)))
    worker._die_with_parent()
    assert calls == [("CDLL", "libc.so.6", True), ("prctl", 1, signal.SIGKILL), ("start",)]
    ((watch, daemon, name),) = threads
    assert (daemon, name) == (True, "parent-watchdog")
    with pytest.raises(_Exited) as info:  # the parent is 10 for one second, then 11
        watch()
    assert info.value.args == (1,) and calls[3:] == [("sleep", 1.0), ("sleep", 1.0)]
    # A parent that died before the request took effect: the worker leaves at once.
    parents = iter([10, 11])
    monkeypatch.setattr(worker.os, "getppid", lambda: next(parents))
    with pytest.raises(_Exited) as info:
        worker._die_with_parent()
    assert info.value.args == (1,)


def test_a_worker_that_cannot_load_its_suite_says_why_and_one_that_stops_reports_readings(
    tmp_path,
):
    from gpubench.errors import GpubenchError

    missing = str(tmp_path / "missing.py")
    runner = IsolatedRunner(WorkerSpec(missing, backend="tests.fakes:FakeBackend"))
    with pytest.raises(GpubenchError) as info:
        runner.start()
    assert str(info.value) == f"suite file {missing!r} not found"
    assert info.value.exit_code == 2
    assert runner._worker is None and runner.environment is None
    scale = str(Path(__file__).parents[1] / "suites" / "scale.py")
    runner = IsolatedRunner(WorkerSpec(scale, backend="tests.fakes:FakeBackend"))
    environment = runner.start()
    assert environment["device_index"] == 0 and runner.environment == environment
    assert runner.device_record == {"index": 0, "uuid": "GPU-fake-0", "name": "Fake GPU"}
    assert runner.close() == {"sm_clock_mhz": 1000.0, "temperature_c": 40, "power_w": 100.0}


@pytest.mark.parametrize(("body", "message"), [
    ("import time\ntime.sleep(60)\n", "the benchmark worker did not start within 2 s"),
    ("import os\nos._exit(3)\n", "the benchmark worker could not start: "),
])  # fmt: skip
def test_a_worker_that_hangs_or_dies_while_starting_is_one_line(tmp_path, monkeypatch, body,
                                                                message):  # fmt: skip
    from gpubench.errors import EnvironmentProblem

    monkeypatch.setattr(worker, "START_TIMEOUT_S", 2)
    suite = tmp_path / "bad_suite.py"
    suite.write_text(body)
    runner = IsolatedRunner(WorkerSpec(str(suite), backend="tests.fakes:FakeBackend"))
    with pytest.raises(EnvironmentProblem) as info:
        runner.start()
    assert str(info.value).startswith(message) and "\n" not in str(info.value)
    assert runner._worker is None and runner.environment is None


def test_a_worker_measures_on_the_first_gpu_unless_told(monkeypatch):
    from gpubench import backends

    monkeypatch.setattr(backends, "selected", lambda name=None: name or "fake")
    assert WorkerSpec.for_suite("transpose") == WorkerSpec("transpose", 0, "fake")
    assert WorkerSpec.for_suite("transpose", 3).device_index == 3


def _quick_plan(path: str, variants: tuple[str, ...] | None = None):
    bench = registry.get(path)
    point = bench.resolve({**bench.defaults(), "n": 10})
    policy = TimingPolicy(warmup=0, min_samples=2, max_time_s=0.05, time_limit_s=10)
    chosen = variants or bench.variant_names[:2]
    return Plan(bench, [point], chosen, chosen[0], policy)


def test_a_runner_made_plainly_starts_its_worker_when_first_asked_to_run():
    scale = str(Path(__file__).parents[1] / "suites" / "scale.py")
    runner = IsolatedRunner(WorkerSpec(scale, backend="tests.fakes:FakeBackend"))
    try:
        results = runner.run(_quick_plan(scale))
    finally:
        runner.close()
    assert [r.status for r in results] == [Status.OK, Status.OK]
    assert all(r.device == {"index": 0, "uuid": "GPU-fake-0", "name": "Fake GPU"}
               for r in results)  # fmt: skip


def test_a_worker_is_a_spawned_daemon_process():
    """Spawned, never forked (a forked CUDA context is unusable), and a daemon, so that it
    never outlives gpubench."""
    scale = str(Path(__file__).parents[1] / "suites" / "scale.py")
    runner = IsolatedRunner(WorkerSpec(scale, backend="tests.fakes:FakeBackend"))
    worker = runner.spawn()
    try:
        assert worker.process.daemon is True
        assert type(worker.process).__name__ == "SpawnProcess"
    finally:
        worker.kill()


def test_a_bug_in_a_suite_is_an_internal_error_of_its_variant_with_the_traceback():
    buggy = str(Path(__file__).parents[1] / "suites" / "buggy.py")
    runner = IsolatedRunner(WorkerSpec(buggy, backend="tests.fakes:FakeBackend"))
    runner.start()
    try:
        results = runner.run(_quick_plan(buggy))
    finally:
        runner.close()
    first = results[0]
    assert first.status is Status.CRASHED
    assert first.reason.startswith("internal error in the worker:\nTraceback")
    assert "ZeroDivisionError: a bug in the suite" in first.reason
    assert runner.retried == []  # a bug is not retried: it would only happen again


def test_a_worker_killed_by_a_signal_is_named_by_it():
    from gpubench.engine import worker as worker_module

    scale = str(Path(__file__).parents[1] / "suites" / "scale.py")
    runner = IsolatedRunner(WorkerSpec(scale, backend="tests.fakes:FakeBackend"))
    worker = runner.spawn()
    try:
        assert worker.receive(60)[0] == "ready"
        worker.process.kill()
        with pytest.raises(worker_module._WorkerGone) as gone:
            worker.receive(60)
        assert gone.value.reason == "the worker process died (killed by signal 9)"
    finally:
        worker.kill()


class _StandInWorker:
    """A worker process stand-in: keeps what it is sent and how long it is asked to wait,
    and answers each receive with answer() (None: nothing within the time)."""

    def __init__(self, answer=lambda: None, alive: bool = True) -> None:
        self.sent: list = []
        self.waits: list = []
        self._answer = answer
        self.process = SimpleNamespace(is_alive=lambda: alive)
        self.conn = SimpleNamespace(send=self.sent.append)

    def receive(self, timeout):
        self.waits.append(timeout)
        return self._answer()

    def kill(self, wait=True):
        pass


def _runner_with(worker: _StandInWorker) -> IsolatedRunner:
    runner = IsolatedRunner(WorkerSpec("s", backend="tests.fakes:FakeBackend"))
    runner._worker = worker
    return runner


def test_a_worker_that_starts_with_anything_but_ready_is_one_line_that_quotes_it():
    from gpubench.errors import EnvironmentProblem

    runner = IsolatedRunner(WorkerSpec("s", backend="tests.fakes:FakeBackend"))
    with pytest.raises(EnvironmentProblem) as error:
        runner.start(_StandInWorker(lambda: ("compiled", {})))
    assert str(error.value) == "the benchmark worker could not start: it said ('compiled', {})"


def test_the_compile_report_is_waited_for_at_most_its_limit():
    from gpubench.errors import EnvironmentProblem

    runner = _runner_with(silent := _StandInWorker())  # a worker that never answers
    plan = SimpleNamespace(points=[{}], variants=("a", "b"))
    runner.precompile(plan, lambda report: None, limit_s=7)
    assert silent.sent == [("precompile", [{}], ("a", "b"))]  # sent at once: the worker is up
    with pytest.raises(EnvironmentProblem, match="compiling the sweep's kernels failed: None"):
        runner.wait_for_compile()
    assert silent.waits == [7] and runner._worker is None


def _gated_sweep(tmp_path, monkeypatch):
    """Two points of the scale suite, the second's build broken and held at the fake
    compiler's gate (tests/compile_fakes.py); a fresh compile cache."""
    monkeypatch.setenv("GPUBENCH_TEST_MARKERS", str(tmp_path))
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path / "cache"))
    scale = str(Path(__file__).parents[1] / "suites" / "scale.py")
    bench = registry.get(scale)
    points = [bench.resolve({**bench.defaults(), "n": 10, "broken": b}) for b in (0, 1)]
    policy = TimingPolicy(warmup=0, min_samples=2, max_time_s=0.05, time_limit_s=10)
    plan = Plan(bench, points, ("good", "fast"), "good", policy)
    spec = WorkerSpec(scale, backend="tests.compile_fakes:GatedCompileBackend")
    return plan, IsolatedRunner(spec)


def test_the_first_point_is_measured_while_the_last_build_still_compiles(tmp_path, monkeypatch):
    plan, runner = _gated_sweep(tmp_path, monkeypatch)
    release = tmp_path / "release"
    # The first result opens the gate that holds the last build: it must come before.
    runner.observers = [
        SimpleNamespace(
            started=lambda total: None,
            finished=lambda result: release.touch(),
            point_finished=lambda results: None,
        )
    ]
    reports = []
    runner.precompile(plan, reports.append)
    try:
        runner.start()
        results = runner.run(plan)
    finally:
        runner.close()
    assert (tmp_path / "gate").read_text() == "released"
    assert [(r.point["broken"], r.variant, r.status) for r in results] == [
        (0, "good", Status.OK),
        (0, "fast", Status.OK),
        (1, "good", Status.COMPILE_FAILED),
        (1, "fast", Status.COMPILE_FAILED),
    ]
    for failed in results[2:]:  # the compiler's message, as when compiling came first
        assert failed.reason == (
            'nvcc failed (-DBROKEN=1)\nkernel.cu(3): error: identifier "oops" is undefined'
        )
    # Each build compiled once, though the broken point asked for it while it compiled.
    assert sorted((tmp_path / "compiles").read_text().splitlines()) == ["-DBROKEN=0", "-DBROKEN=1"]
    (report,) = reports
    assert (report["configurations"], report["compiled"], report["cached"], report["failed"]) == (
        2,
        1,
        0,
        1,
    )


def test_an_interrupt_kills_the_compiler_processes_of_the_background_compile(tmp_path, monkeypatch):
    import time

    plan, runner = _gated_sweep(tmp_path, monkeypatch)
    runner.precompile(
        SimpleNamespace(points=plan.points[1:], variants=plan.variants), lambda report: None
    )
    runner.start()
    pid_file = tmp_path / "compiler-pid"
    deadline = time.monotonic() + 30
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    compiler = int(pid_file.read_text())
    started = time.monotonic()
    runner.close(graceful=False)  # what measure does after Ctrl-C

    def running(pid: int) -> bool:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        return state != "Z"

    while running(compiler) and time.monotonic() - started < 5:
        time.sleep(0.02)
    assert not running(compiler) and time.monotonic() - started < 5
    assert not (tmp_path / "gate").exists()  # stopped at the gate, not let through


def test_a_worker_silent_past_the_limit_before_it_starts_a_variant_costs_the_first_left():
    """No "started" yet (it hung making inputs or compiling): the time-out is the first
    variant left's, and the worker is let go."""
    runner = _runner_with(worker := _StandInWorker())
    lost = []
    runner._follow(
        worker,
        3,
        ["a", "b"],
        {},
        lambda result: None,
        lambda variant, status, reason, retry=False: lost.append((variant, status, reason)),
    )
    assert lost == [
        (
            "a",
            Status.TIMEOUT,
            "no result within the 3 s time limit (timing.time_limit_s): the worker was killed",
        )
    ]
    assert runner._worker is None


def test_a_worker_that_dies_before_it_starts_a_variant_costs_the_first_left_a_retry():
    from gpubench.engine import worker as worker_module

    def die():
        raise worker_module._WorkerGone("the worker process died (exit code 3)")

    runner = _runner_with(worker := _StandInWorker(die, alive=False))
    lost = []
    runner._follow(
        worker,
        3,
        ["a", "b"],
        {},
        lambda result: None,
        lambda variant, status, reason, retry=False: lost.append((variant, status, reason, retry)),
    )
    assert lost == [("a", Status.CRASHED, "the worker process died (exit code 3)", True)]
    assert runner._worker is None


def test_a_graceful_close_waits_at_most_30_s_for_the_worker_s_readings():
    runner = _runner_with(silent := _StandInWorker())
    assert runner.close() == {}
    assert silent.sent == [("stop",)] and silent.waits == [30] and runner._worker is None


def test_observers_are_told_how_many_results_a_run_still_owes():
    scale = str(Path(__file__).parents[1] / "suites" / "scale.py")
    plan = _quick_plan(scale)
    point = plan.points[0]
    totals, points_finished = [], []
    observer = SimpleNamespace(
        started=totals.append, finished=lambda result: None, point_finished=points_finished.append
    )
    runner = IsolatedRunner(WorkerSpec(scale, backend="tests.fakes:FakeBackend"), [observer])
    try:
        first = runner.run(plan)
        again = runner.run(plan, previous=first[:1])  # the baseline's result already in the log
    finally:
        runner.close()
    assert totals == [2, 1]
    assert [(r.variant, r.point) for r in again] == [(plan.variants[1], point)]
    assert points_finished[-1] == again
    # The fresh variant's speedup is against the baseline measured by the earlier run.
    assert first[0].variant == plan.baseline
    assert again[0].metrics[metrics.SPEEDUP.key] == pytest.approx(
        first[0].median_ms / again[0].median_ms
    )


@pytest.mark.parametrize(
    ("code", "why"),
    [
        (-9, "killed by signal 9"),
        (-11, "killed by signal 11"),
        (0, "exit code 0"),
        (3, "exit code 3"),
        (None, "exit code None"),
    ],
)
def test_a_dead_worker_is_named_by_its_signal_or_exit_code(code, why):
    from gpubench.engine import worker as worker_module

    def gone():
        raise EOFError

    dead = object.__new__(worker_module._Worker)
    dead.conn = SimpleNamespace(poll=lambda timeout: True, recv=gone)
    dead.process = SimpleNamespace(is_alive=lambda: False, join=lambda timeout: None, exitcode=code)
    with pytest.raises(worker_module._WorkerGone) as error:
        dead.receive(1)
    assert error.value.reason == f"the worker process died ({why})"


def test_a_variant_whose_worker_dies_twice_is_recorded_as_the_suite_s_crash(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_TEST_MARKERS", str(tmp_path))
    dangerous = str(Path(__file__).parents[1] / "suites" / "dangerous.py")
    plan = _quick_plan(dangerous, ("die", "good"))
    runner = IsolatedRunner(WorkerSpec(dangerous, backend="tests.fakes:FakeBackend"))
    try:
        die, good = runner.run(plan)
    finally:
        runner.close()
    assert (die.suite, die.variant, die.status) == ("dangerous_scale", "die", Status.CRASHED)
    assert die.baseline == plan.baseline == "die"
    assert die.reason.endswith("(its worker died twice: run once more, then recorded)")
    assert good.status is Status.OK and [r["variant"] for r in runner.retried] == ["die"]


def test_a_background_compile_that_stops_is_reported_and_the_sweep_goes_on():
    """A cache that cannot be written, a bug: the report says why and the note names it; the
    points compile their own builds, and a nearly finished sweep keeps its results."""
    from gpubench.engine import worker as worker_module
    from gpubench.engine.runner import compile_in_background

    runner = _runner_with(_StandInWorker())
    reports, notes = [], []
    runner._compile = worker_module._CompileRequest([], reports.append, 10)
    why = "Traceback (most recent call last):\n  ...\nOSError: [Errno 28] No space left on device\n"
    assert runner._compile_message(("compile_failed", why)) is True
    assert reports == [{"error": why}] and runner.compile_report == {"error": why}
    assert runner._compile_message(("point_done",)) is False

    class Stopping:
        def precompile(self, plan, on_report):
            on_report({"error": why})

    assert compile_in_background(Stopping(), None, notes.append) == {"error": why}
    from gpubench.report.notices import text

    assert [text(n) for n in notes] == [
        "note: compiling in the background stopped (OSError: [Errno 28] No space left on "
        "device); each point compiled its own build"
    ]


def test_a_worker_is_killed_when_its_start_is_interrupted():
    class Interrupted:
        killed = 0

        def receive(self, timeout):
            raise KeyboardInterrupt

        def kill(self):
            self.killed += 1

    runner = IsolatedRunner(WorkerSpec("scale"))
    worker = Interrupted()
    with pytest.raises(KeyboardInterrupt):
        runner.start(worker)
    assert worker.killed == 1 and runner._worker is None
