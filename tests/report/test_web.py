"""The history report's pages, pinned without a browser: each table, the data every chart draws
(series, regressions, metrics, roofline), the environment of each run, and the index; and
the helpers at their edges. The browser test (test_web_browser.py) checks what is drawn.
Expected text: tests/report/pages/web_*.html (GPUBENCH_UPDATE_SNAPSHOTS=1 rewrites them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpubench.model.results import Result, ResultSet, Status
from gpubench.report import web
from gpubench.store.history import CodeVersion, History
from tests import snapshots

PINNED = Path(__file__).parent / "pages"
ENVIRONMENT = {
    "device": {"name": "Fake GPU", "peak_bandwidth_gbps": 2000.0, "peak_fp32_gflops": 60000.0},
    "gpu_uuid": "GPU-1", "backend": {"name": "fake"}, "driver_version": "580.1",
    "cuda_driver_api_version": "13.0", "sm_clock_mhz_at_start": 1980,
}  # fmt: skip


def run_of(day: int, medians: dict[str, float], *, noise=0.01, incorrect=(), suite="scale"):
    results = []
    for variant, median in medians.items():
        for n in (10, 20):
            status = Status.INCORRECT if (variant, n) in incorrect else Status.OK
            results.append(Result(
                suite, variant, {"n": n, "tile": 32, "opt": None}, status,
                summary={"median_ms": median * n / 10, "rel_noise": noise},
                metrics={"gbps": 100.0 * n / median},
                work={"flops": 2e9 * n, "bytes_moved": 4e8 * n}))  # fmt: skip
    return ResultSet(suite=suite, environment=ENVIRONMENT, spec={"suite": suite},
                     results=results, created=f"2026-11-2{day}T03:00:00+00:00")  # fmt: skip


@pytest.fixture()
def store(tmp_path):
    with History.open(tmp_path / "h.sqlite") as history:
        history.append(run_of(0, {"a": 1.0, "b": 2.0}), label="nightly",
                       version=CodeVersion("ab" * 20, False, "0.1.0"))  # fmt: skip
        history.append(run_of(1, {"a": 1.01, "b": 2.0}, incorrect={("b", 20)}),
                       version=CodeVersion("cd" * 20, True, "0.1.0"))  # fmt: skip
        history.append(run_of(2, {"a": 1.5, "b": 1.0}, noise=0.001),
                       version=CodeVersion(None, None, "0.2.0"))  # fmt: skip
        history.append(run_of(3, {"x": 1.0}, suite="other we/ird"),
                       version=CodeVersion(None, None, "0.2.0"))  # fmt: skip
        yield history


# Every page carries the same style and (with charts) the same script: pinned once, in
# web_shared.txt, and marked where each page holds them.
SHARED = {"/* the style in web_shared.txt */": web._STYLE,
          "/* the charts' script in web_shared.txt */": web._CHARTS_JS}  # fmt: skip


def pinned(name: str, text: str) -> None:
    for mark, part in SHARED.items():
        text = text.replace(part, mark)
    snapshots.matches(PINNED / name, text.replace("><", ">\n<"))


def test_the_style_and_script_every_page_shares_pinned_once():
    snapshots.matches(PINNED / "web_shared.txt", web._STYLE + "\n" + web._CHARTS_JS)


def test_the_report_pages_pinned(store, tmp_path, monkeypatch):
    monkeypatch.setattr(web, "_copy_plotly", lambda out: None)
    pages = web.write_report(store, str(tmp_path / "site"), threshold=0.02)
    assert [p.name for p in pages] == ["index.html", "other_we_ird.html", "scale.html"]
    pinned("web_index.html", pages[0].read_text())
    pinned("web_scale.html", pages[2].read_text())
    pinned("web_other.html", pages[1].read_text())


def test_the_data_a_suite_page_draws(store):
    data, changes = web.suite_data(store, "scale", store.runs(suite="scale"), threshold=0.02)
    assert [r["commit"] for r in data["runs"]] == ["abababab" + "ab", "cdcdcdcdcd+", ""]
    assert sorted(changes) == [('{"n": 10, "opt": null, "tile": 32}', "a", "slower",
                                pytest.approx(1.5 / 1.01 - 1)),
                               ('{"n": 10, "opt": null, "tile": 32}', "b", "faster", -0.5),
                               ('{"n": 20, "opt": null, "tile": 32}', "a", "slower",
                                pytest.approx(1.5 / 1.01 - 1))]  # fmt: skip
    labels = [p["label"] for p in data["points"]]
    assert labels == ["n=10", "n=20"]
    b20 = data["points"][1]["series"][1]
    assert (b20["variant"], b20["runs"], b20["median"]) == ("b", [1, 3], [4.0, 2.0])
    assert b20["metrics"] == {"gbps": [1000.0, 2000.0]}
    assert data["points"][0]["regressions"] == {
        "runs": [3],
        "median": [1.5],
        "variant": ["a"],
        "bed": [0],
    }
    assert data["metrics"] == [{"key": "gbps", "label": "GB/s"}]
    roof = data["roofline"]
    assert (roof["bandwidth"], roof["peak_gflops"], roof["ridge"]) == (2000.0, 60000.0, 30.0)
    assert roof["x"] == [5.0] * 4 and roof["text"][0] == "a · n=10, tile=32"
    assert roof["y"][0] == pytest.approx(2e10 / 1.5e-3 / 1e9)
    assert (roof["xmin"], roof["xmax"]) == (1.25, 120.0)


@pytest.mark.parametrize(("points", "varying"), [
    (['{"n": 1, "t": 2}', '{"n": 2, "t": 2}'], {"n"}),
    (['{"n": 1}', '{"n": 1, "t": null}'], set()),
    (['{"n": 1}', '{"t": 3}'], {"n", "t"}),
    (['{"n": 1}', "[1]"], None),
    (['{"n": 1}', "not json"], None),
    ([], set()),
])  # fmt: skip
def test_the_parameters_that_vary(points, varying):
    assert web._varying(points) == varying


@pytest.mark.parametrize(("metrics", "numbers"), [
    (None, {}), ("", {}), ("not json", {}), ("[1]", {}),
    ('{"a": 1, "b": 2.5, "c": true, "d": "x", "e": null, "f": 1e999}', {"a": 1, "b": 2.5}),
])  # fmt: skip
def test_only_finite_numbers_are_drawn(metrics, numbers):
    assert web._numbers(metrics) == numbers


@pytest.mark.parametrize(("key", "entry"), [
    ("gbps", {"key": "gbps", "label": "GB/s"}),
    ("speedup", {"key": "speedup", "label": "speedup (x)"}),
    ("iterations", {"key": "iterations", "label": "iters"}),
    ("mine", {"key": "mine", "label": "mine"}),
])  # fmt: skip
def test_a_metric_s_label(key, entry):
    assert web._metric_entry(key) == entry


@pytest.mark.parametrize(("point", "only", "label"), [
    ('{"n": 1, "t": null, "s": "x"}', None, "n=1, s=x"),
    ('{"n": 1, "s": "x"}', {"s"}, "s=x"),
    ('{"n": 1}', set(), ""),
    ("[1, 2]", None, "[1, 2]"),
    ("not json", None, "not json"),
])  # fmt: skip
def test_a_point_s_label(point, only, label):
    assert web._point_label(point, only) == label


@pytest.mark.parametrize(("name", "slug"), [
    ("scale", "scale"), ("a b/c.d", "a_b_c_d"), ("x-y_z", "x-y_z"), ("", "suite"),
])  # fmt: skip
def test_a_suite_s_page_name(name, slug):
    assert web._slug(name) == slug


def test_no_roofline_without_work_or_peaks():
    run = run_of(0, {"a": 1.0})
    assert web._roofline(run) is not None
    bare = ResultSet(suite="s", environment={}, spec={}, results=run.results)
    assert web._roofline(bare) is None
    run.results[0].status = Status.INCORRECT
    for r in run.results[1:]:
        r.work = {"flops": 1e9}
    assert web._roofline(run) is None


def test_a_report_needs_plotly(tmp_path, monkeypatch):
    import sys

    from gpubench.errors import EnvironmentProblem

    monkeypatch.setitem(sys.modules, "plotly", None)
    with History.open(tmp_path / "h.sqlite") as history, pytest.raises(EnvironmentProblem) as info:
        web.write_report(history, str(tmp_path / "site"), threshold=0.02)
    assert str(info.value) == (
        "the report draws with Plotly, which is not installed: pip "
        "install 'gpubench-studies[report]'"
    )
    assert json.dumps(web._table(["a<b"], [["<i>x</i>"]], "c")) == json.dumps(
        "<div class='scroll'><table class='c'><tr><th>a&lt;b</th></tr><tr><td><i>x</i></td></tr>"
        "</table></div>"
    )


def edge_run(day, results, suite="edge", environment=ENVIRONMENT):
    made = []
    for variant, status, median, noise, extra in results:
        summary = None if median is None else {"median_ms": median, "rel_noise": noise}
        made.append(Result(suite, variant, {"n": 1}, status, summary=summary, **extra))
    return ResultSet(suite=suite, environment=environment, spec={"suite": suite}, results=made,
                     created=f"2026-11-2{day}T04:00:00+00:00")  # fmt: skip


OK, UNSTABLE, SKIPPED = Status.OK, Status.UNSTABLE, Status.SKIPPED
BOUND = {"work": {"flops": 1e11, "bytes_moved": 1e9}}  # 100 flop/byte: right of the ridge


@pytest.fixture()
def edge_store(tmp_path):
    with History.open(tmp_path / "edge.sqlite") as history:
        for day, results in enumerate([
            [("c", OK, 1.0, None, {"metrics": {"gbps": 1.0, "speedup": 2.0}}),
             ("u", UNSTABLE, 2.0, 0.3, {}), ("w", OK, 1.0, 0.0, {"work": {"bytes_moved": 100}})],
            [("c", OK, 2.0, 0.01, {"metrics": {"gbps": 1.0}}), ("u", UNSTABLE, 2.4, 0.3, {})],
            [("c", OK, 3.0, 0.01, {}), ("u", UNSTABLE, 2.4, 0.3, {}), ("s", SKIPPED, None, None, {}),
             ("k", OK, 1.0, 0.01, BOUND)],
        ]):  # fmt: skip
            history.append(edge_run(4 + day, results), version=CodeVersion(None, None, None))
        for day, median in enumerate([1.0, 0.5]):
            history.append(edge_run(7 + day, [("v", OK, median, 0.01, {})], suite="second"),
                           version=CodeVersion(None, None, "0.3.0"))  # fmt: skip
        yield history


def test_the_edges_of_the_report_pinned(edge_store, tmp_path, monkeypatch):
    monkeypatch.setattr(web, "_copy_plotly", lambda out: None)
    index, edge, second = web.write_report(edge_store, str(tmp_path / "site"), threshold=0.02)
    pinned("web_edge_index.html", index.read_text())
    pinned("web_edge.html", edge.read_text())
    pinned("web_edge_second.html", second.read_text())


def test_the_edges_of_the_chart_data(edge_store):
    runs = edge_store.runs(suite="edge")
    data, changes = web.suite_data(edge_store, "edge", runs, threshold=0.02)
    assert [(v, verdict, round(c, 3)) for _, v, verdict, c in changes] == [("c", "slower", 0.5)]
    (point,) = data["points"]
    assert point["label"] == "every run at one point"
    series = {s["variant"]: s for s in point["series"]}
    assert series["c"]["noise"] == [None, 0.01, 0.01]
    assert series["c"]["metrics"] == {"gbps": [1.0, 1.0, None], "speedup": [2.0, None, None]}
    assert series["u"]["runs"] == [r.id for r in runs]  # unstable results are drawn
    # Marked: the latest run's slowdown (three runs are too few for a step).
    assert point["regressions"]["variant"] == ["c"] and data["steps"] == []
    assert data["metrics"] == [{"key": "gbps", "label": "GB/s"},
                               {"key": "speedup", "label": "speedup (x)"}]  # fmt: skip
    roof = data["roofline"]
    assert (roof["x"], roof["text"]) == ([100.0], ["k · n=1"])
    assert (roof["xmin"], roof["xmax"]) == (7.5, 400.0)
    assert web._latest_table(None) == ""
    page = web._index_page([("edge", runs, [], data)])
    assert "latest run</h2><p>Nothing got slower or faster.</p></" in page
    assert "<td>0</td><td>0</td>" in page


def test_plotly_s_script_is_copied_beside_the_pages(tmp_path, monkeypatch):
    import sys
    from types import SimpleNamespace

    from gpubench.errors import EnvironmentProblem

    package = tmp_path / "plotly"
    (package / "package_data").mkdir(parents=True)
    monkeypatch.setitem(sys.modules, "plotly", SimpleNamespace(__file__=str(package / "x.py")))
    (tmp_path / "out").mkdir()
    with pytest.raises(EnvironmentProblem) as info:
        web._copy_plotly(tmp_path / "out")
    assert str(info.value) == f"this Plotly has no {web.PLOTLY_JS}: pip install -U plotly"
    (package / "package_data" / web.PLOTLY_JS).write_text("// plotly")
    web._copy_plotly(tmp_path / "out")
    assert (tmp_path / "out" / web.PLOTLY_JS).read_text() == "// plotly"


def test_the_report_goes_into_a_new_nested_folder_and_again_into_the_same(
    store, tmp_path, monkeypatch
):
    monkeypatch.setattr(web, "_copy_plotly", lambda out: None)
    target = tmp_path / "a" / "b" / "site"
    first = web.write_report(store, str(target), threshold=0.02)
    again = web.write_report(store, str(target), threshold=0.02)
    assert first == again and all(p.parent == target for p in again)


def test_the_latest_change_counts_noise_either_side_and_an_unstable_run_before(tmp_path):
    """a: +50% inside twice the latest run's 30% noise (same); b: +100% with no noise known
    either side (slower); c: +100% after an unstable run (slower: unstable results are
    compared); m moves bytes but counts no flops: no roofline dot."""
    runs = [
        [("a", OK, 1.0, None, {}), ("b", OK, 1.0, None, {}), ("c", UNSTABLE, 1.0, 0.01, {})],
        [
            ("a", OK, 1.5, 0.3, {}),
            ("b", OK, 2.0, None, {}),
            ("c", OK, 2.0, 0.01, {}),
            ("m", OK, 1.0, 0.01, {"work": {"bytes_moved": 1e9}}),
            ("k", OK, 1.0, 0.01, BOUND),
        ],
    ]
    with History.open(tmp_path / "h.sqlite") as history:
        for day, results in enumerate(runs):
            history.append(edge_run(day, results), version=CodeVersion(None, None, None))
        data, changes = web.suite_data(history, "edge", history.runs(), threshold=0.02)
    assert [(v, verdict, c) for _, v, verdict, c in changes] == [("b", "slower", 1.0),
                                                                 ("c", "slower", 1.0)]  # fmt: skip
    assert data["roofline"]["text"] == ["k · n=1"]


PAYLOAD = "</script><svg onload=document.title=/PWNED/.source>"


def test_a_label_or_name_holding_a_script_end_stays_data(tmp_path, monkeypatch):
    import re

    monkeypatch.setattr(web, "_copy_plotly", lambda out: None)
    hostile = run_of(0, {"a": 1.0, PAYLOAD: 2.0})
    hostile.environment = {**ENVIRONMENT, "device": {**ENVIRONMENT["device"], "name": PAYLOAD}}
    with History.open(tmp_path / "h.sqlite") as history:
        history.append(hostile, label=PAYLOAD, version=CodeVersion(None, None, "0.1.0"))
        pages = web.write_report(history, str(tmp_path / "site"), threshold=0.02)
    for page in pages:
        text = page.read_text()
        assert PAYLOAD not in text and "<svg" not in text, page.name
        assert text.count("</script>") == text.count("<script")  # none ended early
    suite_page = (tmp_path / "site" / "scale.html").read_text()
    block = re.search(r'<script type="application/json" id="data">(.*?)</script>', suite_page)
    data = json.loads(block.group(1))
    assert PAYLOAD in json.dumps(data, ensure_ascii=False)  # the words survive, as data


def test_script_json_escapes_what_could_end_a_script_and_parses_back():
    text = web.script_json({"k": "<&>\u2028\u2029"})
    assert not set("<&>\u2028\u2029") & set(text)
    assert json.loads(text) == {"k": "<&>\u2028\u2029"}


def test_every_page_fits_a_phone_s_width(store, tmp_path, monkeypatch):
    monkeypatch.setattr(web, "_copy_plotly", lambda out: None)
    for page in web.write_report(store, str(tmp_path / "site"), threshold=0.02):
        assert "<meta name='viewport' content='width=device-width, initial-scale=1'>" in (
            page.read_text()
        )


def test_a_line_never_crosses_testbeds_and_a_change_is_judged_on_its_own_testbed(tmp_path):
    def on(gpu, uuid, backend, run):
        run.environment = {
            **ENVIRONMENT,
            "gpu_uuid": uuid,
            "backend": {"name": backend},
            "device": {**ENVIRONMENT["device"], "name": gpu},
        }
        return run

    with History.open(tmp_path / "h.sqlite") as history:
        version = CodeVersion(None, None, "0.1.0")
        history.append(
            on("H100", "GPU-aaaaaaaa-1", "pycuda", run_of(0, {"a": 1.0})), version=version
        )
        history.append(
            on("H200", "GPU-bbbbbbbb-2", "pycuda", run_of(1, {"a": 1.3})), version=version
        )
        history.append(
            on("H100", "GPU-aaaaaaaa-1", "cuda-core", run_of(2, {"a": 1.2})), version=version
        )
        history.append(
            on("H100", "GPU-aaaaaaaa-1", "pycuda", run_of(3, {"a": 1.1})), version=version
        )
        runs = history.runs(suite="scale")
        data, changes = web.suite_data(history, "scale", runs, threshold=0.02)
    names = [s["name"] for s in data["points"][0]["series"]]
    # The driver and CUDA version are part of the testbed where the run records them.
    assert names == [
        "a · H100 aaaaaaaa, pycuda, driver 580.1, CUDA 13.0",
        "a · H200 bbbbbbbb, pycuda, driver 580.1, CUDA 13.0",
        "a · H100 aaaaaaaa, cuda-core, driver 580.1, CUDA 13.0",
    ]
    # Runs 2 and 3 (another GPU, another backend) start lines of their own: no change there;
    # run 4 is judged against run 1 alone (+10%), not against run 3 (-8%).
    assert data["points"][0]["regressions"]["runs"] == [4]
    assert [(v, verdict, round(c, 3)) for _, v, verdict, c in changes] == [
        ("a · H100 aaaaaaaa, pycuda, driver 580.1, CUDA 13.0", "slower", 0.1)
    ] * 2
    assert (
        data["testbeds"][data["runs"][1]["bed"]] == "H200 bbbbbbbb, pycuda, driver 580.1, CUDA 13.0"
    )


def test_every_suite_gets_a_page_of_its_own(tmp_path, monkeypatch):
    monkeypatch.setattr(web, "_copy_plotly", lambda out: None)
    long = "x" * 300
    suites = ["a_b", "a/b", "index", "Scale", "scale", long, "../up", "nul\x00l"]
    with History.open(tmp_path / "h.sqlite") as history:
        for k, suite in enumerate(suites):
            history.append(run_of(k % 10, {"a": 1.0}, suite=suite))
        pages = web.write_report(history, str(tmp_path / "site"), threshold=0.02)
    digest = {s: __import__("hashlib").sha256(s.encode()).hexdigest()[:10] for s in suites}
    assert sorted(p.name for p in pages) == sorted(
        [
            "index.html",
            "a_b.html",
            f"a_b-{digest['a/b']}.html",
            f"index-{digest['index']}.html",
            "Scale.html",
            f"scale-{digest['scale']}.html",
            f"{'x' * 60}-{digest[long]}.html",
            "___up.html",
            "nul_l.html",
        ]
    )
    assert all(p.parent == tmp_path / "site" and p.is_file() for p in pages)
    index = (tmp_path / "site" / "index.html").read_text()
    assert f"<a href='a_b-{digest['a/b']}.html'>a/b</a>" in index


@pytest.mark.parametrize("median", [0.0, -1.0, float("inf"), float("-inf")])
def test_a_median_a_log_axis_cannot_take_is_not_drawn(tmp_path, median):
    with History.open(tmp_path / "h.sqlite") as history:
        for day in range(3):
            history.append(run_of(day, {"a": 1.0, "b": 2.0}))
        history._db.execute(
            "UPDATE results SET median_ms = ? WHERE run_id = 2 AND variant = 'a'", (median,)
        )
        runs = history.runs()
        data, changes = web.suite_data(history, "scale", runs, 0.02)
    drawn = {tuple(s["runs"]) for p in data["points"] for s in p["series"] if s["name"] == "a"}
    assert drawn == {(1, 3)}  # run 2's median of a is left out; nothing divides by it
    assert changes == []


def test_a_report_into_an_empty_path_or_with_a_nan_threshold_is_refused(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from gpubench.cli import cli

    monkeypatch.chdir(tmp_path)
    History.open(tmp_path / "h.sqlite").close()
    result = CliRunner().invoke(cli, ["report", "--store", "h.sqlite", "-o", ""])
    assert result.exit_code == 2
    assert (
        result.output.strip()
        == "error: command line: --out: an empty path (''): give the report's folder"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.sqlite"]  # nothing written here
    result = CliRunner().invoke(cli, ["report", "--store", "h.sqlite", "--threshold", "nan"])
    assert result.exit_code == 2
    assert (
        "Invalid value for '--threshold': nan is not a number in the range 0<=x<=10 (see 'gpubench report --help')"
        in (result.output)
    )
