"""How ``ce`` prints an answer: for people by default, the schema'd JSON with ``--json``.

Every command that prints data hands its answer to :func:`show` with the
answer's shape (the schema reference of the operation's output, such as
``editing#VersionsPage``). With ``--json`` the answer is printed as it
came, indented JSON, unchanged; otherwise the shape's renderer (registered
with :func:`commonroom.cli.printing.renders`, see
:mod:`commonroom.cli.render_shapes`; the pieces they print with are in
:mod:`commonroom.cli.printing`) prints it
with Rich: tables for pages, one line for an outcome, the markdown itself
for a document. Shapes without a renderer print as a two-column table.

Colour and terminal rendering only when stdout is a terminal (Rich's
:class:`~rich.console.Console` detects it); with ``NO_COLOR`` set and on
piped output there is no escape sequence at all, and tables carry no
trailing spaces. Errors are one line on stderr (code,
message, what to do next); with ``--json`` the error envelope, as before.
"""

from __future__ import annotations

import json
import shlex
import sys
from contextvars import ContextVar
from typing import Any

from . import render_handoffs, render_shapes  # noqa: F401  (register the renderers in printing.RENDERERS)
from ..errors import CommonroomError
from .printing import JSON_OUTPUT, RENDERERS, clock, console, diff, fields, short, span

#: Where the answer holds the id of what the command made (``handoff.id``), while ``--id-only`` is given.
MADE: ContextVar[str | None] = ContextVar("ce_made", default=None)
#: The running command's own names of the input fields it fills (``{"ttl_seconds": "--ttl"}``), so that a
#: field the room refuses is named as the person typed it (:func:`readable`).
FIELDS: ContextVar[dict[str, str]] = ContextVar("ce_fields", default={})


