"""Session boards in process (engine only, injected clock): posting, bounds, the
assignment fence, the completion key protocol, observation tokens, the migration.

The completion replay cases are data (``boards_cases/completion.json``).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from pathlib import Path

import peewee as pw
import pytest

from commonroom.engine import OPERATOR, Engine, board_base, board_completion
from commonroom.errors import (AssignmentHistoryLost, AssignmentStale, AssignmentTooLarge, CompletionMismatch,
                               CompletionPersistenceUncertain, InvalidRequest, LimitExceeded, MessageNotFound,
                               NotFound, PermissionDenied)
from commonroom.live.hub import Hub
from commonroom.live.stream import Streams
from commonroom.store import db as store_db, migrations
from tests.engine.boardkit import CAPS, observe, post_todo, room  # noqa: F401 - room is a fixture
from tests.fakeclock import join, open_engine

CASES = json.loads((Path(__file__).parent / "boards_cases" / "completion.json").read_text("utf-8"))

# ---------------------------------------------------------------- posting


def test_post_and_list_with_exact_and_filters(room):
    engine, c, w, _ = room
    todo = post_todo(engine, c)
    assert todo["kind"] == "todo" and todo["status"] == "open" and todo["priority"] == "normal"
    assert todo["author"] == {"participant_id": c.participant_id, "name": "coordinator"}
    assert todo["author_session_id"] is None
    q = engine.post_session_message(w, c.session_id, "question", "which branch?", reply_to=todo["message_id"],
                                    requires_ack=True, priority="high")
    engine.post_session_message(c, c.session_id, "note", "unrelated")
    page = engine.list_session_messages(w, c.session_id, reply_to=todo["message_id"])
    assert [m["message_id"] for m in page["messages"]] == [q["message_id"]]
    assert page["messages"][0]["requires_ack"] is True
    exact = engine.list_session_messages(w, c.session_id, message_id=todo["message_id"], kind="todo", status="open")
    assert [m["message_id"] for m in exact["messages"]] == [todo["message_id"]]
    assert engine.list_session_messages(w, c.session_id, message_id=todo["message_id"], kind="note")["messages"] == []
    first = engine.list_session_messages(w, c.session_id, limit=2)
    rest = engine.list_session_messages(w, c.session_id, limit=2, cursor=first["next_cursor"])
    assert len(first["messages"]) == 2 and len(rest["messages"]) == 1 and rest["next_cursor"] is None
    # W's own board is another board: C's message ids are not found there
    with pytest.raises(MessageNotFound):
        engine.list_session_messages(w, w.session_id) and engine.get_session_assignment(
            w, w.session_id, todo["message_id"])
    with pytest.raises(MessageNotFound):
        engine.post_session_message(c, w.session_id, "answer", "x", reply_to=todo["message_id"])


def test_bounds_store_nothing(room):
    engine, c, _, _ = room
    cases = [({"body": "x" * (board_base.BODY_BYTES + 1)}, "body_bytes"),
             ({"body": "é" * (board_base.BODY_BYTES // 2 + 1)}, "body_bytes"),
             ({"tags": ["t"] * 17}, "tags"), ({"tags": ["t" * 65]}, "tag_chars")]
    for change, limit in cases:
        args = {"body": "ok", "tags": None, **change}
        with pytest.raises(LimitExceeded) as info:
            engine.post_session_message(c, c.session_id, "note", args["body"], tags=args["tags"])
        assert info.value.details["limit"] == limit and info.value.status == 429
    assert engine.post_session_message(c, c.session_id, "note", "x" * board_base.BODY_BYTES, tags=["t" * 64] * 16)
    assert len(engine.list_session_messages(c, c.session_id)["messages"]) == 1


def test_authority_is_room_plus_capabilities(room):
    engine, c, w, w2 = room
    todo = post_todo(engine, c)
    reader, _ = join(engine, "reader", ["read"])
    stranger, _ = join(engine, "stranger", ["observe"])
    assert engine.get_session_assignment(reader, c.session_id, todo["message_id"])["todo"]["message_id"]
    with pytest.raises(PermissionDenied):
        engine.post_session_message(reader, c.session_id, "note", "hi")
    for call in (lambda: engine.list_session_messages(stranger, c.session_id),
                 lambda: engine.get_session_assignment(stranger, c.session_id, todo["message_id"]),
                 lambda: observe(engine, stranger, c.session_id)):
        with pytest.raises(PermissionDenied):
            call()
    with pytest.raises(NotFound):
        engine.list_session_messages(c, "s_nosuchsession")
    # recording_session_id: only a live session of the caller's own participant
    ok = engine.post_session_message(w, c.session_id, "progress", "half way", recording_session_id=w2.session_id)
    assert ok["author_session_id"] == w2.session_id
    for foreign in (c.session_id, "s_nosuchsession"):
        with pytest.raises(PermissionDenied):
            engine.post_session_message(w, c.session_id, "note", "x", recording_session_id=foreign)
    with pytest.raises(PermissionDenied):
        engine.post_session_message(OPERATOR, c.session_id, "note", "x", recording_session_id=w.session_id)
    assert engine.post_session_message(OPERATOR, c.session_id, "guidance", "from the operator")["author"]["name"] == "operator"


# ---------------------------------------------------------------- the completion protocol


def complete(engine, actor, board, todo_id, fence, spec, recorder):
    return engine.complete_session_message(
        actor, board, todo_id, spec["answer"], spec["completion_key"], fence, priority=spec["priority"],
        tags=spec["tags"], recording_session_id=recorder if spec["recording"] else None)


@pytest.mark.parametrize("case", CASES["cases"], ids=lambda case: case["name"])
def test_completion_replays(room, case):
    engine, c, w, w2 = room
    todo = post_todo(engine, c)
    engine.post_session_message(c, c.session_id, "guidance", "use branch b", reply_to=todo["message_id"])
    assignment = engine.get_session_assignment(w, c.session_id, todo["message_id"])
    assert assignment["completable"] and len(assignment["replies"]) == 1
    fence = assignment["assignment_fence"]
    base = CASES["base"]
    first = complete(engine, w, c.session_id, todo["message_id"], fence, base, w2.session_id)
    assert first["replayed"] is False
    assert first["answer"]["kind"] == "answer" and first["answer"]["reply_to"] == todo["message_id"]
    assert first["todo"]["status"] == "resolved"
    assert first["todo"]["resolved_by_message_id"] == first["answer"]["message_id"]
    assert first["answer"]["author_session_id"] == w2.session_id
    revision = engine._board_state(c.session_id)[0]

    spec = {**base, **{k: v for k, v in case["change"].items() if k != "fence"}}
    again_fence = fence
    if case["change"].get("fence") == "fresh":
        again_fence = engine.get_session_assignment(w, c.session_id, todo["message_id"])["assignment_fence"]
        assert again_fence != fence
    if case["expect"] == "replayed":
        again = complete(engine, w, c.session_id, todo["message_id"], again_fence, spec, w2.session_id)
        assert again == {**first, "replayed": True}
    else:
        error = {"completion_mismatch": CompletionMismatch, "assignment_stale": AssignmentStale}[case["expect"]]
        with pytest.raises(error) as info:
            complete(engine, w, c.session_id, todo["message_id"], again_fence, spec, w2.session_id)
        if case["expect"] == "assignment_stale":
            assert info.value.details["state_changed"] is False
            assert info.value.details["fresh_assignment_fence"] is None  # resolved: not completable
    answers = engine.list_session_messages(c, c.session_id, reply_to=todo["message_id"], kind="answer")
    assert len(answers["messages"]) == 1
    assert engine._board_state(c.session_id)[0] == revision  # nothing advanced
    stored = engine.store.db.execute_sql('SELECT completion_id, completion_fence FROM board_message WHERE id = ?',
                                         (todo["message_id"],)).fetchone()
    assert base["completion_key"] not in stored[0] and stored[0].startswith("cid_") and len(stored[0]) == 68
    assert fence not in stored[1]


def test_stale_fence_returns_the_fresh_assignment(room):
    engine, c, w, _ = room
    todo = post_todo(engine, c)
    fence = engine.get_session_assignment(w, c.session_id, todo["message_id"])["assignment_fence"]
    reply = engine.post_session_message(c, c.session_id, "guidance", "scope changed", reply_to=todo["message_id"])
    revision = engine._board_state(c.session_id)[0]
    with pytest.raises(AssignmentStale) as info:
        engine.complete_session_message(w, c.session_id, todo["message_id"], "done", "k1", fence)
    details = info.value.details
    assert details["state_changed"] is False and info.value.status == 409
    assert [r["message_id"] for r in details["assignment"]["replies"]] == [reply["message_id"]]
    fresh = details["fresh_assignment_fence"]
    assert fresh == details["assignment"]["assignment_fence"] != fence
    assert engine._board_state(c.session_id)[0] == revision
    done = engine.complete_session_message(w, c.session_id, todo["message_id"], "done", "k1", fresh)
    assert done["todo"]["status"] == "resolved"


def test_missing_or_forged_fence_is_invalid_request(room):
    engine, c, w, _ = room
    todo = post_todo(engine, c)
    for fence in (None, "", "af1.nothex", "whatever"):
        with pytest.raises(InvalidRequest) as info:
            engine.complete_session_message(w, c.session_id, todo["message_id"], "done", "k", fence)
        assert info.value.details["parameter"] == "expected_assignment_fence"
    with pytest.raises(InvalidRequest):  # not a todo
        note = engine.post_session_message(c, c.session_id, "note", "n")
        engine.get_session_assignment(w, c.session_id, note["message_id"])


def test_assignment_too_large(room, monkeypatch):
    engine, c, w, _ = room
    todo = post_todo(engine, c)
    monkeypatch.setattr(board_completion, "SNAPSHOT_REPLIES", 2)
    for i in range(3):
        engine.post_session_message(c, c.session_id, "note", f"reply {i}", reply_to=todo["message_id"])
    with pytest.raises(AssignmentTooLarge) as info:
        engine.get_session_assignment(w, c.session_id, todo["message_id"])
    assert info.value.details["limit"] == "assignment_replies"
    monkeypatch.setattr(board_completion, "SNAPSHOT_REPLIES", 200)
    fence = engine.get_session_assignment(w, c.session_id, todo["message_id"])["assignment_fence"]
    monkeypatch.setattr(board_completion, "SNAPSHOT_BYTES", 1000)
    with pytest.raises(AssignmentTooLarge) as info:
        engine.complete_session_message(w, c.session_id, todo["message_id"], "done", "k", fence)
    assert info.value.details["limit"] == "assignment_bytes"
    assert engine.list_session_messages(c, c.session_id, kind="answer")["messages"] == []


def test_history_lost_when_retention_prunes_a_reply(room, monkeypatch):
    engine, c, w, _ = room
    monkeypatch.setattr(board_base, "RETAIN_MESSAGES", 3)
    todo = post_todo(engine, c)
    engine.post_session_message(c, c.session_id, "guidance", "old reply", reply_to=todo["message_id"])
    fence = engine.get_session_assignment(w, c.session_id, todo["message_id"])["assignment_fence"]
    for i in range(4):
        engine.post_session_message(c, c.session_id, "note", f"chatter {i}")
    # the open todo is retained, its reply is not
    kept = engine.list_session_messages(c, c.session_id)["messages"]
    assert todo["message_id"] in [m["message_id"] for m in kept] and len(kept) == 4
    with pytest.raises(AssignmentHistoryLost):
        engine.get_session_assignment(w, c.session_id, todo["message_id"])
    with pytest.raises(AssignmentHistoryLost):
        engine.complete_session_message(w, c.session_id, todo["message_id"], "done", "k", fence)


def test_concurrent_completions_make_exactly_one_answer(room):
    engine, c, w, _ = room
    todo = post_todo(engine, c)
    fence = engine.get_session_assignment(w, c.session_id, todo["message_id"])["assignment_fence"]
    outcomes: list[str] = []
    barrier = threading.Barrier(8)

    def worker(i: int) -> None:
        barrier.wait()
        try:
            engine.complete_session_message(w, c.session_id, todo["message_id"], f"answer {i}", f"key-{i}", fence)
            outcomes.append("done")
        except AssignmentStale:
            outcomes.append("stale")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["done"] + ["stale"] * 7
    assert len(engine.list_session_messages(c, c.session_id, kind="answer")["messages"]) == 1


def test_persistence_uncertain_then_the_exact_retry_reconciles(room, monkeypatch):
    engine, c, w, _ = room
    todo = post_todo(engine, c)
    fence = engine.get_session_assignment(w, c.session_id, todo["message_id"])["assignment_fence"]
    real_write = engine.store.write

    def commit_then_fail(fn):  # the commit happened, but the caller cannot know
        real_write(fn)
        raise pw.OperationalError("disk I/O error")

    monkeypatch.setattr(engine.store, "write", commit_then_fail)
    with pytest.raises(CompletionPersistenceUncertain) as info:
        engine.complete_session_message(w, c.session_id, todo["message_id"], "done", "k", fence)
    assert info.value.status == 503
    assert {k: info.value.details[k] for k in ("failure_kind", "retry_same_completion", "recovery_kind")} == {
        "failure_kind": "outcome_unknown", "retry_same_completion": True, "recovery_kind": "retry_same"}
    monkeypatch.setattr(engine.store, "write", real_write)
    again = engine.complete_session_message(w, c.session_id, todo["message_id"], "done", "k", fence)
    assert again["replayed"] is True
    assert len(engine.list_session_messages(c, c.session_id, kind="answer")["messages"]) == 1


# ---------------------------------------------------------------- observation


def test_observation_baseline_delta_pagination_and_history_lost(room, monkeypatch):
    engine, c, w, _ = room
    old = post_todo(engine, c, "before the baseline")
    base = observe(engine, w, c.session_id)
    assert base["baseline"] and base["messages"] == [] and base["wait_outcome"] is None
    nothing = observe(engine, w, c.session_id, base["observation_token"])
    assert not nothing["changed"] and nothing["wait_outcome"] == "timeout" and not nothing["history_lost"]
    posted = [engine.post_session_message(c, c.session_id, "note", f"n{i}")["message_id"] for i in range(5)]
    page1 = observe(engine, w, c.session_id, base["observation_token"], limit=2)
    assert [m["message_id"] for m in page1["messages"]] == posted[:2] and page1["has_more"]
    page2 = observe(engine, w, c.session_id, page1["observation_token"], limit=2)
    page3 = observe(engine, w, c.session_id, page2["observation_token"], limit=2)
    assert [m["message_id"] for m in page2["messages"] + page3["messages"]] == posted[2:]
    assert not page3["has_more"] and page3["wait_outcome"] == "updated"
    # a completion advances for the answer and the resolution; its replay does not
    fence = engine.get_session_assignment(w, c.session_id, old["message_id"])["assignment_fence"]
    done = engine.complete_session_message(w, c.session_id, old["message_id"], "done", "k", fence)
    delta = observe(engine, w, c.session_id, page3["observation_token"])
    assert [m["message_id"] for m in delta["messages"]] == [done["answer"]["message_id"], old["message_id"]]
    assert delta["messages"][1]["status"] == "resolved"
    engine.complete_session_message(w, c.session_id, old["message_id"], "done", "k", fence)
    assert not observe(engine, w, c.session_id, delta["observation_token"])["changed"]
    # retention: a cursor before the low-watermark has lost history
    monkeypatch.setattr(board_base, "RETAIN_MESSAGES", 3)
    engine.post_session_message(c, c.session_id, "note", "prune now")
    lost = observe(engine, w, c.session_id, base["observation_token"])
    assert lost["history_lost"] and len(lost["messages"]) == 3
    assert not observe(engine, w, c.session_id, lost["observation_token"])["history_lost"]


def test_forged_and_foreign_tokens_are_invalid_request(room):
    engine, c, w, _ = room
    token = observe(engine, w, c.session_id)["observation_token"]
    prefix, payload, mac = token.split(".")
    forged = f"{prefix}.{payload}.{'0' * len(mac)}"
    for bad in (forged, "bo1.x.y", "garbage", token + "x"):
        with pytest.raises(InvalidRequest):
            observe(engine, w, c.session_id, bad)
    with pytest.raises(InvalidRequest):
        observe(engine, w, w.session_id, token)  # another board's token


def test_wait_updates_on_a_post_and_times_out_otherwise(room):
    engine, c, w, _ = room

    async def scenario():
        hub = Hub()
        engine.store.publish = hub.publish
        engine.board_streams = Streams(hub, engine)
        token = (await engine.observe_session_messages(w, c.session_id))["observation_token"]
        loop = asyncio.get_running_loop()
        started = loop.time()
        timeout = await engine.observe_session_messages(w, c.session_id, token, wait_seconds=1)
        assert timeout["wait_outcome"] == "timeout" and not timeout["changed"]
        assert loop.time() - started >= 0.9
        # a post on another board does not wake it; one on this board does
        waiting = asyncio.ensure_future(engine.observe_session_messages(w, c.session_id, token, wait_seconds=5))
        await asyncio.sleep(0.1)
        await loop.run_in_executor(None, lambda: engine.post_session_message(w, w.session_id, "note", "elsewhere"))
        await asyncio.sleep(0.1)
        assert not waiting.done()
        message = await loop.run_in_executor(None, lambda: engine.post_session_message(c, c.session_id, "todo", "go"))
        result = await asyncio.wait_for(waiting, 2)
        assert result["wait_outcome"] == "updated"
        assert [m["message_id"] for m in result["messages"]] == [message["message_id"]]
        # backlog returns at once, without waiting
        started = loop.time()
        backlog = await engine.observe_session_messages(w, c.session_id, token, wait_seconds=30)
        assert backlog["changed"] and loop.time() - started < 1
        await hub.close()

    asyncio.run(scenario())


def test_a_token_survives_reopening_the_sidecar(tmp_path, clock):
    engine = open_engine(tmp_path, "# Plan\n", clock=clock)
    c, _ = join(engine, "coordinator", CAPS)
    token = observe(engine, c, c.session_id)["observation_token"]
    engine.post_session_message(c, c.session_id, "note", "before restart")
    engine.close()
    again = Engine.open(tmp_path / "doc.md", clock=clock)
    try:
        delta = asyncio.run(again.observe_session_messages(OPERATOR, c.session_id, token))
        assert [m["body"] for m in delta["messages"]] == ["before restart"]
    finally:
        again.close()


# ---------------------------------------------------------------- the migration


def _as_version_2(sidecar: Path) -> None:
    con = sqlite3.connect(sidecar)
    con.execute('DROP TABLE "board_message"')
    con.execute('DROP TABLE "board"')
    con.execute("DELETE FROM meta WHERE key = 'board_token_secret'")
    con.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    con.commit()
    con.close()


@pytest.mark.parametrize("start", [2, 3])
def test_a_version_2_or_3_sidecar_is_upgraded_in_place(tmp_path, clock, start):
    engine = open_engine(tmp_path, "# Plan\n", clock=clock)
    c, _ = join(engine, "coordinator", CAPS)
    sidecar = engine.store.path
    engine.close()
    _as_version_2(sidecar)
    if start == 3:  # what the handoffs step leaves: version 3, no board tables
        con = sqlite3.connect(sidecar)
        con.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
        con.commit()
        con.close()
    with pytest.raises(InvalidRequest, match="left as it is"):  # a reader never upgrades
        Engine.open(tmp_path / "doc.md", clock=clock, readonly=True)
    again = Engine.open(tmp_path / "doc.md", clock=clock)  # the room's writer does
    try:
        assert again.store.meta("schema_version") == str(store_db.SCHEMA_VERSION)
        assert again.list_session_messages(OPERATOR, c.session_id)["messages"] == []
        assert again.authenticate  # sessions kept
        posted = again.post_session_message(OPERATOR, c.session_id, "note", "after the upgrade")
        assert again.list_session_messages(OPERATOR, c.session_id)["messages"] == [posted]
        migrations.upgrade(again.store.db, again.store.models, 3)  # idempotent: running the step again changes nothing
        assert again.list_session_messages(OPERATOR, c.session_id)["messages"] == [posted]
    finally:
        again.close()
