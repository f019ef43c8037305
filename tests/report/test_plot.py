"""Sweep plots: what is drawn (exact series) and that a picture is written; no GPU."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from gpubench.cli import cli
from gpubench.errors import ConfigError
from gpubench.model.results import Result, ResultSet, Status, save_json
from gpubench.report import plot


def result(variant, size, tile, gbps, status=Status.OK):
    return Result(suite="transpose", variant=variant, point={"size": size, "tile": tile},
                  status=status, summary={"median_ms": 1000.0 / gbps, "rel_noise": 0.01},
                  metrics={"gbps": gbps, "speedup": 1.0})  # fmt: skip


RESULTS = [
    result(v, size, tile, base * size / 1024 + tile)
    for v, base in (("naive", 1.0), ("padded", 3.0))
    for size in (1024, 4096, 16384, 65536)
    for tile in (16, 32)
] + [result("broken", 1024, 16, 5.0, status=Status.INCORRECT)]


def test_defaults_draw_bandwidth_against_the_widest_numeric_parameter():
    chart = plot.build(RESULTS)
    assert chart.x == "size" and chart.y.key == "gbps" and chart.log_x
    # tile varies too: each line is the best over it (tile 32 adds more here).
    assert chart.best_over == ["tile"]
    lines = chart.lines[None]
    assert set(lines) == {"naive", "padded"}  # failed results are not drawn
    assert lines["naive"] == [(1024.0, 33.0), (4096.0, 36.0), (16384.0, 48.0), (65536.0, 96.0)]


def test_the_best_of_a_time_is_its_minimum_and_derived_parameters_split_nothing():
    derived = [Result(suite="t", variant="a", point={"size": s, "rows": s, "tile": t},
                      status=Status.OK, summary={"median_ms": s / t, "rel_noise": 0.01})
               for s in (8, 64) for t in (1, 2)]  # fmt: skip
    chart = plot.build(derived, y="time_ms")
    assert chart.best_over == ["tile"]  # rows follows size: not folded, not split
    assert chart.lines[None] == {"a": [(8.0, 4.0), (64.0, 32.0)]}


def test_facets_and_by_split_the_lines():
    chart = plot.build(RESULTS, x="size", y="time_ms", by="tile", facet="variant")
    assert set(chart.lines) == {"naive", "padded"} and chart.best_over == []
    assert set(chart.lines["naive"]) == {"tile=16", "tile=32"}
    assert chart.lines["padded"]["tile=32"][0] == (1024.0, pytest.approx(1000.0 / 35.0))


CONSTANT = [result(v, 1024, 16, 5.0) for v in ("naive", "padded")]
NO_GBPS = [Result("transpose", "naive", {"size": s}, Status.OK, summary={"median_ms": 1.0},
                  metrics={"speedup": 1.0}) for s in (1, 2)]  # fmt: skip


@pytest.mark.parametrize(
    ("results", "kwargs", "key", "message"),
    [
        (RESULTS, {"x": "sise"}, "--x", "--x: no parameter 'sise' in these results (did you mean "
         "'size'?); parameters: size, tile"),
        (RESULTS, {"y": "gflops"}, "--y", "--y: no metric 'gflops' in these results (did you mean 'gbps'?); "
         "metrics: gbps, speedup, time_ms"),
        (RESULTS, {"by": "colour"}, "--by", "--by: no parameter 'colour' in these results; "
         "parameters: variant, size, tile"),
        (RESULTS, {"facet": "colour"}, "--facet", "--facet: no parameter 'colour' in these "
         "results; parameters: variant, size, tile"),
        (CONSTANT, {}, "--x", "--x: no numeric parameter varies in these results: nothing to put "
         "on the x axis"),
        (NO_GBPS, {"y": "gbps"}, "--y", "--y: no metric 'gbps' in these results; metrics: "
         "speedup, time_ms"),
        ([result("a", 1, 1, 1.0, status=Status.CRASHED)], {}, None,
         "no measured results to plot (every result failed or was skipped)"),
    ],
)  # fmt: skip
def test_each_refusal_is_its_one_exact_line_naming_the_option(results, kwargs, key, message):
    with pytest.raises(ConfigError) as info:
        plot.build(results, **kwargs)
    assert str(info.value) == message and info.value.key == key


def test_a_metric_the_catalog_does_not_know_is_plotted_under_its_own_name():
    results = [Result("s", "v", {"n": n}, Status.OK, summary={"median_ms": 1.0},
                      metrics={"hits": float(n)}) for n in (1, 2)]  # fmt: skip
    chart = plot.build(results, y="hits")
    assert (chart.y.key, chart.y.header, chart.y.unit) == ("hits", "hits", "")


def test_the_command_writes_a_png_beside_the_results_by_default(tmp_path):
    path = tmp_path / "t.json"
    save_json(ResultSet(suite="transpose", environment={"device": {"name": "Fake GPU"}}, spec={},
                        results=RESULTS), path)  # fmt: skip
    out = CliRunner().invoke(cli, ["plot", str(path)])
    assert out.exit_code == 0, out.output
    png = tmp_path / "t.png"
    assert png.read_bytes()[:4] == b"\x89PNG" and "GB/s vs size, log x" in out.output
    svg = tmp_path / "t.svg"
    out = CliRunner().invoke(cli, ["plot", str(path), "--facet", "tile", "-o", str(svg)])
    assert out.exit_code == 0 and svg.read_text().lstrip().startswith("<?xml")
    out = CliRunner().invoke(cli, ["plot", str(path), "-o", str(tmp_path / "t.txt")])
    assert out.exit_code == 2 and "give a .png, .svg or .pdf file" in out.output


def test_a_facet_or_split_with_too_many_values_is_refused_before_drawing():
    from gpubench.errors import ConfigError
    from gpubench.model.results import Result, Status
    from gpubench.report import plot as plotting

    many = max(plotting.MAX_PANELS, plotting.MAX_LINES) + 1
    results = [Result("s", "v", {"n": n, "k": k}, Status.OK, summary={"median_ms": 1.0 + n})
               for n in (1, 2, 3) for k in range(many)]  # fmt: skip
    with pytest.raises(ConfigError, match=f"k makes {many} panels"):
        plotting.build(results, "n", "time_ms", "variant", "k")
    with pytest.raises(ConfigError, match=f"k makes {many} lines in one panel"):
        plotting.build(results, "n", "time_ms", "k", None)
    few = [r for r in results if r.point["k"] < 4]
    assert len(plotting.build(few, "n", "time_ms", "variant", "k").lines) == 4


def test_the_drawings_are_the_pinned_ones(monkeypatch):
    """Panels per facet (a grid of three columns, the spare axes off), log axes, the eleventh
    line dashed in the first colour again, the legend outside a panel of more than eight
    lines: what is drawn, pinned (tests/report/figures/)."""
    from pathlib import Path

    from tests import snapshots

    saved = snapshots.SavedFigures.instead_of_savefig(monkeypatch)
    plot.draw(plot.build(RESULTS, facet="tile"), "facets.png", "transpose: tiles")
    many = [result(f"v{i:02d}", size, tile, 10.0 * (i + 1) + size / 1024)
            for i in range(11) for size in (1024, 4096) for tile in (8, 16, 32, 64)]  # fmt: skip
    plot.draw(plot.build(many, facet="tile"), "many.svg", "eleven variants")
    plot.draw(plot.build(RESULTS, y="time_ms", by="tile"), "time.png", "time by tile")
    pinned = Path(__file__).parent / "figures"
    for (path, text), name in zip(saved.saved, ("facets.png", "many.svg", "time.png"),
                                  strict=True):  # fmt: skip
        assert path == name
        snapshots.matches(pinned / f"plot_{Path(name).stem}.txt", text)


def test_the_default_x_is_not_the_parameter_that_splits_panels_or_lines():
    # tile has more values than size, but each panel (or line) holds one tile: x is size.
    results = [result("naive", size, tile, 1.0 + size + tile)
               for size in (1024, 4096) for tile in (8, 16, 32, 64)]  # fmt: skip
    assert plot.build(results).x == "tile"
    assert plot.build(results, facet="tile").x == "size"
    assert plot.build(results, by="tile").x == "size"
    assert plot.build(results, x="tile", by="tile").x == "tile"  # asked for: kept


def _grid(count: int) -> list[Result]:
    return [Result("s", "v", {"n": n, "k": k}, Status.OK, summary={"median_ms": 1.0 + n})
            for n in (1, 2) for k in range(count)]  # fmt: skip


def test_the_panel_and_line_limits_hold_at_the_limit_and_refuse_one_past_it():
    assert len(plot.build(_grid(plot.MAX_PANELS), "n", "time_ms", "variant", "k").lines) == 36
    with pytest.raises(ConfigError) as info:
        plot.build(_grid(plot.MAX_PANELS + 1), "n", "time_ms", "variant", "k")
    assert (str(info.value), info.value.key) == (
        "--facet: k makes 37 panels, more than 36 one picture can show: facet by a parameter "
        "with fewer values", "--facet")  # fmt: skip
    assert len(plot.build(_grid(plot.MAX_LINES), "n", "time_ms", "k").lines[None]) == 40
    with pytest.raises(ConfigError) as info:
        plot.build(_grid(plot.MAX_LINES + 1), "n", "time_ms", "k")
    assert (str(info.value), info.value.key) == (
        "--by: k makes 41 lines in one panel, more than 40 one legend can tell apart: split by "
        "a parameter with fewer values, or --facet by this one", "--by")  # fmt: skip


def test_results_without_a_number_for_x_or_a_value_for_y_are_left_out_and_the_rest_drawn():
    def at(n, ms=None, gbps=None):
        return Result("s", "v", {"n": n}, Status.OK, summary={"median_ms": ms},
                      metrics={} if gbps is None else {"gbps": gbps})  # fmt: skip

    results = [at(1, 1.0), at(2, 2.0, 5.0), at(True, 3.0, 6.0), at("4", 4.0, 7.0), at(8, 8.0, 9.0)]
    chart = plot.build(results, "n", "gbps")
    assert chart.lines == {None: {"v": [(2.0, 5.0), (8.0, 9.0)]}}
    with pytest.raises(ConfigError) as info:
        plot.build(results[:1] + results[2:4], "n", "gbps")
    assert (str(info.value), info.value.key) == ("--y: no result has both n and gbps", "--y")


@pytest.mark.parametrize(
    ("xs", "ys", "log_x", "log_y"),
    [
        ((1, 10), (1.0, 10.0), True, True),  # a ratio of exactly 10: log
        ((1, 9), (1.0, 9.99), False, False),
        ((0.5, 5), (0.5, 5.0), True, True),  # below 1, still a ratio of 10
        ((0, 100), (0.0, 100.0), False, False),  # zero: never log (no division either)
        ((1, 2), (0.001, 10.0), False, True),  # a ratio of 10^4 whose product is 0.01
    ],
)  # fmt: skip
def test_an_axis_is_logarithmic_from_a_ratio_of_ten_between_positive_ends(xs, ys, log_x, log_y):
    results = [Result("s", "v", {"n": x}, Status.OK, summary={"median_ms": 1.0},
                      metrics={"hits": y}) for x, y in zip(xs, ys, strict=True)]  # fmt: skip
    chart = plot.build(results, "n", "hits")
    assert (chart.log_x, chart.log_y) == (log_x, log_y)


def test_forty_lines_eight_and_nine_are_drawn_as_pinned(monkeypatch):
    """Ten colours, then the same ten dashed, dotted and dash-dotted with another marker
    (no two of the 40 lines alike); a legend of more than eight lines moves outside."""
    from pathlib import Path

    from tests import snapshots

    saved = snapshots.SavedFigures.instead_of_savefig(monkeypatch)
    for count in (40, 8, 9):
        plot.draw(plot.build(_grid(count), "n", "time_ms", "k"), f"l{count}.png", f"{count}")
    text = "".join(drawn for _, drawn in saved.saved)
    snapshots.matches(Path(__file__).parent / "figures" / "plot_lines.txt", text)


def test_the_best_over_a_folded_parameter_does_not_depend_on_the_order_of_the_results():
    forward = plot.build(RESULTS).lines[None]
    assert plot.build(list(reversed(RESULTS))).lines[None]["naive"] == forward["naive"]
    derived = [Result(suite="t", variant="a", point={"size": 8, "tile": t}, status=Status.OK,
                      summary={"median_ms": 8 / t, "rel_noise": 0.01}) for t in (2, 1)]  # fmt: skip
    assert plot.build(derived, x="size", y="time_ms").lines[None] == {"a": [(8.0, 4.0)]}


def test_a_facet_or_line_on_a_list_valued_parameter_is_one_panel_per_value():
    shaped = [
        Result(
            suite="t",
            variant="a",
            point={"size": s, "shape": shape},
            status=Status.OK,
            summary={"median_ms": s / 8},
            metrics={"gbps": float(s * len(shape))},
        )
        for s in (8, 64)
        for shape in ([1, 2], [4, 8, 16])
    ]
    chart = plot.build(shaped, x="size", facet="shape")
    assert chart.lines == {
        "[1, 2]": {"a": [(8.0, 16.0), (64.0, 128.0)]},
        "[4, 8, 16]": {"a": [(8.0, 24.0), (64.0, 192.0)]},
    }
    chart = plot.build(shaped, x="size", by="shape")
    assert chart.lines == {
        None: {
            "shape=[1, 2]": [(8.0, 16.0), (64.0, 128.0)],
            "shape=[4, 8, 16]": [(8.0, 24.0), (64.0, 192.0)],
        }
    }


@pytest.mark.parametrize(
    ("name", "shown"),
    [("chart.foo", "'.foo'"), ("chart", "no extension"), ("chart.PNG.bak", "'.bak'")],
)
def test_a_picture_matplotlib_cannot_write_is_refused_before_drawing(tmp_path, name, shown):
    pytest.importorskip("matplotlib")
    target = tmp_path / name
    with pytest.raises(ConfigError) as info:
        plot.draw(plot.build(RESULTS), str(target), "t")
    assert str(info.value).startswith(
        f"{target}: --output: a picture needs an extension "
        f"matplotlib writes, got {shown}: .png, .svg or .pdf (or "
    )
    assert ".webp" in str(info.value) and not target.exists()


@pytest.mark.parametrize(("kwargs", "option"), [({"by": ""}, "--by"), ({"facet": " "}, "--facet")])
def test_an_empty_by_or_facet_is_refused_not_ignored(kwargs, option):
    with pytest.raises(ConfigError) as info:
        plot.build(RESULTS, **kwargs)
    empty = next(iter(kwargs.values()))
    assert str(info.value) == (
        f"{option}: an empty name ({empty!r}): give variant or a parameter; parameters: size, tile"
    )
