"""A run's session without a GPU: the fingerprint a resume is checked against, what differs
from a log, the shards of a sweep, and the line naming the GPU."""

from __future__ import annotations

import pytest

from gpubench import config, kernels, outputs, registry, session
from gpubench.errors import ConfigError
from tests.test_kernel_suite import SCALE, write


def spec_of(**keys):
    return config.spec_from_mapping({"suite": "transpose", "params": {"size": [64]},
                                     "variants": ["copy", "naive"], **keys}, "s.yaml")  # fmt: skip


ENV = {"device": {"name": "G"}, "gpu_uuid": "U"}


def test_the_fingerprint_holds_exactly_what_a_resume_must_match():
    spec = spec_of()
    points = spec.points(registry.get("transpose"))
    assert session.fingerprint(spec, points, ENV) == {
        "suite": "transpose",
        "kernel_source_sha256": kernels.source_digest(registry.get("transpose")),
        "gpu_name": "G", "gpu_uuid": "U",
        "points": ['{"block_rows": 8, "cols": 64, "dtype": "float32", "rows": 64, "size": 64, '
                   '"tile": 32}'],
        "variants": ["copy", "naive"], "baseline": "naive",
        "timing": spec.timing.to_dict(),
    }  # fmt: skip


def test_several_gpus_are_named_by_their_sorted_uuids_and_one_is_not():
    spec = spec_of()
    points = spec.points(registry.get("transpose"))
    two = {**ENV, "devices": [{"uuid": "b"}, {"uuid": "a"}]}
    assert session.fingerprint(spec, points, two)["gpu_uuids"] == ["a", "b"]
    assert "gpu_uuids" not in session.fingerprint(spec, points, {**ENV, "devices": [{"uuid": "a"}]})
    assert session.fingerprint(spec, points, {})["gpu_name"] is None


def test_a_kernel_file_s_declarations_are_part_of_its_fingerprint(tmp_path):
    path = write(tmp_path, SCALE)
    spec = config.load(path)
    bench = registry.get(spec.suite_ref)
    stamp = session.fingerprint(spec, spec.points(bench), ENV)
    assert stamp["declarations_sha256"] == bench.declaration_digest() and stamp["suite"] == "k"


def test_differences_name_each_changed_key_once_in_order():
    before = {"suite": "a", "points": ["p1", "p2"], "gpu_uuid": "U", "timing": {"warmup": 3}}
    now = {"suite": "a", "points": ["p2", "p3", "p4"], "gpu_uuid": "V", "variants": ["x"]}
    assert session.differences(before, now) == [
        "gpu_uuid: 'U' in the log, 'V' now",
        "points: 1 no longer in the sweep, 2 new",
        "timing: {'warmup': 3} in the log, None now",
        "variants: None in the log, ['x'] now",
    ]  # fmt: skip
    assert session.differences(before, dict(before)) == []
    assert session.differences({}, {"points": ["p"]}) == ["points: 0 no longer in the sweep, 1 new"]


def test_a_changed_sweep_blocks_a_resume_unless_forced():
    plan = outputs.OutputPlan(json=None, csv=None, log="r.jsonl", resume=True, force=False,
                              progress=False, timeline=None)  # fmt: skip
    with pytest.raises(ConfigError) as info:
        session._check_resumable({"fingerprint": {"suite": "a"}}, {"suite": "b"}, plan)
    assert str(info.value) == ("r.jsonl: the sweep, the kernel source or the GPU differ from the "
                               "log; use --force to resume anyway: suite: 'a' in the log, 'b' now")  # fmt: skip
    session._check_resumable({"fingerprint": {"suite": "a"}}, {"suite": "a"}, plan)
    forced = outputs.OutputPlan(json=None, csv=None, log="r.jsonl", resume=True, force=True,
                                progress=False, timeline=None)  # fmt: skip
    session._check_resumable({}, {"suite": "b"}, forced)


@pytest.mark.parametrize(("shard", "taken"), [
    (None, [0, 1, 2, 3, 4]), ((0, 1), [0, 1, 2, 3, 4]), ((0, 2), [0, 2, 4]), ((1, 2), [1, 3]),
    ((4, 5), [4]),
])  # fmt: skip
def test_a_shard_takes_every_nth_point_from_its_own(shard, taken):
    points = [{"i": i} for i in range(5)]
    assert [p["i"] for p in session.shard_points(points, shard, "s.yaml")] == taken


def test_a_shard_without_points_is_one_line():
    with pytest.raises(ConfigError) as info:
        session.shard_points([{"i": 0}, {"i": 1}], (2, 3), "s.yaml")
    assert str(info.value) == "s.yaml: --shard: shard 2/3 has no points (the sweep has 2)"
