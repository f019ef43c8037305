"""The NVML readings against a stand-in for pynvml: which GPU's handle, every reading under
its name, and a reading NVML cannot give left out rather than failing the rest."""

from __future__ import annotations

import sys
import types

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


def test_the_handle_is_the_gpu_on_the_bus_else_the_first(fake_pynvml):
    assert nvml.handle_for("0000:19:00.0") == "handle of 0000:19:00.0"

    def unknown_bus(bus):
        raise NVMLError("not found")

    fake_pynvml.nvmlDeviceGetHandleByPciBusId = unknown_bus
    assert nvml.handle_for("0000:19:00.0") == "handle of GPU 0"


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
