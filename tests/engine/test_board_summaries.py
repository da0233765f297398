"""The two board summaries in process (engine, injected clock): content, bounds, determinism, plans.

``session_discussion_summary`` and ``session_handoff_summary``
(commonroom/engine/board_summaries.py; docs/boards.md, *Summaries*). Every
answer is validated against its schema; each bound of the bounds table
(items a list, characters of a text, bytes of an answer) is provoked here.
"""

from __future__ import annotations

import pytest

from commonroom import jsontext, schemas
from commonroom.engine import board_base, board_summaries
from commonroom.errors import NotFound, PermissionDenied
from tests.engine.boardkit import CAPS, post_todo, room  # noqa: F401 - room is a fixture
from tests.fakeclock import join

ITEMS, CHARS, BYTES = board_summaries.SUMMARY_ITEMS, board_summaries.SUMMARY_TEXT_CHARS, board_summaries.SUMMARY_BYTES


def _size(answer) -> int:
    return len(jsontext.dumps(answer).encode("utf-8"))


def _discussion(engine, actor, sid):
    answer = engine.session_discussion_summary(actor, sid)
    schemas.validate("boards#DiscussionSummary", answer)
    assert _size(answer) <= BYTES
    return answer


def _handoff(engine, actor, sid):
    answer = engine.session_handoff_summary(actor, sid)
    schemas.validate("boards#HandoffSummary", answer)
    assert _size(answer) <= BYTES
    return answer


def _complete(engine, worker, board, todo_id, answer, key):
    fence = engine.get_session_assignment(worker, board, todo_id)["assignment_fence"]
    return engine.complete_session_message(worker, board, todo_id, answer, key, fence,
                                           recording_session_id=worker.session_id)


def test_the_coordinator_worker_flow_in_both_summaries(room):
    engine, c, w, _ = room
    empty = _discussion(engine, c, c.session_id)
    assert empty["retained"] == 0 and empty["last_activity_at"] is None and empty["truncated"] is False
    assert empty["open_todos"] == {"items": [], "total": 0, "truncated": False}
    todo = post_todo(engine, c)
    urgent = engine.post_session_message(c, c.session_id, "todo", "review it", priority="urgent", requires_ack=True)
    question = engine.post_session_message(w, c.session_id, "question", "which branch?")
    engine.post_session_message(c, c.session_id, "answer", "main", reply_to=question["message_id"])
    open_q = engine.post_session_message(w, c.session_id, "question", "and the docs?", priority="high")
    engine.post_session_message(c, c.session_id, "decision", "we ship on Friday")
    engine.post_session_message(c, c.session_id, "risk", "the crash suite is slow")
    engine.clock.advance(90)
    done = _complete(engine, w, c.session_id, todo["message_id"], "done: 1f2e3d4", "W-1")
    engine.ack_session_messages(c, [urgent["message_id"]])  # C is the board's session: its ACK counts

    summary = _discussion(engine, w, c.session_id)
    assert summary["retained"] == 8 and summary["history_lost"] is False
    assert summary["by_kind"]["todo"] == 2 and summary["by_kind"]["answer"] == 2 and summary["by_kind"]["question"] == 2
    assert summary["by_status"] == {"open": 7, "resolved": 1}
    assert [t["message_id"] for t in summary["open_todos"]["items"]] == [urgent["message_id"]]
    first = summary["open_todos"]["items"][0]
    assert first["priority"] == "urgent" and first["requires_ack"] is True and first["age_seconds"] == 90
    assert first["acked"] is True and first["first_acked_at"] == engine.first_acked_at(c.session_id,
                                                                                         urgent["message_id"])
    assert first["body"] == "review it" and first["body_truncated"] is False
    assert [q["message_id"] for q in summary["open_questions"]["items"]] == [open_q["message_id"]]
    assert [a["message_id"] for a in summary["answers"]["items"]][0] == done["answer"]["message_id"]
    assert summary["decisions"]["items"][0]["body"] == "we ship on Friday"
    assert summary["risks"]["total"] == 1
    assert summary["last_activity_at"] == done["todo"]["updated_at"]
    assert summary["revision"] == engine._board_state(c.session_id)[0]

    activity = _handoff(engine, c, w.session_id)
    assert activity["session"]["participant"]["name"] == "worker"
    assert activity["completed_todos"]["items"] == [{
        "session_id": c.session_id, "todo_message_id": todo["message_id"],
        "answer_message_id": done["answer"]["message_id"], "resolved_at": done["todo"]["resolved_at"]}]
    assert [m["message_id"] for m in activity["messages"]["items"]] == [done["answer"]["message_id"]]
    assert activity["last_activity_at"] == done["todo"]["resolved_at"]
    # nothing was copied: C's board still holds exactly what was posted there, W's board nothing
    assert engine.session_discussion_summary(c, w.session_id)["retained"] == 0
    # the same state, the same answer (deterministic)
    assert engine.session_handoff_summary(c, w.session_id) == activity


