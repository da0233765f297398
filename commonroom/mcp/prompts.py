"""commonroom's MCP prompts: short workflows filled with real room data.

===================  ===============================  =====================================
prompt               arguments                        engine calls
===================  ===============================  =====================================
review_proposal      proposal_id                      proposal, version (its base)
summarize_changes    since_version                    versions, diff
draft_section        heading, instructions?           document (+ the section, if present)
===================  ===============================  =====================================

Each returns one ``user`` message (``draft_section`` adds the document as
an embedded resource). A refusal (e.g. ``proposal_not_found``) is a
JSON-RPC error: -32602 for "no such thing", else -31000 (dispatch.py).
"""

from __future__ import annotations

from typing import Any

from .. import numbers
from ..errors import InvalidRegion, InvalidRequest
from .registry import Context, Registry
from .resources import DOCUMENT

#: Separator of heading path parts in ``draft_section``'s ``heading``.
HEADING_SEPARATOR = " > "


def _text(text: str) -> dict[str, Any]:
    return {"role": "user", "content": {"type": "text", "text": text}}


def _int_arg(ctx: Context, name: str) -> int:
    try:
        return numbers.natural(str(ctx.arguments.get(name, "")), minimum=1)
    except numbers.NotANumber as exc:
        raise InvalidRequest(f"{name} {exc}", details={"parameter": name}) from None


def review_proposal(ctx: Context) -> list[dict[str, Any]]:
    """The proposal, the base text of its lines, and how to decide."""
    proposal = ctx.engine.proposal(ctx.actor, str(ctx.arguments["proposal_id"]))
    base = ctx.engine.version(ctx.actor, proposal["base_version"])
    start, end = proposal["lines"]
    base_lines = base["text"].splitlines(keepends=True)[max(start - 1, 0):max(end, 0)]
    return [_text(
        f"Review proposal {proposal['id']} by {proposal['author']} (status {proposal['status']}).\n"
        f"Summary: {proposal['summary'] or '(none)'}\n"
        f"It replaces lines {start}-{end} of version {proposal['base_version']} "
        f"(region {proposal['region']}).\n\n"
        f"--- text at version {proposal['base_version']} ---\n{''.join(base_lines)}\n"
        f"--- proposed text ---\n{proposal['text']}\n---\n\n"
        "Check that the change is correct, keeps the document's style, and does not undo others' work. "
        "Then call proposal_approve with proposal_id, or proposal_reject with a short reason."
    )]


def summarize_changes(ctx: Context) -> list[dict[str, Any]]:
    """Versions after ``since_version`` and the diff to the head."""
    since = _int_arg(ctx, "since_version")
    page = ctx.engine.versions(ctx.actor, 200, None)
    newer = [v for v in page["versions"] if v["number"] > since]
    diff = ctx.engine.diff(ctx.actor, since, None)
    listing = "\n".join(
        f"- v{v['number']} by {v['author'] or 'operator'} at {v['created_at']}: {v['summary']}" for v in newer
    ) or "(no versions after it)"
    return [_text(
        f"Summarize what changed in the document since version {since} "
        f"(now version {diff['to_version']}), for someone who last read version {since}.\n\n"
        f"Versions:\n{listing}\n\nUnified diff:\n{diff['diff'] or '(no difference)'}\n\n"
        "Group the changes by section, name who made them, and point out anything that needs a decision."
    )]


def draft_section(ctx: Context) -> list[dict[str, Any]]:
    """The document (embedded), the current section if any, and how to propose."""
    heading = str(ctx.arguments["heading"]).strip()
    path = [part.strip() for part in heading.split(HEADING_SEPARATOR.strip()) if part.strip()]
    doc = ctx.engine.document(ctx.actor)
    try:
        section = ctx.engine.document(ctx.actor, {"heading": path})
    except InvalidRegion:
        section = None
    wish = str(ctx.arguments.get("instructions") or "").strip()
    if section is not None:
        where = (f"The section exists at lines {section['lines'][0]}-{section['lines'][1]}; rewrite it. "
                 f"Current text:\n{section['text']}")
        how = (f"lease_acquire {{\"region\": {{\"heading\": {path}}}}}, then proposal_create with "
               f"base_version {doc['version']}, the same region, and the whole new section (heading line "
               "included) as text; release the lease afterwards.")
    else:
        where = "The section does not exist yet; choose where it belongs."
        how = (f"propose it with proposal_create, base_version {doc['version']}, and a region of "
               "{\"lines\": [k, k - 1]} to insert before line k (or replace a neighbouring section).")
    return [
        {"role": "user", "content": {"type": "resource", "resource": {
            "uri": DOCUMENT, "mimeType": "text/markdown", "text": doc["text"]}}},
        _text(
            f"Draft the section \"{heading}\" of this document (version {doc['version']}, attached above).\n"
            f"{where}\n" + (f"Instructions: {wish}\n" if wish else "") +
            f"Match the document's tone and heading levels. When it is ready, {how}"
        ),
    ]


def register_prompts(registry: Registry) -> None:
    """Add the three prompts."""
    registry.add_prompt(
        "review_proposal", title="Review a proposal",
        description="Review an open proposal against the text it replaces, then approve or reject it.",
        arguments=[{"name": "proposal_id", "description": "The proposal's id (proposals_list).", "required": True}],
        get=review_proposal)
    registry.add_prompt(
        "summarize_changes", title="Summarize changes",
        description="Catch up: summarize every change to the document since a version.",
        arguments=[{"name": "since_version", "description": "The version you last read (an integer).",
                    "required": True}],
        get=summarize_changes)
    registry.add_prompt(
        "draft_section", title="Draft a section",
        description="Draft or rewrite one section of the document and propose it.",
        arguments=[{"name": "heading", "required": True,
                    "description": "The section's heading, or a path like \"Design > Storage\"."},
                   {"name": "instructions", "required": False,
                    "description": "What the section should say."}],
        get=draft_section)
