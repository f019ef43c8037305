"""Which GPUs: the --devices list parsed, and the GPUs a worker could use counted without
starting CUDA. Light on purpose (no NumPy, no CUDA): the command line reads it before it
starts workers ahead of the sweep (gpubench.engine.ahead)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable


def parse_devices(text: str) -> list[int] | str:
    """`all`, or a comma-separated list of device indices; ValueError saying what is wrong."""
    from gpubench.errors import quote  # a 100,000-character --devices is shown short

    text = text.strip()
    if text == "all":
        return "all"
    try:
        devices = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(
            f"expected 'all' or device indices such as 0,1,3; got {quote(text)}"
        ) from None
    if not devices:
        raise ValueError("name at least one device")
    # CUDA's device ordinal is an int: past 2^31 - 1 no machine has it (as --device says).
    if any(not 0 <= d <= DEVICE_INDEX_MAX for d in devices):
        raise ValueError(f"device indices are from 0 to {DEVICE_INDEX_MAX}; got {quote(text)}")
    if len(set(devices)) != len(devices):
        raise ValueError(f"a device is named twice: {quote(text)}")
    return devices


DEVICE_INDEX_MAX = 2**31 - 1


def visible_devices() -> list[str] | None:
    """The GPUs CUDA may use here (CUDA_VISIBLE_DEVICES entries), None when it is unset."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return None
    return [entry.strip() for entry in visible.split(",") if entry.strip()]


def count_devices() -> int | None:
    """How many GPUs a worker could use, without starting CUDA (which would fix the device
    list for the life of the process): the CUDA_VISIBLE_DEVICES entries, else NVML's count."""
    visible = visible_devices()
    if visible is not None:
        return len(visible)
    return _nvml_count()


def count_devices_later(visible: list[str] | None) -> Callable[[], int | None]:
    """count_devices begun now, from `visible` (the CUDA_VISIBLE_DEVICES entries read before a
    pin changed them), else on a thread where NVML counts (NVML takes about 0.1 s to start,
    and ignores CUDA_VISIBLE_DEVICES): the function returned waits for its answer."""
    if visible is not None:
        return lambda: len(visible)
    answer: list[int | None] = []
    thread = threading.Thread(
        target=lambda: answer.append(_nvml_count()), daemon=True, name="gpubench-count-gpus"
    )
    thread.start()

    def wait() -> int | None:
        thread.join()
        return answer[0] if answer else None

    return wait


# What pin wrote last: (the device index, the CUDA_VISIBLE_DEVICES value it wrote).
_pinned: tuple[int, str] | None = None


def pin(device_index: int) -> None:
    """Leave this process only the GPU `device_index` names (CUDA_VISIBLE_DEVICES, before CUDA
    starts), so that libraries which pick "the current device" themselves (CuPy, cuBLAS) cannot
    land on another one; pinned to it already, nothing. ValueError where it is not visible."""
    global _pinned
    if _pinned == (device_index, os.environ.get("CUDA_VISIBLE_DEVICES")):
        return
    entries = visible_devices()
    if entries is not None and not 0 <= device_index < len(entries):
        raise ValueError(
            f"device {device_index} does not exist (CUDA_VISIBLE_DEVICES="
            f"{os.environ.get('CUDA_VISIBLE_DEVICES')!r} shows {len(entries)})"
        )
    value = entries[device_index] if entries is not None else str(device_index)
    os.environ["CUDA_VISIBLE_DEVICES"] = value
    _pinned = (device_index, value)


def _nvml_count() -> int | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        return int(pynvml.nvmlDeviceGetCount())
    except Exception:  # no NVML: the count is unknown
        return None
