"""Roofline placement and drawing, and the command, on results files the tests build."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from gpubench.cli import cli
from gpubench.model.results import Result, ResultSet, Status, save_json
from gpubench.report import roofline
from gpubench.store import ceilings as store
from tests.store.test_ceilings import ENVIRONMENT, MEASURED


def work_result(suite, variant, n, median_ms, nbytes, flops, status=Status.OK):
    return Result(suite=suite, variant=variant, point={"n": n}, status=status,
                  summary={"median_ms": median_ms, "rel_noise": 0.01},
                  work={"bytes_moved": nbytes, "flops": flops, "elements": 0})  # fmt: skip


RECORD = store.from_results(MEASURED, ENVIRONMENT)  # FP32 65,000 GFLOP/s; DRAM read 3,100 GB/s


def test_placement_is_exact_on_both_sides_of_the_ridge():
    results = [
        # 1 GB and 1 GFLOP in 1 ms: intensity 1, 1,000 GFLOP/s of an attainable 3,100.
        work_result("m", "slow", 1, 1.0, 10**9, 10**9),
        # intensity 1000 (compute side): 2e12 flops in 40 ms = 50,000 of 65,000.
        work_result("m", "fast", 1, 40.0, 2 * 10**9, 2 * 10**12),
        # no arithmetic: 2.5 GB in 1 ms = 2,500 GB/s of 3,100.
        work_result("t", "copy", 1, 1.0, 25 * 10**8, 0),
        work_result("t", "bad", 1, 1.0, 10**9, 0, status=Status.INCORRECT),
    ]
    placed = {p.variant: p for p in roofline.place(results, RECORD)}
    assert set(placed) == {"slow", "fast", "copy"}  # incorrect results are never placed
    slow, fast, copy = placed["slow"], placed["fast"], placed["copy"]
    assert slow.intensity == 1.0 and slow.gflops == pytest.approx(1000.0)
    assert slow.attainable == pytest.approx(3100.0) and slow.bound == "memory"
    assert slow.fraction == pytest.approx(1000 / 3100)
    assert fast.intensity == 1000.0 and fast.attainable == 65000.0 and fast.bound == "compute"
    assert fast.fraction == pytest.approx(50000 / 65000)
    assert copy.intensity is None and copy.gbps == pytest.approx(2500.0)
    assert copy.fraction == pytest.approx(2500 / 3100)
    assert roofline.ridge_point(RECORD) == pytest.approx(65000 / 3100)


def test_a_profiled_run_is_also_placed_at_its_measured_dram_intensity(tmp_path):
    profiled = work_result("m", "tiled", 1, 1.0, 10**9, 8 * 10**9)
    profiled.metrics["dram_bytes"] = 4 * 10**9  # the kernel moved 4x the minimum
    (p,) = roofline.place([profiled], RECORD)
    assert p.intensity == 8.0 and p.measured_intensity == 2.0
    roofline.draw([p], RECORD, str(tmp_path / "r.svg"), "t")
    assert "measured DRAM intensity" in (tmp_path / "r.svg").read_text()


def test_without_measured_ceilings_the_theoretical_ones_stand_in():
    record = store.theoretical_only(ENVIRONMENT)
    (p,) = roofline.place([work_result("m", "a", 1, 1.0, 10**9, 10**9)], record)
    assert p.attainable == pytest.approx(3352.3) and record.source == "theoretical"


def test_the_command_prints_the_table_and_draws_a_png(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path / "cache"))
    store.save(RECORD)
    results = [work_result("m", "slow", n, 1.0, 10**9, 10**9) for n in (1, 2)]
    results.append(work_result("t", "copy", 1, 1.0, 25 * 10**8, 0))
    save_json(ResultSet(suite="m", environment=ENVIRONMENT, spec={}, results=results),
              tmp_path / "r.json")  # fmt: skip
    png, md = tmp_path / "roof.png", tmp_path / "roof.md"
    out = CliRunner().invoke(cli, ["roofline", str(tmp_path / "r.json"), "-o", str(png),
                                   "--markdown", str(md)])  # fmt: skip
    assert out.exit_code == 0, out.output
    assert "32.3%" in out.output and "memory" in out.output  # 1,000 of 3,100
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    text = md.read_text()
    assert "| suite | variant | point |" in text and "| m | slow | n=1 |" in text


def test_the_command_says_when_it_has_nothing_or_a_wrong_file(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path / "cache"))
    failed = [work_result("m", "a", 1, 1.0, 10**9, 10**9, status=Status.CRASHED)]
    save_json(ResultSet(suite="m", environment=ENVIRONMENT, spec={}, results=failed),
              tmp_path / "r.json")  # fmt: skip
    out = CliRunner().invoke(cli, ["roofline", str(tmp_path / "r.json")])
    assert out.exit_code == 2 and "no measured result" in out.output
    assert "theoretical peaks stand in" in out.output
    store.save(RECORD, tmp_path / "c.json")
    out = CliRunner().invoke(cli, ["roofline", str(tmp_path / "c.json")])
    assert out.exit_code == 2 and "is a ceilings record" in out.output
    (tmp_path / "x.json").write_text("{}")
    out = CliRunner().invoke(cli, ["roofline", str(tmp_path / "x.json")])
    assert out.exit_code == 2 and "Traceback" not in out.output


def _drawn(monkeypatch, draw, *args) -> list[tuple[str, str]]:
    from tests import snapshots

    saved = snapshots.SavedFigures.instead_of_savefig(monkeypatch)
    draw(*args)
    return saved.saved


def _placement(suite, variant, gflops, intensity, measured=None, gbps=100.0):
    return roofline.Placement(suite, variant, {"n": 1}, "GPU", gbps, gflops, intensity,
                              1000.0, 0.5, "memory", measured_intensity=measured)  # fmt: skip


def test_the_drawing_is_the_pinned_one(monkeypatch):
    """Every roof (measured, theoretical, L2, FP64), the ridge, a marker per variant with its
    hollow twin where ncu measured the traffic, and the bandwidth panel: pinned."""
    from pathlib import Path

    from tests import snapshots

    placed = [
        _placement("matmul", "naive", 900.0, 2.0),
        _placement("matmul", "tiled", 20000.0, 16.0, measured=8.0),
        _placement("matmul", "tiled", 30000.0, 32.0),  # a second point: one legend entry
        _placement("reduction", "warp_shuffle", 700.0, 0.25, measured=0.2),
        _placement("transpose", "naive", None, None, gbps=900.0),
        _placement("transpose", "naive", None, None, gbps=1200.0),  # best of two
        _placement("transpose", "padded", None, None, gbps=2900.0),
    ]
    ((path, text),) = _drawn(monkeypatch, roofline.draw, placed, RECORD, "r.png", "H100")
    assert path == "r.png"
    theoretical = store.CeilingsRecord(gpu_uuid=None, gpu_name="GPU", measured={},
                                       theoretical={"fp32_gflops": 50000.0,
                                                    "dram_read_gbps": 3000.0},
                                       source="theoretical")  # fmt: skip
    ((_, alone),) = _drawn(monkeypatch, roofline.draw, placed[:1], theoretical, "t.svg", "T")
    pinned = Path(__file__).parent / "figures"
    snapshots.matches(pinned / "roofline.txt", text)
    snapshots.matches(pinned / "roofline_theoretical.txt", alone)


def test_placement_at_the_edges_the_ridge_one_byte_one_flop_and_no_work():
    record = store.CeilingsRecord(gpu_uuid="GPU-E", gpu_name="Edge GPU",
                                  measured={"fp32_gflops": 4000.0, "dram_read_gbps": 1000.0},
                                  theoretical={})  # fmt: skip
    unmeasured = work_result("m", "first_crashed", 1, 1.0, 10**9, 10**9, status=Status.CRASHED)
    no_work = Result(suite="m", variant="no_work", point={"n": 1}, status=Status.OK,
                     summary={"median_ms": 1.0})  # fmt: skip
    results = [
        unmeasured,  # skipped, and the ones after it are still placed
        work_result("m", "at_ridge", 1, 1.0, 1000, 4000),  # intensity 4 = 4000 / 1000
        work_result("m", "one_byte", 1, 1e-6, 1, 0),
        work_result("m", "one_flop", 1, 1e-6, 4, 1),
        work_result("m", "untimed", 1, 0.0, 10**9, 10**9),
        no_work,
    ]
    placed = {p.variant: p for p in roofline.place(results, record)}
    assert list(placed) == ["at_ridge", "one_byte", "one_flop"]
    ridge, byte, flop = placed["at_ridge"], placed["one_byte"], placed["one_flop"]
    assert (ridge.intensity, ridge.attainable, ridge.bound) == (4.0, 4000.0, "compute")
    assert {p.gpu for p in placed.values()} == {"Edge GPU"}
    assert (byte.gflops, byte.intensity, byte.bound) == (None, None, "memory")
    assert byte.gbps == pytest.approx(1.0) and byte.attainable == 1000.0
    assert byte.fraction == pytest.approx(1.0 / 1000.0)
    assert (flop.intensity, flop.bound, flop.measured_intensity) == (0.25, "memory", None)
    assert flop.attainable == 250.0 and flop.gflops == pytest.approx(1.0)
    no_dram = store.CeilingsRecord(gpu_uuid="GPU-E", gpu_name="E", measured={"fp32_gflops": 1.0},
                                   theoretical={})  # fmt: skip
    assert roofline.place(results, no_dram) == []
    assert roofline.ridge_point(no_dram) is None and roofline.ridge_point(record) == 4.0
    no_compute = store.CeilingsRecord(gpu_uuid="GPU-E", gpu_name="E",
                                      measured={"dram_read_gbps": 1.0}, theoretical={})  # fmt: skip
    assert roofline.ridge_point(no_compute) is None
    assert [p.intensity for p in roofline.place(results[1:2], no_compute)] == [None]


def test_paths_and_gpu_names_with_brackets_are_printed_as_they_are(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path / "cache"))
    environment = {**ENVIRONMENT, "gpu_uuid": "GPU-[/x]",
                   "device": {**ENVIRONMENT["device"], "name": "GPU [/bold]"}}  # fmt: skip
    results = [work_result("m", "slow", 1, 1.0, 10**9, 10**9)]
    save_json(ResultSet(suite="m", environment=environment, spec={}, results=results),
              tmp_path / "r.json")  # fmt: skip
    svg = tmp_path / "[bold]roof.svg"
    out = CliRunner().invoke(cli, ["roofline", str(tmp_path / "r.json"), "-o", str(svg)])
    assert out.exit_code == 0, out.output
    assert f"roofline: {svg}" in out.output and svg.exists()
    assert "note: no measured ceilings for GPU [/bold]: the theoretical peaks" in out.output


def test_the_drawing_at_its_limits_is_the_pinned_one(monkeypatch):
    """Twelve variants (a legend in two columns), intensities below 1/16 FLOP/B and a ridge
    below 16 (the axis clamps at 1/64 and 64), bandwidths below 1 GB/s and best-of-two in
    each order, sorted by suite then bandwidth; a record said to be measured that holds no
    measurement (its roofs are the theoretical ones); and one without a compute roof."""
    from pathlib import Path

    from tests import snapshots

    placed = [_placement("s", f"v{i:02d}", 1.0 + i, 0.004 * (i + 1)) for i in range(11)]
    placed.append(_placement("t", "m", 12.0, 0.048, measured=0.03))  # not the first colour
    placed += [
        _placement("b", "x", None, None, gbps=500.0),
        _placement("a", "y", None, None, gbps=900.0),
        _placement("a", "y", None, None, gbps=300.0),  # the best of two comes first
        _placement("a", "z", None, None, gbps=0.5),  # below 1 GB/s
        _placement("a", "z", None, None, gbps=0.25),
    ]
    low_ridge = store.CeilingsRecord(gpu_uuid=None, gpu_name="GPU", measured={},
                                     theoretical={"fp32_gflops": 1000.0,
                                                  "dram_read_gbps": 100.0})  # fmt: skip
    ((_, wide),) = _drawn(monkeypatch, roofline.draw, placed, low_ridge, "w.png", "Wide")
    no_compute = store.CeilingsRecord(gpu_uuid=None, gpu_name="GPU", measured={},
                                      theoretical={"dram_read_gbps": 100.0},
                                      source="theoretical")  # fmt: skip
    high = [_placement("s", "v", 100.0, 6.0)]
    ((_, bare),) = _drawn(monkeypatch, roofline.draw, high, no_compute, "n.png", "No compute")
    pinned = Path(__file__).parent / "figures"
    snapshots.matches(pinned / "roofline_wide.txt", wide)
    snapshots.matches(pinned / "roofline_no_compute.txt", bare)


def test_a_picture_matplotlib_cannot_write_is_refused_before_drawing(tmp_path):
    from gpubench.errors import ConfigError

    pytest.importorskip("matplotlib")
    target = tmp_path / "roofline.txt"
    with pytest.raises(ConfigError) as info:
        roofline.draw([], None, str(target), "t")  # refused before the ceilings are looked at
    assert str(info.value).startswith(
        f"{target}: --output: a picture needs an extension "
        "matplotlib writes, got '.txt': .png, .svg or .pdf (or "
    )
    assert not target.exists()
