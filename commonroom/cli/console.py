"""``ce console FILE [--open]``: a one-time login URL for the room console.

The running room (verified, owner token: :func:`commonroom.cli.common.owner_endpoint`)
issues a code (operation ``console_code``, single use, 60 s); the URL
``http://127.0.0.1:PORT/console/login?code=…`` is printed on stdout and,
with ``--open``, opened in the default browser (:mod:`webbrowser`). The
console needs a running room: without one this is ``transport_unavailable``.
"""

from __future__ import annotations

from pathlib import Path

import typer

from ..errors import TransportUnavailable
from .common import handled, owner_call, owner_endpoint, require_document


def login_url(document: Path) -> str:
    """A fresh one-time console login URL for the room running on ``document``."""
    path = require_document(document)
    endpoint = owner_endpoint(path)
    if endpoint is None:
        raise TransportUnavailable(f"no room is running for {path}: start it with ce serve {path}",
                                   details={"file": str(path)})
    hint, token = endpoint
    answer = owner_call(hint, token, "console_code", {})
    return f"http://127.0.0.1:{hint['port']}{answer['login_path']}"


@handled
def console_command(
    document: Path = typer.Argument(..., help="The room's markdown file (the room must be running)."),
    open_: bool = typer.Option(False, "--open", help="Also open the URL in the default web browser."),
) -> None:
    """Print a one-time login URL for the room console (single use, valid 60 seconds)."""
    url = login_url(document)
    typer.echo(url)
    if open_:
        import webbrowser  # only --open pays for it

        webbrowser.open(url)
