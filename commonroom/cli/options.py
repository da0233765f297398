"""Options several ``ce`` commands share (Typer annotations), declared once so their help reads the same."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

#: ``--session-file``: the session a command acts as (default: the one ``ce join`` stored for the room).
SessionOpt = Annotated[Optional[Path], typer.Option("--session-file", help="The session to use (default: the one ce join stored).")]
#: ``--limit``: a list page's size (seed protocol.txt: list endpoints accept 1 to 200 items).
LimitOpt = Annotated[int, typer.Option(help="Items per page, 1 to 200.")]
#: ``--cursor``: the page after the one that returned it.
CursorOpt = Annotated[Optional[str], typer.Option(help="next_cursor of the previous page; omit for the first.")]
#: ``[FILE]``: the room's file, for the local operator's reads (else the session is used).
FileArg = Annotated[Optional[Path], typer.Argument(
    help="The room's markdown file: the local operator reads its sidecar (else the session is used).",
    show_default=False)]
#: A command's arguments after an optional ``FILE`` (:func:`commonroom.cli.where.split`): the next one is shown
#: in the usage line only through the first (``[FILE] ID``).
AfterFile = Annotated[Optional[str], typer.Argument(metavar="", hidden=True, show_default=False)]
