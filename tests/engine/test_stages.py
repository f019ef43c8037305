"""The runner's stages in isolation: what a timed result holds (tests/engine/test_runner.py runs them
end to end on the fake backend)."""

from __future__ import annotations

import dataclasses
import re
import time
from types import SimpleNamespace

import numpy as np
import pytest

from gpubench.engine import stages
from gpubench.engine.runner import Plan, Runner
from gpubench.engine.verify import Verification
from gpubench.errors import KernelLaunchError, PointError
from gpubench.load import registry
from gpubench.model.benchmark import Work
from gpubench.model.results import Status
from gpubench.model.timing import Measurement, TimingPolicy
from tests.fakes import FakeBackend, ScaleSuite
from tests.policies import QUICK

DEVICE = SimpleNamespace(peak_bandwidth_gbps=2000.0, peak_fp32_gflops=50000.0)


def outcome(work, converged=True, cgma=None):
    measurement = Measurement(samples_ms=[2.0, 1.0, 3.0], converged=converged, discarded=4,
                              runs_per_sample=8, runs=99, clock_mhz=1755.0,
                              clock_capped=True)  # fmt: skip
    return stages.timed_outcome(DEVICE, measurement, Verification(passed=True), {"regs": 32},
                                work, cgma)  # fmt: skip


def test_a_timed_outcome_holds_the_samples_summary_the_clock_and_the_rates():
    result = outcome(Work(bytes_moved=4 * 10**9, flops=10**12, elements=10**9), cgma=2.5)
    assert result["status"] is Status.OK and result["converged"] is True
    summary = result["summary"]
    assert summary["median_ms"] == 2.0 and summary["samples"] == 3
    assert (summary["discarded"], summary["runs_per_sample"]) == (4, 8)
    assert (summary["clock_mhz"], summary["clock_capped"]) == (1755.0, True)
    assert result["metrics"] == pytest.approx({"time_ms": 2.0, "gbps": 2000.0, "pct_peak_bw": 100.0,
                                               "gflops": 500000.0, "pct_peak_flops": 1000.0,
                                               "gelem_per_s": 500.0, "cgma": 2.5})  # fmt: skip
    assert result["kernel_attributes"] == {"regs": 32}
    assert result["work"] == Work(4 * 10**9, 10**12, 10**9).to_dict()
    assert result["verification"].passed


def test_cache_traffic_and_other_precisions_are_no_percent_of_the_dram_or_fp32_peak():
    metrics = outcome(Work(4 * 10**9, 10**12, 0, level="l2", precision="fp64"))["metrics"]
    assert set(metrics) == {"time_ms", "gbps", "gflops"}
    assert outcome(Work(1, 0), converged=False)["status"] is Status.UNSTABLE


def test_a_work_record_without_level_or_precision_counts_as_dram_and_fp32():
    bare = SimpleNamespace(bytes_moved=4 * 10**9, flops=10**12, elements=0,
                           to_dict=lambda: {"bytes_moved": 4 * 10**9})  # fmt: skip
    metrics = outcome(bare)["metrics"]
    assert metrics["pct_peak_bw"] == pytest.approx(100.0)
    assert metrics["pct_peak_flops"] == pytest.approx(1000.0)


def test_a_stop_carries_its_outcome_and_says_its_reason():
    stop = stages.Stop({"status": Status.SKIPPED, "reason": "too big"})
    assert str(stop) == "too big" and stop.outcome["status"] is Status.SKIPPED
    assert str(stages.Stop({"status": Status.OK})) == ""


def test_missing_bytes_counts_only_the_placements_not_yet_made_on_their_side():
    inputs = {
        "a": np.zeros(10, np.float32),
        "b": np.zeros(3, np.float64),
        "c": np.zeros(5, np.int8),
    }
    placements = stages.Placements(backend=None, inputs=inputs, clock=None)
    wanted = {"a": "device", "b": "pinned", "c": "pageable"}
    assert placements.missing_bytes(wanted) == (40, 29)
    placements.made[("a", "device")] = (None, None)
    placements.made[("b", "device")] = (None, None)  # made elsewhere: b is still wanted pinned
    assert placements.missing_bytes(wanted) == (0, 29)
    assert placements.missing_bytes({}) == (0, 0)


def host_variant(monkeypatch, host_run=None, reference=None):
    """The reduction suite's NumPy variant at a small point, on the fake backend."""
    bench = registry.get("reduction")
    if host_run is not None:
        monkeypatch.setattr(type(bench), "host_run", host_run)
    if reference is not None:
        monkeypatch.setattr(type(bench), "reference", reference)
    point = bench.resolve({**bench.defaults(), "n": 1000, "dtype": "int32"})
    (result,) = Runner(FakeBackend()).run(Plan(bench, [point], ("numpy",), "numpy", QUICK))
    return result


