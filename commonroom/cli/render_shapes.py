"""The readable form of each answer shape ``ce`` prints (registered in :mod:`commonroom.cli.printing`, picked by
:mod:`commonroom.cli.render`); the handoffs' and tasks' are in :mod:`commonroom.cli.render_handoffs`.

Pages are tables (short ids, who, when relative to now, summary, status)
followed by the next-page hint; outcomes are one line; ``--json`` never
reaches this module (the answer is printed as it came).
"""

from __future__ import annotations

import sys
from typing import Any

from .printing import (clock, console, detail, diff, line, markdown, name_of, outcome, place, renders, short, span,
                       table, when)


# -- the document and its versions -------------------------------------------------


@renders("room#Document")
def document(answer: dict[str, Any]) -> None:
    """The text itself (as written, highlighted, on a terminal; exact bytes when piped)."""
    markdown(answer["text"])


@renders("editing#Diff")
def version_diff(answer: dict[str, Any]) -> None:
    """The unified diff, coloured on a terminal; two versions with the same text say so in one line
    (``sample.md: no difference between v1 and v1``), on stderr when stdout is piped (it stays the empty
    diff)."""
    if answer["diff"]:
        diff(answer["diff"])
        return
    same = f"no difference between v{answer['from_version']} and v{answer['to_version']}"
    if sys.stdout.isatty():
        outcome(same)
        return
    from .sessions import ROOM

    print(f"{ROOM.get()}: {same}" if ROOM.get() else same, file=sys.stderr)


@renders("editing#VersionInfo")
def version(answer: dict[str, Any]) -> None:
    """``sample.md: v2 committed by alice: shorter goals`` (``…, rebased from v1`` when a write was rebased);
    ``sample.md: no change; head stays v2`` for a write that changed nothing."""
    if answer.get("committed") is False:
        outcome(f"no change; head stays v{answer['number']}")
        return
    rebased = answer.get("rebased_from")
    outcome(_committed(answer) + (f" (rebased from v{rebased})" if rebased else ""))


def _committed(info: dict[str, Any]) -> str:
    return f"v{info['number']} committed by {info.get('author') or 'the operator'}: {info.get('summary') or '-'}"


@renders("editing#VersionsPage")
def versions(answer: dict[str, Any]) -> None:
    """Versions, newest first."""
    table(answer["versions"], [
        ("version", lambda v: f"v{v['number']}"),
        ("who", lambda v: v.get("author")),
        ("when", lambda v: when(v.get("created_at"))),
        ("source", lambda v: v.get("source")),
        ("summary", lambda v: v.get("summary") or ""),
    ], "no versions", answer.get("next_cursor"))


# -- proposals ----------------------------------------------------------------------


def _base(proposal: dict[str, Any]) -> str:
    """``base v4 (rebased from v1)``, or ``base v1``."""
    rebased = proposal.get("rebased_from")
    return f"base v{proposal['base_version']}" + (f" (rebased from v{rebased})" if rebased else "")


@renders("editing#Proposal")
def proposal(answer: dict[str, Any]) -> None:
    """``proposal pr_… open on "Goals" (lines 6–10), base v1``."""
    where = place(answer.get("region"), answer.get("lines"))
    text = f"proposal {answer['id']} {answer['status']} {'' if where.startswith('before') else 'on '}{where}, " \
           f"{_base(answer)}"
    if answer.get("committed_version"):
        text += f", committed as v{answer['committed_version']}"
    if answer.get("reason"):
        text += f": {answer['reason']}"
    outcome(text)


@renders("editing#ApproveResult")
def approved(answer: dict[str, Any]) -> None:
    """``v2 committed by alice: shorter goals (proposal pr_… approved by bob)``."""
    proposal = answer["proposal"]
    outcome(f"{_committed(answer['version'])} (proposal {proposal['id']} approved by {name_of(proposal.get('decided_by'))})")


