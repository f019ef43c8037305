"""Will a point fit? Device and host bytes a point and a variant need, against what is free.

Checked before anything is allocated, so that a size that cannot work is `skipped` with a
reason that names the need and what is free, instead of swapping, hanging or crashing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

# Leave room for the context, the library workspaces, fragmentation and NumPy temporaries.
DEVICE_HEADROOM_BYTES = 256 * 2**20
HOST_HEADROOM_FRACTION = 0.9


def human(nbytes: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= size:
            return f"{nbytes / size:,.1f} {unit}"
    return f"{nbytes} bytes"


def host_available_bytes() -> int | None:
    """Memory the host can still give without swapping (MemAvailable), or None if unknown."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


@dataclass(frozen=True)
class Need:
    """Bytes a step of the run needs, and what for (shown when it does not fit)."""

    device: int = 0
    host: int = 0
    what: str = ""


def shortfall(need: Need, device_free: int | None, host_free: int | None) -> str | None:
    """Why `need` does not fit (naming the need and what is free), or None."""
    if device_free is not None and need.device > max(0, device_free - DEVICE_HEADROOM_BYTES):
        return (
            f"needs {human(need.device)} of device memory for {need.what}; "
            f"{human(device_free)} is free"
        )
    if host_free is not None and need.host > host_free * HOST_HEADROOM_FRACTION:
        return (
            f"needs {human(need.host)} of host memory for {need.what}; "
            f"{human(host_free)} is available"
        )
    return None
