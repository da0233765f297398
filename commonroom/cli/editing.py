"""Editing commands: ``ce read``, ``ce write``, ``ce participants``, ``ce lease list|acquire|renew|release``.

Proposals are :mod:`commonroom.cli.proposals`, versions
:mod:`commonroom.cli.versions`. Every command works with a session
(``--session-file``, else the room's default) over the byte client; the
reads also take the room's FILE for the local operator, read from the
sidecar whether or not the room runs (:mod:`commonroom.cli.where`).

Every command prints for people (see :mod:`commonroom.cli.render`);
``--json`` prints the schema'd answer unchanged. An id may be given as the
tables print it, a unique start of it (:mod:`commonroom.cli.ids`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ..errors import InvalidRequest
from ..vocabulary import LEASE_TTL_DEFAULT, LEASE_TTL_MAX, LEASE_TTL_MIN
from . import document, ids, where
from .document import region_of
from .options import CursorOpt, FileArg, LimitOpt, SessionOpt
from .common import handled
from .sessions import session_call
from .render import show
from .usage import CeTyper

lease_app = CeTyper(help="Lease regions of the document (needs the lease capability).", no_args_is_help=True, rich_markup_mode=None)

HeadingOpt = Annotated[Optional[list[str]], typer.Option("--heading", help="A heading path, one title per --heading, outermost first.")]
LinesOpt = Annotated[Optional[str], typer.Option("--lines", help="A 1-based inclusive line range: 3-10.")]
LeaseArg = Annotated[str, typer.Argument(help="The lease id (l_…), or a unique start of it as the tables print it.")]


@handled
def participants_command(file: FileArg = None, limit: LimitOpt = 50, cursor: CursorOpt = None,
                         session_file: SessionOpt = None) -> None:
    """List one page of the participants, in join order."""
    show(where.read(file, session_file, "participants_list", {"limit": limit, "cursor": cursor}),
         "room#ParticipantsPage")


# -- participant commands --------------------------------------------------------


@handled
def read_command(file: FileArg = None, heading: HeadingOpt = None, lines: LinesOpt = None,
                 version: Annotated[Optional[str], typer.Option("--version", help="A past version (v2, 2 or head), "
                                                                "whole.")] = None,
                 session_file: SessionOpt = None,
                 raw: Annotated[bool, typer.Option("--raw", hidden=True, help="Kept for scripts: the text is "
                                                   "what ce read prints.")] = False) -> None:
    """Print the document (or a region): as written (highlighted) on a terminal, its exact bytes when piped.

    ``ce read > copy.md`` reproduces the document byte for byte; ``--json``
    prints the Document answer (text, version, content hash, lines).
    The local operator may give the room's FILE (read from its sidecar).
    """
    document.read(file, heading, lines, version, session_file, raw)


@lease_app.command("acquire")
@handled(made="id", fields={"ttl_seconds": "--ttl"})
def lease_acquire(heading: HeadingOpt = None, lines: LinesOpt = None,
                  ttl: Annotated[Optional[int], typer.Option(help=f"Seconds, {LEASE_TTL_MIN} to {LEASE_TTL_MAX} (default {LEASE_TTL_DEFAULT}).")] = None,
                  session_file: SessionOpt = None) -> None:
    """Lease a region (the whole document when none is given)."""
    body: dict[str, Any] = {"region": region_of(heading, lines)}
    if ttl is not None:
        body["ttl_seconds"] = ttl
    show(session_call(session_file, "lease_acquire", body), "editing#Lease")


@lease_app.command("renew")
@handled(fields={"ttl_seconds": "--ttl"})
def lease_renew(lease_id: LeaseArg, ttl: Annotated[Optional[int], typer.Option(help=f"Seconds, {LEASE_TTL_MIN} to {LEASE_TTL_MAX}.")] = None,
                session_file: SessionOpt = None) -> None:
    """Renew a lease of this session."""
    body = {"ttl_seconds": ttl} if ttl is not None else {}
    lease_id = ids.lease(session_file, lease_id)
    show(session_call(session_file, "lease_renew", {"lease_id": lease_id, **body}), "editing#Lease")


@lease_app.command("release")
@handled
def lease_release(lease_id: LeaseArg, session_file: SessionOpt = None) -> None:
    """Release a lease of this session."""
    lease_id = ids.lease(session_file, lease_id)
    show(session_call(session_file, "lease_release", {"lease_id": lease_id}), "editing#Lease")


@lease_app.command("list")
@handled
def lease_list(file: FileArg = None, limit: LimitOpt = 50, cursor: CursorOpt = None,
               session_file: SessionOpt = None) -> None:
    """List one page of the live leases in the room, oldest acquired first.

    Prints a table (a LeasesPage with ``--json``); pass its ``next_cursor`` as ``--cursor`` for the next page.
    """
    show(where.read(file, session_file, "leases_list", {"limit": limit, "cursor": cursor}), "editing#LeasesPage")


def text_of(text: str | None, text_file: Path | None) -> str:
    """The new text: ``--text``, else ``--text-file``'s, else standard input's. On a terminal a line on stderr
    says it reads standard input (until Ctrl-D); an empty standard input with neither option is refused
    (``InvalidRequest``, nothing sent), so a closed stdin never empties a region by accident."""
    if text is not None and text_file is not None:
        raise InvalidRequest("give --text or --text-file, not both", details={"option": "--text"})
    if text is not None:
        return text
    if text_file is not None:
        try:
            return text_file.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidRequest(f"cannot read {text_file}: {exc}", details={"option": "--text-file"}) from None
    if sys.stdin.isatty():
        print("ce: reading the text from standard input; end it with Ctrl-D (or give --text or --text-file)",
              file=sys.stderr, flush=True)
    given = sys.stdin.read()
    if not given:
        raise InvalidRequest("no text: give --text TEXT or --text-file F, or pipe the text on standard input (it "
                             "was empty); --text '' empties the region", details={"option": "--text"})
    return given


@handled(made="number")
def write_command(
    expected: Annotated[int, typer.Option("--expected", help="The version you edited, the head: v2, 2, or head "
                                          "(whatever the head is now).", parser=ids.version_or_head)],
    heading: HeadingOpt = None,
    lines: LinesOpt = None,
    text: Annotated[Optional[str], typer.Option(help="New text (else --text-file, else stdin).")] = None,
    text_file: Annotated[Optional[Path], typer.Option(help="Read the new text from a file.")] = None,
    summary: Annotated[str, typer.Option(help="One line saying what changes.")] = "",
    session_file: SessionOpt = None,
) -> None:
    """Replace the document or a region directly (needs write)."""
    body = {"expected_version": expected, "region": region_of(heading, lines), "text": text_of(text, text_file),
            "summary": summary}
    if expected == ids.HEAD:
        body["expected_version"] = int(session_call(session_file, "workspace_status")["head_version"])
    show(session_call(session_file, "document_write", body), "editing#VersionInfo")
