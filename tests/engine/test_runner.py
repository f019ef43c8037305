"""The runner's logic on a CPU fake backend: check before time, typed failures, speedups."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np
import pytest

from gpubench.engine.runner import Plan, Runner
from gpubench.model.results import Status
from tests.fakes import FakeBackend, ScaleSuite
from tests.policies import CHECK_ONLY, QUICK


def run(variants, point=None, baseline="good"):
    bench = ScaleSuite()
    backend = FakeBackend()
    points = [bench.resolve({**bench.defaults(), **(point or {})})]
    variants = [v for v in variants]
    results = Runner(backend).run(Plan(bench, points, tuple(variants), baseline, QUICK))
    return {r.variant: r for r in results}, backend


def test_a_correct_variant_is_verified_then_timed():
    results, _ = run(["good"])
    r = results["good"]
    assert r.status is Status.OK
    assert r.verification.passed
    assert r.summary["samples"] >= QUICK.min_samples
    assert r.metrics["gbps"] == pytest.approx(8 * 1000 / 1e-3 / 1e9)
    assert r.seed is not None


def test_unwritten_elements_are_caught_by_the_nan_poison():
    results, backend = run(["skips_last"])
    r = results["skips_last"]
    assert r.status is Status.INCORRECT
    assert r.verification.unwritten == 1
    assert r.verification.worst_index == [999]
    assert "not written" in r.reason
    assert "skips_last" not in backend.timed  # an incorrect variant is never timed


def test_a_wrong_value_is_reported_with_its_error_and_place():
    results, _ = run(["wrong"])
    r = results["wrong"]
    assert r.status is Status.INCORRECT
    assert r.verification.worst_index == [500]
    assert r.verification.max_abs_error == pytest.approx(1.0)
    assert "worst at [500]" in r.reason


def test_a_refused_launch_is_recorded_and_the_sweep_goes_on():
    results, _ = run(["refused", "good"])
    assert results["refused"].status is Status.LAUNCH_FAILED
    assert "too many resources" in results["refused"].reason
    assert results["good"].status is Status.OK


def test_a_kernel_that_breaks_the_context_is_a_crash_and_ends_the_point_in_this_process():
    results, _ = run(["crash", "good"])
    assert results["crash"].status is Status.CRASHED
    assert "illegal memory access" in results["crash"].reason
    assert "good" not in results  # nothing more can run in a dead context


def test_noise_target_missed_is_unstable_and_still_ranked(monkeypatch):
    import itertools

    from tests import fakes

    noisy = itertools.cycle([1.0, 3.0])
    timed = fakes.FakeBackend.time_once_ms  # the kernel still runs: its timed runs are checked
    monkeypatch.setattr(
        fakes.FakeBackend,
        "time_once_ms",
        lambda self, bound, flush_l2: timed(self, bound, flush_l2) * 0 + next(noisy),
    )
    results, _ = run(["good", "fast"])
    assert results["fast"].status is Status.UNSTABLE and not results["fast"].status.is_failure
    assert "speedup" in results["fast"].metrics


def test_throttled_samples_are_discarded(monkeypatch):
    from tests import fakes

    clocks = iter([1000.0, 500.0] * 100)
    monkeypatch.setattr(fakes.FakeBackend, "sm_clock_mhz", lambda self: next(clocks))
    results, _ = run(["good"])
    summary = results["good"].summary
    assert summary["discarded"] >= 2 and summary["samples"] >= QUICK.min_samples


def test_hot_mode_averages_back_to_back_runs():
    from dataclasses import replace

    bench = ScaleSuite()
    hot = replace(QUICK, mode="hot", hot_sample_ms=10.0)
    (result,) = Runner(FakeBackend()).run(Plan(bench, [bench.defaults()], ("good",), "good", hot))
    assert result.status is Status.OK and result.summary["runs_per_sample"] == 10


def test_an_impossible_launch_shape_is_skipped_with_a_reason():
    results, _ = run(["huge_block"])
    r = results["huge_block"]
    assert r.status is Status.SKIPPED
    assert "2048 threads per block" in r.reason
    assert not r.status.is_failure


def test_a_compile_failure_marks_every_variant_with_nvccs_message():
    results, _ = run(["good", "fast"], point={"broken": 1})
    for r in results.values():
        assert r.status is Status.COMPILE_FAILED
        assert 'identifier "oops" is undefined' in r.reason


def test_speedup_is_against_the_baseline_at_the_same_point():
    results, _ = run(["good", "fast", "wrong"])
    assert results["good"].metrics["speedup"] == pytest.approx(1.0)
    assert results["fast"].metrics["speedup"] == pytest.approx(2.0)
    assert "speedup" not in results["wrong"].metrics  # incorrect: never ranked


def test_no_speedup_when_the_baseline_failed():
    results, _ = run(["wrong", "fast"], baseline="wrong")
    assert "speedup" not in results["fast"].metrics


def test_modules_compile_once_per_distinct_define_set_and_buffers_are_freed(monkeypatch, tmp_path):
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path))
    bench = ScaleSuite()
    backend = FakeBackend()
    points = [bench.resolve({**bench.defaults(), "n": n}) for n in (10, 20, 30)]
    Runner(backend).run(Plan(bench, points, ("good", "fast"), "good", QUICK))
    assert len(backend.compiles) == 1
    assert backend.live_buffers == 0


def test_observers_see_every_result_in_order():
    seen = []

    class Watch:
        def started(self, total):
            seen.append(("start", total))

        def finished(self, result):
            seen.append(result.variant)

        def point_finished(self, results):
            seen.append(("point", [r.metrics.get("speedup") for r in results]))

    bench = ScaleSuite()
    points = [bench.defaults()]
    Runner(FakeBackend(), [Watch()]).run(Plan(bench, points, ("good", "fast"), "good", QUICK))
    assert seen == [("start", 2), "good", "fast", ("point", [1.0, 2.0])]


def test_results_carry_kernel_resources_occupancy_and_cgma(monkeypatch):
    from tests import fakes

    monkeypatch.setattr(fakes.ScaleSuite, "cgma_value", 0.25)
    results, _ = run(["good"])
    attributes = results["good"].kernel_attributes["good"]
    assert attributes["registers_per_thread"] == 16 and attributes["threads_per_block"] == 256
    assert 0 < attributes["occupancy"] <= 1 and attributes["occupancy_limited_by"]
    assert results["good"].metrics["cgma"] == 0.25


# -- Suite API v2: in-out buffers, Repeat, re-check after timing, preflight ----------------
def run_suite(bench, variants, point=None, policy=QUICK, backend=None):
    backend = backend or FakeBackend()
    points = [bench.resolve({**bench.defaults(), **(point or {})})]
    results = Runner(backend).run(Plan(bench, points, tuple(variants), variants[0], policy))
    return {r.variant: r for r in results}, backend


def test_an_in_place_buffer_starts_from_its_input_and_is_restored_before_every_run():
    from tests.fakes import InPlaceSuite

    bench = InPlaceSuite()
    backend = FakeBackend()
    points = [bench.defaults()]
    plan = Plan(bench, points, ("device", "via_host"), "device", QUICK, timeline=True)
    results = {r.variant: r for r in Runner(backend).run(plan)}
    for r in results.values():
        assert r.status is Status.OK, r.reason
        assert r.work == {"bytes_moved": 1200, "flops": 200, "elements": 0}
    samples = results["device"].summary["samples"]
    # Before the checked run, every warm-up and timed run, the re-check and the timeline run.
    assert backend.restores >= 2 * (1 + QUICK.warmup + samples + 1 + 1)
    assert [s["op"] for s in results["via_host"].timeline] == ["H2D", "kernel", "D2H"]


def test_in_place_is_incorrect_if_the_input_is_not_restored(monkeypatch):
    from tests import fakes

    monkeypatch.setattr(fakes.FakeBackend, "restore", lambda self, dst, src, spec: None)
    results, _ = run_suite(fakes.InPlaceSuite(), ["device"])
    assert results["device"].status is Status.INCORRECT  # y stayed poisoned: never a + y


def test_repeat_runs_until_the_flag_stays_zero_and_counts_iterations():
    from tests.fakes import CountDownSuite

    results, _ = run_suite(CountDownSuite(), ["converges"], {"n": 50, "top": 7})
    r = results["converges"]
    assert r.status is Status.OK, r.reason
    # 7 iterations that change something, then one that finds nothing left to do.
    assert r.metrics["iterations"] == 8
    assert r.work == {"bytes_moved": 8 * 50 * 8, "flops": 0, "elements": 50 * 8}
    assert r.median_ms == pytest.approx(0.25 * 8)


def test_read_back_buffers_reach_the_run_metrics_after_the_checked_run():
    from tests.fakes import CountDownSuite

    class Counting(CountDownSuite):
        def case(self, variant, point, device, inputs):
            case = super().case(variant, point, device, inputs)
            case.read_back = ("changed",)
            case.run_metrics = lambda record: {
                "flag_left": float(record.read_back["changed"][0]),
                "iterations_seen": float(record.iterations),
            }
            return case

    results, _ = run_suite(Counting(), ["converges"], {"n": 50, "top": 7})
    r = results["converges"]
    assert r.status is Status.OK, r.reason
    # The last iteration changed nothing, so the flag read back is 0; 8 iterations in all.
    assert r.metrics["flag_left"] == 0.0 and r.metrics["iterations_seen"] == 8.0


def test_read_back_must_name_an_output_or_a_scratch_buffer():
    from gpubench.model.benchmark import BufferSpec, Case

    case = Case(outputs={"y": BufferSpec((1,), np.dtype(np.float32))}, read_back=("y",))
    assert case.problems({}) == []
    case.read_back = ("z",)
    assert case.problems({}) == ["read_back names 'z', which is neither an output nor scratch"]


def test_a_repeat_that_hits_max_iterations_is_incorrect_with_the_count():
    from tests.fakes import CountDownSuite

    results, _ = run_suite(CountDownSuite(), ["never_done"], {"max_iterations": 12})
    r = results["never_done"]
    assert r.status is Status.INCORRECT and r.metrics["iterations"] == 12
    assert "did not converge" in r.reason and "12 iterations" in r.reason


def test_hot_mode_skips_runs_that_iterate_to_convergence():
    from dataclasses import replace

    from tests.fakes import CountDownSuite

    results, _ = run_suite(CountDownSuite(), ["converges"], policy=replace(QUICK, mode="hot"))
    assert results["converges"].status is Status.SKIPPED
    assert "cold mode" in results["converges"].reason
    assert results["converges"].reason == (
        "hot mode repeats whole runs back to back, and a run that iterates to convergence "
        "starts from the previous run's answer: use cold mode"
    )


def test_a_kernel_right_only_on_its_first_launch_is_caught_after_timing():
    results, _backend = run(["first_launch_only", "writes_once", "good"])
    for variant in ("first_launch_only", "writes_once"):
        r = results[variant]
        assert r.status is Status.INCORRECT, variant
        assert r.reason.startswith("right on the checked run, wrong on "), r.reason
        assert "speedup" not in r.metrics
    assert results["good"].status is Status.OK


def test_a_point_too_big_for_the_inputs_is_skipped_before_they_are_made(monkeypatch):
    from tests import fakes

    monkeypatch.setattr(fakes.FakeBackend, "free_device_bytes", 300 * 2**20)
    made = []
    monkeypatch.setattr(fakes.ScaleSuite, "inputs", lambda self, p, rng: made.append(p) or {})
    results, backend = run(["good", "fast"], point={"n": 10**8})
    for r in results.values():
        assert r.status is Status.SKIPPED
        assert r.reason == ("needs 381.5 MiB of device memory for the inputs; 300.0 MiB is free")
    assert made == [] and backend.live_buffers == 0


def test_a_variant_whose_buffers_do_not_fit_is_skipped_and_the_next_still_runs(monkeypatch):
    from tests import fakes

    # The inputs fit; the output beside them does not.
    monkeypatch.setattr(fakes.FakeBackend, "free_device_bytes", 256 * 2**20 + 6000)
    results, backend = run(["good"], point={"n": 1000})
    assert results["good"].status is Status.SKIPPED
    assert "device memory for this variant's buffers" in results["good"].reason
    assert backend.live_buffers == 0


@pytest.mark.parametrize("flush", [True, False])
def test_a_variant_fits_to_the_byte_its_buffers_and_the_l2_flush_need(monkeypatch, flush):
    """The variant's device need: the inputs not on the device yet, its outputs and scratch,
    plus the L2-sized flush buffer when samples flush L2, plus the device headroom; at the byte
    it runs, one byte less it is skipped with both figures."""
    from gpubench.engine import memory
    from tests import fakes

    n = 3 * 2**20  # x and out of 12 MiB each
    need = 4 * n + 4 * n + (fakes.FAKE_DEVICE.l2_bytes if flush else 0)
    policy = dataclasses.replace(QUICK, flush_l2=flush)
    bench = ScaleSuite()
    points = [bench.resolve({**bench.defaults(), "n": n})]
    for free, status in ((need + memory.DEVICE_HEADROOM_BYTES, Status.OK),
                         (need + memory.DEVICE_HEADROOM_BYTES - 1, Status.SKIPPED)):  # fmt: skip
        monkeypatch.setattr(fakes.FakeBackend, "free_device_bytes", free)
        plan = Plan(bench, points, ("good",), "good", policy)
        (result,) = Runner(FakeBackend()).run(plan)
        assert result.status is status, (free, result.reason)
    assert result.reason == (f"needs {memory.human(need)} of device memory for this variant's "
                             f"buffers; {memory.human(free)} is free")  # fmt: skip


def test_a_variant_fits_host_memory_to_the_byte_downloads_and_reference_included(monkeypatch):
    """Host need of a variant: its outputs' downloads and the float64 reference (not made yet
    for the first variant), within 90% of the available memory."""
    from gpubench.engine import memory

    n = 3 * 2**20
    # out downloaded (float32) + its float64 references on both input sets: 60 MiB
    need = 4 * n + 2 * 8 * n
    bench = ScaleSuite()
    points = [bench.resolve({**bench.defaults(), "n": n})]
    fits = need * 10 // 9 + 1  # the need within 90% of what is available
    for available, status in ((fits, Status.OK), (need, Status.SKIPPED)):
        monkeypatch.setattr(memory, "host_available_bytes", lambda a=available: a)
        (result,) = Runner(FakeBackend()).run(Plan(bench, points, ("good",), "good", QUICK))
        assert result.status is status, (available, result.reason)
    assert result.reason == (
        f"needs {memory.human(need)} of host memory for this variant's "
        f"buffers; {memory.human(need)} is available"
    )


def test_an_allocation_that_fails_anyway_is_a_clean_skip(monkeypatch):
    from gpubench.errors import OutOfMemory
    from tests import fakes

    def refuse(self, spec):
        raise OutOfMemory("cannot allocate 4000 bytes of device memory")

    monkeypatch.setattr(fakes.FakeBackend, "alloc", refuse)
    results, _ = run(["good"])
    assert results["good"].status is Status.SKIPPED
    assert results["good"].reason == "out of memory: cannot allocate 4000 bytes of device memory"


def test_a_wrong_declaration_is_a_failed_launch_naming_the_problem(monkeypatch):
    from gpubench.model.benchmark import Case
    from tests import fakes

    original = fakes.ScaleSuite.case

    def renamed(self, variant, point, device, inputs):
        case = original(self, variant, point, device, inputs)
        return Case(steps=case.steps, outputs={"x": case.outputs["out"]}, work=case.work)

    monkeypatch.setattr(fakes.ScaleSuite, "case", renamed)
    results, _ = run(["good"])
    assert results["good"].status is Status.LAUNCH_FAILED
    assert "has the name of an input" in results["good"].reason
    # Both mistakes, in one line.
    assert results["good"].reason == (
        "the suite declares 'good' wrongly: output 'x' has the name of an input: declare it "
        "init='input' (an in-out buffer) or rename it; a step uses buffer 'out', which is "
        "neither an input nor declared"
    )


def test_metrics_come_from_the_stored_work():
    results, _ = run(["fast"])
    r = results["fast"]
    assert r.work == {"bytes_moved": 8000, "flops": 1000, "elements": 1000}
    assert r.metrics["time_ms"] == 0.5
    assert r.metrics["gbps"] == pytest.approx(8000 / 0.5e-3 / 1e9)
    assert r.metrics["gflops"] == pytest.approx(1000 / 0.5e-3 / 1e9)
    assert r.metrics["gelem_per_s"] == pytest.approx(1000 / 0.5e-3 / 1e9)
    peak_bw = FakeBackend().device.peak_bandwidth_gbps
    assert r.metrics["pct_peak_bw"] == pytest.approx(100 * r.metrics["gbps"] / peak_bw)
    peak_flops = FakeBackend().device.peak_fp32_gflops
    assert r.metrics["pct_peak_flops"] == pytest.approx(100 * r.metrics["gflops"] / peak_flops)


# -- the same on the GPU ----------------------------------------------------------------------
# Local, not shared: QUICK with 5 to 20 samples, the policy these GPU tests were written with
# (only this module uses it).
GPU_QUICK = dataclasses.replace(QUICK, min_samples=5, max_samples=20)


def _suite(name: str):
    from pathlib import Path

    from gpubench.load import registry

    return registry.get(str(Path(__file__).parents[1] / "suites" / f"{name}.py"))


@pytest.mark.gpu
def test_gpu_in_place_saxpy_on_the_device_and_staged_through_pinned_memory(gpu_backend):
    bench = _suite("saxpy")  # declares no defines(): BLOCK comes from the compile-time param
    points = [bench.resolve({**bench.defaults(), "n": n, "block": b})
              for n, b in ((1, 128), (1000003, 256), (1 << 22, 512))]  # fmt: skip
    results = Runner(gpu_backend).run(Plan(bench, points, bench.variant_names, "in_place",
                                           GPU_QUICK, timeline=True))  # fmt: skip
    assert all(r.status.is_measured for r in results), [(r.variant, r.reason) for r in results]
    staged = [r for r in results if r.variant == "staged"][-1]
    assert [s["op"] for s in staged.timeline] == ["H2D", "kernel", "D2H"]
    assert {s["stream"] for s in staged.timeline} == {1}


@pytest.mark.gpu
def test_gpu_repeat_until_converged_counts_iterations_and_work(gpu_backend):
    bench = _suite("converge")
    point = bench.resolve({**bench.defaults(), "n": 100_003, "top": 37, "max_iterations": 200})
    results = Runner(gpu_backend).run(Plan(bench, [point], ("count_down",), "count_down",
                                           GPU_QUICK))  # fmt: skip
    (r,) = results
    assert r.status.is_measured, r.reason
    assert r.metrics["iterations"] == 38
    assert r.work == {"bytes_moved": 8 * 100_003 * 38, "flops": 0, "elements": 100_003 * 38}
    capped = bench.resolve({**point, "max_iterations": 10})
    (never,) = Runner(gpu_backend).run(Plan(bench, [capped], ("never_done",), "never_done",
                                            GPU_QUICK))  # fmt: skip
    assert never.status is Status.INCORRECT and "after 10 iterations" in never.reason


@pytest.mark.gpu
def test_gpu_a_transpose_too_big_for_the_device_is_skipped_with_the_need(gpu_backend):
    from gpubench.load import registry

    bench = registry.get("transpose")
    point = bench.resolve({**bench.defaults(), "size": 200_000})
    (r,) = Runner(gpu_backend).run(Plan(bench, [point], ("copy",), "copy", GPU_QUICK))
    assert r.status is Status.SKIPPED
    assert "needs 149.0 GiB of device memory for the inputs" in r.reason


@pytest.mark.gpu
def test_gpu_a_transpose_past_2_31_elements_verifies(gpu_backend):
    from gpubench.load import registry

    bench = registry.get("transpose")
    point = bench.resolve({**bench.defaults(), "size": 46341})
    results = Runner(gpu_backend).run(
        Plan(bench, [point], ("naive", "vectorized"), "naive", CHECK_ONLY)
    )
    assert [r.status.is_measured for r in results] == [True, True], [r.reason for r in results]


def test_the_l2_flush_default_follows_the_suite_and_the_policy():
    from dataclasses import replace

    from gpubench.load import registry

    memory_bound, compute_bound = registry.get("transpose"), registry.get("matmul")
    assert Plan(memory_bound, [], (), "naive", QUICK).flush_l2 is True
    assert Plan(compute_bound, [], (), "naive", QUICK).flush_l2 is False
    assert Plan(memory_bound, [], (), "naive", replace(QUICK, flush_l2=False)).flush_l2 is False
    assert Plan(compute_bound, [], (), "naive", replace(QUICK, flush_l2=True)).flush_l2 is True
    assert Plan(memory_bound, [], (), "naive", replace(QUICK, mode="hot")).flush_l2 is False


def test_a_cpu_reference_variant_that_is_wrong_is_incorrect(monkeypatch):
    from gpubench.load import registry

    bench = registry.get("reduction")
    point = bench.resolve({**bench.defaults(), "n": 1000, "dtype": "int32"})
    plan = Plan(bench, [point], ("numpy",), "numpy", QUICK)
    (right,) = Runner(FakeBackend()).run(plan)
    assert right.status.is_measured and right.verification.passed  # host timing may be noisy
    monkeypatch.setattr(type(bench), "host_run",
                        lambda self, v, p, inputs: {"out": np.array([7], np.int32)})  # fmt: skip
    (wrong,) = Runner(FakeBackend()).run(plan)
    assert wrong.status is Status.INCORRECT and "speedup" not in wrong.metrics


def test_compiler_excerpt_keeps_the_error_lines_or_else_the_first_lines():
    from gpubench.engine.runner import _compiler_excerpt

    output = (
        "note: building\n\nkernel.cu(3): ERROR: bad\nwarning: unused\nkernel.cu(9): error: worse\n"
    )
    assert _compiler_excerpt(output) == "kernel.cu(3): ERROR: bad\nkernel.cu(9): error: worse"
    assert _compiler_excerpt(output, limit=1) == "kernel.cu(3): ERROR: bad"
    assert _compiler_excerpt("one\n\ntwo\nthree\n", limit=2) == "one\ntwo"
    assert _compiler_excerpt("") == ""


def test_every_result_of_a_point_names_its_suite_baseline_seed_and_phases():
    results, _ = run(["good", "fast"], baseline="fast")
    good, fast = results["good"], results["fast"]
    assert (good.suite, good.baseline, good.reason) == ("scale", "fast", "")
    assert good.seed == fast.seed and 0 <= good.seed < 2**63
    assert set(good.phases) == {"point", "variant", "timing_loop", "span"}
    loop = good.phases["timing_loop"]
    assert (loop["batches"], loop["samples"]) == (4.0, 4.0)  # warm-up and 3 samples, each alone
    assert set(good.phases["point"]) >= {"compile", "inputs"}
    assert set(good.phases["variant"]) >= {"checked_run", "check", "timing", "recheck"}
    failed, _ = run(["good", "fast"], point={"broken": 1})
    assert {r.variant for r in failed.values()} == {"good", "fast"}
    reason = failed["good"].reason
    assert reason.endswith('\nkernel.cu(3): error: identifier "oops" is undefined')
    assert (
        list(failed["good"].phases) == ["point", "span"]
        and "compile" in failed["good"].phases["point"]
    )
    assert (failed["fast"].suite, failed["fast"].baseline) == ("scale", "good")


def test_inputs_the_host_cannot_make_skip_every_variant_with_the_reason(monkeypatch):
    def no_memory(self, point, random):
        raise MemoryError

    monkeypatch.setattr(ScaleSuite, "inputs", no_memory)
    results, _ = run(["good", "fast"])
    assert [(r.status, r.reason) for r in results.values()] == [
        (Status.SKIPPED, "the host ran out of memory making the inputs")] * 2  # fmt: skip


def test_a_point_the_suite_refuses_while_running_is_a_failed_launch_with_the_reason(monkeypatch):
    from gpubench.errors import PointError

    def refuse(self, variant, point, device, inputs):
        raise PointError("k must divide n")

    monkeypatch.setattr(ScaleSuite, "case", refuse)
    results, _ = run(["good"])
    assert results["good"].status is Status.LAUNCH_FAILED
    assert results["good"].reason == "the suite cannot run this point: k must divide n"


def test_observers_see_the_variant_start_before_its_result(monkeypatch):
    bench = ScaleSuite()
    point = bench.resolve(bench.defaults())
    events = []
    plan = Plan(bench, [point], ("good", "fast"), "good", QUICK)
    Runner(FakeBackend()).run_point(plan, point, ["good", "fast"], on_start=events.append,
                                    on_result=lambda r: events.append(r.variant.upper()))  # fmt: skip
    assert events == ["good", "GOOD", "fast", "FAST"]


def test_a_device_variant_records_each_of_its_phases_in_order():
    results, _ = run(["good"])
    assert list(results["good"].phases["point"]) == [
        "compile",
        "inputs",
        "uploads",
        "reference",
        "fresh_inputs",
    ]
    assert list(results["good"].phases["variant"]) == [
        "prepare",
        "checked_run",
        "check",
        "downloads",
        "audit",
        "timing",
        "inputs_check",
        "recheck",
    ]


def test_a_variant_the_suite_cannot_run_here_or_at_this_point_is_skipped_with_its_reason(
    monkeypatch,
):
    import dataclasses as dc

    monkeypatch.setattr(ScaleSuite, "unavailable",
                        lambda self, v: "needs cuBLAS" if v == "fast" else None)  # fmt: skip
    original = ScaleSuite.case

    def skipping(self, variant, point, device, inputs):
        case = original(self, variant, point, device, inputs)
        return dc.replace(case, skip="n too small") if variant == "good" else case

    monkeypatch.setattr(ScaleSuite, "case", skipping)
    results, _ = run(["good", "fast", "wrong"])
    assert [(v, r.status, r.reason) for v, r in results.items()][:2] == [
        ("good", Status.SKIPPED, "n too small"), ("fast", Status.SKIPPED, "needs cuBLAS")]  # fmt: skip
    assert results["wrong"].status is Status.INCORRECT


def _allocations_with_a_host_only_input(monkeypatch, steps=None):
    """The scale suite with a second input no kernel reads; the shapes of what was allocated."""
    original_inputs, original_case = ScaleSuite.inputs, ScaleSuite.case
    monkeypatch.setattr(ScaleSuite, "inputs", lambda self, point, rng: {
        **original_inputs(self, point, rng), "host_only": np.arange(7, dtype=np.int16)})  # fmt: skip
    if steps is not None:
        monkeypatch.setattr(ScaleSuite, "case", lambda self, *a: dataclasses.replace(
            original_case(self, *a), steps=steps(original_case(self, *a).steps)))  # fmt: skip
    made = []
    original_alloc = FakeBackend.alloc
    monkeypatch.setattr(FakeBackend, "alloc",
                        lambda self, spec: made.append(spec.dtype) or original_alloc(self, spec))  # fmt: skip
    results, _ = run(["good"])
    assert results["good"].status is Status.OK
    return made


def test_an_input_no_step_of_the_variant_uses_is_not_uploaded(monkeypatch):
    made = _allocations_with_a_host_only_input(monkeypatch)
    assert np.dtype(np.int16) not in made and np.dtype(np.float32) in made


def test_a_library_call_is_handed_every_input(monkeypatch):
    from gpubench.model.steps import LibraryCall

    library = LibraryCall("lib", lambda pointers, stream: None)
    made = _allocations_with_a_host_only_input(monkeypatch, lambda steps: [*steps, library])
    assert np.dtype(np.int16) in made


def test_a_crash_while_timing_says_so_and_frees_nothing_in_the_dead_context():
    """The fake driver refuses a free or release after the crash, as a real one fails them."""
    from gpubench.model.benchmark import Variant

    class CrashesWhenTimed(ScaleSuite):
        variants = (*ScaleSuite.variants, Variant("crash_when_timed", "", computes="double"))

    results, backend = run_suite(CrashesWhenTimed(), ["crash_when_timed", "good"])
    r = results["crash_when_timed"]
    assert r.status is Status.CRASHED and "good" not in results
    assert r.reason == ("while timing: LaunchError: cuStreamSynchronize failed: an illegal "
                        "memory access was encountered")  # fmt: skip
    assert backend.context_broken and backend.timed == ["crash_when_timed"]
    first, _ = run(["crash"])
    assert first["crash"].reason == ("LaunchError: cuStreamSynchronize failed: an illegal memory "
                                     "access was encountered")  # fmt: skip


def test_the_case_is_planned_for_this_device():
    from tests.fakes import FAKE_DEVICE

    seen = []

    class Recording(ScaleSuite):
        def case(self, variant, point, device, inputs):
            seen.append(device)
            return super().case(variant, point, device, inputs)

    run_suite(Recording(), ["good"])
    assert seen == [FAKE_DEVICE]


def test_a_device_variant_that_is_the_reference_downloads_its_outputs_for_the_others():
    class ReferenceIsGood(ScaleSuite):
        reference_variant = "good"

        def reference(self, computes, point, inputs):
            raise AssertionError("the reference variant's outputs are the reference")

    results, _ = run_suite(ReferenceIsGood(), ["good", "fast", "wrong"])
    assert list(results["good"].phases["variant"]) == [
        "prepare",
        "checked_run",
        "downloads",
        "audit",
        "timing",
        "inputs_check",
        "recheck",
    ]
    assert results["fast"].status is Status.OK and results["fast"].verification.passed
    assert results["good"].verification.message == (
        "the reference: the other variants are checked against its outputs"
    )
    assert results["wrong"].status is Status.INCORRECT


def test_an_upload_that_fails_frees_its_buffer_and_skips_cleanly(monkeypatch):
    from gpubench.errors import OutOfMemory
    from tests import fakes

    def refuse(self, buffer, spec, host):
        raise OutOfMemory("cannot stage 4000 bytes through pinned memory")

    monkeypatch.setattr(fakes.FakeBackend, "write", refuse)
    results, backend = run(["good"])
    assert results["good"].status is Status.SKIPPED
    assert results["good"].reason == "out of memory: cannot stage 4000 bytes through pinned memory"
    assert backend.live_buffers == 0


def test_a_suite_without_kernels_runs_its_copies_without_a_module():
    from gpubench.load import registry

    bench = registry.get("transfer")
    point = bench.resolve({**bench.defaults(), "bytes": 4096})
    variants = tuple(v.name for v in bench.variants)
    backend = FakeBackend()
    bound = []
    bind = backend.bind
    backend.bind = lambda module, steps, buffers, specs: (
        bound.append({name: b.location for name, b in buffers.items()})
        or bind(module, steps, buffers, specs)
    )
    results = Runner(backend).run(Plan(bench, [point], variants, variants[0], QUICK))
    assert [r.status for r in results] == [Status.OK] * len(variants)
    where = {v: (b["src"], b["dst"]) for v, b in zip(variants, bound, strict=True)}
    for variant, (src, dst) in where.items():  # each source where its copy wants it
        direction, _, host = variant.partition("_")
        assert (src, dst) == (
            (host, "device")
            if direction == "h2d"
            else ("device", host)
            if direction == "d2h"
            else ("device", "device")
        )


def test_a_run_that_converges_when_checked_but_not_after_timing_is_incorrect_and_says_why():
    from tests.fakes import CountDownSuite

    results, _ = run_suite(CountDownSuite(), ["restless"], point={"max_iterations": 30})
    r = results["restless"]
    assert r.status is Status.INCORRECT and r.verification.passed  # right, but not converged
    runs = r.reason.removeprefix("right on the checked run, wrong on a run after ").split()[0]
    assert r.reason == (
        f"right on the checked run, wrong on a run after {runs} timed runs (on "
        "fresh inputs in the same buffers, outputs left as the previous run "
        "wrote them): did not converge"
    )


def test_a_launch_refused_before_the_checked_run_is_a_failed_launch_without_a_prefix(monkeypatch):
    from gpubench.errors import KernelLaunchError
    from tests import fakes

    def refuse(self, *args):
        raise KernelLaunchError("cannot capture the run as a graph")

    monkeypatch.setattr(fakes.FakeBackend, "bind", refuse)
    results, _ = run(["good"])
    assert results["good"].status is Status.LAUNCH_FAILED
    assert results["good"].reason == "cannot capture the run as a graph"


def test_a_tolerance_made_from_the_run_sees_the_checked_run_and_the_run_after_timing():
    from gpubench.model.benchmark import Tolerance
    from tests.fakes import CountDownSuite

    seen = []

    class Judged(CountDownSuite):
        def case(self, variant, point, device, inputs):
            case = super().case(variant, point, device, inputs)
            case.tolerance = lambda record: seen.append(record.iterations) or Tolerance(atol=0)
            return case

    results, _ = run_suite(Judged(), ["converges"], {"n": 50, "top": 7})
    assert results["converges"].status is Status.OK
    # 7 steps down and one that changes nothing: checked, audited once while timed, and
    # re-checked on both input sets (the second set counts from the same top).
    assert seen == [8, 8, 8, 8]


def test_the_host_need_of_each_variant_counts_its_host_buffers_downloads_and_a_new_reference(
    monkeypatch,
):
    """Recorded at the preflight: pinned scratch, the outputs' downloads, and the float64
    reference only for the first variant of what it computes (the second finds it made)."""
    from gpubench.engine import memory
    from gpubench.model.benchmark import BufferSpec
    from tests.fakes import FAKE_DEVICE

    needs = []
    real = memory.shortfall
    monkeypatch.setattr(
        memory, "shortfall", lambda need, d, h: needs.append(need) or real(need, d, h)
    )

    class Staged(ScaleSuite):
        def case(self, variant, point, device, inputs):
            case = super().case(variant, point, device, inputs)
            case.scratch["staging"] = BufferSpec(
                (point["n"],), np.dtype(np.float32), location="pinned"
            )
            return case

    n = 1000
    results, _ = run_suite(Staged(), ["good", "fast"], {"n": n})
    assert [r.status for r in results.values()] == [Status.OK, Status.OK]
    variant_needs = [
        (need.device, need.host) for need in needs if need.what == "this variant's buffers"
    ]
    l2 = FAKE_DEVICE.l2_bytes  # the flush buffer: the scale suite is memory-bound
    # Device: the input x (placed once, for the first), the output and the flush buffer.
    # Host: the pinned staging, the download, and the float64 references of both input sets.
    assert variant_needs == [
        (4 * n + 4 * n + l2, 4 * n + 4 * n + 2 * 8 * n),
        (4 * n + l2, 4 * n + 4 * n),
    ]


def test_the_recorded_seed_makes_the_same_inputs_again(monkeypatch):
    from gpubench.engine.randoms import ParallelRandom
    from tests import fakes

    made = []
    original = fakes.ScaleSuite.inputs
    monkeypatch.setattr(fakes.ScaleSuite, "inputs",
                        lambda self, point, rng: made.append(original(self, point, rng)) or made[-1])  # fmt: skip
    results, _ = run(["good"])
    again = original(ScaleSuite(), {"n": 1000}, ParallelRandom(results["good"].seed))
    assert np.array_equal(made[0]["x"], again["x"])


def test_speedup_and_percent_of_the_vendor_skip_what_failed_and_reach_every_other():
    from gpubench.engine.runner import add_relative_metrics
    from gpubench.model.results import Result

    def made(variant, ms, status=Status.OK):
        return Result("s", variant, {"n": 1}, status, summary={"median_ms": ms})

    results = [made("broken", None, Status.INCORRECT), made("base", 4.0), made("fast", 1.0),
               made("vendor", 2.0)]  # fmt: skip
    add_relative_metrics(results, "base", "vendor")
    assert [r.metrics.get("speedup") for r in results] == [None, 1.0, 4.0, 2.0]
    assert [r.metrics.get("pct_of_vendor") for r in results] == [None, 50.0, 200.0, 100.0]


def test_a_plan_travels_as_settings_and_comes_back_the_same():
    from gpubench.engine.runner import PlanSettings

    bench = ScaleSuite()
    points = [bench.resolve(bench.defaults())]
    plan = Plan(bench, points, ("good", "fast"), "fast", QUICK, timeline=True)
    assert plan.settings == PlanSettings(("good", "fast"), "fast", QUICK, True)
    assert plan.settings.plan(bench, points) == plan
    tuning = Plan(bench, points, ("good",), "good", QUICK, give_up_above_ms=2.5, tuned=("tag",))
    assert tuning.settings.plan(bench, points) == tuning
    assert tuning.settings.tuned == ("tag",) and tuning.settings.give_up_above_ms == 2.5


def test_a_resumed_point_s_fresh_results_are_compared_with_the_baseline_from_the_log():
    from gpubench.engine.runner import Notifier
    from gpubench.model.results import Result, point_key

    bench = ScaleSuite()
    point = bench.resolve(bench.defaults())
    plan = Plan(bench, [point], ("good", "fast"), "good", QUICK)
    logged = Result("scale", "good", dict(point), Status.OK, summary={"median_ms": 3.0})
    seen = []

    class Seen:
        def started(self, total): ...

        def finished(self, result): ...

        def point_finished(self, results):
            seen.append([r.variant for r in results])

    notify = Notifier([Seen()], plan, {(point_key(point), "good"): logged})
    fresh = Result("scale", "fast", dict(point), Status.OK, summary={"median_ms": 1.5})
    notify.point_done(point, ["fast"], {"fast": fresh})
    assert fresh.metrics["speedup"] == 2.0 and seen == [["fast"]]


def test_a_point_whose_inputs_the_host_cannot_hold_is_skipped_before_they_are_made(monkeypatch):
    from gpubench.engine import memory
    from tests import fakes

    made = []
    monkeypatch.setattr(fakes.ScaleSuite, "inputs", lambda self, p, rng: made.append(p) or {})
    monkeypatch.setattr(memory, "host_available_bytes", lambda: 40 * 2**20)
    results, _ = run(["good"], point={"n": 10**7})
    assert results["good"].status is Status.SKIPPED and made == []
    assert results["good"].reason == ("needs 38.1 MiB of host memory for the inputs; 40.0 MiB "
                                      "is available")  # fmt: skip


def test_each_result_is_a_percentage_of_the_suite_s_vendor_reference(monkeypatch):
    monkeypatch.setattr(ScaleSuite, "vendor_reference", "good")
    results, _ = run(["good", "fast"])
    assert results["fast"].metrics["pct_of_vendor"] == pytest.approx(200.0)
    assert results["good"].metrics["pct_of_vendor"] == pytest.approx(100.0)


def test_compiler_excerpt_keeps_twelve_lines_unless_told():
    from gpubench.engine.runner import _compiler_excerpt

    output = "\n".join(f"k.cu({n}): error: e{n}" for n in range(20))
    assert _compiler_excerpt(output).splitlines() == output.splitlines()[:12]


def test_every_repeat_that_did_not_converge_is_named_in_the_reason():
    from dataclasses import replace

    from tests.fakes import CountDownSuite

    class TwoLoops(CountDownSuite):
        def case(self, variant, point, device, inputs):
            case = super().case(variant, point, device, inputs)
            (loop,) = case.steps
            case.steps = [replace(loop, label="relax"), loop]  # the second keeps no label
            return case

    results, _ = run_suite(TwoLoops(), ["never_done"], {"max_iterations": 5})
    assert results["never_done"].reason == (
        "did not converge: relax, repeat on 'changed' still changing after 10 iterations "
        "(max_iterations)")  # fmt: skip


def test_the_seed_of_a_point_s_inputs_fits_a_signed_64_bit_integer(monkeypatch):
    """63 random bits: a seed of 2^63 or more would overflow SQLite's INTEGER in the history
    store and int64 readers of the results file."""
    from gpubench.engine import runner

    asked = []
    monkeypatch.setattr(runner.secrets, "randbits", lambda bits: asked.append(bits) or 2**63 - 1)
    results, _ = run(["good"])
    assert asked[0] == 63 and results["good"].status is Status.OK  # the first: the point's seed


def test_a_finished_point_gets_the_relative_metrics_then_the_suite_s_own():
    from types import SimpleNamespace

    from gpubench.engine.runner import finish_point
    from gpubench.model.results import Result

    seen = []

    def point_metrics(results):
        seen.append([r.metrics.get("speedup") for r in results])

    bench = SimpleNamespace(vendor_reference=None, point_metrics=point_metrics)
    results = [Result("s", v, {"n": 1}, Status.OK, summary={"median_ms": ms})
               for v, ms in (("base", 2.0), ("fast", 1.0))]  # fmt: skip
    finish_point(SimpleNamespace(baseline="base", bench=bench), results)
    assert seen == [[1.0, 2.0]]


def test_a_failed_result_with_a_time_or_a_measured_one_without_is_not_ranked():
    from gpubench.engine.runner import add_relative_metrics
    from gpubench.model.results import Result

    results = [Result("s", "base", {}, Status.OK, summary={"median_ms": 2.0}),
               Result("s", "wrong", {}, Status.INCORRECT, summary={"median_ms": 1.0}),
               Result("s", "empty", {}, Status.OK, summary={"median_ms": 0.0})]  # fmt: skip
    add_relative_metrics(results, "base", None)
    assert [r.metrics for r in results] == [{"speedup": 1.0}, {}, {}]


def _configurations(bench_class, variants, untrusted=False, sizes=(1000,), blocks=(128, 256, 512)):
    """Every variant at each size, at three configurations of it (a compile-time block the
    reference does not read); the inputs and references the suite made, counted."""
    from gpubench.model.benchmark import Param

    class Tuned(bench_class):
        params = (
            *bench_class.params,
            Param("block", int, 128, "threads", choices=(128, 256, 512), compile_time=True),
        )
        reference_params = frozenset()
        input_params = frozenset({"n"})
        # Shared by the suite's instances (a fresh class per call): what it made, counted.
        made: ClassVar[list[int]] = []
        referenced: ClassVar[list[int]] = []

        def inputs(self, point, rng):
            self.made.append(point["n"])
            return super().inputs(point, rng)

        def reference(self, computes, point, inputs):
            self.referenced.append(point["n"])
            return super().reference(computes, point, inputs)

    bench = Tuned()
    points = [
        bench.resolve({**bench.defaults(), "n": n, "block": block})
        for n in sizes
        for block in blocks
    ]
    policy = dataclasses.replace(QUICK, untrusted=untrusted)
    results = Runner(FakeBackend()).run(Plan(bench, points, tuple(variants), variants[0], policy))
    return bench, results


def test_configurations_of_one_problem_share_its_inputs_and_references():
    bench, results = _configurations(ScaleSuite, ["good", "wrong"], sizes=(1000, 77))
    assert bench.made == [1000, 77]  # one first set per problem (near copies need no inputs)
    assert bench.referenced == [1000, 1000, 77, 77]  # both sets' answers, once per problem
    by_size = {}
    for r in results:
        by_size.setdefault(r.point["n"], set()).add(r.seed)
        expected = Status.OK if r.variant == "good" else Status.INCORRECT
        assert r.status is expected, (r.point, r.variant, r.reason)
    assert all(len(seeds) == 1 for seeds in by_size.values())  # the problem's seed
    assert by_size[1000] != by_size[77]
    first, shared = (
        r
        for r in results
        if r.variant == "good" and r.point["n"] == 1000 and r.point["block"] in (128, 256)
    )
    assert "inputs" in first.phases["point"] and "inputs" not in shared.phases["point"]


def test_every_cheat_is_flagged_at_every_configuration_of_a_shared_problem():
    from tests.fakes import CHEATS, CheatingScaleSuite

    _, results = _configurations(CheatingScaleSuite, ["good", *CHEATS], sizes=(1000, 10**6))
    for r in results:
        if r.variant == "good" or (r.variant == "too_fast" and r.point["n"] < 10**6):
            assert r.status is Status.OK, (r.point, r.variant, r.reason)
            continue
        if r.variant == "leaves_a_thread" and (r.point["n"], r.point["block"]) != (1000, 128):
            continue  # its one thread is flagged where it was started, the first point
        assert r.status in (Status.INCORRECT, Status.IMPLAUSIBLE), (r.point, r.variant)
        # The stand-in's cheats keep their memos across configurations (on a GPU each
        # configuration is a module of its own): after the first, any check may be the one.
        if r.point["block"] == 128:
            assert any(w in r.reason for w in CHEATS[r.variant]), (r.point, r.variant, r.reason)


def test_untrusted_mode_makes_fresh_inputs_for_every_configuration():
    bench, results = _configurations(ScaleSuite, ["good"], untrusted=True)
    assert bench.made.count(1000) >= 3
    assert len({r.seed for r in results}) == 3


def test_configurations_whose_inputs_read_them_get_inputs_of_their_own():
    # The inputs read the block (say, values up to it): each configuration is its own problem
    # for the inputs, though the reference reads no block.
    class ReadsBlock(ScaleSuite):
        def inputs(self, point, rng):
            made = super().inputs(point, rng)
            return {"x": made["x"] * point.get("block", 1)}

    class Declared(ReadsBlock):
        pass

    from gpubench.model.benchmark import Param

    Declared.params = (
        *ScaleSuite.params,
        Param("block", int, 128, "threads", choices=(128, 256), compile_time=True),
    )
    Declared.reference_params = frozenset()
    Declared.input_params = frozenset({"n", "block"})
    bench = Declared()
    points = [bench.resolve({**bench.defaults(), "block": b}) for b in (128, 256)]
    seen = []
    original = Runner.run_point

    def spy(self, plan, point, variants, **kwargs):
        results = original(self, plan, point, variants, **kwargs)
        seen.append((point["block"], float(self._last.inputs["x"].max())))
        return results

    runner = Runner(FakeBackend())
    runner.run_point = spy.__get__(runner)
    results = runner.run(Plan(bench, points, ("good",), "good", QUICK))
    assert [r.status for r in results] == [Status.OK, Status.OK]
    assert seen[0][1] > 128 and seen[1][1] > 256  # x in [1, 2) times the point's own block
    assert results[0].seed != results[1].seed


def test_host_work_for_a_later_configuration_is_in_its_own_phases():
    # The first configuration stops at its first check (wrong), so the second set's
    # reference and uploads are made for the second configuration: they are its phases.
    from gpubench.model.benchmark import Param

    class Tuned(ScaleSuite):
        params = (
            *ScaleSuite.params,
            Param("block", int, 128, "threads", choices=(128, 256), compile_time=True),
        )
        reference_params = frozenset()
        input_params = frozenset({"n"})

        def case(self, variant, point, device, inputs):
            chosen = "wrong" if point["block"] == 128 else "good"
            return super().case(chosen, point, device, inputs)

    bench = Tuned()
    points = [bench.resolve({**bench.defaults(), "block": b}) for b in (128, 256)]
    first, second = Runner(FakeBackend()).run(Plan(bench, points, ("good",), "good", QUICK))
    assert (first.status, second.status) == (Status.INCORRECT, Status.OK)
    assert "inputs" in first.phases["point"] and "inputs" not in second.phases["point"]
    assert {"reference", "uploads", "fresh_inputs"} <= set(second.phases["point"])


def test_each_result_carries_its_span_the_variants_one_after_another(monkeypatch):
    import time

    from gpubench.model.phases import SPAN

    ticks = iter(float(t) for t in range(100, 200))
    monkeypatch.setattr(time, "time", lambda: next(ticks))
    results, _ = run(["good", "fast"])
    good, fast = results["good"].phases[SPAN], results["fast"].phases[SPAN]
    assert good == {"point_start": 100.0, "start": 100.0, "end": 101.0}
    assert fast == {"point_start": 100.0, "start": 101.0, "end": 102.0}


def test_a_tuned_run_time_parameter_shares_the_problem_even_where_specs_are_unknown():
    """`tune: configuration: [tag]` on a suite that cannot declare its arrays before making
    them (sssp: a graph's size): configurations that differ in the tag share the problem's
    inputs and seed; without the name each point makes its own."""

    class Unsized(ScaleSuite):
        reference_params = frozenset()
        input_params = frozenset({"n"})
        # The seed of every set made: first sets, and the rare fresh set a near copy asks for
        # where a value it draws equals the one it replaces (input_sets.near_copy).
        made: ClassVar[list[int]] = []

        def input_specs(self, point):
            return None

        def inputs(self, point, rng):
            self.made.append(rng.seed)
            return super().inputs(point, rng)

    def first_sets(results):
        return [seed for seed in Unsized.made if seed in {r.seed for r in results}]

    bench = Unsized()
    points = [bench.resolve({**bench.defaults(), "tag": tag}) for tag in ("a", "b", "c")]
    tuned = Plan(bench, points, ("good",), "good", QUICK, tuned=("tag",))
    results = Runner(FakeBackend()).run(tuned)
    assert [r.status for r in results] == [Status.OK] * 3
    assert len({r.seed for r in results}) == 1 and len(first_sets(results)) == 1
    Unsized.made.clear()
    results = Runner(FakeBackend()).run(Plan(bench, points, ("good",), "good", QUICK))
    assert len({r.seed for r in results}) == 3 and len(first_sets(results)) == 3


# -- one seed per problem per run: the same data on every GPU ------------------------------
def _tunable_plan(points, **settings):
    from gpubench.engine.input_sets import by_problem

    bench = _suite("tunable")
    points = by_problem(bench, [bench.resolve({**bench.defaults(), **p}) for p in points])
    return Plan(bench, points, ("scale",), "scale", QUICK, **settings)


def test_two_workers_of_a_run_draw_a_problem_s_inputs_from_one_seed():
    configurations = [{"n": 64, "block": 128}, {"n": 64, "block": 256}, {"n": 96, "block": 128}]
    plan = _tunable_plan(configurations, run_seed=7)
    # Each "GPU" runs the whole plan in a worker of its own.
    first = Runner(FakeBackend()).run(plan)
    second = Runner(FakeBackend()).run(plan)
    assert all(r.status is Status.OK for r in first + second), [r.reason for r in first]
    seeds = [r.seed for r in first]
    assert seeds == [r.seed for r in second]
    assert seeds[1] == seeds[2] != seeds[0]  # n=96 comes first: the biggest problem first
    assert [r.point["n"] for r in first] == [96, 64, 64]


def test_without_a_run_seed_or_in_untrusted_mode_each_worker_draws_its_own():
    configurations = [{"n": 64, "block": 128}, {"n": 64, "block": 256}]
    plain = _tunable_plan(configurations)
    assert Runner(FakeBackend()).run(plain)[0].seed != Runner(FakeBackend()).run(plain)[0].seed
    untrusted = _tunable_plan(configurations, run_seed=7)
    untrusted = dataclasses.replace(untrusted, policy=dataclasses.replace(QUICK, untrusted=True))
    first, second = Runner(FakeBackend()).run(untrusted), Runner(FakeBackend()).run(untrusted)
    assert first[0].seed != second[0].seed
    assert first[0].seed != first[1].seed  # untrusted: fresh data for every point


def test_a_plan_s_run_seed_travels_to_its_workers():
    plan = _tunable_plan([{"n": 64}], run_seed=99)
    assert plan.settings.run_seed == 99
    assert plan.settings.plan(plan.bench, plan.points).run_seed == 99


def test_a_plan_of_another_run_seed_does_not_take_the_last_point_s_data():
    # The same problem, measured again under another run seed (tune's confirmation): new data.
    backend = FakeBackend()
    runner = Runner(backend)
    first = runner.run_point(
        _tunable_plan([{"n": 64}], run_seed=7), _tunable_plan([{"n": 64}]).points[0], ("scale",)
    )
    same = runner.run_point(
        _tunable_plan([{"n": 64}], run_seed=7),
        _tunable_plan([{"n": 64, "block": 256}]).points[0],
        ("scale",),
    )
    other = runner.run_point(
        _tunable_plan([{"n": 64}], run_seed=8),
        _tunable_plan([{"n": 64, "block": 256}]).points[0],
        ("scale",),
    )
    runner.close()
    assert first[0].seed == same[0].seed  # the run's problem: its data shared
    assert other[0].seed != first[0].seed and other[0].status is Status.OK


def test_a_point_handed_the_earlier_set_of_its_own_problem_draws_a_seed_of_its_own():
    from types import SimpleNamespace

    from gpubench.engine.input_sets import problem_seed
    from gpubench.engine.runner import _first_set_seed

    plan = _tunable_plan([{"n": 64}, {"n": 64, "block": 256}], run_seed=7)
    point, sibling = plan.points
    seed = problem_seed(plan.bench, point, (), 7)
    assert _first_set_seed(plan, point, None) == seed
    assert _first_set_seed(plan, point, SimpleNamespace(point={**point, "n": 96})) == seed
    # The earlier set becomes this point's second: its first must differ from it.
    assert _first_set_seed(plan, point, SimpleNamespace(point=sibling)) != seed
