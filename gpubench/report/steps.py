"""Steps in a series of runs: a change that persists, not one noisy run.

A series (one variant at one point on one testbed, in date order) is split where two levels
fit it best (binary segmentation, the least squared deviation: one pass of running sums per
segment), and the split counts as a step only if both segments hold
at least `MIN_RUNS` runs and the change between their medians passes compare's rule: beyond the
threshold and twice the noise. The noise is the larger of the runs' own noise (their median
`rel_noise`) and the spread of the segment's medians run to run (a scaled median absolute
deviation), so a series that wanders does not make steps of its wandering. Every split such a search
proposes, down to segments of `MIN_RUNS` (where the means either side differ by half the
threshold or more), is then judged between its neighbours, and the
weakest that fails is dropped until every one left passes: a series may hold several steps,
up and back down.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from gpubench.store.compare import judge

# A step must hold for this many runs on each side: one slow night is noise, not a step.
MIN_RUNS = 3
# Only the latest runs of a series are searched: the cost grows with the square of its length,
# and a step older than this is history the charts still show.
WINDOW = 400
# From a median absolute deviation to a standard deviation, for normally distributed noise.
_MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True)
class Step:
    index: int  # the first run (position in the series) of the new level
    base: float  # the median before
    new: float  # the median from `index` on
    change: float  # new / base - 1
    noise: float  # what the change was judged against
    verdict: str  # slower or faster
    runs_before: int
    runs_after: int


def detect_steps(
    values: list[float], noises: list[float | None], threshold: float, min_runs: int = MIN_RUNS
) -> list[Step]:
    """The persistent steps of a series of positive medians, oldest first."""
    start = max(0, len(values) - WINDOW)
    series = np.asarray(values[start:], dtype=float)
    # A noise that is not a finite positive number (none, or a store edited by hand) counts 0.
    noise = np.asarray([_usable(n) for n in noises[start:]], dtype=float)
    bounds = sorted(_candidates(series, 0, len(series), min_runs, threshold))

    def judged_at(k: int) -> Step | None:
        edges = [0, *bounds, len(series)]
        return _judge(series, noise, edges[k], edges[k + 1], edges[k + 2], threshold, min_runs)

    judged = [judged_at(k) for k in range(len(bounds))]
    while True:
        weak = [
            (abs(step.change) if step else -1.0, k)
            for k, step in enumerate(judged)
            if step is None or step.verdict not in ("slower", "faster")
        ]
        if not weak:
            return [replace(step, index=step.index + start) for step in judged if step]
        # The weakest boundary goes first: its neighbours then meet, and only they are judged
        # again (each judgement reads the segments either side).
        k = min(weak)[1]
        del bounds[k], judged[k]
        for near in (k - 1, k):
            if 0 <= near < len(bounds):
                judged[near] = judged_at(near)


def _usable(noise: float | None) -> float:
    return noise if isinstance(noise, float | int) and math.isfinite(noise) and noise > 0 else 0.0


def _candidates(values: np.ndarray, lo: int, hi: int, min_runs: int, threshold: float) -> list[int]:
    """The boundaries a binary split proposes, down to segments of `min_runs`: each side is
    searched again whatever its split was (a bump inside hides from the split around it), but
    a split is kept only where the means either side differ by half the threshold or more;
    the judging in detect_steps removes the noise among the rest."""
    if hi - lo < 2 * min_runs:
        return []
    split = _best_split(values[lo:hi], min_runs) + lo
    before, after = float(values[lo:split].mean()), float(values[split:hi].mean())
    moved = before > 0 and abs(after / before - 1) >= threshold / 2
    return [
        *_candidates(values, lo, split, min_runs, threshold),
        *([split] if moved else []),
        *_candidates(values, split, hi, min_runs, threshold),
    ]


def _judge(
    values: np.ndarray,
    noises: np.ndarray,
    lo: int,
    split: int,
    hi: int,
    threshold: float,
    min_runs: int,
) -> Step | None:
    """The change at `split` between its neighbouring segments, or None where the new level
    does not hold for `min_runs` runs (or the old one did not)."""
    before, after = values[lo:split], values[split:hi]
    base, new = float(np.median(before)), float(np.median(after))
    if base <= 0:
        return None
    # Persisting: at least min_runs runs on each side sit nearer their own level.
    nearer_new = np.abs(after - new) < np.abs(after - base)
    nearer_base = np.abs(before - base) < np.abs(before - new)
    if int(nearer_new.sum()) < min_runs or int(nearer_base.sum()) < min_runs:
        return None
    change = new / base - 1
    noise = max(
        _spread(before),
        _spread(after),
        float(np.median(noises[lo:split])),
        float(np.median(noises[split:hi])),
    )
    return Step(
        split, base, new, change, noise, judge(change, noise, threshold), split - lo, hi - split
    )


def _best_split(values: np.ndarray, min_runs: int) -> int:
    """Where two levels fit the values best: the least total squared deviation from each
    side's mean, for every split at once from running sums (a proposal only: the judging is
    by medians, which one outlier does not move)."""
    n = len(values)
    sums, squares = np.cumsum(values), np.cumsum(values * values)
    k = np.arange(min_runs, n - min_runs + 1)
    left = squares[k - 1] - sums[k - 1] ** 2 / k
    right_sum, right_squares = sums[-1] - sums[k - 1], squares[-1] - squares[k - 1]
    right = right_squares - right_sum**2 / (n - k)
    return int(k[np.argmin(left + right)])


def _spread(segment: np.ndarray) -> float:
    """The run-to-run noise of a segment, relative to its median."""
    middle = float(np.median(segment))
    if middle <= 0:
        return 0.0
    return _MAD_TO_SIGMA * float(np.median(np.abs(segment - middle))) / middle