def test_a_host_variant_is_run_checked_timed_and_checked_again_each_in_its_phase(monkeypatch):
    result = host_variant(monkeypatch)
    assert result.status.is_measured and result.verification.passed
    assert list(result.phases["variant"]) == [
        "checked_run",
        "check",
        "fresh_wait",
        "timing",
        "recheck",
    ]
    assert all(seconds >= 0 for seconds in result.phases["variant"].values())


def test_a_host_variant_right_only_once_is_incorrect_after_timing(monkeypatch):
    calls = []
    right = type(registry.get("reduction")).host_run

    def right_once(self, variant, point, inputs):
        calls.append(variant)
        outputs = right(self, variant, point, inputs)
        return outputs if len(calls) == 1 else {k: v + 7 for k, v in outputs.items()}

    result = host_variant(monkeypatch, host_run=right_once)
    assert result.status is Status.INCORRECT and not result.verification.passed
    assert result.reason.startswith("right on the checked run, wrong after timing: ")
    assert (
        result.reason.removeprefix("right on the checked run, wrong after timing: ")
        == result.verification.message
    )


def test_a_host_variant_without_a_reference_is_incorrect_and_says_why(monkeypatch):
    def no_reference(self, variant, point, inputs):
        raise PointError("NumPy refuses this point")

    result = host_variant(monkeypatch, reference=no_reference)
    assert result.status is Status.INCORRECT and result.verification.passed is False
    assert result.reason == "no reference to check against: NumPy refuses this point"
    assert list(result.phases["variant"]) == ["checked_run"]


def test_a_launch_the_kernel_attributes_refuse_fails_with_their_message(monkeypatch):
    def refuse(module, launches, device):
        raise KernelLaunchError("block of 2048 threads: at most 1024")

    monkeypatch.setattr(stages, "kernel_attributes", refuse)
    bench = ScaleSuite()
    point = bench.resolve(bench.defaults())
    (result,) = Runner(FakeBackend()).run(Plan(bench, [point], ("good",), "good", QUICK))
    assert result.status is Status.LAUNCH_FAILED
    assert result.reason == "block of 2048 threads: at most 1024"


def test_why_a_variant_is_not_checked_in_its_words():
    def bench(reference_variant=None, has_reference=True):
        return SimpleNamespace(reference_variant=reference_variant,
                               has_reference=lambda: has_reference,
                               variant=lambda name: SimpleNamespace(computes="out"))  # fmt: skip

    empty, full = SimpleNamespace(has=lambda c: False), SimpleNamespace(has=lambda c: c == "out")
    assert stages.unverified_reason(bench("ref"), "ref", full) == (
        "the reference: the other variants are checked against its outputs")  # fmt: skip
    assert stages.unverified_reason(bench("ref"), "a", empty) == (
        "not checked: the reference variant 'ref' produced no outputs at this point")  # fmt: skip
    assert stages.unverified_reason(bench("ref"), "a", full) is None
    assert stages.unverified_reason(bench(None, False), "a", empty) == (
        "no reference: the outputs were not checked")  # fmt: skip
    assert stages.unverified_reason(bench(None, True), "a", empty) is None


def test_each_output_s_tolerance_follows_the_type_it_was_made_in_and_the_record():
    seen = []

    def tolerance_for(dtype, record, name):
        seen.append((dtype, record, name))
        return name

    case = SimpleNamespace(tolerance_for=tolerance_for)
    record = object()
    got = stages.tolerances(case, {"a": None, "b": None}, {"a": np.float16}, record)
    assert got == {"a": "a", "b": "b"}
    assert seen == [(np.dtype(np.float16), record, "a"), (np.dtype(np.float64), record, "b")]


def test_a_variant_s_output_becomes_a_float64_reference_only_where_it_is_floating():
    floats = stages.as_reference(np.array([1.5, 2.5], dtype=np.float32))
    assert floats.dtype == np.float64 and floats.tolist() == [1.5, 2.5]
    ints = stages.as_reference(np.array([3, 4], dtype=np.int32))
    assert ints.dtype == np.int32 and ints.tolist() == [3, 4]


