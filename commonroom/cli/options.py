"""Options several ``ce`` commands share (Typer annotations), declared once so their help reads the same."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

#: ``--session-file``: the session a command acts as (default: the one ``ce join`` stored).
SessionOpt = Annotated[Optional[Path], typer.Option("--session-file", help="The session to use.")]
#: ``--limit``: a list page's size (seed protocol.txt: list endpoints accept 1 to 200 items).
LimitOpt = Annotated[int, typer.Option(help="Items per page, 1 to 200.")]
#: ``--cursor``: the page after the one that returned it.
CursorOpt = Annotated[Optional[str], typer.Option(help="next_cursor of the previous page; omit for the first.")]
