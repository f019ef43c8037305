"""Steps in a series of runs: a change that persists, not one noisy run.

A series (one variant at one point on one testbed, in date order) is split where a
piecewise-constant fit of two medians fits it best (the least total absolute deviation from
each segment's median, as asv does), and the split counts as a step only if both segments hold
at least `MIN_RUNS` runs and the change between their medians passes compare's rule: beyond the
threshold and twice the noise. The noise is the larger of the runs' own noise (their median
`rel_noise`) and the spread of the segment's medians run to run (a scaled median absolute
deviation), so a series that wanders does not make steps of its wandering. Every split such a search
proposes, down to segments of `MIN_RUNS`, is then judged between its neighbours, and the
weakest that fails is dropped until every one left passes: a series may hold several steps,
up and back down.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from gpubench.compare import judge

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


def detect_steps(values: list[float], noises: list[float | None], threshold: float,
                 min_runs: int = MIN_RUNS) -> list[Step]:  # fmt: skip
    """The persistent steps of a series of positive medians, oldest first."""
    start = max(0, len(values) - WINDOW)
    series = np.asarray(values[start:], dtype=float)
    noise = np.asarray([n or 0.0 for n in noises[start:]], dtype=float)
    bounds = sorted(_candidates(series, 0, len(series), min_runs))
    while True:
        edges = [0, *bounds, len(series)]
        judged = [_judge(series, noise, edges[k - 1], edges[k], edges[k + 1], threshold, min_runs)
                  for k in range(1, len(edges) - 1)]  # fmt: skip
        weak = [(abs(step.change) if step else -1.0, k) for k, step in enumerate(judged)
                if step is None or step.verdict not in ("slower", "faster")]  # fmt: skip
        if not weak:
            return [replace(step, index=step.index + start) for step in judged if step]
        # The weakest boundary goes first: its neighbours then meet, and are judged again.
        del bounds[min(weak)[1]]


def _candidates(values: np.ndarray, lo: int, hi: int, min_runs: int) -> list[int]:
    """Every boundary a binary split by medians proposes, down to segments of `min_runs`;
    most are noise, which the judging in detect_steps removes."""
    if hi - lo < 2 * min_runs:
        return []
    split = _best_split(values[lo:hi], min_runs) + lo
    return [*_candidates(values, lo, split, min_runs), split,
            *_candidates(values, split, hi, min_runs)]  # fmt: skip


def _judge(values: np.ndarray, noises: np.ndarray, lo: int, split: int, hi: int,
           threshold: float, min_runs: int) -> Step | None:  # fmt: skip
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
    noise = max(_spread(before), _spread(after), float(np.median(noises[lo:split])),
                float(np.median(noises[split:hi])))  # fmt: skip
    return Step(split, base, new, change, noise, judge(change, noise, threshold),
                split - lo, hi - split)  # fmt: skip


def _best_split(values: np.ndarray, min_runs: int) -> int:
    """Where two medians fit the values best (least total absolute deviation)."""
    costs = [
        _cost(values[:k]) + _cost(values[k:]) for k in range(min_runs, len(values) - min_runs + 1)
    ]
    return min_runs + int(np.argmin(costs))


def _cost(segment: np.ndarray) -> float:
    return float(np.abs(segment - np.median(segment)).sum())


def _spread(segment: np.ndarray) -> float:
    """The run-to-run noise of a segment, relative to its median."""
    middle = float(np.median(segment))
    if middle <= 0:
        return 0.0
    return _MAD_TO_SIGMA * float(np.median(np.abs(segment - middle))) / middle
