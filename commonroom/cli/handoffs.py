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
scripts: ``ce task-answer`` (the owner answers a task's input request),
``ce handoff-create``, ``ce handoff-accept``,
``ce handoff-request-input``, ``ce handoff-complete``,
``ce handoff-approve``, ``ce handoff-reject``, ``ce handoff-cancel``.
Each calls the route its operation declares; nothing here decides. A
handoff or task id may be given as the tables print it, a unique start of
it, and a participant (``--participant``, ``--assignee``) by name or by the
id ``ce participants`` prints (:mod:`commonroom.cli.ids`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from . import ids, render_shapes
from ..errors import HandoffNotFound, InvalidRequest
from ..vocabulary import HANDOFF_STATUSES, words
from .options import CursorOpt, LimitOpt, SessionOpt
from .common import handled, operator_read, operator_write, require_document
from .sessions import session_call
from .render import JSON_OUTPUT, show

FileArg = Annotated[Path, typer.Argument(help="The room's markdown file.")]
IdArg = Annotated[str, typer.Argument(help="The handoff id (ho_…), or a unique start of it as the tables print it.")]
TaskArg = Annotated[str, typer.Argument(help="The task id (task_…), or a unique start of it.")]
ParticipantOpt = Annotated[str, typer.Option("--participant", help="Whose view, a name or a participant id as "
                                             "ce participants prints it: the task's owner, its assignee, or a "
                                             "participant with approve (required: a task id is not authorization).")]



def _handoff(session_file: Path | None, handoff_id: str, **values: Any) -> dict[str, Any]:
    """The input of a handoff operation: the handoff id (a prefix resolved) and ``values``."""
    return {"handoff_id": ids.handoff(session_file, handoff_id), **values}


# -- the local operator ---------------------------------------------------------


@handled
def handoffs_command(file: FileArg,
                     status: Annotated[Optional[str], typer.Option(help=words(HANDOFF_STATUSES) + ".")] = None,
                     limit: LimitOpt = 50, cursor: CursorOpt = None) -> None:
    """List one page of handoffs from the sidecar, oldest first."""
    show(operator_read(file, "handoff_list", {"status": status, "limit": limit, "cursor": cursor}), "handoffs#HandoffsPage")


@handled
def handoff_command(file: FileArg, handoff_id: IdArg) -> None:
    """Show one handoff: who, summary, constraints, artifacts, its task's status with the open input
    requests and the answers given, the result and the decision (--json: the handoff as the API gives it)."""
    answer = operator_read(file, "handoff_get", {"handoff_id": ids.operator_handoff(file, handoff_id)})
    if JSON_OUTPUT.get():
        show(answer, "handoffs#Handoff")
        return
    task = None
    if answer.get("task_id"):  # the owner may always see the task; an expired task is gone
        try:
            task = operator_read(file, "task_get", {"task_id": answer["task_id"], "participant": answer["owner"]})
        except HandoffNotFound:
            pass
    render_shapes.handoff_detail(answer, task)


@handled
def handoff_events_command(file: FileArg, handoff_id: IdArg, limit: LimitOpt = 50, cursor: CursorOpt = None) -> None:
    """List one page of a handoff's own events, oldest first (who by name, what changed)."""
    values = {"handoff_id": ids.operator_handoff(file, handoff_id), "limit": limit, "cursor": cursor}
    answer = operator_read(file, "handoff_events", values)
    if JSON_OUTPUT.get():
        show(answer, "handoffs#HandoffEventsPage")
        return
    names: dict[str, str] = {}
    listing, cursor_at = ids.operator_listing(file, "participants_list"), None
    for _ in range(ids.MAX_PAGES):
        page = listing(cursor_at)
        names.update({row["id"]: row["name"] for row in page["participants"]})
        cursor_at = page.get("next_cursor")
        if not cursor_at:
            break
    render_shapes.handoff_events(answer, names)


@handled
def task_command(file: FileArg, task_id: TaskArg, participant: ParticipantOpt) -> None:
    """Show a task as --participant may see it (handoff_not_found for anyone else)."""
    values = {"task_id": ids.operator_task(file, task_id), "participant": ids.operator_participant(file, participant)}
    show(operator_read(file, "task_get", values), "handoffs#Task")


@handled
def task_cancel_command(file: FileArg, task_id: TaskArg, participant: ParticipantOpt) -> None:
    """Cancel a task as --participant, who is recorded as the one who cancelled (a terminal task stays as it was).

    Who may: the task's owner, or a participant holding approve in a live session (the one cancel rule, as
    for handoff-cancel); its assignee sees the task but may not cancel it. Anyone else: handoff_not_found or
    permission_denied, and nothing changes.
    """
    document = require_document(file)
    body = {"task_id": ids.operator_task(file, task_id), "participant": ids.operator_participant(file, participant)}
    show(operator_write(document, "task_cancel", body),
         "handoffs#Task")


# -- participant commands (scripts) -----------------------------------------------


@handled
def task_answer_command(
    task_id: TaskArg,
    answer: Annotated[Optional[str], typer.Argument(help="The answer text (sent as {\"answer\": ANSWER}, what "
                                                    "a request without its own schema asks for).")] = None,
    key: Annotated[Optional[str], typer.Option("--key", help="Which input request (input_1, …; ce task and ce "
                                               "handoff list the open ones); default: the one open request.")] = None,
    content: Annotated[Optional[str], typer.Option("--content", help="The answer as a JSON object instead of "
                                                   "ANSWER, for a request with its own requested schema.")] = None,
    session_file: SessionOpt = None,
) -> None:
    """Answer a task's open input request; once every request is answered the assignee works on. Prints the task.

    Who may: whoever may see the task: its owner (whom the request asks), its assignee, or a session holding
    approve; for anyone else the task does not exist (handoff_not_found).
    """
    if (answer is None) == (content is None):
        raise InvalidRequest("give ANSWER or --content JSON, one of them", details={"option": "--content"})
    value: Any = {"answer": answer}
    if content is not None:
        try:
            value = json.loads(content)
        except ValueError as exc:
            raise InvalidRequest(f"--content is not JSON: {exc}", details={"option": "--content"}) from None
        if not isinstance(value, dict):
            raise InvalidRequest("--content must be a JSON object", details={"option": "--content"})
    task_id = ids.task(session_file, task_id)
    if key is None:
        task = session_call(session_file, "task_get", {"task_id": task_id})
        open_keys = sorted(task.get("inputRequests") or {})
        if len(open_keys) != 1:
            raise InvalidRequest(f"the task has {len(open_keys)} open input requests"
                                 + (f" ({', '.join(open_keys)}): give --key" if open_keys else
                                    f" (it is {task.get('status')})"),
                                 details={"option": "--key", "open": open_keys})
        key = open_keys[0]
    show(session_call(session_file, "task_update", {"task_id": task_id, "input_responses": {key: value}}),
         "handoffs#Task")


@handled(made="handoff.id")
def handoff_create_command(
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


@handled
def handoff_accept_command(handoff_id: IdArg, session_file: SessionOpt = None) -> None:
    """Accept an open handoff: you become its assignee."""
    show(session_call(session_file, "handoff_accept", _handoff(session_file, handoff_id)), "handoffs#HandoffAndTask")


@handled
def handoff_request_input_command(handoff_id: IdArg,
                                  message: Annotated[str, typer.Option(help="The question for the owner.")],
                                  session_file: SessionOpt = None) -> None:
    """As the assignee, ask the handoff's owner a question (the task waits for input)."""
    show(session_call(session_file, "handoff_request_input", _handoff(session_file, handoff_id, message=message)),
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

    show(session_call(session_file, "handoff_complete", _handoff(session_file, handoff_id, result=_text(result, result_file))),
         "handoffs#HandoffAndTask")


@handled
def handoff_approve_command(handoff_id: IdArg, session_file: SessionOpt = None) -> None:
    """Approve a handoff's result (needs approve)."""
    show(session_call(session_file, "handoff_approve", _handoff(session_file, handoff_id)), "handoffs#Handoff")


@handled
def handoff_reject_command(handoff_id: IdArg, reason: Annotated[Optional[str], typer.Option(help="Why.")] = None,
                           session_file: SessionOpt = None) -> None:
    """Reject a handoff's result (needs approve)."""
    show(session_call(session_file, "handoff_reject", _handoff(session_file, handoff_id, **({"reason": reason} if reason else {}))),
         "handoffs#Handoff")


@handled
def handoff_cancel_command(handoff_id: IdArg, reason: Annotated[Optional[str], typer.Option(help="Why.")] = None,
                           session_file: SessionOpt = None) -> None:
    """Cancel an open or accepted handoff (its owner, or approve)."""
    show(session_call(session_file, "handoff_cancel", _handoff(session_file, handoff_id, **({"reason": reason} if reason else {}))),
         "handoffs#Handoff")