def emit_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout (the ``--json`` form of every answer)."""
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def show(answer: Any, shape: str) -> None:
    """Print ``answer`` (of schema ``shape``): the new id alone with ``--id-only`` (:data:`MADE`), JSON with
    ``--json``, else its readable form."""
    made = MADE.get()
    if made is not None:
        value: Any = answer
        for part in made.split("."):
            value = value[part]
        sys.stdout.write(f"{value}\n")
        sys.stdout.flush()
        return
    if JSON_OUTPUT.get():
        emit_json(answer)
        return
    RENDERERS.get(shape, fields)(answer)


# -- errors ----------------------------------------------------------------------

#: What to do next, by error code (the message says what happened): the one step that can work, or ``None``
#: where the message itself says what to fix (a bad argument) or no step of the caller's can help.
#: Every code of :data:`commonroom.errors.STATUS` has an entry (tests/unit/test_cli_hints.py).
NEXT: dict[str, str | None] = {
    "unauthorized": "join again with a fresh invitation (ce join TOKEN{session})",
    "session_expired": "ask the room's operator for a new invitation, then ce join it",
    "permission_denied": None,  # worded from details.required (:func:`next_step`); else no capability helps
    "invitation_expired": "ask the room's operator for a new invitation",
    "invitation_revoked": "ask the room's operator for a new invitation",
    "invitation_redeemed": "an invitation admits once: ask the room's operator for a new one",
    "unsupported_version": "install the commonroom version the room runs (ce --version prints yours)",
    "stale_version": None,  # worded from current_version (:func:`next_step`)
    "lease_conflict": "wait until that lease is released or expires (ce lease list{at}), then retry",
    "proposal_not_found": "list the proposals with ce proposal list{at}",
    "proposal_conflict": "it was decided already: ce proposal list{at} lists it",  # still open: :func:`next_step`
    "invalid_region": "check --heading / --lines against the document (ce read); a heading path is one "
                      "--heading per title, outermost first (--heading 'Release plan' --heading Goals)",
    "version_not_found": "list the versions with ce version list{at}",
    "transport_unavailable": "check that the room is running (ce status FILE) and retry",
    "limit_exceeded": None,  # worded from retry_after_seconds (:func:`next_step`); a body too large: shorten it
    "invalid_request": None,  # the message names the argument or the state at fault
    "not_found": "check the id (the list commands print them)",
    "method_not_allowed": None,  # only ce call reaches it: the message names the methods the route serves
    "handoff_not_found": "list the handoffs with ce handoff list{at}",
    "handoff_conflict": None,  # the message names the handoff's status and what the transition needs
    "idempotency_mismatch": "give a new --idempotency-key for a different request",
    "message_not_found": "list the board's messages with ce board list BOARD{session}",
    "peer_not_found": "list your peers with ce board peers{session}",
    "assignment_stale": "read the todo again (ce board assignment BOARD MESSAGE{session}) and complete it with its "
                        "new fence",
    "assignment_history_lost": "read the todo again (ce board assignment BOARD MESSAGE{session}) and complete it with "
                               "its new fence",
    "assignment_too_large": None,  # the todo and its replies exceed what one answer carries: nothing to retry
    "completion_mismatch": "give a new --key for a different answer",
    "completion_persistence_uncertain": "run the exact same command again",
    "storage_unavailable": "the room's operator frees disk space or restores the files beside the document; "
                           "then retry",
}


def next_step(envelope: dict[str, Any]) -> str:
    """The ``next:`` hint of an error envelope: :data:`NEXT`, or worded from its recovery fields; ``""`` for none.

    A command a hint names is one the caller can run, addressed as the
    failing command reached the room (:data:`commonroom.cli.sessions.ADDRESS`):
    the local operator's FILE for the reads that take it (``{at}``), the
    ``--session-file`` given for the session's commands (``{at}``,
    ``{session}``), nothing more with the default session (never its path). A
    ``transport_unavailable`` met by a colleague's command carries its own
    (``details.next``: what to ask the room's operator, no command of the
    room's machine); without one, a session is not sent to ``ce status
    FILE`` either (it has no FILE).
    """
    from .sessions import ADDRESS, session_option

    address = ADDRESS.get()
    kind, where = address if address is not None else ("", "")
    session = session_option() or ""
    at = f" {shlex.quote(where)}" if kind == "file" else session
    return _next_step(envelope, kind).replace("{at}", at).replace("{session}", session)


def _next_step(envelope: dict[str, Any], kind: str) -> str:
    code = envelope.get("error", "")
    if code == "transport_unavailable" and isinstance((envelope.get("details") or {}).get("next"), str):
        return str(envelope["details"]["next"])
    if code == "transport_unavailable" and kind == "session":
        return ("the room did not answer where your session says: ask its operator whether it runs (and where, "
                "if it moved), then retry")
    if code == "transport_unavailable" and kind == "file":
        return "check that the room is running (ce status{at}) and retry"
    if code == "stale_version":
        head = envelope.get("current_version")
        option = "--expected" if "expected_version" in envelope else "--base"
        return f"the head is now v{head}: rebase your text on it and rerun with {option} {head}"
    if code == "not_found" and "path" in (envelope.get("details") or {}):  # a route the room does not have
        return ("the room has no such request: it may run another commonroom version than this ce (ce --version "
                "prints yours; ask the room's operator which it runs)")
    if code == "not_found" and (envelope.get("details") or {}).get("lease_id"):  # renew/release: not this session's
        return ("ce lease list{at} shows each live lease and who holds it; only the holder's session renews or "
                "releases it")
    if code == "proposal_conflict" and (envelope.get("details") or {}).get("reason") != "not_open" \
            and envelope.get("current_version") is not None:
        head, given = envelope["current_version"], envelope.get("proposal_id", "ID")
        return (f"it is still open but cannot be approved: reject it (ce proposal reject {short(given)}{{session}}), "
                f"or propose the change again on v{head} (ce propose --base {head}{{session}})")
    if code == "not_found" and (envelope.get("details") or {}).get("session_id") and kind != "file":
        return "list the live sessions (each one's board) with ce sessions{session}"
    if code == "message_not_found" and (envelope.get("details") or {}).get("peer_messages"):
        return "list the peer messages kept for you with ce board peers{session}"
    if code == "message_not_found" and (envelope.get("details") or {}).get("session_id"):
        return f"list the board's messages with ce board list {envelope['details']['session_id']}{{session}}"
    if code in ("assignment_stale", "assignment_history_lost") and (envelope.get("details") or {}).get("message_id"):
        details = envelope["details"]
        todo = f"{details.get('session_id') or 'BOARD'} {short(details['message_id'])}{{session}}"
        if (details.get("assignment") or {}).get("completable") is False:
            status = ((details.get("assignment") or {}).get("todo") or {}).get("status") or "closed"
            return f"the todo is {status} and takes no other answer: read it and its answer (ce board assignment {todo})"
        return f"read the todo again (ce board assignment {todo}) and complete it with its new fence"
    if code == "limit_exceeded":
        seconds = envelope.get("retry_after_seconds")
        return f"retry after {seconds} s" if seconds is not None else ""
    if code == "permission_denied":
        from ..vocabulary import CAPABILITIES

        required = (envelope.get("details") or {}).get("required")  # also "assignee": then no capability helps
        return (f"ask the room's operator for an invitation with the {required!r} capability"
                if required in CAPABILITIES else "")
    return NEXT.get(code) or ""


def readable(envelope: dict[str, Any]) -> str:
    """The message of an error envelope for people: worded from its details where they say more.

    ``lease_conflict`` names who holds the lines and until when, in local
    time (``agent-a holds lines 100–123 until 10:18 (in 26m)``); every other
    message is the room's own, on one line.
    """
    details = envelope.get("details") or {}
    if envelope.get("error") == "lease_conflict" and details.get("participant") and details.get("expires_at"):
        return f"{details['participant']} holds {span(details.get('lines')) or 'that region'} until " \
               f"{clock(details['expires_at'])}"
    pointer, reason = details.get("pointer"), details.get("reason")
    if envelope.get("error") == "invalid_request" and isinstance(pointer, str) and isinstance(reason, str):
        named = FIELDS.get().get(pointer.split("/")[1] if pointer.count("/") else pointer)
        if named is not None:  # a field this command filled from one of its own options or arguments
            return f"{named}: {reason}"
    return " ".join(str(envelope.get("message", "")).split())



def conflicts(hunks: list[dict[str, Any]], proposal: str, base: Any, head: Any) -> str:
    """A proposal's conflicting hunks as merge markers (diff3 style): the proposal's lines, the base's, the head's."""
    out = []
    for hunk in hunks:
        if not isinstance(hunk, dict):
            continue
        out.append(f"<<<<<<< proposal {proposal} ({_at(hunk, 'ours')})\n")
        out.append(_lines(hunk.get("ours")))
        out.append(f"||||||| v{base} ({_at(hunk, 'base')})\n")
        out.append(_lines(hunk.get("base")))
        out.append("=======\n")
        out.append(_lines(hunk.get("theirs")))
        out.append(f">>>>>>> head v{head} ({_at(hunk, 'theirs')})\n")
    return "".join(out)


def _at(hunk: dict[str, Any], side: str) -> str:
    """Where a hunk's side is: ``lines 6–8``, or ``before line 6`` for none (an insertion)."""
    start, end = hunk.get(f"{side}_start"), hunk.get(f"{side}_end")
    if isinstance(start, int) and isinstance(end, int) and end < start:
        return f"before line {start}"
    return span([start, end]) or "-"


def _lines(text: Any) -> str:
    text = str(text or "")
    return text if not text or text.endswith("\n") else text + "\n"


def error(err: CommonroomError) -> None:
    """Print ``err`` on stderr: the envelope with ``--json``, else what it carries to read (a diff, conflicting
    hunks) and one line."""
    envelope = err.to_dict()
    if JSON_OUTPUT.get():
        sys.stderr.write(json.dumps(envelope, indent=2, ensure_ascii=False) + "\n")
        return
    if envelope.get("error") == "stale_version" and envelope.get("diff"):
        diff(envelope["diff"], stderr=True)
    hunks = (envelope.get("details") or {}).get("hunks")
    if envelope.get("error") == "proposal_conflict" and isinstance(hunks, list) and hunks:
        sys.stderr.write(conflicts(hunks, str(envelope.get("proposal_id", "")), envelope.get("base_version"),
                                   envelope.get("current_version")))
        sys.stderr.flush()
    message = readable(envelope)
    step = next_step(envelope)
    from rich.text import Text

    text = Text(f"ce: {envelope.get('error')}: ", style="bold red")
    text.append(message + (f" — next: {step}" if step else ""))
    console(stderr=True).print(text, overflow="ignore", crop=False, soft_wrap=True)
