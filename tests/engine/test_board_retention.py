"""Board and peer retention on the room scheduler, with the injected clock.

``room_timers`` registers ``board-retention`` (``Engine.sweep_board_retention``);
``Scheduler.run_due`` runs it when the fake clock says it is due, on the
room's writer thread (``Runner.write``).
"""

from __future__ import annotations

import asyncio

import pytest

from commonroom.engine import board_base, peers
from commonroom.errors import AssignmentHistoryLost
from commonroom.operations.runner import Runner
from commonroom.room import BOARD_SWEEP_SECONDS, room_timers
from tests.engine.boardkit import observe, room  # noqa: F401 - room is a fixture

NOTHING = {"board_messages": 0, "peer_messages": 0, "peer_seen": 0}


def count(engine, table: str) -> int:
    return engine.store.db.execute_sql(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]


def changes(engine) -> int:
    return engine.store.db.connection().total_changes


@pytest.fixture
def scheduled(room):
    """The room fixture's engine with its real scheduler and writer thread."""
    engine = room[0]
    runner = Runner(engine)
    scheduler = room_timers(engine, runner)
    yield room, scheduler
    runner.close()


def test_the_scheduler_prunes_peer_messages_and_awareness_after_24_hours(scheduled, clock):
    (engine, c, w, w2), scheduler = scheduled
    assert scheduler.timers["board-retention"].seconds == BOARD_SWEEP_SECONDS
    engine.post_session_message(w, w.session_id, "progress", "working")  # meaningful activity of W
    engine.post_peer_message(w, engine.peer_id_of(w2.session_id), "note", "hello")
    assert engine.project_peers(w2, frozenset())["commonroom/peer_awareness"]  # a dedup row now
    assert (count(engine, "peer_message"), count(engine, "peer_seen")) == (1, 1)

    async def run() -> list[str]:
        return await scheduler.run_due()

    assert "board-retention" in asyncio.run(run())  # due at start: nothing old yet
    assert (count(engine, "peer_message"), count(engine, "peer_seen")) == (1, 1)
    clock.advance(peers.PEER_RETAIN_SECONDS - BOARD_SWEEP_SECONDS)
    assert "board-retention" in asyncio.run(run())
    assert count(engine, "peer_message") == 1  # 24 h not reached
    clock.advance(BOARD_SWEEP_SECONDS + 1)
    assert "board-retention" in asyncio.run(run())
    assert (count(engine, "peer_message"), count(engine, "peer_seen")) == (0, 0)
    assert scheduler.failures["board-retention"] == 0
    before = changes(engine)
    assert engine.sweep_board_retention() == NOTHING  # idempotent: nothing due, nothing written
    assert changes(engine) == before


def test_a_lowered_peer_bound_is_re_established_by_the_sweep(room, monkeypatch):
    engine, c, w, w2 = room
    for i in range(5):
        engine.post_peer_message(w, engine.peer_id_of(w2.session_id), "note", f"m{i}")
    monkeypatch.setattr(peers, "PEER_RETAIN_MESSAGES", 2)
    assert engine.sweep_board_retention() == {**NOTHING, "peer_messages": 3}
    P = engine.store.models.PeerMessage
    assert sorted(r.body for r in P.select()) == ["m3", "m4"]
    assert engine.sweep_board_retention() == NOTHING


def test_board_retention_moves_the_low_watermark_and_history_lost_follows(room, monkeypatch):
    engine, c, w, _ = room
    board = c.session_id
    before = observe(engine, c, board)["observation_token"]
    todo = engine.post_session_message(c, board, "todo", "keep me open")
    engine.post_session_message(c, board, "guidance", "a reply", reply_to=todo["message_id"])
    for i in range(5):
        engine.post_session_message(c, board, "note", f"n{i}")
    after = observe(engine, c, board)["observation_token"]
    revision, low = engine._board_state(board)
    assert (revision, low) == (7, 0)
    monkeypatch.setattr(board_base, "RETAIN_MESSAGES", 3)  # a bound lower than what the board holds

    assert engine.sweep_board_retention() == {**NOTHING, "board_messages": 3}  # the reply, n0, n1
    kept = [m["body"] for m in engine.list_session_messages(c, board)["messages"]]
    assert kept == ["keep me open", "n2", "n3", "n4"]  # newest 3 plus the open todo
    assert engine._board_state(board) == (7, 4)  # n1 was revision 4; the revision itself does not move
    lost = observe(engine, c, board, before)
    assert lost["history_lost"] is True and [m["body"] for m in lost["messages"]] == kept
    assert observe(engine, c, board, after)["history_lost"] is False
    with pytest.raises(AssignmentHistoryLost):
        engine.get_session_assignment(w, board, todo["message_id"])

    state = changes(engine)
    assert engine.sweep_board_retention() == NOTHING  # idempotent
    assert changes(engine) == state
    assert engine._board_state(board) == (7, 4)


def test_completing_a_todo_that_retention_then_prunes_answers_the_completion(room, monkeypatch):
    """The todo resolved by a completion stops being an open todo, so the prune in the same write may
    remove it (more than RETAIN_MESSAGES newer messages): the completion still answers its resolved todo."""
    engine, c, w, _ = room
    monkeypatch.setattr(board_base, "RETAIN_MESSAGES", 3)
    todo = engine.post_session_message(c, w.session_id, "todo", "old todo")
    for i in range(3):
        engine.post_session_message(c, w.session_id, "note", f"n{i}")  # the open todo stays
    fence = engine.get_session_assignment(w, w.session_id, todo["message_id"])["assignment_fence"]
    done = engine.complete_session_message(w, w.session_id, todo["message_id"], "done", "k1", fence)
    assert done["todo"]["message_id"] == todo["message_id"] and done["todo"]["status"] == "resolved"
    assert done["replayed"] is False
    left = [m["message_id"] for m in engine.list_session_messages(c, w.session_id)["messages"]]
    assert todo["message_id"] not in left and done["answer"]["message_id"] in left