def test_the_handoff_summary_states_versions_proposals_leases_and_handoffs(engine):
    w, _ = join(engine, "worker", ["read", "write", "propose", "lease", "handoff", "approve", "message"])
    other, _ = join(engine, "owner", ["read", "handoff"])
    for i in range(3):
        engine.write(w, engine.head().number, f"# Doc\n\nround {i}\n", None, f"round {i}")
    proposal = engine.create_proposal(w, engine.head().number, None, "# Doc\n\nproposed\n", "a proposal")
    rejected = engine.create_proposal(w, engine.head().number, None, "# Doc\n\nno\n", "no")
    engine.reject_proposal(w, rejected["id"], "not now")
    lease = engine.acquire_lease(w, {"lines": [1, 1]}, 600)
    released = engine.acquire_lease(w, {"lines": [3, 3]}, 600)
    engine.release_lease(w, released["id"])
    own = engine.create_handoff(w, "write the intro")["handoff"]
    theirs = engine.create_handoff(other, "check the numbers")["handoff"]
    engine.accept_handoff(w, theirs["id"])

    activity = _handoff(engine, other, w.session_id)
    assert [v["summary"] for v in activity["versions"]["items"]] == ["round 2", "round 1", "round 0"]
    assert activity["versions"]["total"] == 3 and activity["versions"]["truncated"] is False
    assert activity["proposals"]["by_status"] == {"open": 1, "approved": 0, "rejected": 1, "withdrawn": 0}
    assert {p["proposal_id"] for p in activity["proposals"]["items"]} == {proposal["id"], rejected["id"]}
    assert [x["lease_id"] for x in activity["leases"]["items"]] == [lease["id"]]
    assert activity["leases"]["items"][0]["region"] == {"lines": [1, 1]}
    roles = {(h["handoff_id"], h["role"], h["status"]) for h in activity["handoffs"]["items"]}
    assert roles == {(own["id"], "owner", "open"), (theirs["id"], "assignee", "accepted")}
    assert activity["completed_todos"]["total"] == 0 and activity["messages"]["total"] == 0
    # the owner's own summary holds its handoff as owner, not W's acts
    mine = _handoff(engine, other, other.session_id)
    assert [(h["handoff_id"], h["role"]) for h in mine["handoffs"]["items"]] == [(theirs["id"], "owner")]
    assert mine["versions"]["total"] == 0 and mine["leases"]["total"] == 0
    # an expired lease is not held
    engine.clock.advance(601)
    assert _handoff(engine, other, w.session_id)["leases"] == {"items": [], "total": 0, "truncated": False}


def test_authority_is_read_and_an_unknown_session_is_not_found(room):
    engine, c, w, _ = room
    blind, _ = join(engine, "blind", ["message"])
    for method in (engine.session_discussion_summary, engine.session_handoff_summary):
        with pytest.raises(PermissionDenied) as known:
            method(blind, c.session_id)
        with pytest.raises(PermissionDenied) as unknown:
            method(blind, "s_nobody")
        assert (known.value.code, known.value.details) == (unknown.value.code, unknown.value.details)
        with pytest.raises(NotFound) as missing:
            method(w, "s_nobody")
        assert missing.value.details == {"session_id": "s_nobody"}


def test_the_item_bound_keeps_the_most_urgent_and_the_latest(room):
    engine, c, w, _ = room
    todos = [engine.post_session_message(c, c.session_id, "todo", f"todo {i}",
                                         priority="high" if i == ITEMS + 3 else "normal")
             for i in range(ITEMS + 5)]
    decisions = [engine.post_session_message(w, c.session_id, "decision", f"decision {i}",
                                             recording_session_id=w.session_id) for i in range(ITEMS + 2)]
    summary = _discussion(engine, c, c.session_id)
    items = summary["open_todos"]["items"]
    assert len(items) == ITEMS and summary["open_todos"] == {"items": items, "total": ITEMS + 5, "truncated": True}
    assert items[0]["message_id"] == todos[ITEMS + 3]["message_id"]  # the high one first
    assert [t["message_id"] for t in items[1:]] == [t["message_id"] for t in todos[:ITEMS - 1]]  # then the oldest
    assert [d["message_id"] for d in summary["decisions"]["items"]] == [
        d["message_id"] for d in reversed(decisions[2:])]  # the latest, newest first
    assert summary["decisions"]["truncated"] is True and summary["truncated"] is True
    assert summary["by_kind"]["todo"] == ITEMS + 5  # counts are exact
    activity = _handoff(engine, c, w.session_id)
    assert len(activity["messages"]["items"]) == ITEMS and activity["messages"]["total"] == ITEMS + 2
    assert activity["messages"]["truncated"] is True and activity["truncated"] is True


