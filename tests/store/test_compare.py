from __future__ import annotations

import pytest
from click.testing import CliRunner

from gpubench.cli import cli
from gpubench.model.results import Result, ResultSet, Status, save_json
from gpubench.store.compare import compare, suite_defaults


def result(n: int, variant: str, median: float, noise: float = 0.01, status=Status.OK) -> Result:
    return Result(suite="s", variant=variant, point={"n": n}, status=status,
                  summary={"median_ms": median, "rel_noise": noise})  # fmt: skip


def result_set(*results: Result) -> ResultSet:
    return ResultSet(suite="s", environment={"gpu_uuid": "GPU-1"}, spec={}, results=list(results))


def test_changes_are_judged_against_threshold_and_noise():
    base = result_set(result(1, "a", 1.0), result(2, "a", 1.0), result(3, "a", 1.0, noise=0.2),
                      result(4, "a", 1.0), result(5, "a", 1.0))  # fmt: skip
    new = result_set(result(1, "a", 1.01), result(2, "a", 1.2), result(3, "a", 1.3),
                     result(4, "a", 0.5), result(6, "a", 1.0))  # fmt: skip
    verdicts = {r.point["n"]: r.verdict for r in compare(base, new, threshold=0.02)}
    assert verdicts == {
        1: "same",
        2: "slower",
        3: "same",
        4: "faster",
        5: "only in base",
        6: "only in new",
    }


def test_unmeasured_results_are_not_compared_and_a_newly_failing_one_is_a_regression():
    from gpubench.store.compare import regressions

    base = result_set(result(1, "a", 1.0), result(2, "a", 1.0, status=Status.SKIPPED))
    new = result_set(result(1, "a", 1.0, status=Status.CRASHED), result(2, "a", 1.0))
    broken, skipped = compare(base, new, threshold=0.02)
    assert broken.change is None and broken.verdict == "broken (ok → crashed)"
    assert skipped.verdict == "not measured (skipped → ok)"
    assert regressions([broken, skipped]) == 1


def test_per_suite_thresholds_override_the_default():
    def in_suite(suite, median):
        r = result(1, "a", median)
        r.suite = suite
        return r

    base = result_set(in_suite("s", 1.0), in_suite("t", 1.0))
    new = result_set(in_suite("s", 1.08), in_suite("t", 1.08))
    rows = compare(base, new, threshold=0.05, per_suite={"t": 0.10})
    assert [r.verdict for r in rows] == ["slower", "same"]


@pytest.mark.parametrize("new_median, code", [(1.01, 0), (1.5, 3)])
def test_the_command_exits_3_on_a_slowdown(tmp_path, new_median, code):
    save_json(result_set(result(1, "a", 1.0)), tmp_path / "a.json")
    save_json(result_set(result(1, "a", new_median)), tmp_path / "b.json")
    out = CliRunner().invoke(cli, ["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")])
    assert out.exit_code == code, out.output
    assert "largest change" in out.output


def test_any_declared_metric_compares_in_its_own_direction():
    from gpubench.model.metrics import BANDWIDTH

    def with_gbps(n, gbps):
        r = result(n, "a", 1.0)
        r.metrics["gbps"] = gbps
        return r

    base = result_set(with_gbps(1, 100.0), with_gbps(2, 100.0), with_gbps(3, 100.0))
    new = result_set(with_gbps(1, 80.0), with_gbps(2, 120.0), with_gbps(3, 101.0))
    verdicts = {r.point["n"]: r.verdict for r in compare(base, new, 0.02, BANDWIDTH)}
    assert verdicts == {1: "worse", 2: "better", 3: "same"}


