"""The host's CPUs this process may use."""

from __future__ import annotations

import os


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity where the OS says (a SLURM job, a
    container or `taskset` may give it fewer than the machine has), else the machine's count.
    Compiles, BLAS references and random fills sized to the machine's count oversubscribe a
    process held to a share of it: on a 64-core host held to 16, 32 compiles ran at once."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity on this OS
        return max(1, os.cpu_count() or 1)
