"""Small safe expressions for kernel files: `ceil_div(n, block)`, `12 * n`, `a * x + y`.

An expression is parsed into a Python syntax tree and checked against an allow-list of node
types, names and functions; the text itself is never evaluated. Array expressions are
evaluated by the walker below; scalar ones (evaluated per point, 10^6 times in a large dry
run) are compiled once from the checked tree, every operation wrapped in a call of a checking
helper, into a function with no builtins, and their values memoised by the values of the
names they read.
Two dialects: scalar expressions (sizes, grids, scalars, work) over parameters, and array
expressions (references, input initialisers) that may also call a fixed set of NumPy
functions, compare, and slice.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from gpubench.errors import did_you_mean, quote

MAX_CHARS = 2000
MAX_DEPTH = 40
# Integers beyond this many bits are no size, grid or byte count anyone means (and 10**10**9
# would take minutes to compute).
MAX_INT_BITS = 128
# Entries kept per expression (then the memo starts again).
MEMO_LIMIT = 1 << 16


class ExpressionError(ValueError):
    """An expression that cannot be parsed or evaluated; the message says why."""


def ceil_div(a: int, b: int) -> int:
    if not all(isinstance(v, int | np.integer) for v in (a, b)):
        raise ExpressionError(f"ceil_div takes integers, got {quote(a)} and {quote(b)}")
    if b == 0:
        raise ExpressionError("ceil_div divides by zero")
    return -(-int(a) // int(b))


def round_up(a: int, b: int) -> int:
    return ceil_div(a, b) * int(b)


def _log2(x: float) -> float | int:
    if x <= 0:
        raise ExpressionError(f"log2 of {quote(x)}")
    if isinstance(x, int) and x & (x - 1) == 0:
        return x.bit_length() - 1  # exact for powers of two: usable as a size
    return math.log2(x)


SCALAR_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "ceil_div": ceil_div,
    "round_up": round_up,
    "min": min,
    "max": max,
    "abs": abs,
    "log2": _log2,
    "sqrt": math.sqrt,
    "floor": math.floor,
    "ceil": math.ceil,
    "int": int,
}

# The NumPy functions a reference may use: elementwise maths, reductions, shape changes and
# a few constructors. Enough for the references people write; none touches files or
# evaluates text.
_NUMPY_FUNCTIONS = """
    abs sqrt cbrt exp exp2 expm1 log log2 log10 log1p sin cos tan arcsin arccos arctan arctan2
    sinh cosh tanh floor ceil trunc rint sign square reciprocal hypot fmod power minimum maximum
    fmin fmax where clip isnan isfinite sum prod cumsum cumprod mean amax amin argmax argmin dot
    matmul outer transpose reshape ravel roll pad flip concatenate stack broadcast_to bincount
    sort argsort diff zeros ones full arange zeros_like ones_like full_like bitwise_and
    bitwise_or bitwise_xor left_shift right_shift float16 float32 float64 int8 int16 int32
    int64 uint8 uint16 uint32 uint64
""".split()  # noqa: SIM905 (a word list reads better than 80 quoted names)
ARRAY_FUNCTIONS: dict[str, Callable[..., Any]] = {
    **{name: getattr(np, name) for name in _NUMPY_FUNCTIONS},
    "ceil_div": lambda a, b: -(-np.asarray(a) // b),
    "fma": lambda a, b, c: np.asarray(a, dtype=np.float64) * b + c,
    "min": np.minimum,
    "max": np.maximum,
    # Checked (subscripts, shapes, cost) by _check_product before it runs.
    "einsum": partial(np.einsum, optimize=True),
}

# Functions of the array dialect that work element by element: an expression of only these,
# operators, names and numbers may be evaluated on slices of its arrays (in parallel).
_ELEMENTWISE_WORDS = """
    abs sqrt cbrt exp exp2 expm1 log log2 log10 log1p sin cos tan arcsin arccos arctan arctan2
    sinh cosh tanh floor ceil trunc rint sign square reciprocal hypot fmod power minimum maximum
    fmin fmax where clip isnan isfinite bitwise_and bitwise_or bitwise_xor left_shift
    right_shift float16 float32 float64 int8 int16 int32 int64 uint8 uint16 uint32 uint64
    ceil_div fma min max
