"""The Benchmark a kernel file declares: one Launch per variant, its arrays as buffers, its
expressions evaluated at each point (see gpubench.kernelfile.declaration for the format)."""

from __future__ import annotations

import inspect
import math
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache, partial
from operator import itemgetter
from typing import Any

import numpy as np

from gpubench.errors import ConfigError, PointError, quote
from gpubench.host import usable_cpus
from gpubench.kernelfile.declaration import (
    BLOCK_LIMITS,
    GRID_LIMITS,
    Array,
    Init,
    KernelFile,
    is_kernel_file,
    load_reference_function,
    parse,
)
from gpubench.model import hostmath
from gpubench.model.benchmark import Benchmark, BufferRef, BufferSpec, Case, Launch, Point, Work
from gpubench.model.expressions import Expression, ExpressionError, array_limit

# An array beyond this is a typo, not a benchmark (and its byte count would overflow int64).
MAX_ARRAY_BYTES = 1 << 50


class KernelFileBenchmark(Benchmark):
    """A Benchmark made from a kernel file: one Launch per variant, the arrays as buffers."""

    memory_bound = True
    show_resources = True

    def __init__(self, kf: KernelFile) -> None:
        self.kf = kf
        self.name = kf.name  # type: ignore[misc]
        self.description = kf.description  # type: ignore[misc]
        self.params = kf.params  # type: ignore[misc]
        self.variants = kf.variants  # type: ignore[misc]
        self.baseline = kf.variants[0].name  # type: ignore[misc]
        self.source_file = str(kf.source)  # type: ignore[misc]
        self._scalar_names = sorted({n for a in kf.scalars for n in a.value.names})
        self._scalar_memo: dict[tuple[Any, ...], Any] = {}
        self._check_list: list[Any] | None = None

    # -- evaluation at a point -----------------------------------------------------------------
    def _scalars(self, point: Point) -> dict[str, Any]:
        """Each scalar argument as the C type the kernel receives (made once per value of
        the parameters the scalar expressions read: a dry run of 10^6 points pays per axis
        value, not per point)."""
        try:
            key = tuple(point.get(name) for name in self._scalar_names)
            found = self._scalar_memo.get(key)
        except TypeError:  # unhashable values: no memo
            key, found = None, None
        if found is not None:
            if isinstance(found, PointError):
                raise found
            return found
        out: dict[str, Any] | PointError = {}
        try:
            for scalar in self.kf.scalars:
                value = _evaluate(scalar.value, point, f"kernel.args.{scalar.name}")
                out[scalar.name] = _as_c_type(value, scalar.dtype, f"kernel.args.{scalar.name}")
        except PointError as exc:
            out = exc
        if key is not None:
            if len(self._scalar_memo) >= 1 << 16:
                self._scalar_memo.clear()
            self._scalar_memo[key] = out
        if isinstance(out, PointError):
            raise out
        return out

    def _env(self, point: Point, scalars: dict[str, Any] | None = None) -> dict[str, Any]:
        """The names expressions may use: the parameters and the scalar arguments."""
        scalars = self._scalars(point) if scalars is None else scalars
        return {**point, **{k: v.item() for k, v in scalars.items()}}

    def _shape(self, array: Array, env: dict[str, Any]) -> tuple[int, ...]:
        key = f"kernel.args.{array.name}"
        shape = []
        for dim in array.dims:
            value = _evaluate(dim, env, key)
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            if not isinstance(value, int | np.integer) or value < 1:
                raise PointError(
                    f"{key}: dimension {quote(dim.text)} is {quote(value)}, not a positive integer"
                )
            shape.append(int(value))
        nbytes = math.prod(shape) * array.dtype.itemsize
        if nbytes > MAX_ARRAY_BYTES:
            raise PointError(
                f"{key}: {array.dtype}{shape} is {nbytes:.3g} bytes, more memory than a GPU has"
            )
        return tuple(shape)

    def _dims3(
        self, exprs: tuple[Expression, ...], env: dict[str, Any], key: str, limits: tuple[int, ...]
    ) -> tuple[int, int, int]:
        values = []
        for i, expr in enumerate(exprs):
            value = _evaluate(expr, env, key)
            dimension = _as_dimension(value, limits[i])
            if dimension is None:
                raise PointError(
                    f"{key}: {quote(expr.text)} is {quote(value)}; each dimension "
                    f"must be an integer in [1, {limits[i]}]"
                )
            values.append(dimension)
        values += [1] * (3 - len(values))
        return values[0], values[1], values[2]

    def _launch(self, variant: str, point: Point, scalars: dict[str, Any] | None = None) -> Launch:
        scalars = self._scalars(point) if scalars is None else scalars
        env = self._env(point, scalars)
        grid, block, shared = self._launch_shape(variant, env)
        args = tuple(
            BufferRef(a.name) if isinstance(a, Array) else scalars[a.name] for a in self.kf.args
        )
        return Launch(variant, grid, block, args, int(shared))

    def _launch_shape(self, variant: str, env: dict[str, Any]) -> tuple[Any, Any, int]:
        """(grid, block, dynamic shared bytes) of a variant's launch, checked."""
        grid = self._dims3(self.kf.grid.get(variant) or (), env, "kernel.grid", GRID_LIMITS)
        block = self._dims3(self.kf.block.get(variant) or (), env, "kernel.block", BLOCK_LIMITS)
        if block[0] * block[1] * block[2] > 1024:
            raise PointError(
                f"kernel.block: {block} is {block[0] * block[1] * block[2]} "
                "threads; a block holds at most 1024"
            )
        shared_expr = self.kf.shared.get(variant)
        shared = 0
        if shared_expr:
            shared = _evaluate(shared_expr[0], env, "kernel.shared")
            if not isinstance(shared, int | np.integer) or not 0 <= shared < 2**31:
                raise PointError(
                    f"kernel.shared: {quote(shared_expr[0].text)} is {quote(shared)},"
                    " not a byte count"
                )
        return grid, block, int(shared)

    def _work(self, point: Point, env: dict[str, Any] | None = None) -> Work:
        env = self._env(point) if env is None else env
        values = {}
        for key, expr in self.kf.work.items():
            value = _evaluate(expr, env, f"kernel.work.{key}")
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            if not isinstance(value, int | np.integer) or value < 0:
                raise PointError(
                    f"kernel.work.{key}: {quote(expr.text)} is {quote(value)}, not a count >= 0"
                )
            values[key] = int(value)
        sizes = [
            (int(np.prod(self._shape(array, env))) * array.dtype.itemsize, array.direction)
            for array in self.kf.arrays
        ]
        if "bytes" not in values:
            # What must move at least: every input read once, every output written once (an
            # in-out array both).
            values["bytes"] = sum(size * (2 if way == "inout" else 1) for size, way in sizes)
        # Declared bytes may count re-reads (a stencil's neighbours); the arrays bound the
        # distinct bytes a run can touch, which is what the DRAM ceiling counts.
        footprint = sum(size for size, _ in sizes)
        return Work(
            values["bytes"], values.get("flops", 0), values.get("elements", 0), footprint=footprint
        )

    # -- the Benchmark contract ----------------------------------------------------------------
    def validate_point(self, point: Point) -> str | None:
        """Each check runs once per value of the names it reads (a dry run of 10^6 points
        pays per axis value where it can, not per point)."""
        try:
            env = self._env(point, self._scalars(point))
            for check, names, memo in self._checks():
                try:
                    key = tuple(env.get(name) for name in names)
                    problem = memo[key]
                except TypeError:  # values that cannot be a key
                    problem = check(env)
                except KeyError:
                    problem = check(env)
                    if len(memo) >= 1 << 16:
                        memo.clear()
                    memo[key] = problem
                if problem:
                    return problem
        except PointError as exc:
            return str(exc)
        return None

    def validate_points(self, points: list[Point]) -> tuple[int, str] | None:
        """(index, problem) of the first point that cannot run, or None. The same verdicts
        as validate_point, point by point, on a lean path: scalars and data checks once per
        distinct value of what they read, each launch shape from the compiled expressions;
        a large sweep in slices on every core (a dry run of 10^6 points in seconds). The
        message comes from validate_point."""
        workers = min(16, usable_cpus())
        if len(points) < PARALLEL_VALIDATION_FROM or workers < 3:
            return self._validate_slice(points)
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        step = -(-len(points) // workers)
        context = multiprocessing.get_context("spawn")  # never fork a process that may hold CUDA
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            jobs = [
                pool.submit(_validate_slice, str(self.kf.path), start, points[start : start + step])
                for start in range(0, len(points), step)
            ]
            found = [job.result() for job in jobs]
        return next((f for f in found if f), None)

    def _validate_slice(self, points: list[Point]) -> tuple[int, str] | None:
        checks = self._checks()
        data_check, data_names, data_memo = checks[0]
        scalar_args = {a.name for a in self.kf.scalars}
        launches = [
            (names, self._launch_checker(variant))
            for variant, (_, names, _) in zip(self.variant_names, checks[1:], strict=True)
        ]
        for index, point in enumerate(points):
            try:
                scalars = self._scalars(point)
            except PointError as exc:
                return index, str(exc)
            env = point if not scalars else None

            def value(name: str, point: Point = point, scalars: dict[str, Any] = scalars) -> Any:
                return scalars[name].item() if name in scalar_args else point.get(name)

            key = tuple(value(n) for n in data_names)
            if key not in data_memo:
                env = env or self._env(point, scalars)
                data_memo[key] = data_check(env)
            if data_memo[key] or not all(ok(*(value(n) for n in names)) for names, ok in launches):
                problem = self.validate_point(point)  # the message (and the final word)
                if problem:
                    return index, problem
        return None

    def _launch_checker(self, variant: str) -> Callable[..., bool]:
        """True where validate_point would accept the variant's launch shape: a function of
        the values of the names its expressions read (sorted), from compiled expressions."""
        grid = self.kf.grid.get(variant) or ()
        block = self.kf.block.get(variant) or ()
        shared = self.kf.shared.get(variant) or ()
        exprs = [*grid, *block, *shared]
        names = _names(exprs)
        limits = [*GRID_LIMITS[: len(grid)], *BLOCK_LIMITS[: len(block)]]
        picks = [tuple(names.index(n) for n in e._order) for e in exprs]
        functions = [e.compiled() for e in exprs]
        if any(f is None for f in functions):
            return lambda *values: False  # validate_point decides, point by point

        def ok(*values: Any) -> bool:
            if None in values:
                return False
            got = []
            for function, pick in zip(functions, picks, strict=True):
                try:
                    got.append(function(*(values[i] for i in pick)))
                except Exception:  # any failure: validate_point gives the message
                    return False
            dims = [_as_dimension(v, limit) for v, limit in zip(got, limits, strict=False)]
            if None in dims:
                return False
            if math.prod(dims[len(grid) :]) > 1024:
                return False
            if shared:
                v = got[len(limits)]
                if not isinstance(v, int | np.integer) or not 0 <= v < 2**31:
                    return False
            return True

        return ok

    def _checks(
        self,
    ) -> list[
        tuple[
            Callable[[dict[str, Any]], str | None],
            tuple[str, ...],
            dict[tuple[Any, ...], str | None],
        ]
    ]:
        """(check, the names it reads, its memo): the arrays, work and initialisers, then
        each variant's launch shape."""
        if self._check_list is None:
            kf = self.kf
            data = [
                *(d for a in kf.arrays for d in a.dims),
                *kf.work.values(),
                *(e for i in kf.init.values() for e in i.args),
            ]
            checks = [(self._data_problem, _names(data), {})]
            for variant in self.variant_names:
                launch = [
                    *(kf.grid.get(variant) or ()),
                    *(kf.block.get(variant) or ()),
                    *(kf.shared.get(variant) or ()),
                ]
                checks.append((partial(self._launch_problem, variant), _names(launch), {}))
            self._check_list = checks
        return self._check_list

    def _data_problem(self, env: dict[str, Any]) -> str | None:
        try:
            shapes = {array.name: self._shape(array, env) for array in self.kf.arrays}
            self._work(env, env)
            for array in self.kf.inputs:
                function, _ = _init_plan(array, self.kf.init.get(array.name), env)
                if function == "arange":
                    _arange_fits(array, math.prod(shapes[array.name]))
        except PointError as exc:
            return str(exc)
        return None

    def _launch_problem(self, variant: str, env: dict[str, Any]) -> str | None:
        try:
            self._launch_shape(variant, env)
        except PointError as exc:
            return str(exc)
        return None

    def defines(self, point: Point) -> dict[str, str]:
        return {macro: str(point[name]) for name, macro in self.kf.defines.items()}

    def compiler_options(self, point: Point) -> list[str]:
        return list(self.kf.options)

    def declaration_digest(self) -> str | None:
        return self.kf.digest

    def has_reference(self) -> bool:
        return bool(
            self.kf.reference_expressions or self.kf.reference_function or self.kf.reference_variant
        )

    @property
    def reference_variant(self) -> str | None:  # type: ignore[override]
        return self.kf.reference_variant

    def input_specs(self, point: Point) -> dict[str, BufferSpec]:
        env = self._env(point)
        return {a.name: BufferSpec(self._shape(a, env), a.dtype) for a in self.kf.inputs}

    def inputs(self, point: Point, rng: np.random.Generator) -> dict[str, np.ndarray]:
        env = self._env(point)
        out = {}
        for array in self.kf.inputs:
            shape = self._shape(array, env)
            init = self.kf.init.get(array.name)
            out[array.name] = _make(array, shape, init, point, rng)
        return out

    def case(self, variant: str, point: Point, device: Any, inputs: dict[str, np.ndarray]) -> Case:
        env = self._env(point)
        outputs = {
            a.name: BufferSpec(
                self._shape(a, env), a.dtype, init="input" if a.direction == "inout" else "poison"
            )
            for a in self.kf.outputs
        }
        return Case(
            steps=[self._launch(variant, point)],
            outputs=outputs,
            work=self._work(point),
            tolerance=self.kf.tolerance,
        )

    @property
    def reference_params(self) -> frozenset[str] | None:  # type: ignore[override]
        """The parameters the answer reads: those its expressions and the outputs' shapes
        name, directly or through a scalar argument; None for a reference function (it may
        read any)."""
        kf = self.kf
        if kf.reference_function:
            return None
        names = {n for e in kf.reference_expressions.values() for n in e.names}
        names |= {n for a in kf.outputs for dim in a.dims for n in dim.names}
        return self._params_read(names)

    @property
    def input_params(self) -> frozenset[str]:  # type: ignore[override]
        """The parameters the inputs read: their shapes' expressions (directly or through a
        scalar argument) and their init() arguments."""
        kf = self.kf
        names = {n for a in kf.inputs for dim in a.dims for n in dim.names}
        names |= {n for init in kf.init.values() for arg in init.args for n in arg.names}
        return self._params_read(names)

    def _params_read(self, names: set[str]) -> frozenset[str]:
        """The parameters among `names`, and those a scalar argument among them reads."""
        params = {p.name for p in self.params}
        through = {a.name: set(a.value.names) for a in self.kf.scalars}
        reads = {n for n in names if n in params}
        for name in names & through.keys():
            reads |= through[name] & params
        return frozenset(reads)

    def reference(
        self, computes: str, point: Point, inputs: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        env = self._env(point)
        shapes = {a.name: self._shape(a, env) for a in self.kf.outputs}
        # No array the reference builds may outgrow the kernel's own arrays by much.
        limit = array_limit(max(math.prod(self._shape(a, env)) for a in self.kf.arrays))
        fast = self._elementwise_reference(env, inputs, shapes, limit)
        if fast is not None:
            return fast
        for name, array in inputs.items():
            env[name] = _upcast(array)
        if self.kf.reference_function:
            file, name = self.kf.reference_function
            function = load_reference_function(file, name, where=str(self.kf.path))
            try:
                signature = inspect.signature(function)
                takes_all = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
                given = (
                    env
                    if takes_all
                    else {k: v for k, v in env.items() if k in signature.parameters}
                )
                raw = function(**given)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # the user's function (sys.exit too): one line
                message = " ".join(str(exc).split())[:300]
                raise PointError(
                    f"kernel.reference: {name}() failed: {type(exc).__name__}: {message}"
                ) from None
            if not isinstance(raw, dict):
                raw = {self.kf.outputs[0].name: raw} if len(self.kf.outputs) == 1 else raw
            if not isinstance(raw, dict):
                raise PointError(f"kernel.reference: {name}() must return a dict of outputs")
        else:
            raw = {}
            for name, expr in self.kf.reference_expressions.items():
                try:
                    raw[name] = expr.evaluate(env, max_elements=limit)
                except ExpressionError as exc:
                    raise PointError(f"kernel.reference.{name}: {exc}") from None
        out = {}
        for array in self.kf.outputs:
            if array.name not in raw:
                raise PointError(f"kernel.reference: no value for output {array.name!r}")
            out[array.name] = _conform(raw[array.name], shapes[array.name], array)
        return out

    def _elementwise_reference(
        self,
        env: dict[str, Any],
        inputs: dict[str, np.ndarray],
        shapes: dict[str, tuple[int, ...]],
        limit: int,
    ) -> dict[str, np.ndarray] | None:
        """The reference of expressions that work element by element on arrays of the
        output's shape, computed in slices on every core (the inputs upcast a slice at a
        time); None where that does not apply (the one-call path then decides)."""
        expressions = self.kf.reference_expressions
        outputs = {a.name: a for a in self.kf.outputs}
        if self.kf.reference_function or set(expressions) != set(outputs):
            return None
        out: dict[str, np.ndarray] = {}
        for name, expr in expressions.items():
            array, shape = outputs[name], shapes[name]
            arrays = sorted(n for n in expr.names if n in inputs)
            if (
                not arrays
                or not expr.elementwise
                or not np.issubdtype(array.dtype, np.floating)
                or any(inputs[n].shape != shape for n in arrays)
            ):
                return None

            def one(
                *pieces: np.ndarray,
                expr: Expression = expr,
                arrays: list[str] = arrays,
                key: str = name,
            ) -> np.ndarray:
                scope = {**env, **{n: _upcast(p) for n, p in zip(arrays, pieces, strict=True)}}
                try:
                    return expr.evaluate(scope, max_elements=limit)
                except ExpressionError as exc:
                    raise PointError(f"kernel.reference.{key}: {exc}") from None

            result = np.empty(shape, np.float64)
            try:
                hostmath.elementwise(one, [inputs[n] for n in arrays], result)
            except (TypeError, ValueError):  # not numbers, or a shape of its own: the one-call path
                return None
            out[name] = result
        return out

    def dry_run_problems(self, points: list[Point]) -> list[str]:
        """Compute the reference once, at the smallest point, so a wrong shape or a function
        NumPy refuses shows up before the GPU is touched."""
        text = self.kf.source.read_text(errors="replace")
        for variant in self.variant_names:
            if not re.search(rf"\b{variant}\s*\(", text):
                return [
                    f"kernel.variants: {variant!r} does not appear in {self.kf.source.name} "
                    '(an extern "C" __global__ function of that name)'
                ]
        if not (self.kf.reference_expressions or self.kf.reference_function):
            return []

        # The shapes depend on these parameters only: one size per distinct set of values
        # (keys made in C by itemgetter: a dry run of 10^6 points pays microseconds each).
        names = sorted(
            (set(_names([d for a in self.kf.arrays for d in a.dims])) | set(self._scalar_names))
            & set(points[0])
        )
        representatives: dict[Any, Point] = {}
        if names:
            for key, point in zip(map(itemgetter(*names), points), points, strict=True):
                representatives.setdefault(key, point)
        else:
            representatives[()] = points[0]

        def size(point: Point) -> int:
            env = self._env(point)
            return sum(math.prod(self._shape(a, env)) * a.dtype.itemsize for a in self.kf.arrays)

        smallest = min(representatives.values(), key=size)
        if size(smallest) > 256 << 20:
            return []
        shown = ", ".join(f"{k}={v}" for k, v in smallest.items())
        try:
            with _time_bound(DRY_RUN_REFERENCE_LIMIT_S):
                inputs = self.inputs(smallest, np.random.default_rng(0))
                self.reference("default", smallest, inputs)
        except PointError as exc:
            return [f"{exc} (at {shown})"]
        except TimeoutError as exc:  # outside the user's function: inputs, expressions
            return [f"kernel.reference: {exc} (at {shown})"]
        return []


# How long a dry run waits for the reference at the smallest point. A function that never
# returns would hold the dry run forever; a real run's worker is killed at time_limit_s.
DRY_RUN_REFERENCE_LIMIT_S = 20.0


@contextmanager
def _time_bound(seconds: float) -> Iterator[None]:
    """Raise TimeoutError inside the block after `seconds` (Python code only: a single long
    NumPy call finishes first). Where no timer signal can be set (another thread, Windows),
    the block runs unbounded."""
    if (
        not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise TimeoutError(f"no answer within {seconds:g} s (a dry run's bound on the reference)")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# Kernel-file sweeps at least this large are validated in slices in worker processes.
PARALLEL_VALIDATION_FROM = 200_000


def _validate_slice(path: str, start: int, points: list[Point]) -> tuple[int, str] | None:
    """A worker's slice: the first problem in it, indexed in the whole sweep."""
    found = load_benchmark(path)._validate_slice(points)
    return (start + found[0], found[1]) if found else None


def _as_dimension(value: Any, limit: int) -> int | None:
    """A grid or block dimension (a whole float counts), or None where it is none."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int | np.integer) or not 1 <= value <= limit:
        return None
    return int(value)


def _names(expressions: list[Expression]) -> tuple[str, ...]:
    return tuple(sorted({name for expr in expressions for name in expr.names}))


def _upcast(array: np.ndarray) -> np.ndarray:
    """Floats in float64: the reference is computed more exactly than the kernel can."""
    return array.astype(np.float64) if np.issubdtype(array.dtype, np.floating) else array


def _evaluate(expr: Expression, env: dict[str, Any], key: str) -> Any:
    try:
        value = expr.evaluate(env)
    except ExpressionError as exc:
        raise PointError(f"{key}: {exc}") from None
    return value.item() if isinstance(value, np.generic) else value


def _as_c_type(value: Any, dtype: np.dtype, key: str) -> np.generic:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PointError(f"{key}: {quote(value)} is not a number")
    if isinstance(value, float) and not math.isfinite(value):  # 1e400 reads as infinity
        raise PointError(f"{key}: {quote(value)} is not a finite number")
    if np.issubdtype(dtype, np.integer) or dtype == np.bool_:
        if isinstance(value, float):
            if not value.is_integer():
                raise PointError(f"{key}: {value} is not an integer ({dtype})")
            value = int(value)
        if dtype == np.bool_:
            return np.bool_(value)
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise PointError(f"{key}: {value} does not fit in {dtype} [{info.min}, {info.max}]")
        return dtype.type(value)
    with np.errstate(over="ignore"):
        converted = dtype.type(value)
    if not np.isfinite(converted) and np.isfinite(value):
        raise PointError(f"{key}: {value} overflows {dtype}")
    return converted


def _init_plan(array: Array, init: Init | None, point: Point) -> tuple[str, list[Any]]:
    """How `array` is filled at `point`: the function and its arguments, checked."""
    key = f"kernel.init.{array.name}"
    dtype = array.dtype
    integer = np.issubdtype(dtype, np.integer) or dtype == np.bool_
    function = init.function if init else ("integers" if integer else "uniform")
    args = [_evaluate(a, point, key) for a in init.args] if init else []
    for value in args:
        # Not a number, NaN, infinity, or an integer past any double (2^1024): no bound of
        # any array type (and NumPy's isfinite refuses such an integer with a TypeError).
        number = not isinstance(value, bool) and isinstance(value, int | float)
        if not number or abs(value) > sys.float_info.max or not math.isfinite(value):
            raise PointError(f"{key}: {function}() argument {quote(value)} is not a finite number")
    if function == "uniform":
        low, high = {0: (1.0, 2.0), 1: (0.0, args[0] if args else 0), 2: tuple(args)}[len(args)]
        if not low < high:
            raise PointError(f"{key}: uniform({low}, {high}) is an empty range")
        _fits(dtype, f"{key}: uniform({low}, {high})", low, high)
        return function, [low, high]
    if function == "normal":
        mean, std = (args + [0.0, 1.0][len(args) :])[:2]
        if std < 0:
            raise PointError(f"{key}: normal({mean}, {std}): a negative standard deviation")
        # Eight deviations out: a draw past it has odds of about 1e-15.
        _fits(dtype, f"{key}: normal({mean}, {std})", abs(mean) + 8 * std)
        return function, [mean, std]
    if function == "integers":
        if integer:
            limits = (
                (0, 2)
                if dtype == np.bool_
                else (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max) + 1)
            )
        else:  # the integers the array's float type holds exactly (2^11 for float16)
            exact = 2 ** (np.finfo(dtype).nmant + 1)
            limits = (-exact, exact)
        bounds = {0: (0, min(100, limits[1])), 1: (0, args[0] if args else 0), 2: tuple(args)}
        low, high = bounds[len(args)]
        if not all(float(v).is_integer() for v in (low, high)):
            raise PointError(f"{key}: integers({low}, {high}) takes integers")
        low, high = int(low), int(high)
        if not limits[0] <= low < high <= limits[1]:
            raise PointError(
                f"{key}: integers({low}, {high}) is empty or outside {dtype} "
                f"[{limits[0]}, {limits[1]})"
            )
        return function, [low, high]
    if function == "full":  # 300 in an int8 would wrap to 44, 2.5 in an int32 become 2
        return function, [_as_c_type(args[0], dtype, f"{key}: full({args[0]})").item()]
    return function, args


def _arange_fits(array: Array, size: int) -> None:
    """0, 1, ..., size - 1 in an integer array: refused where it would wrap around."""
    dtype = array.dtype
    if dtype == np.bool_ or np.issubdtype(dtype, np.integer):
        top = 1 if dtype == np.bool_ else int(np.iinfo(dtype).max)
        if size - 1 > top:
            raise PointError(
                f"kernel.init.{array.name}: arange() counts to {size - 1}, past "
                f"{dtype}'s largest value {top}"
            )


def _fits(dtype: np.dtype, where: str, *values: float) -> None:
    """Refuse a float range the array's type cannot hold (uniform(0, 1e6) in float16 is
    mostly infinity)."""
    largest = float(np.finfo(dtype).max)
    for value in values:
        if abs(value) > largest:
            raise PointError(f"{where}: {value} is outside {dtype}'s range (±{largest:.6g})")


def _make(
    array: Array, shape: tuple[int, ...], init: Init | None, point: Point, rng: np.random.Generator
) -> np.ndarray:
    """Fresh values for an input, made in its own type where NumPy can (a 2^28-element
    float32 input need not pass through float64)."""
    dtype = array.dtype
    function, args = _init_plan(array, init, point)
    size = int(np.prod(shape))
    native = dtype if dtype in (np.float32, np.float64) else np.dtype(np.float64)
    if function == "uniform":
        low, high = args
        values = rng.random(size, dtype=native)
        hostmath.scale_shift(values, native.type(high - low), native.type(low))
    elif function == "normal":
        values = rng.standard_normal(size, dtype=native)
        hostmath.scale_shift(values, native.type(args[1]), native.type(args[0]))
    elif function == "integers":
        integer = np.issubdtype(dtype, np.integer) or dtype == np.bool_
        values = rng.integers(
            args[0], args[1], size, dtype=dtype if integer else np.int64, endpoint=False
        )
    elif function == "zeros":
        values = np.zeros(size, dtype)
    elif function == "ones":
        values = np.ones(size, dtype)
    elif function == "full":
        values = np.full(size, args[0], dtype)
    else:  # arange
        _arange_fits(array, size)
        values = np.arange(size)
    with np.errstate(all="ignore"):
        return values.astype(dtype, copy=False).reshape(shape)


def _conform(value: Any, shape: tuple[int, ...], array: Array) -> np.ndarray:
    """The reference as an array of the output's shape (a scalar broadcast), in float64 for
    floating outputs and int64/uint64 for integer ones."""
    key = f"kernel.reference.{array.name}"
    try:
        result = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise PointError(f"{key}: not an array: {exc}") from None
    if result.dtype == object or not (
        np.issubdtype(result.dtype, np.number) or result.dtype == np.bool_
    ):
        raise PointError(f"{key}: the reference is {result.dtype}, not numbers")
    if result.shape != shape:
        if result.size == int(np.prod(shape)) and result.ndim == 1:
            result = result.reshape(shape)
        else:
            try:
                result = np.broadcast_to(result, shape)
            except ValueError:
                raise PointError(
                    f"{key}: the reference has shape {result.shape}; the output "
                    f"is {array.dtype}{list(shape)}"
                ) from None
    if np.issubdtype(array.dtype, np.floating):
        return np.ascontiguousarray(result, dtype=np.float64)
    if np.issubdtype(result.dtype, np.floating) and (
        not np.all(np.isfinite(result)) or not np.array_equal(result, np.round(result))
    ):
        raise PointError(f"{key}: the reference has fractions; {array.name} is {array.dtype}")
    kind = np.uint64 if array.dtype == np.uint64 else np.int64
    return np.ascontiguousarray(result, dtype=kind)


@cache
def load_benchmark(path: str) -> KernelFileBenchmark:
    """The Benchmark a kernel file declares (cached per path: a sweep asks many times)."""
    from gpubench.formats.yaml_file import read_document

    data = read_document(path)
    if not is_kernel_file(data):
        raise ConfigError(
            "has no `kernel:` section (a sweep file names a `suite:` instead; "
            "see docs/kernel-files.md)",
            source=path,
        )
    return benchmark_from(data, path)


# Kernel files parsed in this process, by resolved path and content: the sweep's config and
# every later lookup of the suite share one parse (and its compiled expressions).
_PARSED: dict[tuple[str, str], KernelFileBenchmark] = {}


def benchmark_from(data: dict[str, Any], source: str) -> KernelFileBenchmark:
    """The Benchmark of a kernel file's content, parsed once per file and content."""
    import hashlib
    import json
    from pathlib import Path

    content = json.dumps(data, sort_keys=True, default=str).encode()
    key = (str(Path(source).resolve()), hashlib.sha256(content).hexdigest())
    if key not in _PARSED:
        _PARSED[key] = KernelFileBenchmark(parse(data, source))
    return _PARSED[key]
