"""A recorded sweep as the GPU's stand-in: what it refuses, and Kernel Tuner's cache written
from it and read back."""

from __future__ import annotations

import json

import pytest

from gpubench.errors import ConfigError
from gpubench.model.results import Status
from gpubench.tune import kernel_tuner_cache, replay
from tests.tune.recorded import log_file, sweep_file, ten_times


def test_two_sizes_are_two_problems_named_by_what_differs(tmp_path):
    config = sweep_file(tmp_path, [64, 128])
    log = log_file(tmp_path, ten_times(64) | ten_times(128, offset=1.0))
    recorded = replay.prepare(str(config), str(log))
    labels = [p.label for p in recorded.space.problems]
    assert labels == ["size=64, rows=64, cols=64", "size=128, rows=128, cols=128"]
    assert [recorded.optimum(p) for p in recorded.space.problems] == [1.0, 2.0]


def test_without_a_sweep_file_the_whole_log_is_the_space(tmp_path):
    log = log_file(tmp_path, ten_times(64) | ten_times(128, offset=1.0))
    recorded = replay.prepare(None, str(log))
    assert [len(p.configurations) for p in recorded.space.problems] == [10, 10]


def test_a_sweep_file_selects_its_points_of_a_larger_log(tmp_path):
    config = sweep_file(tmp_path, [128])
    log = log_file(tmp_path, ten_times(64) | ten_times(128, offset=1.0))
    recorded = replay.prepare(str(config), str(log))
    assert [p.fixed["size"] for p in recorded.space.problems] == [128]


def refused(tmp_path, times, sizes=(64,), suite="transpose") -> str:
    config = sweep_file(tmp_path, list(sizes))
    log = log_file(tmp_path, times, suite=suite)
    with pytest.raises(ConfigError) as caught:
        replay.prepare(str(config), str(log))
    return str(caught.value).replace(str(tmp_path) + "/", "")


def test_a_log_of_another_suite_is_refused(tmp_path):
    assert refused(tmp_path, ten_times(), suite="reduction") == (
        "space.jsonl: the replay log is of the suite 'reduction', the sweep of 'transpose'"
    )


def test_a_log_without_a_valid_point_is_refused(tmp_path):
    times = dict.fromkeys(ten_times(), Status.COMPILE_FAILED)
    assert refused(tmp_path, times) == (
        "space.jsonl: the replay log has no valid point for the problem size=64, rows=64, "
        "cols=64, dtype=float32 "
        "(every configuration failed or was not measured)"
    )


def test_a_log_without_a_point_of_the_sweep_is_refused(tmp_path):
    assert refused(tmp_path, ten_times(256), sizes=(64,)) == (
        "space.jsonl: the replay log holds no point of this sweep: record it with "
        "`gpubench sweep` first"
    )


ONE = (
    "space.jsonl: the problem size=64, rows=64, cols=64, dtype=float32 has a single "
    "configuration "
    "(tile=32, block_rows=8, variant=coalesced): nothing to tune"
)


def test_a_sweep_of_one_configuration_is_refused(tmp_path):
    config = sweep_file(tmp_path, [64], tiles=[32], block_rows=[8])
    with pytest.raises(ConfigError) as caught:
        replay.prepare(str(config), str(log_file(tmp_path, ten_times())))
    assert str(caught.value) == str(tmp_path / ONE)


def test_a_log_with_one_recorded_configuration_is_refused(tmp_path):
    assert refused(tmp_path, {(64, 32, 8): 1.0}) == ONE


def test_an_empty_log_is_refused(tmp_path):
    assert refused(tmp_path, {}) == "space.jsonl: the replay log holds no result"


def exported(tmp_path, times):
    recorded = replay.prepare(str(sweep_file(tmp_path, [64])), str(log_file(tmp_path, times)))
    path = tmp_path / "kt.json"
    kernel_tuner_cache.export(recorded.space.problems[0], recorded.recording, path)
    return recorded, path


