"""The results file (gpubench.formats.results, read by gpubench.model.results.load_json): every field
of a valid file replaced by each wrong type, truncated and doubled files, the named kinds in
exact words; its limits (size, objects and arrays) in exact words and units that fit, and the
memory and time of refusing a file near and past them, measured in a child process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpubench.errors import GpubenchError
from gpubench.model import results
from gpubench.store import ceilings
from tests.fakes import ENERGY_READING

REPO = Path(__file__).parents[2]
SMOKE = REPO / "configs" / "baselines" / "smoke-h100.json"
BASE = json.loads(SMOKE.read_text())
BASE["results"] = BASE["results"][:3]
WRONG = [None, True, 7, 10**400, 2.5, "text", [1], {"a": 1}, [[[[[]]]]], 1e308 * 10]
LARGER = "a larger sweep belongs in a results log (--jsonl), read a line at a time"


def paths(value, prefix=()):
    """Every path into a JSON value (the first two items of each list)."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:2]):
            yield from paths(item, (*prefix, index))


PATHS = [p for p in paths(BASE) if p]


def replaced(record, path, value):
    record = json.loads(json.dumps(record))
    target = record
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return record


def one_line(error, path):
    return "\n" not in str(error) and str(path) in str(error)


FUZZ = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@FUZZ
@given(st.sampled_from(PATHS), st.sampled_from(WRONG))
def test_a_wrong_field_anywhere_is_one_line_or_read(tmp_path, path, value):
    file = tmp_path / "r.json"
    file.write_text(json.dumps(replaced(BASE, path, value)))
    for reader in (results.load_any, ceilings.load_file):
        try:
            reader(file)
        except GpubenchError as error:
            assert one_line(error, file)


@FUZZ
@given(st.integers(1, len(json.dumps(BASE)) - 1), st.booleans())
def test_truncated_and_doubled_files_are_one_line(tmp_path, cut, doubled):
    text = json.dumps(BASE)
    file = tmp_path / "r.json"
    file.write_text(text + text if doubled else text[:cut])
    with pytest.raises(GpubenchError) as info:
        results.load_any(file)
    assert one_line(info.value, file)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("environment", "device"), "H100",
         "environment.device: expected `object | null`, got `str` (found 'H100')"),
        (("results", 0, "device"), {"uuid": 7},
         "results[0].device.uuid: expected `str | null`, got `int` (found 7)"),
        (("environment", "gpu_uuid"), 7,
         "environment.gpu_uuid: expected `str | null`, got `int` (found 7)"),
        (("environment", "device", "peak_bandwidth_gbps"), "fast",
         "environment.device.peak_bandwidth_gbps: expected `float | null`, got `str` "
         "(found 'fast')"),
        (("spec", "points"), 3, "spec.points: expected `array | null`, got `int` (found 3)"),
        (("spec", "points"), [{"n": {"a": 1}}],
         "spec.points[0].n: expected `bool | int | float | str | null`, got `object`"),
        (("environment", "git_dirty"), "yes",
         "environment.git_dirty: expected `bool | null`, got `str` (found 'yes')"),
        (("results", 0, "seed"), 10**400,
         "results[0].seed: expected `int` <= 9223372036854775807 "
         "(found <an integer of about 400 digits>)"),
        (("results", 1, "metrics"), {"gbps": 1.0, "speedup": "2x"},
         "results[1].metrics.speedup: expected `float | null`, got `str` (found '2x')"),
        (("results", 0, "energy"), {"joules_per_run": "a lot"},
         "results[0].energy.joules_per_run: expected `float | null`, got `str` (found 'a lot')"),
        (("results", 0, "energy"), {"joules_per_run": -1.0},
         "results[0].energy.joules_per_run: expected `float` >= 0.0 (found -1.0)"),
        (("results", 0, "energy"), {"jules": 1.0},
         "results[0].energy: object contains unknown field `jules`"),
        (("results", 0, "energy"), 0.25,
         "results[0].energy: expected `object | null`, got `float` (found 0.25)"),
    ],
)  # fmt: skip
def test_the_named_kinds_in_their_exact_words(tmp_path, path, value, message):
    file = tmp_path / "r.json"
    file.write_text(json.dumps(replaced(BASE, path, value)))
    with pytest.raises(GpubenchError) as info:
        results.load_json(file)
    assert str(info.value) == f"{file}: {message}"


def test_the_spec_a_sweep_writes_reads_back(tmp_path):
    """SweepSpec.to_dict as a sweep file with zip groups and constraints writes it."""
    from gpubench.load import config

    sweep = tmp_path / "s.yaml"
    sweep.write_text(
        "suite: transpose\nvariants: [naive]\n"
        "zip: [{rows: [32, 64], cols: [64, 128]}]\nconstraints: [rows <= cols]\n"
    )
    spec = config.load(sweep).to_dict()
    assert spec["zip"] == [{"rows": [32, 64], "cols": [64, 128]}]
    file = tmp_path / "r.json"
    file.write_text(json.dumps({**BASE, "spec": spec}))
    assert results.load_json(file).spec["zip"] == spec["zip"]
    file.write_text(json.dumps(replaced(BASE, ("spec", "zip"), [{"rows": [[1]]}])))
    with pytest.raises(GpubenchError) as info:
        results.load_json(file)
    assert str(info.value) == (
        f"{file}: spec.zip[0].rows[0]: expected `bool | int | float | str | null`, got `array`"
    )


