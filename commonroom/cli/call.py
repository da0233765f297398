"""``ce call METHOD PATH``: any route with the stored session; an id in PATH may be given as ``ce`` prints it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Optional

import typer

from . import ids
from ..errors import InvalidRequest
from .board_target import board_id
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
    path = resolved_path(session_file, path)
    emit(reach(session_file, lambda transport, token: client.call_json(
        transport, method.upper(), path, body=body, token=token)))


#: An id shortened as ce prints it: a kind's prefix, some of the rest, then ``…`` (or ``...``).
SHORTENED = re.compile(r"([a-z]+_)[A-Za-z0-9_-]*(?:…|\.\.\.)")


def resolved_path(session_file: Path | None, path: str) -> str:
    """``path`` with every id shortened as ``ce`` prints it (``pr_6bc3a677…``) resolved, the rest percent-encoded.

    Each such segment is resolved as the commands resolve an id
    (:mod:`commonroom.cli.ids`, with the stored session): proposals,
    leases, handoffs, tasks, participants, board messages (the board is the
    segment after ``boards``) and your own session. A start that names no
    id, or a kind no listing of yours holds, is ``InvalidRequest`` in one
    line; several ids are the ambiguity's ``InvalidRequest``. Characters a
    request line cannot carry (``…``, any non-ASCII) are percent-encoded as
    UTF-8, the query string left as given. A control character (CR, LF,
    TAB, …) anywhere in PATH is ``InvalidRequest``: it is never a path
    someone meant, and it is never sent.
    """
    from urllib.parse import quote

    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
        raise InvalidRequest("PATH holds a control character (CR, LF, TAB, …): give the path as one line",
                             details={"path": path})
    route, mark, query = path.partition("?")
    segments = route.split("/")
    for index, segment in enumerate(segments):
        match = SHORTENED.fullmatch(segment)
        if match is None:
            continue
        board = segments[index - 2] if index >= 2 and segments[index - 1] == "messages" else None
        found = _resolve(session_file, match.group(1), segment, board)
        if found is None or found.endswith(("…", "...")):
            raise InvalidRequest(f"{segment!r} in PATH is an id shortened as ce prints it, and it names no "
                                 f"{_KINDS.get(match.group(1), 'id you can list')}: give the whole id "
                                 "(--json prints it)", details={"path": path, "segment": segment})
        segments[index] = found
    return quote("/".join(segments), safe="/:@!$&'()*+,;=-._~%") + mark + query


#: What each id prefix names, as an error words it.
_KINDS = {"pr_": "proposal", "l_": "live lease", "ho_": "handoff", "task_": "task", "p_": "participant",
          "msg_": "message of that board", "s_": "session of yours"}


def _resolve(session_file: Path | None, prefix: str, given: str, board: str | None) -> str | None:
    """The whole id ``given`` (a start of one, as printed) names, by its kind; None for a kind not resolved."""
    if prefix == "pr_":
        return ids.proposal(session_file, given)
    if prefix == "l_":
        return ids.lease(session_file, given)
    if prefix == "ho_":
        return ids.handoff(session_file, given)
    if prefix == "task_":
        return ids.task(session_file, given)
    if prefix == "msg_" and board is not None:
        return ids.message(session_file, board_id(session_file, board), given)
    if prefix == "s_":
        own = board_id(session_file, given)  # sessions are not listed: a start of your own session's id only
        return own if ids.FULL_ID.fullmatch(own) else None
    if prefix == "p_":
        return ids.resolve(given, ids.session_pages(session_file, "participants_list", "participants"),
                           "participant", "participant_id")
    return None
