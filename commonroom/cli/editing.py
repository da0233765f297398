"""Editing commands.

Local operator reads (the sidecar; work whether or not the room runs):
``ce proposals FILE``, ``ce versions FILE``, ``ce leases FILE``,
``ce participants FILE``, ``ce diff FILE A [B]``.

Every command prints for people (see :mod:`commonroom.cli.render`);
``--json`` prints the schema'd answer unchanged.

Participant commands over the stored session (the byte client):
``ce read``, ``ce lease acquire|renew|release|list``, ``ce propose``,
``ce approve``, ``ce reject``, ``ce withdraw``, ``ce write``. An id may be
given as the tables print it, a unique start of it (:mod:`commonroom.cli.ids`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ..errors import InvalidRequest
from ..vocabulary import LEASE_TTL_DEFAULT, LEASE_TTL_MAX, LEASE_TTL_MIN, PROPOSAL_STATUSES, words
from . import document, ids
from .document import region_of
from .options import CursorOpt, LimitOpt, SessionOpt
from .common import handled, operator_read
from .sessions import session_call
from .render import show
from .usage import CeTyper

lease_app = CeTyper(help="Lease regions of the document (needs the lease capability).", no_args_is_help=True, rich_markup_mode=None)

HeadingOpt = Annotated[Optional[list[str]], typer.Option("--heading", help="A heading path, one title per --heading, outermost first.")]
LinesOpt = Annotated[Optional[str], typer.Option("--lines", help="A 1-based inclusive line range: 3-10.")]
ProposalArg = Annotated[str, typer.Argument(help="The proposal id (pr_…), or a unique start of it as the tables print it.")]
LeaseArg = Annotated[str, typer.Argument(help="The lease id (l_…), or a unique start of it as the tables print it.")]


# -- local operator reads ------------------------------------------------------


@handled
def proposals_command(
    file: Annotated[Path, typer.Argument(help="The room's markdown file.")],
    status: Annotated[Optional[str], typer.Option(help=words(PROPOSAL_STATUSES) + ".")] = None,
    limit: LimitOpt = 50,
    cursor: CursorOpt = None,
) -> None:
    """List one page of proposals from the sidecar (works whether or not the room runs)."""
    show(operator_read(file, "proposals_list", {"status": status, "limit": limit, "cursor": cursor}),
         "editing#ProposalsPage")


@handled
def versions_command(
    file: Annotated[Path, typer.Argument(help="The room's markdown file.")],
    limit: LimitOpt = 50,
    cursor: CursorOpt = None,
) -> None:
    """List one page of versions, newest first, from the sidecar."""
    show(operator_read(file, "versions_list", {"limit": limit, "cursor": cursor}), "editing#VersionsPage")


@handled
def leases_command(file: Annotated[Path, typer.Argument(help="The room's markdown file.")],
                   limit: LimitOpt = 50, cursor: CursorOpt = None) -> None:
    """List one page of the live leases, oldest acquired first, from the sidecar."""
    show(operator_read(file, "leases_list", {"limit": limit, "cursor": cursor}), "editing#LeasesPage")


@handled
def participants_command(file: Annotated[Path, typer.Argument(help="The room's markdown file.")],
                         limit: LimitOpt = 50, cursor: CursorOpt = None) -> None:
    """List one page of the participants, in join order, from the sidecar."""
    show(operator_read(file, "participants_list", {"limit": limit, "cursor": cursor}), "room#ParticipantsPage")


@handled
def diff_command(
    file: Annotated[Path, typer.Argument(help="The room's markdown file.")],
    a: Annotated[int, typer.Argument(help="From version (v2 or 2).", parser=ids.version)],
    b: Annotated[Optional[int], typer.Argument(help="To version, v3 or 3 (default: the head).", parser=ids.version)] = None,
) -> None:
    """Print the unified diff between two versions (coloured on a terminal)."""
    show(operator_read(file, "versions_diff", {"from_version": a, "to_version": b}), "editing#Diff")


# -- participant commands --------------------------------------------------------


@handled
def read_command(heading: HeadingOpt = None, lines: LinesOpt = None, session_file: SessionOpt = None,
                 raw: Annotated[bool, typer.Option("--raw", hidden=True, help="Kept for scripts: the text is "
                                                   "what ce read prints.")] = False) -> None:
    """Print the document (or a region): rendered on a terminal, its exact bytes when piped.

    ``ce read > copy.md`` reproduces the document byte for byte; ``--json``
    prints the Document answer (text, version, content hash, lines).
    """
    document.read(heading, lines, session_file, raw)


@lease_app.command("acquire")
@handled(made="id")
def lease_acquire(heading: HeadingOpt = None, lines: LinesOpt = None,
                  ttl: Annotated[Optional[int], typer.Option(help=f"Seconds, {LEASE_TTL_MIN} to {LEASE_TTL_MAX} (default {LEASE_TTL_DEFAULT}).")] = None,
                  session_file: SessionOpt = None) -> None:
    """Lease a region (the whole document when none is given)."""
    body: dict[str, Any] = {"region": region_of(heading, lines)}
    if ttl is not None:
        body["ttl_seconds"] = ttl
    show(session_call(session_file, "lease_acquire", body), "editing#Lease")


@lease_app.command("renew")
@handled
def lease_renew(lease_id: LeaseArg, ttl: Annotated[Optional[int], typer.Option(help=f"Seconds, {LEASE_TTL_MIN} to {LEASE_TTL_MAX}.")] = None,
                session_file: SessionOpt = None) -> None:
    """Renew a lease of this session."""
    body = {"ttl_seconds": ttl} if ttl is not None else {}
    lease_id = ids.lease(session_file, lease_id)
    show(session_call(session_file, "lease_renew", {"lease_id": lease_id, **body}), "editing#Lease")


@lease_app.command("release")
@handled
def lease_release(lease_id: LeaseArg, session_file: SessionOpt = None) -> None:
    """Release a lease of this session."""
    lease_id = ids.lease(session_file, lease_id)
    show(session_call(session_file, "lease_release", {"lease_id": lease_id}), "editing#Lease")


@lease_app.command("list")
@handled
def lease_list(limit: LimitOpt = 50, cursor: CursorOpt = None, session_file: SessionOpt = None) -> None:
    """List one page of the live leases in the room, oldest acquired first.

    Prints a table (a LeasesPage with ``--json``); pass its ``next_cursor`` as ``--cursor`` for the next page.
    """
    show(session_call(session_file, "leases_list", {"limit": limit, "cursor": cursor}), "editing#LeasesPage")


def _text(text: str | None, text_file: Path | None) -> str:
    if text is not None and text_file is not None:
        raise InvalidRequest("give --text or --text-file, not both", details={"option": "--text"})
    if text is not None:
        return text
    if text_file is not None:
        try:
            return text_file.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidRequest(f"cannot read {text_file}: {exc}", details={"option": "--text-file"}) from None
    return sys.stdin.read()


@handled(made="id")
def propose_command(
    base: Annotated[int, typer.Option("--base", help="The version the change is based on (v1 or 1).", parser=ids.version)],
    heading: HeadingOpt = None,
    lines: LinesOpt = None,
    text: Annotated[Optional[str], typer.Option(help="Replacement text (else --text-file, else stdin).")] = None,
    text_file: Annotated[Optional[Path], typer.Option(help="Read the replacement text from a file.")] = None,
    summary: Annotated[str, typer.Option(help="One line saying what changes.")] = "",
    session_file: SessionOpt = None,
) -> None:
    """Propose replacement text for a region as seen at --base."""
    body = {"base_version": base, "region": region_of(heading, lines), "text": _text(text, text_file),
            "summary": summary}
    show(session_call(session_file, "proposal_create", body), "editing#Proposal")


@handled(made="version.number")
def approve_command(proposal_id: ProposalArg, session_file: SessionOpt = None) -> None:
    """Approve a proposal: it becomes the next version."""
    proposal_id = ids.proposal(session_file, proposal_id)
    show(session_call(session_file, "proposal_approve", {"proposal_id": proposal_id}),
         "editing#ApproveResult")


@handled
def reject_command(proposal_id: ProposalArg, reason: Annotated[Optional[str], typer.Option(help="Why.")] = None,
                   session_file: SessionOpt = None) -> None:
    """Reject a proposal."""
    proposal_id = ids.proposal(session_file, proposal_id)
    show(session_call(session_file, "proposal_reject", {"proposal_id": proposal_id, **({"reason": reason} if reason else {})}),
         "editing#Proposal")


@handled
def withdraw_command(proposal_id: ProposalArg, session_file: SessionOpt = None) -> None:
    """Withdraw your own proposal."""
    proposal_id = ids.proposal(session_file, proposal_id)
    show(session_call(session_file, "proposal_withdraw", {"proposal_id": proposal_id}), "editing#Proposal")


@handled(made="number")
def write_command(
    expected: Annotated[int, typer.Option("--expected", help="The version you edited, the head (v2 or 2).",
                                          parser=ids.version)],
    heading: HeadingOpt = None,
    lines: LinesOpt = None,
    text: Annotated[Optional[str], typer.Option(help="New text (else --text-file, else stdin).")] = None,
    text_file: Annotated[Optional[Path], typer.Option(help="Read the new text from a file.")] = None,
    summary: Annotated[str, typer.Option(help="One line saying what changes.")] = "",
    session_file: SessionOpt = None,
) -> None:
    """Replace the document or a region directly (needs write)."""
    body = {"expected_version": expected, "region": region_of(heading, lines), "text": _text(text, text_file),
            "summary": summary}
    show(session_call(session_file, "document_write", body), "editing#VersionInfo")
