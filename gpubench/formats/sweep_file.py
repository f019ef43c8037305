"""The sweep file (YAML): its structure declared once, checked right after the YAML is read.

The schema says which keys hold which types (a parameter's values are a scalar or a list of
scalars, `timing` numbers are numbers); what the values mean (a suite's parameters, ranges,
conditions) is checked afterwards by `gpubench.config`, whose messages name the suite's own
words. Unknown keys are left to that layer too, since it suggests the closest known key.

Numbers: an integer field holds a signed 64-bit integer at most (a 400-digit integer is
refused here, not as an OverflowError later); a float field holds what a double holds (NaN and
infinity are refused by the semantic checks, which say "a finite number"). A float field
also takes text, because YAML 1.1 reads `1e-3` as a string; the semantic layer converts it.
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any

import msgspec
from msgspec import Meta, Struct

from gpubench.errors import ConfigError

# A whole number a 64-bit counter holds; beyond it no count, size or limit means anything.
Int64 = Annotated[int, Meta(ge=-(2**63), le=2**63 - 1)]
# A float field: a number, or text that reads as one (`1e-3` is text to YAML 1.1).
Real = float | str
# One value of a parameter: a number, a word, true or false.
Scalar = bool | Int64 | float | str
Values = Scalar | list[Scalar]


class Timing(Struct, kw_only=True):
    """`timing:`: how each variant is measured (gpubench.timing.TimingPolicy)."""

    warmup: Int64 | None = None
    min_samples: Int64 | None = None
    max_samples: Int64 | None = None
    min_time_s: Real | None = None
    target_noise: Real | None = None
    max_time_s: Real | None = None
    mode: str | None = None
    hot_sample_ms: Real | None = None
    flush_l2: bool | None = None
    throttle_threshold: Real | None = None
    time_limit_s: Real | None = None
    untrusted: bool | None = None


class Outputs(Struct, kw_only=True):
    """`outputs:`: the files a run writes (paths)."""

    json: str | None = None
    csv: str | None = None
    jsonl: str | None = None
    history: str | None = None


class SweepCommon(Struct, kw_only=True):
    """The keys a sweep file and a kernel file share."""

    description: str | None = None
    variants: str | list[str] | None = None
    baseline: str | None = None
    # Each parameter: one value, or a list of values (the lists form a cartesian product).
    params: dict[str, Values] | None = None
    # Groups of parameter lists that vary together.
    zip: list[dict[str, list[Scalar]]] | None = None
    constraints: list[str] | None = None
    timing: Timing | None = None
    outputs: Outputs | None = None
    # A history store path, or true for results/history.sqlite.
    history: str | bool | None = None


class SweepFile(SweepCommon, kw_only=True):
    """A sweep of a suite: `gpubench sweep FILE.yaml`."""

    suite: str


SCHEMAS: dict[str, type] = {"Sweep file": SweepFile}


def check(record: Any, schema: type, source: str) -> None:
    """Refuse `record` where it does not have `schema`'s structure: one ConfigError naming the
    file, the field path and the value. Entries of mappings keyed by the user's own names
    (parameters, variants, arrays) are named by their key, not msgspec's `[...]`."""
    from gpubench.formats import validate

    try:
        validate(record, schema, source=source)
    except ConfigError as exc:
        if "[...]" not in (exc.key or "") and "key` in" not in exc.message:
            raise
        found = _locate(record, schema, "")
        if found is None:
            raise
        value, expected, path = found
        validate(value, expected, source=source, key=path)
        raise  # the entry alone converted: the first message stands


def _locate(value: Any, expected: Any, path: str) -> tuple[Any, Any, str] | None:
    """The first (value, type, path) below `value` that does not convert to its type, with
    mapping keys spelled out; None where everything converts."""
    try:
        msgspec.convert(value, expected, strict=True)
        return None
    except msgspec.ValidationError:
        pass
    origin = typing.get_origin(expected)
    args = typing.get_args(expected)
    if isinstance(expected, type) and issubclass(expected, Struct) and isinstance(value, dict):
        hints = typing.get_type_hints(expected, include_extras=True)
        for name in expected.__struct_fields__:
            if name in value:
                found = _locate(value[name], hints[name], _join(path, name))
                if found:
                    return found
    elif origin is dict and isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return key, str, _join(path, str(key))
            found = _locate(item, args[1], _join(path, key))
            if found:
                return found
    elif origin is list and isinstance(value, list):
        for index, item in enumerate(value):
            found = _locate(item, args[0], f"{path}[{index}]")
            if found:
                return found
    elif origin in (typing.Union, types.UnionType):
        # A union: descend into the member of the value's own kind (a mapping, a list).
        for member in args:
            kind = typing.get_origin(member) or member
            if (kind is dict or (isinstance(kind, type) and issubclass(kind, Struct))) and \
                    isinstance(value, dict):  # fmt: skip
                return _locate(value, member, path) or (value, expected, path)
            if kind is list and isinstance(value, list):
                return _locate(value, member, path) or (value, expected, path)
    return value, expected, path


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name