def test_the_character_bound_cuts_bodies_and_says_so(room):
    engine, c, w, _ = room
    long = "é" * (CHARS + 1)
    engine.post_session_message(c, c.session_id, "risk", long)
    exact = engine.post_session_message(c, c.session_id, "decision", "d" * CHARS)
    summary = _discussion(engine, c, c.session_id)
    risk = summary["risks"]["items"][0]
    assert risk["body"] == long[:CHARS] and risk["body_truncated"] is True
    decision = summary["decisions"]["items"][0]
    assert decision["message_id"] == exact["message_id"] and decision["body_truncated"] is False
    assert summary["risks"]["truncated"] is False and summary["truncated"] is True
    w2, _ = join(engine, "writer", ["read", "write"])
    engine.write(w2, engine.head().number, "# Doc\n\nx\n", None, "s" * (CHARS + 10))
    version = _handoff(engine, c, w2.session_id)["versions"]["items"][0]
    assert version["summary"] == "s" * CHARS and version["summary_truncated"] is True


def test_the_byte_bound_leaves_items_off_and_the_answer_stays_valid(room):
    engine, c, w, _ = room
    body = "界" * (CHARS + 50)  # 3 bytes a character: each item carries 1,500 bytes of body
    for kind in ("todo", "question", "decision", "risk", "answer"):
        for _ in range(ITEMS):
            engine.post_session_message(w, c.session_id, kind, body, recording_session_id=w.session_id)
    summary = _discussion(engine, c, c.session_id)
    shown = {k: len(summary[k]["items"]) for k in ("open_todos", "open_questions", "decisions", "risks", "answers")}
    assert sum(shown.values()) < 5 * ITEMS  # items were left off for the byte bound alone
    assert max(shown.values()) - min(shown.values()) <= 1  # evenly, from the longest list
    assert all(summary[k]["truncated"] for k in shown) and summary["truncated"] is True
    assert BYTES - 2000 < _size(summary) <= BYTES
    assert engine.session_discussion_summary(c, c.session_id) == summary  # deterministic
    activity = _handoff(engine, c, w.session_id)  # the same bound on the session's messages
    assert activity["messages"]["total"] == 5 * ITEMS and len(activity["messages"]["items"]) == ITEMS


def test_history_lost_once_retention_pruned_the_board(room, monkeypatch):
    engine, c, w, _ = room
    monkeypatch.setattr(board_base, "RETAIN_MESSAGES", 5)
    question = engine.post_session_message(w, c.session_id, "question", "still open?")
    engine.post_session_message(c, c.session_id, "answer", "yes", reply_to=question["message_id"])
    assert _discussion(engine, c, c.session_id)["history_lost"] is False
    assert _handoff(engine, c, w.session_id)["history_lost"] is False
    for i in range(6):
        engine.post_session_message(c, c.session_id, "note", f"note {i}")
    summary = _discussion(engine, c, c.session_id)
    assert summary["history_lost"] is True and summary["retained"] == 5
    # the question's reply was pruned: it is not reported unanswered (a pruned reply is a reply)
    assert summary["open_questions"]["total"] == 0
    assert _handoff(engine, c, w.session_id)["history_lost"] is True


def test_the_summaries_read_through_indexes(room):
    """No statement of either summary scans a table that grows with history (sidecar schema 9)."""
    engine, c, w, _ = room
    post_todo(engine, c)
    statements: list[str] = []
    connection = engine.store.db.connection()
    connection.set_trace_callback(statements.append)
    try:
        engine.session_discussion_summary(c, c.session_id)
        engine.session_handoff_summary(c, w.session_id)
    finally:
        connection.set_trace_callback(None)
    scans = []
    for sql in statements:
        if not sql.lstrip().upper().startswith("SELECT"):
            continue
        for row in engine.store.db.execute_sql("EXPLAIN QUERY PLAN " + sql).fetchall():
            words = row[3].split()
            # the board table has one row per board: the room-wide history_lost probe may scan it;
            # a "(subquery-N)" is the result of the handoff union, whose parts are indexed searches
            if (words[0] == "SCAN" and "INDEX" not in row[3] and words[1] not in ("CONSTANT", "board")
                    and not words[1].startswith("(subquery-")):
                scans.append((row[3], sql))
    assert any('"version"' in s for s in statements)
    assert scans == []
    # the unanswered-question probe goes through reply_to (walking the board's index for each
    # question cost 365 ms on the bench's board of 2,000 messages)
    probes = [sql for sql in statements if "NOT EXISTS" in sql]
    assert probes
    for sql in probes:
        plan = " ".join(row[3] for row in engine.store.db.execute_sql("EXPLAIN QUERY PLAN " + sql).fetchall())
        assert "board_message_reply_to (reply_to=?)" in plan, plan
