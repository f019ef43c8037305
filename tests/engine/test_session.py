"""A run's session without a GPU: the fingerprint a resume is checked against, what differs
from a log, the shards of a sweep, and the line naming the GPU."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from gpubench.cli import outcome
from gpubench.engine import session
from gpubench.errors import ConfigError
from gpubench.load import config, registry
from gpubench.report import markdown
from gpubench.store import outputs


def spec_of(**keys):
    return config.spec_from_mapping({"suite": "transpose", "params": {"size": [64]},
                                     "variants": ["copy", "naive"], **keys}, "s.yaml")  # fmt: skip


ENV = {"device": {"name": "G"}, "gpu_uuid": "U"}


# -- execute, end to end in this process: the runner stood in for by the fake backend ------------
class InProcess:
    """A SweepRunner without a worker process: the fake backend, in this process."""

    def __init__(self, interrupt_after: int | None = None, retried=()):
        from tests.fakes import FakeBackend

        self.backend, self.observers, self.restarts = FakeBackend(), [], 2
        self.retried, self.interrupt_after = list(retried), interrupt_after
        self.calls: list[tuple] = []
        self.timelines: list[bool] = []
        self.made_for: list[tuple] = []  # (the spread's device, suite, backend) per runner made

    def start(self):
        self.calls.append(("start",))
        return self.backend.environment().to_dict()

    def precompile(self, plan, on_report, limit_s=3600):
        """Compiling in the background: the report comes when the run ends."""
        self.calls.append(("precompile", len(plan.points)))
        self.on_report = on_report

    def run(self, plan, previous=()):
        from gpubench.engine.runner import Notifier, Runner
        from gpubench.model.results import point_key

        done = {(point_key(r.point), r.variant): r for r in previous}
        self.timelines.append(plan.timeline)
        notify = Notifier(self.observers, plan, done)
        notify.started(sum((point_key(p), v) not in done for p in plan.points
                           for v in plan.variants))  # fmt: skip
        for point in plan.points:
            remaining = [v for v in plan.variants if (point_key(point), v) not in done]
            if self.interrupt_after is not None and len(notify.results) >= self.interrupt_after:
                raise KeyboardInterrupt
            fresh = Runner(self.backend).run_point(plan, point, remaining, on_result=notify.result)
            notify.point_done(point, remaining, {r.variant: r for r in fresh})
        self.on_report(
            {
                "configurations": 3,
                "seconds": 0.25,
                "compiled": 2,
                "cached": 1,
                "failed": 0,
                "workers": 4,
            }
        )
        return notify.results

    def close(self, graceful=True):
        self.calls.append(("close", graceful))
        return {"sm_clock_mhz": 1000.0}


SCALE_FILE = str(Path(__file__).parents[1] / "suites" / "scale.py")


def _execute(tmp_path, monkeypatch, yaml_text, runner, spread=None, device=0, terminal=False,
             **request):  # fmt: skip
    import io

    from rich.console import Console

    monkeypatch.setenv("GPUBENCH_BACKEND", "tests.fakes:FakeBackend")
    monkeypatch.chdir(tmp_path)

    def made_for(self, suite, backend):
        runner.spread_device = self.device
        runner.made_for.append((self.device, suite, backend))
        return runner

    monkeypatch.setattr(session.Spread, "runner", made_for)
    path = tmp_path / "s.yaml"
    path.write_text(yaml_text)
    spec = config.load(path)
    out, err = io.StringIO(), io.StringIO()
    # terminal: consoles that draw in colour, as on a terminal
    colour = {"force_terminal": True, "color_system": "standard"} if terminal else {
        "color_system": None}  # fmt: skip
    console = Console(file=out, width=250, **colour)
    errors = Console(file=err, width=250, **colour)
    code = outcome.execute(spec, outputs.OutputRequest(**request), device, console, errors, spread)
    return code, out.getvalue(), err.getvalue()


SWEEP = (f"suite: {SCALE_FILE}\nvariants: [wrong, good]\nparams: {{n: [30, 10]}}\n"
         "timing: {min_samples: 2, max_samples: 3, min_time_s: 0}\n")  # fmt: skip


def test_retries_of_one_point_and_cause_share_one_note(tmp_path, monkeypatch):
    """A Dask worker's death reruns a whole point: one note for its variants, in the order
    listed; another point, or another cause at the same point, gets a note of its own."""
    died = "the Dask worker holding the point died"
    runner = InProcess(retried=[
        {"variant": "wrong", "point": {"n": 10, "tag": "a"}, "reason": died},
        {"variant": "good", "point": {"tag": "a", "n": 10}, "reason": died},
        {"variant": "good", "point": {"n": 30, "tag": "a"}, "reason": died},
        {"variant": "good", "point": {"n": 30, "tag": "a"}, "reason": "killed by signal 9"},
    ])  # fmt: skip
    _, _, err = _execute(tmp_path, monkeypatch, SWEEP, runner, jsonl="log.jsonl")
    assert [line for line in err.splitlines() if line.startswith("note:")] == [
        f"note: wrong, good at n=10, tag=a were run once more on a fresh worker: {died}",
        f"note: good at n=30, tag=a was run once more on a fresh worker: {died}",
        "note: good at n=30, tag=a was run once more on a fresh worker: killed by signal 9",
    ]


def test_execute_announces_compiles_measures_sorts_renders_and_saves(tmp_path, monkeypatch):
    import json

    runner = InProcess(retried=[{"variant": "good", "point": {"n": 10, "tag": "a"},
                                 "reason": "worker died"}])  # fmt: skip
    code, out, err = _execute(tmp_path, monkeypatch, SWEEP, runner, json=str(tmp_path / "r.json"),
                              csv=str(tmp_path / "r.csv"), jsonl="log.jsonl")  # fmt: skip
    assert code == 3  # `wrong` is incorrect
    assert err.splitlines() == [
        "Fake GPU (sm_90, 4 SMs, peak DRAM 1,024 GB/s) · 2 point(s) × 2 variant(s)",
        "compiled 3 configuration(s) in 0.2 s: 2 new, 1 cached, 0 failed (4 in parallel)",
        "note: good at n=10, tag=a was run once more on a fresh worker: worker died",
        f"results: log.jsonl, {tmp_path / 'r.json'}, {tmp_path / 'r.csv'}",
        "2 of 4 result(s) failed",
    ]
    # The compile is asked for first: it starts as soon as the worker is up.
    assert runner.calls == [("precompile", 2), ("start",), ("close", True)]
    saved = json.loads((tmp_path / "r.json").read_text())
    assert [(r["point"]["n"], r["variant"], r["status"]) for r in saved["results"]] == [
        (30, "wrong", "incorrect"), (30, "good", "ok"), (10, "wrong", "incorrect"),
        (10, "good", "ok")]  # fmt: skip
    env = saved["environment"]
    assert env["end"] == {"sm_clock_mhz": 1000.0} and env["worker_restarts"] == 2
    assert env["worker_retries"] == runner.retried
    assert saved["compile_report"]["configurations"] == 3 and saved["suite"] == "scale"
    assert saved["spec"] == config.load(tmp_path / "s.yaml").to_dict()
    assert saved["spec"]["variants"] == ["wrong", "good"]
    assert out.count("scale") >= 1 and "good (base)" in out and "incorrect" in out
    logged = [json.loads(line) for line in (tmp_path / "log.jsonl").open()]
    assert [line["kind"] for line in logged] == ["header", *["result", "result", "metrics"] * 2]
    header = logged[0]
    assert header["suite"] == "scale" and header["fingerprint"]["variants"] == ["wrong", "good"]
    assert header["spec"] == saved["spec"]
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
    kinds = [json.loads(line)["kind"] for line in Path(log).read_text().splitlines()]
    assert kinds.count("header") == 1 and kinds.count("result") == 4  # appended, not rewritten
    changed = SWEEP.replace("[30, 10]", "[30, 11]")
    with pytest.raises(ConfigError) as info:
        _execute(tmp_path, monkeypatch, changed, InProcess(), resume=log)
    assert str(info.value) == (f"{log}: the sweep, the kernel source or the GPU differ from the "
                               "log; use --force to resume anyway: points: 1 no longer in the "
                               "sweep, 1 new")  # fmt: skip
    both = changed.replace("[wrong, good]", "[good]")
    with pytest.raises(ConfigError) as info:
        _execute(tmp_path, monkeypatch, both, InProcess(), resume=log)
    assert str(info.value).endswith("points: 1 no longer in the sweep, 1 new; variants: ['wrong', "
                                    "'good'] in the log, ['good'] now")  # fmt: skip


def test_execute_of_one_shard_stamps_it_and_verbose_shows_the_phases(tmp_path, monkeypatch):
    import json

    spread = session.Spread(shard=(1, 2))
    code, out, _ = _execute(tmp_path, monkeypatch, SWEEP.replace("[wrong, good]", "[good]"),
                            InProcess(), spread, jsonl=str(tmp_path / "s.jsonl"), verbose=True)  # fmt: skip
    assert code == 0
    header = json.loads((tmp_path / "s.jsonl").open().readline())
    assert header["fingerprint"]["shard"] == "1/2"
    assert header["fingerprint"]["points"] == ['{"broken": 0, "n": 10, "scale": 1.0, "tag": "a"}']
    *_, wall, gpu = out.splitlines()
    assert (
        wall.startswith("wall ") and " ms in timed runs (" in wall and "; most host time: " in wall
    )
    assert (
        gpu.startswith("the GPU: 1 point(s); started its first at ")
        and ", at the end 0.0 ms" in gpu
    )
    assert out.count("scale · n=10, broken=0, tag=a, scale=1.0") == 1  # the phases table only


# -- the pieces of a session, each exactly ---------------------------------------------------------
@pytest.mark.parametrize(("spread", "kind", "fields"), [
    (session.Spread(device=3), "IsolatedRunner", ("s", 3, "b")),
    (session.Spread(device=3, devices=[2]), "IsolatedRunner", ("s", 2, "b")),
    (session.Spread(devices=[0, 1]), "DevicePool", ("s", [0, 1], "b")),
    (session.Spread(devices="all"), "DevicePool", ("s", "all", "b")),
    (session.Spread(scheduler="tcp://h:1"), "DaskRunner", ("tcp://h:1", "s", "b")),
])  # fmt: skip
def test_each_spread_makes_its_runner_for_the_suite_device_and_backend(spread, kind, fields):
    runner = spread.runner("s", "b")
    assert type(runner).__name__ == kind
    if kind == "IsolatedRunner":
        spec = runner.spec
        assert (spec.suite, spec.device_index, spec.backend) == fields
    elif kind == "DevicePool":
        assert (runner.suite, runner.requested, runner.backend) == fields
    else:
        assert (runner.address, runner.suite, runner.backend) == fields


def test_the_device_line_names_what_it_knows_and_marks_what_it_does_not():
    full = {"device": {"name": "H100", "arch": "sm_90", "sm_count": 132},
            "driver_version": "580.1", "cuda_driver_api_version": "13.0",
            "gpubench_version": "0.1.0"}  # fmt: skip
    assert markdown.device_line(full, "2026-11-24T10:00:00+00:00") == (
        "H100 (sm_90, 132 SMs) · driver 580.1 · CUDA 13.0 · gpubench 0.1.0 · 2026-11-24"
    )
    assert markdown.device_line({}) == "unknown GPU (?, ? SMs)"


def test_probe_environment_starts_a_worker_on_the_device_and_closes_it(monkeypatch):
    made = []

    class Probe:
        def __init__(self, spec):
            made.append(spec)

        def start(self):
            return {"gpu_uuid": "GPU-7"}

        def close(self):
            made.append("closed")

    monkeypatch.setenv("GPUBENCH_BACKEND", "tests.fakes:FakeBackend")
    monkeypatch.setattr(session, "IsolatedRunner", Probe)
    monkeypatch.setattr(session.spawned, "wait_for_stopped", lambda: made.append("waited"))
    assert session.probe_environment("transpose", 5) == {"gpu_uuid": "GPU-7"}
    spec, closed, waited = made
    assert waited == "waited"  # its worker's exit, before the caller starts another
    assert (spec.suite, spec.device_index, spec.backend) == (
        "transpose",
        5,
        "tests.fakes:FakeBackend",
    )
    assert closed == "closed"


def test_execute_stores_history_writes_markdown_and_profiles_when_asked(tmp_path, monkeypatch):
    from gpubench.engine import profiling
    from gpubench.report import timeline
    from gpubench.store.history import History

    profiled, shown = [], []
    monkeypatch.setattr(profiling, "profile_results",
                        lambda *args: profiled.append(args))  # fmt: skip
    monkeypatch.setattr(timeline, "show", lambda *args: shown.append(args))
    runner = InProcess()
    code, _, err = _execute(tmp_path, monkeypatch, SWEEP, runner, session.Spread(devices=[6]),
                            device=4, history=str(tmp_path / "h.sqlite"), label="nightly",
                            markdown=str(tmp_path / "m.md"), profile=True, timeline="")  # fmt: skip
    spec = config.load(tmp_path / "s.yaml")
    assert code == 3 and runner.made_for == [(0, SCALE_FILE, "tests.fakes:FakeBackend")]
    assert f"history: run 1 in {tmp_path / 'h.sqlite'}" in err.splitlines()
    with History.open(tmp_path / "h.sqlite") as store:
        (run,) = store.runs()
    assert (run.label, run.source, run.results) == ("nightly", "gpubench run", 4)
    md = (tmp_path / "m.md").read_text()
    assert md.startswith("### gpubench: scale\n\nFake GPU (sm_90, 4 SMs) · gpubench ")
    assert "2 of 4 result(s) failed" in md and "| wrong | incorrect |" in md
    ((spec_dict, results_seen, kernels, device, _, backend),) = profiled
    assert backend == "tests.fakes:FakeBackend"  # the run's own, handed to the profiler
    assert spec_dict == spec.to_dict() and len(results_seen) == 4 and device == 6
    assert kernels == {v.name for v in registry.get(SCALE_FILE).variants}
    ((results_shown, _, path),) = shown
    assert len(results_shown) == 4 and path is None
    assert all(plan_timeline for plan_timeline in runner.timelines)


def test_execute_over_an_old_log_keeps_it_aside_and_a_forced_resume_sorts_old_points_first(
    tmp_path, monkeypatch
):
    import json

    log = str(tmp_path / "r.jsonl")
    _execute(tmp_path, monkeypatch, SWEEP, InProcess(), jsonl=log)
    code, _, err = _execute(tmp_path, monkeypatch, SWEEP, InProcess(), jsonl=log, force=True)
    kept = err.splitlines()[0]
    assert kept.startswith("the earlier log is kept as ") and code == 3
    assert Path(kept.removeprefix("the earlier log is kept as ")).is_file()
    changed = SWEEP.replace("[30, 10]", "[10, 20]").replace("[wrong, good]", "[fast, good]")
    code, _, _ = _execute(tmp_path, monkeypatch, changed, InProcess(), resume=log, force=True,
                          json=str(tmp_path / "all.json"))  # fmt: skip
    order = [(r["point"]["n"], r["variant"])
             for r in json.loads((tmp_path / "all.json").read_text())["results"]]  # fmt: skip
    # The log's results at n=30 (no longer in the sweep) come first, in the log's order; then
    # the sweep's points, each with `wrong` (no longer a variant) first, then the sweep's
    # variant order (the log's `good` at n=10 after the fresh `fast`).
    assert order == [(30, "wrong"), (30, "good"), (10, "wrong"), (10, "fast"), (10, "good"),
                     (20, "fast"), (20, "good")]  # fmt: skip


def test_execute_on_the_device_given_with_an_empty_shard_refused_and_a_failed_start_closed(
    tmp_path, monkeypatch
):
    from gpubench.errors import EnvironmentProblem

    runner = InProcess()
    code, _, _ = _execute(tmp_path, monkeypatch, SWEEP, runner, device=3)
    assert code == 3 and runner.spread_device == 3
    with pytest.raises(ConfigError) as info:
        _execute(tmp_path, monkeypatch, SWEEP, InProcess(), session.Spread(shard=(5, 8)))
    assert str(info.value) == (f"{tmp_path / 's.yaml'}: --shard: shard 5/8 has no points (the "
                               "sweep has 2)")  # fmt: skip

    class NoCompiler(InProcess):
        def run(self, plan, previous=()):  # the background compile failed as a whole
            raise EnvironmentProblem("compiling the sweep's kernels failed: nvcc vanished")

    failing = NoCompiler()
    with pytest.raises(EnvironmentProblem):
        _execute(tmp_path, monkeypatch, SWEEP, failing)
    assert failing.calls[-1] == ("close", True)  # nothing was interrupted: a graceful stop


def test_execute_verbose_after_a_resume_times_only_the_fresh_results(tmp_path, monkeypatch):
    from gpubench.report import phases

    shown = []
    monkeypatch.setattr(phases, "share", lambda fresh, wall_s: shown.append((fresh, wall_s)) or {})
    monkeypatch.setattr(phases, "summary_line", lambda share: "summary")
    log = str(tmp_path / "r.jsonl")
    _execute(tmp_path, monkeypatch, SWEEP, InProcess(interrupt_after=2), jsonl=log)
    _execute(tmp_path, monkeypatch, SWEEP, InProcess(), resume=log, verbose=True)
    ((fresh, wall_s),) = shown
    assert [(r.point["n"], r.variant) for r in fresh] == [(10, "wrong"), (10, "good")]
    assert 0 < wall_s < 60


def test_execute_of_all_passing_results_writes_markdown_without_a_failure_note(
    tmp_path, monkeypatch
):
    import json

    _execute(tmp_path, monkeypatch, SWEEP.replace("[wrong, good]", "[good]"), InProcess(),
             markdown=str(tmp_path / "m.md"), json=str(tmp_path / "r.json"))  # fmt: skip
    md = (tmp_path / "m.md").read_text()
    created = json.loads((tmp_path / "r.json").read_text())["created"]
    assert "failed" not in md
    assert md.splitlines()[2].endswith(f" · {created[:10]}")  # the device line, dated


def test_execute_profiles_on_the_device_given_and_draws_the_timeline_file_asked_for(
    tmp_path, monkeypatch
):
    from rich.console import Console

    from gpubench.engine import profiling
    from gpubench.report import timeline

    profiled, shown = [], []
    monkeypatch.setattr(profiling, "profile_results", lambda *args: profiled.append(args))
    monkeypatch.setattr(timeline, "show", lambda *args: shown.append(args))
    _execute(tmp_path, monkeypatch, SWEEP, InProcess(), device=2, profile=True,
             timeline=str(tmp_path / "t.png"))  # fmt: skip
    ((_, _, _, device, note, _),) = profiled
    assert device == 2 and callable(note)  # the CLI's: a line on the error console
    ((_, console, path),) = shown
    assert isinstance(console, Console) and path == str(tmp_path / "t.png")


def test_execute_on_a_cluster_needs_no_pycuda_here_but_on_this_host_it_does(tmp_path, monkeypatch):
    import sys

    from gpubench import backends
    from gpubench.errors import EnvironmentProblem

    monkeypatch.setitem(sys.modules, "pycuda", None)  # as on a machine without it
    monkeypatch.setattr(backends, "selected", lambda name=None: name or "pycuda")
    runner = InProcess()
    good = SWEEP.replace("[wrong, good]", "[good]")
    code, _, _ = _execute(
        tmp_path, monkeypatch, good, runner, session.Spread(scheduler="tcp://h:1")
    )
    assert code == 0 and runner.made_for == [(0, SCALE_FILE, "pycuda")]
    with pytest.raises(EnvironmentProblem, match=r"^PyCUDA is not installed"):
        _execute(tmp_path, monkeypatch, good, InProcess())


def stderr_is_a_terminal(monkeypatch, answer: bool) -> None:
    """What the CLI sees of sys.stderr: a terminal (the progress bar's condition) or not."""

    terminal = SimpleNamespace(stderr=SimpleNamespace(isatty=lambda: answer))
    monkeypatch.setattr(outcome, "sys", terminal)


def test_on_a_terminal_the_bar_follows_the_sweep_and_the_lines_are_not_highlighted(
    tmp_path, monkeypatch
):
    stderr_is_a_terminal(monkeypatch, True)
    runner = InProcess()
    good = SWEEP.replace("[wrong, good]", "[good]")
    code, out, err = _execute(tmp_path, monkeypatch, good, runner, terminal=True, progress=True,
                              verbose=True)  # fmt: skip
    assert code == 0
    assert [type(o).__name__ for o in runner.observers] == ["Collect", "ProgressObserver"]
    assert "sweep" in err and "2/2" in err  # the bar, drawn on the error console
    # rich would colour the numbers of these lines: they are printed plain.
    compiled = next(line for line in err.splitlines() if "compiled 3 configuration(s)" in line)
    # Printed while the bar is drawn (compiling ends while measuring): above it, plain.
    assert compiled.removeprefix("\x1b[2K") == ("compiled 3 configuration(s) in 0.2 s: 2 new, 1 cached, 0 failed "
                        "(4 in parallel)")  # fmt: skip
    *_, wall, gpu = out.splitlines()
    assert wall.startswith("wall ") and gpu.startswith("the GPU: ")
    assert "\x1b" not in wall + gpu
    # Without --progress, or where stderr is no terminal, there is no bar.
    runner = InProcess()
    _, _, err = _execute(tmp_path, monkeypatch, good, runner, terminal=True)
    assert [type(o).__name__ for o in runner.observers] == ["Collect"] and "2/2" not in err
    stderr_is_a_terminal(monkeypatch, False)
    runner = InProcess()
    _execute(tmp_path, monkeypatch, good, runner, terminal=True, progress=True)
    assert [type(o).__name__ for o in runner.observers] == ["Collect"]


def test_an_interrupt_outside_the_main_thread_still_keeps_what_finished(tmp_path, monkeypatch):
    import threading

    found = []
    thread = threading.Thread(target=lambda: found.append(
        _execute(tmp_path, monkeypatch, SWEEP, InProcess(interrupt_after=2))))  # fmt: skip
    thread.start()
    thread.join(60)
    ((code, _, err),) = found  # signals cannot be set there: the run goes on without them
    assert code == 130 and err.splitlines()[-1] == "interrupted: kept 2 finished result(s)"


def test_verbose_draws_the_phases_table_of_the_fresh_results(tmp_path, monkeypatch):
    from gpubench.report import phases

    drawn = []
    monkeypatch.setattr(phases, "phases_table", lambda fresh: drawn.append(fresh) or "PHASES")
    _, out, _ = _execute(tmp_path, monkeypatch, SWEEP, InProcess(), verbose=True)
    ((fresh,),) = [drawn]
    assert [(r.point["n"], r.variant) for r in fresh] == [(30, "wrong"), (30, "good"),
                                                          (10, "wrong"), (10, "good")]  # fmt: skip
    assert out.splitlines()[-3] == "PHASES"  # then the wall line and the GPU's schedule


def test_the_table_shows_the_suite_s_resources_and_metrics(tmp_path, monkeypatch):
    from gpubench.load import registry
    from tests.fakes import ScaleSuite

    drawn = []
    from gpubench.report import results_table as module

    monkeypatch.setattr(module, "results_table", lambda results, **kw: drawn.append(kw) or "T")
    monkeypatch.setattr(ScaleSuite, "show_resources", "SHOW", raising=False)
    monkeypatch.setattr(ScaleSuite, "metrics", ("M",), raising=False)
    _execute(tmp_path, monkeypatch, SWEEP, InProcess())
    bench = registry.get(SCALE_FILE)
    assert (bench.show_resources, bench.metrics) == ("SHOW", ("M",))
    ((options,),) = [drawn]
    assert options["show_resources"] is bench.show_resources
    assert options["extra_metrics"] == bench.metrics and options["title"] == "scale"


def test_a_resumed_run_on_a_terminal_measures_only_what_is_missing(tmp_path, monkeypatch):
    import json

    log = str(tmp_path / "r.jsonl")
    _execute(tmp_path, monkeypatch, SWEEP, InProcess(interrupt_after=2), jsonl=log)
    stderr_is_a_terminal(monkeypatch, True)
    _execute(tmp_path, monkeypatch, SWEEP, InProcess(), terminal=True, progress=True, resume=log)
    logged = [json.loads(line) for line in Path(log).read_text().splitlines()]
    assert [r["kind"] for r in logged].count("result") == 4


def test_a_resumed_log_of_one_sample_results_renders(tmp_path, monkeypatch):
    # One sample: the noise is infinite, written as null; the resumed table shows it blank.
    one = SWEEP.replace("min_samples: 2, max_samples: 3", "min_samples: 1, max_samples: 1")
    log = str(tmp_path / "r.jsonl")
    _execute(tmp_path, monkeypatch, one, InProcess(interrupt_after=2), jsonl=log)
    code, out, _ = _execute(tmp_path, monkeypatch, one, InProcess(), resume=log)
    assert code == 3 and out.count("good") == 2 and "inf" not in out


def test_an_interrupted_measure_gives_the_caller_its_signal_handlers_back(tmp_path, monkeypatch):
    import signal

    monkeypatch.setenv("GPUBENCH_BACKEND", "tests.fakes:FakeBackend")
    monkeypatch.chdir(tmp_path)
    runner = InProcess(interrupt_after=2)
    monkeypatch.setattr(session.Spread, "runner", lambda self, suite, backend: runner)
    (tmp_path / "s.yaml").write_text(SWEEP)
    mine = signal.getsignal(signal.SIGINT)
    spec = config.load(tmp_path / "s.yaml")
    outcome = session.measure(spec, outputs.OutputRequest(), session.Spread())
    assert outcome.interrupted and len(outcome.result_set.results) == 2
    assert signal.getsignal(signal.SIGINT) is mine  # a library caller's Ctrl-C works again
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_the_results_log_is_an_observer_the_caller_may_leave_out(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_BACKEND", "tests.fakes:FakeBackend")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(session.Spread, "runner", lambda self, suite, backend: InProcess())
    (tmp_path / "s.yaml").write_text(SWEEP)
    spec = config.load(tmp_path / "s.yaml")
    request = outputs.OutputRequest(jsonl="log.jsonl")
    quiet = session.measure(spec, request, session.Spread(), observers=())
    assert not (tmp_path / "log.jsonl").exists() and quiet.result_set.results
    logged = session.measure(spec, request, session.Spread())  # the default: the log
    lines = (tmp_path / "log.jsonl").read_text().splitlines()
    assert '"kind": "header"' in lines[0]
    assert sum('"kind": "result"' in line for line in lines) == len(logged.result_set.results)