"""
ELEMENTWISE_FUNCTIONS = frozenset(_ELEMENTWISE_WORDS.split())
_ELEMENTWISE_NODES: tuple[type, ...] = (
    ast.Expression, ast.BinOp, ast.UnaryOp, ast.Call, ast.Name, ast.Constant, ast.Load,
    ast.Compare,
)  # fmt: skip

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
}  # fmt: skip
_UNARY: dict[type, Callable[[Any], Any]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert,
}  # fmt: skip
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}  # fmt: skip
_SCALAR_NODES: tuple[type, ...] = (
    ast.Expression, ast.BinOp, ast.UnaryOp, ast.Call, ast.Name, ast.Constant, ast.Load,
    ast.keyword, *_BINARY, *_UNARY,
)  # fmt: skip
_ARRAY_NODES: tuple[type, ...] = (
    *_SCALAR_NODES, ast.Compare, *_COMPARE, ast.Subscript, ast.Slice, ast.Tuple, ast.List,
    ast.MatMult,
)  # fmt: skip


def nesting_depth(node: ast.AST) -> int:
    """How deeply a syntax tree nests (condition and expression parsers both cap it)."""
    return 1 + max((nesting_depth(c) for c in ast.iter_child_nodes(node)), default=0)


@dataclass(frozen=True)
class Expression:
    """A parsed, checked expression; `names` are the variables it reads."""

    text: str
    tree: ast.Expression
    names: frozenset[str]
    arrays: bool = False
    # Values (or errors) of a scalar expression by the values of the names it reads: a sweep
    # of 10^6 points evaluates an expression of one axis once per value of that axis.
    _memo: dict[tuple[Any, ...], tuple[bool, Any]] = field(
        default_factory=dict, compare=False, repr=False, hash=False
    )
    # What is derived once from the tree: the sorted names, the compiled function.
    _derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False, hash=False)

    @classmethod
    def parse(cls, text: Any, known: Iterable[str], *, arrays: bool = False) -> Expression:
        """Parse `text` (a string or a number) allowing only `known` names and the dialect's
        functions; ExpressionError says what is wrong."""
        if isinstance(text, bool) or not isinstance(text, str | int | float):
            raise ExpressionError(f"expected an expression, got {quote(text)}")
        source = str(text).strip()
        if not source:
            raise ExpressionError("empty expression")
        if len(source) > MAX_CHARS:
            raise ExpressionError(f"an expression is at most {MAX_CHARS} characters")
        tree = _parse_tree(source)
        return cls(source, tree, _checked_names(tree, source, set(known), arrays), arrays)

    @property
    def elementwise(self) -> bool:
        """True when each element of the value depends only on the same element of the
        arrays it reads (no reductions, indexing or shape changes)."""
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                if not isinstance(node.func, ast.Name) or node.func.id not in ELEMENTWISE_FUNCTIONS:
                    return False
                if node.keywords:
                    return False
            elif not isinstance(
                node, _ELEMENTWISE_NODES + tuple(_BINARY) + tuple(_UNARY) + tuple(_COMPARE)
            ) or (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                return False
        return True

    def evaluate(self, env: Mapping[str, Any], *, max_elements: int | None = None) -> Any:
        """The value at `env`; ExpressionError (never another exception) if it has none.

        `max_elements` (array expressions): no array the expression builds may have more
        elements (default MAX_RESULT_ELEMENTS); checked from the shapes before it is built."""
        if self.arrays:
            return self._evaluate(env, max_elements)
        values = tuple(env.get(name) for name in self._order)
        try:
            ok, value = self._memo[values]
        except TypeError:  # a value that cannot be a key: evaluate every time
            return self._evaluate(env)
        except KeyError:
            try:
                ok, value = True, self._evaluate_compiled(values)
            except ExpressionError as exc:
                ok, value = False, exc
            if len(self._memo) >= MEMO_LIMIT:
                self._memo.clear()
            self._memo[values] = (ok, value)
        if not ok:
            raise value
        return value

    @property
    def _order(self) -> tuple[str, ...]:
        if "order" not in self._derived:
            self._derived["order"] = tuple(sorted(self.names))
        return self._derived["order"]

    def _evaluate_compiled(self, values: tuple[Any, ...]) -> Any:
        """A scalar expression through its compiled form (the same checks as the walker,
        as calls the compiler put around each operation)."""
        if None in values:
            name = self._order[values.index(None)]
            raise ExpressionError(f"{quote(self.text)}: {name} has no value here")
        function = self.compiled()
        if function is None:
            return self._evaluate(dict(zip(self._order, values, strict=True)))
        return self._guarded(lambda: function(*values))

    def compiled(self) -> Callable[..., Any] | None:
        """The scalar expression as a function of its names in sorted order (it raises what
        the walker raises, unwrapped); None where it cannot be compiled (an array expression,
        or a name that would shadow a helper)."""
        if "compiled" not in self._derived:
            usable = not self.arrays and not any(n.startswith(_PREFIX) for n in self._order)
            self._derived["compiled"] = compile_scalar(self.tree, self._order) if usable else None
        return self._derived["compiled"]

    def _evaluate(self, env: Mapping[str, Any], max_elements: int | None = None) -> Any:
        def walk() -> Any:
            with np.errstate(all="ignore"):
                return _Walker(
                    env,
                    ARRAY_FUNCTIONS if self.arrays else SCALAR_FUNCTIONS,
                    self.arrays,
                    max_elements,
                ).eval(self.tree.body)

        return self._guarded(walk)

    def _guarded(self, evaluate: Callable[[], Any]) -> Any:
        """evaluate(), every failure an ExpressionError naming the expression."""
        try:
            return evaluate()
        except ExpressionError as exc:
            raise ExpressionError(f"{quote(self.text)}: {exc}") from None
        except ZeroDivisionError:
            raise ExpressionError(f"{quote(self.text)} divides by zero") from None
        except MemoryError:
            raise ExpressionError(f"{quote(self.text)}: out of host memory") from None
        except (ArithmeticError, TypeError, ValueError, IndexError, RecursionError) as exc:
            raise ExpressionError(f"{quote(self.text)} cannot be evaluated: {exc}") from None


def _parse_tree(source: str) -> ast.Expression:
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise ExpressionError(f"cannot parse {quote(source)}") from None
    try:
        too_deep = nesting_depth(tree) > MAX_DEPTH
    except RecursionError:
        too_deep = True
    if too_deep:
        raise ExpressionError(f"{quote(source)} is nested more than {MAX_DEPTH} deep")
    return tree


def _checked_names(
    tree: ast.Expression, source: str, known: set[str], arrays: bool
) -> frozenset[str]:
    """The names the tree reads, after checking every node against the dialect's allow-list
    (node types, functions, names, constants)."""
    allowed = _ARRAY_NODES if arrays else _SCALAR_NODES
    functions = ARRAY_FUNCTIONS if arrays else SCALAR_FUNCTIONS
    used: set[str] = set()
    calls = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    for node in ast.walk(tree):
        if not isinstance(node, allowed):
            raise ExpressionError(
                f"{type(node).__name__} is not allowed in {quote(source)} (use names, "
                f"numbers, arithmetic{', comparisons, slices' if arrays else ''} and the "
                f"functions {', '.join(sorted(functions)[:12])}, ...)"
            )
        if isinstance(node, ast.Call):
            _check_call(node, source, functions)
        elif isinstance(node, ast.Name) and id(node) not in calls:
            if node.id not in known:
                raise ExpressionError(
                    f"unknown name {node.id!r} in {quote(source)}"
                    f"{did_you_mean(node.id, sorted(known))}"
                    + (f" (known: {', '.join(sorted(known))})" if known else "")
                )
            used.add(node.id)
        elif isinstance(node, ast.Constant):
            kinds: tuple[type, ...] = (int, float, str) if arrays else (int, float)
            if isinstance(node.value, bool) or not isinstance(node.value, kinds):
                raise ExpressionError(
                    f"constant {quote(node.value)} is not allowed in {quote(source)}"
                )
            if isinstance(node.value, int) and node.value.bit_length() > MAX_INT_BITS:
                raise ExpressionError(
                    f"an integer of {node.value.bit_length()} bits is too large in {quote(source)}"
                )
    return frozenset(used)


def _check_call(node: ast.Call, source: str, functions: Mapping[str, Any]) -> None:
    if not isinstance(node.func, ast.Name) or node.func.id not in functions:
        name = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
        raise ExpressionError(
            f"unknown function {name!r} in {quote(source)}{did_you_mean(name, list(functions))}"
        )
    if any(k.arg is None for k in node.keywords):
        raise ExpressionError(f"**arguments are not allowed in {quote(source)}")


def _checked_number(value: Any) -> Any:
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ExpressionError(f"an integer of {value.bit_length()} bits is too large")
    return value


def _arithmetic(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ExpressionError(f"arithmetic on {quote(value)}")
    return value


def _binary(
    op: Callable[[Any, Any], Any], is_pow: bool, is_shift: bool, left: Any, right: Any
) -> Any:
    """`left op right`, checked: numbers only, bounded exponents, shifts and results."""
    _arithmetic(left)
    _arithmetic(right)
    if is_pow and isinstance(right, int) and abs(right) > 256:
        raise ExpressionError(f"exponent {right} is too large")
    if is_shift and isinstance(right, int) and right > 256:
        raise ExpressionError(f"shift by {right} is too large")
    return _checked_number(op(left, right))


def _unary(op: Callable[[Any], Any], value: Any) -> Any:
    return op(_arithmetic(value))


_PREFIX = "_gpb_"


class _ToCalls(ast.NodeTransformer):
    """Every operation of a checked scalar tree as a call of a checking helper."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        name = f"{_PREFIX}bin_{type(node.op).__name__}"
        return ast.Call(ast.Name(name, ast.Load()), [node.left, node.right], [])

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        name = f"{_PREFIX}un_{type(node.op).__name__}"
        return ast.Call(ast.Name(name, ast.Load()), [node.operand], [])

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        assert isinstance(node.func, ast.Name)
        node.func = ast.Name(f"{_PREFIX}f_{node.func.id}", ast.Load())
        return ast.Call(ast.Name(f"{_PREFIX}number", ast.Load()), [node], [])


