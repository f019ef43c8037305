"""A run's session without a GPU: the fingerprint a resume is checked against, what differs
from a log, the shards of a sweep, and the line naming the GPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpubench import config, kernels, outputs, registry, session
from gpubench.errors import ConfigError
from tests.test_kernel_suite import SCALE, write


def spec_of(**keys):
    return config.spec_from_mapping({"suite": "transpose", "params": {"size": [64]},
                                     "variants": ["copy", "naive"], **keys}, "s.yaml")  # fmt: skip


ENV = {"device": {"name": "G"}, "gpu_uuid": "U"}


def test_the_fingerprint_holds_exactly_what_a_resume_must_match():
    spec = spec_of()
    points = spec.points(registry.get("transpose"))
    assert session.fingerprint(spec, points, ENV) == {
        "suite": "transpose",
        "kernel_source_sha256": kernels.source_digest(registry.get("transpose")),
        "gpu_name": "G", "gpu_uuid": "U",
        "points": ['{"block_rows": 8, "cols": 64, "dtype": "float32", "rows": 64, "size": 64, '
                   '"tile": 32}'],
        "variants": ["copy", "naive"], "baseline": "naive",
        "timing": spec.timing.to_dict(),
    }  # fmt: skip


def test_several_gpus_are_named_by_their_sorted_uuids_and_one_is_not():
    spec = spec_of()
    points = spec.points(registry.get("transpose"))
    two = {**ENV, "devices": [{"uuid": "b"}, {"uuid": "a"}]}
    assert session.fingerprint(spec, points, two)["gpu_uuids"] == ["a", "b"]
    assert "gpu_uuids" not in session.fingerprint(spec, points, {**ENV, "devices": [{"uuid": "a"}]})
    assert session.fingerprint(spec, points, {})["gpu_name"] is None


def test_a_kernel_file_s_declarations_are_part_of_its_fingerprint(tmp_path):
    path = write(tmp_path, SCALE)
    spec = config.load(path)
    bench = registry.get(spec.suite_ref)
    stamp = session.fingerprint(spec, spec.points(bench), ENV)
    assert stamp["declarations_sha256"] == bench.declaration_digest() and stamp["suite"] == "k"


def test_differences_name_each_changed_key_once_in_order():
    before = {"suite": "a", "points": ["p1", "p2"], "gpu_uuid": "U", "timing": {"warmup": 3}}
    now = {"suite": "a", "points": ["p2", "p3", "p4"], "gpu_uuid": "V", "variants": ["x"]}
    assert session.differences(before, now) == [
        "gpu_uuid: 'U' in the log, 'V' now",
        "points: 1 no longer in the sweep, 2 new",
        "timing: {'warmup': 3} in the log, None now",
        "variants: None in the log, ['x'] now",
    ]  # fmt: skip
    assert session.differences(before, dict(before)) == []
    assert session.differences({}, {"points": ["p"]}) == ["points: 0 no longer in the sweep, 1 new"]


def test_a_changed_sweep_blocks_a_resume_unless_forced():
    plan = outputs.OutputPlan(json=None, csv=None, log="r.jsonl", resume=True, force=False,
                              progress=False, timeline=None)  # fmt: skip
    with pytest.raises(ConfigError) as info:
        session._check_resumable({"fingerprint": {"suite": "a"}}, {"suite": "b"}, plan)
    assert str(info.value) == ("r.jsonl: the sweep, the kernel source or the GPU differ from the "
                               "log; use --force to resume anyway: suite: 'a' in the log, 'b' now")  # fmt: skip
    session._check_resumable({"fingerprint": {"suite": "a"}}, {"suite": "a"}, plan)
    forced = outputs.OutputPlan(json=None, csv=None, log="r.jsonl", resume=True, force=True,
                                progress=False, timeline=None)  # fmt: skip
    session._check_resumable({}, {"suite": "b"}, forced)


@pytest.mark.parametrize(("shard", "taken"), [
    (None, [0, 1, 2, 3, 4]), ((0, 1), [0, 1, 2, 3, 4]), ((0, 2), [0, 2, 4]), ((1, 2), [1, 3]),
    ((4, 5), [4]),
])  # fmt: skip
def test_a_shard_takes_every_nth_point_from_its_own(shard, taken):
    points = [{"i": i} for i in range(5)]
    assert [p["i"] for p in session.shard_points(points, shard, "s.yaml")] == taken


def test_a_shard_without_points_is_one_line():
    with pytest.raises(ConfigError) as info:
        session.shard_points([{"i": 0}, {"i": 1}], (2, 3), "s.yaml")
    assert str(info.value) == "s.yaml: --shard: shard 2/3 has no points (the sweep has 2)"


# -- execute, end to end in this process: the runner stood in for by the fake backend ------------
class InProcess:
    """A SweepRunner without a worker process: the fake backend, in this process."""

    def __init__(self, interrupt_after: int | None = None, retried=()):
        from tests.fakes import FakeBackend

        self.backend, self.observers, self.restarts = FakeBackend(), [], 2
        self.retried, self.interrupt_after = list(retried), interrupt_after
        self.calls: list[tuple] = []

    def start(self):
        self.calls.append(("start",))
        return self.backend.environment().to_dict()

    def precompile(self, points, limit_s=3600):
        self.calls.append(("precompile", len(points)))
        return {"configurations": 3, "seconds": 0.25, "compiled": 2, "cached": 1, "failed": 0,
                "workers": 4}  # fmt: skip

    def run(self, plan, previous=()):
        from gpubench.results import point_key
        from gpubench.runner import Notifier, Runner

        done = {(point_key(r.point), r.variant): r for r in previous}
        notify = Notifier(self.observers, plan, done)
        notify.started(sum((point_key(p), v) not in done for p in plan.points
                           for v in plan.variants))  # fmt: skip
        for point in plan.points:
            remaining = [v for v in plan.variants if (point_key(point), v) not in done]
            if self.interrupt_after is not None and len(notify.results) >= self.interrupt_after:
                raise KeyboardInterrupt
            fresh = Runner(self.backend).run_point(plan, point, remaining, on_result=notify.result)
            notify.point_done(point, remaining, {r.variant: r for r in fresh})
        return notify.results

    def close(self, graceful=True):
        self.calls.append(("close", graceful))
        return {"sm_clock_mhz": 1000.0}


SCALE_FILE = str(Path(__file__).parent / "suites" / "scale.py")


def _execute(tmp_path, monkeypatch, yaml_text, runner, spread=None, **request):
    import io

    from rich.console import Console

    monkeypatch.setenv("GPUBENCH_BACKEND", "tests.fakes:FakeBackend")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(session.Spread, "runner", lambda self, suite, backend: runner)
    path = tmp_path / "s.yaml"
    path.write_text(yaml_text)
    spec = config.load(path)
    out, err = io.StringIO(), io.StringIO()
    console = Console(file=out, width=250, color_system=None)
    errors = Console(file=err, width=250, color_system=None)
    code = session.execute(spec, outputs.OutputRequest(**request), 0, console, errors, spread)
    return code, out.getvalue(), err.getvalue()


SWEEP = (f"suite: {SCALE_FILE}\nvariants: [wrong, good]\nparams: {{n: [30, 10]}}\n"
         "timing: {min_samples: 2, max_samples: 3, min_time_s: 0}\n")  # fmt: skip


def test_execute_announces_compiles_measures_sorts_renders_and_saves(tmp_path, monkeypatch):
    import json

    runner = InProcess(retried=[{"variant": "good", "point": {"n": 10, "tag": "a"},
                                 "reason": "worker died"}])  # fmt: skip
    code, out, err = _execute(tmp_path, monkeypatch, SWEEP, runner, json=str(tmp_path / "r.json"),
                              csv=str(tmp_path / "r.csv"), jsonl="log.jsonl")  # fmt: skip
    assert code == 3  # `wrong` is incorrect
    assert err.splitlines() == [
        "Fake GPU (sm_90, 4 SMs, peak DRAM 16 GB/s) · 2 point(s) × 2 variant(s)",
        "compiled 3 configuration(s) in 0.2 s: 2 new, 1 cached, 0 failed (4 in parallel)",
        "note: good at n=10, tag=a was run once more on a fresh worker: worker died",
        f"results: log.jsonl, {tmp_path / 'r.json'}, {tmp_path / 'r.csv'}",
        "2 of 4 result(s) failed",
    ]
    assert runner.calls == [("start",), ("precompile", 2), ("close", True)]
    saved = json.loads((tmp_path / "r.json").read_text())
    assert [(r["point"]["n"], r["variant"], r["status"]) for r in saved["results"]] == [
        (30, "wrong", "incorrect"), (30, "good", "ok"), (10, "wrong", "incorrect"),
        (10, "good", "ok")]  # fmt: skip
    env = saved["environment"]
    assert env["end"] == {"sm_clock_mhz": 1000.0} and env["worker_restarts"] == 2
    assert env["worker_retries"] == runner.retried
    assert saved["compile_report"]["configurations"] == 3 and saved["suite"] == "scale"
    assert out.count("scale") >= 1 and "good (base)" in out and "incorrect" in out
    logged = [json.loads(line) for line in (tmp_path / "log.jsonl").open()]
    assert [line["kind"] for line in logged] == ["header", *["result", "result", "metrics"] * 2]
    header = logged[0]
    assert header["suite"] == "scale" and header["fingerprint"]["variants"] == ["wrong", "good"]
    assert header["environment"]["gpu_uuid"] == "GPU-fake-0"


def test_execute_interrupted_keeps_what_finished_and_kills_the_worker(tmp_path, monkeypatch):
    import json

    runner = InProcess(interrupt_after=2)
    code, _, err = _execute(tmp_path, monkeypatch, SWEEP, runner, json=str(tmp_path / "r.json"))
    assert code == 130 and runner.calls[-1] == ("close", False)
    assert err.splitlines()[-1] == "interrupted: kept 2 finished result(s)"
    assert len(json.loads((tmp_path / "r.json").read_text())["results"]) == 2


def test_execute_resumes_a_log_and_refuses_a_changed_sweep(tmp_path, monkeypatch):
    import json

    log = str(tmp_path / "r.jsonl")
    _execute(tmp_path, monkeypatch, SWEEP, InProcess(interrupt_after=2), jsonl=log)
    code, _, err = _execute(tmp_path, monkeypatch, SWEEP, InProcess(), resume=log,
                            json=str(tmp_path / "all.json"))  # fmt: skip
    assert code == 3
    assert err.splitlines()[0].endswith(f" · resuming: 2 result(s) already in {log}")
    assert len(json.loads((tmp_path / "all.json").read_text())["results"]) == 4
    changed = SWEEP.replace("[30, 10]", "[30, 11]")
    with pytest.raises(ConfigError) as info:
        _execute(tmp_path, monkeypatch, changed, InProcess(), resume=log)
    assert str(info.value) == (f"{log}: the sweep, the kernel source or the GPU differ from the "
                               "log; use --force to resume anyway: points: 1 no longer in the "
                               "sweep, 1 new")  # fmt: skip


def test_execute_of_one_shard_stamps_it_and_verbose_shows_the_phases(tmp_path, monkeypatch):
    import json

    spread = session.Spread(shard=(1, 2))
    code, out, _ = _execute(tmp_path, monkeypatch, SWEEP.replace("[wrong, good]", "[good]"),
                            InProcess(), spread, jsonl=str(tmp_path / "s.jsonl"), verbose=True)  # fmt: skip
    assert code == 0
    header = json.loads((tmp_path / "s.jsonl").open().readline())
    assert header["fingerprint"]["shard"] == "1/2"
    assert header["fingerprint"]["points"] == ['{"broken": 0, "n": 10, "scale": 1.0, "tag": "a"}']
    last = out.splitlines()[-1]
    assert (
        last.startswith("wall ") and " ms in timed runs (" in last and "; most host time: " in last
    )
    assert out.count("scale · n=10, broken=0, tag=a, scale=1.0") == 1  # the phases table only
