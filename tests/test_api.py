"""The library API returns data: the commands' work without the command line."""

from __future__ import annotations

import pytest

from gpubench import api
from gpubench.errors import ConfigError
from gpubench.load import config, registry
from gpubench.model.results import Result, ResultSet, Status, save_json


def _set(*medians: float) -> ResultSet:
    results = [Result(suite="s", variant="a", point={"n": i}, status=Status.OK,
                      summary={"median_ms": m, "rel_noise": 0.01}) for i, m in enumerate(medians)]  # fmt: skip
    return ResultSet(suite="s", environment={"gpu_uuid": "GPU-1"}, spec={}, results=results)


def test_compare_returns_the_rows_counts_and_the_verdict(tmp_path):
    save_json(_set(1.0, 1.0, 1.0), tmp_path / "a.json")
    save_json(_set(1.0, 2.0), tmp_path / "b.json")
    found = api.compare(str(tmp_path / "a.json"), str(tmp_path / "b.json"), threshold=0.05)
    assert (found.compared, found.regressions, found.unmatched, found.failed) == (2, 1, 1, True)
    assert [r.verdict for r in found.rows] == ["same", "slower", "only in base"]
    assert found.varying == ["n"] and found.other_gpu is None


def test_compare_refuses_bad_settings(tmp_path):
    save_json(_set(1.0), tmp_path / "a.json")
    with pytest.raises(ConfigError, match="finite"):
        api.compare(str(tmp_path / "a.json"), str(tmp_path / "a.json"), threshold=float("nan"))
    with pytest.raises(ConfigError, match="SUITE=FRACTION"):
        api.parse_suite_thresholds(["transpose"])
    assert api.parse_suite_thresholds(["transpose=0.1"]) == {"transpose": 0.1}


def test_dry_run_lists_the_points_without_a_gpu():
    plan = api.dry_run(config.load(config.find("smoke")))
    assert plan.points and len(plan.shown) == len(plan.points) <= api.DRY_RUN_LISTED
    assert plan.varying and plan.builds >= 1


def test_roofline_groups_results_by_gpu_and_says_when_ceilings_are_theoretical(tmp_path):
    env = {"gpu_uuid": "GPU-9", "device": {"name": "Fake", "peak_bandwidth_gbps": 1000.0,
                                           "peak_fp32_gflops": 10000.0}}  # fmt: skip
    result = Result(suite="s", variant="a", point={"n": 1}, status=Status.OK,
                    summary={"median_ms": 1.0},
                    work={"bytes_moved": 10**9, "flops": 10**9, "elements": 0})  # fmt: skip
    save_json(ResultSet(suite="s", environment=env, spec={}, results=[result]), tmp_path / "r.json")
    (group,) = api.roofline([str(tmp_path / "r.json")])
    assert group.theoretical_only and len(group.placed) == 1
    assert group.placed[0].gbps == pytest.approx(1000.0)


def _grid(**environment) -> ResultSet:
    results = [Result("transpose", v, {"size": s, "tile": t, "rows": r}, Status.OK,
                      summary={"median_ms": 1.0 + s + t + r})
               for v in ("naive", "padded") for s in (1, 2) for t in (16, 32) for r in (4, 8)]  # fmt: skip
    return ResultSet(suite="transpose", environment=environment, spec={}, results=results)


def test_plot_draws_the_chart_it_built_under_a_title_of_suite_metric_axis_and_gpu(
    tmp_path, monkeypatch
):
    from tests.snapshots import SavedFigures

    saved = SavedFigures.instead_of_savefig(monkeypatch)
    save_json(_grid(device={"name": "Fake GPU"}), tmp_path / "r.json")
    save_json(_grid(), tmp_path / "bare.json")
    chart = api.plot(str(tmp_path / "r.json"), str(tmp_path / "r.png"))
    assert (chart.x, chart.y.key, chart.by, chart.facet) == ("size", "time_ms", "variant", None)
    assert chart.best_over == ["tile", "rows"]
    chart = api.plot(str(tmp_path / "bare.json"), str(tmp_path / "b.svg"), x="tile", y="time_ms",
                     by="rows", facet="size")  # fmt: skip
    assert (chart.x, chart.by, chart.facet, chart.best_over) == ("tile", "rows", "size", [])
    titles = [text.splitlines()[0].split("suptitle=")[1] for _, text in saved.saved]
    assert [path for path, _ in saved.saved] == [str(tmp_path / "r.png"), str(tmp_path / "b.svg")]
    assert titles == [
        "'transpose: median vs size · Fake GPU\\n(each line: the best over tile, rows)'",
        "'transpose: median vs tile'",
    ]


