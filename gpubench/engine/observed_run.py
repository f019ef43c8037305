"""A sweep's plan run with the observers its caller plugged in (the results log, a progress
bar: each made from the output plan and the log's header, entered while the points run),
each result collected as it arrives, SIGTERM handled as Ctrl-C, and what finished kept when
either comes."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from gpubench.engine import interrupts, planning
from gpubench.engine.runner import Observer, SweepRunner
from gpubench.model import results
from gpubench.store.outputs import OutputPlan

# What a caller plugs in: given where the results go and the log's header, an observer (a
# context manager, entered while the points run), or None where it has nothing to follow.
ObserverFactory = Callable[
    [OutputPlan, dict[str, Any]], contextlib.AbstractContextManager[Observer] | None
]


class Collect:
    """Every result into the result set, the moment it arrives."""

    def __init__(self, result_set: results.ResultSet) -> None:
        self.result_set = result_set

    def started(self, total: int) -> None: ...

    def finished(self, result: results.Result) -> None:
        self.result_set.results.append(result)

    def point_finished(self, results: list[results.Result]) -> None: ...


def run_observed(
    runner: SweepRunner,
    plan: planning.SweepPlan,
    result_set: results.ResultSet,
    header: dict[str, Any],
    observers: Sequence[ObserverFactory],
) -> bool:
    """Run the plan with the observers made and entered; True if interrupted (what finished
    is kept)."""
    with contextlib.ExitStack() as entered:
        runner.observers = [Collect(result_set)]
        for make in observers:
            made = make(plan.files, header)
            if made is not None:
                runner.observers.append(entered.enter_context(made))
        try:
            with interrupts.terminate_as_interrupt():
                runner.run(plan.run, plan.previous)
        except KeyboardInterrupt:
            # Until measure returns, further Ctrl-C or SIGTERM are ignored: the worker is
            # killed and the results gathered in a second or two (the command line then keeps
            # them ignored to its exit: ignore_interrupts).
            interrupts.ignore_interrupts()
            return True
    return False
