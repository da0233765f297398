"""Handoff and task commands (docs/handoffs.md).

Local operator (the room's file; reads work whether or not the room runs,
a cancel goes through the owner port when it runs, else the sidecar under
the writer lock): ``ce handoffs FILE``, ``ce handoff FILE ID``,
``ce handoff-events FILE ID``, ``ce task FILE ID --participant NAME``,
``ce task-cancel FILE ID --participant NAME``. A task id is not
authorization: ``--participant`` names whose view the visibility rule is
checked for (the task's owner, its assignee, or a participant holding
``approve`` in a live session); cancelling follows the one cancel rule
(the owner or ``approve``: the assignee sees the task but may not cancel
it).

Participant commands over the stored session (the byte client), for
scripts: ``ce handoff-create``, ``ce handoff-accept``,
``ce handoff-request-input``, ``ce handoff-complete``,
``ce handoff-approve``, ``ce handoff-reject``, ``ce handoff-cancel``.
Each calls the route its operation declares; nothing here decides. A
handoff id may be given as the tables print it, a unique start of it
(:mod:`commonroom.cli.ids`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable, Optional
from urllib.parse import quote

import typer

if TYPE_CHECKING:
    from ..engine import Engine
from . import ids
from .options import CursorOpt, LimitOpt, SessionOpt
from .common import handled, operator_read, operator_write, require_document
from .sessions import session_call
from .render import show

FileArg = Annotated[Path, typer.Argument(help="The room's markdown file.")]
IdArg = Annotated[str, typer.Argument(help="The handoff id (ho_…), or a unique start of it as the tables print it.")]
TaskArg = Annotated[str, typer.Argument(help="The task id (task_…).")]
ParticipantOpt = Annotated[str, typer.Option("--participant", help="Whose view: the task's owner, its assignee, "
                                             "or a participant with approve (required: a task id is not authorization).")]


def _offline(operation: str, body: dict[str, Any]) -> Callable[[Engine], Any]:
    from .. import schemas
    from ..engine import OPERATOR
    from ..operations import OPERATIONS

    op = OPERATIONS[operation]

    def run(engine: Engine) -> Any:
        schemas.validate(op.input, body)
        return op.bind(engine, OPERATOR, body)

    return run



def _path(session_file: Path | None, handoff_id: str, action: str = "") -> str:
    handoff_id = ids.handoff(session_file, handoff_id)
    return f"/workspace/handoffs/{quote(handoff_id, safe='')}" + (f"/{action}" if action else "")


# -- the local operator ---------------------------------------------------------


@handled
def handoffs_command(file: FileArg,
                     status: Annotated[Optional[str], typer.Option(help="open, accepted, result_ready, approved, "
                                                                   "rejected or cancelled.")] = None,
                     limit: LimitOpt = 50, cursor: CursorOpt = None) -> None:
    """List one page of handoffs from the sidecar, oldest first."""
    show(operator_read(file, "handoff_list", {"status": status, "limit": limit, "cursor": cursor}), "handoffs#HandoffsPage")


@handled
def handoff_command(file: FileArg, handoff_id: IdArg) -> None:
    """Show one handoff."""
    show(operator_read(file, "handoff_get", {"handoff_id": ids.operator_handoff(file, handoff_id)}), "handoffs#Handoff")


@handled
def handoff_events_command(file: FileArg, handoff_id: IdArg, limit: LimitOpt = 50, cursor: CursorOpt = None) -> None:
    """List one page of a handoff's own events, oldest first."""
    values = {"handoff_id": ids.operator_handoff(file, handoff_id), "limit": limit, "cursor": cursor}
    show(operator_read(file, "handoff_events", values),
         "handoffs#HandoffEventsPage")


@handled
def task_command(file: FileArg, task_id: TaskArg, participant: ParticipantOpt) -> None:
    """Show a task as --participant may see it (handoff_not_found for anyone else)."""
    show(operator_read(file, "task_get", {"task_id": task_id, "participant": participant}), "handoffs#Task")


