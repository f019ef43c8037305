"""NVML readings (UUID, driver, clocks, temperature, power) for one GPU; all optional."""

from __future__ import annotations

from typing import Any


def handle_for(bus_id: str) -> Any:
    """NVML's handle for this GPU (initialised once per process), or None without NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return pynvml.nvmlDeviceGetHandleByPciBusId(bus_id)
        except pynvml.NVMLError:
            return pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception:  # NVML missing or unusable: clocks simply go unread
        return None


def readings(handle: Any) -> dict[str, Any]:
    """UUID, driver version, clocks, temperature and power through NVML; {} if unavailable."""
    if handle is None:
        return {}
    import pynvml

    readings: dict[str, Any] = {}
    for key, read in (
        ("uuid", lambda: pynvml.nvmlDeviceGetUUID(handle)),
        ("driver", pynvml.nvmlSystemGetDriverVersion),
        ("sm_clock_mhz", lambda: pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)),
        (
            "max_sm_clock_mhz",
            lambda: pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM),
        ),
        (
            "max_mem_clock_mhz",
            lambda: pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM),
        ),
        (
            "temperature_c",
            lambda: pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
        ),
        ("power_w", lambda: pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0),
    ):
        try:
            value = read()
            readings[key] = value.decode() if isinstance(value, bytes) else value
        except pynvml.NVMLError:
            pass
    return readings


def sm_clock(handle: Any) -> float | None:
    import pynvml

    try:
        return float(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
    except pynvml.NVMLError:
        return None
