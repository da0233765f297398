"""``completion/complete``: values for prompt and resource-template arguments.

Advertised as ``capabilities.completions: {}`` in ``server/discover``; the
params are checked against ``schema/mcp.json#/$defs/CompleteParams``
(-32602 otherwise). The room's own sources, each reading what the session
may read (``read``; a session without it gets the room error
``permission_denied``, as ``prompts/get`` and ``resources/read`` do):

=====================  ==========================================  ============================
argument               where                                       values, best first
=====================  ==========================================  ============================
``proposal_id``        prompt ``review_proposal``                  proposal ids: open ones, then
                                                                   the rest, newest first
``since_version``      prompt ``summarize_changes``                version numbers, head first
``number``             template ``…/workspace/versions/{number}``  version numbers, head first
``heading``            prompt ``draft_section``                    heading paths of the head,
                                                                   ``A > B`` (the prompt's
                                                                   separator), document order
=====================  ==========================================  ============================

Later parts add theirs with ``registry.add_completion`` (``handoff_id``:
one call, for every prompt or template that declares the argument).

Matching: the typed ``value`` is compared case-insensitively; candidates
that start with it come first, then those that contain it, each group in
the source's order. At most :data:`MAX_VALUES` values are answered, with
``total`` (every match) and ``hasMore``. An unknown prompt or template is
-32602; an argument the reference does not declare, or one without a
source (the conformance fixtures' prompts), answers no values.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator

from .. import regions
from ..engine import require
from .jsonrpc import invalid_params
from .prompts import HEADING_SEPARATOR
from .registry import Context, Registry
from .resources import VERSION_TEMPLATE

#: The most values one answer carries (the schema's ``maxItems``).
MAX_VALUES = 100
#: Proposals read per page while collecting ids.
PAGE = 200


def heading_paths(ctx: Context, value: str) -> Iterator[str]:
    """Every heading path of the head document, in document order."""
    require(ctx.actor, "read")
    seen: set[str] = set()
    for heading in regions.headings(ctx.engine.head().text):
        path = HEADING_SEPARATOR.join(heading.path)
        if path not in seen:
            seen.add(path)
            yield path


def version_numbers(ctx: Context, value: str) -> Iterator[str]:
    """Every version number, the head first."""
    require(ctx.actor, "read")
    return (str(n) for n in range(ctx.engine.head().number, 0, -1))


def proposal_ids(ctx: Context, value: str) -> list[str]:
    """Every proposal id the session can read: open ones first, then the rest; newest first in each."""
    require(ctx.actor, "read")
    rows: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = ctx.engine.proposals(ctx.actor, None, PAGE, cursor)
        rows.extend(page["proposals"])
        cursor = page["next_cursor"]
        if not cursor:
            break
    rows.reverse()
    return [p["id"] for p in rows if p["status"] == "open"] + [p["id"] for p in rows if p["status"] != "open"]


def matching(candidates: Iterable[str], value: str) -> list[str]:
    """``candidates`` that start with ``value`` (case-insensitive), then those that contain it."""
    typed = value.casefold()
    if not typed:
        return list(candidates)
    first, then = [], []
    for candidate in candidates:
        folded = candidate.casefold()
        if folded.startswith(typed):
            first.append(candidate)
        elif typed in folded:
            then.append(candidate)
    return first + then


def _declared(registry: Registry, kind: str, ref: str) -> set[str]:
    """The arguments the referenced prompt or template declares; -32602 when it does not exist."""
    if kind == "ref/prompt":
        prompt = registry.prompts.get(ref)
        if prompt is None:
            raise invalid_params(f"Unknown prompt: {ref}", {"name": ref})
        return {a["name"] for a in prompt.arguments}
    for template in registry.templates:
        if template.uri_template == ref:
            return set(template.pattern.groupindex) if template.pattern else set()
    if ref in registry.resources:
        return set()
    raise invalid_params(f"Unknown resource template: {ref}", {"uri": ref})


def complete(ctx: Context) -> dict[str, Any]:
    """``completion/complete`` (params already match ``mcp#CompleteParams``)."""
    ref = ctx.params["ref"]
    kind = ref["type"]
    name = ref["name"] if kind == "ref/prompt" else ref["uri"]
    argument = ctx.params["argument"]
    declared = _declared(ctx.registry, kind, name)
    source = ctx.registry.completion_source(kind, name, argument["name"]) if argument["name"] in declared else None
    if source is None:
        return {"completion": {"values": [], "total": 0, "hasMore": False}}
    ctx.arguments = dict((ctx.params.get("context") or {}).get("arguments") or {})
    found = matching(source(ctx, argument["value"]), argument["value"])
    return {"completion": {"values": found[:MAX_VALUES], "total": len(found), "hasMore": len(found) > MAX_VALUES}}


def register_completions(registry: Registry) -> None:
    """The method, the capability and the room's own sources (see the module docstring)."""
    registry.add_completion("proposal_id", proposal_ids, prompt="review_proposal")
    registry.add_completion("since_version", version_numbers, prompt="summarize_changes")
    registry.add_completion("heading", heading_paths, prompt="draft_section")
    registry.add_completion("number", version_numbers, template=VERSION_TEMPLATE)
    registry.add_method("completion/complete", complete, params_schema="mcp#CompleteParams")
    registry.add_capability("completions", {})
