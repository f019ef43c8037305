"""The web report's energy charts, pinned without a browser: the data each chart draws (energy
per run over time per variant and testbed; energy against time in each testbed's latest run
with energy), the page's sections and script, the latest run's energy columns; a page without
energy unchanged; names that hold a script end stay data. Expected text:
tests/report/pages/web_energy*.html (GPUBENCH_UPDATE_SNAPSHOTS=1 rewrites them)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpubench.model.results import Result, ResultSet, Status
from gpubench.report import web, web_energy
from gpubench.store.history import CodeVersion, History
from tests import snapshots

PINNED = Path(__file__).parent / "pages"
VERSION = CodeVersion(None, None, "0.1.0")
H100 = {"device": {"name": "H100"}, "gpu_uuid": "GPU-aaaaaaaa", "backend": {"name": "pycuda"}}
H200 = {"device": {"name": "H200"}, "gpu_uuid": "GPU-bbbbbbbb", "backend": {"name": "pycuda"}}
MISSING = {"missing": "no energy counter"}


def reading(joules: float, watts: float = 250.0) -> dict:
    return {
        "joules_per_run": joules,
        "average_watts": watts,
        "idle_watts": 50.0,
        "noise": 0.004,
        "sm_clock_mhz": 1980.0,
    }


def run(day: int, env: dict, results: list[tuple], suite: str = "scale") -> ResultSet:
    """results: (variant, n, median ms, energy or None)."""
    made = [
        Result(
            suite,
            variant,
            {"n": n},
            Status.OK,
            energy=energy,
            summary={"median_ms": median, "rel_noise": 0.01},
        )
        for variant, n, median, energy in results
    ]
    return ResultSet(suite, env, {"suite": suite}, made, created=f"2026-11-2{day}T03:00:00+00:00")


@pytest.fixture()
def store(tmp_path):
    """Runs 1 and 2 on the H100 with energy (b at n=20 missing in run 2), run 3 there without
    --energy, run 4 on the H200 with energy of a at n=10 only."""
    with History.open(tmp_path / "h.sqlite") as history:
        history.append(
            run(
                0,
                H100,
                [
                    ("a", 10, 1.0, reading(0.25)),
                    ("b", 10, 2.0, reading(0.5)),
                    ("a", 20, 2.0, reading(0.5)),
                    ("b", 20, 4.0, reading(1.0)),
                ],
            ),
            version=VERSION,
        )
        history.append(
            run(
                1,
                H100,
                [
                    ("a", 10, 1.0, reading(0.24)),
                    ("b", 10, 1.5, reading(0.45, 300.0)),
                    ("a", 20, 2.0, reading(0.48)),
                    ("b", 20, 4.0, MISSING),
                ],
            ),
            version=VERSION,
        )
        history.append(
            run(
                2,
                H100,
                [
                    ("a", 10, 1.0, None),
                    ("b", 10, 1.5, None),
                    ("a", 20, 2.0, None),
                    ("b", 20, 4.0, None),
                ],
            ),
            version=VERSION,
        )
        history.append(
            run(3, H200, [("a", 10, 0.5, reading(0.2, 400.0)), ("b", 10, 1.0, None)]),
            version=VERSION,
        )
        yield history


H100_BED = "a · H100 aaaaaaaa, pycuda"


def test_the_energy_charts_data(store):
    data, _ = web.suite_data(store, "scale", store.runs(suite="scale"), threshold=0.02)
    energy = data["energy"]
    assert [p["label"] for p in energy["points"]] == ["n=10", "n=20"]
    n10, n20 = energy["points"]
    # Over time: a line per variant and testbed; run 3 measured no energy and is not drawn.
    assert n10["series"] == [
        {"name": "a · H100 aaaaaaaa, pycuda", "variant": "a", "bed": 0, "colour": 0,
         "runs": [1, 2], "joules": [0.25, 0.24], "watts": [250.0, 250.0], "idle": [50.0, 50.0],
         "noise": [0.004, 0.004]},
        {"name": "b · H100 aaaaaaaa, pycuda", "variant": "b", "bed": 0, "colour": 1,
         "runs": [1, 2], "joules": [0.5, 0.45], "watts": [250.0, 300.0], "idle": [50.0, 50.0],
         "noise": [0.004, 0.004]},
        {"name": "a · H200 bbbbbbbb, pycuda", "variant": "a", "bed": 1, "colour": 0,
         "runs": [4], "joules": [0.2], "watts": [400.0], "idle": [50.0], "noise": [0.004]},
    ]  # fmt: skip
    # Against time: each testbed's latest run with energy at the point, a marker per variant.
    assert n10["latest"] == [
        {"name": "a · H100 aaaaaaaa, pycuda", "variant": "a", "bed": 0, "colour": 0, "run": 2,
         "median": 1.0, "joules": 0.24, "watts": 250.0, "noise": 0.004},
        {"name": "b · H100 aaaaaaaa, pycuda", "variant": "b", "bed": 0, "colour": 1, "run": 2,
         "median": 1.5, "joules": 0.45, "watts": 300.0, "noise": 0.004},
        {"name": "a · H200 bbbbbbbb, pycuda", "variant": "a", "bed": 1, "colour": 0, "run": 4,
         "median": 0.5, "joules": 0.2, "watts": 400.0, "noise": 0.004},
    ]  # fmt: skip
    # b's energy is missing in run 2 at n=20: its line ends at run 1, and run 2 (the
    # latest with energy there) has a marker for a alone.
    assert [(s["variant"], s["runs"], s["joules"]) for s in n20["series"]] == [
        ("a", [1, 2], [0.5, 0.48]),
        ("b", [1], [1.0]),
    ]
    assert [(d["variant"], d["run"], d["joules"]) for d in n20["latest"]] == [("a", 2, 0.48)]
    # The energy metrics are not in these results' metrics: the chooser offers none.
    assert data["metrics"] == []


def test_a_page_with_energy_pinned(store, tmp_path, monkeypatch):
    monkeypatch.setattr(web, "_copy_plotly", lambda out: None)
    pages = web.write_report(store, str(tmp_path / "site"), threshold=0.02)
    assert sorted(p.name for p in (tmp_path / "site").iterdir()) == [
        "energy.js",
        "index.html",
        "report.js",
        "scale.html",
    ]
    assert (tmp_path / "site" / "energy.js").read_text() == web_energy.ENERGY_SCRIPT
    text = pages[1].read_text()
    for part, mark in (
        (web._STYLE, "/* the style in web_shared.txt */"),
        (web._CHARTS_JS, "/* the charts' script in web_shared.txt */"),
    ):
        text = text.replace(part, mark)
    snapshots.matches(PINNED / "web_energy.html", text.replace("><", ">\n<"))
    assert text.endswith(
        '<script src="plotly.min.js"></script><script src="report.js"></script>'
        '<script src="energy.js"></script></body></html>'
    )


def test_the_energy_script_pinned():
    snapshots.matches(PINNED / "web_energy_script.txt", web_energy.ENERGY_SCRIPT)


def test_the_sections_name_a_chart_per_point_with_energy():
    assert web_energy.energy_sections(None) == ""
    two = web_energy.energy_sections({"points": [{}, {}]})
    assert re.findall(r"<h2>(.*?)</h2>", two) == ["Energy over time", "Energy against time"]
    assert re.findall(r"id='([^']+)'", two) == [
        "energy-0",
        "energy-1",
        "energy-vs-time-0",
        "energy-vs-time-1",
    ]


def test_a_report_without_energy_has_no_energy_script_section_or_data(tmp_path, monkeypatch):
    monkeypatch.setattr(web, "_copy_plotly", lambda out: None)
    with History.open(tmp_path / "h.sqlite") as history:
        history.append(run(0, H100, [("a", 10, 1.0, None)]), version=VERSION)
        history.append(run(1, H100, [("a", 10, 1.0, MISSING)]), version=VERSION)
        data, _ = web.suite_data(history, "scale", history.runs(), threshold=0.02)
        pages = web.write_report(history, str(tmp_path / "site"), threshold=0.02)
    assert "energy" not in data
    assert sorted(p.name for p in (tmp_path / "site").iterdir()) == [
        "index.html",
        "report.js",
        "scale.html",
    ]
    page = pages[1].read_text()
    assert "Energy" not in page and "energy.js" not in page and "energy-0" not in page
    # The latest run asked for energy and has none: its table says why.
    assert "<th>energy / run</th><th>power</th>" in page
    assert "<td>missing: no energy counter</td><td></td>" in page


@pytest.mark.parametrize(("joules", "text"), [
    (None, ""), (2.5, "2.5 J"), (0.25, "250 mJ"), (0.000125, "125 uJ"), (3e-8, "30 nJ"),
    (1.0, "1 J"), (0.001, "1 mJ"),
])  # fmt: skip
def test_energy_in_the_unit_that_fits(joules, text):
    assert web_energy.format_energy(joules) == text


@pytest.mark.parametrize(("energy", "cells"), [
    (None, ["", ""]),
    (reading(0.25), ["250 mJ", "250.0 W"]),
    ({"joules_per_run": 0.001, "average_watts": None}, ["1 mJ", ""]),
    (MISSING, ["missing: no energy counter", ""]),
])  # fmt: skip
def test_the_latest_run_s_energy_cells(energy, cells):
    assert web_energy.energy_cells(energy) == cells


PAYLOAD = "</script><script>alert(1)</script><svg onload=alert(2)>"


def test_a_name_holding_a_script_stays_inert_in_the_energy_parts(tmp_path, monkeypatch):
    monkeypatch.setattr(web, "_copy_plotly", lambda out: None)
    env = {**H100, "device": {"name": PAYLOAD}, "backend": {"name": PAYLOAD}}
    with History.open(tmp_path / "h.sqlite") as history:
        history.append(
            run(0, env, [("a", 10, 1.0, reading(0.25)), (PAYLOAD, 10, 2.0, MISSING)]),
            label=PAYLOAD,
            version=VERSION,
        )
        history.append(
            run(1, H100, [("a", 10, 1.0, reading(0.25)), (PAYLOAD, 10, 2.0, reading(0.5))]),
            label=PAYLOAD,
            version=VERSION,
        )
        pages = web.write_report(history, str(tmp_path / "site"), threshold=0.02)
    page = pages[1].read_text()
    assert PAYLOAD not in page and "<svg" not in page and "alert(1)</script>" not in page
    # Only the page's own scripts: the data block and the three files beside it.
    assert re.findall(r"<script[^>]*>", page) == [
        '<script type="application/json" id="data">',
        '<script src="plotly.min.js">',
        '<script src="report.js">',
        '<script src="energy.js">',
    ]
    assert page.count("</script>") == 4
    # The names are in the data as the words they are, and escaped as text in the tables.
    block = re.search(r'<script type="application/json" id="data">(.*?)</script>', page)
    energy = json.loads(block.group(1))["energy"]
    names = [s["name"] for p in energy["points"] for s in p["series"]]
    assert names == [
        f"a · {PAYLOAD} aaaaaaaa, {PAYLOAD}",
        "a · H100 aaaaaaaa, pycuda",
        f"{PAYLOAD} · H100 aaaaaaaa, pycuda",
    ]
    assert f"<td>{web.html.escape(PAYLOAD)}</td>" in page  # the latest run's table
