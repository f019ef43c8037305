"""A sweep's plan without a GPU: the fingerprint a resume is checked against, what differs
from a log, the shards of a sweep, the order points run in, the notes for the caller, and the
line naming the GPU."""

from __future__ import annotations

import pytest

from gpubench.engine import kernels, planning
from gpubench.engine.runner import Plan
from gpubench.errors import ConfigError
from gpubench.load import config, registry
from gpubench.model.notices import BackendChosen
from gpubench.report import notices
from gpubench.store import outputs
from tests.kernelfile.test_benchmark import SCALE, write


def spec_of(**keys):
    return config.spec_from_mapping(
        {"suite": "transpose", "params": {"size": [64]}, "variants": ["copy", "naive"], **keys},
        "s.yaml",
    )


ENV = {"device": {"name": "G"}, "gpu_uuid": "U"}


def stamp(spec, points, environment):
    return planning.fingerprint(planning.identity(spec.bench, spec.to_dict(), points), environment)


def test_the_fingerprint_holds_exactly_what_a_resume_must_match():
    spec = spec_of()
    points = spec.points(registry.get("transpose"))
    assert stamp(spec, points, ENV) == {
        "suite": "transpose",
        "kernel_source_sha256": kernels.source_digest(registry.get("transpose")),
        "gpu_name": "G",
        "gpu_uuid": "U",
        "points": [
            '{"block_rows": 8, "cols": 64, "dtype": "float32", "rows": 64, "size": 64, "tile": 32}'
        ],
        "variants": ["copy", "naive"],
        "baseline": "naive",
        "timing": spec.timing.to_dict(),
    }


def test_several_gpus_are_named_by_their_sorted_uuids_and_one_is_not():
    spec = spec_of()
    points = spec.points(registry.get("transpose"))
    two = {**ENV, "devices": [{"uuid": "b"}, {"uuid": "a"}]}
    assert stamp(spec, points, two)["gpu_uuids"] == ["a", "b"]
    assert "gpu_uuids" not in stamp(spec, points, {**ENV, "devices": [{"uuid": "a"}]})
    assert stamp(spec, points, {})["gpu_name"] is None


def test_a_kernel_file_s_declarations_are_part_of_its_fingerprint(tmp_path):
    path = write(tmp_path, SCALE)
    spec = config.load(path)
    bench = registry.get(spec.suite_ref)
    stamped = stamp(spec, spec.points(), ENV)
    assert stamped["declarations_sha256"] == bench.declaration_digest() and stamped["suite"] == "k"


def test_differences_name_each_changed_key_once_in_order():
    before = {"suite": "a", "points": ["p1", "p2"], "gpu_uuid": "U", "timing": {"warmup": 3}}
    now = {"suite": "a", "points": ["p2", "p3", "p4"], "gpu_uuid": "V", "variants": ["x"]}
    assert planning.differences(before, now) == [
        "gpu_uuid: 'U' in the log, 'V' now",
        "points: 1 no longer in the sweep, 2 new",
        "timing: {'warmup': 3} in the log, None now",
        "variants: None in the log, ['x'] now",
    ]
    assert planning.differences(before, dict(before)) == []
    assert planning.differences({}, {"points": ["p"]}) == [
        "points: 0 no longer in the sweep, 1 new"
    ]


def test_a_changed_sweep_blocks_a_resume_unless_forced():
    plan = outputs.OutputPlan(
        json=None, csv=None, log="r.jsonl", resume=True, force=False, progress=False, timeline=None
    )
    with pytest.raises(ConfigError) as info:
        planning.check_resumable({"fingerprint": {"suite": "a"}}, {"suite": "b"}, plan)
    assert str(info.value) == (
        "r.jsonl: the sweep, the kernel source or the GPU differ from the "
        "log; use --force to resume anyway: suite: 'a' in the log, 'b' now"
    )
    planning.check_resumable({"fingerprint": {"suite": "a"}}, {"suite": "a"}, plan)
    forced = outputs.OutputPlan(
        json=None, csv=None, log="r.jsonl", resume=True, force=True, progress=False, timeline=None
    )
    planning.check_resumable({}, {"suite": "b"}, forced)