@renders("editing#ProposalReview")
def proposal_review(answer: dict[str, Any]) -> None:
    """``ce proposal show``: who, what, where, the base, whether it applies at the head, then the diffs."""
    from rich.text import Text

    row, head = answer["proposal"], answer["head_version"]
    line(Text(f"proposal {row['id']} by {name_of(row.get('author'))}: {row.get('summary') or '-'}", style="bold"))
    if row["status"] != "open":
        state = f"{row['status']} by {name_of(row.get('decided_by'))} {when(row.get('decided_at'))}"
        if row.get("committed_version"):
            state += f", committed as v{row['committed_version']}"
        if row.get("reason"):
            state += f": {row['reason']}"
    elif answer["applies"]:
        state = "open; applies at the head" + (f" (v{head})" if row["base_version"] != head else "")
    else:
        state = f"open; conflicts with the head v{head}: it cannot be approved (reject it, or propose again on v{head})"
    line(f"{place(row.get('region'), row.get('lines'))}, {_base(row)}, head v{head}; {state}")
    line(f"created {when(row.get('created_at'))}")
    line(Text(f"\nchange against its base v{row['base_version']}:", style="bold underline"))
    diff(answer["diff"])
    if answer.get("head_diff"):
        line(Text(f"\nchange against the head v{head} (what approving commits):", style="bold underline"))
        diff(answer["head_diff"])
    for hunk in answer.get("conflicts") or []:
        at = span([hunk["base_start"], hunk["base_end"]])  # "line 14", or "before line 15" (both inserted)
        line(Text(f"\nconflict {'at ' if at.startswith('line') else ''}{at} of v{row['base_version']}:",
                  style="bold underline"))
        line(f"the head v{head} has:")
        markdown_block(hunk["theirs"])
        line("the proposal has:")
        markdown_block(hunk["ours"])


def markdown_block(text: str) -> None:
    """Lines of text as they are, each indented by two spaces (``(nothing)`` for none)."""
    line("\n".join(f"  {piece}" for piece in text.splitlines()) if text else "  (nothing)")


@renders("editing#ProposalsPage")
def proposals(answer: dict[str, Any]) -> None:
    """Proposals, oldest first; an open one that no longer applies at the head (``applies`` false, added by
    ``ce proposal list``) says ``conflicts``."""
    table(answer["proposals"], [
        ("id", lambda p: short(p["id"])),
        ("status", lambda p: "conflicts" if p.get("applies") is False else p["status"]),
        ("who", lambda p: p.get("author")),
        ("when", lambda p: when(p.get("created_at"))),
        ("where", lambda p: place(p.get("region"), p.get("lines"))),
        ("base", lambda p: f"v{p['base_version']}" + (f" (from v{p['rebased_from']})" if p.get("rebased_from") else "")),
        ("summary", lambda p: p.get("summary") or ""),
    ], "no proposals", answer.get("next_cursor"))


# -- leases ---------------------------------------------------------------------------


@renders("editing#Lease")
def lease(answer: dict[str, Any]) -> None:
    """``lease ls_… active on lines 3–7 for alice, expires in 5m``; a released or expired one says only that."""
    active = answer.get("status") == "active"
    outcome(f"lease {answer['id']} {answer.get('status', '')} on {place(answer.get('region'), answer.get('lines'))} "
            f"for {name_of(answer.get('participant'))}" + (f", expires {when(answer.get('expires_at'))}" if active else ""))


@renders("editing#LeasesPage")
def leases(answer: dict[str, Any]) -> None:
    """Live leases, oldest acquired first."""
    table(answer["leases"], [
        ("id", lambda l: short(l["id"])),
        ("status", lambda l: l.get("status")),
        ("who", lambda l: name_of(l.get("participant"))),
        ("where", lambda l: place(l.get("region"), l.get("lines"))),
        ("acquired", lambda l: when(l.get("acquired_at"))),
        ("expires", lambda l: when(l.get("expires_at"))),
    ], "no live leases", answer.get("next_cursor"))


# -- the room ---------------------------------------------------------------------------


@renders("room#ParticipantsPage")
def participants(answer: dict[str, Any]) -> None:
    """Participants, in join order."""
    table(answer["participants"], [
        ("id", lambda p: short(p["id"])),
        ("who", lambda p: p["name"]),
        ("joined", lambda p: when(p.get("created_at"))),
        ("sessions", lambda p: p.get("sessions")),
    ], "no participants", answer.get("next_cursor"))


@renders("owner#SessionsPage")
def sessions(answer: dict[str, Any]) -> None:
    """Live sessions, oldest first, with their boards' retained messages.

    The whole session id: it names the session's board in ``ce board …``
    (a unique start of it does too), and is what ``--json`` answers and
    events carry.
    """
    table(answer["sessions"], [
        ("session", lambda s: s["session"]["id"]),
        ("who", lambda s: name_of(s["session"].get("participant"))),
        ("capabilities", lambda s: ", ".join(s["session"].get("capabilities") or [])),
        ("expires", lambda s: when(s["session"].get("expires_at"))),
        ("board", lambda s: f"{s.get('open_messages', 0)} open of {s.get('board_messages', 0)}"),
        ("last activity", lambda s: when(s.get("last_activity_at"))),
    ], "no live sessions", answer.get("next_cursor"))


