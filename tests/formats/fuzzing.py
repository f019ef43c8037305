"""What the format fuzzers share: a valid file's fields, each replaced by a wrong value."""

from __future__ import annotations

import copy
from typing import Any

# Wrong types, absurd sizes and deep nesting: what a hand-edited or hostile file may hold.
DEEP: Any = 0
for _ in range(60):
    DEEP = [DEEP]
BAD_VALUES: list[Any] = [
    10**400,
    -(10**400),
    2**70,
    float("nan"),
    float("inf"),
    -float("inf"),
    True,
    False,
    None,
    "",
    "x" * 5000,
    "1e999",
    "2**70",
    3.5,
    -1,
    0,
    [],
    {},
    [[1, [2]]],
    {"a": {"b": None}},
    DEEP,
    list(range(3000)),
    {str(i): i for i in range(300)},
    b"\x00\xff",
]


def paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every place in a parsed YAML document: mapping keys and list indices, nested."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, (*prefix, index))
    return found


def replaced(document: Any, path: tuple, value: Any) -> Any:
    """A copy of `document` with the value at `path` replaced."""
    data = copy.deepcopy(document)
    target = data
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return data