def test_kernel_attributes_once_per_kernel_with_static_and_dynamic_shared_memory():
    from gpubench.backends.base import KernelAttributes
    from gpubench.model.steps import Launch
    from tests.fakes import FAKE_DEVICE

    compiled = {"a": KernelAttributes(64, 8192, 0, 1024), "b": KernelAttributes(128, 0, 16, 1024)}
    module = SimpleNamespace(attributes=lambda kernel: compiled[kernel])
    launches = [Launch("a", (1, 1, 1), (128, 1, 1), (), shared_bytes=12288),
                Launch("a", (2, 1, 1), (128, 1, 1), (), shared_bytes=12288),
                Launch("b", (1, 1, 1), (256, 1, 1), ())]  # fmt: skip
    found = stages.kernel_attributes(module, launches, FAKE_DEVICE)
    # a: 20 KiB of shared memory (+1 KiB reserved) fits 4 blocks of 4 warps in 96 KiB: 16/64.
    # b: 128 registers x 8 warps leaves room for 2 blocks of 8 warps: 16/64.
    assert found == {
        "a": {"registers_per_thread": 64, "static_shared_bytes": 8192, "local_bytes_per_thread": 0,
              "max_threads_per_block": 1024, "threads_per_block": 128, "occupancy": 0.25,
              "occupancy_limited_by": "shared memory"},
        "b": {"registers_per_thread": 128, "static_shared_bytes": 0, "local_bytes_per_thread": 16,
              "max_threads_per_block": 1024, "threads_per_block": 256, "occupancy": 0.25,
              "occupancy_limited_by": "registers"},
    }  # fmt: skip
    with pytest.raises(KernelLaunchError) as info:
        stages.kernel_attributes(None, launches, FAKE_DEVICE)
    assert str(info.value) == "kernel 'a': the suite compiles no kernels"
    assert stages.kernel_attributes(None, [], FAKE_DEVICE) == {}


def test_a_host_variant_runs_its_own_variant_at_the_point_and_is_checked_against_its_computes(
    monkeypatch,
):
    bench = registry.get("reduction")
    cls = type(bench)
    runs, references = [], []
    real_run, real_reference = cls.host_run, cls.reference

    def host_run(self, variant, point, inputs):
        runs.append((variant, point["n"], tuple(sorted(inputs))))
        return real_run(self, variant, point, inputs)

    def reference(self, computes, point, inputs):
        references.append((computes, point["n"]))
        return real_reference(self, computes, point, inputs)

    result = host_variant(monkeypatch, host_run=host_run, reference=reference)
    assert result.status.is_measured and result.kernel_attributes == {}
    assert runs and set(runs) == {("numpy", 1000, ("in",))}
    computes = next(v.computes for v in bench.variants if v.name == "numpy")
    assert set(references) == {(computes, 1000)}
    assert result.metrics.get("cgma") is None  # no arithmetic intensity claimed for NumPy


class _HotBackend:
    """Records the runs of each hot-mode call; a clock of 900 MHz against a 1000 MHz device."""

    def __init__(self):
        self.calls, self.device = [], SimpleNamespace(sm_clock_mhz=1000.0)

    def sm_clock_mhz(self):
        return 900.0

    def time_hot_ms(self, bound, runs):
        self.calls.append(runs)
        return 0.001 * runs


def test_hot_mode_calibrates_on_three_single_runs_then_samples_with_the_clock_read():
    from dataclasses import replace

    backend = _HotBackend()
    plan = SimpleNamespace(policy=replace(QUICK, mode="hot"), flush_l2=False, give_up_above_ms=None)
    before, after = [], []
    measurement = stages.measure(backend, plan, object(), lambda: before.append(1), after.append)
    assert backend.calls[:3] == [1, 1, 1] and len(set(backend.calls[3:])) == 1
    runs = backend.calls[3]
    assert runs > 1 and measurement.runs_per_sample == runs
    assert len(before) == len(backend.calls)  # the in-out restore before every call
    # After every call, the GPU time of the whole interval (all its runs).
    assert after == pytest.approx([0.001 * r * r for r in backend.calls])
    assert measurement.clock_mhz == 900.0


def _fit_check(monkeypatch, *, has_reference=False, checker_bytes=0, verdicts=("too big",),
               flush_l2=False):  # fmt: skip
    """VariantRun.does_not_fit on stand-ins: the need it computes, each memory check it asks
    (the need, the device memory it counts as free, the host memory), and what it answers."""
    from gpubench.engine import memory

    def spec(nbytes, on_host=False):
        return SimpleNamespace(nbytes=nbytes, on_host=on_host, dtype=np.dtype(np.float32))

    asked, released, answers = [], [], list(verdicts)

    def shortfall(need, device_free, host_free):
        asked.append((need.device, need.host, need.what, device_free, host_free))
        return answers.pop(0)

    monkeypatch.setattr(memory, "shortfall", shortfall)
    monkeypatch.setattr(memory, "host_available_bytes", lambda: 10**9)
    case = SimpleNamespace(outputs={"out": spec(4000), "pinned_out": spec(400, on_host=True)},
                           scratch={"tmp": spec(1000), "staging": spec(500, on_host=True)})  # fmt: skip
    checker = SimpleNamespace(has=lambda computes: has_reference,
                              device_bytes=lambda: checker_bytes,
                              release=lambda: released.append(True))  # fmt: skip
    run = SimpleNamespace(
        case=case, computes="sum", plan=SimpleNamespace(flush_l2=flush_l2),
        state=SimpleNamespace(placements=SimpleNamespace(missing_bytes=lambda wanted: (100, 20)),
                              checker=checker, sets=SimpleNamespace(use_copies=False)),
        wanted=lambda: ({}, {}),
        backend=SimpleNamespace(memory_info=lambda: (7000, 8000),
                                device=SimpleNamespace(l2_bytes=50)),
    )  # fmt: skip
    return stages.VariantRun.does_not_fit(run), asked, released


