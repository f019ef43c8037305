"""--energy on the CPU stand-in: the window of back-to-back runs, its reading, what it is
attached to and what it never costs when off (gpubench.engine.energy)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpubench.engine.energy import (
    CALL_MS,
    MAX_RUNS_PER_CALL,
    SETTLE_MS,
    measure_energy,
    runs_per_call,
)
from gpubench.engine.runner import Plan, Runner
from gpubench.model.results import Status
from tests.fakes import FakeBackend, FakeMeter, ScaleSuite
from tests.policies import QUICK

ENERGY = replace(QUICK, energy=True)


def run(variants, policy=ENERGY, backend=None):
    bench = ScaleSuite()
    backend = backend or FakeBackend()
    plan = Plan(bench, [bench.defaults()], tuple(variants), variants[0], policy)
    return {r.variant: r for r in Runner(backend).run(plan)}, backend


def test_runs_per_call_fill_about_fifty_milliseconds():
    assert CALL_MS == 50.0 and MAX_RUNS_PER_CALL == 4096 and SETTLE_MS == 250.0
    assert runs_per_call(1.0) == 50
    assert runs_per_call(0.3) == 167  # ceil(50 / 0.3)
    assert runs_per_call(50.0) == 1
    assert runs_per_call(120.0) == 1
    assert runs_per_call(0.001) == 4096
    assert runs_per_call(0.0) == 1 and runs_per_call(float("nan")) == 1


def test_a_verified_result_carries_its_energy_per_run_and_the_metrics():
    results, backend = run(["good"])
    r = results["good"]
    assert r.status is Status.OK
    e = r.energy
    # The stand-in's meter: 250 W while its runs go, 50 W idle, a counter step every 100 ms;
    # "good" takes 1 ms a run, so a call is 50 runs and the window 1 s of them.
    assert e["average_watts"] == pytest.approx(250.0, rel=1e-9)
    assert e["joules_per_run"] == pytest.approx(0.25, rel=1e-9)
    assert e["idle_watts"] == pytest.approx(50.0, rel=1e-9)
    assert e["above_idle_joules_per_run"] == pytest.approx(0.2, rel=1e-9)
    assert e["time_per_run_ms"] == pytest.approx(1.0)
    assert e["runs"] % 50 == 0 and e["runs"] >= 1000
    assert e["window_s"] == pytest.approx(e["runs"] / 1000.0)
    assert e["duty"] == pytest.approx(1.0)
    assert e["counter_period_ms"] == pytest.approx(100.0)
    assert e["intervals"] >= 9
    assert e["noise"] == pytest.approx(0.0, abs=1e-9)
    assert e["sampled_joules"] == pytest.approx(e["counter_joules"], rel=1e-9)
    assert e["sm_clock_mhz"] == 1000.0
    assert e["temperature_c"] == 45.0
    # The metrics, declared with the others: 8,000 bytes and 1,000 flops a run over 0.25 J.
    assert r.metrics["energy_mj"] == pytest.approx(250.0, rel=1e-9)
    assert r.metrics["power_w"] == pytest.approx(250.0, rel=1e-9)
    assert r.metrics["gb_per_j"] == pytest.approx(8000 / 0.25 / 1e9, rel=1e-9)
    assert r.metrics["gflop_per_j"] == pytest.approx(1000 / 0.25 / 1e9, rel=1e-9)
    assert r.joules_per_run == pytest.approx(0.25, rel=1e-9)
    # 250 ms unmetered first (the graph, the power settled: five calls), then 50 runs a call.
    assert set(backend.hot_calls) == {50}
    assert len(backend.hot_calls) == 5 + e["runs"] // 50
    assert r.phases["variant"]["energy"] >= 0
    assert r.to_dict()["energy"] == e


def test_idle_power_is_read_once_per_worker_before_its_first_point():
    backend = FakeBackend()
    run(["good"], backend=backend)
    run(["good", "fast"], backend=backend)
    assert backend.meter.idle_reads == 1


def test_without_energy_nothing_is_measured_and_nothing_written():
    results, backend = run(["good"], policy=QUICK)
    r = results["good"]
    assert r.energy is None and "energy" not in r.to_dict()
    assert "energy_mj" not in r.metrics and "energy" not in r.phases["variant"]
    assert backend.meter.idle_reads == 0 and backend.hot_calls == []


def test_failed_and_unchecked_variants_have_no_energy():
    results, _ = run(["good", "wrong", "crash"])
    assert results["good"].energy is not None
    assert results["wrong"].status is Status.INCORRECT and results["wrong"].energy is None
    assert results["crash"].energy is None


def test_a_kernel_right_only_on_its_first_launches_is_still_caught_with_energy_on():
    results, _ = run(["good", "first_launch_only", "writes_once"])
    for variant in ("first_launch_only", "writes_once"):
        assert results[variant].status is Status.INCORRECT, variant
        assert results[variant].energy is None


def test_a_gpu_without_a_counter_says_so_on_each_result(monkeypatch):
    monkeypatch.setattr(FakeBackend, "has_energy_counter", False)
    results, _ = run(["good"])
    assert results["good"].energy == {
        "missing": "this GPU has no energy counter gpubench can read (NVML)"
    }
    assert "energy_mj" not in results["good"].metrics


def test_a_window_too_short_for_the_counter_is_a_reason(monkeypatch):
    # A counter that moves every 2 s cannot be read over a 1 s window.
    backend = FakeBackend()
    backend.meter = FakeMeter(period_s=2.0)
    results, _ = run(["good"], backend=backend)
    assert results["good"].energy["missing"].startswith("the energy counter changed ")
    assert results["good"].status is Status.OK


def test_a_run_that_iterates_to_convergence_goes_one_run_per_call():
    from tests.fakes import CountDownSuite

    bench, backend = CountDownSuite(), FakeBackend()
    plan = Plan(bench, [bench.defaults()], ("converges",), "converges", ENERGY)
    (result,) = Runner(backend).run(plan)
    assert result.status is Status.OK, result.reason
    assert result.energy["runs"] >= 1 and set(backend.hot_calls) == {1}


def test_the_window_restores_in_out_buffers_before_every_call():
    calls = []

    class Backend:
        def time_hot_ms(self, bound, runs):
            calls.append(("runs", runs))
            meter.advance(runs * 0.01, 300.0)  # 10 ms a run
            return 10.0

    meter = FakeMeter()
    got = measure_energy(Backend(), meter, None, 10.0, 0.5, lambda: calls.append("restore"))
    # Five runs a call: 250 ms of them unmetered, then 0.5 s of them.
    assert calls == ["restore", ("runs", 5)] * (5 + 10)
    assert got.runs == 50 and got.joules_per_run == pytest.approx(3.0)
    assert got.idle_watts == pytest.approx(50.0)


@pytest.mark.gpu
def test_gpu_each_verified_transpose_carries_a_reading_its_counter_and_samples_agree_on(
    gpu_backend,
):
    from gpubench.load import registry

    bench = registry.get("transpose")
    point = bench.resolve({**bench.defaults(), "size": 4096})
    policy = replace(QUICK, min_samples=5, max_samples=20, energy=True, energy_window_s=0.6)
    plan = Plan(bench, [point], ("copy", "naive", "padded"), "copy", policy)
    results = Runner(gpu_backend).run(plan)
    for r in results:
        assert r.status.is_measured, (r.variant, r.reason)
        e = r.energy
        assert "missing" not in e, e
        assert 60.0 <= e["counter_period_ms"] <= 200.0, e
        assert e["intervals"] >= 3 and e["runs"] >= 1
        assert 0 < e["idle_watts"] < e["average_watts"] < 2000.0, e
        # The counter and the integral of the power samples over the same intervals.
        assert abs(e["sampled_joules"] / e["counter_joules"] - 1) < 0.10, e
        assert e["joules_per_run"] == pytest.approx(
            e["average_watts"] * e["window_s"] / e["runs"], rel=1e-9
        )
        assert r.metrics["energy_mj"] == pytest.approx(1000 * e["joules_per_run"], rel=1e-9)
        assert r.metrics["gb_per_j"] > 0
    naive, padded = results[1], results[2]
    assert naive.energy["joules_per_run"] > padded.energy["joules_per_run"]


# -- what the window's own time says, and results that cannot stand ------------------------
class _FastBackToBack(FakeBackend):
    """Timed one by one at 1 ms a run, but back to back `per_run_ms` a run: a kernel that does
    less work when launched back to back (its outputs already right, the inputs unchanged)."""

    per_run_ms = 0.1

    def time_hot_ms(self, bound, runs):
        self.hot_calls.append(runs)
        self._enqueue(bound)  # the outputs right, as such a kernel leaves them
        # The host's turn costs a millisecond a call whatever the events say.
        self.meter.advance(max(self.per_run_ms * runs / 1000.0, 0.001), 50.0)
        return self.per_run_ms


def test_a_kernel_faster_back_to_back_than_timed_gets_no_energy_figure():
    # Timed unflushed at 1 ms a run: neither a warm L2 nor the launch explains a tenth of it.
    unflushed = replace(ENERGY, flush_l2=False)
    results, _ = run(["good"], policy=unflushed, backend=_FastBackToBack())
    r = results["good"]
    assert r.status is Status.OK  # its timing stands: the timed runs were audited
    assert r.energy == {
        "missing": "back to back the runs took 0.1 ms each against a timed median of 1 ms: "
        "not the work that was timed, so no energy figure"
    }
    assert "energy_mj" not in r.metrics


def test_a_window_faster_than_the_hardware_makes_the_result_implausible():
    backend = _FastBackToBack()
    backend.per_run_ms = 1e-9  # 8,000 bytes in a femtosecond
    results, _ = run(["good"], backend=backend)
    r = results["good"]
    assert r.status is Status.IMPLAUSIBLE
    assert r.reason.startswith("faster than the hardware allows in the energy window: ")
    assert r.energy is None and "energy_mj" not in r.metrics


def test_a_timing_that_cannot_stand_gets_no_window():
    from tests.fakes import CheatingScaleSuite

    bench, backend = CheatingScaleSuite(), FakeBackend()
    plan = Plan(bench, [bench.defaults()], ("untimed",), "untimed", ENERGY)
    (r,) = Runner(backend).run(plan)
    assert r.status is Status.IMPLAUSIBLE and "below the launch floor" in r.reason
    assert r.energy is None and backend.hot_calls == []


def test_a_result_found_implausible_afterwards_loses_its_energy():
    from tests.fakes import CheatingScaleSuite

    bench, backend = CheatingScaleSuite(), FakeBackend()
    plan = Plan(bench, [bench.defaults()], ("good", "leaves_a_thread"), "good", ENERGY)
    good, cheat = Runner(backend).run(plan)
    assert good.energy["joules_per_run"] == pytest.approx(0.25, rel=1e-9)
    assert cheat.status is Status.IMPLAUSIBLE and "left host threads running" in cheat.reason
    assert cheat.energy is None
    assert not {"energy_mj", "power_w", "gb_per_j", "gflop_per_j"} & set(cheat.metrics)


def test_settling_ends_on_the_meter_s_clock_whatever_the_events_say():
    calls = []

    class Backend:
        def time_hot_ms(self, bound, runs):
            calls.append(runs)
            meter.advance(0.1, 300.0)  # 100 ms a call on the clock, 0 ms by the events
            return 0.0

    meter = FakeMeter()
    got = measure_energy(Backend(), meter, None, 10.0, 0.5, lambda: None)
    # Settling stops after 2 s of the meter's clock (20 calls), the window after 0.5 s (5).
    assert len(calls) == 20 + 5
    assert got == "the window held no run"  # no GPU time in it: no reading


def test_the_window_is_held_to_the_timed_median_only_where_l2_and_launch_cannot_explain_it():
    from types import SimpleNamespace

    from gpubench.engine.energy import WINDOW_JUDGED_L2S, WINDOW_JUDGED_MS, judged

    assert (WINDOW_JUDGED_L2S, WINDOW_JUDGED_MS) == (4, 0.05)
    device = SimpleNamespace(l2_bytes=50 * 2**20)
    big, small = SimpleNamespace(bytes_moved=200 * 2**20), SimpleNamespace(bytes_moved=2**20)
    assert judged(0.001, big, device, flushed=True)  # four L2s of bytes: a warm L2 saves little
    assert not judged(0.001, SimpleNamespace(bytes_moved=200 * 2**20 - 1), device, True)
    assert not judged(10.0, small, device, flushed=True)  # flushed, fits: warm L2 may explain
    assert judged(0.05, small, device, flushed=False)  # unflushed and long enough
    assert not judged(0.049, small, device, flushed=False)  # the launch may explain it
    assert not judged(10.0, SimpleNamespace(), SimpleNamespace(), flushed=True)
