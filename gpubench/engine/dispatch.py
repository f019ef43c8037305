"""Which point a free GPU of a pool takes next: its own problem's, while it has any.

Points of one problem (gpubench.engine.input_sets.problem_key: the configurations of one size,
dtype and seed) share its host work: the inputs, both references, the uploads and the second
set, made once by the worker that runs them. A shared queue of the points, biggest first,
had every GPU of a pool start on the biggest problem and make its inputs and references for
itself, each time it met a new problem: on four H200 of one host, `configs/transpose.yaml`
made each of its five problems four times, the 16384² set taking 2.1 s where one worker alone
takes 1.6 s (the four contend for the host), and each GPU worked 6.4 s where a quarter of the
one-GPU run is 4.5 s.

So a GPU keeps to its problem while the problem has points left. A GPU without one takes
the biggest problem no GPU holds. Once every problem left is held, it joins the one whose
holders have the most time left, where joining pays: only while the time left per holder
(the problem's points left, at the time its points have taken) is more than making its data
once more costs (what a holder's first point took beyond the others). The first points of a
problem say what it costs; before any has finished, a problem is joined only where it has
more points left than holders.

A point's time counts for its own problem, whichever problem its worker holds by the time it
finishes (a caller that hands a worker its next point before the one it runs is done may see
it move on to another problem meanwhile).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpubench.engine.input_sets import problem_key
from gpubench.model.results import point_key

if TYPE_CHECKING:
    from gpubench.engine.runner import Plan

Item = tuple[dict[str, Any], list[str]]  # a point and the variants it still has to run


@dataclass
class _Problem:
    """One problem's points not yet handed out, who holds it and what its points took."""

    items: deque[Item]
    holders: set[int] = field(default_factory=set)
    first_s: list[float] = field(default_factory=list)  # a worker's first point of it
    later_s: list[float] = field(default_factory=list)  # the points after that

    def point_s(self) -> float | None:
        """What a point takes once the data is made (None: no point has finished yet)."""
        if self.later_s:
            return sum(self.later_s) / len(self.later_s)
        if self.first_s:
            return sum(self.first_s) / len(self.first_s)
        return None

    def setup_s(self) -> float | None:
        """What making the data costs a worker: a first point beyond the later ones (all of
        a first point while no later one has finished)."""
        if not self.first_s:
            return None
        first = sum(self.first_s) / len(self.first_s)
        return max(0.0, first - sum(self.later_s) / len(self.later_s)) if self.later_s else first

    def time_left_per_holder(self) -> float:
        """The holders' time left on it, each (by count where no point has finished)."""
        per_point = self.point_s()
        left = len(self.items) * (per_point if per_point is not None else 1.0)
        return left / max(1, len(self.holders))

    def worth_joining(self) -> bool:
        setup = self.setup_s()
        if setup is None:  # nothing finished yet: only where it has more points than holders
            return len(self.items) > len(self.holders)
        return self.time_left_per_holder() > setup


class ProblemDispatch:
    """The points of a pool's run, handed to its GPUs (by worker number) problem by problem;
    safe to call from the pool's threads."""

    def __init__(self, items: list[Item], problem_of: Callable[[dict[str, Any]], Hashable]):
        self._problems: dict[Hashable, _Problem] = {}
        for item in items:  # in the order given (biggest first): dicts keep it
            self._problems.setdefault(problem_of(item[0]), _Problem(deque())).items.append(item)
        self._problem_of = problem_of
        self._held: dict[int, Hashable] = {}  # worker -> the problem it holds
        # (worker, problem) -> the worker's first point of it, until that point is done: the
        # one that made the problem's data on that worker.
        self._first: dict[tuple[int, Hashable], dict[str, Any]] = {}
        self._lock = threading.Lock()

    def take(self, worker: int) -> Item | None:
        """The next point for `worker`, or None when it has nothing left worth doing."""
        with self._lock:
            key = self._held.get(worker)
            if key is not None and self._problems[key].items:
                return self._problems[key].items.popleft()
            self._let_go(worker)
            key = self._unheld() or self._to_join()
            if key is None:
                return None
            problem = self._problems[key]
            problem.holders.add(worker)
            self._held[worker] = key
            item = problem.items.popleft()
            self._first[(worker, key)] = item[0]
            return item

    def done(self, worker: int, seconds: float, point: dict[str, Any]) -> None:
        """`worker` finished `point`, one it took, in `seconds`: the time counts for the
        point's problem, as the first point of it on that worker or a later one."""
        with self._lock:
            key = self._problem_of(point)
            first = self._first.get((worker, key)) == point
            if first:
                del self._first[(worker, key)]
            problem = self._problems[key]
            (problem.first_s if first else problem.later_s).append(seconds)

    def lost(self, worker: int, point: dict[str, Any]) -> None:
        """`worker`'s run of `point`, one it took, failed (a Dask task whose worker died): no
        time to count, and the worker lets go of the point's problem, so that its next point
        of it (a new worker process's, which makes the data again) counts as a first one."""
        with self._lock:
            key = self._problem_of(point)
            if self._first.get((worker, key)) == point:
                del self._first[(worker, key)]
            if self._held.get(worker) == key:
                self._let_go(worker)

    def _let_go(self, worker: int) -> None:
        key = self._held.pop(worker, None)
        if key is not None:
            self._problems[key].holders.discard(worker)

    def _unheld(self) -> Hashable | None:
        """The biggest problem with points left that no worker holds."""
        for key, problem in self._problems.items():
            if problem.items and not problem.holders:
                return key
        return None

    def _to_join(self) -> Hashable | None:
        """The held problem whose holders have the most time left, where joining pays."""
        worth = [
            (problem.time_left_per_holder(), key)
            for key, problem in self._problems.items()
            if problem.items and problem.worth_joining()
        ]
        return max(worth, key=lambda pair: pair[0])[1] if worth else None


def for_plan(plan: Plan, todo: list[Item]) -> ProblemDispatch:
    """The points of a plan to hand out (`todo`, biggest first), problem by problem; a point
    whose problem the suite cannot say is a problem of its own."""

    def problem_of(point: dict[str, Any]) -> Hashable:
        key = problem_key(plan.bench, point, plan.tuned)
        return ("problem", key) if key is not None else ("point", point_key(point))

    return ProblemDispatch(todo, problem_of)