@handled
def task_cancel_command(file: FileArg, task_id: TaskArg, participant: ParticipantOpt) -> None:
    """Cancel a task as --participant: its owner or a holder of approve (a terminal task stays as it was)."""
    body = {"task_id": task_id, "participant": participant}
    document = require_document(file)
    show(operator_write(document, "POST", "/workspace/task/cancel", body, _offline("task_cancel", body)),
         "handoffs#Task")


# -- participant commands (scripts) -----------------------------------------------


@handled
def handoff_create_command(
    summary: Annotated[str, typer.Option(help="What is asked (at most 2,000 characters).")],
    constraints: Annotated[Optional[str], typer.Option(help="Conditions the work must meet (8,000).")] = None,
    artifact: Annotated[Optional[list[str]], typer.Option("--artifact", help="An artifact URI (repeatable); "
                                                          "stored, never fetched.")] = None,
    assignee: Annotated[Optional[str], typer.Option(help="The participant who alone may accept.")] = None,
    idempotency_key: Annotated[Optional[str], typer.Option("--idempotency-key", help="Retries with the same "
                                                           "key return the same handoff.")] = None,
    session_file: SessionOpt = None,
) -> None:
    """Create a handoff (needs handoff); prints the handoff and its task."""
    body: dict[str, Any] = {"summary": summary}
    if constraints is not None:
        body["constraints"] = constraints
    if artifact:
        body["artifacts"] = [{"uri": uri} for uri in artifact]
    if assignee is not None:
        body["assignee"] = assignee
    if idempotency_key is not None:
        body["idempotency_key"] = idempotency_key
    show(session_call(session_file, "POST", "/workspace/handoffs", body), "handoffs#HandoffAndTask")


@handled
def handoff_accept_command(handoff_id: IdArg, session_file: SessionOpt = None) -> None:
    """Accept an open handoff: you become its assignee."""
    show(session_call(session_file, "POST", _path(session_file, handoff_id, "accept"), {}), "handoffs#HandoffAndTask")


@handled
def handoff_request_input_command(handoff_id: IdArg,
                                  message: Annotated[str, typer.Option(help="The question for the owner.")],
                                  session_file: SessionOpt = None) -> None:
    """As the assignee, ask the handoff's owner a question (the task waits for input)."""
    show(session_call(session_file, "POST", _path(session_file, handoff_id, "request-input"), {"message": message}),
         "handoffs#HandoffAndTask")


@handled
def handoff_complete_command(
    handoff_id: IdArg,
    result: Annotated[Optional[str], typer.Option(help="The result text (else --result-file, else stdin).")] = None,
    result_file: Annotated[Optional[Path], typer.Option(help="Read the result from a file.")] = None,
    session_file: SessionOpt = None,
) -> None:
    """As the assignee, complete a handoff with its result (at most 256 KiB)."""
    from .editing import _text

    show(session_call(session_file, "POST", _path(session_file, handoff_id, "complete"), {"result": _text(result, result_file)}),
         "handoffs#HandoffAndTask")


@handled
def handoff_approve_command(handoff_id: IdArg, session_file: SessionOpt = None) -> None:
    """Approve a handoff's result (needs approve)."""
    show(session_call(session_file, "POST", _path(session_file, handoff_id, "approve"), {}), "handoffs#Handoff")


@handled
def handoff_reject_command(handoff_id: IdArg, reason: Annotated[Optional[str], typer.Option(help="Why.")] = None,
                           session_file: SessionOpt = None) -> None:
    """Reject a handoff's result (needs approve)."""
    show(session_call(session_file, "POST", _path(session_file, handoff_id, "reject"), {"reason": reason} if reason else {}),
         "handoffs#Handoff")


@handled
def handoff_cancel_command(handoff_id: IdArg, reason: Annotated[Optional[str], typer.Option(help="Why.")] = None,
                           session_file: SessionOpt = None) -> None:
    """Cancel an open or accepted handoff (its owner, or approve)."""
    show(session_call(session_file, "POST", _path(session_file, handoff_id, "cancel"), {"reason": reason} if reason else {}),
         "handoffs#Handoff")
