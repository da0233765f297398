"""``ce handoff list|show|events|create|accept|request-input|complete|approve|reject|cancel`` (docs/handoffs.md).

Every command works with a session (``--session-file``, else the room's
default) over the byte client; ``list``, ``show`` and ``events`` also take
the room's FILE for the local operator, read from the sidecar whether or
not the room runs (:mod:`commonroom.cli.where`). ``ce handoff FILE ID``
(the command before the group) is ``ce handoff show FILE ID``. Tasks are
:mod:`commonroom.cli.tasks`. Each command calls the route its operation
declares; nothing here decides. A handoff id may be given as the tables
print it, a unique start of it, and a participant (``--assignee``) by name
or by the id ``ce participants`` prints (:mod:`commonroom.cli.ids`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from . import ids, render_handoffs, where
from ..errors import HandoffNotFound
from ..vocabulary import HANDOFF_STATUSES, words
from .options import AfterFile, CursorOpt, FileArg, LimitOpt, SessionOpt
from .common import handled
from .sessions import session_call
from .render import JSON_OUTPUT, show
from .usage import CeTyper, ShowByDefault

handoff_app = CeTyper(help="Handoffs: list, show, events, create, accept, request-input, complete, approve, reject, "
                      "cancel.", cls=ShowByDefault, no_args_is_help=True, rich_markup_mode=None)

IdArg = Annotated[str, typer.Argument(help="The handoff id (ho_…), or a unique start of it as the tables print it.")]
FileOrIdArg = Annotated[str, typer.Argument(
    metavar="[FILE] HANDOFF_ID", help="The handoff id (ho_…) or a unique start of it; the local operator may give "
    "the room's FILE before it.")]



def _handoff(session_file: Path | None, handoff_id: str, **values: Any) -> dict[str, Any]:
    """The input of a handoff operation: the handoff id (a prefix resolved) and ``values``."""
    return {"handoff_id": ids.handoff(session_file, handoff_id), **values}


@handoff_app.command("list")
@handled
def list_command(file: FileArg = None,
                 status: Annotated[Optional[str], typer.Option(help=words(HANDOFF_STATUSES) + ".")] = None,
                 limit: LimitOpt = 50, cursor: CursorOpt = None, session_file: SessionOpt = None) -> None:
    """List one page of handoffs, oldest first."""
    show(where.read(file, session_file, "handoff_list", {"status": status, "limit": limit, "cursor": cursor}),
         "handoffs#HandoffsPage")


@handoff_app.command("show")
@handled
def show_command(first: FileOrIdArg, second: AfterFile = None, session_file: SessionOpt = None) -> None:
    """Show one handoff: who, summary, constraints, artifacts, its task's status with the open input
    requests and the answers given, the result and the decision (--json: the handoff as the API gives it)."""
    file, (given, _) = where.split([first, second], 1)
    answer = where.read(file, session_file, "handoff_get",
                        {"handoff_id": where.handoff(file, session_file, str(given))})
    if JSON_OUTPUT.get():
        show(answer, "handoffs#Handoff")
        return
    task = None
    if answer.get("task_id"):  # the owner may always see the task; an expired task is gone
        try:
            values = {"task_id": answer["task_id"], "participant": answer["owner"] if file is not None else None}
            task = where.read(file, session_file, "task_get", values)
        except HandoffNotFound:  # a session that may not see the task: the handoff alone
            pass
    render_handoffs.handoff_detail(answer, task)


@handoff_app.command("events")
@handled
def events_command(first: FileOrIdArg, second: AfterFile = None, limit: LimitOpt = 50, cursor: CursorOpt = None,
                   session_file: SessionOpt = None) -> None:
    """List one page of a handoff's own events, oldest first (who by name, what changed)."""
    file, (given, _) = where.split([first, second], 1)
    values = {"handoff_id": where.handoff(file, session_file, str(given)), "limit": limit, "cursor": cursor}
    answer = where.read(file, session_file, "handoff_events", values)
    if JSON_OUTPUT.get():
        show(answer, "handoffs#HandoffEventsPage")
        return
    render_handoffs.handoff_events(answer, where.names(file, session_file))


@handoff_app.command("create")
@handled(made="handoff.id")
def create_command(
    summary: Annotated[str, typer.Option(help="What is asked (at most 2,000 characters).")],
    constraints: Annotated[Optional[str], typer.Option(help="Conditions the work must meet (8,000).")] = None,
    artifact: Annotated[Optional[list[str]], typer.Option("--artifact", help="An artifact URI (repeatable); "
                                                          "stored, never fetched.")] = None,
    assignee: Annotated[Optional[str], typer.Option(help="The participant who alone may accept: a name, or an "
                                                    "id as ce participants prints it.")] = None,
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
        body["assignee"] = ids.participant(session_file, assignee, "assignee")
    if idempotency_key is not None:
        body["idempotency_key"] = idempotency_key
    show(session_call(session_file, "handoff_create", body), "handoffs#HandoffAndTask")


@handoff_app.command("accept")
@handled
def accept_command(handoff_id: IdArg, session_file: SessionOpt = None) -> None:
    """Accept an open handoff: you become its assignee."""
    show(session_call(session_file, "handoff_accept", _handoff(session_file, handoff_id)), "handoffs#HandoffAndTask")


@handoff_app.command("request-input")
@handled
def request_input_command(handoff_id: IdArg,
                                  message: Annotated[str, typer.Option(help="The question for the owner.")],
                                  session_file: SessionOpt = None) -> None:
    """As the assignee, ask the handoff's owner a question (the task waits for input)."""
    show(session_call(session_file, "handoff_request_input", _handoff(session_file, handoff_id, message=message)),
         "handoffs#HandoffAndTask")


@handoff_app.command("complete")
@handled
def complete_command(
    handoff_id: IdArg,
    result: Annotated[Optional[str], typer.Option(help="The result text (else --result-file, else stdin).")] = None,
    result_file: Annotated[Optional[Path], typer.Option(help="Read the result from a file.")] = None,
    session_file: SessionOpt = None,
) -> None:
    """As the assignee, complete a handoff with its result (at most 256 KiB)."""
    from .editing import text_of

    show(session_call(session_file, "handoff_complete", _handoff(session_file, handoff_id, result=text_of(result, result_file))),
         "handoffs#HandoffAndTask")


@handoff_app.command("approve")
@handled
def approve_command(handoff_id: IdArg, session_file: SessionOpt = None) -> None:
    """Approve a handoff's result (needs approve)."""
    show(session_call(session_file, "handoff_approve", _handoff(session_file, handoff_id)), "handoffs#Handoff")


@handoff_app.command("reject")
@handled
def reject_command(handoff_id: IdArg, reason: Annotated[Optional[str], typer.Option(help="Why.")] = None,
                           session_file: SessionOpt = None) -> None:
    """Reject a handoff's result (needs approve)."""
    show(session_call(session_file, "handoff_reject", _handoff(session_file, handoff_id, **({"reason": reason} if reason else {}))),
         "handoffs#Handoff")


@handoff_app.command("cancel")
@handled
def cancel_command(handoff_id: IdArg, reason: Annotated[Optional[str], typer.Option(help="Why.")] = None,
                           session_file: SessionOpt = None) -> None:
    """Cancel an open or accepted handoff (its owner, or approve)."""
    show(session_call(session_file, "handoff_cancel", _handoff(session_file, handoff_id, **({"reason": reason} if reason else {}))),
         "handoffs#Handoff")