_HELPERS: dict[str, Any] = {
    f"{_PREFIX}number": _checked_number,
    # Partial applications, not closures: the checks run (and can be tested) at each call.
    **{f"{_PREFIX}bin_{op.__name__}": partial(_binary, fn, op is ast.Pow, op is ast.LShift)
       for op, fn in _BINARY.items()},
    **{f"{_PREFIX}un_{op.__name__}": partial(_unary, fn) for op, fn in _UNARY.items()},
    **{f"{_PREFIX}f_{name}": fn for name, fn in SCALAR_FUNCTIONS.items()},
}  # fmt: skip


def compile_scalar(tree: ast.Expression, names: tuple[str, ...]) -> Callable[..., Any]:
    """A function of `names` (in that order) computing a parsed, allow-listed scalar tree,
    each operation through the same checks as the walker. Only the helpers above and the
    arguments are in its namespace: no builtins."""
    import copy

    body = _ToCalls().visit(copy.deepcopy(tree.body))
    arguments = ast.arguments(
        posonlyargs=[], args=[ast.arg(n) for n in names], kwonlyargs=[], kw_defaults=[], defaults=[]
    )
    lambda_tree = ast.fix_missing_locations(ast.Expression(ast.Lambda(arguments, body)))
    return eval(compile(lambda_tree, "<expression>", "eval"), {"__builtins__": {}, **_HELPERS})


