"""Reading the YAML files gpubench takes (sweep files, kernel files): safe loading with
duplicate keys refused, aliases capped, the size bounded and only regular files read. Every
problem is a ConfigError naming the file."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml

from gpubench.errors import ConfigError, quote


class _StrictLoader(yaml.SafeLoader):
    """safe_load that refuses duplicate keys instead of silently keeping the last one."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    loader.flatten_mapping(node)
    mapping: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            line = key_node.start_mark.line + 1
            raise ConfigError(f"a key must be text or a number, not a {key_node.id} (line {line})")
        key = loader.construct_object(key_node, deep=deep)
        if key in mapping:
            line = key_node.start_mark.line + 1
            raise ConfigError(f"duplicate key {quote(key)} (line {line})", key=str(key))
        mapping[key] = loader.construct_object(value_node, deep=deep)
    return mapping


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


# Aliases let a few hundred bytes of YAML stand for billions of values (a "billion laughs");
# a sweep file has no use for more than this many values once aliases are expanded.
MAX_EXPANDED_NODES = 100_000
MAX_FILE_BYTES = 1 << 20
_VISITING = -1  # a node whose size is being counted: met again below itself, a cycle


def _expanded_size(node: yaml.Node, sizes: dict[int, int]) -> int:
    """How many nodes the document holds once every alias is expanded (memoised per node, so
    this is linear in the file even when the expansion is exponential); a cycle is refused."""
    known = sizes.get(id(node))
    if known == _VISITING:
        # PyYAML builds `&a [*a]` as a list that holds itself; every reader of it would loop.
        line = node.start_mark.line + 1
        raise ConfigError(f"an alias refers to the list or mapping that holds it (line {line})")
    if known is not None:
        return known
    sizes[id(node)] = _VISITING
    if isinstance(node, yaml.SequenceNode):
        total = 1 + sum(_expanded_size(child, sizes) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        total = 1 + sum(_expanded_size(k, sizes) + _expanded_size(v, sizes) for k, v in node.value)
    else:
        total = 1
    sizes[id(node)] = min(total, 10 * MAX_EXPANDED_NODES)
    return sizes[id(node)]


def parse_yaml(text: str, source: str) -> Any:
    """Safe YAML with duplicate keys refused, keys that are scalars, and a cap on what aliases
    can expand to. Every problem is a ConfigError naming the file."""
    loader = None
    try:
        loader = _StrictLoader(text)
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node, {}) > MAX_EXPANDED_NODES:
            raise ConfigError(
                f"the document expands to more than {MAX_EXPANDED_NODES:,} values (anchors "
                "and aliases counted at each use): a sweep file has no need for that many",
                source=source,
            )
        return loader.construct_document(node)
    except ConfigError as exc:
        if exc.source:
            raise
        raise ConfigError(exc.message, source=source, key=exc.key) from None
    except yaml.YAMLError as exc:
        # PyYAML's message spans lines (a caret under the place): one line of it here.
        raise ConfigError(
            f"not valid YAML: {' '.join(str(exc).split())[:300]}", source=source
        ) from None
    except RecursionError:
        raise ConfigError("not valid YAML: nested too deeply", source=source) from None
    except (ValueError, TypeError, OverflowError) as exc:  # a scalar PyYAML cannot construct
        raise ConfigError(f"cannot read a value: {str(exc)[:200]}", source=source) from None
    finally:
        if loader is not None:
            loader.dispose()


def read_document(path: str | Path) -> Any:
    """A YAML file's content, read with every safeguard of parse_yaml."""
    source = str(path)
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO or /dev/zero would hang or fill memory
            raise ConfigError("not a regular file", source=source)
        with open(path, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)  # never more than the limit into memory
    except OSError as exc:
        raise ConfigError(f"cannot read the file: {exc.strerror}", source=source) from None
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError("more than 1 MiB: a sweep or kernel file is at most 1 MiB", source=source)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text (byte {exc.start})", source=source) from None
    return parse_yaml(text, source)