def _sweep(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return config.load(str(path))


def test_a_dry_run_of_many_points_shows_both_ends_and_each_axis_range(tmp_path):
    spec = _sweep(tmp_path, "many.yaml", "suite: transpose\nparams:\n  size: [32, 64, 96, 128, "
                  "160, 192, 224, 256, 288, 320, 352]\n  tile: [16, 32]\n  block_rows: [4, 8, 16]\n"
                  "  dtype: float32\n")  # fmt: skip
    plan = api.dry_run(spec)
    assert len(plan.points) == 66 > api.DRY_RUN_LISTED
    assert [n for n, _ in plan.shown] == [1, 2, 3, 4, 5, 62, 63, 64, 65, 66]
    assert [p for _, p in plan.shown] == [
        plan.points[i] for i in (0, 1, 2, 3, 4, 61, 62, 63, 64, 65)
    ]
    axes = {name: (count, low, high) for name, count, low, high in plan.axes}
    assert axes["size"] == axes["rows"] == axes["cols"] == (11, 32, 352)
    assert axes["tile"] == (2, 16, 32)
    assert axes["block_rows"] == (3, 4, 16) and axes["dtype"] == (1, "float32", "float32")
    assert plan.varying == ["size", "rows", "cols", "tile", "block_rows"] and plan.fixed == {}
    assert plan.builds == 2 * 3 * 1  # tile and block_rows compile in; size does not


def test_a_dry_run_of_fifty_points_lists_them_all_with_the_fixed_values(tmp_path):
    sizes = ", ".join(str(32 * (i + 1)) for i in range(25))
    spec = _sweep(tmp_path, "fifty.yaml", f"suite: transpose\nparams:\n  size: [{sizes}]\n"
                  "  tile: [16, 32]\n  block_rows: 8\n  dtype: float64\n")  # fmt: skip
    plan = api.dry_run(spec)
    assert len(plan.points) == api.DRY_RUN_LISTED == 50
    assert [n for n, _ in plan.shown] == list(range(1, 51)) and plan.axes == []
    assert plan.varying == ["size", "rows", "cols", "tile"]
    assert plan.fixed == {"block_rows": 8, "dtype": "float64"}
    one = api.dry_run(_sweep(tmp_path, "one.yaml", "suite: transpose\nparams:\n  size: 64\n"))
    assert len(one.points) == 1 and one.varying == list(one.points[0])


def test_roofline_takes_each_gpu_once_across_files_and_refuses_a_ceilings_record(
    tmp_path, monkeypatch
):
    from gpubench.store import ceilings as store

    monkeypatch.setattr(store, "load_for", lambda uuid: None)  # no stored ceilings here

    def results_file(name: str, uuid: str, n: int, created: str) -> str:
        env = {"gpu_uuid": uuid, "device": {"name": uuid, "peak_bandwidth_gbps": 1000.0,
                                            "peak_fp32_gflops": 10000.0}}  # fmt: skip
        result = Result(suite="s", variant="a", point={"n": n}, status=Status.OK,
                        summary={"median_ms": 1.0},
                        work={"bytes_moved": 10**9, "flops": 10**9, "elements": 0})  # fmt: skip
        rs = ResultSet(suite="s", environment=env, spec={}, results=[result], created=created)
        save_json(rs, tmp_path / name)
        return str(tmp_path / name)

    files = [results_file("a.json", "GPU-A", 1, "2026-01-01"),
             results_file("b.json", "GPU-B", 2, "2026-02-02"),
             results_file("c.json", "GPU-A", 3, "2026-03-03")]  # fmt: skip
    groups = api.roofline(files)
    assert [g.environment["gpu_uuid"] for g in groups] == ["GPU-A", "GPU-B"]
    assert [g.created for g in groups] == ["2026-01-01", "2026-02-02"]
    assert [len(g.placed) for g in groups] == [2, 1]
    assert [g.theoretical_only for g in groups] == [True, True]
    record = store.CeilingsRecord(gpu_uuid="GPU-A", gpu_name="G", measured={"fp32_gflops": 5000.0},
                                  theoretical={})  # fmt: skip
    ceilings_file = store.save(record, tmp_path / "ceil.json")
    (chosen,) = api.roofline(files[:1], str(ceilings_file))
    assert chosen.theoretical_only is False and chosen.record.measured == {"fp32_gflops": 5000.0}
    with pytest.raises(ConfigError) as info:
        api.roofline([files[0], str(ceilings_file)])
    assert str(info.value) == (f"{ceilings_file}: is a ceilings record (gpubench ceilings "
                               "--json): give it with --ceilings")  # fmt: skip


@pytest.mark.parametrize(("items", "parsed"), [
    ([], {}), (["transpose=0.1", "matmul=0"], {"transpose": 0.1, "matmul": 0.0}),
    (["a=0.5", "a=0.25"], {"a": 0.25}),
])  # fmt: skip
def test_suite_thresholds_parsed(items, parsed):
    assert api.parse_suite_thresholds(items) == parsed


@pytest.mark.parametrize("item", ["transpose", "=0.1", "t=x", "t=-0.1", "t=inf", "t=nan",
                                  "t=0.1=0.2", "t=1e999"])  # fmt: skip
def test_each_bad_suite_threshold_is_one_line(item):
    with pytest.raises(ConfigError) as info:
        api.parse_suite_thresholds(["ok=0.1", item])
    assert str(info.value) == (f"--suite-threshold: expected SUITE=FRACTION such as "
                               f"transpose=0.10, got {item!r}")  # fmt: skip


def test_compare_s_refusals_in_their_words(tmp_path):
    save_json(_set(1.0), tmp_path / "a.json")
    a = str(tmp_path / "a.json")
    for threshold in (float("nan"), float("inf"), -0.01):
        with pytest.raises(ConfigError) as info:
            api.compare(a, a, threshold=threshold)
        assert str(info.value) == f"--threshold: expected a finite number >= 0, got {threshold!r}"
    assert api.compare(a, a, threshold=0.0).compared == 1
    with pytest.raises(ConfigError) as info:
        api.compare(a, a, metric="gbsp")
    from gpubench.model import metrics

    known = ", ".join(sorted(m.key for m in metrics.CATALOG))
    assert str(info.value) == (f"--metric: unknown metric 'gbsp' (did you mean 'gbps'?); known: "
                               f"{known}")  # fmt: skip
    other = _set(1.0)
    for r in other.results:
        r.suite = "t"
    save_json(other, tmp_path / "t.json")
    with pytest.raises(ConfigError) as info:
        api.compare(a, str(tmp_path / "t.json"))
    assert str(info.value) == (f"compare: nothing to compare: no result of {a} has a partner in "
                               f"{tmp_path / 't.json'} (suites s against t)")  # fmt: skip


def test_compare_by_a_metric_only_the_files_carry_and_with_a_suite_threshold(tmp_path):
    base, new = _set(1.0, 1.0), _set(1.0, 1.0)
    for r, value in zip(base.results + new.results, (10.0, 10.0, 10.0, 5.0), strict=True):
        r.metrics = {"my_rate": value}
    save_json(base, tmp_path / "a.json")
    save_json(new, tmp_path / "b.json")
    found = api.compare(str(tmp_path / "a.json"), str(tmp_path / "b.json"), metric="my_rate")
    assert (found.metric.key, found.metric.header, found.metric.unit) == ("my_rate", "my_rate", "")
    assert [r.verdict for r in found.rows] == ["same", "worse"]  # higher is better: 10 -> 5
    assert found.varying == ["n"]
    loose = api.compare(str(tmp_path / "a.json"), str(tmp_path / "b.json"), metric="my_rate",
                        suite_thresholds={"s": 0.6})  # fmt: skip
    assert [r.verdict for r in loose.rows] == ["same", "same"]
    single = _set(1.0)
    save_json(single, tmp_path / "one.json")
    assert api.compare(str(tmp_path / "one.json"), str(tmp_path / "one.json")).varying == []


# -- ceilings: the stored record, or a run of the suite (session stood in for) ---------------------
class _Session:
    """Stands in for gpubench.engine.session: probe_environment and measure, recorded."""

    def __init__(self, uuid: str | None = "GPU-test-1", interrupted: bool = False):
        self.uuid, self.interrupted, self.calls = uuid, interrupted, []

    def probe_environment(self, suite, device, backend=None):
        self.calls.append(("probe", suite, device))
        return {"gpu_uuid": self.uuid}

    def measure(self, spec, request, spread, note=None, observers=()):
        from gpubench.engine.session import SweepOutcome
        from tests.store.test_ceilings import ENVIRONMENT, MEASURED

        self.calls.append(("measure", spec.suite, spec.source, request, spread.device, note))
        environment = {**ENVIRONMENT, "gpu_uuid": self.uuid}
        measured = ResultSet(
            suite="ceilings",
            environment=environment,
            spec={},
            results=MEASURED,
            created="2026-11-24T10:00:00",
        )
        return SweepOutcome(None, measured, None, MEASURED, self.interrupted, 1.0)


@pytest.fixture
def stand_in_session(tmp_path, monkeypatch):
    from gpubench.engine import session

    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path / "cache"))

    def install(fake: _Session) -> _Session:
        monkeypatch.setattr(session, "probe_environment", fake.probe_environment)
        monkeypatch.setattr(session, "measure", fake.measure)
        return fake

    return install


