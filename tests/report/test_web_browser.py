"""The web report in a real browser: headless Chromium (Debian's `chromium`, driven by
Playwright) opens every page from file://, with no console error; the charts have the right
number of series and points; the planted regression is marked; a page with energy draws its
energy charts; screenshots are kept.

Skips with one line where Playwright or a Chromium is missing (.ci/run installs both where it can):
`pip install playwright` and `apt-get install chromium`, or set GPUBENCH_CHROMIUM.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUNS = 30


def chromium() -> str | None:
    for candidate in (os.environ.get("GPUBENCH_CHROMIUM"), "chromium", "chromium-browser"):
        if candidate and (
            found := shutil.which(candidate) or (Path(candidate).is_file() and candidate)
        ):
            return str(found)
    return None


def _missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "browser test: Playwright is not installed (pip install playwright)"
    if chromium() is None:
        return "browser test: no Chromium found (apt-get install chromium, or GPUBENCH_CHROMIUM)"
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=str(_missing()))


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    sys.path.insert(0, str(REPO / "tests" / "scripts"))
    from year_of_runs import generate

    from gpubench.model.results import load_json
    from gpubench.report import web
    from gpubench.store.history import CodeVersion, History

    out = tmp_path_factory.mktemp("report")
    with History.open(out / "history.sqlite") as store:
        for day, path in enumerate(generate(out / "runs", RUNS)):
            store.append(load_json(path), label="nightly",
                         version=CodeVersion(f"{day:040x}", day % 7 == 0, "0.1.0"))  # fmt: skip
        web.write_report(store, str(out / "site"), threshold=0.02)
    return out / "site"


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        yield instance
        instance.close()


def open_page(browser, path: Path, shots: Path | None = None):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    if page.evaluate("() => typeof window.drawAll === 'function'"):
        page.evaluate("() => window.drawAll()")  # the charts not yet scrolled into view
    if shots is not None:
        shots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shots / f"{path.stem}.png"), full_page=False)
    return page, errors


def test_every_page_loads_without_console_errors(report, browser):
    pages = sorted(report.glob("*.html"))
    assert [p.name for p in pages] == ["index.html", "transpose.html"]
    shots = Path(os.environ.get("GPUBENCH_SCREENSHOTS", report / "screenshots"))
    for path in pages:
        page, errors = open_page(browser, path, shots)
        assert errors == [], f"{path.name}: {errors}"
        page.close()


def test_the_charts_have_a_series_per_variant_and_a_point_per_run(report, browser):
    page, errors = open_page(browser, report / "transpose.html")
    charts = page.evaluate("""() => [...document.querySelectorAll('.chart.js-plotly-plot')]
        .filter(d => d.id.startsWith('chart-'))
        .map(d => d.data.map(t => [t.name, t.x.length]))""")
    assert len(charts) == 20  # the smoke sweep's points
    for traces in charts:
        variants = [t for t in traces if t[0] != "regression"]
        assert [name for name, _ in variants] == [
            "copy",
            "naive",
            "coalesced",
            "padded",
            "diagonal",
            "vectorized",
            "bulk_store",
        ]
        assert all(points == RUNS for _, points in variants)
    assert page.locator("#roofline").count() == 0 or page.locator("#roofline .main-svg").count()
    assert errors == []


def test_the_planted_regression_is_marked(report, browser):
    page, _ = open_page(browser, report / "transpose.html")
    marked = page.evaluate("""() => [...document.querySelectorAll('.chart.js-plotly-plot')]
        .flatMap(d => d.data.filter(t => t.name === 'regression')
        .map(t => [t.x.length, [...t.text]]))""")
    # naive is 30% slower in the last run, at each of the 20 points; nothing else is marked.
    assert len(marked) == 20 and all(m == [1, ["naive"]] for m in marked), [
        m for m in marked if m != [1, ["naive"]]
    ]
    latest = page.locator("table.changes").inner_text()
    assert latest.count("slower") == 20 and "naive" in latest and "faster" not in latest
    index, _ = open_page(browser, report / "index.html")
    assert index.locator("table.moved tr").count() == 21  # a header and the 20 slower pairs


def test_choosing_a_metric_redraws_every_chart_with_it(report, browser):
    page, errors = open_page(browser, report / "transpose.html")
    assert page.locator("#metric option").all_inner_texts() == ["median time", "GB/s"]
    page.select_option("#metric", "gbps")
    shown = page.evaluate("""() => [...document.querySelectorAll('.chart.js-plotly-plot')]
        .filter(d => d.id.startsWith('chart-'))
        .map(d => [d.layout.yaxis.title.text, d.data.length, d.data[0].y[0]])""")
    expected = page.evaluate("""() => JSON.parse(document.getElementById("data").textContent)
        .points.map(p => p.series[0].metrics.gbps[0])""")
    assert [s[0] for s in shown] == ["GB/s"] * 20
    assert [s[1] for s in shown] == [7] * 20  # the regression marks belong to the time view
    assert [s[2] for s in shown] == expected and all(v > 0 for v in expected)
    assert errors == []


def watched_page(browser, path: Path, width: int):
    """A page at this width, with every console error, dialog and non-file request kept."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    seen: dict[str, list[str]] = {"errors": [], "dialogs": [], "requests": []}
    page.on("console", lambda m: seen["errors"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
    page.on(
        "request",
        lambda r: None if r.url.startswith(("file:", "data:")) else seen["requests"].append(r.url),
    )
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    if page.evaluate("() => typeof window.drawAll === 'function'"):
        page.evaluate("() => window.drawAll()")
    return page, seen


@pytest.mark.parametrize("width", [390, 1400])
def test_a_phone_and_a_wide_screen_show_every_page_whole(report, browser, width):
    shots = os.environ.get("GPUBENCH_SCREENSHOTS")
    for name, title in (
        ("index.html", "gpubench history"),
        ("transpose.html", "gpubench · transpose"),
    ):
        page, seen = watched_page(browser, report / name, width)
        assert page.title() == title
        overflow = page.evaluate("() => document.documentElement.scrollWidth")
        assert overflow <= width, f"{name} is {overflow} px wide at {width} px"
        assert seen == {"errors": [], "dialogs": [], "requests": []}, name
        if shots:
            Path(shots).mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(Path(shots) / f"{Path(name).stem}-{width}.png"))
        page.close()


HOSTILE = {"label": "</script><svg onload=alert(1)>", "variant": '"><img src=x onerror=alert(2)>',
           "gpu": "javascript:alert(3)<b>bold</b>"}  # fmt: skip


LINKS = {
    "index.html": ['<a href="scale.html">scale</a>'],
    "scale.html": ['<a href="index.html">all suites</a>'],
}


def test_hostile_strings_stay_text_in_the_browser(tmp_path, browser):
    from gpubench.model.results import Result, ResultSet, Status
    from gpubench.report import web
    from gpubench.store.history import CodeVersion, History

    with History.open(tmp_path / "h.sqlite") as store:
        for day, label in enumerate(["nightly", HOSTILE["label"]]):
            results = [
                Result(
                    "scale",
                    v,
                    {"n": 1},
                    Status.OK,
                    summary={"median_ms": 0.01 * (day + 1), "rel_noise": 0.01},
                )
                for v in ("plain", HOSTILE["variant"])
            ]
            env = {
                "device": {"name": HOSTILE["gpu"]},
                "gpu_uuid": "GPU-1",
                "backend": {"name": "fake"},
                "driver_version": HOSTILE["label"],
            }
            store.append(
                ResultSet(
                    suite="scale",
                    environment=env,
                    spec={},
                    results=results,
                    created=f"2026-11-2{day}T03:00:00+00:00",
                ),
                label=label,
                version=CodeVersion(None, None, "0.1.0"),
            )
        web.write_report(store, str(tmp_path / "site"), threshold=0.02)
    for name in ("index.html", "scale.html"):
        page, seen = watched_page(browser, tmp_path / "site" / name, 1280)
        assert seen == {"errors": [], "dialogs": [], "requests": []}, name
        # No element but the page's own links (Plotly's measuring svg aside) came from data.
        planted = page.evaluate("""() => [...document.querySelectorAll('img, svg, b, a')]
            .filter(e => !e.closest('.js-plotly-plot') && e.id !== 'js-plotly-tester')
            .map(e => e.outerHTML)""")
        assert planted == LINKS[name]
        text = page.inner_text("body")
        for words in HOSTILE.values():
            assert words in text, (name, words)
        if name == "scale.html":
            # Plotly's legends and hover read HTML: the names are shown as the words they are.
            legend = page.evaluate("""() => [...document.querySelectorAll('#chart-0 .legendtext')]
                .map(e => e.textContent)""")
            assert legend == ["plain", HOSTILE["variant"], "regression"]
            assert page.locator("#chart-0 b, #chart-0 img, #overview img").count() == 0
        page.close()


def energy_store(path: Path, variant_b: str = "tiled") -> Path:
    """Six nightly runs on an H100 with energy, then two on an H200: two variants at two
    sizes; tiled is twice as fast and draws more power (250 W against 300 W)."""
    from gpubench.model.results import Result, ResultSet, Status
    from gpubench.store.history import CodeVersion, History

    beds = [("NVIDIA H100 80GB HBM3", "GPU-1a2b3c4d")] * 6 + [("NVIDIA H200", "GPU-5e6f7a8b")] * 2
    with History.open(path) as store:
        for day, (gpu, uuid) in enumerate(beds):
            results = []
            for variant, ms, watts in (("naive", 2.0, 250.0), (variant_b, 1.0, 300.0)):
                for n in (1024, 2048):
                    median = ms * (n / 1024) ** 2 * (1 + 0.01 * (day % 3))
                    energy = {
                        "joules_per_run": watts * median / 1000,
                        "average_watts": watts,
                        "idle_watts": 60.0,
                        "noise": 0.003,
                        "sm_clock_mhz": 1980.0,
                    }
                    results.append(
                        Result(
                            "matmul",
                            variant,
                            {"n": n},
                            Status.OK,
                            energy=energy,
                            summary={"median_ms": median, "rel_noise": 0.01},
                        )
                    )
            env = {"device": {"name": gpu}, "gpu_uuid": uuid, "backend": {"name": "pycuda"}}
            run = ResultSet(
                "matmul", env, {}, results, created=f"2026-11-{day + 10}T03:00:00+00:00"
            )
            store.append(run, label="nightly", version=CodeVersion(None, None, "0.1.0"))
    return path


def test_the_energy_charts_render(tmp_path, browser):
    from gpubench.report import web
    from gpubench.store.history import History

    with History.open(energy_store(tmp_path / "h.sqlite")) as store:
        web.write_report(store, str(tmp_path / "site"), threshold=0.02)
    page, errors = open_page(browser, tmp_path / "site" / "matmul.html")
    charts = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll(
        '[id^=energy-].js-plotly-plot')].map(d => [d.id, {traces: d.data.map(t => [t.name,
        t.x.length]), y: d.layout.yaxis.title.text, x: (d.layout.xaxis.title || {}).text || ""}]))""")
    h100, h200 = "NVIDIA H100 80GB HBM3 1a2b3c4d, pycuda", "NVIDIA H200 5e6f7a8b, pycuda"
    over_time = [
        [f"naive · {h100}", 6],
        [f"tiled · {h100}", 6],
        [f"naive · {h200}", 2],
        [f"tiled · {h200}", 2],
    ]
    latest = [[name, 1] for name, _ in over_time]
    assert charts == {
        "energy-0": {"traces": over_time, "y": "energy per run (mJ)", "x": ""},
        "energy-1": {"traces": over_time, "y": "energy per run (J)", "x": ""},
        "energy-vs-time-0": {"traces": latest, "y": "energy per run (mJ)", "x": "median time (ms)"},
        "energy-vs-time-1": {"traces": latest, "y": "energy per run (J)", "x": "median time (ms)"},
    }
    # The last H100 run (day 6, 2% slower): naive at n=1024 takes 2.04 ms at 250 W.
    dot = page.evaluate("() => document.getElementById('energy-vs-time-0').data[0]")
    assert (dot["x"], dot["y"]) == ([2.04], [pytest.approx(510.0)])
    # Hiding a testbed redraws the energy charts without it.
    page.uncheck("input[data-bed='1']")
    names = page.evaluate("""() => ['energy-0', 'energy-vs-time-0'].map(id =>
        document.getElementById(id).data.map(t => t.name))""")
    assert names == [[f"naive · {h100}", f"tiled · {h100}"]] * 2
    page.check("input[data-bed='1']")
    assert errors == []
    shots = Path(os.environ.get("GPUBENCH_SCREENSHOTS", tmp_path / "screenshots"))
    shots.mkdir(parents=True, exist_ok=True)
    # The two energy sections, from the first heading to the first scatter (page coordinates).
    top, bottom = page.evaluate("""() => {
        const at = e => e.getBoundingClientRect(), y = window.scrollY;
        const heading = [...document.querySelectorAll("h2")].find(h => h.textContent === "Energy over time");
        const last = at(document.getElementById("energy-vs-time-0"));
        return [at(heading).top + y, last.bottom + y];
    }""")
    clip = {"x": 0, "y": top, "width": 1280, "height": bottom - top}
    page.screenshot(path=str(shots / "energy_report.png"), full_page=True, clip=clip)
    page.close()


def test_hostile_names_stay_text_in_the_energy_charts(tmp_path, browser):
    from gpubench.report import web
    from gpubench.store.history import History

    with History.open(energy_store(tmp_path / "h.sqlite", HOSTILE["variant"])) as store:
        web.write_report(store, str(tmp_path / "site"), threshold=0.02)
    page, seen = watched_page(browser, tmp_path / "site" / "matmul.html", 1280)
    assert seen == {"errors": [], "dialogs": [], "requests": []}
    legends = page.evaluate("""() => ['energy-0', 'energy-vs-time-0'].map(id => [...document
        .querySelectorAll(`#${id} .legendtext`)].map(e => e.textContent))""")
    for legend in legends:
        assert [name.split(" · ")[0] for name in legend] == ["naive", HOSTILE["variant"]] * 2
    assert page.locator("[id^=energy-] img, [id^=energy-] b").count() == 0
    page.close()