def test_the_kernel_tuner_cache_holds_what_its_schema_requires(tmp_path):
    _, path = exported(tmp_path, ten_times() | {(64, 16, 1): Status.COMPILE_FAILED})
    document = json.loads(path.read_text())
    assert document["schema_version"] == "1.0.0"
    assert document["tune_params_keys"] == ["tile", "block_rows"]
    assert document["tune_params"] == {"tile": [16, 32], "block_rows": [1, 2, 4, 8, 16]}
    assert document["objective"] == "time" and document["kernel_name"] == "transpose"
    assert document["problem_size"] == [64, 64, 64]
    assert document["cache"]["32,8"]["time"] == 1.0
    assert document["cache"]["16,1"]["time"] == "CompilationFailedConfig"
    required = {"time", "compile_time", "verification_time", "benchmark_time"}
    assert all(required <= set(entry) for entry in document["cache"].values())


def test_the_kernel_tuner_cache_reads_back_as_the_same_outcomes(tmp_path):
    times = ten_times() | {(64, 16, 1): Status.COMPILE_FAILED, (64, 32, 2): Status.INCORRECT}
    recorded, path = exported(tmp_path, times)
    back = replay.prepare(None, str(path))
    problem, original = back.space.problems[0], recorded.space.problems[0]
    assert problem.axes == {"tile": [16, 32], "block_rows": [1, 2, 4, 8, 16]}
    outcomes = {problem.describe(i): back.evaluate(problem, i) for i in range(10)}
    expected = {original.describe(i): recorded.evaluate(original, i) for i in range(10)}
    assert outcomes == expected
    assert outcomes["tile=16, block_rows=1"] == replay.Outcome("compile_failed")
    assert outcomes["tile=32, block_rows=2"] == replay.Outcome("incorrect")


def test_a_cache_kernel_tuner_left_open_and_its_failure_names_are_read(tmp_path):
    text = (
        '{"device_name": "GPU", "kernel_name": "k", "problem_size": [64], '
        '"tune_params_keys": ["bx"], "tune_params": {"bx": [32, 64, 128, 256]}, '
        '"objective": "time", "cache": {\n'
        '"32": {"bx": 32, "time": 2.0},\n"64": {"bx": 64, "time": "RuntimeFailedConfig"},\n'
        '"128": {"bx": 128, "time": "InvalidConfig"},\n'
        '"256": {"bx": 256, "time": "CompilationFailedConfig"},\n'
    )  # no closing braces: a tuning run that was cut short
    (tmp_path / "open.json").write_text(text)
    recording = kernel_tuner_cache.read(tmp_path / "open.json")
    assert recording.suite == "k" and recording.device_name == "GPU"
    assert [(point, recording.outcome(point, variant)) for point, variant in recording.entries] == [
        ({"bx": 32}, replay.Outcome("ok", 2.0)),
        ({"bx": 64}, replay.Outcome("launch_failed")),
        ({"bx": 256}, replay.Outcome("compile_failed")),
    ]


def test_a_kernel_tuner_cache_with_a_sweep_file_is_refused(tmp_path):
    _, path = exported(tmp_path, ten_times())
    with pytest.raises(ConfigError, match="a Kernel Tuner cache replays on its own"):
        replay.prepare(str(tmp_path / "space.yaml"), str(path))


def test_a_results_json_replays_like_its_log(tmp_path):
    """A results file (`--json`) starts with its schema version as a Kernel Tuner cache does:
    it is read as what it is."""
    from gpubench.model.results import ResultSet, load_jsonl, save_json
    from gpubench.tune import kernel_tuner_cache
    from tests.tune.recorded import log_file, ten_times

    log = log_file(tmp_path, ten_times())
    _, results = load_jsonl(log)
    as_json = tmp_path / "space.json"
    save_json(ResultSet(suite="transpose", environment={}, spec={}, results=results), as_json)
    assert not kernel_tuner_cache.looks_like(as_json)
    from_log, from_json = replay.load(log), replay.load(as_json)
    assert from_json.suite == "transpose" and from_json.entries == from_log.entries


