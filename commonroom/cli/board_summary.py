"""``ce board summary …``: the two bounded summaries over the stored session (the byte client).

``ce board summary discussion BOARD`` is ``session_discussion_summary``
(a board from its retained messages); ``ce board summary handoff SESSION``
is ``session_handoff_summary`` (what a session did in the room). Each
calls the route its operation declares in the operation table; ``-`` is
the stored session. Printed for people: one header line, then one short
table per list with what was left off; ``--json`` prints the answer
unchanged.
"""

from __future__ import annotations

from typing import Any, Callable

from .board_target import BoardArg, board_id
from .sessions import session_call
from .common import handled
from .options import SessionOpt
from .printing import line, place, renders, short, table, when
from .render import show
from .usage import CeTyper

summary_app = CeTyper(help="Bounded summaries: a board's discussion, a session's work in the room.",
                      no_args_is_help=True, rich_markup_mode=None)


@summary_app.command("discussion")
@handled
def discussion_command(board: BoardArg, session_file: SessionOpt = None) -> None:
    """A board from its retained messages: counts, open todos and questions, the latest decisions, risks, answers."""
    show(session_call(session_file, "session_discussion_summary", {"session_id": board_id(session_file, board)}),
         "boards#DiscussionSummary")


@summary_app.command("handoff")
@handled
def handoff_command(board: BoardArg, session_file: SessionOpt = None) -> None:
    """What a session did in the room: versions, proposals, leases, handoffs, completed todos, messages."""
    show(session_call(session_file, "session_handoff_summary", {"session_id": board_id(session_file, board)}),
         "boards#HandoffSummary")


def _section(title: str, section: dict[str, Any], columns: list[tuple[str, Callable[[dict[str, Any]], Any]]]) -> None:
    from rich.text import Text

    left = section["total"] - len(section["items"])
    line(Text(f"{title}: {section['total']}" + (f" ({left} not shown)" if left else ""), style="bold"))
    if section["items"]:
        table(section["items"], columns, "")


def _cut(item: dict[str, Any], key: str) -> str:
    return str(item.get(key) or "") + ("…" if item.get(f"{key}_truncated") else "")


def _head(answer: dict[str, Any], what: str) -> None:
    from rich.text import Text

    notes = [n for n, on in (("history lost: older board messages were dropped", answer["history_lost"]),
                             ("truncated", answer["truncated"])) if on]
    line(Text(f"{what} · last activity {when(answer['last_activity_at'])}" + "".join(f" · {n}" for n in notes)))


_EXCERPT: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
    ("id", lambda m: short(m["message_id"])), ("priority", lambda m: m["priority"]),
    ("who", lambda m: m["author"]["name"]), ("when", lambda m: when(m["created_at"])),
    ("summary", lambda m: _cut(m, "body"))]


@renders("boards#DiscussionSummary")
def discussion(answer: dict[str, Any]) -> None:
    """The header, the counts, then each list."""
    _head(answer, f"board {answer['session_id']}: {answer['retained']} retained messages")
    counts = ", ".join(f"{n} {k}" for k, n in answer["by_kind"].items() if n)
    line(f"by kind: {counts or 'none'}; open {answer['by_status']['open']}, resolved {answer['by_status']['resolved']}")
    _section("open todos", answer["open_todos"], [
        ("id", lambda t: short(t["message_id"])), ("priority", lambda t: t["priority"]),
        ("age", lambda t: when(t["created_at"])),
        ("ack", lambda t: "acked" if t["acked"] else ("waiting" if t["requires_ack"] else "-")),
        ("summary", lambda t: _cut(t, "body"))])
    for key, title in (("open_questions", "unanswered questions"), ("decisions", "latest decisions"),
                       ("risks", "latest risks"), ("answers", "latest answers")):
        _section(title, answer[key], _EXCERPT)


@renders("boards#HandoffSummary")
def handoff(answer: dict[str, Any]) -> None:
    """The header, then each list of the session's facts."""
    session = answer["session"]
    _head(answer, f"session {answer['session_id']} of {session['participant']['name']}, "
                  f"opened {when(session['created_at'])}" + (" (revoked)" if session["revoked_at"] else ""))
    _section("versions committed", answer["versions"], [
        ("version", lambda v: v["number"]), ("when", lambda v: when(v["created_at"])), ("source", lambda v: v["source"]),
        ("summary", lambda v: _cut(v, "summary"))])
    by_status = ", ".join(f"{n} {k}" for k, n in answer["proposals"]["by_status"].items() if n)
    _section("proposals" + (f" ({by_status})" if by_status else ""), answer["proposals"], [
        ("id", lambda p: short(p["proposal_id"])), ("status", lambda p: p["status"]),
        ("when", lambda p: when(p["created_at"])), ("summary", lambda p: _cut(p, "summary"))])
    _section("leases held", answer["leases"], [
        ("id", lambda x: short(x["lease_id"])), ("until", lambda x: when(x["expires_at"])),
        ("region", lambda x: place(x["region"], (x["region"] or {}).get("lines")))])
    _section("handoffs", answer["handoffs"], [
        ("id", lambda h: short(h["handoff_id"])), ("role", lambda h: h["role"]), ("status", lambda h: h["status"]),
        ("summary", lambda h: _cut(h, "summary"))])
    _section("todos completed", answer["completed_todos"], [
        ("board", lambda t: t["session_id"]), ("todo", lambda t: short(t["todo_message_id"])),
        ("answer", lambda t: short(t["answer_message_id"])), ("when", lambda t: when(t["resolved_at"]))])
    _section("messages recorded under it", answer["messages"], [
        ("board", lambda m: m["session_id"]), ("kind", lambda m: m["kind"]), *_EXCERPT])
