"""Several GPUs of one host, on fake GPUs: every point once, on one GPU, in one log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from gpubench.model import results
from gpubench.model.results import Result, Status
from tests.fakes import RecordingObserver

REPO = Path(__file__).resolve().parents[2]
SWEEP = """\
suite: {repo}/tests/suites/scale.py
variants: [good, fast]
params: {{n: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}}
timing: {{min_samples: 3, max_time_s: 0.05}}
"""


def gpubench(tmp_path, *args, devices=2, models=""):
    env = {**os.environ, "GPUBENCH_BACKEND": "tests.fakes:FakeBackend", "PYTHONPATH": str(REPO),
           "GPUBENCH_FAKE_DEVICES": str(devices), "GPUBENCH_FAKE_MODELS": models}  # fmt: skip
    return subprocess.run([sys.executable, "-m", "gpubench", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def results_of(path: Path) -> list[dict]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [r for r in lines if r.get("kind") == "result"]


def test_a_sweep_over_all_gpus_measures_each_point_once_and_names_its_gpu(tmp_path):
    (tmp_path / "s.yaml").write_text(SWEEP.format(repo=REPO))
    ran = gpubench(tmp_path, "sweep", "s.yaml", "--devices", "all", "--jsonl", "log.jsonl")
    assert ran.returncode == 0, ran.stderr
    assert "on 2 GPUs" in ran.stderr
    found = results_of(tmp_path / "log.jsonl")
    assert len(found) == 20
    assert len({(json.dumps(r["point"], sort_keys=True), r["variant"]) for r in found}) == 20
    by_point: dict[str, set] = {}
    for r in found:
        by_point.setdefault(json.dumps(r["point"], sort_keys=True), set()).add(r["device"]["uuid"])
    assert all(len(uuids) == 1 for uuids in by_point.values())  # a point stays on one GPU
    assert set.union(*by_point.values()) == {"GPU-fake-0", "GPU-fake-1"}  # both GPUs worked
    header = json.loads((tmp_path / "log.jsonl").read_text().splitlines()[0])
    assert [d["uuid"] for d in header["environment"]["devices"]] == ["GPU-fake-0", "GPU-fake-1"]
    assert header["fingerprint"]["gpu_uuids"] == ["GPU-fake-0", "GPU-fake-1"]
    # Speedups are within one point, hence within one GPU.
    metrics = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    speedups = [m["metrics"]["speedup"] for m in metrics
                if m.get("kind") == "metrics" and m["variant"] == "fast"]  # fmt: skip
    assert speedups == [pytest.approx(2.0)] * 10
    resumed = gpubench(tmp_path, "sweep", "s.yaml", "--devices", "0,1", "--resume", "log.jsonl")
    assert resumed.returncode == 0 and len(results_of(tmp_path / "log.jsonl")) == 20


def test_gpus_of_different_models_are_named_in_the_table(tmp_path):
    (tmp_path / "s.yaml").write_text(SWEEP.format(repo=REPO))
    ran = gpubench(tmp_path, "sweep", "s.yaml", "--devices", "0,1", "--jsonl", "log.jsonl",
                   models="Fake GPU,Other GPU")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "on 2 GPUs of 2 models" in ran.stderr
    assert "2 GPU models: each point measured and ranked on one" in ran.stdout
    assert "1: Other GPU" in ran.stdout and "0: Fake GPU" in ran.stdout


def test_a_device_that_does_not_exist_is_one_line(tmp_path):
    (tmp_path / "s.yaml").write_text(SWEEP.format(repo=REPO))
    ran = gpubench(tmp_path, "sweep", "s.yaml", "--devices", "0,5")
    assert ran.returncode == 4 and "device 5 does not exist" in ran.stderr
    assert "Traceback" not in ran.stderr
    many = ",".join(str(i) for i in range(3000))  # refused before 2,999 workers start
    ran = gpubench(tmp_path, "sweep", "s.yaml", "--devices", many)
    assert ran.returncode == 4 and "device 2 does not exist (this machine has 2)" in ran.stderr
    ran = gpubench(tmp_path, "sweep", "s.yaml", "--devices", "zero")
    assert ran.returncode == 2 and "--devices: expected 'all'" in ran.stderr


def test_run_takes_devices_too(tmp_path):
    ran = gpubench(tmp_path, "run", str(REPO / "tests/suites/scale.py"), "-v", "good",
                   "--devices", "1", "--json", "r.json")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    (result,) = json.loads((tmp_path / "r.json").read_text())["results"]
    assert result["device"]["index"] == 1 and result["device"]["uuid"] == "GPU-fake-1"


def test_points_are_handed_out_biggest_first():
    from gpubench.engine.pool import largest_first
    from gpubench.engine.runner import Plan
    from gpubench.load import registry
    from gpubench.model.timing import TimingPolicy

    bench = registry.get("transpose")
    points = [bench.resolve({**bench.defaults(), "size": s}) for s in (1024, 16384, 4096)]
    plan = Plan(bench, points, ("naive",), "naive", TimingPolicy())
    order = largest_first(plan, [(p, ["naive"]) for p in points])
    assert [p["size"] for p, _ in order] == [16384, 4096, 1024]


def test_remaining_work_skips_what_is_logged_and_weighs_points_by_variants_left():
    from gpubench.engine.pool import remaining_work
    from gpubench.engine.runner import Plan
    from gpubench.load import registry
    from gpubench.model.results import Result, Status
    from gpubench.model.timing import TimingPolicy

    bench = registry.get("transpose")
    points = [bench.resolve({**bench.defaults(), "size": s}) for s in (1024, 2048, 4096)]
    plan = Plan(bench, points, ("naive", "padded", "copy"), "naive", TimingPolicy())
    logged = [
        Result(suite="transpose", variant=v, point=points[i], status=Status.OK)
        for i, v in ((2, "naive"), (2, "padded"), (2, "copy"), (1, "naive"), (1, "copy"))
    ]
    done, todo = remaining_work(plan, logged)
    assert sorted(done) == sorted((results.point_key(r.point), r.variant) for r in logged)
    assert done[(results.point_key(points[1]), "copy")] is logged[4]
    # 4096 is finished; 2048 has one variant left (4 MiB x 1), 1024 all three (1 MiB x 3).
    assert [(p["size"], v) for p, v in todo] == [
        (2048, ["padded"]),
        (1024, ["naive", "padded", "copy"]),
    ]


def test_a_suite_that_cannot_size_its_points_keeps_the_sweep_order():
    from types import SimpleNamespace

    from gpubench.engine.pool import largest_first

    def refuse(point):
        raise ValueError("no idea")

    plan = SimpleNamespace(bench=SimpleNamespace(input_specs=refuse))
    todo = [({"n": 3}, ["a"]), ({"n": 1}, ["a"]), ({"n": 2}, ["a", "b"])]
    assert largest_first(plan, todo) == todo


def test_a_pool_worker_killed_under_a_variant_is_run_once_more_and_logged_once(
    tmp_path, monkeypatch
):
    """Each point's die_once variant kills its worker the first time (as kill -9 would): the
    GPU's fresh worker runs it once more, every result reaches the log once, both GPUs go on."""
    sweep = SWEEP.format(repo=REPO).replace("tests/suites/scale.py", "tests/suites/dangerous.py")
    (tmp_path / "s.yaml").write_text(sweep.replace("[good, fast]", "[good, die_once, fast]"))
    monkeypatch.setenv("GPUBENCH_TEST_MARKERS", str(tmp_path))
    ran = gpubench(tmp_path, "sweep", "s.yaml", "--devices", "all", "--jsonl", "log.jsonl",
                   "--json", "r.json")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    found = results_of(tmp_path / "log.jsonl")
    keys = [(r["point"]["n"], r["variant"]) for r in found]
    assert sorted(keys) == sorted(
        (n, v) for n in range(1, 11) for v in ("good", "die_once", "fast")
    )
    assert {r["status"] for r in found} == {"ok"}
    record = json.loads((tmp_path / "r.json").read_text())
    retried = sorted(r["point"]["n"] for r in record["environment"]["worker_retries"])
    assert retried == list(range(1, 11)) and record["environment"]["worker_restarts"] == 10
    assert ran.stderr.count("was run once more on a fresh worker") == 10


