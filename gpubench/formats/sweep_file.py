"""The sweep file (YAML): its structure declared once, checked right after the YAML is read.

The schema says which keys hold which types (a parameter's values are a scalar or a list of
scalars, `timing` numbers are numbers); what the values mean (a suite's parameters, ranges,
conditions) is checked afterwards by `gpubench.load.config`, whose messages name the suite's own
words. Unknown keys are left to that layer too, since it suggests the closest known key.

Numbers: an integer field holds a signed 64-bit integer at most (a 400-digit integer is
refused here, not as an OverflowError later); a float field holds what a double holds (NaN and
infinity are refused by the semantic checks, which say "a finite number"). A float field
also takes text, because YAML 1.1 reads `1e-3` as a string; the semantic layer converts it.
"""

from __future__ import annotations

import re
import types
import typing
from typing import Annotated, Any

import msgspec
from msgspec import Meta, Struct

from gpubench.errors import ConfigError, quote

# A whole number a 64-bit counter holds; beyond it no count, size or limit means anything.
Int64 = Annotated[int, Meta(ge=-(2**63), le=2**63 - 1)]
# A float field: a number, or text that reads as one (`1e-3` is text to YAML 1.1).
Real = float | str
# One value of a parameter: a number, a word, true or false.
Scalar = bool | Int64 | float | str
Values = Scalar | list[Scalar]


class Timing(Struct, kw_only=True):
    """`timing:`: how each variant is measured (gpubench.model.timing.TimingPolicy)."""

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
    energy: bool | None = None
    energy_window_s: Real | None = None


class Outputs(Struct, kw_only=True):
    """`outputs:`: the files a run writes (paths)."""

    json: str | None = None
    csv: str | None = None
    jsonl: str | None = None
    history: str | None = None


class Tune(Struct, kw_only=True):
    """`tune:`: what `gpubench tune` searches beyond the suite's compile-time parameters."""

    configuration: list[str] | None = None


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
    tune: Tune | None = None


class SweepFile(SweepCommon, kw_only=True):
    """A sweep of a suite: `gpubench sweep FILE.yaml`."""

    suite: str


SCHEMAS: dict[str, type] = {"Sweep file": SweepFile}


# What a field holds, in the words of gpubench's messages: a wrong type at a path matching
# one of these patterns reads "expected <words>, got <value>".
HINTS: list[tuple[str, str]] = [
    (r"description", "text"),
    (r"suite", "a suite name or a suite .py file"),
    (r"variants", "a variant name or a list of them"),
    (r"variants\[\d+\]|baseline", "a variant name"),
    (r"params", "a mapping"),
    (r"params\.[^.\[]+", "a value or a list of values"),
    (r"params\.[^.\[]+\[\d+\]|zip\[\d+\]\.[^.\[]+\[\d+\]", "a number or text"),
    (r"zip", "a list of groups"),
    (r"zip\[\d+\]", "a mapping of parameter lists"),
    (r"zip\[\d+\]\.[^.\[]+", "a list"),
    (r"constraints", "a list of conditions"),
    (r"constraints\[\d+\]", "a condition such as 'block_rows <= tile'"),
    (r"timing|outputs", "a mapping"),
    (
        r"timing\.(min_time_s|target_noise|max_time_s|hot_sample_ms|throttle_threshold|"
        r"time_limit_s|energy_window_s)",
        "a number",
    ),
    (r"outputs\.[^.]+", "a file path"),
    (r"history", "a file path or true"),
    (r"tune", "a mapping"),
    (r"tune\.configuration", "a list of parameter names"),
    (r"tune\.configuration\[\d+\]", "a parameter name"),
]


def check(record: Any, schema: type, source: str, hints: list[tuple[str, str]] = HINTS) -> None:
    """Refuse `record` where it does not have `schema`'s structure: one ConfigError naming the
    file, the field path and the value, in the words of `hints` where one matches the path.
    Entries of mappings keyed by the user's own names (parameters, variants, arrays) are named
    by their key, not msgspec's `[...]`."""
    from gpubench.formats import validate

    try:
        validate(record, schema, source=source)
    except ConfigError as exc:
        if exc.message.startswith("a key: "):
            # A key that is not text (`5: [1, 2]`): the semantic checks name it in their own
            # words (not a parameter name, not an argument name); the rest is checked here.
            check(_text_keys(record), schema, source, hints)
            return
        error = exc
        # A key the shared validator could not write as a name (`grid['block)']`): located
        # again here, with every key spelled out as the user's files spell them.
        if "[...]" in (exc.key or "") or "['" in (exc.key or ""):
            found = _locate(record, schema, "")
            if found is not None:
                value, expected, path = found
                try:
                    validate(value, expected, source=source, key=path)
                except ConfigError as located:
                    error = located
        key = (error.key or "").replace(".[", "[") or None  # `args.[0]` where a part was checked
        message = _in_words(error.message, key, record, hints)
        raise ConfigError(message, source=source, key=key) from None


def _text_keys(value: Any) -> Any:
    """`value` with every mapping key as text (a copy)."""
    if isinstance(value, dict):
        return {str(k): _text_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_text_keys(v) for v in value]
    return value


def _value_at(record: Any, key: str | None) -> tuple[bool, Any]:
    """The value at a field path such as `kernel.args[0].x`, if it is there."""
    value = record
    for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", key or ""):
        try:
            value = value[int(index)] if index else value[name]
        except (KeyError, IndexError, TypeError, ValueError):
            return False, None
    return True, value


# msgspec's names of JSON types, as the rest of gpubench's messages say them.
_WORDS = {
    "int": "an integer",
    "float": "a number",
    "str": "text",
    "bool": "true or false",
    "object": "a mapping",
    "array": "a list",
    "null": "nothing",
    "date": "a date",
    "datetime": "a date",
    "bytes": "binary data",
}
_TYPE_ERROR = re.compile(r"^(expected `([^`]*)`(, got `[^`]*`| of length [<>]= \d+)|invalid enum)")


def _in_words(message: str, key: str | None, record: Any, hints: list[tuple[str, str]]) -> str:
    """`expected `int | null`, got `float` (found 1.5)` -> `expected an integer, got 1.5`
    (in the hint's words where one matches the field); other messages with msgspec's type
    names put in words (`expected an integer <= 9223372036854775807 (found ...)`)."""
    found, value = _value_at(record, key)
    match = _TYPE_ERROR.match(message)
    if match and found:
        hint = next((words for pattern, words in hints if re.fullmatch(pattern, key or "")), None)
        if hint is None:
            names = [n for n in (match.group(2) or "str").split(" | ") if n != "null"]
            hint = " or ".join(_WORDS.get(n, n) for n in names)
        return f"expected {hint}, got {quote(value)}"
    return re.sub(r"`(\w+)`", lambda m: _WORDS.get(m.group(1), m.group(1)), message)


def _locate(value: Any, expected: Any, path: str) -> tuple[Any, Any, str] | None:
    """The first (value, type, path) below `value` that does not convert to its type, with
    mapping keys spelled out; None where everything converts."""
    try:
        msgspec.convert(value, expected, strict=True)
        return None
    except msgspec.ValidationError:
        pass
    if typing.get_origin(expected) is Annotated:  # a constraint (a length): the bare type below
        expected = typing.get_args(expected)[0]
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
            if (
                kind is dict or (isinstance(kind, type) and issubclass(kind, Struct))
            ) and isinstance(value, dict):
                return _locate(value, member, path) or (value, expected, path)
            if kind is list and isinstance(value, list):
                return _locate(value, member, path) or (value, expected, path)
    return value, expected, path


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name
