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
    # stdev / mean: nvbench's noise measure; one late outlier can dominate it.
    rel_stdev: float
    # 0.7413 * IQR / median: the same scale as rel_stdev for normal samples, but robust to
    # the rare preempted sample; the stopping rule and the tables use this one.
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
        rel_stdev=stdev / mean if mean > 0 else math.inf,
        rel_noise=robust_noise(values),
        q1_ms=q1,
        q3_ms=q3,
    )


def robust_noise(samples: list[float]) -> float:
    """Relative noise from the interquartile range, scaled to match a stdev for normal samples
    (0.7413 × IQR / median): a rare preempted sample cannot dominate it, unlike stdev/mean."""
    if len(samples) < 2:
        return math.inf
    q1, median, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    if median <= 0:
        return math.inf
    return 0.7413 * (q3 - q1) / median
