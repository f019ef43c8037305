"""The library API returns data: the commands' work without the command line."""

from __future__ import annotations

import pytest

from gpubench import api, config
from gpubench.errors import ConfigError
from gpubench.results import Result, ResultSet, Status, save_json


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
