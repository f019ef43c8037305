"""Host-side phases of a point and of a variant: where the wall time of a run goes.

The GPU's own time is measured with CUDA events (gpubench.model.timing); these are host-clock
spans of the synchronous work around it (making inputs, the reference, copies, checks), which
is the right clock for them. Every result carries them (`Result.phases`); `--verbose` prints
them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

# Per point, shared by its variants: compiling, fresh inputs, the reference, input uploads,
# the reference's upload (where the check runs on the GPU).
# The second input set (made on a thread: its host time, overlapping the GPU's work).
POINT_PHASES = ("compile", "inputs", "reference", "uploads", "reference_upload", "fresh_inputs")
# Per variant: buffers and poison, the checked run, the check (downloads included on the
# host path), waiting for the second input set (before timing Python work), the timed
# samples, the audits of timed runs, the energy window (--energy), the comparison of the
# inputs with what was uploaded, the re-checks after timing, everything else.
VARIANT_PHASES = (
    "prepare",
    "checked_run",
    "check",
    "fresh_wait",
    "timing",
    "audit",
    "energy",
    "inputs_check",
    "recheck",
    "downloads",
)


@dataclass
class PhaseClock:
    """Seconds spent in each named phase, accumulated over the spans that name it, and where
    a phase says more of its time, that split (`parts`: the timing loop's TIMING_PARTS)."""

    seconds: dict[str, float] = field(default_factory=dict)
    parts: dict[str, dict[str, float]] = field(default_factory=dict)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - start)

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def snapshot(self) -> dict[str, float]:
        """The phases so far, rounded to microseconds (a JSON of 10^5 results stays small)."""
        return {name: round(value, 6) for name, value in self.seconds.items()}

    def parts_snapshot(self) -> dict[str, dict[str, float]]:
        """The splits recorded, rounded as `snapshot` rounds."""
        return {
            group: {name: round(value, 6) for name, value in split.items()}
            for group, split in self.parts.items()
        }


# Where the timing phase's time went (timing.LoopTime.parts), the group Result.phases keeps it
# in, beside "point" and "variant". GPU seconds from the events: in the timed intervals
# (warm-up and discarded samples included), flushing L2 and the rest of the GPU time between
# the samples of a batch (restores, waiting for the host to enqueue), the latter two only where
# the backend's events say; host seconds: reading the SM clock, the stopping rule; and counts:
# batches, intervals run, batches enqueued before the wait for the one before them, and of
# those the batches that ran for no sample (the rule had stopped before them, or a throttled
# batch changed the size of the next).
TIMING_LOOP = "timing_loop"

# When a result was made, as wall-clock (epoch) seconds the workers of one host share: the
# point's start (its compile wait and inputs included), the variant's start and its end. Not
# durations: `--verbose` reads them for each GPU's schedule (report.phases.schedule_lines).
SPAN = "span"
TIMING_PARTS = (
    "gpu_timed",
    "gpu_flush",
    "gpu_between",
    "clock_reads",
    "stopping_rule",
    "batches",
    "samples",
    "batches_ahead",
    "batches_thrown",
)


def total(phases: dict[str, float]) -> float:
    return sum(phases.values())


def ordered(phases: dict[str, float], known: tuple[str, ...]) -> list[tuple[str, float]]:
    """The phases in pipeline order, any others after them."""
    first = [(name, phases[name]) for name in known if name in phases]
    return first + [(name, value) for name, value in phases.items() if name not in known]