def test_a_new_pool_has_no_runner_and_no_environment_yet():
    """In-process (the sweeps above run the pool in a child process)."""
    import threading

    from gpubench.engine.pool import DevicePool

    observers = iter([1, 2])  # any iterable, kept as a list
    pool = DevicePool("scale", "all", "fake", observers)
    assert (pool.suite, pool.requested, pool.backend) == ("scale", "all", "fake")
    assert pool.observers == [1, 2] and pool.runners == [] and pool.environment is None
    assert isinstance(pool._stop, threading.Event) and not pool._stop.is_set()
    assert (pool.restarts, pool.retried) == (0, [])


def test_points_are_weighed_by_their_bytes_times_the_variants_left():
    from types import SimpleNamespace

    from gpubench.engine.pool import largest_first

    plan = SimpleNamespace(bench=SimpleNamespace(
        input_specs=lambda point: {"x": SimpleNamespace(nbytes=point["n"])}))  # fmt: skip
    todo = [({"n": 2}, ["a"]), ({"n": 1}, ["a", "b", "c"])]
    assert largest_first(plan, todo) == [todo[1], todo[0]]


class FakeRunner:
    """IsolatedRunner's surface, in-process: each records what the pool asks of it."""

    made: ClassVar[list] = []

    def __init__(self, spec):
        self.spec, self.calls, self.restarts, self.retried = spec, [], 0, []
        uuid = FakeRunner.uuids.get(spec.device_index, f"GPU-{spec.device_index}")
        self.device_record = {"index": spec.device_index + 100, "uuid": uuid}
        FakeRunner.made.append(self)

    def spawn(self):
        return f"worker {self.spec.device_index}"

    def start(self, worker=None):
        self.calls.append(("start", worker))
        if self.spec.device_index in FakeRunner.failing:
            raise RuntimeError(f"device {self.spec.device_index} would not start")
        return {"device_count": FakeRunner.count, "first": self.spec.device_index}

    def precompile(self, plan, on_report, limit_s):
        self.calls.append(("precompile", [p["size"] for p in plan.points], limit_s))
        self.compiling = (plan, on_report)

    def wait_for_compile(self):
        self.calls.append(("wait for compile",))
        plan, on_report = self.compiling
        on_report({"compiled": len(plan.points)})

    def close(self, graceful=True):
        self.calls.append(("close", graceful))
        return {"sm_clock_mhz": self.spec.device_index}

    def _run_point(self, plan, point, variants, emit):
        if point.get("size") == FakeRunner.broken_point:
            raise ValueError(f"a bug at {point['size']}")
        fresh = {}
        for variant in variants:
            fresh[variant] = Result("transpose", variant, point, FakeRunner.status, reason="fake",
                                    summary={"median_ms": 1.0})  # fmt: skip
            emit(fresh[variant])
        self.calls.append(("point", point["size"]))
        return fresh