@pytest.mark.parametrize(
    "args, code, text",
    [
        (["--metric", "gbps"], 3, "worse"),
        (["--metric", "gbsp"], 2, "did you mean 'gbps'"),
        (["--threshold", "nan"], 2, "finite"),
        (["--threshold", "-1"], 2, ">= 0"),
    ],
)
def test_the_command_takes_a_metric_and_refuses_bad_options(tmp_path, args, code, text):
    a, b = result(1, "a", 1.0), result(1, "a", 1.0)
    a.metrics["gbps"], b.metrics["gbps"] = 100.0, 50.0
    save_json(result_set(a), tmp_path / "a.json")
    save_json(result_set(b), tmp_path / "b.json")
    out = CliRunner().invoke(
        cli, ["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), *args]
    )
    assert out.exit_code == code, out.output
    assert text in out.output


def test_the_threshold_decides_when_the_noise_is_small():
    base = result_set(result(1, "a", 1.0, noise=0.005))
    new = result_set(result(1, "a", 1.03, noise=0.005))
    assert compare(base, new, threshold=0.02)[0].verdict == "slower"
    assert compare(base, new, threshold=0.05)[0].verdict == "same"
    assert compare(base, new, threshold=0.02)[0].change == pytest.approx(0.03)


def test_every_field_of_a_comparison_and_the_inclusive_boundaries():
    from gpubench.store.compare import Comparison

    base = result_set(result(1, "a", 1.0, noise=0.0), result(2, "a", 1.0, noise=0.02),
                      result(3, "b", 2.0))  # fmt: skip
    new = result_set(result(1, "a", 1.25, noise=0.0), result(2, "a", 1.05, noise=0.01),
                     result(4, "b", 3.0))  # fmt: skip
    rows = compare(base, new, threshold=0.25)
    assert rows[0] == Comparison({"n": 1}, "a", 1.0, 1.25, 0.25, 0.0, "same")  # == threshold
    rows = compare(base, new, threshold=0.01)
    assert rows[0].verdict == "slower"
    # 5% against twice the larger noise (2 × 2% = 4%): slower; 3 × would have said same.
    assert rows[1] == Comparison({"n": 2}, "a", 1.0, 1.05, pytest.approx(0.05), 0.02, "slower")
    assert rows[2] == Comparison({"n": 4}, "b", None, 3.0, None, None, "only in new")
    assert rows[3] == Comparison({"n": 3}, "b", 2.0, None, None, None, "only in base")
    no_noise = Result(suite="s", variant="a", point={"n": 1}, status=Status.OK,
                      summary={"median_ms": 1.1})  # fmt: skip
    (row,) = compare(result_set(no_noise), result_set(result(1, "a", 1.0, noise=0.0)), 0.05)
    assert (row.noise, row.verdict) == (0, "faster")


def test_a_metric_without_a_direction_is_changed_not_better():
    from gpubench.model.metrics import ITERATIONS

    a, b = result(1, "a", 1.0), result(1, "a", 1.0)
    a.metrics["iterations"], b.metrics["iterations"] = 10.0, 20.0
    (row,) = compare(result_set(a), result_set(b), 0.05, ITERATIONS)
    assert (row.base, row.new, row.change, row.verdict) == (10.0, 20.0, 1.0, "changed")


# -- the gate: it compares something, or it fails ------------------------------------------------
def _compare_files(tmp_path, base, new, *args):
    save_json(base, tmp_path / "base.json")
    save_json(new, tmp_path / "new.json")
    return CliRunner().invoke(cli, ["compare", str(tmp_path / "base.json"),
                                    str(tmp_path / "new.json"), *args])  # fmt: skip


def _transpose(point_changes: dict, drop: str | None = None, median: float = 1.0) -> Result:
    from gpubench.load import registry

    bench = registry.get("transpose")
    point = {**bench.resolve(bench.defaults()), **point_changes}
    if drop:
        point.pop(drop)
    return Result(suite="transpose", variant="naive", point=point, status=Status.OK,
                  summary={"median_ms": median, "rel_noise": 0.01})  # fmt: skip


def test_a_parameter_a_newer_gpubench_added_matches_at_its_default(tmp_path):
    older = result_set(_transpose({}, drop="block_rows"))  # written before block_rows existed
    newer = result_set(_transpose({}))  # block_rows at its default
    rows = compare(older, newer, 0.05, defaults=suite_defaults(older, newer))
    assert [r.verdict for r in rows] == ["same"]
    out = _compare_files(tmp_path, older, newer)
    assert out.exit_code == 0, out.output
    assert "1 pair(s) compared" in out.output and "no regressions" in out.output


def test_a_base_result_without_a_partner_fails_the_gate_and_says_why(tmp_path):
    older = result_set(_transpose({}, drop="block_rows"), _transpose({"tile": 16}))
    newer = result_set(_transpose({"block_rows": 4}), _transpose({"tile": 16}))  # not default
    out = _compare_files(tmp_path, older, newer)
    assert out.exit_code == 3, out.output
    assert "1 pair(s) compared" in out.output
    assert "1 result(s) of" in out.output and "have no partner" in out.output


def test_files_with_nothing_in_common_are_refused(tmp_path):
    def in_suite(suite):
        r = result(1, "a", 1.0)
        r.suite = suite
        return r

    out = _compare_files(
        tmp_path, result_set(in_suite("matmul")), result_set(in_suite("transpose"))
    )
    assert out.exit_code == 2, out.output
    assert "nothing to compare" in out.output and "matmul against transpose" in out.output
    assert "Traceback" not in out.output


def test_a_one_sample_run_without_a_noise_figure_is_compared(tmp_path):
    one = result(1, "a", 1.0)
    one.summary["rel_noise"] = float("inf")  # one sample: written as null
    out = _compare_files(tmp_path, result_set(one), result_set(result(1, "a", 1.5)))
    assert out.exit_code == 3, out.output
    assert "1 regression(s)" in out.output and "Traceback" not in out.output
    (row,) = compare(result_set(one), result_set(result(1, "a", 1.01)), 0.05)
    assert row.verdict == "same"


def test_the_terminal_says_how_many_regressions(tmp_path):
    base = result_set(result(1, "a", 1.0), result(2, "a", 1.0), result(3, "a", 1.0))
    new = result_set(result(1, "a", 2.0), result(2, "a", 2.0), result(3, "a", 1.0))
    out = _compare_files(tmp_path, base, new)
    assert out.exit_code == 3
    assert "3 pair(s) compared; largest change 100.00%; 2 regression(s)" in out.output


def test_the_noise_of_either_file_widens_the_band():
    """A 10% change is `same` when either side's noise is 8% (2 x 8% > 10%), from the base
    or from the new file, and `slower` when neither is noisy."""
    for base_noise, new_noise, verdict in ((0.08, 0.0, "same"), (0.0, 0.08, "same"),
                                           (0.0, 0.0, "slower")):  # fmt: skip
        rows = compare(result_set(result(1, "a", 1.0, noise=base_noise)),
                       result_set(result(1, "a", 1.1, noise=new_noise)), threshold=0.05)  # fmt: skip
        assert [r.verdict for r in rows] == [verdict]
        assert rows[0].noise == max(base_noise, new_noise)


def test_rows_that_are_not_judged_keep_their_point_and_both_values():
    base = result_set(result(1, "a", 2.0), result(2, "a", 3.0, status=Status.SKIPPED))
    new = result_set(result(1, "a", 2.5, status=Status.INCORRECT), result(2, "a", 4.0))
    broken, unmeasured = compare(base, new, threshold=0.05)
    assert (broken.point, broken.variant, broken.base, broken.new) == ({"n": 1}, "a", 2.0, 2.5)
    assert broken.verdict.startswith("broken") and broken.change is None
    assert (unmeasured.point, unmeasured.variant, unmeasured.base, unmeasured.new) == (
        {"n": 2},
        "a",
        3.0,
        4.0,
    )
    assert unmeasured.verdict.startswith("not measured") and unmeasured.change is None


def test_a_metric_missing_from_the_base_is_not_compared():
    from gpubench.model.metrics import BANDWIDTH

    base, new = result(1, "a", 1.0), result(1, "a", 1.0)
    new.metrics[BANDWIDTH.key] = 100.0
    (row,) = compare(result_set(base), result_set(new), threshold=0.05, metric=BANDWIDTH)
    assert row.verdict.startswith("not measured") and row.base is None and row.new == 100.0


def test_time_is_the_median_whichever_metric_object_names_it():
    from gpubench.model.metrics import TIME, Metric
    from gpubench.store.compare import _value

    named = Metric(TIME.key, "time", "ms", "{:.3f}", higher_is_better=False)
    assert named is not TIME and _value(result(1, "a", 2.5), named) == 2.5


# -- the gate report: regressions first, changes only, GPUs per result; matmul's tuned tiles --
def test_the_gate_lists_regressions_first_and_changes_only_leaves_out_the_same():
    from gpubench.store.compare import gate_order

    base = result_set(
        result(1, "a", 1.0),
        result(2, "a", 1.0),
        result(3, "a", 1.0),
        result(4, "a", 1.0),
        result(5, "a", 1.0),
    )
    new = result_set(
        result(1, "a", 0.5), result(2, "a", 1.0), result(3, "a", 1.2), result(4, "a", 1.6)
    )
    rows = compare(base, new, 0.05)
    assert [(r.point["n"], r.verdict) for r in gate_order(rows)] == [
        (4, "slower"),
        (3, "slower"),
        (5, "only in base"),
        (1, "faster"),
        (2, "same"),
    ]
    assert [r.point["n"] for r in gate_order(rows, changes_only=True)] == [4, 3, 5, 1]


def test_changes_only_in_the_terminal_and_the_markdown(tmp_path):
    base = result_set(result(1, "a", 1.0), result(2, "a", 1.0))
    new = result_set(result(1, "a", 1.0), result(2, "a", 1.5))
    md = tmp_path / "gate.md"
    out = _compare_files(tmp_path, base, new, "--changes-only", "--markdown", str(md))
    assert out.exit_code == 3, out.output
    assert "slower" in out.output and "same" not in out.output
    assert "2 pair(s) compared; largest change 50.00%; 1 regression(s)" in out.output
    text = md.read_text()
    assert text.count("slower") == 1 and "same" not in text


def test_different_gpus_are_noted_per_result_not_per_run(tmp_path):
    base = result_set(result(1, "a", 1.0), result(2, "a", 1.0))
    new = result_set(result(1, "a", 1.0), result(2, "a", 1.0))
    # A sweep over two cards: the run's GPU is the same, result 2 ran on another card.
    base.results[1].device = {"index": 1, "uuid": "GPU-2", "name": "H100"}
    new.results[1].device = {"index": 0, "uuid": "GPU-1", "name": "H100"}
    rows = compare(base, new, 0.05)
    assert [r.gpus for r in rows] == [None, ("GPU-2", "GPU-1")]
    out = _compare_files(tmp_path, base, new)
    assert out.exit_code == 0, out.output
    assert "note: 1 pair(s) measured on different GPUs (GPU-2 vs GPU-1)" in out.output


def _matmul(size: int, with_warp_tile: bool) -> Result:
    from gpubench.load import registry

    bench = registry.get("matmul")
    point = bench.resolve({**bench.defaults(), "size": size, "m": None, "n": None, "k": None})
    if not with_warp_tile:  # written before matmul had its warp-tile parameters
        for name in ("wbm", "wbn", "wbk", "wtm", "wtn", "wm", "wn", "wniter", "stages"):
            point.pop(name)
    return Result(
        suite="matmul",
        variant="warp_tiled",
        point=point,
        status=Status.OK,
        summary={"median_ms": 1.0, "rel_noise": 0.01},
    )


def test_a_matmul_file_from_before_the_warp_tile_matches_at_each_point_s_own_size():
    sizes = (1024, 2048, 4096)  # tuned tiles differ from the default size's at 2048 and 4096
    older = ResultSet(
        suite="matmul", environment={}, spec={}, results=[_matmul(s, False) for s in sizes]
    )
    newer = ResultSet(
        suite="matmul", environment={}, spec={}, results=[_matmul(s, True) for s in sizes]
    )
    assert newer.results[1].point["wbn"] == 256 != newer.results[0].point["wbn"]
    rows = compare(older, newer, 0.05, defaults=suite_defaults(older, newer))
    assert [(r.point["size"], r.verdict) for r in rows] == [
        (1024, "same"),
        (2048, "same"),
        (4096, "same"),
    ]


# -- energy: judged against the energy readings' own noise ----------------------------------------
def with_energy(r: Result, millijoules: float, noise: float) -> Result:
    """The result with an energy reading of `millijoules` per run whose counter intervals'
    powers spread by `noise` (its metrics as the engine writes them)."""
    from gpubench.model.energy import EnergyReading, energy_metrics

    joules = millijoules / 1000.0
    runs = 1000
    reading = EnergyReading(
        joules_per_run=joules,
        average_watts=200.0,
        idle_watts=50.0,
        above_idle_joules_per_run=joules * 0.75,
        sm_clock_mhz=1980.0,
        temperature_c=50.0,
        window_s=1.0,
        runs=runs,
        time_per_run_ms=1.0,
        duty=1.0,
        intervals=9,
        counter_period_ms=100.0,
        noise=noise,
        counter_joules=joules * runs * 0.9,
        sampled_joules=joules * runs * 0.9,
    )
    r.energy = reading.to_dict()
    r.metrics.update(energy_metrics(r.energy, None))
    return r


def test_energy_changes_are_judged_against_the_energy_noise_not_the_time_s():
    """Time noise 0.1%: an 8% energy change within the energy readings' 5% noise (2 x 5% =
    10%) is the same, one beyond it worse; a saving beyond it is better."""
    from gpubench.model.metrics import ENERGY
    from gpubench.store.compare import judge, regressions

    def both(n, base_mj, new_mj, base_noise, new_noise):
        timed = result(n, "a", 1.0, noise=0.001), result(n, "a", 1.0, noise=0.001)
        return with_energy(timed[0], base_mj, base_noise), with_energy(timed[1], new_mj, new_noise)

    pairs = [
        both(1, 100.0, 108.0, 0.05, 0.01),
        both(2, 100.0, 108.0, 0.01, 0.05),
        both(3, 100.0, 125.0, 0.05, 0.05),
        both(4, 100.0, 80.0, 0.05, 0.01),
        both(5, 100.0, 108.0, 0.001, 0.001),
        both(6, 100.0, 103.0, 0.0, 0.0),
    ]
    base = result_set(*(b for b, _ in pairs))
    new = result_set(*(n for _, n in pairs))
    rows = compare(base, new, 0.05, ENERGY)
    assert [(r.point["n"], r.verdict) for r in rows] == [
        (1, "same"),
        (2, "same"),
        (3, "worse"),
        (4, "better"),
        (5, "worse"),
        (6, "same"),
    ]
    assert [r.noise for r in rows] == [0.05, 0.05, 0.05, 0.05, 0.001, 0.0]
    assert rows[0].base == pytest.approx(100.0) and rows[0].new == pytest.approx(108.0)
    assert regressions(rows) == 2
    # Against the time's noise (0.1%) the first two would have been worse.
    assert judge(rows[0].change, 0.001, 0.05, ENERGY) == "worse"


def test_the_energy_per_run_is_the_reading_s_where_the_metrics_leave_it_out():
    from gpubench.model.metrics import ENERGY

    base = with_energy(result(1, "a", 1.0), 100.0, 0.01)
    new = with_energy(result(1, "a", 1.0), 130.0, 0.01)
    del base.metrics[ENERGY.key]
    (row,) = compare(result_set(base), result_set(new), 0.05, ENERGY)
    assert (row.base, row.verdict) == (pytest.approx(100.0), "worse")


def test_work_per_joule_and_power_share_the_energy_reading_s_noise():
    from gpubench.model.metrics import GFLOP_PER_J

    base = with_energy(result(1, "a", 1.0, noise=0.001), 100.0, 0.05)
    new = with_energy(result(1, "a", 1.0, noise=0.001), 108.0, 0.05)
    base.metrics[GFLOP_PER_J.key], new.metrics[GFLOP_PER_J.key] = 10.0, 10.0 / 1.08
    (row,) = compare(result_set(base), result_set(new), 0.05, GFLOP_PER_J)
    assert (row.noise, row.verdict) == (0.05, "same")


def test_a_pair_without_an_energy_reading_on_a_side_is_not_comparable_never_a_regression():
    from gpubench.model.metrics import ENERGY
    from gpubench.store.compare import gate_order, regressions

    unasked = result(1, "a", 1.0)  # measured without --energy
    missing = result(2, "a", 1.0)
    missing.energy = {"missing": "this GPU has no energy counter gpubench can read (NVML)"}
    read = with_energy(result(4, "a", 1.0), 100.0, 0.01)
    base = result_set(
        unasked, with_energy(result(2, "a", 1.0), 100.0, 0.01), result(3, "a", 1.0), read
    )
    read = with_energy(result(4, "a", 1.0), 150.0, 0.01)
    new = result_set(
        with_energy(result(1, "a", 1.0), 500.0, 0.01), missing, result(3, "a", 1.0), read
    )
    rows = compare(base, new, 0.05, ENERGY)
    assert [(r.point["n"], r.verdict) for r in rows] == [
        (1, "not comparable: no energy reading (base: measured without --energy)"),
        (
            2,
            "broken (energy reading lost: new: this GPU has no energy counter gpubench can "
            "read (NVML))",
        ),
        (
            3,
            "not comparable: no energy reading (base: measured without --energy; new: "
            "measured without --energy)",
        ),
        (4, "worse"),
    ]
    assert [(r.change, r.noise) for r in rows[:3]] == [(None, None)] * 3
    assert rows[0].new == pytest.approx(500.0) and rows[1].base == pytest.approx(100.0)
    # A reading the base had and the new run lacks fails the gate, as a lost result does.
    assert regressions(rows) == 2
    assert [r.point["n"] for r in gate_order(rows)] == [2, 4, 1, 3]
    # Time compares as ever: energy plays no part in it.
    assert {r.verdict for r in compare(base, new, 0.05)} == {"same"}


def test_a_newly_failing_result_is_broken_whatever_its_energy():
    from gpubench.model.metrics import ENERGY

    base = result_set(with_energy(result(1, "a", 1.0), 100.0, 0.01))
    new = result_set(result(1, "a", 1.0, status=Status.INCORRECT))
    (row,) = compare(base, new, 0.05, ENERGY)
    assert row.verdict == "broken (ok → incorrect)"


def energy_files(tmp_path, base_mj, new_mj, noise=0.05):
    return (
        result_set(with_energy(result(1, "a", 1.0, noise=0.001), base_mj, noise)),
        result_set(with_energy(result(1, "a", 1.0, noise=0.001), new_mj, noise)),
    )


@pytest.mark.parametrize("flag", [["--energy"], ["--metric", "energy_mj"]])
def test_the_command_gates_on_energy_with_its_own_noise(tmp_path, flag):
    out = _compare_files(tmp_path, *energy_files(tmp_path, 100.0, 125.0), *flag)
    assert out.exit_code == 3, out.output
    assert "1 pair(s) compared; largest change 25.00%; 1 regression(s)" in out.output
    assert "worse" in out.output and "energy" in out.output
    within = _compare_files(tmp_path, *energy_files(tmp_path, 100.0, 108.0), *flag)
    assert within.exit_code == 0, within.output
    assert "1 pair(s) compared; largest change 8.00%; no regressions" in within.output
    assert "same" in within.output
    timed = _compare_files(tmp_path, *energy_files(tmp_path, 100.0, 125.0))
    assert timed.exit_code == 0, timed.output  # the time did not move


def test_the_command_reports_pairs_without_energy_and_passes_them(tmp_path):
    base, new = energy_files(tmp_path, 100.0, 100.0)
    base.results.append(result(2, "a", 1.0))
    new.results.append(with_energy(result(2, "a", 1.0), 900.0, 0.01))
    out = _compare_files(tmp_path, base, new, "--energy")
    assert out.exit_code == 0, out.output
    assert "2 pair(s) compared; largest change 0.00%; no regressions" in out.output
    assert (
        "1 pair(s) not comparable: no energy reading on a side (record both runs with --energy)"
        in out.output
    )
    assert "Traceback" not in out.output


def test_energy_of_files_without_any_reading_or_beside_another_metric_is_one_line(tmp_path):
    plain = result_set(result(1, "a", 1.0))
    out = _compare_files(tmp_path, plain, plain, "--energy")
    assert out.exit_code == 2, out.output
    assert out.output.count("\n") == 1
    assert out.output.startswith("error: --metric: neither ")
    assert out.output.rstrip().endswith(
        "new.json holds an energy reading to compare energy_mj by: record them with --energy"
    )
    out = _compare_files(
        tmp_path, *energy_files(tmp_path, 1.0, 1.0), "--energy", "--metric", "gbps"
    )
    assert (out.exit_code, out.output) == (
        2,
        "error: --energy: --energy compares energy_mj: leave out --metric gbps\n",
    )


def test_a_new_run_without_the_energy_the_base_had_fails_the_gate(tmp_path):
    base, _ = energy_files(tmp_path, 100.0, 100.0)
    new = result_set(result(1, "a", 1.0, noise=0.001))  # measured without --energy
    out = _compare_files(tmp_path, base, new, "--energy")
    assert out.exit_code == 3, out.output
    assert "1 regression(s)" in out.output
    assert "broken (energy reading lost: new: measured without --energy)" in out.output
