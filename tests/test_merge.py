"""Shards of a sweep (--shard I/N) and merging their logs, on a fake GPU."""

from __future__ import annotations

import pytest

from tests.test_pool import REPO, SWEEP, gpubench, results_of


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