@pytest.fixture
def fake_runners(monkeypatch):
    from gpubench.engine import pool

    FakeRunner.made, FakeRunner.uuids, FakeRunner.failing, FakeRunner.count = [], {}, set(), 4
    FakeRunner.broken_point, FakeRunner.status = None, Status.INCORRECT
    monkeypatch.setattr(pool, "IsolatedRunner", FakeRunner)
    return FakeRunner


def test_a_pool_starts_one_worker_per_gpu_of_its_backend_and_lists_them(fake_runners):
    from gpubench.engine.pool import DevicePool

    pool = DevicePool("scale", [2, 3], "tests.fakes:FakeBackend")
    _, plan = a_transpose_plan([64, 1024, 256])
    reports = []
    pool.precompile(plan, reports.append)  # asked before the start: begun with the first
    environment = pool.start()
    assert [(r.spec.suite, r.spec.device_index, r.spec.backend) for r in fake_runners.made] == [
        ("scale", 2, "tests.fakes:FakeBackend"), ("scale", 3, "tests.fakes:FakeBackend")]  # fmt: skip
    # The first compiles for all, in the order the points are handed out (biggest first),
    # from before it started; the others start meanwhile.
    assert fake_runners.made[0].calls == [("precompile", [1024, 256, 64], 3600), ("start", None)]
    assert fake_runners.made[1].calls == [("start", "worker 3")]  # spawned, then started
    assert fake_runners.made[0].spec.compile_scope == fake_runners.made[1].spec.compile_scope
    assert environment == pool.environment == {
        "device_count": 4, "first": 2,
        "devices": [{"index": 102, "uuid": "GPU-2"}, {"index": 103, "uuid": "GPU-3"}]}  # fmt: skip
    pool.run(plan)
    assert reports == [{"compiled": 3, "devices": 2}]  # heard by the end of the run
    assert fake_runners.made[0].calls[-1] == ("wait for compile",)
    assert pool.close() == {"devices": {"102": {"sm_clock_mhz": 2}, "103": {"sm_clock_mhz": 3}}}
    assert [r.calls[-1] for r in fake_runners.made] == [("close", True)] * 2
    assert pool.close(graceful=False)["devices"]["102"] == {"sm_clock_mhz": 2}
    assert [r.calls[-1] for r in fake_runners.made] == [("close", False)] * 2


