"""Boards in a real room: the seed's coordinator → worker flow through MCP
tools and over HTTP, a long-poll answered by a post, and an observation
token taken before a restart used after it."""

from __future__ import annotations

import json
import threading
import time

from tests.mcp_wire import Mcp

CAPS = "read,observe,message"


def tool(mcp: Mcp, name: str, **arguments):
    result = mcp.call_tool(name, arguments)
    return result["isError"], result["structuredContent"]


def test_coordinator_to_worker_through_mcp_tools(room):
    coordinator = room.join("coordinator", CAPS)
    worker = room.join("worker", CAPS)  # an independent session (another participant)
    c_id = coordinator.session["id"]
    c, w = Mcp(room.ingress, coordinator.token), Mcp(room.ingress, worker.token)
    try:
        error, todo = tool(c, "post_session_message", session_id=c_id, kind="todo",
                           body="Implement X in a worktree; answer with the commit SHA.", tags=["impl"])
        assert not error, todo
        error, base = tool(c, "observe_session_messages", session_id=c_id)
        assert base["baseline"]
        error, assignment = tool(w, "get_session_assignment", session_id=c_id, message_id=todo["message_id"])
        assert not error and assignment["completable"] and assignment["replies"] == []
        args = dict(session_id=c_id, message_id=todo["message_id"], answer="done: commit 1f2e3d4",
                    completion_key="W-todo-1", expected_assignment_fence=assignment["assignment_fence"])
        error, done = tool(w, "complete_session_message", **args)
        assert not error, done
        assert done["todo"]["resolved_by_message_id"] == done["answer"]["message_id"]
        error, again = tool(w, "complete_session_message", **args)  # an uncertain outcome's retry
        assert not error and again == {**done, "replayed": True}
        error, mismatch = tool(w, "complete_session_message", **{**args, "answer": "done: other"})
        assert error and mismatch["error"] == "completion_mismatch"
        error, missing = tool(w, "complete_session_message",
                              **{k: v for k, v in args.items() if k != "expected_assignment_fence"})
        assert error and missing["error"] == "invalid_request"
        # the coordinator reads the result from C: exact todo + its replies, and the delta
        error, exact = tool(c, "list_session_messages", session_id=c_id, message_id=todo["message_id"])
        assert exact["messages"][0]["status"] == "resolved"
        error, replies = tool(c, "list_session_messages", session_id=c_id, reply_to=todo["message_id"])
        assert [m["body"] for m in replies["messages"]] == ["done: commit 1f2e3d4"]
        error, delta = tool(c, "observe_session_messages", session_id=c_id,
                            after_observation_token=base["observation_token"])
        assert [m["kind"] for m in delta["messages"]] == ["answer", "todo"] and delta["wait_outcome"] == "updated"
        # a session without message cannot post; a foreign board's message id is not found
        reader = room.join("reader", "read")
        r = reader.post(f"/workspace/boards/{c_id}/messages", {"kind": "note", "body": "x"})
        assert r.status_code == 403 and r.json()["error"] == "permission_denied"
        w_id = worker.session["id"]
        error, foreign = tool(w, "get_session_assignment", session_id=w_id, message_id=todo["message_id"])
        assert error and foreign["error"] == "message_not_found"
    finally:
        c.close()
        w.close()


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
