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
# samples, the audits of timed runs, the comparison of the inputs with what was uploaded, the
# re-checks after timing, everything else.
VARIANT_PHASES = (
    "prepare",
    "checked_run",
    "check",
    "fresh_wait",
    "timing",
    "audit",
    "inputs_check",
    "recheck",
    "downloads",
)


@dataclass
class PhaseClock:
    """Seconds spent in each named phase, accumulated over the spans that name it."""

    seconds: dict[str, float] = field(default_factory=dict)

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


def total(phases: dict[str, float]) -> float:
    return sum(phases.values())


def ordered(phases: dict[str, float], known: tuple[str, ...]) -> list[tuple[str, float]]:
    """The phases in pipeline order, any others after them."""
    first = [(name, phases[name]) for name in known if name in phases]
    return first + [(name, value) for name, value in phases.items() if name not in known]
