"""A sweep's plan run with its results log open: each result appended the moment it arrives
(and collected), the progress observer following, SIGTERM handled as Ctrl-C, and what finished
kept when either comes."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from gpubench.engine import interrupts, planning
from gpubench.engine.runner import SweepRunner
from gpubench.model import results


def run_with_log(
    runner: SweepRunner,
    plan: planning.SweepPlan,
    result_set: results.ResultSet,
    header: dict[str, Any],
    progress: Callable[[], contextlib.AbstractContextManager[Any]] | None,
) -> bool:
    """Run the plan with the log open; True if interrupted (what finished is kept)."""
    log = (
        results.JsonLinesLog(plan.files.log, header=header, append=plan.files.resume)
        if plan.files.log
        else None
    )

    class Collect:
        def started(self, total: int) -> None: ...

        def finished(self, result: results.Result) -> None:
            result_set.results.append(result)

        def point_finished(self, results: list[results.Result]) -> None: ...

    runner.observers = [Collect(), *([log] if log else [])]
    try:
        with interrupts.terminate_as_interrupt():
            if progress is not None and plan.files.progress:
                with progress() as bar:
                    runner.observers.append(bar)
                    runner.run(plan.run, plan.previous)
            else:
                runner.run(plan.run, plan.previous)
    except KeyboardInterrupt:
        # Until measure returns, further Ctrl-C or SIGTERM are ignored: the worker is killed
        # and the results gathered in a second or two (the command line then keeps them
        # ignored to its exit: ignore_interrupts).
        interrupts.ignore_interrupts()
        return True
    finally:
        if log:
            log.close()
    return False
