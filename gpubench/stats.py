"""Raw timing samples → a summary (median, min, mean, stdev, relative noise)."""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Summary:
    samples: int
    median_ms: float
    min_ms: float
    max_ms: float
    mean_ms: float
    stdev_ms: float
    # stdev / mean: nvbench's noise measure, the figure a stopping rule aims at.
    rel_noise: float
    q1_ms: float
    q3_ms: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize(samples_ms: list[float] | tuple[float, ...]) -> Summary:
    if not samples_ms:
        raise ValueError("cannot summarize zero samples")
    values = sorted(float(s) for s in samples_ms)
    n = len(values)
    mean = statistics.fmean(values)
    stdev = statistics.stdev(values) if n > 1 else 0.0
    if n > 1:
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    else:
        q1 = q3 = values[0]
    return Summary(
        samples=n,
        median_ms=statistics.median(values),
        min_ms=values[0],
        max_ms=values[-1],
        mean_ms=mean,
        stdev_ms=stdev,
        rel_noise=stdev / mean if mean > 0 else math.inf,
        q1_ms=q1,
        q3_ms=q3,
    )


class RunningNoise:
    """Welford's running mean and variance, so a stopping rule costs O(1) per sample."""

    def __init__(self) -> None:
        self.count = 0
        self.mean = 0.0
        self._m2 = 0.0
        self.total = 0.0

    def add(self, value: float) -> None:
        self.count += 1
        self.total += value
        delta = value - self.mean
        self.mean += delta / self.count
        self._m2 += delta * (value - self.mean)

    @property
    def rel_noise(self) -> float:
        if self.count < 2 or self.mean <= 0:
            return math.inf
        return math.sqrt(self._m2 / (self.count - 1)) / self.mean
