"""``ce version list|show|diff`` (docs/editing.md, docs/operator.md).

Each works with a session (``--session-file``, else the room's default) or,
for the local operator, with the room's FILE given first, read from the
sidecar (:mod:`commonroom.cli.where`). A version is given as the tables
print it (``v2``) or its number; ``head`` is the head.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from . import ids, where
from .common import handled
from .options import CursorOpt, FileArg, LimitOpt, SessionOpt
from .printing import markdown
from .render import JSON_OUTPUT, show
from ..errors import InvalidRequest
from .usage import CeTyper

version_app = CeTyper(help="Versions: list, show one (its exact bytes when piped), diff two.", no_args_is_help=True,
                      rich_markup_mode=None)


def number(file: Path | None, session_file: Path | None, given: str, what: str) -> int | None:
    """The version ``given`` names (``v2``, ``2``), None for ``head``; ``InvalidRequest`` for anything else."""
    try:
        found = ids.version_or_head(given)
    except ValueError as exc:
        raise InvalidRequest(f"{what}: {exc}", details={"argument": what}) from None
    return None if found == ids.HEAD else found


def show_version(file: Path | None, session_file: Path | None, version: int | None) -> None:
    """Print version ``version`` (None: the head) as ``ce read`` prints the document: as written
    (highlighted) on a terminal, its exact bytes when piped, the ``VersionInfo`` answer with ``--json``."""
    if version is None:
        version = int(where.read(file, session_file, "workspace_status")["head_version"])
    answer = where.read(file, session_file, "version_get", {"number": version})
    if JSON_OUTPUT.get():
        show(answer, "editing#VersionInfo")
        return
    markdown(answer["text"])


@version_app.command("list")
@handled
def list_command(file: FileArg = None, limit: LimitOpt = 50, cursor: CursorOpt = None,
                 session_file: SessionOpt = None) -> None:
    """List one page of versions, newest first."""
    show(where.read(file, session_file, "versions_list", {"limit": limit, "cursor": cursor}), "editing#VersionsPage")


@version_app.command("show")
@handled
def show_command(
    first: Annotated[str, typer.Argument(metavar="[FILE] VERSION", help="The version: v2, 2 or head; the local "
                                         "operator may give the room's FILE before it.")],
    second: Annotated[Optional[str], typer.Argument(metavar="", hidden=True, show_default=False)] = None,
    session_file: SessionOpt = None,
) -> None:
    """Print one version of the document: as written (highlighted) on a terminal, its exact bytes when piped."""
    file, (given, _) = where.split([first, second], 1)
    show_version(file, session_file, number(file, session_file, str(given), "VERSION"))


@version_app.command("diff")
@handled
def diff_command(
    first: Annotated[str, typer.Argument(metavar="[FILE] A", help="From version: v2, 2 or head; the local "
                                         "operator may give the room's FILE before it.")],
    second: Annotated[Optional[str], typer.Argument(metavar="B", help="To version (default: the head).",
                                                    show_default=False)] = None,
    third: Annotated[Optional[str], typer.Argument(metavar="", hidden=True, show_default=False)] = None,
    session_file: SessionOpt = None,
) -> None:
    """Print the unified diff between two versions (coloured on a terminal)."""
    file = None
    if not ids.is_version(first):
        if not Path(first).exists():
            raise InvalidRequest(f"A: {first!r} is neither a version like v2, 2 or head nor the room's FILE",
                                 details={"argument": "A"})
        file, first, second, third = Path(first), str(second or ""), third, None
        if not first:
            raise InvalidRequest("give the version to diff from: ce version diff FILE A [B]",
                                 details={"argument": "A"})
    if third is not None:
        raise InvalidRequest(f"{third!r}: give at most two versions", details={"argument": "B"})
    values = {"from_version": number(file, session_file, first, "A"),
              "to_version": number(file, session_file, second, "B") if second is not None else None}
    if values["from_version"] is None:
        values["from_version"] = int(where.read(file, session_file, "workspace_status")["head_version"])
    show(where.read(file, session_file, "versions_diff", values), "editing#Diff")
