"""``ce proposal list|show|approve|reject|withdraw`` and ``ce propose`` (docs/editing.md, docs/operator.md).

Every command works with a session (``--session-file``, else the room's
default); ``list`` and ``show`` also take the room's FILE for the local
operator, read from the sidecar (:mod:`commonroom.cli.where`). ``show`` is
the review before approving: the proposal, whether it still applies at the
head, its diff against its base and, when the head moved, against the head
(operation ``proposal_review``). A proposal id may be given as the tables
print it, or a unique start of it (:mod:`commonroom.cli.ids`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from . import ids, where
from .common import handled
from .document import region_of
from .editing import HeadingOpt, LinesOpt, text_of
from .options import AfterFile, CursorOpt, FileArg, LimitOpt, SessionOpt
from .render import JSON_OUTPUT, show
from .sessions import session_call
from .usage import CeTyper
from ..vocabulary import PROPOSAL_STATUSES, words

proposal_app = CeTyper(help="Proposals: list, review (show), approve, reject, withdraw.", no_args_is_help=True,
                       rich_markup_mode=None)

ProposalArg = Annotated[str, typer.Argument(help="The proposal id (pr_…), or a unique start of it as the tables print it.")]
FileOrProposalArg = Annotated[str, typer.Argument(
    metavar="[FILE] PROPOSAL_ID", help="The proposal id (pr_…) or a unique start of it; the local operator may "
    "give the room's FILE before it.")]
StatusOpt = Annotated[Optional[str], typer.Option(help=words(PROPOSAL_STATUSES) + ".")]


def _head(file: Path | None, session_file: Path | None) -> int:
    """The head version number, as this caller reads the room."""
    return int(where.read(file, session_file, "workspace_status")["head_version"])


@proposal_app.command("list")
@handled
def list_command(file: FileArg = None, status: StatusOpt = None, limit: LimitOpt = 50, cursor: CursorOpt = None,
                 session_file: SessionOpt = None) -> None:
    """List one page of proposals, oldest first; an open one that no longer applies at the head says "conflicts"."""
    page = where.read(file, session_file, "proposals_list", {"status": status, "limit": limit, "cursor": cursor})
    if not JSON_OUTPUT.get():
        moved = [p for p in page["proposals"] if p["status"] == "open"]
        head = _head(file, session_file) if moved else 0
        for row in moved:
            if row["base_version"] != head:
                review = where.read(file, session_file, "proposal_review", {"proposal_id": row["id"]})
                row["applies"] = review["applies"]
    show(page, "editing#ProposalsPage")


@proposal_app.command("show")
@handled
def show_command(first: FileOrProposalArg, second: AfterFile = None, session_file: SessionOpt = None) -> None:
    """Review a proposal before deciding: summary, author, base, whether it still applies at the head, the diff
    against its base and, when the head moved, the diff against the head (or the conflicting hunks)."""
    file, (given, _) = where.split([first, second], 1)
    proposal_id = where.proposal(file, session_file, str(given))
    show(where.read(file, session_file, "proposal_review", {"proposal_id": proposal_id}), "editing#ProposalReview")


@proposal_app.command("approve")
@handled(made="version.number")
def approve_command(proposal_id: ProposalArg, session_file: SessionOpt = None) -> None:
    """Approve a proposal: it becomes the next version (review it first with ce proposal show)."""
    proposal_id = ids.proposal(session_file, proposal_id)
    show(session_call(session_file, "proposal_approve", {"proposal_id": proposal_id}), "editing#ApproveResult")


@proposal_app.command("reject")
@handled
def reject_command(proposal_id: ProposalArg, reason: Annotated[Optional[str], typer.Option(help="Why.")] = None,
                   session_file: SessionOpt = None) -> None:
    """Reject a proposal."""
    proposal_id = ids.proposal(session_file, proposal_id)
    values = {"proposal_id": proposal_id, **({"reason": reason} if reason else {})}
    show(session_call(session_file, "proposal_reject", values), "editing#Proposal")


@proposal_app.command("withdraw")
@handled
def withdraw_command(proposal_id: ProposalArg, session_file: SessionOpt = None) -> None:
    """Withdraw your own proposal."""
    proposal_id = ids.proposal(session_file, proposal_id)
    show(session_call(session_file, "proposal_withdraw", {"proposal_id": proposal_id}), "editing#Proposal")


@handled(made="id")
def propose_command(
    base: Annotated[int, typer.Option("--base", help="The version the change is based on: v1, 1, or head.",
                                      parser=ids.version_or_head)],
    heading: HeadingOpt = None,
    lines: LinesOpt = None,
    text: Annotated[Optional[str], typer.Option(help="Replacement text (else --text-file, else stdin).")] = None,
    text_file: Annotated[Optional[Path], typer.Option(help="Read the replacement text from a file.")] = None,
    summary: Annotated[str, typer.Option(help="One line saying what changes.")] = "",
    session_file: SessionOpt = None,
) -> None:
    """Propose replacement text for a region as seen at --base."""
    body: dict[str, Any] = {"base_version": base, "region": region_of(heading, lines),
                            "text": text_of(text, text_file), "summary": summary}
    if base == ids.HEAD:
        body["base_version"] = _head(None, session_file)
    show(session_call(session_file, "proposal_create", body), "editing#Proposal")
