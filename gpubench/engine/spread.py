"""Where a sweep's points run: one GPU, several of this host, or a Dask cluster; which shard
of them; on which backend. `Spread.runner` makes the runner for it."""

from __future__ import annotations

from dataclasses import dataclass

from gpubench.engine.runner import SweepRunner
from gpubench.engine.worker import IsolatedRunner, WorkerSpec


@dataclass(frozen=True)
class Spread:
    """Where the points run: one GPU (`device`), several of this host (`devices`: indices or
    "all"), a Dask cluster (`scheduler` address); which of them (`shard`: I of N); and on
    which backend (`backend`, --backend; None: GPUBENCH_BACKEND or the default)."""

    device: int = 0
    devices: list[int] | str | None = None
    scheduler: str | None = None
    shard: tuple[int, int] | None = None
    backend: str | None = None

    def runner(self, suite: str, backend: str) -> SweepRunner:
        if self.scheduler:
            from gpubench.engine.cluster import DaskRunner

            return DaskRunner(self.scheduler, suite, backend)
        if self.devices == "all" or (self.devices and len(self.devices) > 1):
            from gpubench.engine.pool import DevicePool

            return DevicePool(suite, self.devices, backend)
        return IsolatedRunner(WorkerSpec(suite, self.first_device, backend))

    @property
    def first_device(self) -> int:
        """The GPU of a run on one device, and the one a single-device step (profiling) of a
        run on several uses."""
        return self.devices[0] if isinstance(self.devices, list) and self.devices else self.device
