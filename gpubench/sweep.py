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


@dataclass(frozen=True)
class Constraint:
    """A condition every point of a sweep must satisfy."""

    text: str
    tree: ast.Expression

    @classmethod
    def parse(cls, text: str, known_names: Iterable[str]) -> Constraint:
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"expected a condition such as 'block_rows <= tile', got {text!r}")
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError:
            raise ValueError(f"cannot parse condition {text!r}") from None
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
        return bool(_evaluate(self.tree.body, point))


def _evaluate(node: ast.AST, point: Point) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return point[node.id]
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](_evaluate(node.left, point), _evaluate(node.right, point))
    if isinstance(node, ast.UnaryOp):
        value = _evaluate(node.operand, point)
        return not value if isinstance(node.op, ast.Not) else -value
    if isinstance(node, ast.BoolOp):
        values = (_evaluate(v, point) for v in node.values)
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left, point)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _evaluate(right_node, point)
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
    seen: set[tuple[tuple[str, Any], ...]] = set()
    for combo in itertools.product(*dimensions):
        point = bench.defaults()
        for part in combo:
            point.update(part)
        point = bench.resolve(point)
        if constraints and not all(c.holds(point) for c in constraints):
            continue
        key = tuple(sorted(point.items()))
        if key not in seen:
            seen.add(key)
            points.append(point)
    return points