def test_ceilings_measures_stores_and_then_reads_the_stored_record(stand_in_session, tmp_path):
    from gpubench.store import ceilings as store
    from gpubench.store.outputs import OutputRequest

    fake = stand_in_session(_Session())
    notes = []
    outcome = api.ceilings(2, remeasure=False, note=notes.append)
    assert [c[0] for c in fake.calls] == ["probe", "measure"]
    assert fake.calls[0] == ("probe", "ceilings", 2)
    _, suite, source, request, device, note = fake.calls[1]
    assert (suite, source, device, note) == ("ceilings", "gpubench ceilings", 2, notes.append)
    assert request == OutputRequest()  # no log, no files: the record is the store's
    stored = tmp_path / "cache" / "ceilings" / "GPU-test-1.json"
    assert outcome.sweep.result_set.suite == "ceilings" and outcome.measured_earlier is False
    assert outcome.stored_in == str(stored) and stored.is_file()
    assert outcome.record.measured["dram_read_gbps"] == 3100.0
    assert (
        outcome.record.gpu_uuid == "GPU-test-1"
        and outcome.record.measured_at == "2026-11-24T10:00:00"
    )
    assert store.load_for("GPU-test-1").measured == outcome.record.measured

    fake.calls.clear()
    again = api.ceilings(2, remeasure=False)
    assert [c[0] for c in fake.calls] == ["probe"]  # read back, not measured
    assert again.measured_earlier is True and again.sweep is None and again.stored_in is None
    assert again.record.measured == outcome.record.measured

    fake.calls.clear()
    fresh = api.ceilings(0, remeasure=True)
    assert [c[0] for c in fake.calls] == ["measure"]  # --remeasure does not even look
    assert fresh.measured_earlier is False and fresh.stored_in == str(stored)