def test_a_variant_s_need_counts_every_buffer_on_its_side_and_the_reference_to_come(monkeypatch):
    answer, asked, released = _fit_check(monkeypatch, verdicts=(None,))
    # device: missing inputs 100 + out 4000 + tmp 1000; host: missing inputs 20 + the
    # host-side pinned_out 400 and staging 500 + downloads of both outputs (4400) + the
    # float64 references of both, for both input sets (17600).
    assert answer is None and released == []
    assert asked == [(5100, 22920, "this variant's buffers", 7000, 10**9)]
    _, asked, _ = _fit_check(monkeypatch, has_reference=True, verdicts=(None,), flush_l2=True)
    assert asked == [(5150, 5320, "this variant's buffers", 7000, 10**9)]


def test_the_device_copies_of_the_references_make_way_when_that_is_enough(monkeypatch):
    answer, asked, released = _fit_check(
        monkeypatch, checker_bytes=3000, verdicts=("too big", None)
    )
    assert answer is None and released == [True]
    assert [a[3] for a in asked] == [7000, 10000] and asked[0][:3] == asked[1][:3]
    assert all(a[4] == 10**9 for a in asked)
    # Not enough even without them: the first answer, and the references stay.
    answer, asked, released = _fit_check(monkeypatch, checker_bytes=3000,
                                         verdicts=("too big", "still too big"))  # fmt: skip
    assert answer == "too big" and released == [] and len(asked) == 2
    # No device copies to free: one check.
    answer, asked, released = _fit_check(monkeypatch, verdicts=("too big",))
    assert answer == "too big" and released == [] and len(asked) == 1


def test_a_kernel_variant_without_a_reference_fails_its_check_with_the_reason(monkeypatch):
    def no_reference(self, computes, point, inputs):
        raise PointError("NumPy refuses this point")

    monkeypatch.setattr(ScaleSuite, "reference", no_reference)
    bench = ScaleSuite()
    points = [bench.resolve(bench.defaults())]
    (result,) = Runner(FakeBackend()).run(Plan(bench, points, ("good",), "good", QUICK))
    assert result.status is Status.INCORRECT and result.verification.passed is False
    assert result.reason == "no reference to check against: NumPy refuses this point"


def test_a_host_variant_reports_the_cgma_its_case_declares(monkeypatch):
    import dataclasses

    bench = registry.get("reduction")
    plain_case = type(bench).case

    def with_cgma(self, variant, point, device, inputs):
        return dataclasses.replace(plain_case(self, variant, point, device, inputs), cgma=3.5)

    monkeypatch.setattr(type(bench), "case", with_cgma)
    result = host_variant(monkeypatch)
    assert result.status.is_measured and result.metrics["cgma"] == 3.5


# -- kernels that game the harness, on the CPU stand-in ---------------------------------------
# Local, not shared: more runs than QUICK, as some cheats show only across timed runs (a memo
# of an earlier run's inputs); the two cheat runs below use it.
CHEAT_TIMING = TimingPolicy(warmup=2, min_samples=8, max_samples=40, min_time_s=0, max_time_s=5)


def cheat_run(variants, untrusted=False, n=1000, policy=None):
    from tests.fakes import CheatingScaleSuite

    bench = CheatingScaleSuite()
    backend = FakeBackend()
    points = [bench.resolve({**bench.defaults(), "n": n})]
    policy = policy or dataclasses.replace(CHEAT_TIMING, untrusted=untrusted)
    results = Runner(backend).run(Plan(bench, points, tuple(variants), "good", policy))
    return {r.variant: r for r in results}, backend


@pytest.mark.parametrize("untrusted", [False, True])
@pytest.mark.parametrize("n", [1, 7, 1000, 10**6])
def test_every_cheat_is_flagged_with_its_reason_and_the_honest_kernel_is_not(untrusted, n):
    from tests.fakes import CHEATS

    if n == 10**6 and untrusted:
        pytest.skip("the same checks as n=1000, every sample: slow on the CPU stand-in")
    results, backend = cheat_run(["good", *CHEATS], untrusted=untrusted, n=n)
    assert results["good"].status is Status.OK, results["good"].reason
    for variant, words in CHEATS.items():
        r = results[variant]
        if variant == "too_fast" and n < 10**6:
            assert r.status is Status.OK  # 8n bytes in 1 µs: possible while they are few
            continue
        if variant == "memo_by_values" and n < 100:
            continue  # its keys cover much of a tiny array: tested at the larger sizes
        assert r.status in (Status.INCORRECT, Status.IMPLAUSIBLE), (variant, r.status)
        if not untrusted:
            assert any(w in r.reason for w in words), (variant, r.reason)
        assert "speedup" not in r.metrics
    assert backend.l2_resets >= 1