@renders("cli#Joined")
def joined(answer: dict[str, Any]) -> None:
    """``joined sample.md as alice (read, observe, propose): session s_… saved in alice.json``."""
    session = answer["session"]
    line(f"joined {answer['file_name']} as {name_of(session.get('participant'))} "
         f"({', '.join(session.get('capabilities') or [])}): session {session.get('id')} saved in "
         f"{answer['session_file']}")


@renders("invitation")
def invitation(answer: dict[str, Any]) -> None:
    """``ce invitation decode``: what the invitation grants, until when, where it reaches the room (its secret
    masked), for the colleague who got it; the payload as it is with ``--json``."""
    from rich.text import Text

    from ..client import where

    transport = answer.get("transport") or {}
    how = [transport.get("type"), transport.get("mode"), "encrypted" if transport.get("encrypted") else "not encrypted"]
    detail(Text(f"invitation to room {answer.get('workspace_id')}", style="bold"), [
        ("grants", ", ".join(answer.get("capabilities") or [])),
        ("expired" if answer.get("expired") else "good until", clock(answer.get("expires_at"))),
        ("reaches", f"{where(transport)} ({', '.join(str(h) for h in how if h)})"),
        ("secret", answer.get("secret")),
        ("protocol", f"{answer.get('protocol')} {answer.get('version')}"),
    ])


@renders("owner#RevokeResult")
def revoked(answer: dict[str, Any]) -> None:
    """``notes.md: session s_… revoked`` (or ``… was already revoked``)."""
    outcome(f"{answer.get('kind', '')} {answer.get('id', '')} " + ("revoked" if answer.get("revoked") else
                                                                  "was already revoked"))


def _bytes(n: int) -> str:
    """``5.2 MB``, ``812 KB``, ``96 B`` (powers of 1024)."""
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


@renders("owner#SidecarReport")
def sidecar_report(answer: dict[str, Any]) -> None:
    """The sidecar's bytes, then one line per part."""
    total = answer["file_bytes"] + answer["wal_bytes"]
    per = f"; {_bytes(total // answer['versions'])} a version" if answer["versions"] else ""
    line(f"sidecar {_bytes(total)} (file {_bytes(answer['file_bytes'])}, WAL {_bytes(answer['wal_bytes'])}, "
         f"free {_bytes(answer['free_bytes'])}): {answer['versions']} versions, {answer['checkpoints']} stored whole"
         f" ({answer['text_checkpoints']} as text){per}")
    for part, size in answer["parts"].items():
        line(f"  {part:<12} {_bytes(size):>10}")
    if not answer["exact"]:
        line("  (estimated from the stored values: this SQLite has no dbstat)")


@renders("owner#SidecarCompaction")
def sidecar_compaction(answer: dict[str, Any]) -> None:
    """``compacted: 150.2 MB → 5.1 MB (12 checkpoints repacked, 3.2 s)`` and the report after."""
    before, after = (answer[k]["file_bytes"] + answer[k]["wal_bytes"] for k in ("before", "after"))
    # a room of an older commonroom answers without "vacuumed": its compact failed outright when VACUUM did
    done = "compacted" if answer.get("vacuumed", True) else "not compacted (VACUUM failed)"
    line(f"{done}: {_bytes(before)} → {_bytes(after)} ({answer['repacked']} checkpoints repacked, "
         f"{answer['seconds']:.1f} s)")
    sidecar_report(answer["after"])


