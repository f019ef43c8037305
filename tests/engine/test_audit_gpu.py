"""The exploit corpus on the GPU (tests/exploits): every kernel written to game the harness is
flagged, `incorrect` or `implausible` with the check that caught it, at every size it cheats
at, in the default and the untrusted mode; the honest kernels beside them are not. Run once
per backend (GPUBENCH_BACKEND=cuda-core for the second)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpubench.engine.runner import Plan, Runner
from gpubench.kernelfile import benchmark as kernelfile_benchmark
from gpubench.load import config, registry
from gpubench.model.results import Status
from gpubench.model.timing import TimingPolicy

EXPLOITS = Path(__file__).resolve().parents[1] / "exploits"
# Local, not shared (not tests.policies.QUICK): real kernels on a GPU, timed as the exploit
# corpus times them (exploits/axpy_cheats.yaml: a 2 ms floor), with at most 100 samples.
EXPLOIT_TIMING = TimingPolicy(
    warmup=2, min_samples=10, max_samples=100, min_time_s=0.002, max_time_s=0.3
)
FLAGGED = (Status.INCORRECT, Status.IMPLAUSIBLE)
HONEST = (Status.OK, Status.UNSTABLE)

AXPY_SIZES = (1, 31, 4099, 1000003, 16777216)
# Where a cheat cheats at all (everywhere it is not listed): a grid of one block has no odd
# blocks; a memo keyed by a few input values is an honest kernel where its keys cover much of
# the inputs (the near copy changes one value per array below 8192 elements, and sees a key
# change with a chance of k/n). Each size here is a problem of its own, so each point's second
# set is a near copy (a point of a problem met before is handed the earlier point's inputs
# instead, and a memo keyed by values is caught there only by its speed).
AXPY_CHEATS_AT = {
    "memo_by_values": (4099, 1000003, 16777216),
    "memo_by_sum": (1000003, 16777216),
    "lazy_odd_blocks": (4099, 1000003, 16777216),
}
MATMUL_SIZES = (1, 31, 256, 1024)
MATMUL_CHEATS_AT = {"memo_by_values": (256, 1024)}


def _policy(untrusted: bool) -> TimingPolicy:
    from dataclasses import replace

    return replace(EXPLOIT_TIMING, untrusted=untrusted)


def _assert_flagged(results, cheats_at, sizes, size_key="n"):
    unflagged = []
    for r in results:
        n = r.point[size_key]
        if r.variant == "honest":
            assert r.status in HONEST, (n, r.status, r.reason)
        elif n in cheats_at.get(r.variant, sizes) and r.status not in FLAGGED:
            unflagged.append((r.variant, n, str(r.status), r.reason))
        if r.status in FLAGGED:
            assert r.reason and "speedup" not in r.metrics
    assert not unflagged, unflagged


@pytest.mark.gpu
@pytest.mark.parametrize("untrusted", [False, True], ids=["default", "untrusted"])
def test_gpu_every_axpy_cheat_is_flagged_at_every_size_it_cheats_at(gpu_backend, untrusted):
    path = EXPLOITS / "axpy_cheats.yaml"
    spec = config.load(path)
    bench = kernelfile_benchmark.load_benchmark(str(path))
    points = [bench.resolve({**bench.defaults(), "n": n}) for n in AXPY_SIZES]
    plan = Plan(bench, points, spec.variants, spec.baseline, _policy(untrusted))
    results = Runner(gpu_backend).run(plan)
    assert len(results) == len(AXPY_SIZES) * 16
    _assert_flagged(results, AXPY_CHEATS_AT, AXPY_SIZES)
    by = {(r.variant, r.point["n"]): r for r in results}
    # The reasons name the check that caught each.
    assert "wrote its inputs: 'x'" in by[("flips_input_bit_once", 4099)].reason
    assert "not written (still NaN)" in by[("lazy_second_half", 1000003)].reason or (
        "outputs left as the previous run wrote them" in by[("lazy_second_half", 1000003)].reason
    )
    if not untrusted:
        for cheat in ("skip_filled", "memo_by_address", "skip_if_first_filled"):
            assert "outputs left as the previous run wrote them" in by[(cheat, 4099)].reason


@pytest.mark.gpu
@pytest.mark.parametrize("untrusted", [False, True], ids=["default", "untrusted"])
def test_gpu_every_matmul_cheat_is_flagged_at_every_size_it_cheats_at(gpu_backend, untrusted):
    bench = registry.load_suite_file(str(EXPLOITS / "matmul_cheats.py"))
    points = [bench.resolve({"n": n}) for n in MATMUL_SIZES]
    variants = ("honest", "memo_by_address", "memo_by_values", "side_stream", "thread_left_running")
    plan = Plan(bench, points, variants, "honest", _policy(untrusted))
    results = Runner(gpu_backend).run(plan)
    _assert_flagged(results, MATMUL_CHEATS_AT, MATMUL_SIZES)
    by = {(r.variant, r.point["n"]): r for r in results}
    if not untrusted:  # untrusted mode's audit of every timed run may catch it first
        assert "faster than the hardware allows" in by[("memo_by_address", 1024)].reason or (
            "outputs left as the previous run wrote them" in by[("memo_by_address", 1024)].reason
        )
    assert "left host threads running (suite-helper" in by[("thread_left_running", 256)].reason


@pytest.mark.gpu
def test_gpu_a_patched_timer_is_below_the_launch_floor(gpu_backend):
    bench = registry.load_suite_file(str(EXPLOITS / "matmul_cheats.py"))
    points = [bench.resolve({"n": 64})]
    try:
        (result,) = Runner(gpu_backend).run(
            Plan(bench, points, ("patched_timer",), "patched_timer", EXPLOIT_TIMING)
        )
    finally:
        type(bench).restore_the_timer()
    assert result.status is Status.IMPLAUSIBLE, result.reason
    assert "below the launch floor" in result.reason


@pytest.mark.gpu
def test_gpu_the_persisting_l2_reset_and_the_device_wide_wait_run_on_the_device(gpu_backend):
    gpu_backend.reset_persisting_l2()
    gpu_backend.synchronize_device()