def test_a_memo_of_the_last_input_values_is_caught_only_by_its_timing_in_untrusted_mode():
    quiet, _ = cheat_run(["good", "memo_last_values"])
    assert quiet["memo_last_values"].status is Status.OK  # always right: the default can't see
    loud, _ = cheat_run(["good", "memo_last_values"], untrusted=True)
    r = loud["memo_last_values"]
    assert r.status is Status.IMPLAUSIBLE
    assert "the kernel reuses work from earlier runs" in r.reason
    assert loud["good"].status is Status.OK


def test_untrusted_mode_checks_every_timed_run():
    results, _ = cheat_run(["good", "lazy_every_fifth"], untrusted=True)
    r = results["lazy_every_fifth"]
    assert r.status is Status.INCORRECT
    assert "outputs poisoned before it, checked after it" in r.reason
    assert results["good"].phases["variant"]["audit"] > 0


def test_work_still_running_after_the_end_event_is_implausible(monkeypatch):
    monkeypatch.setattr(FakeBackend, "pending_work_s", 0.05)
    results, backend = cheat_run(["good"])
    r = results["good"]
    assert r.status is Status.IMPLAUSIBLE
    assert "after the end event of a timed run of 1.000 ms: the timing missed it" in r.reason
    assert backend.synchronizes >= 1


def test_one_long_wait_is_a_host_stall_unless_the_next_run_leaves_work_running_too(monkeypatch):
    original = FakeBackend.synchronize_device
    waits = []

    def stalls_once(self):  # the host stalled once (a loaded machine), no work left running
        waits.append(1)
        original(self)
        if len(waits) == 1:
            time.sleep(0.05)

    monkeypatch.setattr(FakeBackend, "synchronize_device", stalls_once)
    results, _ = cheat_run(["good"])
    assert results["good"].status is Status.OK, results["good"].reason
    assert len(waits) >= 2  # the confirmation's wait was read


def test_work_left_running_on_two_runs_in_a_row_names_both_waits(monkeypatch):
    monkeypatch.setattr(FakeBackend, "pending_work_s", 0.05)
    results, _ = cheat_run(["good"])
    reason = results["good"].reason
    assert reason.startswith("work was still running ")
    assert re.search(r"the timing missed it, and \d+\.\d\d ms after the next$", reason)


def test_default_mode_audits_one_timed_run_and_rechecks_on_both_sets():
    results, backend = cheat_run(["good"])
    phases = results["good"].phases["variant"]
    assert {"audit", "recheck", "inputs_check", "timing"} <= set(phases)
    assert backend.synchronizes >= 1
    # The second set's host time is the point's.
    assert "fresh_inputs" in results["good"].phases["point"]


def test_a_cheat_s_written_inputs_do_not_reach_the_next_variant():
    # writes_input adds one to x[0] on every launch; good runs after it on the same buffers.
    results, _ = cheat_run(["writes_input", "good"])
    assert results["writes_input"].status is Status.INCORRECT
    assert results["good"].status is Status.OK, results["good"].reason


def test_without_room_for_device_copies_the_sets_are_written_from_the_host(monkeypatch):
    from gpubench.engine import input_sets

    monkeypatch.setattr(input_sets, "copies_fit", lambda *args: False)
    from tests.fakes import CHEATS

    results, _ = cheat_run(["good", *CHEATS])
    assert results["good"].status is Status.OK
    for variant in ("skips_filled", "memo_by_address", "even_launches", "writes_input"):
        assert results[variant].status is Status.INCORRECT, variant


def _problem_run(declares_shapes):
    """Two configurations of one problem, then a new problem; the references made, counted."""
    from gpubench.model.benchmark import Param
    from tests.fakes import CheatingScaleSuite

    made = []

    class Tuned(CheatingScaleSuite):
        params = (
            *CheatingScaleSuite.params,
            Param("block", int, 256, "threads", choices=(128, 256), compile_time=True),
        )
        reference_params = frozenset()
        input_params = frozenset({"n"})

        def input_specs(self, point):
            return super().input_specs(point) if declares_shapes else None

        def reference(self, computes, point, inputs):
            made.append(point["block"])
            return super().reference(computes, point, inputs)

    bench = Tuned()
    points = [bench.resolve({**bench.defaults(), "n": 1000, "block": b}) for b in (128, 256)]
    points.append(bench.resolve({**bench.defaults(), "n": 999, "block": 128}))  # a new problem
    variants = ("good", "skips_filled", "memo_by_address", "even_launches")
    policy = CHEAT_TIMING
    backend = FakeBackend()
    results = Runner(backend).run(Plan(bench, points, variants, "good", policy))
    by = {(r.variant, r.point["block"], r.point["n"]): r for r in results}
    for variant in variants[1:]:
        for key in ((variant, 128, 1000), (variant, 256, 1000), (variant, 128, 999)):
            assert by[key].status is Status.INCORRECT, (key, by[key].reason)
    assert all(
        by[("good", b, n)].status is Status.OK for b, n in ((128, 1000), (256, 1000), (128, 999))
    )
    assert backend.live_buffers == 0  # whatever is shared or handed over is freed at the end
    return made, by