def test_a_pool_of_all_gpus_needs_their_count(fake_runners):
    from gpubench.engine.pool import DevicePool
    from gpubench.errors import EnvironmentProblem

    pool = DevicePool("scale", "all", "fake")
    assert len(pool.start()["devices"]) == 4
    assert [r.spec.device_index for r in fake_runners.made] == [0, 1, 2, 3]
    fake_runners.made, fake_runners.count = [], None
    with pytest.raises(EnvironmentProblem) as error:
        DevicePool("scale", "all", "fake").start()
    assert str(error.value) == (
        "cannot count this host's GPUs (no NVML): name them, e.g. --devices 0,1"
    )
    assert fake_runners.made[0].calls[-1] == ("close", True)


def test_a_gpu_that_will_not_start_stops_the_pool_and_says_why(fake_runners):
    from gpubench.engine.pool import DevicePool

    fake_runners.failing = {2}
    with pytest.raises(RuntimeError, match=r"^device 2 would not start$"):
        DevicePool("scale", [0, 1, 2], "fake").start()
    assert [r.calls[-1] for r in fake_runners.made] == [("close", False)] * 3


def test_two_indices_of_one_gpu_are_refused(fake_runners):
    from gpubench.engine.pool import DevicePool
    from gpubench.errors import EnvironmentProblem

    fake_runners.uuids = {0: "GPU-a", 1: "GPU-a"}
    with pytest.raises(EnvironmentProblem) as error:
        DevicePool("scale", [0, 1], "fake").start()
    assert str(error.value) == "two device indices name the same GPU (['GPU-a', 'GPU-a'])"
    assert [r.calls[-1] for r in fake_runners.made] == [("close", False)] * 2


def a_transpose_plan(sizes):
    from gpubench.engine.runner import Plan
    from gpubench.load import registry
    from gpubench.model.timing import TimingPolicy

    bench = registry.get("transpose")
    points = [bench.resolve({**bench.defaults(), "size": s}) for s in sizes]
    return points, Plan(bench, points, ("naive", "copy"), "naive", TimingPolicy())


def test_a_pool_hands_out_each_point_once_and_tells_the_observers(fake_runners):
    from gpubench.engine.pool import DevicePool

    points, plan = a_transpose_plan([64, 128, 256])
    watcher = RecordingObserver("size")
    pool = DevicePool("transpose", [0, 1], "fake", [watcher])
    pool.start()
    done = [Result("transpose", "copy", points[0], Status.INCORRECT, reason="logged")]
    returned = pool.run(plan, done)
    assert watcher.events[0] == ("started", 5)  # two variants at 128 and 256, one at 64
    ran = sorted(size for r in fake_runners.made for kind, size in r.calls[1:] if kind == "point")
    assert ran == [64, 128, 256]
    finished = sorted(s[1:] for s in watcher.events if s[0] == "finished")
    assert finished == [(64, "naive"), (128, "copy"), (128, "naive"), (256, "copy"),
                        (256, "naive")]  # fmt: skip
    assert sorted(s[1] for s in watcher.events if s[0] == "point") == [
        [(64, "naive")], [(128, "naive"), (128, "copy")], [(256, "naive"), (256, "copy")]]  # fmt: skip
    assert sorted((r.point["size"], r.variant) for r in returned) == finished


def test_a_bug_in_a_pool_thread_is_raised_in_the_caller(fake_runners):
    from gpubench.engine.pool import DevicePool

    _, plan = a_transpose_plan([64, 128])
    fake_runners.broken_point = 128
    pool = DevicePool("transpose", [0], "fake", [RecordingObserver("size")])
    pool.start()
    with pytest.raises(ValueError, match=r"^a bug at 128$"):
        pool.run(plan)


