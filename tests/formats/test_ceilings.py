"""The ceilings record (gpubench.formats.ceilings): a valid record with every field replaced by
each wrong type, truncated and doubled, through the reader and `gpubench roofline --ceilings`
(the one command that reads a record from a file; `gpubench ceilings` only writes one); the
record's size limit in exact words."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpubench.cli import cli
from gpubench.errors import GpubenchError
from gpubench.store import ceilings
from tests.formats.test_results import SMOKE, WRONG, one_line, paths, replaced

RECORD = {
    "kind": "gpubench-ceilings",
    "version": 1,
    "gpu_uuid": "GPU-test-1",
    "gpu_name": "NVIDIA H100 80GB HBM3",
    "measured": {"dram_read_gbps": 3100.0, "fp32_gflops": 65000.0},
    "theoretical": {"dram_read_gbps": 3352.3, "fp16_gflops": None},
    "environment": {"gpu_uuid": "GPU-test-1", "device": {"name": "NVIDIA H100 80GB HBM3"}},
    "source": "measured",
    "measured_at": "2026-11-20T03:00:00+00:00",
    "clock_mhz": {"dram_read_gbps": 1980.0, "fp32_gflops": 1755.0},
    "clock_capped": ["fp32_gflops"],
}
PATHS = [p for p in paths(RECORD) if p]
FUZZ = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def test_the_record_read_is_the_record_written(tmp_path):
    file = tmp_path / "c.json"
    file.write_text(json.dumps(RECORD))
    record = ceilings.load_file(file)
    assert (record.gpu_name, record.measured, record.clock_capped) == (
        "NVIDIA H100 80GB HBM3",
        {"dram_read_gbps": 3100.0, "fp32_gflops": 65000.0},
        ["fp32_gflops"],
    )


def roofline(file):
    """`gpubench roofline SMOKE --ceilings FILE` in process: (exit code, stderr)."""
    ran = CliRunner().invoke(cli, ["roofline", str(SMOKE), "--ceilings", str(file)])
    return ran.exit_code, ran.stderr


@FUZZ
@given(st.sampled_from(PATHS), st.sampled_from(WRONG))
def test_a_wrong_field_anywhere_is_one_line_or_read(tmp_path, path, value):
    file = tmp_path / "c.json"
    file.write_text(json.dumps(replaced(RECORD, path, value)))
    try:
        ceilings.load_file(file)
        read = True
    except GpubenchError as error:
        assert one_line(error, file)
        read = False
    code, stderr = roofline(file)
    if read:
        assert code == 0, stderr
    else:
        assert code == 2 and stderr.count("\n") == 1 and str(file) in stderr
        assert "Traceback" not in stderr


@FUZZ
@given(st.integers(1, len(json.dumps(RECORD)) - 1), st.booleans())
def test_truncated_and_doubled_records_are_one_line(tmp_path, cut, doubled):
    text = json.dumps(RECORD)
    file = tmp_path / "c.json"
    file.write_text(text + text if doubled else text[:cut])
    with pytest.raises(GpubenchError) as info:
        ceilings.load_file(file)
    assert one_line(info.value, file)
    code, stderr = roofline(file)
    assert code == 2 and stderr.count("\n") == 1 and "Traceback" not in stderr


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("measured", "fp32_gflops"), "fast", "measured.fp32_gflops: expected `float`, got "
         "`str` (found 'fast')"),
        (("theoretical", "fp16_gflops"), -1, "theoretical.fp16_gflops: expected `float` >= "
         "0.0 (found -1)"),
        (("clock_capped", 0), 7, "clock_capped[0]: expected `str`, got `int` (found 7)"),
        (("source",), "guessed", "source: invalid enum value 'guessed' (found 'guessed')"),
        (("environment", "device", "name"), 3, "environment.device.name: expected `str | null`, "
         "got `int` (found 3)"),
    ],
)  # fmt: skip
def test_the_named_fields_in_their_exact_words(tmp_path, path, value, message):
    file = tmp_path / "c.json"
    file.write_text(json.dumps(replaced(RECORD, path, value)))
    with pytest.raises(GpubenchError) as info:
        ceilings.load_file(file)
    assert str(info.value) == f"{file}: {message}"


def test_a_record_past_its_size_limit_is_refused_in_units_that_fit(tmp_path, monkeypatch):
    monkeypatch.setattr(ceilings, "MAX_RECORD_BYTES", 1536)
    file = tmp_path / "c.json"
    file.write_text(json.dumps({**RECORD, "measured_at": "x" * 2000}))
    with pytest.raises(GpubenchError) as info:
        ceilings.load_file(file)
    assert str(info.value) == f"{file}: more than 1.5 KiB: a ceilings record is at most 1.5 KiB"
    monkeypatch.setattr(ceilings, "MAX_RECORD_BYTES", 1 << 20)
    assert ceilings.load_file(file).measured_at == "x" * 2000