def test_configurations_of_one_problem_share_both_sets_and_their_references():
    made, by = _problem_run(declares_shapes=True)
    # Both sets' references for the first problem, then for the second: none for the second
    # configuration, which also makes no inputs of its own.
    assert made == [128, 128, 128, 128]
    assert not {"inputs", "fresh_inputs"} & set(by[("good", 256, 1000)].phases["point"])
    assert by[("good", 256, 1000)].seed == by[("good", 128, 1000)].seed


def test_a_suite_that_cannot_declare_its_shapes_shares_the_problem_by_its_declared_inputs():
    """sssp cannot say a graph's size before making it: its configurations share the whole
    problem by the parameters its inputs read, as a suite that declares its arrays does, and
    every cheat is still caught at every configuration (_problem_run)."""
    made, by = _problem_run(declares_shapes=False)
    assert made == [128, 128, 128, 128]
    assert not {"inputs", "fresh_inputs"} & set(by[("good", 256, 1000)].phases["point"])
    assert by[("good", 256, 1000)].seed == by[("good", 128, 1000)].seed
    assert by[("good", 128, 999)].seed != by[("good", 128, 1000)].seed


@pytest.mark.parametrize("stall", [False, True], ids=["no stall", "host stall after it"])
def test_a_wrong_audited_run_is_caught_though_a_long_wait_follows_it(monkeypatch, stall):
    # The wait's confirmation runs the kernel again: the audited run's own outputs are
    # checked before that, so a stall after a wrong run does not hide it.
    from tests import fakes

    wrong_on, stalling = 5, [False]

    def wrong_once(out, x, n, counter):
        count = counter.view(np.uint32)
        fakes._scale_good(out, x, n)
        if count[0] == wrong_on:  # launch 0 is the checked run; every timed one is audited
            fakes.f32(out)[0] += 1.0
            stalling[0] = stall
        count[0] += 1

    class WrongOnce(ScaleSuite):
        name = "wrong_once"
        variants = (fakes.Variant("wrong_once", "wrong_once", computes="double"),)
        baseline = "wrong_once"

        def case(self, variant, point, device, inputs):
            case = super().case("writes_once", point, device, inputs)  # the counter scratch
            case.steps[0] = dataclasses.replace(case.steps[0], kernel="wrong_once")
            return case

    monkeypatch.setitem(fakes.KERNELS, "wrong_once", (wrong_once, 1.0))
    original = FakeBackend.synchronize_device

    def synchronize(self):
        original(self)
        if stalling[0]:
            stalling[0] = False
            time.sleep(0.05)

    monkeypatch.setattr(FakeBackend, "synchronize_device", synchronize)
    bench = WrongOnce()
    points = [bench.resolve({**bench.defaults(), "n": 1000})]
    policy = dataclasses.replace(CHEAT_TIMING, untrusted=True)
    (result,) = Runner(FakeBackend()).run(
        Plan(bench, points, ("wrong_once",), "wrong_once", policy)
    )
    assert result.status is Status.INCORRECT
    assert result.reason.startswith(f"right on the checked run, wrong on timed run {wrong_on} ")


def _logged_run(monkeypatch, chosen, policy, suite=None, variant="good", backend=None):
    """One variant on the fake (`backend`, or a new one) with the audited calls `chosen`
    (counted from 0, warm-up included): the backend's batches, and the order of runs,
    restores, device-idle waits and output reads."""
    from gpubench.engine import audit

    monkeypatch.setattr(audit, "schedule", lambda p, draw=None: audit.AuditSchedule(chosen))
    backend, log = backend or FakeBackend(), []
    timed, read = backend.time_once_ms, backend.read
    restore, synchronize = backend.restore, backend.synchronize_device

    def time_once_ms(bound, flush_l2):
        log.append("run")
        return timed(bound, flush_l2) * (1 + len(log) % 3)  # noisy: no early stop

    monkeypatch.setattr(backend, "time_once_ms", time_once_ms)
    monkeypatch.setattr(backend, "read", lambda *a: log.append("read") or read(*a))
    monkeypatch.setattr(backend, "restore", lambda *a: log.append("restore") or restore(*a))
    monkeypatch.setattr(backend, "synchronize_device", lambda: log.append("idle") or synchronize())
    bench = suite or ScaleSuite()
    point = bench.resolve(bench.defaults())
    (result,) = Runner(backend).run(Plan(bench, [point], (variant,), variant, policy))
    return result, backend.batches, log


