"""Step detection: a change that persists for several runs is a step, one noisy run is not;
over whole synthetic stores (two GPUs x two backends x 20 runs), noise alone makes no
regression and one variant slowed on one testbed makes exactly that one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from gpubench.model.results import Result, ResultSet, Status
from gpubench.report import web
from gpubench.report.steps import MIN_RUNS, Step, detect_steps
from gpubench.store.history import CodeVersion, History

TESTBEDS = [("H100", "GPU-aaaaaaaa-1", "pycuda"), ("H100", "GPU-aaaaaaaa-1", "cuda-core"),
            ("H200", "GPU-bbbbbbbb-2", "pycuda"), ("H200", "GPU-bbbbbbbb-2", "cuda-core")]  # fmt: skip
BASE_MS = {"naive": 0.09, "tiled": 0.03}
RUNS = 20


def test_a_step_that_persists_is_found_with_its_levels_and_runs():
    values = [1.0] * 11 + [1.1] * 9
    (step,) = detect_steps(values, [0.01] * 20, threshold=0.05)
    assert step == Step(11, 1.0, 1.1, pytest.approx(0.1), 0.01, "slower", 11, 9)


@pytest.mark.parametrize(
    ("values", "why"),
    [
        ([1.0] * 19 + [1.5], "one slow run at the end is too new to persist"),
        ([1.0] * 9 + [1.5] + [1.0] * 10, "one slow run in the middle is noise"),
        ([1.0] * 10 + [1.04] * 10, "4% is under the 5% threshold"),
        ([1.0, 1.06, 0.95, 1.04, 0.97] * 2 + [1.06, 1.12, 1.01, 1.10, 1.03] * 2,
         "6% in a series that wanders by 4% run to run is under twice its noise"),
    ],
)  # fmt: skip
def test_what_is_not_a_step(values, why):
    assert detect_steps(values, [0.01] * len(values), threshold=0.05) == [], why


def test_a_series_may_step_up_and_back_down_and_the_runs_own_noise_counts():
    values = [1.0] * 8 + [1.2] * 6 + [1.0] * 8
    steps = detect_steps(values, [0.01] * len(values), threshold=0.05)
    assert [(s.index, s.verdict, round(s.change, 3)) for s in steps] == [
        (8, "slower", 0.2),
        (14, "faster", -0.167),
    ]
    # The same series measured with 15% noise per run: no change beyond twice that.
    assert detect_steps(values, [0.15] * len(values), threshold=0.05) == []


def test_a_step_needs_min_runs_on_each_side():
    assert MIN_RUNS == 3
    assert detect_steps([1.0] * 5 + [1.5] * 3, [0.0] * 8, 0.05)[0].index == 5
    assert detect_steps([1.0] * 5 + [1.5] * 2, [0.0] * 7, 0.05) == []


def _run(day: int, bed: tuple[str, str, str], medians: dict[str, float]) -> ResultSet:
    gpu, uuid, backend = bed
    results = [
        Result("scale", v, {"n": 1024}, Status.OK, summary={"median_ms": m, "rel_noise": 0.005})
        for v, m in medians.items()
    ]
    created = (datetime(2026, 1, 1, 3, tzinfo=UTC) + timedelta(days=day)).isoformat()
    env = {"device": {"name": gpu}, "gpu_uuid": uuid, "backend": {"name": backend}}
    return ResultSet(
        suite="scale", environment=env, spec={"suite": "scale"}, results=results, created=created
    )


def _store(path, slowed: tuple[int, str] | None) -> History:
    """Every testbed runs every night for 20 nights, 1% noise run to run; `slowed`: (testbed,
    variant) 10% slower from each testbed's 12th run on. Stored in another order than measured
    (testbed by testbed), as an import of several machines' files would."""
    rng = np.random.default_rng(3)
    store = History.open(path)
    for b, bed in enumerate(TESTBEDS):
        for day in range(RUNS):
            medians = {}
            for variant, base in BASE_MS.items():
                late = slowed == (b, variant) and day >= 11
                medians[variant] = (
                    base * (1.1 if late else 1.0) * (1 + 0.01 * rng.standard_normal())
                )
            store.append(
                _run(day, bed, medians),
                label="nightly",
                version=CodeVersion(f"{day:040x}", False, "0.1.0"),
            )
    return store


def test_noise_alone_on_four_testbeds_makes_no_regression(tmp_path):
    with _store(tmp_path / "h.sqlite", slowed=None) as store:
        data, _ = web.suite_data(store, "scale", store.runs(), threshold=0.05)
        page = web._index_page([("scale", store.runs(), [], data)])
    assert len(data["testbeds"]) == 4 and len(data["points"][0]["series"]) == 8
    assert data["steps"] == []
    assert "<p>No slower step in any suite.</p>" in page


def test_one_variant_slowed_on_one_testbed_from_run_12_is_exactly_one_step(tmp_path):
    with _store(tmp_path / "h.sqlite", slowed=(3, "tiled")) as store:
        runs = store.runs()
        data, _ = web.suite_data(store, "scale", runs, threshold=0.05)
        page = web._index_page([("scale", runs, [], data)])
    (step,) = data["steps"]
    twelfth = [r for r in runs if r.gpu_name == "H200" and r.backend == "cuda-core"][11]
    assert (
        step["variant"],
        step["testbed"],
        step["verdict"],
        step["run"],
        step["date"],
        step["label"],
        step["runs_before"],
        step["runs_after"],
    ) == (
        "tiled",
        "H200 bbbbbbbb, cuda-core",
        "slower",
        twelfth.id,
        "2026-01-12 03:00:00",
        "nightly",
        11,
        9,
    )
    assert step["new"] / step["base"] == pytest.approx(1.1, abs=0.02)
    # The page draws the runs by date, not by the order they were stored in.
    assert [r["date"] for r in data["runs"]] == sorted(r["date"] for r in data["runs"])
    marks = data["points"][0]["regressions"]
    assert (marks["runs"], marks["variant"]) == ([twelfth.id], [step["name"]])
    assert page.count("<span class='slower'>slower</span>") == 1
    assert "run " + str(twelfth.id) + " · 2026-01-12 03:00:00 · nightly" in page


@pytest.mark.parametrize("noise", [None, float("nan"), float("inf"), -1.0, 0.0])
def test_a_noise_that_is_not_a_finite_positive_number_counts_as_none(noise):
    values = [1.0] * 11 + [1.1] * 9
    (step,) = detect_steps(values, [noise] * 20, threshold=0.05)
    assert step == Step(11, 1.0, 1.1, pytest.approx(0.1), 0.0, "slower", 11, 9)
