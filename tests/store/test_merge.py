"""Shards of a sweep (--shard I/N) and merging their logs: end to end on a fake GPU, and
merge.merge in process on logs written here (the merged header field by field, every refusal
with its message, what --force replaces)."""

from __future__ import annotations

import json

import pytest

from gpubench.errors import ConfigError
from gpubench.model import results
from gpubench.model.results import Result, Status
from gpubench.store import merge
from tests.engine.test_pool import REPO, SWEEP, gpubench, results_of


def test_shards_cover_the_sweep_once_and_merge_into_its_log(tmp_path):
    (tmp_path / "s.yaml").write_text(SWEEP.format(repo=REPO))
    for index in range(3):
        ran = gpubench(tmp_path, "sweep", "s.yaml", "--shard", f"{index}/3", devices=1)
        assert ran.returncode == 0, ran.stderr
    shards = sorted((tmp_path / "results").glob("s.shard-*-of-3.jsonl"))
    assert [len(results_of(p)) // 2 for p in shards] == [4, 3, 3]
    merged = gpubench(tmp_path, "merge", *map(str, shards), "-o", "all.jsonl", devices=1)
    assert merged.returncode == 0 and "merged 20 result(s) of 3 logs" in merged.stderr
    assert len(results_of(tmp_path / "all.jsonl")) == 20
    # The merged log is the whole sweep's: resuming it measures nothing more.
    resumed = gpubench(tmp_path, "sweep", "s.yaml", "--resume", "all.jsonl", devices=1)
    assert resumed.returncode == 0, resumed.stderr
    assert len(results_of(tmp_path / "all.jsonl")) == 20
    dry = gpubench(tmp_path, "sweep", "s.yaml", "--shard", "1/3", "--dry-run", devices=1)
    assert "3 point(s) × 2 variant(s)" in dry.stdout


@pytest.mark.parametrize("shard", ["3/3", "1/0", "a/3", "1", "-1/2"])
def test_bad_shards_are_one_line(tmp_path, shard):
    (tmp_path / "s.yaml").write_text(SWEEP.format(repo=REPO))
    ran = gpubench(tmp_path, "sweep", "s.yaml", "--shard", shard, "--dry-run", devices=1)
    assert ran.returncode == 2 and "--shard: expected I/N with 0 <= I < N" in ran.stderr


def test_merge_refuses_logs_of_different_sweeps_and_overlaps(tmp_path):
    (tmp_path / "s.yaml").write_text(SWEEP.format(repo=REPO))
    (tmp_path / "t.yaml").write_text(SWEEP.format(repo=REPO).replace("[good, fast]", "[good]"))
    for name in ("s", "t"):
        assert (
            gpubench(tmp_path, "sweep", f"{name}.yaml", "--shard", "0/2", devices=1).returncode == 0
        )
    s0, t0 = "results/s.shard-0-of-2.jsonl", "results/t.shard-0-of-2.jsonl"
    ran = gpubench(tmp_path, "merge", s0, t0, "-o", "x.jsonl", devices=1)
    assert ran.returncode == 2 and "variants differs" in ran.stderr
    (tmp_path / "copy.jsonl").write_text((tmp_path / s0).read_text())
    ran = gpubench(tmp_path, "merge", s0, "copy.jsonl", "-o", "x.jsonl", devices=1)
    assert ran.returncode == 2 and "shards never overlap" in ran.stderr
    ran = gpubench(tmp_path, "merge", s0, "-o", "x.jsonl", devices=1)
    assert ran.returncode == 2 and "at least two logs" in ran.stderr


FINGERPRINT = {"suite": "scale", "kernel_source_sha256": "k", "declarations_sha256": "d",
               "variants": ["good"], "baseline": "good", "timing": {"warmup": 1}}  # fmt: skip
SPEC = {"axes": {"n": [1, 2, 3]}}


def write_log(path, points, shard, environment, variant="good", **fingerprint):
    header = {"fingerprint": {**FINGERPRINT, "points": [f"n={p}" for p in points],
                              "shard": shard, "gpu_uuids": ["stale"], **fingerprint},
              "suite": "scale", "spec": SPEC, "environment": environment}  # fmt: skip
    log = results.JsonLinesLog(path, header=header)
    for p in points:
        log.write(Result(suite="scale", variant=variant, point={"n": p}, status=Status.OK,
                         summary={"median_ms": float(p)}))  # fmt: skip
    log.close()
    return str(path)


def two_shards(tmp_path, second_env=None):
    first = write_log(tmp_path / "a.jsonl", [1, 3], "0/2",
                      {"gpu_uuid": "GPU-a", "device": {"name": "H100"}, "host": "x"})  # fmt: skip
    second = write_log(
        tmp_path / "b.jsonl",
        [2],
        "1/2",
        second_env
        or {"devices": [{"uuid": "GPU-b", "name": "H100"}, {"uuid": "GPU-a", "name": "H100"}]},
    )
    return first, second


def test_the_merged_log_has_every_result_once_and_the_union_of_points_and_gpus(tmp_path):
    first, second = two_shards(tmp_path)
    out = tmp_path / "all.jsonl"
    assert merge.merge([first, second], str(out)) == (2, 3)
    header, merged = results.load_jsonl(out)
    assert sorted(r.point["n"] for r in merged) == [1, 2, 3]
    assert header["fingerprint"] == {**FINGERPRINT, "points": ["n=1", "n=2", "n=3"],
                                     "gpu_uuids": ["GPU-a", "GPU-b"]}  # fmt: skip
    assert header["environment"] == {
        "gpu_uuid": "GPU-a",
        "device": {"name": "H100"},
        "host": "x",
        "devices": [{"uuid": "GPU-a", "name": "H100"}, {"uuid": "GPU-b", "name": "H100"}],
    }
    assert header["suite"] == "scale" and header["spec"] == SPEC
    assert header["merged_from"] == [first, second]
    assert json.loads(out.read_text().splitlines()[0])["kind"] == "header"


def test_one_gpu_gives_no_gpu_list(tmp_path):
    first, second = two_shards(tmp_path, {"gpu_uuid": "GPU-a", "device": {"name": "H100"}})
    merge.merge([first, second], str(tmp_path / "all.jsonl"))
    header, _ = results.load_jsonl(tmp_path / "all.jsonl")
    assert "gpu_uuids" not in header["fingerprint"]
    assert header["environment"]["devices"] == [{"uuid": "GPU-a", "name": "H100"}]


# A value of the field's own type that differs from FINGERPRINT's (a string where the
# format has a list would be a damaged log, refused by the schema before merge compares).
OTHER = {"variants": ["other"], "timing": {"warmup": 2}}


@pytest.mark.parametrize("key", merge.MUST_AGREE)
def test_logs_of_different_sweeps_are_refused_naming_what_differs(tmp_path, key):
    first, _ = two_shards(tmp_path)
    ours = OTHER.get(key, "other")
    other = write_log(tmp_path / "c.jsonl", [2], "1/2", {}, **{key: ours})
    with pytest.raises(ConfigError) as error:
        merge.merge([first, other], str(tmp_path / "out.jsonl"))
    assert error.value.source == other
    mine = repr(ours) if isinstance(ours, str) else ours
    theirs = repr(FINGERPRINT[key]) if isinstance(FINGERPRINT[key], str) else FINGERPRINT[key]
    assert str(error.value) == (f"{other}: {key} differs from {first}'s ({mine} vs {theirs}): "
                                "logs of different sweeps or kernel sources")  # fmt: skip


@pytest.mark.parametrize(("key", "expected"), [("variants", "array"), ("timing", "object")])
def test_a_fingerprint_field_of_the_wrong_type_is_a_damaged_log(tmp_path, key, expected):
    first, _ = two_shards(tmp_path)
    other = write_log(tmp_path / "c.jsonl", [2], "1/2", {}, **{key: "other"})
    with pytest.raises(ConfigError) as error:
        merge.merge([first, other], str(tmp_path / "out.jsonl"))
    assert str(error.value) == (
        f"{other}: line 1: fingerprint.{key}: expected `{expected} | null`, got `str` "
        "(found 'other')"
    )


def test_other_axes_overlaps_and_missing_fingerprints_are_refused(tmp_path):
    first, _ = two_shards(tmp_path)
    out = str(tmp_path / "out.jsonl")
    axes = tmp_path / "axes.jsonl"
    write_log(axes, [2], "1/2", {})
    text = axes.read_text().replace('"n": [1, 2, 3]', '"n": [1, 2]')
    axes.write_text(text)
    with pytest.raises(ConfigError) as error:
        merge.merge([first, str(axes)], out)
    assert str(error.value) == f"{axes}: its sweep's parameters differ from {first}'s"
    overlap = write_log(tmp_path / "o.jsonl", [3], "1/2", {})
    with pytest.raises(ConfigError) as error:
        merge.merge([first, overlap], out)
    assert str(error.value) == (
        f'{overlap}: good at {{"n": 3}} is also in {first}: shards never overlap'
    )
    bare = tmp_path / "bare.jsonl"
    log = results.JsonLinesLog(bare, header={"suite": "scale"})
    log.close()
    with pytest.raises(ConfigError) as error:
        merge.merge([str(bare), first], out)
    assert str(error.value) == f"{bare}: the header has no fingerprint: not a sweep log"


def test_the_output_is_guarded(tmp_path):
    first, second = two_shards(tmp_path)
    refusals = [
        ([first], str(tmp_path / "out.jsonl"), "LOGS: give at least two logs to merge"),
        ([first, second], str(tmp_path / "." / "b.jsonl"),
         f"{tmp_path / '.' / 'b.jsonl'}: the output is one of the logs being merged"),
        ([first, second], str(tmp_path), f"{tmp_path}: --output: is a directory; give a file name"),
    ]  # fmt: skip
    for logs, output, message in refusals:
        with pytest.raises(ConfigError) as error:
            merge.merge(logs, output)
        assert str(error.value) == message
    taken = tmp_path / "taken.jsonl"
    write_log(taken, [1], "0/1", {})
    with pytest.raises(ConfigError) as error:
        merge.merge([first, second], str(taken))
    assert str(error.value) == f"{taken}: holds results already: give --force to replace it"
    assert merge.merge([first, second], str(taken), force=True) == (2, 3)
    assert len(results.load_jsonl(taken)[1]) == 3
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"kind": "header"}\n')  # a header alone holds no results: no --force
    assert merge.merge([first, second], str(empty)) == (2, 3)
