"""``ce mcp``: a stdio MCP server for desktop clients, backed by the room's ``/mcp``.

Each JSON-RPC message read from stdin (one per line) is forwarded to the
room's ``POST /mcp`` with the stored session; answers and the notifications
of the ``GET /mcp`` stream are written to stdout. Stdout carries protocol
messages only; logs go to stderr. See :mod:`commonroom.mcp_bridge`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from .common import handled
from .sessions import load_session


@handled
def mcp_command(
    session_file: Annotated[Optional[Path], typer.Option(help="The session to use (from ce join).")] = None,
    notifications: Annotated[bool, typer.Option(
        "--notifications/--no-notifications",
        help="Keep GET /mcp open and write its notifications to stdout.")] = True,
    timeout: Annotated[float, typer.Option(help="Seconds to wait on the room for one answer.")] = 300.0,
    log_level: Annotated[str, typer.Option(help="Log level on stderr: debug, info, warning, error.")] = "info",
) -> None:
    """Serve MCP on stdin/stdout for a desktop client, forwarding to the room."""
    import logging  # this command's alone (ce --help stays light)

    logging.basicConfig(stream=sys.stderr, level=getattr(logging, log_level.upper(), logging.INFO),
                        format="ce mcp: %(levelname)s %(message)s")
    from ..mcp_bridge import Bridge

    session = load_session(session_file)
    bridge = Bridge(transport=session["transport"], token=session["token"], out=sys.stdout.buffer,
                    timeout=timeout)
    logging.getLogger("commonroom.mcp_bridge").info(
        "serving MCP on stdio for %s in %s", session.get("participant", "?"), session.get("file_name", "the room"))
    try:
        code = bridge.run(sys.stdin.buffer, notifications=notifications)
    except KeyboardInterrupt:
        code = 0
    raise typer.Exit(code)
