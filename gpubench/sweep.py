"""Parameter axes → points: cartesian products, zipped groups, declarative constraints.

Constraints are small comparisons such as `block_rows <= tile` or `tile * block_rows <= 1024`.
They are parsed into a syntax tree and evaluated by the walker below over a whitelist of
node types; nothing is ever passed to eval.
"""

from __future__ import annotations

import ast
import itertools
import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from gpubench.benchmark import Benchmark, Point
from gpubench.errors import quote
from gpubench.expressions import nesting_depth

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Div: operator.truediv,
    ast.Mod: operator.mod,
}
_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_ALLOWED_NODES = (
    ast.Expression, ast.Compare, ast.BinOp, ast.BoolOp, ast.UnaryOp, ast.Load,
    ast.And, ast.Or, ast.Not, ast.USub, *_BINARY, *_COMPARE,
)  # fmt: skip


MAX_CONDITION_CHARS = 500
MAX_DEPTH = 40


class ConstraintError(ValueError):
    """A condition that cannot be evaluated at a point (division by zero, text compared with a
    number, a parameter with no value there)."""


@dataclass(frozen=True)
class Constraint:
    """A condition every point of a sweep must satisfy."""

    text: str
    tree: ast.Expression

    @classmethod
    def parse(cls, text: str, known_names: Iterable[str]) -> Constraint:
        if not isinstance(text, str) or not text.strip():
            raise ValueError(
                f"expected a condition such as 'block_rows <= tile', got {quote(text)}"
            )
        if len(text) > MAX_CONDITION_CHARS:
            raise ValueError(f"a condition is at most {MAX_CONDITION_CHARS} characters")
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            raise ValueError(f"cannot parse condition {quote(text)}") from None
        try:
            too_deep = nesting_depth(tree) > MAX_DEPTH
        except RecursionError:
            too_deep = True
        if too_deep:
            raise ValueError(f"condition {quote(text)} is nested more than {MAX_DEPTH} deep")
        known = set(known_names)
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                if node.id not in known:
                    raise ValueError(f"unknown parameter {node.id!r} in condition {text!r}")
            elif isinstance(node, ast.Constant):
                if isinstance(node.value, bool) or not isinstance(node.value, int | float | str):
                    raise ValueError(f"unsupported constant {node.value!r} in {text!r}")
            elif not isinstance(node, _ALLOWED_NODES):
                raise ValueError(
                    f"{type(node).__name__} is not allowed in condition {text!r} "
                    "(use parameters, numbers, + - * / // %, comparisons, and/or/not)"
                )
        if not isinstance(tree.body, ast.Compare | ast.BoolOp) and not (
            isinstance(tree.body, ast.UnaryOp) and isinstance(tree.body.op, ast.Not)
        ):
            raise ValueError(f"condition {text!r} must be a comparison, such as 'a <= b'")
        return cls(text=text.strip(), tree=tree)

    def holds(self, point: Point) -> bool:
        """Whether the point meets the condition; ConstraintError if it cannot be evaluated
        there."""
        try:
            return bool(_evaluate(self.tree.body, point))
        except ConstraintError as exc:
            raise ConstraintError(f"condition {quote(self.text)}: {exc}") from None
        except ZeroDivisionError:
            raise ConstraintError(f"condition {quote(self.text)} divides by zero") from None
        except (OverflowError, RecursionError, MemoryError, TypeError) as exc:
            raise ConstraintError(
                f"condition {quote(self.text)} cannot be evaluated: {exc}"
            ) from None


def _value(node: ast.AST, point: Point) -> Any:
    value = _evaluate(node, point)
    if value is None and isinstance(node, ast.Name):
        raise ConstraintError(f"{node.id} has no value at this point")
    return value


def _evaluate(node: ast.AST, point: Point) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return point[node.id]
    if isinstance(node, ast.BinOp):
        left, right = _value(node.left, point), _value(node.right, point)
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (left, right)):
            # Arithmetic is for numbers: "ab" * 10**12 would build a terabyte of text.
            raise ConstraintError(f"arithmetic on text ({quote(left)}, {quote(right)})")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        value = _value(node.operand, point)
        if isinstance(node.op, ast.Not):
            return not value
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise ConstraintError(f"minus of text ({quote(value)})")
        return -value
    if isinstance(node, ast.BoolOp):
        values = (_evaluate(v, point) for v in node.values)
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare):
        left = _value(node.left, point)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _value(right_node, point)
            if isinstance(left, str) != isinstance(right, str) and not isinstance(
                op, ast.Eq | ast.NotEq
            ):
                raise ConstraintError(
                    f"compares text with a number ({quote(left)}, {quote(right)})"
                )
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    raise TypeError(f"unexpected node {type(node).__name__}")  # parse() rules this out


def expand(
    bench: Benchmark,
    axes: dict[str, list[Any]],
    zipped: list[dict[str, list[Any]]] | None = None,
    constraints: list[Constraint] | None = None,
) -> list[Point]:
    """Every combination of the axes (each zipped group is one axis), defaults filled in,
    derived parameters resolved, constraints applied, duplicates dropped, order kept."""
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
    distinct = (not zipped and type(bench).resolve is Benchmark.resolve
                and all(_all_distinct(values) for values in axes.values()))  # fmt: skip
    for combo in itertools.product(*dimensions):
        point = dict(base)
        for part in combo:
            point.update(part)
        point = bench.resolve(point)
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


def _all_distinct(values: list[Any]) -> bool:
    try:
        return len(set(values)) == len(values)
    except TypeError:  # unhashable values: let the general path decide
        return False