@pytest.mark.parametrize(
    ("shard", "taken"),
    [
        (None, [0, 1, 2, 3, 4]),
        ((0, 1), [0, 1, 2, 3, 4]),
        ((0, 2), [0, 2, 4]),
        ((1, 2), [1, 3]),
        ((4, 5), [4]),
    ],
)
def test_a_shard_takes_every_nth_point_from_its_own(shard, taken):
    points = [{"i": i} for i in range(5)]
    assert [p["i"] for p in planning.shard_points(points, shard, "s.yaml")] == taken


def test_a_shard_without_points_is_one_line():
    with pytest.raises(ConfigError) as info:
        planning.shard_points([{"i": 0}, {"i": 1}], (2, 3), "s.yaml")
    assert str(info.value) == "s.yaml: --shard: shard 2/3 has no points (the sweep has 2)"


def _announced(environment, already=0):
    spec = config.spec_from_mapping(
        {
            "suite": "transpose",
            "params": {"size": [64, 96]},
            "variants": ["copy", "naive", "padded"],
        },
        "s.yaml",
    )
    files = outputs.OutputPlan(
        None, None, "r.jsonl" if already else None, bool(already), False, False, None
    )
    plan = planning.SweepPlan(
        bench=spec.bench,
        suite="transpose",
        backend="fake",
        points=[{}, {}],
        run=Plan(spec.bench, [{}, {}], spec.variants, spec.baseline, spec.timing),
        files=files,
        record=spec.to_dict(),
        previous_header={},
        previous=[None] * already,
    )
    return notices.text(plan.starting(environment))


def test_the_announcement_names_the_gpus_their_models_and_a_resumption():
    dev = {"name": "G", "arch": "sm_90", "sm_count": 4}
    assert _announced({"device": {**dev, "peak_bandwidth_gbps": 3352.3}}) == (
        "G (sm_90, 4 SMs, peak DRAM 3,352 GB/s) · 2 point(s) × 3 variant(s)"
    )
    two = [{"name": "G"}, {"name": "G"}]
    assert _announced({"device": dev, "devices": two}) == (
        "G (sm_90, 4 SMs, peak DRAM unknown) · 2 point(s) × 3 variant(s) · on 2 GPUs"
    )
    mixed = [{"name": "G"}, {"name": "H"}, {"name": "G"}]
    assert _announced({"device": dev, "devices": mixed}, already=5) == (
        "G (sm_90, 4 SMs, peak DRAM unknown) · 2 point(s) × 3 variant(s) · on 3 GPUs of 2 "
        "models · resuming: 5 result(s) already in r.jsonl"
    )
    assert _announced({"device": dev, "devices": two[:1]}).endswith("3 variant(s)")


def _planned(tmp_path, monkeypatch, **keys):
    monkeypatch.setenv("GPUBENCH_BACKEND", "tests.fakes:FakeBackend")
    monkeypatch.chdir(tmp_path)
    return planning.plan_sweep(spec_of(**keys), outputs.OutputRequest())


def test_the_points_run_by_problem_and_the_table_keeps_the_sweep_s_order(tmp_path, monkeypatch):
    plan = _planned(tmp_path, monkeypatch, params={"size": [64, 96], "tile": [16, 32]})
    assert [(p["size"], p["tile"]) for p in plan.points] == [(64, 16), (64, 32), (96, 16), (96, 32)]
    assert [(p["size"], p["tile"]) for p in plan.run.points] == [
        (96, 16),
        (96, 32),
        (64, 16),
        (64, 32),
    ]
    assert plan.run.variants == ("copy", "naive") and plan.bench.name == "transpose"
    assert plan.suite == "transpose" and plan.backend == "tests.fakes:FakeBackend"
    assert plan.record == spec_of(params={"size": [64, 96], "tile": [16, 32]}).to_dict()


def test_a_plan_s_fingerprint_is_its_spec_s_with_the_gpu_and_the_shard(tmp_path, monkeypatch):
    plan = _planned(tmp_path, monkeypatch)
    spec = spec_of()
    assert plan.fingerprint(ENV) == stamp(spec, spec.points(), ENV)
    sharded = planning.SweepPlan(**{**plan.__dict__, "shard": (0, 2)})
    assert sharded.fingerprint(ENV) == {**stamp(spec, spec.points(), ENV), "shard": "0/2"}


