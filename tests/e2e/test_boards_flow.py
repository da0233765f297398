"""Boards in a real room: the seed's coordinator → worker flow through MCP
(two official Python SDK clients, ``mcp`` 2.3.0) and over HTTP, a long-poll
answered by a post, and an observation token taken before a restart used
after it."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest

pytest.importorskip("mcp", reason="the official MCP SDK is a test dependency (pip install -e .[test])")

from tests.e2e.test_mcp_sdk import Wire, sdk_client  # noqa: E402

CAPS = "read,observe,message"


def outcome(result) -> tuple[bool, dict]:
    """``(is_error, value)`` of an SDK tool result: structuredContent, which the text repeats."""
    value = result.structured_content
    assert value == json.loads(result.content[0].text)
    return bool(result.is_error), value


def test_coordinator_to_worker_through_the_official_sdk(room):
    """The seed's flow with two sessions, each an official MCP SDK client (``mcp`` 2.3.0, 2026-07-28)."""
    coordinator = room.join("coordinator", CAPS)
    worker = room.join("worker", CAPS)  # an independent session (another participant)
    c_id, w_id = coordinator.session["id"], worker.session["id"]
    wire = Wire()

    async def flow() -> None:
        async with sdk_client(room, coordinator.token, wire) as c, sdk_client(room, worker.token, wire) as w:
            async def call(client, name: str, meta: dict | None = None, **arguments) -> tuple[bool, dict]:
                return outcome(await client.call_tool(name, arguments, meta=meta))

            # C posts one bounded todo on its own board, and a requires_ack guidance on W's
            error, todo = await call(c, "post_session_message", session_id=c_id, kind="todo",
                                     body="Implement X in a worktree; answer with the commit SHA.", tags=["impl"])
            assert not error, todo
            error, base = await call(c, "observe_session_messages", session_id=c_id)
            assert base["baseline"] and base["messages"] == []
            error, heads_up = await call(c, "post_session_message", session_id=w_id, kind="guidance",
                                         body="read the todo on my board", requires_ack=True)
            # W reads the assignment once: the piggyback rides on its result until W ACKs it
            result = await w.call_tool("get_session_assignment", {"session_id": c_id,
                                                                  "message_id": todo["message_id"]})
            error, assignment = outcome(result)
            assert not error and assignment["completable"] and assignment["replies"] == []
            shown = (result.meta or {})["commonroom/session_messages"]["messages"]
            assert [m["message_id"] for m in shown] == [heads_up["message_id"]]
            # W completes under its own recording session, ACKing the guidance on the same call
            args = dict(session_id=c_id, message_id=todo["message_id"], answer="done: commit 1f2e3d4",
                        completion_key="W-todo-1", expected_assignment_fence=assignment["assignment_fence"])
            meta = {"recording_session_id": w_id, "ack_session_message_ids": [heads_up["message_id"]]}
            result = await w.call_tool("complete_session_message", args, meta=meta)
            error, done = outcome(result)
            assert not error, done
            assert "commonroom/session_messages" not in (result.meta or {})  # ACKed: suppressed here
            assert done["todo"]["resolved_by_message_id"] == done["answer"]["message_id"]
            assert done["answer"]["author_session_id"] == w_id and done["replayed"] is False
            error, again = await call(w, "complete_session_message", {"recording_session_id": w_id}, **args)
            assert not error and again == {**done, "replayed": True}  # an uncertain outcome's exact retry
            error, mismatch = await call(w, "complete_session_message", {"recording_session_id": w_id},
                                         **{**args, "answer": "done: other"})
            assert error and mismatch["error"] == "completion_mismatch"
            error, unrecorded = await call(w, "complete_session_message", **args)  # another author: null
            assert error and unrecorded["error"] == "completion_mismatch"
            error, missing = await call(w, "complete_session_message",
                                        **{k: v for k, v in args.items() if k != "expected_assignment_fence"})
            assert error and missing["error"] == "invalid_request"
            # C reads the result from its board: the exact todo, its replies, the delta
            error, exact = await call(c, "list_session_messages", session_id=c_id, message_id=todo["message_id"])
            assert exact["messages"][0]["status"] == "resolved"
            error, replies = await call(c, "list_session_messages", session_id=c_id, reply_to=todo["message_id"])
            assert [m["body"] for m in replies["messages"]] == ["done: commit 1f2e3d4"]
            error, delta = await call(c, "observe_session_messages", session_id=c_id,
                                      after_observation_token=base["observation_token"])
            assert [m["kind"] for m in delta["messages"]] == ["answer", "todo"]
            assert delta["wait_outcome"] == "updated"
            # the ACK is on the guidance's wire shape (first time only), and resolved nothing
            error, acked = await call(c, "list_session_messages", session_id=w_id,
                                      message_id=heads_up["message_id"])
            assert acked["messages"][0]["first_acked_at"] is not None
            assert acked["messages"][0]["status"] == "open"
            # a long poll through the SDK, answered by W's post on C's board
            waiting = asyncio.ensure_future(c.call_tool("observe_session_messages", {
                "session_id": c_id, "after_observation_token": delta["observation_token"], "wait_seconds": 20}))
            await asyncio.sleep(0.5)
            assert not waiting.done()
            await call(w, "post_session_message", session_id=c_id, kind="progress", body="reviewing next")
            error, woke = outcome(await asyncio.wait_for(waiting, 15))
            assert woke["wait_outcome"] == "updated" and [m["body"] for m in woke["messages"]] == ["reviewing next"]
            # W's own board is not C's: the todo's id is not found there (nothing revealed)
            error, foreign = await call(w, "get_session_assignment", session_id=w_id, message_id=todo["message_id"])
            assert error and foreign["error"] == "message_not_found"

    asyncio.run(flow())
    assert wire.check() >= 15  # every message the SDK received matches the official 2026-07-28 schema
    # a session without message cannot post (over HTTP: the same operation)
    reader = room.join("reader", "read")
    r = reader.post(f"/workspace/boards/{c_id}/messages", {"kind": "note", "body": "x"})
    assert r.status_code == 403 and r.json()["error"] == "permission_denied"


