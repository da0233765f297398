"""Board ACKs, the audit log and peers in process (engine only, injected clock)."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import sqlite3

import pytest

from commonroom.clock import rfc3339
from commonroom.engine import Engine, board_acks, board_base
from commonroom.errors import CompletionMismatch, LimitExceeded, PeerNotFound
from commonroom.store import SCHEMA_VERSION
from tests.engine.boardkit import CAPS, observe, room  # noqa: F401 - room is a fixture
from tests.fakeclock import join, open_engine


# -- ACK and audit ------------------------------------------

def test_ack_state_belongs_to_the_recipient_and_the_message(room, clock):
    engine, c, w, w2 = room
    note = engine.post_session_message(c, w.session_id, "guidance", "stop", requires_ack=True)
    todo = engine.post_session_message(c, w.session_id, "todo", "do", requires_ack=True)
    engine.post_session_message(c, w.session_id, "note", "plain")
    shown, omitted = engine.pending_acks(w)
    assert [m["message_id"] for m in shown] == [note["message_id"], todo["message_id"]] and omitted == 0
    assert engine.pending_acks(c) == ([], 0) and engine.pending_acks(w2) == ([], 0)  # addressed to W only
    assert [m["message_id"] for m in engine.pending_acks(w, frozenset({note["message_id"]}))[0]] == [todo["message_id"]]
    revision = engine._board_state(w.session_id)[0]
    assert engine.ack_session_messages(c, [note["message_id"]]) == 0  # not the recipient
    assert engine.ack_session_messages(w, [note["message_id"], "msg_unknown"]) == 1
    first = engine.first_acked_at(w.session_id, note["message_id"])
    clock.advance(5)
    assert engine.ack_session_messages(w, [note["message_id"]]) == 0
    assert engine.first_acked_at(w.session_id, note["message_id"]) == first
    assert engine.first_acked_at(c.session_id, note["message_id"]) is None
    assert engine._board_state(w.session_id)[0] == revision  # ACK advances nothing, resolves nothing
    assert len(engine.pending_acks(w)[0]) == 2  # still shown to a request that omits the id
    fence = engine.get_session_assignment(w, w.session_id, todo["message_id"])["assignment_fence"]
    engine.complete_session_message(w, w.session_id, todo["message_id"], "ok", "k", fence)
    assert [m["message_id"] for m in engine.pending_acks(w)[0]] == [note["message_id"]]  # resolved: gone
    for i in range(board_base.ACK_PIGGYBACK + 3):
        engine.post_session_message(c, w.session_id, "note", f"n{i}", requires_ack=True)
    shown, omitted = engine.pending_acks(w)
    assert len(shown) == board_base.ACK_PIGGYBACK and omitted == 4


def test_the_first_ack_time_is_on_the_wire_and_outside_the_fence(room, clock):
    engine, c, w, _ = room
    todo = engine.post_session_message(c, w.session_id, "todo", "do it", requires_ack=True)
    plain = engine.post_session_message(c, w.session_id, "note", "fyi")
    assert todo["first_acked_at"] is None and plain["first_acked_at"] is None
    fence = engine.get_session_assignment(w, w.session_id, todo["message_id"])["assignment_fence"]
    token = observe(engine, w, w.session_id)["observation_token"]
    clock.advance(3)
    assert engine.ack_session_messages(w, [todo["message_id"], plain["message_id"]]) == 1  # plain needs no ACK
    first = engine.first_acked_at(w.session_id, todo["message_id"])
    clock.advance(3)
    engine.ack_session_messages(w, [todo["message_id"]])  # a later ACK keeps the first time
    listed = {m["message_id"]: m for m in engine.list_session_messages(c, w.session_id)["messages"]}
    assert listed[todo["message_id"]]["first_acked_at"] == first == rfc3339(clock.now() - dt.timedelta(seconds=3))
    assert listed[plain["message_id"]]["first_acked_at"] is None
    assignment = engine.get_session_assignment(w, w.session_id, todo["message_id"])
    assert assignment["todo"]["first_acked_at"] == first
    assert assignment["assignment_fence"] == fence  # an ACK is observability only: the fence holds
    assert observe(engine, w, w.session_id, token)["messages"] == []  # and no revision moved
    done = engine.complete_session_message(w, w.session_id, todo["message_id"], "ok", "k", fence)
    assert done["todo"]["first_acked_at"] == first and done["answer"]["first_acked_at"] is None
    delta = observe(engine, c, w.session_id, token)["messages"]
    assert {m["message_id"]: m["first_acked_at"] for m in delta} == {done["answer"]["message_id"]: None,
                                                                   todo["message_id"]: first}


def test_audit_records_metadata_only_and_keeps_the_newest(room, monkeypatch):
    from commonroom.operations import OPERATIONS
    from commonroom.operations.runner import Runner

    engine, c, w, _ = room
    runner = Runner(engine)
    ops = OPERATIONS

    async def flow():
        todo = await runner.run(ops["post_session_message"], c, {
            "session_id": c.session_id, "kind": "todo", "body": "SECRET-BODY ü", "tags": ["a", "b"]})
        assignment = await runner.run(ops["get_session_assignment"], w, {
            "session_id": c.session_id, "message_id": todo["message_id"]})
        args = {"session_id": c.session_id, "message_id": todo["message_id"], "answer": "SECRET-ANSWER",
                "completion_key": "SECRET-KEY", "expected_assignment_fence": assignment["assignment_fence"],
                "recording_session_id": w.session_id}
        done = await runner.run(ops["complete_session_message"], w, args)
        with pytest.raises(CompletionMismatch):
            await runner.run(ops["complete_session_message"], w, {**args, "answer": "SECRET-OTHER"})
        await runner.run(ops["list_session_messages"], c, {"session_id": c.session_id, "reply_to": todo["message_id"]})
        await runner.run(ops["observe_session_messages"], c, {"session_id": c.session_id})
        return todo, done

    try:
        todo, done = asyncio.run(flow())
    finally:
        runner.close()
    A = engine.store.models.BoardAudit
    rows = list(A.select().order_by(A.id))
    assert [(r.operation, r.outcome) for r in rows] == [
        ("post_session_message", "ok"), ("get_session_assignment", "ok"), ("complete_session_message", "ok"),
        ("complete_session_message", "completion_mismatch"), ("list_session_messages", "ok"),
        ("observe_session_messages", "ok")]
    post, _, complete = rows[0], rows[1], rows[2]
    assert post.message_id == todo["message_id"] and post.board_session_id == c.session_id
    assert post.details["body_bytes"] == len("SECRET-BODY ü".encode()) and post.details["tag_count"] == 2
    assert complete.details["completion_id"] == board_base.completion_identity("SECRET-KEY")
    assert complete.details["answer_message_id"] == done["answer"]["message_id"]
    assert complete.details["recording_session_id"] == w.session_id and complete.session_id == w.session_id
    dump = json.dumps([[r.operation, r.outcome, r.details, r.message_id] for r in rows])
    assert "SECRET" not in dump
    raw = sqlite3.connect(str(engine.store.path))
    try:
        assert not raw.execute("SELECT count(*) FROM board_audit WHERE details LIKE '%SECRET%'").fetchone()[0]
    finally:
        raw.close()
    monkeypatch.setattr(board_acks, "AUDIT_ROWS", 3)
    for _ in range(4):
        engine.record_board_audit(c, "list_session_messages", "ok", {"session_id": c.session_id}, None)
    assert A.select().count() == 3


def test_a_version_4_sidecar_gains_ack_audit_and_peer_tables(tmp_path, clock):
    engine = open_engine(tmp_path, "# Plan\n", clock=clock)
    c, _ = join(engine, "coordinator", CAPS)
    note = engine.post_session_message(c, c.session_id, "note", "kept", requires_ack=True)
    sidecar = engine.store.path
    engine.close()
    con = sqlite3.connect(sidecar)
    for table in ("board_ack", "board_audit", "peer_message", "peer_seen"):
        con.execute(f'DROP TABLE "{table}"')
    con.execute('DROP INDEX "board_message_ack"')
    con.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    again = Engine.open(tmp_path / "doc.md", clock=clock)
    try:
        assert again.store.meta("schema_version") == str(SCHEMA_VERSION)
        assert [m["message_id"] for m in again.pending_acks(c)[0]] == [note["message_id"]]
        assert again.ack_session_messages(c, [note["message_id"]]) == 1
        index = again.store.db.execute_sql(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'board_message_ack'").fetchall()
        assert index == [("board_message_ack",)]
    finally:
        again.close()


# -- peers, with the injected clock ---------------------------------

def _aware(engine, actor):
    return engine.project_peers(actor, frozenset()).get("commonroom/peer_awareness", [])


def test_peer_ids_resolve_only_inside_the_participant(room, clock):
    from commonroom.errors import PeerNotFound

    engine, c, w, w2 = room
    p2 = engine.peer_id_of(w2.session_id)
    assert p2.startswith("peer_") and w2.session_id not in p2
    with pytest.raises(PeerNotFound) as foreign:
        engine.post_peer_message(c, p2, "note", "x")  # another participant's peer
    with pytest.raises(PeerNotFound) as unknown:
        engine.post_peer_message(c, "peer_00", "note", "x")
    assert foreign.value.to_dict()["details"] == {"peer_id": p2}
    assert unknown.value.to_dict()["details"] == {"peer_id": "peer_00"}
    with pytest.raises(PeerNotFound):
        engine.post_peer_message(w, engine.peer_id_of(w.session_id), "note", "x")  # oneself
    with pytest.raises(LimitExceeded):
        engine.post_peer_message(w, p2, "note", "x" * (board_base.BODY_BYTES + 1))
    sent = engine.post_peer_message(w, p2, "note", "hello")
    assert sent["peer_id"] == p2 and engine.store.models.PeerMessage.select().count() == 1
    assert engine.project_peers(c, frozenset()) == {}  # nothing for another participant


def test_peer_awareness_window_and_dedup(room, clock):
    from commonroom.engine import peers

    engine, c, w, w2 = room
    assert _aware(engine, w) == []  # joining is not activity
    engine.post_session_message(w2, w2.session_id, "progress", "working")
    assert [a["peer_id"] for a in _aware(engine, w)] == [engine.peer_id_of(w2.session_id)]
    assert _aware(engine, w) == []  # once per observer and peer
    assert _aware(engine, c) == []  # another participant
    assert _aware(engine, w2) == []  # w did nothing meaningful
    clock.advance(peers.AWARENESS_SECONDS + 1)
    engine.post_session_message(w, w.session_id, "progress", "me too")
    clock.advance(peers.AWARENESS_SECONDS + 1)
    assert _aware(engine, w2) == []  # w's activity is older than 10 minutes


def test_peer_messages_piggyback_and_retention(room, clock):
    from commonroom.engine import peers

    engine, c, w, w2 = room
    p2 = engine.peer_id_of(w2.session_id)
    once = engine.post_peer_message(w, p2, "question", "once?")
    acked = engine.post_peer_message(w, p2, "risk", "until ack", requires_ack=True)

    def shown(ack=frozenset()):
        return [m["message_id"] for m in engine.project_peers(w2, ack).get("commonroom/peer_messages", [])]

    assert shown() == [once["message_id"], acked["message_id"]]
    assert shown() == [acked["message_id"]]
    assert shown(frozenset({acked["message_id"]})) == []
    assert shown() == []
    P = engine.store.models.PeerMessage
    row = P.get_by_id(acked["message_id"])
    assert row.projection_count == 2 and row.first_acked_at is not None and row.first_projected_at is not None
    # retention: at most 200 per recipient, 24 h
    for i in range(peers.PEER_RETAIN_MESSAGES + 5):
        engine.post_peer_message(w, p2, "note", f"n{i}")
    assert P.select().where(P.recipient_session_id == w2.session_id).count() == peers.PEER_RETAIN_MESSAGES
    assert len(engine.project_peers(w2, frozenset())["commonroom/peer_messages"]) == peers.PEER_PIGGYBACK
    clock.advance(peers.PEER_RETAIN_SECONDS + 1)
    assert engine.project_peers(w2, frozenset()) == {}  # expired: never shown
    engine.sweep_board_retention()  # the room timer's part (tests/engine/test_board_retention.py)
    assert P.select().where(P.recipient_session_id == w2.session_id).count() == 0


def test_concurrent_board_calls_are_each_audited_once(room):
    from commonroom.operations import OPERATIONS
    from commonroom.operations.runner import Runner

    engine, c, w, _ = room
    runner = Runner(engine)
    calls = []

    def counting(entries):
        calls.append(len(entries))
        original(entries)

    original = engine.record_board_audits
    engine.record_board_audits = counting  # type: ignore[method-assign]

    async def many():
        posts = [runner.run(OPERATIONS["post_session_message"], c, {"session_id": c.session_id, "kind": "note",
                                                                    "body": f"n{i}"}) for i in range(20)]
        lists = [runner.run(OPERATIONS["list_session_messages"], w, {"session_id": c.session_id}) for _ in range(30)]
        await asyncio.gather(*posts, *lists)

    try:
        asyncio.run(many())
    finally:
        runner.close()
    A = engine.store.models.BoardAudit
    assert A.select().count() == 50 and sum(calls) == 50
    assert len(calls) < 50  # rows that wait together share a transaction


def test_the_piggyback_probe_agrees_with_the_probes_it_replaces(room, clock):
    """``piggyback_pending`` (one statement) == ``pending_acks`` or ``peer_work``, through every branch."""
    from commonroom.engine import peers

    engine, c, w, w2 = room

    def pending(*actors):
        out = []
        for actor in actors:
            one = engine.piggyback_pending(actor)
            assert one == (bool(engine.pending_acks(actor)[0]) or engine.peer_work(actor, frozenset())), actor
            out.append(one)
        return out

    assert pending(c, w, w2) == [False, False, False]
    note = engine.post_session_message(c, c.session_id, "note", "kept", requires_ack=True)  # the board branch
    assert pending(c, w, w2) == [True, False, False]
    engine.ack_session_messages(c, [note["message_id"]])
    assert pending(c) == [True]  # an ACK is echoed per request; the message stays open
    engine.post_peer_message(w, engine.peer_id_of(w2.session_id), "question", "once?")  # the peer message branch
    assert pending(w, w2) == [False, True]
    engine.project_peers(w2, frozenset())
    assert pending(w, w2) == [False, False]
    engine.post_session_message(w2, w2.session_id, "progress", "working")  # the awareness branch
    assert pending(w, w2) == [True, False]
    engine.project_peers(w, frozenset())
    assert pending(w, w2) == [False, False]  # shown once per observer and peer
    clock.advance(peers.AWARENESS_SECONDS + 1)
    engine.post_session_message(w, w.session_id, "progress", "me too")
    assert pending(w, w2) == [False, True]
    clock.advance(peers.AWARENESS_SECONDS + 1)
    assert pending(w, w2) == [False, False]  # older than the window
    clock.advance(peers.PEER_RETAIN_SECONDS)
    pending(c, w, w2)


def test_a_kept_nothing_ends_when_the_sidecar_or_the_time_says_so(room, clock):
    """The probe's kept "nothing" (engine/piggyback.py): another connection's commit, and an awareness aging out."""
    import threading

    from commonroom.engine import peers

    engine, c, w, w2 = room
    assert engine.piggyback_pending(c) is False  # kept
    # a commit on another thread's connection (as the room's writer thread commits)
    writer = threading.Thread(target=engine.post_session_message, args=(w, c.session_id, "note", "ack me"),
                              kwargs={"requires_ack": True})
    writer.start()
    writer.join()
    assert engine.piggyback_pending(c) is True
    # w is shown w2's activity, then w2 is active again just before that showing is 24 h old
    engine.post_session_message(w2, w2.session_id, "progress", "working")
    engine.project_peers(w, frozenset())
    clock.advance(peers.PEER_RETAIN_SECONDS - 60)
    engine.post_session_message(w2, w2.session_id, "progress", "still working")
    assert engine.piggyback_pending(w) is False  # kept: w2 was shown less than 24 h ago
    clock.advance(120)  # no write: the showing is now older than 24 h, the activity 2 minutes old
    assert engine.peer_work(w, frozenset()) is True
    assert engine.piggyback_pending(w) is True
