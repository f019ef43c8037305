"""What a recorded sweep holds: one outcome (its cost under the tuning objective, or a failure)
per configuration."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The statuses whose time counts: measured and checked.
CANDIDATE_STATUSES = ("ok", "unstable")
# Verified and timed in part (gpubench tune's early stop): a hint, never a candidate.
PRUNED = "pruned"


@dataclass(frozen=True)
class Outcome:
    status: str
    # What the search minimises (gpubench.tune.objective): the recorded median in ms under
    # the time objective, the energy per run or the energy-delay product under the others;
    # None for a failure (or a result without the energy reading its objective needs).
    cost: float | None = None
    # What a strategy may learn from a configuration that is no candidate but was timed: a
    # pruned one's cost over the samples it got (never a winner).
    hint: float | None = None

    @property
    def valid(self) -> bool:
        return self.cost is not None

    @property
    def learned(self) -> float | None:
        """The cost a strategy is told: the outcome's, else the hint; None for a failure."""
        return self.cost if self.cost is not None else self.hint


@dataclass
class Recording:
    """What a recorded sweep holds: one outcome per (point, variant), in recorded order."""

    suite: str
    source: str
    outcomes: dict[tuple[str, str], Outcome] = field(default_factory=dict)
    entries: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    # How to find the suite again (a name, or a suite or kernel file's path); "" where none.
    suite_ref: str = ""
    device_name: str = ""
    # True for a Kernel Tuner cache: one problem, every parameter a configuration.
    foreign: bool = False
    # What the outcomes' costs are (gpubench.tune.objective.Objective's value).
    objective: str = "time"

    def add(self, point: dict[str, Any], variant: str, outcome: Outcome) -> None:
        key = entry_key(point, variant)
        if key not in self.outcomes:
            self.entries.append((point, variant))
        self.outcomes[key] = outcome

    def outcome(self, point: dict[str, Any], variant: str) -> Outcome | None:
        return self.outcomes.get(entry_key(point, variant))


def entry_key(point: dict[str, Any], variant: str) -> tuple[str, str]:
    from gpubench.model.results import point_key

    return point_key(point), variant
