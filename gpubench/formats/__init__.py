"""The file formats gpubench writes and reads back, each declared once as a msgspec schema.

A reader decodes its file (JSON, JSON lines, YAML), then calls `validate` with the schema
of its format: a value of a wrong type anywhere becomes one `ConfigError` line naming the
file, the field path and the value, never a TypeError deep inside gpubench. The schemas are
also the documentation (`json_schemas`, rendered into the docs' reference pages) and the
target of the fuzzing tests.

Each format lives in its own module of this package and lists what it declares in
`SCHEMAS: dict[str, type]` (a title for the docs -> the msgspec type).
"""

from __future__ import annotations

import importlib
import re
import types
import typing
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gpubench.errors import MAX_QUOTED, ConfigError, quote

# The modules of this package that declare formats, in the order the docs list them.
FORMAT_MODULES = (
    "results",
    "results_log",
    "history_export",
    "ceilings",
    "sweep_file",
    "kernel_file",
)

_PATH = re.compile(r" - at `(\$[^`]*)`$")
# msgspec's words for a mapping key of the wrong type: "... - at `key` in `$.metrics`".
_KEY_PATH = re.compile(r" - at `key` in `(\$[^`]*)`$")
_PART = re.compile(r"\.([^.\[]+)|\[(\d+)\]|\[\.\.\.\]")


@dataclass
class _Spot:
    """Where a msgspec error points, resolved against the record: the path as a person reads
    it (a mapping's key named, where msgspec writes `[...]`) and the value found there."""

    path: str
    found: bool = False
    value: Any = None


def _options(annotation: Any) -> list[Any]:
    """The types a value of `annotation` may be: Annotated stripped, unions flattened."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _options(typing.get_args(annotation)[0])
    if origin is typing.Union or origin is types.UnionType:
        return [t for arg in typing.get_args(annotation) for t in _options(arg)]
    return [annotation]


def _field_types(annotations: list[Any], name: str) -> list[Any]:
    """The declared types of field `name` (as the file spells it) in the Structs that
    `annotations` may be."""
    import msgspec

    return [
        field.type
        for option in _options_of(annotations)
        if isinstance(option, type) and issubclass(option, msgspec.Struct)
        for field in msgspec.structs.fields(option)
        if field.encode_name == name
    ]


def _container_types(annotations: list[Any], kind: type, position: int) -> list[Any]:
    """The declared item types (position 0 of list[T]) or value / key types (1 / 0 of
    dict[K, V]) of the containers that `annotations` may be."""
    return [
        typing.get_args(option)[position]
        for option in _options_of(annotations)
        if typing.get_origin(option) is kind
    ]


def _options_of(annotations: list[Any]) -> list[Any]:
    return [option for annotation in annotations for option in _options(annotation)]


def _first_misfit(pairs: Iterable[tuple[Any, Any]], annotations: list[Any]) -> tuple[bool, Any]:
    """The first (name, item) of `pairs` whose item does not convert to any of `annotations`
    (declared types, bounds included). msgspec converts a mapping in its order and stops at
    the first wrong entry, so this is the one it reported."""
    import msgspec

    if not annotations:
        return False, None
    target = annotations[0] if len(annotations) == 1 else typing.Union[tuple(annotations)]  # noqa: UP007
    for pair in pairs:
        try:
            msgspec.convert(pair[1], target, strict=True)
        except msgspec.ValidationError:
            return True, pair
    return False, None


def _key_part(key: Any) -> str:
    """A mapping key in a field path: `.gbps` where it reads as a name (as a field does, so
    that a path into a file reads the same whether the schema declares the key or the user
    chose it), else `['a b']`."""
    if isinstance(key, str) and key.isidentifier() and len(key) <= MAX_QUOTED:
        return f".{key}"
    return f"[{quote(key)}]"


def _spot(record: Any, schema: type, path: str, key_error: bool) -> _Spot:
    """Follow a msgspec error path (`$.results[3].metrics[...]`) through the record and the
    schema together, naming each mapping key msgspec leaves out. Where the record and the path
    part ways (they should not), the rest of the path is shown as msgspec wrote it."""
    value, annotations, shown = record, [schema], ""
    for match in _PART.finditer(path, 1):
        name, index = match.group(1), match.group(2)
        try:
            if name is not None:
                value, annotations = value[name], _field_types(annotations, name)
                shown += f".{name}"
            elif index is not None:
                value, annotations = value[int(index)], _container_types(annotations, list, 0)
                shown += f"[{index}]"
            else:
                values = _container_types(annotations, dict, 1)
                hit, item = _first_misfit(value.items(), values)
                if not hit:
                    raise LookupError(match.group(0))
                value, annotations = item[1], values
                shown += _key_part(item[0])
        except (LookupError, TypeError, AttributeError, ValueError):
            return _Spot(shown + path[match.start() :])
    if key_error:
        keys = ((k, k) for k in value) if isinstance(value, dict) else ()
        hit, pair = _first_misfit(keys, _container_types(annotations, dict, 0))
        return _Spot(shown, hit, pair[0] if hit else None)
    return _Spot(shown, True, value)


def validate(record: Any, schema: type, *, source: str | None, key: str | None = None) -> Any:
    """`record` converted to `schema` (strictly: no str -> int coercion); a wrong field is a
    one-line ConfigError naming `source`, the field path and the value found there. A wrong
    entry of a mapping is named by its key (`metrics.gbps`), which msgspec leaves out.

    `key` prefixes the path where `record` is part of a larger file (`results[3]`)."""
    import msgspec

    try:
        return msgspec.convert(record, schema, strict=True)
    except msgspec.ValidationError as exc:
        message = str(exc)
        match = _PATH.search(message) or _KEY_PATH.search(message)
        key_error = match is not None and match.re is _KEY_PATH
        reason = message[: match.start()] if match else message
        spot = _spot(record, schema, match.group(1) if match else "$", key_error)
        where = ".".join(part for part in (key, spot.path.removeprefix(".")) if part) or None
        reason = f"{reason[:1].lower()}{reason[1:]}"
        if key_error:
            reason = f"a key: {reason}"
        shown = spot.found and not isinstance(spot.value, dict | list)
        message = f"{reason} (found {quote(spot.value)})" if shown else reason
        raise ConfigError(message, source=source, key=where) from None


def json_schemas() -> dict[str, dict[str, Any]]:
    """Title -> JSON Schema of every declared format, for the docs."""
    import msgspec

    schemas: dict[str, dict[str, Any]] = {}
    for name in FORMAT_MODULES:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            continue
        for title, schema in module.SCHEMAS.items():
            schemas[title] = msgspec.json.schema(schema)
    return schemas
