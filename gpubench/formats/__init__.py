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
from typing import Any

from gpubench.errors import ConfigError, quote

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


def _path_value(record: Any, path: str) -> tuple[bool, Any]:
    """The value at a msgspec error path such as `$.results[3].device.uuid`, if it is there."""
    value = record
    for name, index in re.findall(r"\.([^.\[]+)|\[(\d+)\]", path[1:]):
        try:
            value = value[int(index)] if index else value[name]
        except (KeyError, IndexError, TypeError, ValueError):
            return False, None
    return True, value


def validate(record: Any, schema: type, *, source: str | None, key: str | None = None) -> Any:
    """`record` converted to `schema` (strictly: no str -> int coercion); a wrong field is a
    one-line ConfigError naming `source`, the field path and the value found there.

    `key` prefixes the path where `record` is part of a larger file (`results[3]`)."""
    import msgspec

    try:
        return msgspec.convert(record, schema, strict=True)
    except msgspec.ValidationError as exc:
        message = str(exc)
        match = _PATH.search(message)
        path = match.group(1) if match else "$"
        reason = message[: match.start()] if match else message
        found, value = _path_value(record, path)
        field = path[2:] if path.startswith("$.") else path[1:]
        where = ".".join(part for part in (key, field) if part) or None
        shown = f" (found {quote(value)})" if found and not isinstance(value, dict | list) else ""
        message = f"{reason[:1].lower()}{reason[1:]}{shown}"
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
