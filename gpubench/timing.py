"""One timing policy: warm-up, samples until a noise target or a budget, optional L2 flush.

The GPU time of each sample comes from the backend (CUDA events around the launches); the
host clock here only bounds how long we keep sampling, it never times the kernel.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from typing import Any

from gpubench.stats import robust_noise

NOISE_CHECK_EVERY = 8


@dataclass(frozen=True)
class TimingPolicy:
    warmup: int = 3
    min_samples: int = 10
    max_samples: int = 1000
    # Keep sampling until this much GPU time has been measured...
    min_time_s: float = 0.05
    # ...and the robust relative noise (see stats.robust_noise) is at or below this, or the
    # budget runs out.
    target_noise: float = 0.02
    max_time_s: float = 2.0
    # None: the suite decides (memory-bound suites flush).
    flush_l2: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def field_types(cls) -> dict[str, type]:
        hints = {"int": int, "float": float, "bool | None": bool}
        return {f.name: hints[str(f.type)] for f in fields(cls)}

    def check(self) -> list[tuple[str, str]]:
        """(field, problem) pairs for settings that cannot work."""
        problems = []
        if self.warmup < 0:
            problems.append(("warmup", "must be 0 or more"))
        if self.min_samples < 1:
            problems.append(("min_samples", "must be at least 1"))
        if self.max_samples < self.min_samples:
            problems.append(("max_samples", "must be at least min_samples"))
        if self.min_time_s < 0:
            problems.append(("min_time_s", "must be 0 or more"))
        if self.max_time_s <= 0:
            problems.append(("max_time_s", "must be positive"))
        if self.target_noise <= 0:
            problems.append(("target_noise", "must be positive"))
        return problems


@dataclass(frozen=True)
class Measurement:
    samples_ms: list[float]
    # True when the noise target was met; False when the budget stopped sampling first.
    converged: bool


def measure(
    time_once_ms: Callable[[], float],
    policy: TimingPolicy,
    *,
    host_clock: Callable[[], float] = time.perf_counter,
) -> Measurement:
    """Warm up, then take samples until the stopping rule says enough."""
    for _ in range(policy.warmup):
        time_once_ms()
    samples: list[float] = []
    total_ms = 0.0
    started = host_clock()
    while True:
        sample = time_once_ms()
        samples.append(sample)
        total_ms += sample
        count = len(samples)
        # The noise estimate is O(n); checking it every few samples keeps the loop cheap.
        if (
            count >= policy.min_samples
            and total_ms * 1e-3 >= policy.min_time_s
            and (count % NOISE_CHECK_EVERY == 0 or count == policy.min_samples)
            and robust_noise(samples) <= policy.target_noise
        ):
            return Measurement(samples, converged=True)
        out_of_budget = count >= policy.max_samples or (
            count >= policy.min_samples and host_clock() - started >= policy.max_time_s
        )
        if out_of_budget:
            return Measurement(samples, converged=robust_noise(samples) <= policy.target_noise)


def host_time_once_ms(
    work: Callable[[], object], host_clock: Callable[[], float] = time.perf_counter
) -> float:
    """Wall time of synchronous CPU work (a NumPy reference), in ms."""
    started = host_clock()
    work()
    return (host_clock() - started) * 1e3
