"""Validate MCP messages against the official 2026-07-28 JSON Schema (by ``$defs`` name).

The vendored schemas (``tests/data/vendor/mcp-2026-07-28/``) are read as they
are, never edited. ``check("CallToolResult", result)`` raises
``AssertionError`` listing every failure; ``errors(...)`` returns them.
Names resolve in the core schema, or with ``tasks:`` prefixed in the tasks
extension's schema (``check("tasks:GetTaskResult", ...)``).
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012
from tests.shared_data import MCP_SCHEMA_DIR

ROOT = Path(__file__).resolve().parents[1]
VENDOR = MCP_SCHEMA_DIR
CORE_URI = "urn:mcp:2026-07-28:schema.json"
TASKS_URI = "https://modelcontextprotocol.io/ext-tasks/schema.json"


@lru_cache(maxsize=1)
def _registry() -> Registry:
    core = json.loads((VENDOR / "schema.json").read_text("utf-8"))
    tasks = json.loads((VENDOR / "ext-tasks" / "schema.json").read_text("utf-8"))
    return Registry().with_resources([
        (CORE_URI, Resource.from_contents(core, default_specification=DRAFT202012)),
        (TASKS_URI, Resource.from_contents(tasks, default_specification=DRAFT202012)),
    ])


def definitions(prefix: str = "") -> list[str]:
    """The ``$defs`` names of the core schema (or the tasks schema with ``"tasks:"``)."""
    uri = TASKS_URI if prefix == "tasks:" else CORE_URI
    return sorted(_registry().contents(uri)["$defs"])


@lru_cache(maxsize=None)
def validator(name: str) -> Draft202012Validator:
    """A compiled validator for one ``$defs`` entry."""
    uri, _, definition = (TASKS_URI, None, name[len("tasks:"):]) if name.startswith("tasks:") else (CORE_URI, None, name)
    if definition not in _registry().contents(uri)["$defs"]:
        raise KeyError(f"no $defs/{definition} in the official schema")
    return Draft202012Validator({"$ref": f"{uri}#/$defs/{definition}"}, registry=_registry())


def errors(name: str, instance: Any) -> list[str]:
    """Every failure as ``"<path>: <message>"``."""
    return [f"/{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator(name).iter_errors(instance)]


def check(name: str, instance: Any) -> Any:
    """``instance`` if it validates against ``$defs/<name>``; else AssertionError."""
    found = errors(name, instance)
    assert not found, f"not a valid {name}: {found[:5]}\n{json.dumps(instance)[:2000]}"
    return instance
