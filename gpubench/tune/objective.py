"""What a tuning run ranks configurations by (`gpubench tune --objective`): the median time
(the default), the energy of one run, or the energy-delay product.

The fastest configuration need not be the most frugal: one that runs a little longer at a
lower clock or with fewer memory transactions may spend less energy per run. The energy-delay
product (energy per run × its time) weighs the two together, so a configuration that is
neither the fastest nor the most frugal may win by it.
"""

from __future__ import annotations

from enum import StrEnum

from gpubench.model.results import Result


class Objective(StrEnum):
    TIME = "time"
    ENERGY = "energy"
    EDP = "edp"

    @property
    def needs_energy(self) -> bool:
        """Ranked by a result's energy reading (`--energy`)."""
        return self is not Objective.TIME

    @property
    def unit(self) -> str:
        # The energy-delay product in mJ·ms (1 mJ·ms = 1 µJ·s): a kernel's figures are about
        # one, where J·s would be millionths.
        return {"time": "ms", "energy": "mJ", "edp": "mJ·ms"}[self.value]

    @property
    def noun(self) -> str:
        """What the objective ranks, as a line names it."""
        return {"time": "time", "energy": "energy", "edp": "energy-delay product"}[self.value]

    def cost(self, result: Result) -> float | None:
        """What the search minimises for this result: its median (ms), its energy per run
        (mJ), or their product (mJ·ms); None where the result has no such figure."""
        median = result.median_ms
        if self is Objective.TIME:
            return median
        joules = result.joules_per_run
        if joules is None:
            return None
        if self is Objective.ENERGY:
            return joules * 1000.0
        return None if median is None else joules * 1000.0 * median

    def show(self, cost: float) -> str:
        return f"{cost:.4g} {self.unit}"
