"""NVML readings (UUID, driver, clocks, temperature, power) for one GPU; all optional."""

from __future__ import annotations

from typing import Any


def handle_for(bus_id: str) -> Any:
    """NVML's handle for this GPU (initialised once per process), or None without NVML. Where
    NVML does not know the bus id, the host's only GPU; with several, none: another GPU's
    clock, power or energy would be read as this one's."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return pynvml.nvmlDeviceGetHandleByPciBusId(bus_id)
        except pynvml.NVMLError:
            if pynvml.nvmlDeviceGetCount() != 1:
                return None
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


def temperature(handle: Any) -> float | None:
    """The GPU's temperature now, in °C, or None where NVML cannot say."""
    import pynvml

    try:
        return float(pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU))
    except pynvml.NVMLError:
        return None


def sm_clock(handle: Any) -> float | None:
    import pynvml

    try:
        return float(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
    except pynvml.NVMLError:
        return None


# NVML's field for the instantaneous board power (mW), where the driver has it; older drivers
# give only nvmlDeviceGetPowerUsage, which on recent GPUs is a one-second average.
POWER_INSTANT_FIELD = 186
# Idle power is read over this long: at least three counter updates at 100 ms.
IDLE_WINDOW_S = 0.45
# Between reads where a read is fast: the counter moves every 100 ms, so reading it more
# often than every millisecond only spends a core.
READ_PAUSE_S = 0.001


class NvmlEnergyMeter:
    """NVML's total-energy counter (mJ since the driver loaded), the instantaneous power and
    the SM clock, read on a background thread from `start` to `stop`. Each NVML call leaves
    Python's lock while it waits on the driver, so the thread reads while the runs go on."""

    def __init__(self, handle: Any) -> None:
        import threading

        self._handle = handle
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._trace: Any = None
        self._idle: float | bool | None = False  # False: not measured yet

    @classmethod
    def open(cls, handle: Any) -> NvmlEnergyMeter | None:
        """A meter for this GPU, or None where NVML has no energy counter for it."""
        if handle is None:
            return None
        import pynvml

        try:
            pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        except pynvml.NVMLError:
            return None
        return cls(handle)

    def now(self) -> float:
        import time

        return time.perf_counter()

    def start(self) -> None:
        import threading

        from gpubench.model.energy import EnergyTrace

        self._trace = EnergyTrace()
        self._stop.clear()
        self._thread = threading.Thread(target=self._read, name="gpubench-energy", daemon=True)
        self._thread.start()

    def stop(self) -> Any:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        return self._trace

    def idle_watts(self) -> float | None:
        if self._idle is False:
            import time

            from gpubench.model.energy import idle_watts

            self.start()
            try:
                began = self.now()
                time.sleep(IDLE_WINDOW_S)
                ended = self.now()
            finally:
                trace = self.stop()  # an interrupt must not leave the thread reading
            self._idle = idle_watts(trace, began, ended)
        return self._idle  # type: ignore[return-value]

    def _read(self) -> None:
        """Until stopped: each change of the counter with the time it was seen (the middle of
        the read that saw it), the power and the SM clock beside it. The first value read is
        only the baseline: it was set at an update somewhere before the read, so as a tick it
        would credit up to a whole interval's energy to the part of it after the read
        (measured on the H200: readings 0-9% high, varying from run to run)."""
        import time

        import pynvml

        trace, handle = self._trace, self._handle
        last: float | None = None
        while not self._stop.is_set():
            before = time.perf_counter()
            try:
                counter = float(pynvml.nvmlDeviceGetTotalEnergyConsumption(handle))
            except pynvml.NVMLError as exc:
                trace.failed = f"the energy counter stopped answering during the window ({exc})"
                return
            seen = (before + time.perf_counter()) / 2
            if last is not None and counter != last:
                trace.ticks.append((seen, counter))
            last = counter
            watts = _instant_watts(handle)
            if watts is not None:
                trace.power.append((seen, watts))
            clock = sm_clock(handle)
            if clock is not None:
                trace.clocks_mhz.append(clock)
            celsius = temperature(handle)
            if celsius is not None:
                trace.temperatures_c.append(celsius)
            if time.perf_counter() - before < READ_PAUSE_S:
                time.sleep(READ_PAUSE_S)


def _instant_watts(handle: Any) -> float | None:
    """The board's power now in W: the instantaneous field where the driver has it, else
    nvmlDeviceGetPowerUsage."""
    import pynvml

    try:
        (value,) = pynvml.nvmlDeviceGetFieldValues(handle, [POWER_INSTANT_FIELD])
        if value.nvmlReturn == 0:
            return value.value.uiVal / 1000.0
    except (pynvml.NVMLError, AttributeError, TypeError, ValueError):
        pass
    try:
        return pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0
    except pynvml.NVMLError:
        return None