def test_a_resumed_pool_compares_fresh_results_with_the_logged_baseline(fake_runners):
    """The logged results reach the point's comparison: a fresh `copy` at a point whose
    baseline (`naive`) is in the log gets its speedup against it."""
    from gpubench.engine.pool import DevicePool

    points, plan = a_transpose_plan([64])
    fake_runners.status = Status.OK
    logged = Result("transpose", "naive", points[0], Status.OK, summary={"median_ms": 3.0})
    pool = DevicePool("transpose", [0], "fake", [RecordingObserver("size")])
    pool.start()
    (fresh,) = pool.run(plan, [logged])
    assert fresh.variant == "copy" and fresh.metrics["speedup"] == 3.0


def test_a_worker_without_a_device_record_is_closed_under_its_index(fake_runners):
    from gpubench.engine.pool import DevicePool

    pool = DevicePool("scale", [5], "fake")
    fake_runners.count = 8
    pool.start()
    pool.runners[0].device_record = None
    assert pool.close() == {"devices": {"5": {"sm_clock_mhz": 5}}}


def test_a_point_on_another_gpu_waits_for_its_build_past_the_time_limit(tmp_path, monkeypatch):
    """The first worker compiles for the pool; a point on the second GPU whose build is still
    compiling waits for it (its compiler's error, not a timeout at time_limit_s)."""
    import threading

    from gpubench.engine.pool import DevicePool
    from gpubench.engine.runner import Plan
    from gpubench.load import registry
    from gpubench.model.timing import TimingPolicy

    monkeypatch.setenv("GPUBENCH_TEST_MARKERS", str(tmp_path))
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("GPUBENCH_FAKE_DEVICES", "2")
    scale = str(REPO / "tests" / "suites" / "scale.py")
    bench = registry.get(scale)
    points = [bench.resolve({**bench.defaults(), "n": 10, "broken": b}) for b in (0, 1)]
    policy = TimingPolicy(warmup=0, min_samples=2, max_time_s=0.05, time_limit_s=2)
    plan = Plan(bench, points, ("good", "fast"), "good", policy)
    pool = DevicePool(scale, [0, 1], "tests.compile_fakes:GatedCompileBackend")
    # The broken build is held past the time limit.
    threading.Timer(4.0, (tmp_path / "release").touch).start()
    pool.precompile(plan, lambda report: None)
    try:
        pool.start()
        found = pool.run(plan)
    finally:
        pool.close()
    statuses = {(r.point["broken"], r.variant): r.status for r in found}
    assert statuses == {
        (0, "good"): Status.OK,
        (0, "fast"): Status.OK,
        (1, "good"): Status.COMPILE_FAILED,
        (1, "fast"): Status.COMPILE_FAILED,
    }
    assert (tmp_path / "gate").read_text() == "released"


def test_gpus_counted_up_front_start_together_each_with_its_share_of_the_host(
    fake_runners, monkeypatch
):
    from gpubench.engine import pool as pool_module
    from gpubench.engine.pool import DevicePool

    monkeypatch.setattr(pool_module, "host_gpu_count", lambda backend: 4)
    monkeypatch.setattr(pool_module, "usable_cpus", lambda: 64)
    pool = DevicePool("scale", "all", "pycuda")
    _, plan = a_transpose_plan([64, 1024])
    pool.precompile(plan, lambda report: None)
    environment = pool.start()
    assert [r.spec.device_index for r in fake_runners.made] == [0, 1, 2, 3]
    assert [r.spec.host_threads for r in fake_runners.made] == [16] * 4
    # The first compiles, then starts; the others were spawned before it, not after.
    assert fake_runners.made[0].calls == [("precompile", [1024, 64], 3600), ("start", None)]
    assert [r.calls for r in fake_runners.made[1:]] == [
        [("start", f"worker {i}")] for i in (1, 2, 3)
    ]
    assert len(environment["devices"]) == 4


def test_a_device_past_the_count_known_up_front_is_refused_before_any_worker_starts(
    fake_runners, monkeypatch
):
    from gpubench.engine import pool as pool_module
    from gpubench.engine.pool import DevicePool
    from gpubench.errors import EnvironmentProblem

    monkeypatch.setattr(pool_module, "host_gpu_count", lambda backend: 2)
    with pytest.raises(EnvironmentProblem) as error:
        DevicePool("scale", list(range(3000)), "pycuda").start()
    assert str(error.value) == "device 2 does not exist (this machine has 2)"
    assert fake_runners.made == []


