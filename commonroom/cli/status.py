"""``ce status FILE``: is the room running, its ports, head version, participants, open proposals, leases.

From the running room's owner port (verified, with the owner token) when
it runs, else from the sidecar (read-only). The readable form is in
:mod:`commonroom.cli.render_shapes` (``cli#Status``); ``--json`` prints the
object below, whose parts are the operations' own answers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ..roomfiles import RoomFiles
from .common import handled, operator_read, owner_call, owner_endpoint, require_document
from .render import show

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


@handled
def status_command(file: Annotated[Path, typer.Argument(help="The room's markdown file.")]) -> None:
    """Is the room running (pid, ports), its head version, participants, open proposals and leases."""
    show(room_status(require_document(file)), "cli#Status")
