"""Several GPUs of one host, on fake GPUs: every point once, on one GPU, in one log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpubench import results
from gpubench.pool import parse_devices

REPO = Path(__file__).resolve().parents[1]
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


@pytest.mark.parametrize(
    ("text", "expected"),
    [("all", "all"), ("0", [0]), ("0,2,3", [0, 2, 3]), (" 1 , 0 ", [1, 0])],
)
def test_device_lists_parse(text, expected):
    assert parse_devices(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "name at least one"), ("a,b", "expected 'all'"), ("0,0", "named twice"),
     ("-1", ">= 0")],
)  # fmt: skip
def test_bad_device_lists_are_refused(text, message):
    with pytest.raises(ValueError, match=message):
        parse_devices(text)


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
    from gpubench import registry
    from gpubench.pool import largest_first
    from gpubench.runner import Plan
    from gpubench.timing import TimingPolicy

    bench = registry.get("transpose")
    points = [bench.resolve({**bench.defaults(), "size": s}) for s in (1024, 16384, 4096)]
    plan = Plan(bench, points, ("naive",), "naive", TimingPolicy())
    order = largest_first(plan, [(p, ["naive"]) for p in points])
    assert [p["size"] for p, _ in order] == [16384, 4096, 1024]


def test_remaining_work_skips_what_is_logged_and_weighs_points_by_variants_left():
    from gpubench import registry
    from gpubench.pool import remaining_work
    from gpubench.results import Result, Status
    from gpubench.runner import Plan
    from gpubench.timing import TimingPolicy

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

    from gpubench.pool import largest_first

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

    from gpubench.pool import DevicePool

    observers = iter([1, 2])  # any iterable, kept as a list
    pool = DevicePool("scale", "all", "fake", observers)
    assert (pool.suite, pool.requested, pool.backend) == ("scale", "all", "fake")
    assert pool.observers == [1, 2] and pool.runners == [] and pool.environment is None
    assert isinstance(pool._stop, threading.Event) and not pool._stop.is_set()
    assert (pool.restarts, pool.retried) == (0, [])