def test_interrupted_ceilings_leave_no_record(stand_in_session, tmp_path):
    stand_in_session(_Session(interrupted=True))
    outcome = api.ceilings(0, remeasure=False)
    assert outcome.record is None and outcome.sweep.interrupted
    assert not (tmp_path / "cache" / "ceilings").exists()


def test_ceilings_of_a_gpu_without_a_uuid_are_not_stored(stand_in_session, tmp_path):
    stand_in_session(_Session(uuid=None))
    outcome = api.ceilings(0, remeasure=False)
    assert outcome.stored_in is None and not outcome.sweep.interrupted
    assert outcome.record.measured["fp32_gflops"] == 65000.0
    assert not (tmp_path / "cache" / "ceilings").exists()


# -- compare, dry run, plot and inspect: the remaining branches ------------------------------------
def test_compare_names_none_for_a_side_without_results_and_joins_several_suites(tmp_path):
    empty = ResultSet(suite="s", environment={}, spec={}, results=[])
    two = _set(1.0)
    extra = Result(suite="u", variant="a", point={"n": 0}, status=Status.OK,
                   summary={"median_ms": 1.0, "rel_noise": 0.01})  # fmt: skip
    two.results.append(extra)
    save_json(empty, tmp_path / "e.json")
    save_json(two, tmp_path / "two.json")
    with pytest.raises(ConfigError) as info:
        api.compare(str(tmp_path / "e.json"), str(tmp_path / "two.json"))
    assert str(info.value).endswith("(suites none against s, u)")
    with pytest.raises(ConfigError) as info:
        api.compare(str(tmp_path / "two.json"), str(tmp_path / "e.json"))
    assert str(info.value).endswith("(suites s, u against none)")