@renders("cli#Status")
def status(answer: dict[str, Any]) -> None:
    """The room at a glance: running, ports, head, participants, open proposals, leases."""
    from rich.text import Text

    room = answer["room"]
    if answer["running"] and answer.get("pid") is None:  # as a session reads it: no pid, no ports
        line(Text(f"{answer['file']}: running (as this session reads it)", style="bold green"))
    elif answer["running"]:
        ingress = answer.get("ingress") or {}
        gone = {t["type"]: t for t in room.get("transports") or () if not t.get("listening", True)}
        where = f"{ingress.get('host', '?')}:{ingress.get('port', '?')}" + (
            f" and {ingress['socket']}" if ingress.get("socket") else "") + "".join(
            f", {name} {listener.get('address')}:{listener.get('port')}" + (" (gone)" if name in gone else "")
            for name, listener in sorted((ingress.get("transports") or {}).items()))
        ports = f"owner port {answer.get('owner_port')}, ingress {where}"
        line(Text(f"{answer['file']}: running (pid {answer.get('pid')}; {ports})", style="bold green"))
        for name, listener in sorted(gone.items()):
            line(Text(f"the {name} address {listener['address']} is gone from this machine since "
                      f"{listener.get('gone_since')}: nothing reaches the room there and {name} invitations are "
                      "refused; the room listens again when the address comes back", style="bold red"))
    else:
        line(Text(f"{answer['file']}: not running (read from the sidecar)", style="bold"))
    line(f"head v{room['head_version']} · {room['participants']} participants · {room['sessions']} live sessions · "
         f"last event #{room['last_event_id']}")
    behind = room.get("file_behind")
    if behind:
        line(Text(f"{behind['message']} ({behind['error']}, since {behind['since']}): the room writes it as soon as "
                  "the disk lets it and takes no new version until then", style="bold red"))
    for title, renderer, key in (("participants", participants, "participants"),
                                 ("open proposals", proposals, "proposals"), ("leases", leases, "leases")):
        console().print(Text(f"\n{title}", style="bold underline"))
        renderer(answer[key])


# -- boards ----------------------------------------------------------------------------------


def ack(message: dict[str, Any]) -> str:
    """A message's ACK state: ``acked 5m ago``, ``not acked`` (asked, not yet), ``-`` (no ACK asked)."""
    if message.get("first_acked_at"):
        return f"acked {when(message['first_acked_at'])}"
    return "not acked" if message.get("requires_ack") else "-"


@renders("boards#Message")
def message(answer: dict[str, Any]) -> None:
    """``sample.md: note m_… (normal, open, not acked) by alice: body``."""
    state = ack(answer)
    outcome(f"{answer['kind']} {answer['message_id']} ({answer.get('priority')}, {answer.get('status')}"
            f"{'' if state == '-' else ', ' + state}) by {name_of(answer.get('author'))}: {answer.get('body', '')}")


def _messages(rows: list[dict[str, Any]], next_cursor: Any = None) -> None:
    table(rows, [
        ("id", lambda m: short(m["message_id"])),
        ("kind", lambda m: m["kind"]),
        ("status", lambda m: m.get("status")),
        ("priority", lambda m: m.get("priority")),
        ("who", lambda m: name_of(m.get("author"))),
        ("when", lambda m: when(m.get("created_at"))),
        ("ack", ack),
        ("summary", lambda m: m.get("body") or ""),
    ], "no messages", next_cursor)


@renders("boards#MessagesPage")
def messages(answer: dict[str, Any]) -> None:
    """A board's messages, oldest first."""
    _messages(answer["messages"], answer.get("next_cursor"))


@renders("boards#Observation")
def observation(answer: dict[str, Any]) -> None:
    """The changed messages (a baseline reads none; no change says so), then the token to observe after."""
    from rich.text import Text

    if answer.get("history_lost"):
        line(Text("history lost: some changes were dropped; reread the board", style="yellow"))
    if answer.get("baseline"):
        line("baseline: nothing read; the board's changes after it come with --token (ce board list reads what "
             "the board holds)")
    elif not answer.get("messages"):
        line("no changes since that token")
    else:
        _messages(answer["messages"])
    line(Text(f"next: --token {answer['observation_token']}" + (" (more waiting)" if answer.get("has_more") else ""),
              style="dim"))


@renders("boards#Assignment")
def assignment(answer: dict[str, Any]) -> None:
    """The todo, its replies and the fence to complete it with."""
    message(answer["todo"])
    if answer.get("replies"):
        _messages(answer["replies"])
    line(f"fence {answer['assignment_fence']}" + ("" if answer.get("completable") else " (not completable)"))


@renders("boards#Completion")
def completion(answer: dict[str, Any]) -> None:
    """The answer posted (or replayed) and the todo resolved."""
    message(answer["answer"])
    line(f"todo {answer['todo']['message_id']} {answer['todo'].get('status')}"
         + (" (replayed)" if answer.get("replayed") else ""))