@dataclass
class _Walker:
    env: Mapping[str, Any]
    functions: Mapping[str, Callable[..., Any]]
    arrays: bool
    max_elements: int | None = None

    @property
    def limit(self) -> int:
        return MAX_RESULT_ELEMENTS if self.max_elements is None else self.max_elements

    def binary(self, node: ast.BinOp, left: Any, right: Any) -> Any:
        """An operator of the array dialect: on numbers and arrays, its result's size checked
        from the operands' shapes before NumPy builds it. A short list or tuple beside an
        array is a NumPy operand (`x * [0.5, 2.0]`); beside a number or another sequence it
        keeps Python's meaning (`(n,) * 2` is a shape) up to MAX_LITERAL elements; text never
        (`'ab' * 10**9` would build a gigabyte)."""
        left, right = (
            _sequence_operand(node, v, other) for v, other in ((left, right), (right, left))
        )
        if isinstance(left, tuple | list) or isinstance(right, tuple | list):
            return _sequence_arithmetic(node, left, right)
        if isinstance(node.op, ast.MatMult):
            _check_product("matmul", [left, right], self.limit)
            return np.matmul(left, right)
        _check_broadcast(type(node.op).__name__.lower(), [left, right], self.limit)
        return _BINARY[type(node.op)](left, right)

    def number(self, value: Any) -> Any:
        if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
            raise ExpressionError(f"an integer of {value.bit_length()} bits is too large")
        return value

    def eval(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            value = self.env[node.id]
            if value is None:
                raise ExpressionError(f"{node.id} has no value here")
            return value
        if isinstance(node, ast.BinOp):
            left, right = self.eval(node.left), self.eval(node.right)
            if not self.arrays:
                for value in (left, right):
                    if isinstance(value, bool) or not isinstance(value, int | float):
                        raise ExpressionError(f"arithmetic on {quote(value)}")
            if isinstance(node.op, ast.Pow) and isinstance(right, int) and abs(right) > 256:
                raise ExpressionError(f"exponent {right} is too large")
            if isinstance(node.op, ast.LShift) and isinstance(right, int) and right > 256:
                raise ExpressionError(f"shift by {right} is too large")
            if self.arrays:
                return self.number(self.binary(node, left, right))
            return self.number(_BINARY[type(node.op)](left, right))
        if isinstance(node, ast.UnaryOp):
            value = self.eval(node.operand)
            if not self.arrays and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise ExpressionError(f"arithmetic on {quote(value)}")
            return _UNARY[type(node.op)](value)
        if isinstance(node, ast.Call):
            name = node.func.id  # type: ignore[attr-defined]
            func = self.functions[name]
            args = [self.eval(a) for a in node.args]
            kwargs = {k.arg: self.eval(k.value) for k in node.keywords}
            if self.arrays:
                _check_result_size(name, args, kwargs, self.limit)
                if name in ("matmul", "dot", "einsum"):
                    _check_product(name, args, self.limit)
                else:
                    _check_broadcast(f"{name}()", args, self.limit)
            return self.number(func(*args, **kwargs))
        if isinstance(node, ast.Compare):
            left = self.eval(node.left)
            result: Any = True
            for op, right_node in zip(node.ops, node.comparators, strict=True):
                right = self.eval(right_node)
                if self.arrays:
                    _check_broadcast("comparison", [result, left, right], self.limit)
                result = result & _COMPARE[type(op)](left, right)
                left = right
            return result
        if isinstance(node, ast.Subscript):
            value, index = self.eval(node.value), self.eval(node.slice)
            if self.arrays:
                _check_index(value, index, self.limit)
            return value[index]
        if isinstance(node, ast.Slice):
            parts = (node.lower, node.upper, node.step)
            return slice(*(None if p is None else self.eval(p) for p in parts))
        if isinstance(node, ast.Tuple | ast.List):
            return tuple(self.eval(e) for e in node.elts)
        raise ExpressionError(f"unexpected {type(node).__name__}")  # parse() rules this out


# A reference is a few arrays the size of the kernel's. Every array an expression would build
# is estimated from its operands' shapes before NumPy builds it, and refused past a limit:
# by default MAX_RESULT_ELEMENTS; a kernel file's reference gets `array_limit` of its largest
# declared array (so `ones((20000, 20000))` beside arrays of a thousand elements is refused
# in microseconds, not after 3 GB and half a minute).
MAX_RESULT_ELEMENTS = 2**31
# The floor of a reference's limit (512 MiB of float64: an all-pairs `outer` of 8192
# elements), whatever its arrays' size ...
MIN_ARRAY_LIMIT = 2**26
# ... and how many times the kernel's largest array an intermediate may be above it.
ARRAY_LIMIT_FACTOR = 4
# Multiply-adds of one matrix product (`@`, matmul, dot, einsum) on the host: 2^44 is a
# 25,800-cube product, seconds to minutes of a threaded BLAS; past it the answer is not worth
# the wait (a 16384-cube matmul sweep stays checkable).
MAX_PRODUCT_MACS = 2**44
_ITEM_BYTES = 8  # the widest element the dialect makes (float64, int64)


def array_limit(largest: int) -> int:
    """The elements any array a reference builds may have, where the kernel's largest
    declared array has `largest` elements at that point."""
    return min(MAX_RESULT_ELEMENTS, max(MIN_ARRAY_LIMIT, ARRAY_LIMIT_FACTOR * largest))


# The longest list or tuple the array dialect builds with Python's own `+` and `*` (shapes,
# short literals): a reference has no use for more, and `(n,) * 10**9` would take gigabytes.
MAX_LITERAL = 2**16


def _sequence_operand(node: ast.BinOp, value: Any, other: Any) -> Any:
    """An operand of the array dialect's arithmetic: text refused; a short list or tuple
    beside an array made an array (NumPy's meaning); anything else as it is."""
    if isinstance(value, str | slice):
        raise ExpressionError(f"arithmetic on {quote(value)}")
    if isinstance(value, tuple | list) and isinstance(other, np.ndarray | np.generic):
        if len(value) > MAX_LITERAL:
            raise ExpressionError(f"a literal of {len(value):,} elements beside an array")
        return np.asarray(value)
    return value


def _sequence_arithmetic(node: ast.BinOp, left: Any, right: Any) -> Any:
    """Python's `+` (concatenation) and `*` (repetition) of lists and tuples, refused past
    MAX_LITERAL elements before they are built; any other operator on them refused."""

    def length(value: Any) -> int | None:
        if isinstance(value, tuple | list):
            return len(value)
        return None

    sizes = (length(left), length(right))
    if isinstance(node.op, ast.Add) and None not in sizes and type(left) is type(right):
        elements = sizes[0] + sizes[1]
    elif isinstance(node.op, ast.Mult) and sizes.count(None) == 1:
        count = right if sizes[1] is None else left
        if not isinstance(count, int | np.integer) or isinstance(count, bool):
            raise ExpressionError(f"arithmetic on {quote(left if sizes[0] else right)}")
        elements = (sizes[0] or sizes[1] or 0) * max(int(count), 0)
    else:
        raise ExpressionError(f"arithmetic on {quote(left if sizes[0] is not None else right)}")
    if elements > MAX_LITERAL:
        raise ExpressionError(
            f"a list or tuple of {elements:,} elements, more than {MAX_LITERAL:,}"
        )
    return _BINARY[type(node.op)](left, right)


def _is_numeric(value: Any) -> bool:
    return isinstance(value, np.ndarray | np.generic | int | float) and not isinstance(value, bool)


def _too_big(what: str, elements: int, limit: int) -> ExpressionError:
    size = elements * _ITEM_BYTES
    shown = f"{size / 2**30:,.1f} GiB" if size >= 2**30 else f"{size / 2**20:,.1f} MiB"
    return ExpressionError(
        f"{what} would make {elements:,} elements, more than {limit:,} ({shown} as float64)"
    )


def _elements(shape: Any) -> int:
    if isinstance(shape, int | np.integer):
        return max(0, int(shape))
    if isinstance(shape, tuple | list):
        total = 1
        for dim in shape:
            total *= max(0, int(dim)) if isinstance(dim, int | np.integer) else 1
        return total
    return 0


def _result_elements(name: str, args: list[Any], kwargs: dict[str, Any]) -> int:
    """What the array function would make, estimated from its arguments (0: not a maker)."""
    size = [int(np.size(a)) if _is_numeric(a) else 1 for a in args]
    if "shape" in kwargs:  # zeros(shape=...), ones_like(x, shape=...)
        return _elements(kwargs["shape"])
    if name in ("zeros", "ones", "full") and args:
        return _elements(args[0])
    if name == "broadcast_to" and len(args) > 1:
        return _elements(args[1])
    if name == "arange" and args and all(np.isscalar(a) for a in args):
        start, stop, step = (
            (0, args[0], 1) if len(args) == 1 else (*args[:2], args[2] if len(args) > 2 else 1)
        )
        return max(0, int(np.ceil((float(stop) - float(start)) / float(step)))) if step else 0
    if name == "outer" and len(args) == 2:
        return size[0] * size[1]
    if name in ("matmul", "dot") and len(args) == 2:
        return _product_elements(name, np.shape(args[0]), np.shape(args[1]))
    if name == "pad" and len(args) > 1 and isinstance(args[0], np.ndarray):
        return _padded_elements(np.shape(args[0]), args[1])
    if name in ("concatenate", "stack") and args and isinstance(args[0], tuple | list):
        return sum(int(np.size(a)) for a in args[0] if _is_numeric(a))
    if name == "bincount" and args and np.size(args[0]):
        return max(int(np.max(args[0])) + 1, int(kwargs.get("minlength") or 0))
    return 0


def _product_elements(name: str, a: tuple[int, ...], b: tuple[int, ...]) -> int:
    """Elements of matmul(a, b) or dot(a, b) from the operands' shapes, batches included
    (matmul broadcasts them; dot makes every pair)."""
    columns = math.prod(b[-1:]) if len(b) > 1 else 1
    if name == "matmul" and len(a) > 1 and len(b) > 1:
        return math.prod(np.broadcast_shapes(a[:-2], b[:-2])) * a[-2] * columns
    return math.prod(a[:-1]) * math.prod(b[:-2]) * columns


def _padded_elements(shape: tuple[int, ...], widths: Any) -> int:
    """Elements of pad(x, widths): each dimension grown by its two widths."""
    try:
        grown = np.broadcast_to(np.asarray(widths, dtype=object), (len(shape), 2))
        return math.prod(
            d + int(before) + int(after) for d, (before, after) in zip(shape, grown, strict=True)
        )
    except (TypeError, ValueError, OverflowError):
        return 0  # NumPy itself says what is wrong with the widths


def _check_result_size(
    name: str, args: list[Any], kwargs: dict[str, Any], limit: int | None = None
) -> None:
    limit = MAX_RESULT_ELEMENTS if limit is None else limit
    try:
        elements = _result_elements(name, args, kwargs)
    except (TypeError, ValueError, OverflowError):
        return  # NumPy itself says what is wrong with the arguments
    if elements > limit:
        raise _too_big(f"{name}()", elements, limit)


def _check_broadcast(what: str, operands: list[Any], limit: int) -> None:
    """An elementwise operation makes an array of its operands' broadcast shape: refused
    past `limit` before it is made (shapes that do not broadcast are NumPy's to report)."""
    shapes = [np.shape(v) for v in operands if isinstance(v, np.ndarray | np.generic)]
    if not shapes:
        return
    try:
        elements = math.prod(np.broadcast_shapes(*shapes))
    except ValueError:
        return
    if elements > limit:
        raise _too_big(what, elements, limit)


def _check_index(value: Any, index: Any, limit: int) -> None:
    """x[i] with index arrays makes the broadcast shape of those arrays (times the sliced
    dimensions): `x[zeros((n, n), int)]` is refused before it is gathered."""
    if not isinstance(value, np.ndarray):
        return
    parts = index if isinstance(index, tuple) else (index,)
    arrays = [np.shape(p) for p in parts if isinstance(p, np.ndarray) and p.dtype != np.bool_]
    if not arrays:
        return
    try:
        elements = math.prod(np.broadcast_shapes(*arrays))
    except ValueError:
        return
    rest = value.shape[len(parts) :] if len(parts) <= value.ndim else ()
    elements *= math.prod(rest)
    if elements > limit:
        raise _too_big("an index", elements, limit)


def _check_product(name: str, args: list[Any], limit: int) -> None:
    """A matrix product (`@`, matmul, dot, einsum): operands whose shapes do not fit are one
    line naming the shapes; a result past `limit` or a cost past MAX_PRODUCT_MACS
    multiply-adds is refused before it runs."""
    if name == "einsum":
        elements, macs = _einsum_plan(args)
    else:
        if len(args) != 2 or not all(_is_numeric(a) for a in args):
            return  # NumPy says what is wrong with the arguments
        a, b = (np.shape(x) for x in args)
        if name == "dot" and (not a or not b):
            return  # a scalar times an array: elementwise
        if not a or not b:
            raise ExpressionError(
                f"{name} takes arrays of at least one dimension, got shapes {a} and {b}"
            )
        inner = b[0] if len(b) == 1 else b[-2]
        if a[-1] != inner:
            raise ExpressionError(
                f"{name} of shapes {a} and {b}: the inner dimensions {a[-1]} and {inner} differ"
            )
        if name == "matmul" and len(a) > 2 and len(b) > 2:
            try:
                np.broadcast_shapes(a[:-2], b[:-2])
            except ValueError:
                raise ExpressionError(
                    f"{name} of shapes {a} and {b}: the batch dimensions "
                    f"{a[:-2]} and {b[:-2]} do not broadcast"
                ) from None
        elements = _product_elements(name, a, b)
        macs = elements * a[-1]
    if elements > limit:
        raise _too_big(f"{name}()", elements, limit)
    if macs > MAX_PRODUCT_MACS:
        raise ExpressionError(
            f"{name}() would take {macs:,} multiply-adds, more than {MAX_PRODUCT_MACS:,}"
        )
    if name == "einsum" and len(args) > 3:
        # Three operands or more are contracted pairwise (the greedy path NumPy takes too):
        # an intermediate of that path may be larger than the result.
        _, plan = np.einsum_path(*args, optimize="greedy")
        found = re.search(r"Largest intermediate:\s+([0-9.e+]+) elements", plan)
        largest = int(float(found.group(1))) if found else 0
        if largest > limit:
            raise _too_big("einsum()'s largest intermediate", largest, limit)


_EINSUM_TERM = re.compile(r"^[A-Za-z]*$")


def _einsum_plan(args: list[Any]) -> tuple[int, int]:
    """(result elements, multiply-adds of the naive loop) of einsum(subscripts, *operands),
    after checking the subscripts against the operands: `'ij,jk->ik'`, letters only."""
    if not args or not isinstance(args[0], str):
        raise ExpressionError("einsum takes the subscripts first, as text such as 'ij,jk->ik'")
    subscripts, operands = args[0].replace(" ", ""), args[1:]
    shown = quote(args[0])
    inputs, arrow, output = subscripts.partition("->")
    terms = inputs.split(",")
    if not all(_EINSUM_TERM.match(t) for t in [*terms, output]) or subscripts.count("->") > 1:
        raise ExpressionError(
            f"einsum subscripts {shown}: letters, commas and one -> only "
            "(such as 'ij,jk->ik'; no ...)"
        )
    if len(terms) != len(operands):
        raise ExpressionError(
            f"einsum subscripts {shown} name {len(terms)} operand(s), given {len(operands)}"
        )
    sizes: dict[str, int] = {}
    for position, (term, operand) in enumerate(zip(terms, operands, strict=True), 1):
        shape = np.shape(operand) if _is_numeric(operand) else None
        if shape is None or len(shape) != len(term):
            raise ExpressionError(
                f"einsum subscripts {shown}: operand {position} has shape "
                f"{shape}, but {term!r} names {len(term)} dimension(s)"
            )
        for letter, size in zip(term, shape, strict=True):
            if sizes.get(letter, size) != size:
                raise ExpressionError(
                    f"einsum subscripts {shown}: {letter!r} is {sizes[letter]} "
                    f"in one operand and {size} in operand {position}"
                )
            sizes[letter] = size
    if not arrow:  # implicit output: the letters used once, in order
        output = "".join(sorted(c for c in sizes if inputs.count(c) == 1))
    if len(set(output)) != len(output) or not set(output) <= set(sizes):
        raise ExpressionError(
            f"einsum subscripts {shown}: the output {output!r} must name input letters, each once"
        )
    return math.prod(sizes[c] for c in output), math.prod(sizes.values())


# -- conditions (a sweep's constraints): the same parser and walker, one more dialect -------------
MAX_CONDITION_CHARS = 500
_CONDITION_BINARY = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Div, ast.Mod)
_CONDITION_NODES: tuple[type, ...] = (
    ast.Expression, ast.Compare, ast.BinOp, ast.BoolOp, ast.UnaryOp, ast.Load, ast.And, ast.Or,
    ast.Not, ast.USub, *_CONDITION_BINARY, *_COMPARE,
)  # fmt: skip