def test_a_cache_named_gz_is_written_compressed_and_reads_back_the_same(tmp_path):
    import gzip

    times = ten_times() | {(64, 16, 1): Status.COMPILE_FAILED}
    recorded, plain = exported(tmp_path, times)
    problem = recorded.space.problems[0]
    packed = kernel_tuner_cache.export(problem, recorded.recording, tmp_path / "space.kt.json.gz")
    assert packed.read_bytes()[:2] == b"\x1f\x8b"  # gzip's magic
    assert json.loads(gzip.decompress(packed.read_bytes())) == json.loads(plain.read_text())
    assert kernel_tuner_cache.looks_like(packed)
    back, again = replay.prepare(None, str(packed)), replay.prepare(None, str(plain))
    first, second = back.space.problems[0], again.space.problems[0]
    assert [back.evaluate(first, i) for i in range(10)] == [
        again.evaluate(second, i) for i in range(10)
    ]


def test_a_gz_that_is_not_gzip_is_one_line(tmp_path):
    broken = tmp_path / "broken.kt.json.gz"
    broken.write_bytes(b'{"device_name": "x"}')  # a plain file under a .gz name
    with pytest.raises(ConfigError) as error:
        kernel_tuner_cache.read(broken)
    assert str(error.value).startswith(f"{broken}: cannot decompress it (")


def test_a_gzipped_results_log_replays_as_the_plain_one_and_a_bad_one_is_one_line(tmp_path):
    import gzip

    from tests.tune.recorded import log_file, sweep_file, ten_times

    config = sweep_file(tmp_path, [64])
    plain = log_file(tmp_path, ten_times())
    packed = tmp_path / "space.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    a = replay.prepare(str(config), str(plain))
    b = replay.prepare(str(config), str(packed))
    problem_a, problem_b = a.space.problems[0], b.space.problems[0]
    assert [a.evaluate(problem_a, i) for i in range(10)] == [
        b.evaluate(problem_b, i) for i in range(10)
    ]
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(gzip.compress(b"not json\n"))
    with pytest.raises(ConfigError) as raised:
        replay.prepare(None, str(broken))
    assert str(raised.value).startswith(f"{broken}: ")
    (tmp_path / "raw.jsonl.gz").write_bytes(b"plain")
    with pytest.raises(ConfigError, match="cannot read the gzipped replay log"):
        replay.prepare(None, str(tmp_path / "raw.jsonl.gz"))


def test_a_variant_that_computes_something_else_is_left_out_of_the_space(tmp_path):
    """Transpose's copy is the ceiling, not a way to transpose: the fastest, and never a
    configuration to choose."""
    from gpubench.model.results import JsonLinesLog, Result
    from tests.tune.recorded import point

    config = sweep_file(tmp_path, [64], variants=("copy", "naive", "coalesced"))
    log = JsonLinesLog(tmp_path / "space.jsonl", header={"suite": "transpose"})
    for variant, median in (("copy", 0.5), ("naive", 3.0), ("coalesced", None)):
        for (size, tile, rows), time_ms in ten_times().items():
            summary = {"median_ms": median or time_ms, "rel_noise": 0.01}
            log.write(
                Result("transpose", variant, point(size, tile, rows), Status.OK, summary=summary)
            )
    log.close()
    recorded = replay.prepare(str(config), str(tmp_path / "space.jsonl"))
    assert recorded.space.left_out == {"copy": "copy"}
    (problem,) = recorded.space.problems
    assert {c["variant"] for c in problem.configurations} == {"naive", "coalesced"}
    assert len(problem.configurations) == 20 and recorded.optimum(problem) == 1.0
    whole = replay.prepare(None, str(tmp_path / "space.jsonl"))  # the suite's baseline: naive
    assert whole.space.left_out == {"copy": "copy"}


def test_the_sssp_sweep_s_run_time_knobs_are_its_configurations():
    """configs/sssp_tune.yaml names delta and local_rounds under `tune: configuration:`:
    each weight kind is one problem of 9 deltas x 2 local_rounds x 2 variants."""
    from pathlib import Path

    from gpubench.load import config
    from gpubench.tune import space as spaces

    spec = config.load(Path(__file__).resolve().parents[2] / "configs/sssp_tune.yaml")
    entries = spaces.sweep_entries(spec, spec.bench)
    found = spaces.of_suite(spec.bench, entries, spec.source, spec.baseline, spec.tuned)
    assert [(p.label, len(p.configurations)) for p in found.problems] == [
        ("weights=unit", 36),
        ("weights=uniform", 36),
    ]
    assert list(found.problems[0].axes) == ["delta", "local_rounds", "variant"]
    untuned = spaces.of_suite(spec.bench, entries, spec.source, spec.baseline)
    assert [len(p.configurations) for p in untuned.problems] == [2] * 36