def test_a_dry_run_of_a_sweep_listed_from_high_to_low_gives_each_axis_its_range(tmp_path):
    sizes = ", ".join(str(32 * (60 - i)) for i in range(60))  # descending
    spec = _sweep(tmp_path, "down.yaml", f"suite: transpose\nparams:\n  size: [{sizes}]\n")
    plan = api.dry_run(spec)
    axes = {name: (count, low, high) for name, count, low, high in plan.axes}
    assert axes["size"] == (60, 32, 1920)


def test_a_dry_run_of_one_shard_plans_its_points_only(tmp_path):
    spec = _sweep(tmp_path, "s.yaml", "suite: transpose\nparams:\n  size: [32, 64, 96, 128, 160]\n")
    plan = api.dry_run(spec, shard=(1, 2))
    assert [p["size"] for p in plan.points] == [64, 128]
    with pytest.raises(ConfigError) as info:
        api.dry_run(spec, shard=(7, 8))
    assert (
        str(info.value)
        == f"{tmp_path / 's.yaml'}: --shard: shard 7/8 has no points (the sweep has 5)"
    )


def test_a_dry_run_of_a_kernel_file_reports_its_first_problem_with_the_file(tmp_path):
    from tests.kernelfile.test_benchmark import SCALE, write

    path = write(tmp_path, SCALE.replace("[good, fast, skips_last, wrong]", "[good, absent, gone]"))
    with pytest.raises(ConfigError) as info:
        api.dry_run(config.load(path))
    assert str(info.value) == (f"{path}: kernel.variants: 'absent' does not appear in k.cu (an extern \"C\" "
                               "__global__ function of that name)")  # fmt: skip
    (tmp_path / "good").mkdir()  # another path: a kernel file's suite is cached by its path
    good = api.dry_run(config.load(write(tmp_path / "good", SCALE)))
    assert len(good.points) == 4 and good.builds == 2  # block compiles in, n does not


def test_a_suite_without_kernels_has_no_builds():
    plan = api.dry_run(config.spec_from_mapping({"suite": "transfer"}, "t.yaml"))
    assert plan.builds == 0 and plan.points


def test_plot_titles_several_suites_and_passes_every_choice_to_the_chart(tmp_path, monkeypatch):
    from gpubench.report import plot as plotting
    from tests.snapshots import SavedFigures

    saved = SavedFigures.instead_of_savefig(monkeypatch)
    grid = _grid(device={"model": "no name"})
    for r in grid.results[:8]:
        r.suite = "copy"
    save_json(grid, tmp_path / "r.json")
    built = []
    real_build = plotting.build
    monkeypatch.setattr(plotting, "build", lambda *a: built.append(a[1:]) or real_build(*a))
    api.plot(str(tmp_path / "r.json"), str(tmp_path / "r.png"), x="tile", y="time_ms", by="variant")
    assert built == [("tile", "time_ms", "variant", None)]
    (title,) = [text.splitlines()[0].split("suptitle=")[1] for _, text in saved.saved]
    assert title.startswith("'copy, transpose: median vs tile\\n")