NOISY = TimingPolicy(warmup=1, min_samples=3, max_samples=20, min_time_s=0, target_noise=1e-6)


def test_an_audited_call_runs_in_a_batch_of_its_own_and_batches_end_before_it(monkeypatch):
    """Call 0 warms up, calls 1-3 one at a time; then 2 (calls 4-5: the audit at 6 ends the
    batch before it), the audited call alone, and batches again after it."""
    result, batches, _ = _logged_run(monkeypatch, frozenset({6}), NOISY)
    assert result.status is Status.UNSTABLE and result.summary["samples"] == 20
    assert batches == [1, 1, 1, 1, 2, 1, 2, 8, 4]


def test_an_audited_calls_outputs_are_checked_before_the_next_run_is_enqueued(monkeypatch):
    _, _, log = _logged_run(monkeypatch, frozenset({6}), NOISY)
    runs = [i for i, what in enumerate(log) if what == "run"]
    audited, following = runs[6], runs[7]
    between = log[audited + 1 : following]
    # The device found idle, then the outputs read back and checked, all before call 7.
    assert between[:2] == ["idle", "read"] and "run" not in between


def test_in_place_outputs_are_restored_before_every_run_of_a_batch(monkeypatch):
    from tests.fakes import InPlaceSuite

    result, batches, log = _logged_run(monkeypatch, frozenset({1}), NOISY, InPlaceSuite(), "device")
    assert result.status is Status.UNSTABLE and max(batches) == 8
    runs = [i for i, what in enumerate(log) if what == "run"]  # timed runs only
    assert len(runs) == 21  # the warm-up and 20 samples
    assert all(log[i - 1] == "restore" for i in runs)


def test_untrusted_mode_samples_one_at_a_time(monkeypatch):
    untrusted = dataclasses.replace(NOISY, untrusted=True)
    result, batches, _ = _logged_run(monkeypatch, frozenset(), untrusted)
    assert result.status is Status.UNSTABLE and batches == [1] * 21


def test_unflushed_samples_are_taken_one_at_a_time(monkeypatch):
    """Without a flush nothing keeps the GPU busy while a batch's first run is enqueued: its
    interval would hold the host's enqueue time and the others' not."""
    unflushed = dataclasses.replace(NOISY, flush_l2=False)
    result, batches, _ = _logged_run(monkeypatch, frozenset({6}), unflushed)
    assert result.status is Status.UNSTABLE and batches == [1] * 21


# Every batch short enough to go ahead, whatever the fake's sample times (ms).
ANY_LENGTH = 1000.0


def _enqueued_ahead(queue) -> list[int]:
    """The fake's batches enqueued before the wait for the batch before them."""
    ahead, in_flight = [], set()
    for entry in queue:
        if entry[0] == "enqueue":
            if in_flight:
                ahead.append(entry[1])
            in_flight.add(entry[1])
        else:
            in_flight.discard(entry[1])
    return ahead


def test_a_batch_goes_ahead_of_the_wait_for_the_one_before_it_and_changes_no_result(monkeypatch):
    """The same runs, restores, idle waits and reads in the same order, the same batches and
    the same result; only the host's order of enqueues and waits differs."""
    from gpubench.model import timing

    runs = {}
    for bound in (0.0, ANY_LENGTH):
        monkeypatch.setattr(timing, "AHEAD_BELOW_MS", bound)
        backend = FakeBackend()
        result, batches, log = _logged_run(monkeypatch, frozenset({1}), NOISY, backend=backend)
        runs[bound] = (result, batches, log, backend.queue)
    plain, ahead = runs[0.0], runs[ANY_LENGTH]
    assert _enqueued_ahead(plain[3]) == []
    one_by_one = [e for n in (1, 2, 3, 4) for e in (("enqueue", n, 1), ("wait", n))]
    assert ahead[3] == [
        *one_by_one,
        ("enqueue", 5, 2),
        ("enqueue", 6, 3),  # ahead of the wait for the 2
        ("wait", 5),
        ("enqueue", 7, 8),
        ("wait", 6),
        ("enqueue", 8, 4),
        ("wait", 7),
        ("wait", 8),
    ]
    assert ahead[1] == plain[1] == [1, 1, 1, 1, 2, 3, 8, 4] and ahead[2] == plain[2]
    assert (ahead[0].status, ahead[0].summary) == (plain[0].status, plain[0].summary)
    assert ahead[0].status is Status.UNSTABLE and ahead[0].summary["samples"] == 20
    loop = ahead[0].phases["timing_loop"]
    assert (loop["batches_ahead"], loop["batches_thrown"], loop["samples"]) == (3.0, 0.0, 21.0)


