"""The kernel file (YAML): a `kernel:` section beside the keys of a sweep file, declared once.

The schema gives the structure: which keys hold an expression (text or a number), a list of
them (a grid or block in 2 or 3 dimensions) or a mapping of variants to them; the arguments
as a list of one-entry mappings `name: declaration`; `init`, `reference`, `work` keyed by
array or measure. The expressions themselves, the names, the types in declarations and the
ranges are checked afterwards by `gpubench.kernelfile.declaration`, which names the expression.
"""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta, Struct

from gpubench.formats.sweep_file import Int64, SweepCommon, Timing

__all__ = ["SCHEMAS", "Kernel", "KernelFile", "Timing"]

# An expression over the parameters (`ceil_div(n, block)`), or a plain number.
Expr = str | Int64 | float
# A grid or block: one expression, or one per dimension (x, y, z).
Dims = Expr | Annotated[list[Expr], Meta(min_length=1, max_length=3)]
# A value for every variant, or a mapping variant -> value with an optional `default`.
PerVariantDims = Dims | dict[str, Dims]
PerVariantExpr = Expr | dict[str, Expr]
# A tolerance: a number, or text that reads as one (YAML 1.1 reads `1e-6` as text).
Real = float | str


class Work(Struct, kw_only=True):
    """`work:`: what one run does, for GB/s, GFLOP/s and Gelem/s."""

    bytes: Expr | None = None
    flops: Expr | None = None
    elements: Expr | None = None


class Tolerance(Struct, kw_only=True):
    """`tolerance:`: elementwise |got - ref| <= atol + rtol * |ref|."""

    rtol: Real | None = None
    atol: Real | None = None


class Kernel(Struct, kw_only=True):
    """The `kernel:` section: how to build, call and check the kernels."""

    source: str
    name: str | None = None
    # A kernel name, a list of them (the first is the baseline), or name: what it shows.
    variants: str | list[str] | dict[str, str | None]
    # The kernel's arguments in order, each `name: in float32[n]` or `name: uint32 = n`.
    args: list[dict[str, str]]
    grid: PerVariantDims
    block: PerVariantDims
    shared: PerVariantExpr | None = None
    # Parameters passed as -DNAME=value: a name, a list, or a mapping param: MACRO.
    defines: str | list[str] | dict[str, str] | None = None
    options: str | list[str] | None = None
    # Array -> `uniform(lo, hi)`, `normal(mean, std)`, `integers(lo, hi)`, `zeros()`, ...
    init: dict[str, str] | None = None
    # An expression, output -> expression, `file.py:function` or `variant:NAME`.
    reference: Expr | dict[str, Expr] | None = None
    work: Work | None = None
    tolerance: Literal["exact"] | Tolerance | None = None


class KernelFile(SweepCommon, kw_only=True):
    """Your own kernel: a `kernel:` section, and the sweep of its parameters."""

    kernel: Kernel


SCHEMAS: dict[str, type] = {"Kernel file": KernelFile}

# The kernel section's fields in the words of gpubench's messages (see sweep_file.HINTS).
_EXPRESSION = "an expression"
HINTS: list[tuple[str, str]] = [
    (r"kernel", "a mapping with source, variants, args, grid, block, ..."),
    (r"kernel\.source", "the path of a .cu file"),
    (r"kernel\.name", "a short name (letters, digits, _ . -)"),
    (
        r"kernel\.variants",
        "a list of kernel names (the first is the baseline), or a mapping name: what it shows",
    ),
    (r"kernel\.variants\[\d+\]", "a kernel name (a C identifier)"),
    (r"kernel\.variants\.[^.]+", "a description"),
    (
        r"kernel\.args",
        "the kernel's arguments in order, as a list of `name: in float32[n]` or `name: uint32 = n`",
    ),
    (r"kernel\.args\[\d+\]", "one `name: declaration`"),
    (r"kernel\.args\[\d+\]\.[^.]+", "a declaration such as `in float32[n]` or `uint32 = n`"),
    (r"kernel\.(grid|block)", "1 to 3 expressions, or a mapping of variants (and default) to them"),
    (r"kernel\.(grid|block)\.[^.\[]+", "1 to 3 expressions"),
    (
        r"kernel\.(reference\.[^.]+|work\.[^.]+)|kernel\.(grid|block)(\.[^.\[]+)?\[\d+\]",
        _EXPRESSION,
    ),
    (r"kernel\.shared(\.[^.]+)?", "one expression"),
    (
        r"kernel\.defines",
        "a list of parameters (passed as -DNAME=value, the name upper-cased) "
        "or a mapping param: MACRO",
    ),
    (r"kernel\.defines\[\d+\]", "a parameter name"),
    (r"kernel\.defines\.[^.]+", "a macro name"),
    (r"kernel\.options", "a list of nvcc options"),
    (r"kernel\.options\[\d+\]", "an nvcc option (such as --use_fast_math or -lineinfo)"),
    (
        r"kernel\.init",
        "a mapping array: uniform(lo, hi) | normal(mean, std) | integers(lo, hi)"
        " | zeros() | ones() | full(v) | arange()",
    ),
    (
        r"kernel\.init\.[^.]+",
        "one of uniform(), normal(), integers(), zeros(), ones(), full(), arange()",
    ),
    (
        r"kernel\.reference",
        "an expression, a mapping output: expression, file.py:function or variant:NAME",
    ),
    (r"kernel\.work", "a mapping with bytes, flops, elements"),
    (r"kernel\.tolerance", "{rtol: R, atol: A} or exact"),
    (r"kernel\.tolerance\.[^.]+", "a number"),
]
