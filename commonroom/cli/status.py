"""``ce status [FILE]``: is the room running, its ports, head version, participants, open proposals, leases.

With FILE (the local operator): from the running room's owner port
(verified, with the owner token) when it runs, else from the sidecar
(read-only). Without it, with the session (``--session-file``, else the
room's default): the room as that session reads it, over its routes
(running, the session's own address; no pid or ports). The readable form is in
:mod:`commonroom.cli.render_shapes` (``cli#Status``); ``--json`` prints the
object below, whose parts are the operations' own answers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..roomfiles import RoomFiles
from .common import handled, operator_read, owner_call, owner_endpoint, require_document
from .options import FileArg, SessionOpt
from .render import show
from .sessions import load_session, session_call

#: The parts of the status: key, operation, its arguments (first pages only).
PARTS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("room", "workspace_status", {}),
    ("participants", "participants_list", {"limit": 50}),
    ("proposals", "proposals_list", {"status": "open", "limit": 50}),
    ("leases", "leases_list", {"limit": 50}),
)


def room_status(document: Path) -> dict[str, Any]:
    """The status object of the room on ``document`` (see the module docstring)."""
    endpoint = owner_endpoint(document)
    answer: dict[str, Any] = {"file": str(document), "running": endpoint is not None}
    if endpoint is not None:
        hint, token = endpoint
        state = RoomFiles.of(document).read_state() or {}
        answer.update(pid=state.get("pid"), owner_port=state.get("owner_port"), ingress=state.get("ingress"))
        for key, operation, args in PARTS:
            answer[key] = owner_call(hint, token, operation, args)
        return answer
    from ..engine import Engine

    engine = Engine.open(document, readonly=True)
    try:
        for key, operation, args in PARTS:
            answer[key] = operator_read(document, operation, args, engine=engine)
    finally:
        engine.close()
    return answer


def session_status(session_file: Path | None) -> dict[str, Any]:
    """The status object of the session's room, as that session reads it (``running`` is true: it answered)."""
    stored = load_session(session_file)
    answer: dict[str, Any] = {"file": str(stored.get("file_name") or "the room"), "running": True}
    for key, operation, args in PARTS:
        answer[key] = session_call(session_file, operation, args)
    return answer


@handled
def status_command(file: FileArg = None, session_file: SessionOpt = None) -> None:
    """Is the room running (pid, ports), its head version, participants, open proposals and leases."""
    if file is None:
        show(session_status(session_file), "cli#Status")
        return
    show(room_status(require_document(file)), "cli#Status")