def test_a_first_gpu_that_will_not_start_closes_the_others_started_with_it(
    fake_runners, monkeypatch
):
    from gpubench.engine import pool as pool_module
    from gpubench.engine.pool import DevicePool

    monkeypatch.setattr(pool_module, "host_gpu_count", lambda backend: 3)
    fake_runners.failing = {0}
    with pytest.raises(RuntimeError, match=r"^device 0 would not start$"):
        DevicePool("scale", "all", "pycuda").start()
    assert [r.calls[-1] for r in fake_runners.made] == [("close", False)] * 3


def test_no_gpu_counted_up_front_leaves_the_count_to_the_first_worker(fake_runners, monkeypatch):
    from gpubench.engine import pool as pool_module
    from gpubench.engine.pool import DevicePool

    monkeypatch.setattr(pool_module, "host_gpu_count", lambda backend: 0)
    fake_runners.count = 2
    assert len(DevicePool("scale", "all", "pycuda").start()["devices"]) == 2
    assert [r.spec.host_threads is not None for r in fake_runners.made] == [False, True]


def test_one_gpu_alone_keeps_the_whole_host(fake_runners, monkeypatch):
    from gpubench.engine import pool as pool_module
    from gpubench.engine.pool import DevicePool

    monkeypatch.setattr(pool_module, "host_gpu_count", lambda backend: 1)
    DevicePool("scale", "all", "pycuda").start()
    assert [r.spec.host_threads for r in fake_runners.made] == [None]


def test_the_configurations_of_a_problem_get_the_same_inputs_on_every_gpu(tmp_path):
    # Twelve configurations of two problems over two GPUs: each problem's seed is the run's,
    # whichever GPU measured the configuration; the log's header holds the run's seed. Then
    # six configurations of one problem: both GPUs take some (the second joins the first's
    # problem, which has more points left than holders), on the same inputs.
    sweeps = {
        "two.yaml": "params: {n: [64, 96], block: [32, 64, 128], unroll: [2, 4]}\n",
        "one.yaml": "params: {n: [64], block: [32, 64, 128], unroll: [2, 4]}\n",
    }
    found = {}
    for name, params in sweeps.items():
        (tmp_path / name).write_text(
            f"suite: {REPO}/tests/suites/tunable.py\n{params}"
            "timing: {min_samples: 3, max_time_s: 0.05}\n"
        )
        log = tmp_path / f"{name}.jsonl"
        ran = gpubench(tmp_path, "sweep", name, "--devices", "all", "--jsonl", log.name)
        assert ran.returncode == 0, ran.stderr
        found[name] = results_of(log)
        header = json.loads(log.read_text().splitlines()[0])
        assert isinstance(header["run_seed"], int)
    assert [len(found[name]) for name in sweeps] == [12, 6]
    seeds: dict[int, set] = {}
    for r in found["two.yaml"]:
        seeds.setdefault(r["point"]["n"], set()).add(r["seed"])
    assert [len(seeds[n]) for n in (64, 96)] == [1, 1] and seeds[64] != seeds[96]
    assert len({r["seed"] for r in found["one.yaml"]}) == 1
    assert {r["device"]["uuid"] for r in found["one.yaml"]} == {"GPU-fake-0", "GPU-fake-1"}


def test_a_gpu_with_nothing_left_keeps_its_thread_until_the_others_are_done(fake_runners):
    # A worker restarted in a pool thread dies with that thread: GPU 1 has nothing left
    # after its one point while GPU 0 still runs the slow one, and its thread is still there.
    import threading
    import time

    from gpubench.engine.pool import DevicePool

    alive_meanwhile = []
    plain = FakeRunner._run_point

    def slow_at_1024(self, plan, point, variants, emit):
        if point["size"] == 1024:
            time.sleep(0.3)
            alive_meanwhile.extend(t.name for t in threading.enumerate())
        return plain(self, plan, point, variants, emit)

    FakeRunner._run_point = slow_at_1024
    try:
        pool = DevicePool("transpose", [0, 1], "fake")
        pool.start()
        _, plan = a_transpose_plan([1024, 64])
        pool.run(plan)
    finally:
        FakeRunner._run_point = plain
    assert {"gpu-0", "gpu-1"} <= set(alive_meanwhile)
