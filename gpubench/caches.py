"""Where gpubench keeps what it can make again (compiled binaries, measured ceilings, parsed
road graphs): one root, chosen by the environment."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """Where gpubench keeps what it can make again: binaries, ceilings, parsed graphs."""
    return Path(
        os.environ.get("GPUBENCH_CACHE_DIR")
        or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gpubench"
        )
    )
