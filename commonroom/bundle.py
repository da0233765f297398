"""Self-contained JSON Schemas for ``tools/list``: every ``$ref`` inlined.

The shapes live in ``schema/*.json`` and reference each other
(``"room.json#/$defs/Document"``, ``"#/$defs/Region"``). MCP clients
validate a tool's schemas on their own, often with no registry
(``$ref`` must resolve inside the document), so :func:`bundle` replaces
every ``$ref`` with the schema it points to, recursively, resolving each
reference against the file it appears in. Nothing in ``schema/`` is
recursive; a cycle is a ``ValueError``.

A ``$ref`` with sibling keywords that are only annotations (description,
title, default, examples) is merged with the target (siblings win);
otherwise the target goes into ``allOf`` beside the siblings.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any

from .schemafiles import load_all

ANNOTATIONS = frozenset({"description", "title", "default", "examples", "deprecated", "readOnly", "writeOnly"})
#: Keywords dropped from inlined schemas (they only make sense at a file's root).
ROOT_ONLY = ("$schema", "$id", "$defs", "definitions")


def _resolve(file: str, pointer: str) -> Any:
    node: Any = load_all()[file]
    for part in filter(None, pointer.split("/")):
        part = part.replace("~1", "/").replace("~0", "~")
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def _split(ref: str, current: str) -> tuple[str, str]:
    file, _, pointer = ref.partition("#")
    return (file or current), pointer


def _inline(node: Any, file: str, stack: tuple[tuple[str, str], ...]) -> Any:
    if isinstance(node, list):
        return [_inline(item, file, stack) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target_file, pointer = _split(node["$ref"], file)
        key = (target_file, pointer)
        if key in stack:
            raise ValueError(f"recursive schema reference {node['$ref']!r} in {file}")
        target = _inline(_resolve(target_file, pointer), target_file, stack + (key,))
        if isinstance(target, dict):
            target = {k: v for k, v in target.items() if k not in ROOT_ONLY}
        siblings = {k: _inline(v, file, stack) for k, v in node.items() if k != "$ref"}
        if not siblings:
            return target
        if set(siblings) <= ANNOTATIONS and isinstance(target, dict):
            return {**target, **siblings}
        return {**siblings, "allOf": [target]}
    return {k: _inline(v, file, stack) for k, v in node.items() if k not in ("$defs", "definitions")}


@lru_cache(maxsize=None)
def _bundled(file: str, definition: str) -> Any:
    pointer = f"/$defs/{definition}" if definition else ""
    schema = _inline(_resolve(file, pointer), file, ((file, pointer),))
    if isinstance(schema, dict):
        schema = {k: v for k, v in schema.items() if k not in ROOT_ONLY}
    return schema


def bundle(name: str) -> dict[str, Any]:
    """The self-contained schema of ``"<file>#<Def>"`` (``"mcp#DocumentReadInput"``).

    Returns a fresh copy each call (callers may change it).
    """
    file, _, definition = name.partition("#")
    file = file if file.endswith(".json") else file + ".json"
    if file not in load_all():
        raise KeyError(name)
    return copy.deepcopy(_bundled(file, definition))