def test_each_objective_has_its_own_optimum_of_one_recording(tmp_path):
    from gpubench.tune.objective import Objective
    from tests.tune.recorded import frugal_watts

    config = sweep_file(tmp_path, [64])
    log = log_file(tmp_path, ten_times(), watts=frugal_watts())
    optima = {}
    for objective in Objective:
        recorded = replay.prepare(str(config), str(log), objective=objective)
        (problem,) = recorded.space.problems
        best = recorded.optimum(problem)
        chosen = next(i for i in range(10) if recorded.evaluate(problem, i).cost == best)
        optima[objective.value] = (problem.describe(chosen), pytest.approx(best))
    assert optima == {
        "time": ("tile=32, block_rows=8", 1.0),
        "energy": ("tile=16, block_rows=8", 160.0),
        "edp": ("tile=32, block_rows=4", 234.375),
    }


def test_a_result_without_the_energy_its_objective_ranks_is_no_candidate():
    from gpubench.model.results import Result
    from gpubench.tune.objective import Objective
    from tests.tune.recorded import reading

    timed = {"median_ms": 2.0, "rel_noise": 0.01}
    plain = Result("s", "v", {}, Status.OK, summary=timed)
    missing = Result("s", "v", {}, Status.OK, summary=timed, energy={"missing": "too short"})
    measured = Result("s", "v", {}, Status.OK, summary=timed, energy=reading(100.0, 2.0))
    pruned = Result("s", "v", {}, Status.PRUNED, summary=timed, energy=reading(100.0, 2.0))
    assert replay.outcome_of(plain) == replay.Outcome("ok", 2.0)
    for objective in (Objective.ENERGY, Objective.EDP):
        assert replay.outcome_of(plain, objective) == replay.Outcome("ok")
        assert replay.outcome_of(missing, objective) == replay.Outcome("ok")
    assert replay.outcome_of(measured, Objective.ENERGY).cost == pytest.approx(200.0)
    assert replay.outcome_of(measured, Objective.EDP).cost == pytest.approx(400.0)
    assert replay.outcome_of(pruned, Objective.ENERGY).hint == pytest.approx(200.0)
    assert [o.unit for o in Objective] == ["ms", "mJ", "mJ·ms"]
    assert [o.needs_energy for o in Objective] == [False, True, True]


def test_a_recording_without_energy_is_refused_for_an_energy_objective(tmp_path):
    from gpubench.tune.objective import Objective

    config = sweep_file(tmp_path, [64])
    log = log_file(tmp_path, ten_times())
    with pytest.raises(ConfigError) as caught:
        replay.prepare(str(config), str(log), objective=Objective.EDP)
    assert str(caught.value) == (
        f"{log}: the replay log has no energy readings: record it with --energy"
    )
    assert replay.prepare(str(config), str(log)).recording.objective == "time"


def test_a_problem_whose_configurations_have_no_energy_says_so(tmp_path):
    from gpubench.tune.objective import Objective
    from tests.tune.recorded import frugal_watts

    config = sweep_file(tmp_path, [64, 128])
    log_file(tmp_path, ten_times(64), watts=frugal_watts(), name="a.jsonl")
    log_file(tmp_path, ten_times(128, offset=1.0), name="b.jsonl")
    both = tmp_path / "space.jsonl"
    both.write_text(
        (tmp_path / "a.jsonl").read_text()
        + "".join((tmp_path / "b.jsonl").read_text().splitlines(keepends=True)[1:])
    )
    with pytest.raises(ConfigError) as caught:
        replay.prepare(str(config), str(both), objective=Objective.ENERGY)
    assert str(caught.value) == (
        f"{both}: the replay log has no valid point for the problem size=128, rows=128, "
        "cols=128 (every configuration failed or was not measured, or has no energy reading)"
    )
