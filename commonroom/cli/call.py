"""``ce call METHOD PATH``: any route with the stored session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import InvalidRequest
from .common import emit, handled
from .sessions import reach


@handled(json_only=True)
def call_command(
    method: Annotated[str, typer.Argument(help="GET, POST, PUT, PATCH or DELETE.")],
    path: Annotated[str, typer.Argument(help="The route, e.g. /workspace/document.")],
    data: Annotated[Optional[str], typer.Option("--data", "-d", help="JSON request body.")] = None,
    session_file: Annotated[Optional[Path], typer.Option(help="The session to use.")] = None,
) -> None:
    """Call a route of the room with the stored session and print the JSON answer (errors as JSON too)."""
    from .. import client

    body = None
    if data is not None:
        try:
            body = json.loads(data)
        except json.JSONDecodeError as exc:
            raise InvalidRequest(f"--data is not JSON: {exc}", details={"option": "--data"}) from None
    if not path.startswith("/"):
        raise InvalidRequest("PATH must start with /", details={"path": path})
    emit(reach(session_file, lambda transport, token: client.call_json(
        transport, method.upper(), path, body=body, token=token)))
