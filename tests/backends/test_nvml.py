"""The NVML readings against a stand-in for pynvml: which GPU's handle, every reading under
its name, and a reading NVML cannot give left out rather than failing the rest."""

from __future__ import annotations

import sys
import types
from itertools import pairwise

import pytest

from gpubench.backends import nvml


class NVMLError(Exception):
    pass


def _of(handle, value):
    if handle != "h":
        raise NVMLError(f"invalid handle {handle!r}")
    return value


@pytest.fixture
def fake_pynvml(monkeypatch):
    module = types.SimpleNamespace(
        NVMLError=NVMLError, NVML_CLOCK_SM=1, NVML_CLOCK_MEM=2, NVML_TEMPERATURE_GPU=0
    )  # fmt: skip
    module.nvmlInit = lambda: None
    module.nvmlDeviceGetHandleByPciBusId = lambda bus: f"handle of {bus}"
    module.nvmlDeviceGetHandleByIndex = lambda index: f"handle of GPU {index}"
    module.nvmlSystemGetDriverVersion = lambda: "580.1"
    # Each reading answers for the handle "h" only, and for the sensor or clock it names.
    module.nvmlDeviceGetUUID = lambda handle: _of(handle, b"GPU-1234")
    module.nvmlDeviceGetClockInfo = lambda handle, clock: _of(handle, {1: 1980, 2: 2619}[clock])
    module.nvmlDeviceGetMaxClockInfo = lambda handle, clock: _of(handle, {1: 1990, 2: 2629}[clock])
    module.nvmlDeviceGetTemperature = lambda handle, sensor: _of(handle, {0: 41}[sensor])
    module.nvmlDeviceGetPowerUsage = lambda handle: _of(handle, 123456)  # milliwatts
    monkeypatch.setitem(sys.modules, "pynvml", module)
    return module


def test_the_handle_is_the_gpu_on_the_bus_else_the_only_one(fake_pynvml):
    assert nvml.handle_for("0000:19:00.0") == "handle of 0000:19:00.0"

    def unknown_bus(bus):
        raise NVMLError("not found")

    fake_pynvml.nvmlDeviceGetHandleByPciBusId = unknown_bus
    fake_pynvml.nvmlDeviceGetCount = lambda: 1
    assert nvml.handle_for("0000:19:00.0") == "handle of GPU 0"
    # With several GPUs, GPU 0's readings (energy included) would be taken for this one's.
    fake_pynvml.nvmlDeviceGetCount = lambda: 2
    assert nvml.handle_for("0000:19:00.0") is None


def test_every_reading_under_its_name(fake_pynvml):
    assert nvml.readings("h") == {
        "uuid": "GPU-1234", "driver": "580.1", "sm_clock_mhz": 1980, "max_sm_clock_mhz": 1990,
        "max_mem_clock_mhz": 2629, "temperature_c": 41, "power_w": 123.456,
    }  # fmt: skip
    assert nvml.readings(None) == {}


def test_a_reading_nvml_cannot_give_is_left_out(fake_pynvml):
    def unsupported(*args):
        raise NVMLError("Not Supported")

    fake_pynvml.nvmlDeviceGetPowerUsage = unsupported
    assert "power_w" not in nvml.readings("h") and nvml.readings("h")["temperature_c"] == 41


def test_the_sm_clock_now_or_none(fake_pynvml):
    assert nvml.sm_clock("h") == 1980.0

    def unsupported(*args):
        raise NVMLError("Not Supported")

    fake_pynvml.nvmlDeviceGetClockInfo = unsupported
    assert nvml.sm_clock("h") is None


# -- the energy meter ----------------------------------------------------------------------
class _Value:
    def __init__(self, ret, milliwatts):
        self.nvmlReturn = ret
        self.value = types.SimpleNamespace(uiVal=milliwatts)


def test_a_meter_opens_only_where_the_counter_reads(fake_pynvml):
    fake_pynvml.nvmlDeviceGetTotalEnergyConsumption = lambda handle: _of(handle, 5)
    assert isinstance(nvml.NvmlEnergyMeter.open("h"), nvml.NvmlEnergyMeter)
    assert nvml.NvmlEnergyMeter.open("other") is None  # NVMLError: no counter
    assert nvml.NvmlEnergyMeter.open(None) is None


def test_the_instantaneous_power_field_else_the_power_usage(fake_pynvml):
    fake_pynvml.nvmlDeviceGetFieldValues = lambda handle, ids: [_Value(0, 412_500)]
    assert nvml._instant_watts("h") == 412.5
    fake_pynvml.nvmlDeviceGetFieldValues = lambda handle, ids: [_Value(3, 0)]  # not supported
    assert nvml._instant_watts("h") == 123.456
    del fake_pynvml.nvmlDeviceGetFieldValues  # an old pynvml
    assert nvml._instant_watts("h") == 123.456


def test_the_meter_records_each_change_of_the_counter_with_power_and_clock(fake_pynvml):
    # The counter steps by 40 J on every third read; the thread reads until stopped.
    reads = iter(range(10**6))
    fake_pynvml.nvmlDeviceGetTotalEnergyConsumption = lambda handle: 40_000 * (next(reads) // 3)
    fake_pynvml.nvmlDeviceGetFieldValues = lambda handle, ids: [_Value(0, 400_000)]
    meter = nvml.NvmlEnergyMeter("h")
    meter.start()
    import time

    time.sleep(0.05)
    trace = meter.stop()
    assert len(trace.ticks) >= 2
    assert trace.ticks[0][1] == 40_000.0  # the baseline (0) is no tick
    assert [b[1] - a[1] for a, b in pairwise(trace.ticks)] == [40_000.0] * (len(trace.ticks) - 1)
    assert all(b[0] > a[0] for a, b in pairwise(trace.ticks))
    assert {w for _, w in trace.power} == {400.0}
    assert set(trace.clocks_mhz) == {1980.0}
    assert set(trace.temperatures_c) == {41.0}


def test_a_counter_that_fails_mid_window_says_so_in_the_trace(fake_pynvml):
    import threading

    calls, failed = [], threading.Event()

    def counter(handle):
        calls.append(1)
        if len(calls) > 2:
            failed.set()
            raise NVMLError("GPU is lost")
        return 1000 * len(calls)

    fake_pynvml.nvmlDeviceGetTotalEnergyConsumption = counter
    fake_pynvml.nvmlDeviceGetFieldValues = lambda handle, ids: [_Value(0, 1_000)]
    meter = nvml.NvmlEnergyMeter("h")
    meter.start()
    assert failed.wait(5.0)  # the thread reached the failing read
    trace = meter.stop()
    # The first value is the baseline, not a change: the second is the one tick.
    assert [e for _, e in trace.ticks] == [2000.0]
    assert trace.failed == "the energy counter stopped answering during the window (GPU is lost)"
    from gpubench.model.energy import reading

    assert reading(trace, 0.0, 1e9, 1, 1.0, None) == trace.failed


@pytest.mark.gpu
def test_gpu_the_energy_counter_moves_and_idle_power_is_plausible(gpu_backend):
    meter = gpu_backend.energy_meter()
    assert meter is not None, "an H100/H200 with NVML has the total-energy counter"
    idle = meter.idle_watts()
    assert idle is not None and 10.0 < idle < 1000.0, idle
    meter.start()
    import time

    time.sleep(0.35)
    trace = meter.stop()
    steps = [b[0] - a[0] for a, b in pairwise(trace.ticks[1:])]
    assert steps and all(0.02 < s < 0.5 for s in steps), steps
    assert trace.power and trace.clocks_mhz
