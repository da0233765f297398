"""``ce task show|answer|cancel`` (docs/handoffs.md).

A task id is not authorization: a task is seen by its owner, its assignee
or a participant holding ``approve`` (``handoff_not_found`` for anyone
else); cancelling follows the one cancel rule (the owner or ``approve``:
the assignee sees the task but may not cancel it). With a session
(``--session-file``, else the room's default) the session is the one who
reads or acts. The local operator gives the room's FILE first and names
with ``--participant`` whose view the rule is checked for (or as whom a
cancel is made): reads come from the sidecar, a cancel goes through the
owner port when the room runs, else the sidecar under the writer lock.
``ce task FILE ID`` (the command before the group) is ``ce task show FILE
ID``. A task id may be given as the tables print it, a unique start of it,
and a participant by name or by the id ``ce participants`` prints.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any, Optional

import typer

from . import ids, where
from ..errors import InvalidRequest
from .common import handled, operator_write, require_document
from .options import AfterFile, SessionOpt
from .printing import JSON_OUTPUT
from .render import show
from .sessions import session_call
from .usage import CeTyper, ShowByDefault

task_app = CeTyper(help="Tasks (the execution record of a handoff): show, answer, cancel.", cls=ShowByDefault,
                   no_args_is_help=True, rich_markup_mode=None)

TaskArg = Annotated[str, typer.Argument(help="The task id (task_…), or a unique start of it.")]
FileOrTaskArg = Annotated[str, typer.Argument(
    metavar="[FILE] TASK_ID", help="The task id (task_…) or a unique start of it; the local operator gives the "
    "room's FILE before it.")]
ParticipantOpt = Annotated[Optional[str], typer.Option(
    "--participant", help="With FILE (the local operator): whose view, a name or a participant id as ce "
    "participants prints it: the task's owner, its assignee, or a participant with approve (required then: a "
    "task id is not authorization). With a session: only your own.")]


def _as(file: Any, session_file: Any, participant: str | None) -> str | None:
    """The ``participant`` input: required of the local operator, a name resolved from an id."""
    if participant is None:
        if file is not None:  # a usage error, as when the option was required (exit 2)
            raise typer.BadParameter("with FILE, name whose view (a task id is not authorization)",
                                     param_hint="'--participant'")
        return None
    return where.participant(file, session_file, participant)


@task_app.command("show")
@handled
def show_command(first: FileOrTaskArg, second: AfterFile = None, participant: ParticipantOpt = None,
                 session_file: SessionOpt = None) -> None:
    """Show a task as you (or, with FILE, --participant) may see it (handoff_not_found for anyone else)."""
    file, (given, _) = where.split([first, second], 1)
    values = {"task_id": where.task(file, session_file, str(given)), "participant": _as(file, session_file, participant)}
    show(where.read(file, session_file, "task_get", values), "handoffs#Task")


@task_app.command("cancel")
@handled
def cancel_command(first: FileOrTaskArg, second: AfterFile = None, participant: ParticipantOpt = None,
                   session_file: SessionOpt = None) -> None:
    """Cancel a task; with FILE, as --participant, who is recorded as the one who cancelled (a terminal task
    stays as it was).

    Who may: the task's owner, or a participant holding approve in a live session (the one cancel rule, as
    for handoff cancel); its assignee sees the task but may not cancel it. Anyone else: handoff_not_found or
    permission_denied, and nothing changes.
    """
    file, (given, _) = where.split([first, second], 1)
    body = {"task_id": where.task(file, session_file, str(given)), "participant": _as(file, session_file, participant)}
    if file is None:
        task = session_call(session_file, "task_cancel", {k: v for k, v in body.items() if v is not None})
    else:
        task = operator_write(require_document(file), "task_cancel", body)
    show(task, "handoffs#Task")
    if task.get("status") != "cancelled" and not JSON_OUTPUT.get():  # a terminal task stays as it was
        print(f"ce task cancel: the task was {task.get('status')} already: nothing was cancelled", file=sys.stderr)


@task_app.command("answer")
@handled
def answer_command(
    task_id: TaskArg,
    answer: Annotated[Optional[str], typer.Argument(help="The answer text (sent as {\"answer\": ANSWER}, what "
                                                    "a request without its own schema asks for).")] = None,
    key: Annotated[Optional[str], typer.Option("--key", help="Which input request (input_1, …; ce task show "
                                               "TASK lists the open ones); default: the one open request.")] = None,
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