class ConstraintError(ExpressionError):
    """A condition that cannot be evaluated at a point (division by zero, text compared with a
    number, a parameter with no value there)."""


@dataclass(frozen=True)
class Condition:
    """A condition every point of a sweep must satisfy: `block_rows <= tile`,
    `tile * block_rows <= 1024`, `dtype == 'float32' or tile < 64`."""

    text: str
    tree: ast.Expression

    @classmethod
    def parse(cls, text: Any, known_names: Iterable[str]) -> Condition:
        if not isinstance(text, str) or not text.strip():
            raise ExpressionError(
                f"expected a condition such as 'block_rows <= tile', got {quote(text)}"
            )
        if len(text) > MAX_CONDITION_CHARS:
            raise ExpressionError(f"a condition is at most {MAX_CONDITION_CHARS} characters")
        try:
            tree = _parse_tree(text.strip())
        except ExpressionError as exc:
            message = str(exc).replace("cannot parse", "cannot parse condition", 1)
            raise ExpressionError(
                message if "nested" not in message else f"condition {message}"
            ) from None
        known = set(known_names)
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                if node.id not in known:
                    raise ExpressionError(f"unknown parameter {node.id!r} in condition {text!r}")
            elif isinstance(node, ast.Constant):
                if isinstance(node.value, bool) or not isinstance(node.value, int | float | str):
                    raise ExpressionError(f"unsupported constant {node.value!r} in {text!r}")
            elif not isinstance(node, _CONDITION_NODES):
                raise ExpressionError(
                    f"{type(node).__name__} is not allowed in condition {text!r} "
                    "(use parameters, numbers, + - * / // %, comparisons, and/or/not)"
                )
        body = tree.body
        if not isinstance(body, ast.Compare | ast.BoolOp) and not (
            isinstance(body, ast.UnaryOp) and isinstance(body.op, ast.Not)
        ):
            raise ExpressionError(f"condition {text!r} must be a comparison, such as 'a <= b'")
        return cls(text=text.strip(), tree=tree)

    def holds(self, point: Mapping[str, Any]) -> bool:
        """Whether the point meets the condition; ConstraintError if it cannot be evaluated
        there."""
        try:
            return bool(_ConditionWalker(point, {}, False).eval(self.tree.body))
        except ExpressionError as exc:
            raise ConstraintError(f"condition {quote(self.text)}: {exc}") from None
        except ZeroDivisionError:
            raise ConstraintError(f"condition {quote(self.text)} divides by zero") from None
        except (OverflowError, RecursionError, MemoryError, TypeError) as exc:
            raise ConstraintError(
                f"condition {quote(self.text)} cannot be evaluated: {exc}"
            ) from None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class _ConditionWalker(_Walker):
    """The walker with a condition's rules: and/or/not, text compared for equality only,
    arithmetic on numbers only (`"ab" * 10**12` would build a terabyte of text)."""

    def value(self, node: ast.AST) -> Any:
        value = self.eval(node)
        if value is None and isinstance(node, ast.Name):
            raise ExpressionError(f"{node.id} has no value at this point")
        return value

    def eval(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Name):
            return self.env[node.id]
        if isinstance(node, ast.BinOp):
            left, right = self.value(node.left), self.value(node.right)
            if not (_is_number(left) and _is_number(right)):
                raise ExpressionError(f"arithmetic on text ({quote(left)}, {quote(right)})")
            return _BINARY[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp):
            value = self.value(node.operand)
            if isinstance(node.op, ast.Not):
                return not value
            if not _is_number(value):
                raise ExpressionError(f"minus of text ({quote(value)})")
            return -value
        if isinstance(node, ast.BoolOp):
            values = (self.eval(v) for v in node.values)
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.Compare):
            return self.compare(node)
        return super().eval(node)

    def compare(self, node: ast.Compare) -> bool:
        left = self.value(node.left)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.value(right_node)
            if isinstance(left, str) != isinstance(right, str) and not isinstance(
                op, ast.Eq | ast.NotEq
            ):
                raise ExpressionError(
                    f"compares text with a number ({quote(left)}, {quote(right)})"
                )
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