def test_a_batch_run_ahead_of_the_stop_is_runs_not_samples_and_ends_before_the_checks(
    monkeypatch,
):
    """Quiet samples of 1 ms, 16 ms wanted: the rule stops at 16, with 8 more enqueued ahead;
    they run, are counted as runs, and are waited for before anything is read back."""
    from gpubench.engine import audit
    from gpubench.model import timing

    monkeypatch.setattr(timing, "AHEAD_BELOW_MS", ANY_LENGTH)
    monkeypatch.setattr(audit, "schedule", lambda p, draw=None: audit.AuditSchedule(frozenset()))
    backend, reads = FakeBackend(), []
    read = backend.read
    monkeypatch.setattr(backend, "read", lambda *a: reads.append(len(backend.queue)) or read(*a))
    policy = TimingPolicy(warmup=1, min_samples=3, max_samples=1000, min_time_s=0.016)
    bench = ScaleSuite()
    point = bench.resolve(bench.defaults())
    (result,) = Runner(backend).run(Plan(bench, [point], ("good",), "good", policy))
    assert result.status is Status.OK and result.summary["samples"] == 16
    assert backend.batches == [1, 1, 1, 1, 2, 3, 8, 8]
    assert backend.queue[-3:] == [("enqueue", 8, 8), ("wait", 7), ("wait", 8)]
    assert len(backend.timed) == 1 + 16 + 8  # the warm-up, the samples, the 8 run ahead
    loop = result.phases["timing_loop"]
    assert (loop["samples"], loop["batches_ahead"], loop["batches_thrown"]) == (25.0, 3.0, 1.0)
    # Outputs read before timing (the checked run) and after the last wait (the re-checks).
    after = [n for n in reads if n]
    assert after and all(n == len(backend.queue) for n in after) and not backend.in_flight


def test_no_batch_goes_ahead_next_to_an_audited_call(monkeypatch):
    """The audit at call 12 ends the 3 of calls 9-11 (itself enqueued ahead); the audited
    call is enqueued only once that 3 is waited for, and the 4 after it once it is waited for
    and its outputs checked (the fake refuses a device-wide wait or a read with a batch in
    flight)."""
    from gpubench.model import timing

    monkeypatch.setattr(timing, "AHEAD_BELOW_MS", ANY_LENGTH)
    backend = FakeBackend()
    result, batches, log = _logged_run(monkeypatch, frozenset({12}), NOISY, backend=backend)
    assert result.status is Status.UNSTABLE and batches == [1, 1, 1, 1, 2, 3, 3, 1, 4, 4]
    assert backend.queue[8:] == [
        ("enqueue", 5, 2),
        ("enqueue", 6, 3),
        ("wait", 5),
        ("enqueue", 7, 3),
        ("wait", 6),
        ("wait", 7),
        ("enqueue", 8, 1),  # the audited call
        ("wait", 8),
        ("enqueue", 9, 4),
        ("enqueue", 10, 4),
        ("wait", 9),
        ("wait", 10),
    ]
    assert _enqueued_ahead(backend.queue) == [6, 7, 10]
    runs = [i for i, what in enumerate(log) if what == "run"]
    assert log[runs[12] + 1 : runs[13]] == ["idle", "read"]


@pytest.mark.parametrize(
    ("why", "policy", "bound"),
    [
        ("untrusted mode", dataclasses.replace(NOISY, untrusted=True), ANY_LENGTH),
        ("unflushed samples", dataclasses.replace(NOISY, flush_l2=False), ANY_LENGTH),
        ("the fake's samples of 1 to 3 ms: every batch over the bound", NOISY, None),
    ],
)
def test_no_batch_goes_ahead_where_each_must_be_waited_for_or_is_long(
    monkeypatch, why, policy, bound
):
    from gpubench.model import timing

    if bound is not None:
        monkeypatch.setattr(timing, "AHEAD_BELOW_MS", bound)
    backend = FakeBackend()
    result, batches, _ = _logged_run(monkeypatch, frozenset({6}), policy, backend=backend)
    assert sum(batches) == 21 and len(backend.queue) == 2 * len(batches), why
    assert _enqueued_ahead(backend.queue) == [], why
    assert result.phases["timing_loop"]["batches_ahead"] == 0.0, why


def test_hot_samples_never_go_ahead(monkeypatch):
    from gpubench.model import timing

    monkeypatch.setattr(timing, "AHEAD_BELOW_MS", ANY_LENGTH)
    backend = FakeBackend()
    hot = dataclasses.replace(NOISY, mode="hot")
    result, batches, _ = _logged_run(monkeypatch, frozenset({6}), hot, backend=backend)
    assert backend.queue == [] and batches == [] and len(backend.hot_calls) == 3 + 21
    assert result.phases["timing_loop"]["batches_ahead"] == 0.0
