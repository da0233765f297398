"""Which board a ``ce board`` command means: shared by :mod:`commonroom.cli.board` and
:mod:`commonroom.cli.board_summary`.

``BOARD`` is the public id of the session whose board it is; ``-`` is the
stored session's own, and a unique start of an id is taken as ``ce
sessions`` prints it (:mod:`commonroom.cli.ids`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from . import ids
from .sessions import load_session

BoardArg = Annotated[str, typer.Argument(help="The board: - for your own session's, else a session's id as ce "
                                         "sessions prints it, or a unique start of it.")]


def board_id(session_file: Path | None, board: str) -> str:
    """The board's session id: ``-`` and a start of the stored session's own id are its own; any other
    start is resolved among the live sessions (``ce sessions``, :func:`commonroom.cli.ids.resolve`)."""
    own = str(load_session(session_file).get("session_id") or "")
    text = ids.bare(board)
    if board == "-" or (own and len(text) > len("s_") and own.startswith(text)):
        return own
    return ids.resolve(board, ids.session_pages(session_file, "workspace_sessions", "sessions", key="session.id"),
                       "session", "session_id")
