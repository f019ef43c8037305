"""gpubench.model.energy: a reading from a meter's trace, exactly."""

from __future__ import annotations

import math

import pytest

from gpubench.model.energy import (
    EnergyReading,
    EnergyTrace,
    energy_metrics,
    idle_watts,
    integrate,
    reading,
    whole_intervals,
)


def trace_at(watts_per_interval, period=0.1, start=0.05, power=True):
    """Ticks every `period` from `start`, the counter rising by each interval's watts."""
    ticks, samples, energy = [(start, 1000.0)], [(start, watts_per_interval[0])], 1000.0
    for i, watts in enumerate(watts_per_interval):
        energy += watts * period * 1000.0
        t = start + (i + 1) * period
        ticks.append((t, energy))
        if power:
            samples.append((t, watts_per_interval[min(i + 1, len(watts_per_interval) - 1)]))
    return EnergyTrace(
        ticks=ticks,
        power=samples if power else [],
        clocks_mhz=[1980.0, 1965.0, 1980.0],
        temperatures_c=[51.0, 52.0, 54.0, 52.0],
    )


def test_only_whole_intervals_inside_the_window_count():
    ticks = [(0.05, 0.0), (0.15, 10.0), (0.25, 20.0), (0.35, 30.0)]
    assert whole_intervals(ticks, 0.10, 0.30) == [(0.15, 10.0), (0.25, 20.0)]
    assert whole_intervals(ticks, 0.05, 0.35) == ticks


def test_a_reading_is_the_power_over_whole_intervals_times_the_window_over_its_runs():
    # Ticks at 0.05, 0.15, ... 1.05; the window from 0.0 to 1.1 holds all 11 (10 intervals),
    # at 400 W but one interval at 500 W: 410 W on average.
    watts = [400.0] * 9 + [500.0]
    got = reading(trace_at(watts), start=0.0, end=1.1, runs=2200, gpu_ms=1078.0, idle_watts=70.0)
    assert isinstance(got, EnergyReading)
    assert got.average_watts == pytest.approx(410.0, rel=1e-12)
    assert got.joules_per_run == pytest.approx(410.0 * 1.1 / 2200, rel=1e-12)
    assert got.above_idle_joules_per_run == pytest.approx(340.0 * 1.1 / 2200, rel=1e-12)
    assert got.idle_watts == 70.0
    assert got.intervals == 10
    assert got.counter_period_ms == pytest.approx(100.0)
    assert got.counter_joules == pytest.approx(410.0)
    assert got.sampled_joules == pytest.approx(410.0)  # each sample held until the next
    assert got.cross_check == pytest.approx(0.0, abs=1e-12)
    assert got.time_per_run_ms == pytest.approx(1078.0 / 2200)
    assert got.duty == pytest.approx(1.078 / 1.1)
    assert got.window_s == pytest.approx(1.1)
    assert got.runs == 2200
    assert got.sm_clock_mhz == 1980.0
    assert got.temperature_c == 52.0
    # 0.7413 * IQR / median over nine 400s and one 500: the quartiles are both 400.
    assert got.noise == pytest.approx(0.0, abs=1e-12)


def test_the_noise_is_the_spread_of_the_intervals_powers():
    watts = [400.0, 420.0, 380.0, 400.0, 440.0]
    got = reading(trace_at(watts), start=0.0, end=0.6, runs=10, gpu_ms=500.0, idle_watts=None)
    # quartiles (inclusive) of 380, 400, 400, 420, 440: 400 and 420; median 400.
    assert got.noise == pytest.approx(0.7413 * 20 / 400)
    assert got.idle_watts is None and got.above_idle_joules_per_run is None


def test_ticks_outside_the_window_are_left_out():
    # 0.05 .. 0.55 at 100 W, but the window starts at 0.1 and ends at 0.5: ticks 0.15 .. 0.45.
    got = reading(trace_at([100.0] * 5), start=0.1, end=0.5, runs=4, gpu_ms=400.0, idle_watts=None)
    assert got.intervals == 3
    assert got.counter_joules == pytest.approx(30.0)
    assert got.joules_per_run == pytest.approx(100.0 * 0.4 / 4)


def test_too_few_counter_changes_inside_the_window_is_a_reason_not_a_figure():
    got = reading(trace_at([100.0] * 5), start=0.1, end=0.3, runs=4, gpu_ms=200.0, idle_watts=None)
    assert got == (
        "the energy counter changed 2 time(s) inside the 0.20 s window: at least 3 are "
        "needed (lengthen timing.energy_window_s)"
    )


def test_a_window_without_runs_or_a_counter_going_back_has_no_reading():
    trace = trace_at([100.0] * 5)
    assert reading(trace, 0.0, 0.6, runs=0, gpu_ms=1.0, idle_watts=None) == "the window held no run"
    assert reading(trace, 0.0, 0.6, runs=1, gpu_ms=0.0, idle_watts=None) == "the window held no run"
    assert reading(trace, 0.6, 0.6, runs=1, gpu_ms=1.0, idle_watts=None) == "the window held no run"
    back = EnergyTrace(ticks=[(0.1, 50.0), (0.2, 60.0), (0.3, 40.0)])
    assert reading(back, 0.0, 0.4, 1, 1.0, None) == (
        "the energy counter went backwards inside the window"
    )


def test_without_power_samples_the_cross_check_is_unknown():
    got = reading(trace_at([100.0] * 5, power=False), 0.0, 0.6, 5, 500.0, None)
    assert got.sampled_joules is None and got.cross_check is None
    assert got.to_dict()["sampled_joules"] is None


def test_integrate_holds_each_sample_until_the_next():
    samples = [(0.0, 100.0), (0.5, 300.0), (1.0, 200.0)]
    assert integrate(samples, 0.25, 0.75) == pytest.approx(100.0 * 0.25 + 300.0 * 0.25)
    assert integrate(samples, 0.0, 2.0) == pytest.approx(50.0 + 150.0 + 200.0)
    assert integrate(samples, -1.0, 1.0) is None  # nothing known before the first sample


def test_idle_power_is_the_counter_over_whole_intervals():
    assert idle_watts(trace_at([70.0, 72.0, 74.0]), 0.0, 0.4) == pytest.approx(72.0)
    assert idle_watts(trace_at([70.0]), 0.1, 0.12) is None


def test_the_metrics_of_a_reading():
    values = energy_metrics(
        {"joules_per_run": 0.5, "average_watts": 400.0},
        {"bytes_moved": 2_000_000_000, "flops": 1_000_000_000, "elements": 7},
    )
    assert values == {"energy_mj": 500.0, "power_w": 400.0, "gflop_per_j": 2.0, "gb_per_j": 4.0}
    assert energy_metrics({"joules_per_run": 0.5, "average_watts": 1.0}, {"flops": 0}) == {
        "energy_mj": 500.0,
        "power_w": 1.0,
    }


def test_a_reading_writes_no_infinity():
    got = reading(trace_at([100.0, 100.0]), 0.0, 0.3, 2, 250.0, None)
    assert got.intervals == 2
    assert all(not (isinstance(v, float) and math.isinf(v)) for v in got.to_dict().values())
