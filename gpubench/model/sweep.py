"""Parameter axes → points: cartesian products, zipped groups, declarative constraints.

Constraints are small comparisons such as `block_rows <= tile` or `tile * block_rows <= 1024`:
conditions of gpubench.model.expressions, parsed into a syntax tree, checked against an allow-list
and walked; nothing is ever passed to eval.
"""

from __future__ import annotations

import itertools
from typing import Any

from gpubench.errors import quote
from gpubench.model.benchmark import Benchmark, Point
from gpubench.model.expressions import Condition, ConstraintError

__all__ = [
    "MAX_COMBINATIONS",
    "Constraint",
    "ConstraintError",
    "DroppedValue",
    "TooManyPoints",
    "expand",
]

# The most combinations a sweep may ask for. A dry run of 10^6 points takes seconds and a few
# hundred MB; a product of axes grows past that fast (four axes of 1,000 values are 10^12),
# so the count is taken from the axes' lengths and refused before a single point is built.
MAX_COMBINATIONS = 1_000_000

# Constraints are conditions of gpubench.model.expressions, the one parser and walker of gpubench's
# expressions (kernel files' sizes and references too).
Constraint = Condition


def expand(
    bench: Benchmark,
    axes: dict[str, list[Any]],
    zipped: list[dict[str, list[Any]]] | None = None,
    constraints: list[Constraint] | None = None,
) -> list[Point]:
    """Every combination of the axes (each zipped group is one axis), defaults filled in,
    derived parameters resolved, constraints applied, duplicates dropped, order kept.
    More than MAX_COMBINATIONS combinations raise TooManyPoints before any is built."""
    _check_combinations(axes, zipped or [])
    dimensions: list[list[dict[str, Any]]] = [
        [{name: value} for value in values] for name, values in axes.items()
    ]
    for group in zipped or []:
        names = list(group)
        dimensions.append(
            [dict(zip(names, row, strict=True)) for row in zip(*group.values(), strict=True)]
        )
    points: list[Point] = []
    seen: set[tuple[Any, ...]] = set()
    base = bench.defaults()
    names = sorted(base)
    # Distinct values on every axis, no zipped groups and nothing derived: every combination
    # is a new point, and the set of keys (100 MB at 10^6 points) is not needed.
    # Only a suite that derives parameters can replace a value the sweep sets.
    derives = type(bench).resolve is not Benchmark.resolve
    distinct = not zipped and not derives and all(_all_distinct(values) for values in axes.values())
    for combo in itertools.product(*dimensions):
        point = dict(base)
        for part in combo:
            point.update(part)
        point = bench.resolve(point)
        if derives:
            _nothing_dropped(combo, point)
        try:
            if constraints and not all(c.holds(point) for c in constraints):
                continue
        except ConstraintError as exc:
            shown = ", ".join(f"{k}={quote(v, 20)}" for k, v in point.items())
            raise ConstraintError(f"{exc}, at the point {shown}") from None
        # Points hold the suite's parameters, each once: their values in a fixed name order
        # identify them (a sort per point would cost seconds at 10^6 points).
        if distinct:
            points.append(point)
            continue
        key = (
            tuple(point.get(name) for name in names)
            if len(point) == len(names)
            else tuple(sorted(point.items()))
        )
        if key not in seen:
            seen.add(key)
            points.append(point)
    return points


class TooManyPoints(ValueError):
    """A product of axes past MAX_COMBINATIONS: refused by its count, never expanded."""


def _check_combinations(axes: dict[str, list[Any]], zipped: list[dict[str, list[Any]]]) -> None:
    lengths = [(name, len(values)) for name, values in axes.items()]
    # A zipped group is one axis as long as its lists (the same length once validated).
    lengths += [
        ("zip[" + str(i) + "]", max((len(v) for v in group.values()), default=0))
        for i, group in enumerate(zipped)
    ]
    count = 1
    for _, length in lengths:
        count *= length
    if count > MAX_COMBINATIONS:
        shape = " × ".join(f"{length:,} {name}" for name, length in lengths if length > 1)
        raise TooManyPoints(
            f"the sweep asks for {count:,} combinations ({shape}); at most "
            f"{MAX_COMBINATIONS:,} are expanded: narrow an axis or split the "
            "sweep into several files"
        )


class DroppedValue(ValueError):
    """A value the sweep sets that the suite replaces at a point (a size where rows and cols
    are given): it would vanish without a word."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


def _nothing_dropped(combo: tuple[dict[str, Any], ...], point: Point) -> None:
    for part in combo:
        for name, value in part.items():
            if point.get(name) != value:
                given = ", ".join(
                    f"{k}={quote(v, 20)}"
                    for k, v in point.items()
                    if k != name and any(k in p for p in combo)
                )
                raise DroppedValue(
                    name,
                    f"{name}={quote(value, 20)} would be ignored where "
                    f"{given} (the suite derives {name} from them there): set "
                    f"either {name} or the parameters it stands for",
                )


def _all_distinct(values: list[Any]) -> bool:
    try:
        return len(set(values)) == len(values)
    except TypeError:  # unhashable values: let the general path decide
        return False
