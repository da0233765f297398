"""Ids as ``ce`` prints them: a command that takes an id takes a unique prefix too.

The tables print short ids (``pr_85ee0f…``, :func:`commonroom.cli.printing.short`);
a command that takes an id accepts one as printed, with or without the
``…``, or any other start of it (with or without the ``pr_``), like git's
and docker's short ids. The
prefix is resolved here, on the client, against the listing the room
serves to this caller (every page): one match is that id; several are
``invalid_request`` naming them; none (or a listing the caller may not
read) sends the text unchanged, so the room answers its own not-found
error, as for any unknown id. A full id (``<prefix>_`` and 24 hex digits)
is sent as it is, without a listing. Every kind a command prints is taken
back: proposals, leases, handoffs, board messages, live sessions (``ce
revoke``), tasks (case kept: :data:`FULL_TASK_ID`), participants where a
command takes a name (:func:`participant`: the id resolved to the name) and
versions (``v2``, :func:`version`). docs/operator.md, *Short ids*.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any, Callable, Iterable

from ..errors import CommonroomError, InvalidRequest, NotFound
from .common import operator_read
from .sessions import session_call

#: An id as the room mints it (:func:`commonroom.tokens.new_id`).
FULL_ID = re.compile(r"[a-z]+_[0-9a-f]{24}")
#: A task id as the room mints it (:func:`commonroom.tokens.new_secret`: 43 URL-safe characters, case matters).
FULL_TASK_ID = re.compile(r"task_[A-Za-z0-9_-]{43}")
#: A participant id, or a start of one as the tables print it (``p_f47a72b1…``).
PARTICIPANT_ID = re.compile(r"p_[0-9a-f]{0,24}(…|\.\.\.)?")
#: A version as the tables print it (``v2``) or its number (``2``).
VERSION = re.compile(r"[vV]?([0-9]{1,12})")
#: Most pages one resolution reads (200 items each).
MAX_PAGES = 50
#: Matches named in the error of an ambiguous prefix.
SHOWN = 5
#: Characters after ``s_`` a start of a session id needs before ``ce revoke`` resolves it (git's minimum).
MIN_REVOKE_CHARS = 4

#: ``cursor -> (ids of one page, next cursor)``.
Pages = Callable[[Any], tuple[Iterable[str], Any]]


def _pick(row: dict[str, Any], key: str) -> str:
    """``row``'s id at ``key``, a dotted path into nested objects (``session.id``)."""
    value: Any = row
    for part in key.split("."):
        value = value[part]
    return str(value)


def bare(given: str, fold: bool = True) -> str:
    """``given`` as a start of an id: stripped, without a trailing ``…`` or ``...``, lower case (ids are)
    unless ``fold`` is false (task ids, where case matters)."""
    text = given.strip()
    for ellipsis in ("…", "..."):
        text = text.removesuffix(ellipsis)
    return text.lower() if fold else text


def resolve(given: str, pages: Pages, what: str, parameter: str, full: re.Pattern[str] = FULL_ID,
            fold: bool = True) -> str:
    """The id ``given`` names: itself when it is a full id, else the one id of the listing it starts.

    ``pages`` reads the listing one page at a time; ``what`` (``proposal``)
    and ``parameter`` (``proposal_id``) word the error of an ambiguous prefix
    (one line naming the candidates); ``full`` is what a whole id looks like
    (sent without a listing) and ``fold`` whether case is ignored.
    """
    text = bare(given, fold)
    if not text:
        raise InvalidRequest(f"{given!r} is no {what} id: give one as the tables print it, or a unique start of it",
                             details={"parameter": parameter})
    if full.fullmatch(text):
        return text
    matches: list[str] = []
    cursor: Any = None
    try:
        for _ in range(MAX_PAGES):
            ids, cursor = pages(cursor)
            matches.extend(i for i in ids if i and (i.startswith(text) or i.partition("_")[2].startswith(text))
                           and i not in matches)
            if len(matches) > SHOWN or not cursor:
                break
    except CommonroomError:  # the caller may not read the listing: the room answers for the id itself
        return given
    if len(matches) == 1:
        return matches[0]
    if not matches:
        return given
    shown = ", ".join(matches[:SHOWN]) + (", …" if len(matches) > SHOWN else "")
    raise InvalidRequest(f"{given!r} is the start of more than one {what} id ({shown}); give more of it",
                         details={"parameter": parameter, "prefix": text, "matches": matches[:SHOWN]})


def session_listing(session_file: Path | None, operation: str, **params: str) -> Callable[[Any], dict[str, Any]]:
    """``cursor -> page``: ``operation``'s listing (its route in the operation table) with the stored session;
    ``params`` are its other input properties (the board's ``session_id``)."""

    def page(cursor: Any) -> dict[str, Any]:
        answer: dict[str, Any] = session_call(session_file, operation, {**params, "limit": 200, "cursor": cursor})
        return answer

    return page


def operator_listing(file: Path, operation: str) -> Callable[[Any], dict[str, Any]]:
    """``cursor -> page``: ``operation``'s listing read by the local operator from the sidecar."""
    return lambda cursor: operator_read(file, operation, {"limit": 200, "cursor": cursor})


def _ids(listing: Callable[[Any], dict[str, Any]], items: str, key: str) -> Pages:
    def page(cursor: Any) -> tuple[Iterable[str], Any]:
        answer = listing(cursor)
        return [_pick(row, key) for row in answer[items] if _has(row, key)], answer.get("next_cursor")

    return page


def session_pages(session_file: Path | None, operation: str, items: str, key: str = "id",
                  **params: str) -> Pages:
    """The ids of ``operation``'s listing (its route in the operation table), page by page, with the stored session."""
    return _ids(session_listing(session_file, operation, **params), items, key)


