"""``ce`` takes back the short ids its tables print (docs/operator.md, *Short ids*).

A real room (tests/roomproc.py) and the installed ``ce``: the short id a
table prints (``pr_85ee0f…``), with or without the ``…``, or another unique
start of the id, works wherever the full id does (proposals, leases,
handoffs for a session and for the operator, board messages, live sessions for
``ce revoke``); a start
shared by several ids is ``invalid_request`` naming them; one that names
none reaches the room, which answers its own not-found code.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from commonroom.errors import EXIT_CODES
from tests.conftest import SAMPLE
from tests.roomproc import ce, start_room

GOALS = "## Goals\n\n- Ship it.\n\n"
#: A short id as the tables print it.
SHORT = re.compile(r"\b([a-z]+_[0-9a-f]{8}…)")


def ok(*args: str) -> str:
    done = ce(*args)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def shown(table: str, full: str) -> str:
    """The short id the table prints for ``full``."""
    found = [s for s in SHORT.findall(table) if full.startswith(s[:-1])]
    assert len(found) == 1, (full, table)
    return found[0]


def test_short_ids_from_the_tables_are_taken_back(tmp_path: Path):
    room = start_room(tmp_path / "room", SAMPLE)
    doc = str(room.document)
    try:
        session = tmp_path / "bob.json"
        ok("join", room.invite("bob", "read,propose,approve,lease,handoff,message"), "--session-file", str(session))
        S = ("--session-file", str(session))

        # proposals: approve by the printed short id, reject by the hex alone, ambiguous and unknown starts
        first = json.loads(ok("propose", "--base", "1", "--heading", "Goals", "--text", GOALS, *S, "--json"))["id"]
        second = json.loads(ok("propose", "--base", "1", "--lines", "1-1", "--text", "# P\n", *S, "--json"))["id"]
        table = ok("proposals", doc)
        assert ok("approve", shown(table, first), *S).endswith(f"(proposal {first} approved by bob)\n")
        assert ok("reject", second.partition("_")[2][:6], *S).startswith(f"{room.document.name}: proposal {second} rejected")
        done = ce("withdraw", "pr_", *S)
        assert done.returncode == EXIT_CODES["invalid_request"], done.stderr
        assert "more than one proposal" in done.stderr and first in done.stderr and second in done.stderr
        done = ce("approve", "pr_zzz", *S)
        assert done.returncode == EXIT_CODES["proposal_not_found"], done.stderr

        # leases: release by the short id of `ce lease list`
        lease = json.loads(ok("lease", "acquire", "--lines", "1-1", *S, "--json"))["id"]
        released = ok("lease", "release", shown(ok("lease", "list", *S), lease), *S)
        assert released.startswith(f"{room.document.name}: lease {lease} released"), released

        # handoffs: the operator's `ce handoff FILE ID` and a session's cancel
        handoff = json.loads(ok("handoff-create", "--summary", "check it", *S, "--json"))["handoff"]["id"]
        short = shown(ok("handoffs", doc), handoff)
        assert ok("handoff", doc, short).startswith(f"handoff {handoff} · open")
        assert ok("handoff-cancel", short[:-1], *S).startswith(f"{room.document.name}: handoff {handoff} cancelled")

        # board messages: the assignment and the completion of a todo by the short id of `ce board list`
        todo = json.loads(ok("board", "post", "-", "todo", "check the goals", *S, "--json"))["message_id"]
        short = shown(ok("board", "list", "-", *S), todo)
        fence = json.loads(ok("board", "assignment", "-", short, *S, "--json"))["assignment_fence"]
        done = json.loads(ok("board", "complete", "-", short, "checked", "--key", "k1", "--fence", fence, *S, "--json"))
        assert done["todo"]["message_id"] == todo and done["todo"]["status"] == "resolved"
    finally:
        room.stop()


def test_sessions_are_listed_and_revoked_by_the_short_id_ce_sessions_prints(tmp_path: Path):
    room = start_room(tmp_path / "room", SAMPLE)
    doc = str(room.document)
    ana, bo = tmp_path / "ana.json", tmp_path / "bo.json"
    try:
        ok("join", room.invite("ana", "read"), "--session-file", str(ana))
        ok("join", room.invite("bo", "read,message"), "--session-file", str(bo))
        ana_id, bo_id = (json.loads(f.read_text())["session_id"] for f in (ana, bo))
        table = ok("sessions", doc)
        assert "ana" in table and "bo" in table and "read, message" in table
        listed = json.loads(ok("sessions", doc, "--json"))["sessions"]
        assert [s["session"]["id"] for s in listed] == [ana_id, bo_id]
        for short_start in ("s", "s_", ana_id[:5]):  # revoking cuts someone off: 4 characters after s_ at least
            done = ce("revoke", doc, "--session", short_start)
            assert done.returncode == EXIT_CODES["invalid_request"], done.stderr
            assert "at least 4 characters" in done.stderr
        assert ana_id in table  # ce sessions prints whole ids (a participant's board commands take them)
        assert ana_id in ok("revoke", doc, "--session", ana_id[:11] + "…")
        assert ce("read", "--session-file", str(ana)).returncode == EXIT_CODES["unauthorized"]
        assert ce("read", "--session-file", str(bo)).returncode == 0
        assert "ana" not in ok("sessions", doc)  # revoked: no longer live
        for gone in (ana_id[:11] + "…", "s_ffff"):  # a revoked session's start, a start of nothing
            done = ce("revoke", doc, "--session", gone)
            assert done.returncode == EXIT_CODES["not_found"], done.stderr
            assert "no live session id starts with" in done.stderr and "ce sessions" in done.stderr
        assert "already revoked" in ok("revoke", doc, "--session", ana_id)  # the full id: the room says
    finally:
        room.stop()
    # the room stopped: listed from the sidecar, revoked offline under the writer lock, by a start of the
    # hex given in capitals
    assert "bo" in ok("sessions", doc)
    assert bo_id in ok("revoke", doc, "--session", bo_id.partition("_")[2][:6].upper())
    assert "no live sessions" in ok("sessions", doc)
    # a plain file is no room: refused, and no sidecar is made
    plain = tmp_path / "plain.md"
    plain.write_text("# plain\n")
    done = ce("revoke", str(plain), "--session", "s_1234")
    assert done.returncode == EXIT_CODES["invalid_request"] and "has no room yet" in done.stderr, done.stderr
    done = ce("sessions", str(plain))  # the same refusal from the read-only sidecar (Engine.open)
    assert done.returncode == EXIT_CODES["invalid_request"] and "has no room yet" in done.stderr, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("plain")) == ["plain.md"]