def test_inspect_compiles_the_suite_s_source_with_its_options_and_filters_the_kernels(
    monkeypatch,
):
    from types import SimpleNamespace

    from gpubench.engine import inspection
    from gpubench.load import registry

    calls = []

    def compiled(source, options, include_dirs, arch, want_sass=True):
        calls.append((source.name, options, include_dirs, arch, want_sass))
        kernels = [SimpleNamespace(name=n) for n in ("exp_standard", "exp_intrinsic", "sin_fast")]
        return SimpleNamespace(kernels=kernels)

    monkeypatch.setattr(inspection, "inspect", compiled)
    bench = registry.get("intrinsics")
    found = api.inspect(bench, "intrinsics", {"fast_math": True, "n": None}, "sm_90",
                        ("sin_fast", "exp_standard"), want_sass=False)  # fmt: skip
    source = found.source
    assert calls == [("intrinsics.cu", ["--use_fast_math"], [str(source.parent)], "sm_90", False)]
    assert [k.name for k in found.shown] == ["exp_standard", "sin_fast"]  # the source's order
    assert found.point["fast_math"] is True and found.point["n"] == bench.defaults()["n"]
    every = api.inspect(bench, "intrinsics", {}, "sm_80", (), want_sass=True)
    assert calls[-1][1:] == ([], [str(source.parent)], "sm_80", True)
    assert [k.name for k in every.shown] == ["exp_standard", "exp_intrinsic", "sin_fast"]
    with pytest.raises(ConfigError) as info:
        api.inspect(bench, "intrinsics", {}, "sm_90", ("exp_standrd",), want_sass=False)
    assert str(info.value) == ("--variant: no kernel 'exp_standrd' in intrinsics.cu (did you mean "
                               "'exp_standard'?); kernels: exp_standard, exp_intrinsic, sin_fast")  # fmt: skip
    with pytest.raises(ConfigError) as info:
        api.inspect(bench, "intrinsics", {"n": 0}, "sm_90", (), want_sass=False)
    assert str(info.value).startswith("command line: params")


def test_a_dry_run_axis_of_values_that_do_not_order_spans_the_first_and_last_point():
    from types import SimpleNamespace

    from gpubench.load import registry

    base = config.spec_from_mapping({"suite": "transpose"}, "t.yaml").points(
        registry.get("transpose")
    )[0]
    labels = [None, *range(1, 58), None, 7]  # None beside numbers: min() cannot order them
    points = [{**base, "label": label} for label in labels]
    spec = SimpleNamespace(
        bench=registry.get("transpose"), source="t.yaml", points=lambda bench=None: points
    )
    plan = api.dry_run(spec)
    axes = {name: (count, low, high) for name, count, low, high in plan.axes}
    assert axes["label"] == (58, None, 7) and axes["size"] == (1, base["size"], base["size"])


# -- run and sweep: the engine's outcome, returned ---------------------------------------------
def test_run_and_sweep_return_the_engine_s_outcome_and_show_nothing(monkeypatch):
    from gpubench.engine import session
    from gpubench.store.outputs import OutputRequest, results_log

    calls = []

    def measure(spec, request, spread, note, observers):
        calls.append((spec, request, spread, note, observers))
        return "OUTCOME"

    monkeypatch.setattr(session, "measure", measure)
    outcome = api.run("transpose", {"size": 64}, variants=["copy"], timing={"min_samples": 3})
    assert outcome == "OUTCOME"
    ((spec, request, spread, note, observers),) = calls
    assert (spec.suite, spec.variants, spec.source) == ("transpose", ("copy",), "api.run")
    bench = registry.get("transpose")
    assert spec.timing.min_samples == 3 and [p["size"] for p in spec.points(bench)] == [64]
    assert request == OutputRequest() and spread == session.Spread()
    assert note is api.quiet and observers == (results_log,)  # the results log only
    calls.clear()
    notes = []
    api.sweep(spec, OutputRequest(jsonl="log.jsonl"), session.Spread(device=1), notes.append)
    ((_, request, spread, note, _),) = calls
    assert request.jsonl == "log.jsonl" and spread.device == 1 and note == notes.append


def test_run_end_to_end_on_the_cpu_stand_in_returns_checked_results(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_BACKEND", "tests.fakes:FakeBackend")
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path / "cache"))
    notes = []
    outcome = api.run(
        "tests/suites/scale.py",
        {"n": 100},
        variants=["good", "wrong"],
        timing={"min_samples": 2, "max_samples": 3, "min_time_s": 0},
        note=notes.append,
    )
    statuses = {r.variant: str(r.status) for r in outcome.result_set.results}
    assert statuses == {"good": "ok", "wrong": "incorrect"}
    assert not outcome.interrupted and outcome.files.log is None  # no log asked for
    assert [r.variant for r in outcome.fresh] == ["good", "wrong"]
    from gpubench.report.notices import text

    assert text(notes[0]).startswith("Fake GPU (sm_90, 4 SMs")
    assert text(notes[1]).startswith("compiled 1")
