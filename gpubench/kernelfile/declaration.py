"""Your own kernel from a YAML file and a .cu file: the file's `kernel:` section becomes a
Benchmark, its `params:` the sweep.

    kernel:
      source: saxpy.cu
      variants: [saxpy, saxpy_vec4]
      args:
        - y: inout float32[n]
        - x: in float32[n]
        - a: float32 = 2.5
        - n: uint32 = n
      grid: ceil_div(n, block)
      block: block
      defines: [block]
      reference: a * x + y
    params:
      n: [1048576, 16777216]
      block: [128, 256]

Every expression goes through `gpubench.model.expressions` (nothing is eval-ed); every mistake is a
ConfigError naming the file, the key and the expression.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gpubench.errors import ConfigError, quote
from gpubench.model.benchmark import (
    Param,
    Tolerance,
    Variant,
)
from gpubench.model.expressions import Expression, ExpressionError

KERNEL_KEYS = (
    "source", "name", "variants", "args", "grid", "block", "shared", "defines", "options",
    "init", "reference", "work", "tolerance",
)  # fmt: skip
DIRECTIONS = ("in", "out", "inout")

# C spellings and NumPy names of the types kernels take.
_C_TYPES = {
    "half": "float16", "__half": "float16", "float": "float32", "double": "float64",
    "char": "int8", "signed char": "int8", "unsigned char": "uint8", "short": "int16",
    "unsigned short": "uint16", "int": "int32", "unsigned": "uint32", "unsigned int": "uint32",
    "long long": "int64", "unsigned long long": "uint64", "size_t": "uint64", "bool": "bool",
}  # fmt: skip
_NUMPY_TYPES = "float16 float32 float64 int8 int16 int32 int64 uint8 uint16 uint32 uint64"
TYPES: dict[str, np.dtype] = {
    **{name: np.dtype(name) for name in _NUMPY_TYPES.split()},
    **{c_name: np.dtype(numpy_name) for c_name, numpy_name in _C_TYPES.items()},
}
_TYPE_PATTERN = "|".join(sorted((re.escape(t) for t in TYPES), key=len, reverse=True))
ARRAY_ARG = re.compile(
    rf"^(?P<direction>in|out|inout)\s+(?P<type>{_TYPE_PATTERN})\s*(?P<dims>\[.*\])$"
)
SCALAR_ARG = re.compile(rf"^(?P<type>{_TYPE_PATTERN})\s*(?:=\s*(?P<value>.+))?$")
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
OPTION = re.compile(r"^-[-A-Za-z0-9_=.,:+/]+$")
# nvcc options that would write where gpubench does not choose, run what was built, swap or
# instruct the host compiler or linker, or read more options from a file: a kernel file
# names compile flags, never actions. Matched on the name before any `=`.
REFUSED_OPTIONS = frozenset(
    {
        "-o",
        "--output-file",
        "-odir",
        "--output-directory",
        "-run",
        "--run",
        "-run-args",
        "--run-args",
        "-ccbin",
        "--compiler-bindir",
        "-Xcompiler",
        "--compiler-options",
        "-Xlinker",
        "--linker-options",
        "-Xnvlink",
        "--nvlink-options",
        "-MF",
        "--dependency-output",
        "-optf",
        "--options-file",
        "-keep",
        "--keep",
        "-keep-dir",
        "--keep-dir",
        "-save-temps",
        "--save-temps",
        "-dryrun",
        "--dryrun",
    }
)
# The most bytes of a kernel file's .cu source: real sources are kilobytes; a larger file
# is refused by its size before it is read (or handed to nvcc).
MAX_SOURCE_BYTES = 8 * 2**20
MACRO = IDENTIFIER

INIT_FUNCTIONS = ("uniform", "normal", "integers", "zeros", "ones", "full", "arange")
# (fewest, most) positional arguments of each init function.
INIT_ARGUMENTS = {
    "uniform": (0, 2),
    "normal": (0, 2),
    "integers": (1, 2),
    "zeros": (0, 0),
    "ones": (0, 0),
    "full": (1, 1),
    "arange": (0, 0),
}
GRID_LIMITS = (2**31 - 1, 65535, 65535)
BLOCK_LIMITS = (1024, 1024, 64)


@dataclass(frozen=True)
class Array:
    name: str
    direction: str
    dtype: np.dtype
    dims: tuple[Expression, ...]


@dataclass(frozen=True)
class Scalar:
    name: str
    dtype: np.dtype
    value: Expression


@dataclass(frozen=True)
class Init:
    function: str
    args: tuple[Expression, ...]
    text: str


@dataclass(frozen=True)
class PerVariant:
    """An expression (or a list of 1-3 for a grid or block) for every variant, with
    per-variant overrides."""

    default: tuple[Expression, ...] | None
    overrides: dict[str, tuple[Expression, ...]]

    def get(self, variant: str) -> tuple[Expression, ...] | None:
        return self.overrides.get(variant, self.default)


@dataclass
class KernelFile:
    """The `kernel:` section of a file, parsed and checked."""

    path: Path
    source: Path
    name: str
    description: str
    variants: tuple[Variant, ...]
    params: tuple[Param, ...]
    args: tuple[Array | Scalar, ...]
    grid: PerVariant
    block: PerVariant
    shared: PerVariant
    defines: dict[str, str]  # param → macro
    options: tuple[str, ...]
    init: dict[str, Init]
    reference_expressions: dict[str, Expression] = field(default_factory=dict)
    reference_function: Any = None
    reference_variant: str | None = None
    work: dict[str, Expression] = field(default_factory=dict)
    tolerance: Tolerance | None = None
    digest: str = ""

    @property
    def arrays(self) -> list[Array]:
        return [a for a in self.args if isinstance(a, Array)]

    @property
    def scalars(self) -> list[Scalar]:
        return [a for a in self.args if isinstance(a, Scalar)]

    @property
    def outputs(self) -> list[Array]:
        return [a for a in self.arrays if a.direction != "in"]

    @property
    def inputs(self) -> list[Array]:
        return [a for a in self.arrays if a.direction != "out"]


# -- parsing ---------------------------------------------------------------------------------
class _Parser:
    def __init__(self, path: Path, source: str) -> None:
        self.path = path
        self.where = source

    def error(self, message: str, key: str) -> ConfigError:
        return ConfigError(message, source=self.where, key=key)

    def expression(
        self, text: Any, known: set[str], key: str, *, arrays: bool = False
    ) -> Expression:
        try:
            return Expression.parse(text, known, arrays=arrays)
        except ExpressionError as exc:
            raise self.error(f"{exc}{_yaml_hint(text)}", key) from None

    def dims(self, text: str, known: set[str], key: str) -> tuple[Expression, ...]:
        # "[n, 2 * m]" is a list expression: its elements are the dimensions.
        try:
            tree = ast.parse(text, mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            raise self.error(f"cannot read the dimensions {quote(text)}", key) from None
        if not isinstance(tree.body, ast.List) or not 1 <= len(tree.body.elts) <= 8:
            raise self.error(f"expected 1 to 8 dimensions in brackets, got {quote(text)}", key)
        return tuple(
            self.expression(ast.get_source_segment(text, e), known, key) for e in tree.body.elts
        )

    def variants(self, raw: Any) -> tuple[Variant, ...]:
        key = "kernel.variants"
        if isinstance(raw, str):
            raw = [raw]
        if isinstance(raw, dict):
            items = list(raw.items())
        elif isinstance(raw, list):
            items = [(name, "") for name in raw]
        else:
            raise self.error(
                "expected a list of kernel names (the first is the baseline), or a mapping "
                f"name: what it shows; got {quote(raw)}",
                key,
            )
        if not items:
            raise self.error("name at least one kernel", key)
        out = []
        for i, (name, help_text) in enumerate(items):
            if not isinstance(name, str) or not IDENTIFIER.match(name):
                raise self.error(
                    f"{quote(name)} is not a kernel name (a C identifier)", f"{key}[{i}]"
                )
            if not isinstance(help_text, str | None):
                raise self.error(f"expected a description, got {quote(help_text)}", f"{key}.{name}")
            out.append(Variant(name, help_text or "", computes="default"))
        names = [v.name for v in out]
        if len(set(names)) != len(names):
            raise self.error(f"a kernel is listed twice: {names}", key)
        return tuple(out)

    def args(self, raw: Any, params: set[str]) -> tuple[Array | Scalar, ...]:
        key = "kernel.args"
        if not isinstance(raw, list) or not raw:
            raise self.error(
                "expected the kernel's arguments in order, as a list of `name: in float32[n]`"
                f" or `name: uint32 = n`; got {quote(raw)}",
                key,
            )
        out: list[Array | Scalar] = []
        seen: set[str] = set()
        for i, item in enumerate(raw):
            where = f"{key}[{i}]"
            if not isinstance(item, dict) or len(item) != 1:
                raise self.error(f"expected one `name: declaration`, got {quote(item)}", where)
            ((name, text),) = item.items()
            if not isinstance(name, str) or not IDENTIFIER.match(name):
                raise self.error(f"{quote(name)} is not an argument name (a C identifier)", where)
            where = f"{where}.{name}"
            if name in seen:
                raise self.error(f"argument {name!r} is declared twice", where)
            seen.add(name)
            if isinstance(text, bool) or not isinstance(text, str):
                raise self.error(
                    f"expected a declaration such as `in float32[n]` or "
                    f"`uint32 = n`, got {quote(text)}",
                    where,
                )
            out.append(self.arg(name, " ".join(text.split()), params, where))
        if not any(isinstance(a, Array) and a.direction != "in" for a in out):
            raise self.error("no output: declare at least one array `out` or `inout`", key)
        return tuple(out)

    def arg(self, name: str, text: str, params: set[str], where: str) -> Array | Scalar:
        """One declaration, `in float32[n]` or `uint32 = n` (a scalar parameter may leave out
        its value: it is the parameter's)."""
        array = ARRAY_ARG.match(text)
        scalar = SCALAR_ARG.match(text)
        if array:
            if name in params:
                raise self.error(f"array {name!r} has the name of a parameter", where)
            dims = self.dims(array["dims"], params, where)
            return Array(name, array["direction"], TYPES[array["type"]], dims)
        if scalar:
            value = scalar["value"]
            if value is None:
                if name not in params:
                    raise self.error(
                        f"scalar {name!r} has no value: write `{text} = EXPRESSION`, or "
                        f"add a parameter {name!r}",
                        where,
                    )
                value = name
            return Scalar(name, TYPES[scalar["type"]], self.expression(value, params, where))
        first = text.split(" ", 1)[0]
        if first in DIRECTIONS and "[" not in text:
            why = f"an array needs its dimensions: `{text}[n]`"
        elif first in DIRECTIONS or "[" in text:
            why = "an array is `in|out|inout TYPE[dims]`"
        else:
            why = "a scalar is `TYPE = expression`"
        raise self.error(
            f"cannot read {quote(text)}: {why}; types: {', '.join(sorted(TYPES))}", where
        )

    def per_variant(
        self,
        raw: Any,
        key: str,
        known: set[str],
        variants: tuple[str, ...],
        *,
        dims: bool,
        required: bool,
    ) -> PerVariant:
        def one(value: Any, where: str) -> tuple[Expression, ...]:
            if dims and isinstance(value, str):
                value = _top_level_parts(value)
            if isinstance(value, list) and len(value) == 1:
                value = value[0]
            if isinstance(value, list):
                if not dims or not 1 <= len(value) <= 3:
                    raise self.error(
                        f"expected {'1 to 3 expressions' if dims else 'one expression'}"
                        f", got {quote(value)}",
                        where,
                    )
                return tuple(
                    self.expression(v, known, f"{where}[{i}]") for i, v in enumerate(value)
                )
            return (self.expression(value, known, where),)

        if raw is None:
            if required:
                raise self.error("missing: an expression over the parameters", key)
            return PerVariant(None, {})
        if not isinstance(raw, dict):
            return PerVariant(one(raw, key), {})
        overrides: dict[str, tuple[Expression, ...]] = {}
        default = None
        for name, value in raw.items():
            if name == "default":
                default = one(value, f"{key}.default")
            elif name in variants:
                overrides[name] = one(value, f"{key}.{name}")
            else:
                from gpubench.errors import did_you_mean

                raise self.error(
                    f"{quote(name)} is not a variant{did_you_mean(str(name), variants)}"
                    f" (keys: the variants, and default)",
                    f"{key}.{name}",
                )
        missing = [v for v in variants if v not in overrides]
        if required and default is None and missing:
            raise self.error(f"no value for {', '.join(missing)}: add a `default:`", key)
        return PerVariant(default, overrides)

    def defines(self, raw: Any, params: set[str]) -> dict[str, str]:
        key = "kernel.defines"
        if raw is None:
            return {}
        if isinstance(raw, str):
            raw = [raw]
        if isinstance(raw, list):
            for i, name in enumerate(raw):
                if not isinstance(name, str):
                    raise self.error(f"expected a parameter name, got {quote(name)}", f"{key}[{i}]")
            raw = {name: str(name).upper() for name in raw}
        if not isinstance(raw, dict):
            raise self.error(
                f"expected a list of parameters (passed as -DNAME=value, the name "
                f"upper-cased) or a mapping param: MACRO; got {quote(raw)}",
                key,
            )
        for name, macro in raw.items():
            if name not in params:
                from gpubench.errors import did_you_mean

                raise self.error(
                    f"{quote(name)} is not a parameter{did_you_mean(str(name), sorted(params))}",
                    f"{key}.{name}",
                )
            if not isinstance(macro, str) or not MACRO.match(macro):
                raise self.error(f"{quote(macro)} is not a macro name", f"{key}.{name}")
        return dict(raw)

    def options(self, raw: Any) -> tuple[str, ...]:
        key = "kernel.options"
        if raw is None:
            return ()
        if isinstance(raw, str):
            raw = raw.split()
        if not isinstance(raw, list):
            raise self.error(f"expected a list of nvcc options, got {quote(raw)}", key)
        for i, option in enumerate(raw):
            if not isinstance(option, str) or not OPTION.match(option):
                raise self.error(
                    f"{quote(option)} is not an nvcc option (such as --use_fast_math or -lineinfo)",
                    f"{key}[{i}]",
                )
            if _refused_option(option):
                raise self.error(
                    f"{quote(option)} is not allowed: gpubench chooses nvcc's "
                    "output and never runs it (output, run, host compiler, "
                    "linker and options-file flags are refused)",
                    f"{key}[{i}]",
                )
        return tuple(raw)

    def init(self, raw: Any, arrays: list[Array], params: set[str]) -> dict[str, Init]:
        key = "kernel.init"
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            raise self.error(
                f"expected a mapping array: uniform(lo, hi) | normal(mean, std) | "
                f"integers(lo, hi) | zeros() | ones() | full(v) | arange(); got "
                f"{quote(raw)}",
                key,
            )
        by_name = {a.name: a for a in arrays}
        out = {}
        for name, text in raw.items():
            where = f"{key}.{name}"
            array = by_name.get(name)
            if array is None:
                from gpubench.errors import did_you_mean

                raise self.error(
                    f"{quote(name)} is not an array argument"
                    f"{did_you_mean(str(name), list(by_name))}",
                    where,
                )
            if array.direction == "out":
                raise self.error(
                    f"{quote(name)} is not an `in` or `inout` array (an `out` array "
                    "starts poisoned, so an element never written fails)",
                    where,
                )
            out[name] = self.init_call(text, array, params, where)
        return out

    def init_call(self, text: Any, array: Array, params: set[str], where: str) -> Init:
        """One array's initial contents, a call such as `uniform(-1, 1)`."""
        try:
            body = ast.parse(str(text).strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            body = None
        function = (
            body.func.id if isinstance(body, ast.Call) and isinstance(body.func, ast.Name) else None
        )
        if function not in INIT_FUNCTIONS or not isinstance(text, str):
            raise self.error(
                f"expected one of {', '.join(f + '()' for f in INIT_FUNCTIONS)}"
                f", got {quote(text)}{_yaml_hint(text)}",
                where,
            )
        fewest, most = INIT_ARGUMENTS[function]
        if body.keywords or not fewest <= len(body.args) <= most:
            raise self.error(
                f"{function}() takes {fewest} to {most} positional arguments, got {quote(text)}",
                where,
            )
        integer = np.issubdtype(array.dtype, np.integer) or array.dtype == np.bool_
        if integer and function in ("uniform", "normal"):
            raise self.error(
                f"{function}() makes floats; {array.name} is {array.dtype}: use integers(lo, hi)",
                where,
            )
        args = tuple(
            self.expression(ast.get_source_segment(str(text).strip(), a), params, where)
            for a in body.args
        )
        return Init(function, args, str(text))

    def reference(self, raw: Any, kf: KernelFile) -> None:
        key = "kernel.reference"
        if raw is None:
            return
        outputs = [a.name for a in kf.outputs]
        names = {p.name for p in kf.params} | {a.name for a in kf.args}
        if isinstance(raw, str) and raw.startswith("variant:"):
            name = raw.split(":", 1)[1].strip()
            variants = [v.name for v in kf.variants]
            if name not in variants:
                from gpubench.errors import did_you_mean

                raise self.error(
                    f"{quote(name)} is not one of the variants{did_you_mean(name, variants)}", key
                )
            kf.reference_variant = name
            return
        if isinstance(raw, str) and re.match(r"^[^\s:]+\.py:[A-Za-z_][A-Za-z0-9_]*$", raw):
            file, function = raw.rsplit(":", 1)
            kf.reference_function = (str((self.path.parent / file).resolve()), function)
            load_reference_function(*kf.reference_function, where=self.where)
            return
        if isinstance(raw, dict):
            for name, text in raw.items():
                if name not in outputs:
                    raise self.error(
                        f"{quote(name)} is not an `out` or `inout` array (outputs: "
                        f"{', '.join(outputs)})",
                        f"{key}.{name}",
                    )
                kf.reference_expressions[name] = self.expression(
                    text, names, f"{key}.{name}", arrays=True
                )
            missing = [n for n in outputs if n not in raw]
            if missing:
                raise self.error(f"no reference for {', '.join(missing)}", key)
            return
        if len(outputs) != 1:
            raise self.error(
                f"{len(outputs)} outputs ({', '.join(outputs)}): give a mapping output: expression",
                key,
            )
        kf.reference_expressions[outputs[0]] = self.expression(raw, names, key, arrays=True)

    def work(self, raw: Any, known: set[str]) -> dict[str, Expression]:
        key = "kernel.work"
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            raise self.error(
                f"expected a mapping with bytes, flops, elements; got {quote(raw)}", key
            )
        out = {}
        for name, text in raw.items():
            if name not in ("bytes", "flops", "elements"):
                raise self.error(
                    f"unknown key {quote(name)}; allowed: bytes, flops, elements", f"{key}.{name}"
                )
            out[name] = self.expression(text, known, f"{key}.{name}")
        return out

    def tolerance(self, raw: Any) -> Tolerance | None:
        key = "kernel.tolerance"
        if raw is None:
            return None
        if raw == "exact":
            return Tolerance()
        if not isinstance(raw, dict):
            raise self.error(f"expected {{rtol: R, atol: A}} or exact, got {quote(raw)}", key)
        values = {}
        for name, value in raw.items():
            if name not in ("rtol", "atol"):
                raise self.error(f"unknown key {quote(name)}; allowed: rtol, atol", f"{key}.{name}")
            try:
                if isinstance(value, bool):
                    raise ValueError
                number = float(value)
            except (TypeError, ValueError, OverflowError):
                raise self.error(
                    f"expected a number, got {quote(value)}", f"{key}.{name}"
                ) from None
            if not np.isfinite(number) or number < 0:
                raise self.error(
                    f"expected a finite number >= 0, got {quote(value)}", f"{key}.{name}"
                )
            values[name] = number
        return Tolerance(**values)


def _yaml_hint(text: Any) -> str:
    """YAML splits `{...}` and `[...]` at commas: `{a: ceil_div(n, b)}` reaches us as
    'ceil_div(n'. Say so when the parentheses do not balance."""
    if isinstance(text, str) and text.count("(") != text.count(")"):
        return (
            " (YAML splits [..] and {..} at commas: put the expression in quotes, or "
            "write the mapping one key per line)"
        )
    return ""


def _split_hint(data: Any, key: str | None) -> str:
    """The YAML hint where the mapping holding a wrong field has a key or value with
    unbalanced parentheses (`{default: ceil_div(n, block)}` split at its comma)."""
    parent: Any = data
    for name in (key or "").split(".")[:-1]:
        parent = parent.get(name) if isinstance(parent, dict) else None
    if isinstance(parent, dict):
        for text in [*parent, *parent.values()]:
            if _yaml_hint(text):
                return _yaml_hint(text)
    return ""


def _top_level_parts(text: str) -> list[Any]:
    """`ceil_div(w, 32), ceil_div(h, 8)` → its two expressions (a grid or block written as
    one line); anything else as it is."""
    try:
        body = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return [text]
    if isinstance(body, ast.Tuple | ast.List):
        return [ast.get_source_segment(text.strip(), e) for e in body.elts]
    return [text]


def load_reference_function(file: str, function: str, where: str) -> Any:
    from gpubench.formats.python_file import load_python_file

    module = load_python_file(file, where=where)
    target = getattr(module, function, None)
    if not callable(target):
        raise ConfigError(
            f"{file} defines no function {function!r}", source=where, key="kernel.reference"
        )
    return target


def _param_type(values: list[Any]) -> type:
    if all(isinstance(v, bool) for v in values):
        return bool
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return int
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return float
    return str


def params_from(raw: Any, source: str, key: str = "params") -> tuple[Param, ...]:
    """The parameters a kernel file declares through its sweep: each one's type from its
    values, its default the first value (what `gpubench run FILE.yaml` uses)."""
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise ConfigError(f"expected a mapping, got {quote(raw)}", source=source, key=key)
    params = []
    where = key
    for name, values in raw.items():
        key = f"{where}.{name}"
        if not isinstance(name, str) or not IDENTIFIER.match(name):
            raise ConfigError(
                f"{quote(name)} is not a parameter name (letters, digits, _)",
                source=source,
                key=key,
            )
        values = values if isinstance(values, list) else [values]
        if not values:
            raise ConfigError("empty list: give at least one value", source=source, key=key)
        for i, value in enumerate(values):
            if isinstance(value, dict | list) or value is None:
                raise ConfigError(
                    f"expected a number or text, got {quote(value)}",
                    source=source,
                    key=f"{key}[{i}]",
                )
        kind = _param_type(values)
        default = kind(values[0]) if kind is not bool else values[0]
        params.append(Param(name, kind, default, f"from {Path(source).name}"))
    return tuple(params)


def _refused_option(option: str) -> bool:
    name = option.split("=", 1)[0]
    # A short -o glues its path on (`-o/etc/x`); -O (optimisation) is upper case.
    return name in REFUSED_OPTIONS or (name.startswith("-o") and not name.startswith("--"))


def _identity(
    p: _Parser, raw: dict[str, Any], data: dict[str, Any], path: Path
) -> tuple[Path, str, str]:
    """The .cu file (beside the YAML file), the kernel file's name and its one-line
    description."""
    cu = raw["source"]
    if not isinstance(cu, str) or not cu:
        raise p.error(f"expected the path of a .cu file, got {quote(cu)}", "kernel.source")
    try:
        cu_path = (path.parent / cu).resolve()
        exists, regular = cu_path.exists(), cu_path.is_file()
        size = cu_path.stat().st_size if regular else 0
    except (OSError, ValueError) as exc:  # a name past the system's limit, a NUL byte
        reason = getattr(exc, "strerror", None) or str(exc)
        raise p.error(f"{quote(cu)} is no usable file name: {reason}", "kernel.source") from None
    if not exists:
        raise p.error(
            f"{cu!r} not found (looked for {cu_path.name} beside {path.name})", "kernel.source"
        )
    if not regular:  # a folder, /dev/zero, a pipe: nothing to compile, or no end
        raise p.error(f"{cu!r} is not a regular file", "kernel.source")
    if size > MAX_SOURCE_BYTES:
        raise p.error(
            f"{cu!r} is {size:,} bytes; a kernel source is at most {MAX_SOURCE_BYTES // 2**20} MiB",
            "kernel.source",
        )
    name = raw.get("name", path.stem)
    if not isinstance(name, str) or not re.match(r"^[A-Za-z0-9_.-]+$", name):
        raise p.error(
            f"expected a short name (letters, digits, _ . -), got {quote(name)}", "kernel.name"
        )
    default = f"kernels of {cu_path.name}"
    description = data.get("description") or default
    if not isinstance(description, str):
        raise p.error(f"expected text, got {quote(description)}", "description")
    return cu_path, name, (description.strip().splitlines() or [default])[0]  # blank: default


def _declared_params(data: dict[str, Any], source: str) -> tuple[Param, ...]:
    """The params section's parameters, and those declared only in a zip group."""
    params = params_from(data.get("params"), source)
    zipped = data.get("zip") or []
    if isinstance(zipped, list):
        # Parameters that vary together are declared in a zip group instead of params.
        for i, group in enumerate(zipped):
            if isinstance(group, dict):
                taken = {q.name for q in params}
                more = {k: v for k, v in group.items() if k not in taken}
                params += params_from(more, source, key=f"zip[{i}]")
    return params


def _check_structure(p: _Parser, raw: dict[str, Any], data: dict[str, Any], source: str) -> None:
    """Only known keys under `kernel:`, the required ones present, and each key's type."""
    for key in raw:
        if key not in KERNEL_KEYS:
            from gpubench.errors import did_you_mean

            raise p.error(
                f"unknown key {quote(key)}{did_you_mean(str(key), KERNEL_KEYS)}; "
                f"allowed: {', '.join(KERNEL_KEYS)}",
                f"kernel.{key}",
            )
    for key in ("source", "variants", "args", "grid", "block"):
        if key not in raw:
            raise p.error("missing required key", f"kernel.{key}")
    from gpubench.formats import kernel_file as schema
    from gpubench.formats.sweep_file import HINTS, check

    try:
        check(data, schema.KernelFile, source, schema.HINTS + HINTS)
    except ConfigError as exc:
        raise ConfigError(
            exc.message + _split_hint(data, exc.key), source=source, key=exc.key
        ) from None


def parse(data: dict[str, Any], source: str) -> KernelFile:
    """A kernel file's `kernel:` and `params:` sections → KernelFile, every part checked."""
    path = Path(source)
    raw = data.get("kernel")
    if not isinstance(raw, dict):
        raise ConfigError(
            f"expected a mapping with source, variants, args, grid, block, ...; got {quote(raw)}",
            source=source,
            key="kernel",
        )
    p = _Parser(path, source)
    _check_structure(p, raw, data, source)  # the structure first; the meaning below
    cu_path, name, description = _identity(p, raw, data, path)
    params = _declared_params(data, source)
    param_names = {q.name for q in params}
    variants = p.variants(raw["variants"])
    variant_names = tuple(v.name for v in variants)
    args = p.args(raw["args"], param_names)
    known = param_names | {a.name for a in args if isinstance(a, Scalar)}
    kf = KernelFile(
        path=path,
        source=cu_path,
        name=name,
        description=description,
        variants=variants,
        params=params,
        args=args,
        grid=p.per_variant(
            raw["grid"], "kernel.grid", known, variant_names, dims=True, required=True
        ),
        block=p.per_variant(
            raw["block"], "kernel.block", known, variant_names, dims=True, required=True
        ),
        shared=p.per_variant(
            raw.get("shared"), "kernel.shared", known, variant_names, dims=False, required=False
        ),
        defines=p.defines(raw.get("defines"), param_names),
        options=p.options(raw.get("options")),
        init=p.init(raw.get("init"), [a for a in args if isinstance(a, Array)], param_names),
        work=p.work(raw.get("work"), known),
        tolerance=p.tolerance(raw.get("tolerance")),
    )
    p.reference(raw.get("reference"), kf)
    # Why a compile-time param becomes that: it is passed with -D, so changing it rebuilds.
    params = tuple(
        Param(q.name, q.type, q.default, q.help, compile_time=q.name in kf.defines) for q in params
    )
    kf.params = params
    kf.digest = hashlib.sha256(json.dumps(raw, sort_keys=True, default=str).encode()).hexdigest()
    return kf


def is_kernel_file(data: Any) -> bool:
    return isinstance(data, dict) and "kernel" in data