def test_coordinator_to_worker_over_http_with_a_stale_fence(room):
    coordinator = room.join("coordinator", CAPS)
    worker = room.join("worker", CAPS)
    c_id = coordinator.session["id"]
    r = coordinator.post(f"/workspace/boards/{c_id}/messages", {"kind": "todo", "body": "review commit abc"})
    assert r.status_code == 201, r.text
    todo = r.json()
    base = f"/workspace/boards/{c_id}/messages/{todo['message_id']}"
    fence = worker.get(base + "/assignment").json()["assignment_fence"]
    coordinator.post(f"/workspace/boards/{c_id}/messages",
                     {"kind": "guidance", "body": "also check the docs", "reply_to": todo["message_id"]})
    body = {"answer": "no findings", "completion_key": "k1", "expected_assignment_fence": fence}
    r = worker.post(base + "/complete", body)
    assert r.status_code == 409 and r.json()["error"] == "assignment_stale", r.text
    details = r.json()["details"]
    assert details["state_changed"] is False and len(details["assignment"]["replies"]) == 1
    r = worker.post(base + "/complete", {**body, "expected_assignment_fence": details["fresh_assignment_fence"]})
    assert r.status_code == 200 and r.json()["answer"]["reply_to"] == todo["message_id"]
    r = worker.get(f"/workspace/boards/{c_id}/messages", params={"kind": "answer"})
    assert len(r.json()["messages"]) == 1
    r = worker.get(f"/workspace/boards/{c_id}/observe", params={"after_observation_token": "bo1.forged.00"})
    assert r.status_code == 400 and r.json()["error"] == "invalid_request"


def test_a_long_poll_is_answered_by_a_post_and_a_token_survives_a_restart(room):
    coordinator = room.join("coordinator", CAPS)
    c_id = coordinator.session["id"]
    token = coordinator.get(f"/workspace/boards/{c_id}/observe").json()["observation_token"]
    started = time.monotonic()
    r = coordinator.get(f"/workspace/boards/{c_id}/observe",
                        params={"after_observation_token": token, "wait_seconds": 1})
    assert r.json()["wait_outcome"] == "timeout" and time.monotonic() - started >= 0.9
    answer: dict = {}

    def wait() -> None:
        answer["r"] = coordinator.get(f"/workspace/boards/{c_id}/observe",
                                      params={"after_observation_token": token, "wait_seconds": 20})

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.5)
    coordinator.post(f"/workspace/boards/{c_id}/messages", {"kind": "note", "body": "wake up"})
    waiter.join(10)
    result = answer["r"].json()
    assert result["wait_outcome"] == "updated" and [m["body"] for m in result["messages"]] == ["wake up"]

    again = room.restart()
    try:
        r = again.operator().get(f"/workspace/boards/{c_id}/observe", params={"after_observation_token": token})
        assert r.status_code == 200, r.text
        assert [m["body"] for m in r.json()["messages"]] == ["wake up"]
        assert json.loads(r.text)["history_lost"] is False
    finally:
        again.stop()
