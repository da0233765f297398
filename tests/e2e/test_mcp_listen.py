"""``subscriptions/listen`` through a real room.

The ack first, listing only what will be sent; a foreign task id left out;
a ``notifications/tasks`` frame after each task change; resource updates;
every frame tagged with the subscription id and valid against the official
schemas; ended by ``notifications/cancelled``, by revoke, and right after
the ack when the filter leaves nothing; a lagged listener dropped, nothing
from the gap replayed on the next listen; the tasks of a task-running tool
(the conformance fixtures, loaded as a plugin) on the same stream.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from commonroom.protocol import META_CAPABILITIES, META_SUBSCRIPTION_ID, TASKS_EXTENSION
from tests.mcp_schema import check
from tests.mcp_wire import META, Mcp, rpc_error
from tests.roomproc import Room, plugin_env, start_room
from tests.ssekit import SSEStream, open_stream

EXT = {**META, META_CAPABILITIES: {"extensions": {TASKS_EXTENSION: {}}}}
WORKSPACE_DOCUMENT = "commonroom://workspace/document"
FIXTURES = "tests.conformance.mcp.fixtures:register"


def addr(room: Room) -> tuple[str, int]:
    return ("127.0.0.1", room.state["ingress"]["port"])


def listen(room: Room, token: str, request_id: Any, notifications: dict[str, Any], meta: Any = EXT) -> SSEStream:
    caller = Mcp(room.ingress, token)
    params = {"notifications": notifications}
    headers = caller.headers("subscriptions/listen", params)
    body = json.dumps(caller.body("subscriptions/listen", params, id=request_id, meta=meta)).encode()
    caller.close()
    return open_stream(addr(room), "/mcp", method="POST", body=body, headers=headers)


def messages(frames) -> list[dict]:
    return [f.json() for f in frames if f.event == "message"]


@pytest.fixture(scope="module")
def people(shared_room):
    out = {}
    for role, caps in {"owner": "read,handoff", "worker": "read,handoff", "other": "read,handoff"}.items():
        client = shared_room.join(f"ls-{role}", caps)
        out[role] = (client, Mcp(shared_room.ingress, client.token))
    yield out
    for _, mcp in out.values():
        mcp.close()


def _create(mcp: Mcp, summary: str, **extra: Any) -> dict[str, Any]:
    return mcp.result("tools/call", {"name": "handoff_create", "arguments": {"summary": summary, **extra}},
                      meta=EXT)


def _tool(mcp: Mcp, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = mcp.call_tool(name, arguments)
    assert not result["isError"], result
    return result


def test_ack_then_a_frame_per_task_change_then_cancelled(shared_room, people):
    (owner_client, owner), (_, worker), (_, other) = people["owner"], people["worker"], people["other"]
    mine = _create(owner, "listen to me", assignee="ls-worker")
    foreign = _create(other, "not yours")
    stream = listen(shared_room, owner_client.token, "L-tasks",
                    {"taskIds": [mine["taskId"], foreign["taskId"], "task_nope"], "toolsListChanged": True})
    try:
        assert stream.status == 200 and stream.headers["content-type"].startswith("text/event-stream")
        ack = check("SubscriptionsAcknowledgedNotification", stream.next().json())
        assert ack["params"] == {"_meta": {META_SUBSCRIPTION_ID: "L-tasks"},
                                 "notifications": {"taskIds": [mine["taskId"]]}}
        check("tasks:TaskSubscriptionAcknowledgedNotifications", ack["params"]["notifications"])
        handoff_id = mine["handoffId"]
        steps = [("handoff_accept", {"handoff_id": handoff_id}, "working"),
                 ("handoff_request_input", {"handoff_id": handoff_id, "message": "which?"}, "input_required"),
                 ("handoff_complete", {"handoff_id": handoff_id, "result": "done"}, "completed")]
        _tool(other, "handoff_cancel", {"handoff_id": foreign["handoffId"]})  # never on this stream
        answer = {"input_1": {"action": "accept", "content": {"answer": "that"}}}
        steps.insert(2, ("tasks/update", {"taskId": mine["taskId"], "inputResponses": answer}, "working"))
        for name, arguments, status in steps:
            if name == "tasks/update":  # the owner answers: the task is working again
                check("tasks:UpdateTaskResult", owner.result(name, arguments, meta=EXT))
            else:
                _tool(worker, name, arguments)
            frame = check("tasks:TaskStatusNotification", stream.next().json())
            assert frame["method"] == "notifications/tasks"
            assert frame["params"]["_meta"] == {META_SUBSCRIPTION_ID: "L-tasks"}
            assert (frame["params"]["taskId"], frame["params"]["status"]) == (mine["taskId"], status)
        assert owner.post("notifications/cancelled", {"requestId": "L-tasks"}, id=None).status_code == 202
        rest = messages(stream.read_to_end(timeout=5))
        assert stream.eof and rest, rest
        final = rest[-1]
        assert final["id"] == "L-tasks" and final["result"]["_meta"][META_SUBSCRIPTION_ID] == "L-tasks"
        check("SubscriptionsListenResult", final["result"])
        assert all(m.get("method") != "notifications/tasks" or m["params"]["taskId"] == mine["taskId"] for m in rest)
    finally:
        stream.close()


def test_a_filter_that_leaves_nothing_ends_after_the_ack(shared_room, people):
    (_, other), (owner_client, owner) = people["other"], people["owner"]
    foreign = _create(other, "still not yours")
    stream = listen(shared_room, owner_client.token, 7, {"taskIds": [foreign["taskId"]], "promptsListChanged": True})
    try:
        frames = messages(stream.read_to_end(timeout=5))
        assert stream.eof
        assert [m.get("method") for m in frames] == ["notifications/subscriptions/acknowledged", None]
        assert frames[0]["params"]["notifications"] == {"taskIds": []}
        assert frames[1]["id"] == 7 and frames[1]["result"]["_meta"][META_SUBSCRIPTION_ID] == 7
        check("SubscriptionsListenResult", frames[1]["result"])
    finally:
        stream.close()


def test_task_ids_need_the_extension_and_resources_need_read(shared_room, people):
    owner_client, _ = people["owner"]
    refused = listen(shared_room, owner_client.token, 8, {"taskIds": []}, meta=META)
    assert refused.status == 400 and json.loads(refused.body_text)["error"]["code"] == -32021
    refused.close()
    blind = shared_room.join("ls-blind", "observe")
    stream = listen(shared_room, blind.token, 9, {"resourceSubscriptions": [WORKSPACE_DOCUMENT]})
    try:
        frames = messages(stream.read_to_end(timeout=5))
        assert frames[0]["params"]["notifications"] == {"resourceSubscriptions": []}
        assert "result" in frames[-1]
    finally:
        stream.close()


def test_resource_updates_and_revoke_ends_it(shared_room):
    reader = shared_room.join("ls-reader", "read,propose,approve")
    stream = listen(shared_room, reader.token, "L-res",
                    {"resourceSubscriptions": [WORKSPACE_DOCUMENT, "commonroom://nope"]})
    try:
        ack = stream.next().json()
        assert ack["params"]["notifications"] == {"resourceSubscriptions": [WORKSPACE_DOCUMENT]}
        r = shared_room.operator().post("/owner/revoke", {"session": reader.session["id"]})
        assert r.status_code < 300, r.text
        rest = messages(stream.read_to_end(timeout=5))
        assert stream.eof and rest[-1]["id"] == "L-res"
        check("SubscriptionsListenResult", rest[-1]["result"])
    finally:
        stream.close()


def test_listen_params_are_checked(people):
    _, owner = people["owner"]
    response = owner.post("subscriptions/listen", {"notifications": {"taskIds": "all"}}, meta=EXT)
    assert response.status_code == 200 and rpc_error(response)["code"] == -32602


def test_resource_updates_are_tagged(shared_room):
    reader = shared_room.join("ls-watcher", "read")
    participants = "commonroom://workspace/participants"
    stream = listen(shared_room, reader.token, "L-upd", {"resourceSubscriptions": [participants]}, meta=META)
    try:
        assert stream.next().json()["params"]["notifications"] == {"resourceSubscriptions": [participants]}
        shared_room.join("ls-newcomer", "read")
        frame = check("ResourceUpdatedNotification", stream.next().json())
        assert frame["params"] == {"_meta": {META_SUBSCRIPTION_ID: "L-upd"}, "uri": participants}
    finally:
        stream.close()


# -- a room of its own: a tiny hub queue (lag) and the conformance task-running tools ----------

@pytest.fixture(scope="module")
def tight_room(tmp_path_factory):
    """A hub queue of 4 events and a long write timeout: a stalled listener is dropped by the hub."""
    env = {**plugin_env(FIXTURES), "COMMONROOM_STREAM_QUEUE": "4", "COMMONROOM_STREAM_WRITE_TIMEOUT": "120"}
    room = start_room(tmp_path_factory.mktemp("listen-tight"), text="# Listen\n", args=("--socket",), env=env)
    yield room
    room.stop()


def test_a_lagged_listener_is_dropped_and_the_gap_is_not_replayed(tight_room):
    """The listener stops reading (Unix socket: a small kernel buffer) while its task changes 12 times.

    Each frame carries the whole task, whose outstanding input requests grow by
    60 KB a change (a long form description), so the socket fills, the hub's queue of 4 overflows and the
    listener is dropped: it reads what was already written, then the final
    listen result, then the end; the last changes never reach it. A new listen
    starts from now: nothing from the gap, then a frame for the next change only.
    """
    owner_client = tight_room.join("lag-owner", "read,handoff")
    worker_client = tight_room.join("lag-worker", "read,handoff")
    owner, worker = Mcp(tight_room.ingress, owner_client.token), Mcp(tight_room.ingress, worker_client.token)
    try:
        task = _create(owner, "lag me", assignee="lag-worker")
        _tool(worker, "handoff_accept", {"handoff_id": task["handoffId"]})
        caller = Mcp(tight_room.ingress, owner_client.token)
        params = {"notifications": {"taskIds": [task["taskId"]]}}
        body = json.dumps(caller.body("subscriptions/listen", params, id="L-lag", meta=EXT)).encode()
        stalled = open_stream(tight_room.state["ingress"]["socket"], "/mcp", method="POST", body=body,
                              headers=caller.headers("subscriptions/listen", params))
        caller.close()
        try:
            assert stalled.next().json()["method"] == "notifications/subscriptions/acknowledged"
            changes = 12
            bulky = {"type": "object", "properties": {"answer": {"type": "string", "description": "x" * 60_000}}}
            for i in range(changes):  # nobody reads the stream meanwhile
                _tool(worker, "handoff_request_input", {"handoff_id": task["handoffId"], "message": f"question {i}",
                                                        "requested_schema": bulky})
            frames = messages(stalled.read_to_end(timeout=30))
        finally:
            stalled.close()
        assert stalled.eof
        seen = [len(m["params"]["inputRequests"]) for m in frames if m.get("method") == "notifications/tasks"]
        assert seen == list(range(1, len(seen) + 1)) and len(seen) < changes, seen  # cut off: the gap
        assert frames[-1]["id"] == "L-lag" and frames[-1]["result"]["_meta"][META_SUBSCRIPTION_ID] == "L-lag"

        again = listen(tight_room, owner_client.token, "L-again", {"taskIds": [task["taskId"]]})
        try:
            assert again.next().json()["params"]["notifications"] == {"taskIds": [task["taskId"]]}
            with pytest.raises(TimeoutError):  # nothing from the gap is replayed
                again.next(timeout=1.0)
            answers = {f"input_{i + 1}": {"action": "accept", "content": {"answer": "y"}} for i in range(changes)}
            owner.result("tasks/update", {"taskId": task["taskId"], "inputResponses": answers}, meta=EXT)
            frame = check("tasks:TaskStatusNotification", again.next().json())
            assert frame["params"]["status"] == "working" and "inputRequests" not in frame["params"]
        finally:
            again.close()
    finally:
        owner.close()
        worker.close()


def test_a_task_running_tool_is_a_task_of_the_room(tight_room):
    """A plugin's task-running tool (the conformance ``confirm_delete``): CreateTaskResult after the commit,
    ``tasks/get``, a ``notifications/tasks`` frame per change on listen, ``tasks/update`` resumes it,
    and another session cannot see it."""
    me = tight_room.join("tool-user", "read")
    other = tight_room.join("tool-other", "read")
    mcp, stranger = Mcp(tight_room.ingress, me.token), Mcp(tight_room.ingress, other.token)
    try:
        created = check("tasks:CreateTaskResult", mcp.result(
            "tools/call", {"name": "confirm_delete", "arguments": {"filename": "a.txt"}}, meta=EXT))
        task_id = created["taskId"]
        stream = listen(tight_room, me.token, "L-tool", {"taskIds": [task_id]})
        try:
            assert stream.next().json()["params"]["notifications"] == {"taskIds": [task_id]}
            got = check("tasks:GetTaskResult", mcp.result("tasks/get", {"taskId": task_id}, meta=EXT))
            if got["status"] == "working":  # the run has not asked yet: its frame comes next
                got = check("tasks:TaskStatusNotification", stream.next().json())["params"]
            assert got["status"] == "input_required" and got["operation"] == "tool:confirm_delete"
            assert got["handoffId"] is None and list(got["inputRequests"]) == ["confirm_delete"]
            hidden = stranger.post("tasks/get", {"taskId": task_id}, meta=EXT)
            assert rpc_error(hidden)["code"] == -32602
            answer = {"confirm_delete": {"action": "accept", "content": {"confirm": True}}}
            mcp.result("tasks/update", {"taskId": task_id, "inputResponses": answer}, meta=EXT)
            statuses = []
            while not statuses or statuses[-1] != "completed":
                frame = check("tasks:TaskStatusNotification", stream.next().json())
                statuses.append(frame["params"]["status"])
            assert statuses[0] in ("working", "input_required", "completed") and statuses[-1] == "completed"
            assert frame["params"]["result"]["content"][0]["text"] == "Deleted a.txt"
        finally:
            stream.close()
        required = mcp.post("tools/call", {"name": "failing_job", "arguments": {}})  # no declaration
        assert required.status_code == 400 and rpc_error(required)["code"] == -32021
        inline = mcp.result("tools/call", {"name": "slow_compute", "arguments": {"seconds": 0, "label": "now"}})
        assert inline["resultType"] == "complete" and "taskId" not in inline  # optional: runs inline
    finally:
        mcp.close()
        stranger.close()