def test_the_plan_says_what_the_caller_should_hear(tmp_path, monkeypatch):
    from gpubench import backends

    monkeypatch.setattr(backends, "chosen_automatically", lambda name: True)
    assert _planned(tmp_path, monkeypatch).notes == (BackendChosen("tests.fakes:FakeBackend"),)
    monkeypatch.setattr(backends, "chosen_automatically", lambda name: False)
    assert _planned(tmp_path, monkeypatch).notes == ()


def test_a_plan_s_result_set_and_log_header_carry_the_record(tmp_path, monkeypatch):
    plan = _planned(tmp_path, monkeypatch)
    result_set = plan.result_set(ENV, {"compiled": 1})
    assert (result_set.suite, result_set.spec, result_set.compile_report) == (
        "transpose",
        plan.record,
        {"compiled": 1},
    )
    assert result_set.results == [] and result_set.environment == ENV
    seed = plan.run.run_seed
    assert isinstance(seed, int) and 0 <= seed < 2**63
    assert plan.log_header({"s": 1}, ENV) == {
        "fingerprint": {"s": 1},
        "run_seed": seed,
        "suite": "transpose",
        "spec": plan.record,
        "environment": ENV,
    }


def test_a_resumed_plan_compiles_only_the_builds_of_points_with_results_left(tmp_path, monkeypatch):
    from dataclasses import replace
    from types import SimpleNamespace

    plan = _planned(tmp_path, monkeypatch, params={"size": [64, 96, 128]})
    assert plan.to_compile is plan.run  # nothing resumed: every point
    first, second, _ = plan.points
    logged = [SimpleNamespace(point=first, variant=v) for v in ("copy", "naive")]
    logged.append(SimpleNamespace(point=second, variant="copy"))  # `naive` still to run
    resumed = replace(plan, previous=logged)
    assert [p["size"] for p in resumed.to_compile.points] == [128, 96]  # the run's order
    assert resumed.to_compile.variants == plan.run.variants


def test_the_run_time_knobs_a_sweep_file_tunes_travel_with_the_plan(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_BACKEND", "tests.fakes:FakeBackend")
    monkeypatch.chdir(tmp_path)
    keys = {"suite": "sssp", "variants": ["near_far"], "params": {"delta": [0, 64]}}
    tuned = config.spec_from_mapping({**keys, "tune": {"configuration": ["delta"]}}, "s.yaml")
    plan = planning.plan_sweep(tuned, outputs.OutputRequest())
    assert plan.run.tuned == ("delta",) and plan.run.settings.tuned == ("delta",)
    untuned = planning.plan_sweep(config.spec_from_mapping(keys, "s.yaml"), outputs.OutputRequest())
    assert untuned.run.tuned == ()


def test_a_resumed_run_draws_its_problems_from_the_logged_run_seed(tmp_path, monkeypatch):
    import json

    monkeypatch.setenv("GPUBENCH_BACKEND", "tests.fakes:FakeBackend")
    monkeypatch.chdir(tmp_path)
    log = tmp_path / "r.jsonl"
    log.write_text(json.dumps({"kind": "header", "run_seed": 12345}) + "\n")
    resumed = planning.plan_sweep(spec_of(), outputs.OutputRequest(resume=str(log)))
    assert resumed.run.run_seed == 12345
    log.write_text(json.dumps({"kind": "header"}) + "\n")  # a log from before run seeds
    older = planning.plan_sweep(spec_of(), outputs.OutputRequest(resume=str(log)))
    assert isinstance(older.run.run_seed, int) and older.run.run_seed != 12345
    fresh = [_planned(tmp_path, monkeypatch).run.run_seed for _ in range(2)]
    assert fresh[0] != fresh[1]  # a new run, new data


@pytest.mark.parametrize("seed", ['"12345"', "-1", "true", "1e3", str(2**63)])
def test_a_logged_run_seed_of_the_wrong_kind_is_one_line(tmp_path, monkeypatch, seed):
    monkeypatch.setenv("GPUBENCH_BACKEND", "tests.fakes:FakeBackend")
    monkeypatch.chdir(tmp_path)
    log = tmp_path / "r.jsonl"
    log.write_text('{"kind": "header", "run_seed": ' + seed + "}\n")
    with pytest.raises(ConfigError) as info:
        planning.plan_sweep(spec_of(), outputs.OutputRequest(resume=str(log)))
    assert "run_seed" in str(info.value) and "\n" not in str(info.value)
