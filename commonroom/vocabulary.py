"""The room's closed vocabularies and bounds, read from ``schema/`` (their one declaration).

``schema/`` is the source of truth: the engine's checks, the MCP tool
descriptions, ``ce``'s help and the docs take these values from here, so
a new capability, a new board message kind or a new lease bound is one
edit of a schema file (docs: ``python -m codegen`` fills the
``<!-- fact:NAME -->`` spans, :data:`FACTS`).

- :data:`CAPABILITIES`: ``common#Capability`` (seed protocol.txt), in
  their documented order.
- :data:`MESSAGE_KINDS`: ``boards#MessageKind`` (seed collaboration-board.txt).
- :data:`LEASE_TTL_DEFAULT`, :data:`LEASE_TTL_MAX`: ``editing#TtlSeconds``
  (``default``, ``maximum``; seconds).

It imports only the standard library and reads three small JSON files, so
``ce``'s start-up may import it.
"""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any


def definition(name: str) -> dict[str, Any]:
    """The schema definition ``"<file>#<Def>"`` (``"common#Capability"``), as written in ``schema/<file>.json``.

    Raises ``KeyError`` for an unknown definition.
    """
    file, _, def_name = name.partition("#")
    text = files("commonroom.schema").joinpath(f"{file}.json").read_text("utf-8")
    found: dict[str, Any] = json.loads(text)["$defs"][def_name]
    return found


def enum(name: str) -> tuple[str, ...]:
    """The ``enum`` of the definition ``name``, in its order."""
    return tuple(definition(name)["enum"])


CAPABILITIES: tuple[str, ...] = enum("common#Capability")
MESSAGE_KINDS: tuple[str, ...] = enum("boards#MessageKind")
_TTL = definition("editing#TtlSeconds")
LEASE_TTL_MIN: int = _TTL["minimum"]
LEASE_TTL_MAX: int = _TTL["maximum"]
LEASE_TTL_DEFAULT: int = _TTL["default"]


def words(values: tuple[str, ...], last: str = "or", quote: str = "") -> str:
    """``"a, b or c"`` (each value between ``quote``), the way help texts and docs list a vocabulary."""
    quoted = [f"{quote}{v}{quote}" for v in values]
    return ", ".join(quoted[:-1]) + f" {last} " + quoted[-1] if len(quoted) > 1 else "".join(quoted)


#: The docs spans ``python -m codegen`` fills: ``<!-- fact:NAME -->…<!-- /fact -->`` → this text.
FACTS: dict[str, str] = {
    "capabilities": words(CAPABILITIES, "or", "`"),
    "message-kinds": words(MESSAGE_KINDS, "or", "`"),
    "lease-ttl-default": str(LEASE_TTL_DEFAULT),
    "lease-ttl-min": str(LEASE_TTL_MIN),
    "lease-ttl-max": str(LEASE_TTL_MAX),
}