def test_compare_of_a_damaged_file_is_exit_2_and_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(replaced(BASE, ("environment", "device"), "H100")))
    run = subprocess.run(
        [sys.executable, "-m", "gpubench", "compare", str(SMOKE), str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert run.returncode == 2 and run.stderr.strip().count("\n") == 0
    assert "Traceback" not in run.stderr and "environment.device" in run.stderr


@pytest.mark.parametrize(
    ("size", "text"),
    [(0, "0 bytes"), (1, "1 byte"), (100, "100 bytes"), (1023, "1023 bytes"), (1024, "1 KiB"),
     (1536, "1.5 KiB"), (8 << 20, "8 MiB"), ((8 << 20) + 1, "8 MiB"), (16 << 30, "16 GiB"),
     (3 << 29, "1.5 GiB")],
)  # fmt: skip
def test_sizes_are_shown_in_the_unit_that_fits(size, text):
    assert results.size_text(size) == text


def test_a_results_file_past_its_size_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "MAX_RESULTS_BYTES", 2048)
    file = tmp_path / "r.json"
    file.write_text(json.dumps(BASE))
    size = file.stat().st_size
    with pytest.raises(GpubenchError) as info:
        results.load_any(file)  # JSON: read whole, so the JSON limit, not the log's
    assert str(info.value) == (f"{file}: {size:,} bytes: a results file is at most 2 KiB; {LARGER}")
    monkeypatch.setattr(results, "MAX_RESULTS_BYTES", size)  # exactly at the limit: read
    assert len(results.load_any(file).results) == 3


def test_a_results_file_of_too_many_objects_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "MAX_JSON_CONTAINERS", 40)
    file = tmp_path / "r.json"
    record = replaced(BASE, ("spec", "points"), [{} for _ in range(40)])
    file.write_text(json.dumps(record))
    found = file.read_bytes().count(b"{") + file.read_bytes().count(b"[")
    with pytest.raises(GpubenchError) as info:
        results.load_json(file)
    assert str(info.value) == (
        f"{file}: {found:,} objects and arrays: a results file holds at most 40; {LARGER}"
    )


# A child process reads one file; it prints what came of it and how long it took, and the
# child reports its own peak memory (VmHWM, KiB).
READER = """
import json, sys, time
from gpubench.model import results
from gpubench.errors import GpubenchError
for name, value in json.loads(sys.argv[3]).items():
    setattr(results, name, value)
start = time.perf_counter()
try:
    getattr(results, sys.argv[1])(sys.argv[2])
    outcome = "read"
except GpubenchError as error:
    outcome = str(error)
# VmHWM: this process's own peak since its exec (the parent's ru_maxrss of its children would
# carry the largest child any earlier test started).
status = open("/proc/self/status").read()
peak_kb = int(status.split("VmHWM:")[1].split()[0])
print(json.dumps({"outcome": outcome, "seconds": time.perf_counter() - start, "peak_kb": peak_kb}))
"""


def read_in_child(reader: str, file: Path, **limits: int) -> tuple[str, float, float]:
    """(outcome, seconds, peak MB of the child) of `results.<reader>(file)` in a child."""
    ran = subprocess.run(
        [sys.executable, "-c", READER, reader, str(file), json.dumps(limits)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert ran.returncode == 0, ran.stderr
    report = json.loads(ran.stdout)
    return report["outcome"], report["seconds"], report["peak_kb"] / 1024


def worst_results_file(file: Path, containers: int, size: int) -> None:
    """A results file of `size` bytes and `containers` objects and arrays, as costly to parse
    as JSON text can be (empty objects, then distinct two-letter strings), whose one wrong
    field comes last: everything is built before it is refused."""
    head = '{"schema_version":1,"created":"x","suite":"s","environment":{},"spec":{"points":['
    points = "{}," * (containers - 7) + '{}],"variants":['
    tail = '""]},"results":[5]}'
    room, words, index = size - len(head) - len(points) - len(tail), [], 0
    while room > 8:
        words.append(f'"{index:x}",')
        room -= len(words[-1])
        index += 1
    file.write_text(head + points + "".join(words) + " " * room + tail)  # exactly `size`


def test_refusing_a_results_file_at_its_limits_takes_bounded_memory_and_time(tmp_path):
    """At the real limits (16 MiB, 500,000 objects and arrays): the costliest file within them
    is refused by its schema, one past either is refused before it is parsed."""
    limit, containers = results.MAX_RESULTS_BYTES, results.MAX_JSON_CONTAINERS
    near, wide, big = tmp_path / "near.json", tmp_path / "wide.json", tmp_path / "big.json"
    worst_results_file(near, containers, limit)
    worst_results_file(wide, containers + 1, limit)
    worst_results_file(big, 1000, limit + 1)
    assert (near.stat().st_size, big.stat().st_size) == (limit, limit + 1)
    for file, expected in [
        (near, "results[0]: expected `object`, got `int` (found 5)"),
        (wide, f"500,001 objects and arrays: a results file holds at most 500,000; {LARGER}"),
        (big, f"16,777,217 bytes: a results file is at most 16 MiB; {LARGER}"),
    ]:
        outcome, seconds, peak_mb = read_in_child("load_any", file)
        assert outcome == f"{file}: {expected}"
        assert seconds < 2 and peak_mb < 500, (file.name, seconds, peak_mb)


def test_a_result_with_its_energy_reads_back_as_written(tmp_path):
    record = json.loads(json.dumps(BASE))
    # Above idle may come out below zero (idle read warmer than the window): kept as read.
    energy = {**ENERGY_READING, "above_idle_joules_per_run": -0.01}
    record["results"][0]["energy"] = energy
    record["results"][1]["energy"] = {"missing": "no counter"}
    file = tmp_path / "r.json"
    file.write_text(json.dumps(record))
    loaded = results.load_json(file)
    assert loaded.results[0].energy == energy
    assert loaded.results[1].energy == {"missing": "no counter"}
    assert loaded.results[2].energy is None and "energy" not in loaded.results[2].to_dict()
    assert loaded.results[0].to_dict()["energy"] == energy