def _has(row: dict[str, Any], key: str) -> bool:
    """Whether ``row`` has a value (not null) at the dotted ``key``."""
    value: Any = row
    for part in key.split("."):
        if not isinstance(value, dict) or value.get(part) is None:
            return False
        value = value[part]
    return True


def operator_pages(file: Path, operation: str, items: str, key: str = "id") -> Pages:
    """The ids of ``operation``'s listing, page by page, read by the local operator from the sidecar."""
    return _ids(operator_listing(file, operation), items, key)


def proposal(session_file: Path | None, given: str) -> str:
    """A proposal id from an id or a unique prefix (the proposals the session can list)."""
    return resolve(given, session_pages(session_file, "proposals_list", "proposals"), "proposal", "proposal_id")


def lease(session_file: Path | None, given: str) -> str:
    """A lease id from an id or a unique prefix (the live leases)."""
    return resolve(given, session_pages(session_file, "leases_list", "leases"), "lease", "lease_id")


def handoff(session_file: Path | None, given: str) -> str:
    """A handoff id from an id or a unique prefix (the handoffs the session can list)."""
    return resolve(given, session_pages(session_file, "handoff_list", "handoffs"), "handoff", "handoff_id")


def operator_session(file: Path, given: str) -> str:
    """A live session's id from an id or a unique start of one (the sessions ``ce sessions`` lists), to revoke.

    Stricter than :func:`resolve` for what cuts someone off: a start needs
    :data:`MIN_REVOKE_CHARS` characters after ``s_`` (``InvalidRequest``),
    and one that names no live session is ``NotFound`` here, saying that
    revoked and expired sessions are not listed. A full id goes to the
    room as it is (which says when it was revoked already).
    """
    text = bare(given)
    if FULL_ID.fullmatch(text):
        return text
    if len(text.removeprefix("s_")) < MIN_REVOKE_CHARS:
        raise InvalidRequest(f"--session {given!r}: give at least {MIN_REVOKE_CHARS} characters of the session id "
                             "after s_ (ce sessions FILE lists them)", details={"option": "--session"})
    found = resolve(given, operator_pages(file, "sessions_list", "sessions", key="session.id"), "session", "session")
    if not FULL_ID.fullmatch(found):
        raise NotFound(f"no live session id starts with {text!r}; ce sessions {shlex.quote(str(file))} lists the live ones "
                       "(revoked and expired sessions are not listed)", details={"session": given})
    return found


def message(session_file: Path | None, board: str, given: str, parameter: str = "message_id") -> str:
    """A message id of ``board`` from an id or a unique prefix (its retained messages)."""
    pages = session_pages(session_file, "list_session_messages", "messages", "message_id", session_id=board)
    return resolve(given, pages, "message", parameter)


def task(session_file: Path | None, given: str) -> str:
    """A task id from an id or a unique start of it (the tasks of the handoffs the session can list)."""
    return resolve(given, session_pages(session_file, "handoff_list", "handoffs", key="task_id"), "task", "task_id",
                   FULL_TASK_ID, fold=False)


def _participant(given: str, pages: Callable[[Any], dict[str, Any]], parameter: str) -> str:
    """The participant's name ``given`` names: a name as it is, or an id or start of one (``p_f47a72b1…``).

    A name comes first: text that looks like the start of an id but is a
    participant's name (someone joined as ``p_350``) is that participant,
    never another whose id starts so. Names are compared as the room
    compares them (case-insensitively). The whole listing is read once.
    """
    if not PARTICIPANT_ID.fullmatch(given.strip()):
        return given
    rows: list[dict[str, Any]] = []
    cursor: Any = None
    try:
        for _ in range(MAX_PAGES):
            answer = pages(cursor)
            rows.extend(answer["participants"])
            cursor = answer.get("next_cursor")
            if not cursor:
                break
    except CommonroomError:  # the caller may not list participants: the room judges the text itself
        return given
    for row in rows:
        if str(row["name"]).casefold() == given.strip().casefold():
            return str(row["name"])
    names = {row["id"]: row["name"] for row in rows}
    found = resolve(given, lambda _cursor: (list(names), None), "participant", parameter)
    return str(names.get(found, given))


def participant(session_file: Path | None, given: str, parameter: str = "participant") -> str:
    """A participant's name from a name, or an id or a unique start of one as ``ce participants`` prints it."""
    return _participant(given, session_listing(session_file, "participants_list"), parameter)


def operator_participant(file: Path, given: str, parameter: str = "participant") -> str:
    """A participant's name from a name, or an id or a unique start of one, read from the sidecar."""
    return _participant(given, operator_listing(file, "participants_list"), parameter)


#: ``--base head`` / ``--expected head``: the head as the command reads it first. Negative, so no number a
#: person types (``0`` included, which names no version and is refused by the room) ever stands for the head.
HEAD = -1


def version_or_head(text: str) -> int:
    """A version number from ``v2`` or ``2``, or :data:`HEAD` for ``head``: the click parser of ``--base`` and
    ``--expected``."""
    return HEAD if text.strip().lower() == "head" else version(text)


def is_version(text: str) -> bool:
    """Whether ``text`` is a version as the tables print it (``v2``, ``2``) or ``head``."""
    return text.strip().lower() == "head" or VERSION.fullmatch(text.strip()) is not None


def version(text: str) -> int:
    """A version number from ``v2`` (as the tables print it) or ``2``: the click parser of version arguments."""
    match = VERSION.fullmatch(text.strip())
    if not match:
        raise ValueError(f"{text!r} is not a version like v2 or 2")
    return int(match.group(1))
