"""``ce read``'s body, without Typer: the command runs from here with or without it.

:func:`read` is what :func:`commonroom.cli.editing.read_command` (the
Typer command, which declares the options) calls, and what
:mod:`commonroom.cli.quickread` calls when it parsed the arguments itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import InvalidRequest
from .render import show
from .sessions import session_call


def region_of(heading: list[str] | None, lines: str | None) -> dict[str, Any] | None:
    """The region of ``--heading`` (titles, outermost first) or ``--lines`` (``3-10``, ``3:10`` or ``3``).

    None when neither is given; ``InvalidRequest`` when both are, or when
    ``--lines`` is not a line range.
    """
    if heading and lines:
        raise InvalidRequest("give --heading or --lines, not both", details={"option": "--heading/--lines"})
    if heading:
        return {"heading": list(heading)}
    if lines:
        start, sep, end = lines.replace(":", "-").partition("-")
        try:
            return {"lines": [int(start), int(end if sep else start)]}
        except ValueError:
            raise InvalidRequest(f"--lines {lines!r} is not like 3-10", details={"option": "--lines"}) from None
    return None


def read(file: Path | None = None, heading: list[str] | None = None, lines: str | None = None,
         version: str | None = None, session_file: Path | None = None, raw: bool = False) -> None:
    """``ce read``: the document (or a region) on stdout, through :func:`commonroom.cli.render.show`.

    As written (highlighted) on a terminal, its exact bytes when piped; the ``Document``
    answer (room seed, operation ``document_read``) with ``--json``. With
    the session, or as the local operator from FILE's sidecar when ``file``
    is given. ``version`` (``v2``, ``2``, ``head``) prints that version
    whole (``ce version show``). ``raw`` changes nothing (kept for
    scripts). Raises ``InvalidRequest`` for a bad region, version or
    session file, and the room's error as it answered.
    """
    region = region_of(heading, lines)
    if version is not None:
        if region is not None:
            raise InvalidRequest("--version prints a whole version: give no --heading or --lines",
                                 details={"option": "--version"})
        from .versions import number, show_version  # Typer: only ce read --version pays

        show_version(file, session_file, number(file, session_file, version, "--version"))
        return
    if file is not None:
        from .where import read as room_read  # the sidecar: only the operator's ce read FILE pays

        show(room_read(file, session_file, "document_read", {"region": region}), "room#Document")
        return
    show(session_call(session_file, "document_read", {"region": region}), "room#Document")
