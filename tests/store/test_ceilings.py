"""Ceilings records: made from ceilings-suite results, stored per GPU, read back; no GPU."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gpubench.errors import ConfigError
from gpubench.model.results import Result, ResultSet, Status, save_json
from gpubench.store import ceilings as store

H100 = {"name": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "sm_count": 132,
        "peak_bandwidth_gbps": 3352.3, "peak_fp32_gflops": 66908.2,
        "peak_fp64_gflops": 33454.1, "peak_fp16_gflops": 133816.3,
        "peak_shared_gbps": 33454.1}  # fmt: skip
ENVIRONMENT = {"gpu_uuid": "GPU-test-1", "device": H100}


def ceiling_result(variant: str, metric: str, value: float, status=Status.OK,
                   clock: float | None = 1980.0, capped: bool = False) -> Result:  # fmt: skip
    summary = {"median_ms": 1.0, "rel_noise": 0.01, "clock_mhz": clock, "clock_capped": capped}
    return Result(suite="ceilings", variant=variant, point={"block": 256}, status=status,
                  summary=summary, metrics={metric: value})  # fmt: skip


MEASURED = [
    ceiling_result("dram_read", "gbps", 3100.0),
    ceiling_result("dram_write", "gbps", 2900.0),
    ceiling_result("dram_copy", "gbps", 2950.0),
    ceiling_result("l2_read", "gbps", 9000.0),
    ceiling_result("shared_read", "gbps", 30000.0),
    ceiling_result("fp32_fma", "gflops", 65000.0),
    ceiling_result("fp64_fma", "gflops", 33000.0),
    ceiling_result("fp16_fma", "gflops", 120000.0, status=Status.INCORRECT),
    ceiling_result("tensor_fp16", "gflops", 700000.0, clock=1455.0, capped=True),
]


def test_a_record_takes_each_verified_ceiling_and_the_theoretical_figures():
    record = store.from_results(MEASURED, ENVIRONMENT)
    assert record.measured_at == ""  # no time given: none recorded
    assert store.from_results(MEASURED, ENVIRONMENT, "2026-11-24").measured_at == "2026-11-24"
    assert record.measured["dram_read_gbps"] == 3100.0
    assert record.measured["tensor_fp16_gflops"] == 700000.0
    assert "fp16_gflops" not in record.measured  # incorrect: never a ceiling
    assert record.theoretical["fp32_gflops"] == 66908.2
    assert record.theoretical["l2_read_gbps"] is None
    rows = {row[0]: row for row in store.rows(record)}
    assert rows["FP32 FMA"][1:] == ("65,000 GFLOP/s", "66,908 GFLOP/s", "97.1%", "1,980 MHz")
    assert rows["FP16 half2 FMA"][1:] == ("not measured", "133,816 GFLOP/s", "", "")
    assert rows["L2 read"][2:] == ("—", "", "1,980 MHz")
    # The GEMM held the clock below the throttle threshold throughout: its clock and why.
    assert rows["FP16 tensor cores (cuBLAS GEMM)"][1:] == (
        "700,000 GFLOP/s",
        "—",
        "",
        "1,455 MHz (capped)",
    )
    assert record.clock_capped == ["tensor_fp16_gflops"]
    assert record.get("fp16_gflops") == 133816.3  # the theoretical one stands in


def test_records_are_stored_per_gpu_and_read_back(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path))
    record = store.from_results(MEASURED, ENVIRONMENT)
    path = store.save(record)
    assert path == tmp_path / "ceilings" / "GPU-test-1.json"
    again = store.load_for("GPU-test-1")
    assert again.measured == record.measured and again.gpu_name == H100["name"]
    assert store.load_for("GPU-other") is None and store.load_for(None) is None
    copy = store.save(record, tmp_path / "copy.json")
    assert store.load_file(copy).measured == record.measured


def test_a_results_file_of_the_ceilings_suite_serves_as_a_record(tmp_path):
    path = tmp_path / "c.json"
    save_json(ResultSet(suite="ceilings", environment=ENVIRONMENT, spec={}, results=MEASURED,
                        created="2026-11-24T09:00:00+00:00"), path)  # fmt: skip
    record = store.load_file(path)
    assert record.measured["fp32_gflops"] == 65000.0
    assert record.measured_at == "2026-11-24T09:00:00+00:00" and record.source == "measured"
    other = tmp_path / "o.json"
    save_json(ResultSet(suite="x", environment=ENVIRONMENT, spec={},
                        results=[Result(suite="x", variant="a", point={}, status=Status.SKIPPED)]),
              other)  # fmt: skip
    with pytest.raises(ConfigError) as info:
        store.load_file(other)
    assert str(info.value) == (f"{other}: holds neither a ceilings record nor results of the "
                               "ceilings suite")  # fmt: skip


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"kind": "gpubench-ceilings", "version": 1}', "object missing required field `gpu_name`"),
        ('{"kind": "gpubench-ceilings", "gpu_name": "x", "measured": {"a": "fast"}}',
         "measured.a: expected `float`, got `str` (found 'fast')"),
        ('{"kind": "gpubench-ceilings", "gpu_name": "x", "measured": {}, "clock_capped": 5}',
         "clock_capped: expected `array`, got `int` (found 5)"),
        ('{"kind": "gpubench-ceilings", "gpu_name": "x", "measured": {}, "gpu_uuid": 7}',
         "gpu_uuid: expected `str | null`, got `int` (found 7)"),
        ("not json at all", ""),
    ],
)  # fmt: skip
def test_damaged_records_are_one_line(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ConfigError) as info:
        store.load_file(path)
    assert str(path) in str(info.value) and message in str(info.value)


def test_the_theoretical_peaks_follow_the_programming_guide_tables():
    from gpubench.model.device import DeviceInfo

    def device(cc, sms, clock):
        return DeviceInfo(name="x", compute_capability=cc, sm_count=sms, sm_clock_mhz=clock,
                          memory_clock_mhz=2619, memory_bus_width_bits=5120, memory_bytes=1,
                          l2_bytes=1, shared_per_block_bytes=1, shared_per_block_optin_bytes=1,
                          shared_per_sm_bytes=1, registers_per_sm=1, registers_per_block=1,
                          max_threads_per_block=1024, max_threads_per_sm=2048, warp_size=32)  # fmt: skip

    h100 = device((9, 0), 132, 1980)
    assert h100.peak_fp32_gflops == pytest.approx(66908.2, rel=1e-5)
    assert h100.peak_fp64_gflops == pytest.approx(33454.1, rel=1e-5)
    assert h100.peak_fp16_gflops == pytest.approx(133816.3, rel=1e-5)
    assert h100.peak_shared_gbps == pytest.approx(132 * 128 * 1.98, rel=1e-9)
    rtx = device((8, 6), 82, 1695)  # an RTX 3090: FP64 at 1/64, FP16 half2 at the FP32 rate
    assert rtx.peak_fp64_gflops == pytest.approx(rtx.peak_fp32_gflops / 64)
    assert rtx.peak_fp16_gflops == pytest.approx(rtx.peak_fp32_gflops)
    assert device((13, 7), 1, 1000).peak_fp64_gflops is None  # unknown part: no guess
    assert json.loads(json.dumps(h100.to_dict()))["peak_fp64_gflops"] > 0


def test_the_ceilings_suite_references_are_exact_for_its_kernels():
    """The references the GPU kernels are checked against (kernels_cu/ceilings.cu)."""
    from gpubench.load import registry
    from tests.fakes import FAKE_DEVICE

    bench = registry.get("ceilings")
    point = {**bench.defaults(), "dram_bytes": 1 << 24, "l2_bytes": 1 << 16, "gemm_size": 16}
    inputs = bench.inputs(point, np.random.default_rng(0))
    assert inputs["data"].max() < 1 << 16 and inputs["total"].tolist() == [0]
    for variant in bench.variant_names:
        case = bench.case(variant, point, FAKE_DEVICE, inputs)
        expected = bench.reference(bench.variant(variant).computes, point, inputs)
        assert set(expected) == set(case.outputs), variant
        for name, spec in case.outputs.items():
            assert expected[name].shape == spec.shape, variant
    one_wave = FAKE_DEVICE.sm_count * (FAKE_DEVICE.max_threads_per_sm // 256)
    shared = bench.reference("shared_read", point, inputs)["total"][0]
    assert shared == inputs["data"][: 16 * 256].sum() * (point["shared_iterations"] // 4) * one_wave
    fp32 = bench.reference("fp32_fma", point, inputs)["out"]
    assert fp32[0] == 8 + 3.5 + 8 * 4096 * 2.0**-20
    assert bench.reference("fp16_fma", point, inputs)["out"][0] == 2 * (8 * 1024 + 224 + 8 * 960)
    assert bench.reference("dram_write", point, inputs)["out"][-1] == (1 << 22) - 1
    fma = bench.case("fp32_fma", point, FAKE_DEVICE, inputs)
    assert fma.work.flops == 2 * 8 * 4096 * one_wave * 8 * 256


def test_the_clocks_travel_with_the_record_and_a_damaged_clock_entry_is_refused(tmp_path):
    record = store.from_results(MEASURED, ENVIRONMENT)
    again = store.load_file(store.save(record, tmp_path / "r.json"))
    assert again.clock_mhz == record.clock_mhz and again.clock_mhz["tensor_fp16_gflops"] == 1455.0
    assert again.clock_capped == ["tensor_fp16_gflops"]
    damaged = {**record.to_dict(), "clock_mhz": "fast"}
    (tmp_path / "d.json").write_text(json.dumps(damaged))
    with pytest.raises(ConfigError, match="clock_mhz: expected `object`, got `str`"):
        store.load_file(tmp_path / "d.json")


def test_the_best_result_of_a_ceiling_brings_its_own_clock():
    results = [ceiling_result("tensor_fp16", "gflops", 600000.0, clock=1300.0, capped=True),
               ceiling_result("tensor_fp16", "gflops", 650000.0, clock=1900.0)]  # fmt: skip
    record = store.from_results(results, ENVIRONMENT)
    assert record.measured["tensor_fp16_gflops"] == 650000.0
    assert record.clock_mhz == {"tensor_fp16_gflops": 1900.0} and record.clock_capped == []


def test_a_ceiling_keeps_the_first_of_equal_figures_and_drops_a_clock_the_better_one_lacks():
    equal = [ceiling_result("fp32_fma", "gflops", 0.5, clock=1900.0),
             ceiling_result("fp32_fma", "gflops", 0.5, clock=1800.0),
             ceiling_result("fp32_fma", "gflops", 0.0, clock=1000.0)]  # fmt: skip
    record = store.from_results(equal, ENVIRONMENT)
    assert record.measured == {"fp32_gflops": 0.5} and record.clock_mhz == {"fp32_gflops": 1900.0}
    better_unclocked = [ceiling_result("fp32_fma", "gflops", 60000.0, clock=1300.0, capped=True),
                        ceiling_result("fp32_fma", "gflops", 65000.0, clock=None)]  # fmt: skip
    record = store.from_results(better_unclocked, ENVIRONMENT, when="2026-11-24")
    assert record.clock_mhz == {} and record.clock_capped == []
    assert (record.measured_at, record.environment) == ("2026-11-24", ENVIRONMENT)
    assert store.from_results([], {}).gpu_name == "unknown GPU"


def test_a_clock_without_a_measured_figure_is_not_shown():
    record = store.from_results([], ENVIRONMENT)
    record.clock_mhz["fp32_gflops"] = 1980.0  # a damaged record: a clock and no figure
    rows = {row[0]: row for row in store.rows(record)}
    assert rows["FP32 FMA"][1:] == ("not measured", "66,908 GFLOP/s", "", "")


def test_a_record_reads_back_whole(tmp_path):
    """Every field survives save and load, and what is not a record is refused by name."""
    record = store.from_results(MEASURED, {**ENVIRONMENT, "driver": "580"}, when="2026-11-24")
    record.theoretical["l2_read_gbps"] = None
    again = store.load_file(store.save(record, tmp_path / "whole.json"))
    assert again.to_dict() == record.to_dict() and again.to_dict()["kind"] == store.RECORD_KIND
    assert again.gpu_uuid == "GPU-test-1" and again.source == "measured"
    for bad in ([], {"kind": "something else"}, "text"):
        with pytest.raises(ConfigError, match="is not a ceilings record") as caught:
            store.CeilingsRecord.from_dict(bad, "x.json")
        assert caught.value.source == "x.json"


@pytest.mark.parametrize("field", ["measured", "theoretical", "clock_mhz"])
@pytest.mark.parametrize("value", ["1e400", "-1", "9" * 400, '"fast"', "true", "NaN"])
def test_a_figure_that_is_no_finite_non_negative_number_is_a_damaged_record(tmp_path, field,
                                                                           value):  # fmt: skip
    record = store.from_results(MEASURED, ENVIRONMENT)
    text = json.dumps(record.to_dict()).replace(
        f'"{field}": {{', f'"{field}": {{"extra_gflops": {value}, ', 1
    )
    (tmp_path / "bad.json").write_text(text)
    with pytest.raises(ConfigError, match=rf"{field}\.extra_gflops: (expected `float|number out)"):
        store.load_file(tmp_path / "bad.json")


def test_a_theoretical_record_names_the_gpu_and_keeps_the_environment():
    environment = {"gpu_uuid": "GPU-9", "device": H100, "host": "x"}
    record = store.theoretical_only(environment)
    assert record.gpu_uuid == "GPU-9" and record.gpu_name == H100["name"]
    assert record.source == "theoretical" and record.measured == {}
    assert record.environment == environment
    assert record.theoretical == store.theoretical_from_device(H100)
    bare = store.theoretical_only({})
    assert bare.gpu_name == "unknown GPU" and bare.gpu_uuid is None


def test_the_saved_file_is_the_record_one_key_per_line(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path / "cache"))
    record = store.CeilingsRecord(gpu_uuid="GPU-a/b c", gpu_name="G", measured={"fp32_gflops": 1.5},
                                  theoretical={"fp32_gflops": None}, measured_at="today")  # fmt: skip
    path = store.save(record)
    assert path == tmp_path / "cache" / "ceilings" / "GPU-a_b_c.json"
    assert path.read_text() == json.dumps(record.to_dict(), indent=1)
    assert json.loads(path.read_text())["kind"] == "gpubench-ceilings"
    assert [p.name for p in path.parent.iterdir()] == ["GPU-a_b_c.json"]  # no temporary left
    assert store.is_record_file(path) and not store.is_record_file(tmp_path / "missing.json")
    minimal = {"kind": "gpubench-ceilings", "gpu_name": "G", "measured": {}}
    back = store.CeilingsRecord.from_dict(minimal, "m.json")
    assert back.source == "measured" and back.measured_at == "" and back.theoretical == {}
    assert back.environment == {} and back.clock_mhz == {} and back.clock_capped == []
    assert back.gpu_uuid is None


def test_saving_without_a_uuid_or_to_an_unwritable_place_is_one_line(tmp_path):
    record = store.CeilingsRecord(gpu_uuid=None, gpu_name="G", measured={}, theoretical={})
    with pytest.raises(ConfigError) as error:
        store.save(record)
    assert str(error.value) == "the GPU has no UUID here: give --json FILE to keep the ceilings"
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ConfigError) as error:
        store.save(record, blocker / "c.json")
    assert str(error.value) == f"{blocker / 'c.json'}: cannot write the ceilings (File exists)"
    with pytest.raises(ConfigError) as error:
        store.CeilingsRecord.from_dict({"kind": "other"}, "x.json")
    assert str(error.value) == "x.json: is not a ceilings record (made by gpubench ceilings)"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read the file: No such file or directory"),
        (b"\xff\xfe", "not UTF-8 text"),
        (b"not json", "not valid JSON: Expecting value: line 1 column 1 (char 0)"),
        ("-1", "measured.x_gflops: expected `float` >= 0.0 (found -1)"),
        ('"fast"', "measured.x_gflops: expected `float`, got `str` (found 'fast')"),
        ("1e400", "measured.x_gflops: expected `float` <= 1.7976931348623157e+308 (found inf)"),
    ],
)  # fmt: skip
def test_each_unreadable_record_is_its_exact_line(tmp_path, content, message):
    path = tmp_path / "c.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        text = json.dumps(store.from_results(MEASURED, ENVIRONMENT).to_dict())
        path.write_text(text.replace('"measured": {', f'"measured": {{"x_gflops": {content}, ', 1))
    with pytest.raises(ConfigError) as info:
        store.load_file(path)
    assert str(info.value) == f"{path}: {message}" and info.value.source == str(path)


def test_a_zero_figure_is_kept_and_a_record_without_source_was_measured(tmp_path):
    record = store.from_results(MEASURED, ENVIRONMENT).to_dict()
    assert (record["kind"], record["version"]) == (store.RECORD_KIND, store.RECORD_VERSION)
    record["measured"]["fp32_gflops"] = 0
    del record["source"]
    (tmp_path / "z.json").write_text(json.dumps(record))
    again = store.load_file(tmp_path / "z.json")
    assert again.measured["fp32_gflops"] == 0.0 and again.source == "measured"


def test_a_record_is_known_by_its_kind_within_its_first_200_characters(tmp_path):
    marker = f'"kind": "{store.RECORD_KIND}"'
    (tmp_path / "edge.json").write_text(" " * (200 - len(marker)) + marker + "}")
    (tmp_path / "late.json").write_text(" " * (201 - len(marker)) + marker + "}")
    (tmp_path / "latin1.json").write_bytes(b"\xff" + marker.encode())
    assert store.is_record_file(tmp_path / "edge.json") is True
    assert store.is_record_file(tmp_path / "late.json") is False
    assert store.is_record_file(tmp_path / "latin1.json") is False
    assert store.is_record_file(tmp_path / "absent.json") is False


def test_a_stored_record_is_named_after_the_first_100_safe_characters_of_its_uuid(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path))
    name = store._file_for("GPU-a_b/c d" + "x" * 200).name
    assert name == "GPU-a_b_c_d" + "x" * 89 + ".json"


def test_a_fifo_or_a_device_is_refused_without_being_opened(tmp_path):
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (fifo, "/dev/zero"):
        assert store.is_record_file(path) is False
        with pytest.raises(ConfigError) as info:
            store.load_file(path)
        assert str(info.value) == f"{path}: not a regular file: a ceilings record is a JSON file"


def test_a_record_file_past_the_size_limit_is_refused_before_it_is_read(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as handle:
        handle.truncate((1 << 30) + 1)  # sparse: no disk used
    with pytest.raises(ConfigError) as info:
        store.load_file(big)
    # Past a record's 1 MiB it is read as a results file (JSON: not a log's header line).
    assert str(info.value) == (
        f"{big}: 1,073,741,825 bytes: a results file is at most 16 MiB; a larger sweep belongs "
        "in a results log (--jsonl), read a line at a time"
    )


def test_a_record_keeps_where_its_figures_come_from_through_a_file(tmp_path):
    theoretical = store.theoretical_only(ENVIRONMENT)
    assert theoretical.source == "theoretical"
    path = store.save(theoretical, tmp_path / "t.json")
    assert store.load_file(path).source == "theoretical"
