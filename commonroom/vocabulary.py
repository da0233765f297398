"""The room's closed vocabularies and bounds, read from ``schema/`` (their one declaration).

``schema/`` is the source of truth: the engine's checks, the MCP tool
descriptions, ``ce``'s help and the docs take these values from here, so
a new capability, a new board message kind or a new lease bound is one
edit of a schema file (docs: ``python -m codegen`` fills the
``<!-- fact:NAME -->`` spans, :data:`FACTS`).

- :data:`CAPABILITIES`: ``common#Capability`` (seed protocol.txt), in
  their documented order.
- :data:`MESSAGE_KINDS`: ``boards#MessageKind`` (seed collaboration-board.txt);
  :data:`MESSAGE_STATUSES`: ``boards#MessageStatus``; :data:`PRIORITIES`:
  ``boards#Priority``, lowest first.
- :data:`PROPOSAL_STATUSES`: ``editing#ProposalStatus``.
- :data:`HANDOFF_STATUSES`: ``handoffs#HandoffStatus``; :data:`TASK_STATUSES`:
  ``handoffs#TaskStatus`` (seed tasks-and-handoffs.txt).
- :data:`ERROR_STATUS`: ``error#ErrorCode``, each code with its HTTP status
  (the definition's ``x-http-status``), in the catalogue's order.
- :data:`LEASE_TTL_DEFAULT`, :data:`LEASE_TTL_MAX`: ``editing#TtlSeconds``
  (``default``, ``maximum``; seconds).

It imports only the standard library and reads a few small JSON files, so
``ce``'s start-up may import it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib.resources import files
from typing import Any


@lru_cache(maxsize=None)
def _file(file: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(files("commonroom.schema").joinpath(f"{file}.json").read_text("utf-8"))
    return loaded


def definition(name: str) -> dict[str, Any]:
    """The schema definition ``"<file>#<Def>"`` (``"common#Capability"``), as written in ``schema/<file>.json``.

    Raises ``KeyError`` for an unknown definition.
    """
    file, _, def_name = name.partition("#")
    found: dict[str, Any] = _file(file)["$defs"][def_name]
    return found


def enum(name: str) -> tuple[str, ...]:
    """The ``enum`` of the definition ``name``, in its order."""
    return tuple(definition(name)["enum"])


CAPABILITIES: tuple[str, ...] = enum("common#Capability")
MESSAGE_KINDS: tuple[str, ...] = enum("boards#MessageKind")
MESSAGE_STATUSES: tuple[str, ...] = enum("boards#MessageStatus")
PRIORITIES: tuple[str, ...] = enum("boards#Priority")
PROPOSAL_STATUSES: tuple[str, ...] = enum("editing#ProposalStatus")
HANDOFF_STATUSES: tuple[str, ...] = enum("handoffs#HandoffStatus")
TASK_STATUSES: tuple[str, ...] = enum("handoffs#TaskStatus")
_ERRORS = definition("error#ErrorCode")
ERROR_STATUS: dict[str, int] = {code: _ERRORS["x-http-status"][code] for code in _ERRORS["enum"]}
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
    "priorities": words(PRIORITIES, "or", "`"),
    "proposal-statuses": words(PROPOSAL_STATUSES, "or", "`"),
    "handoff-statuses": words(HANDOFF_STATUSES, "or", "`"),
    "task-statuses": words(TASK_STATUSES, "or", "`"),
    "lease-ttl-default": str(LEASE_TTL_DEFAULT),
    "lease-ttl-min": str(LEASE_TTL_MIN),
    "lease-ttl-max": str(LEASE_TTL_MAX),
}
