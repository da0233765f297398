"""Which board a ``ce board`` command means: shared by :mod:`commonroom.cli.board` and
:mod:`commonroom.cli.board_summary`.

``BOARD`` is the public id of the session whose board it is; ``-`` is the
stored session's own, and a unique start of an id is taken as the tables
print it (:mod:`commonroom.cli.ids`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from . import ids
from .sessions import load_session

BoardArg = Annotated[str, typer.Argument(help="The board: - for your own session's, else a session's whole id as "
                                         "the --json answers give it (session_id, e.g. ce proposal show ID --json; "
                                         "the owner: ce sessions FILE).")]


def board_id(session_file: Path | None, board: str) -> str:
    """The board's session id: ``-`` and a start of it are the stored session's own, else as given
    (``ce sessions FILE`` prints whole session ids)."""
    own = str(load_session(session_file).get("session_id") or "")
    text = ids.bare(board)
    if board == "-" or (own and len(text) > len("s_") and own.startswith(text)):
        return own
    return text or board
