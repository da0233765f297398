"""Resources, the version template, subscriptions and the ``GET /mcp`` stream.

List/read, unknown URIs -32602, subscribe/unsubscribe
(need read), and ``notifications/resources/updated`` on ``GET /mcp``
after a commit, with heartbeats; the stream ends when the session is
revoked. Bodies are validated against the official schema (the
subscribe methods and the GET stream are seed deviations: their results
and notifications still validate as EmptyResult / ResourceUpdatedNotification).
"""

from __future__ import annotations

import json
import time

import httpx
import pytest

from commonroom.protocol import MCP_VERSION, SSE_HEARTBEAT
from commonroom.sse_client import Frame, iter_frames
from tests.mcp_schema import check
from tests.mcp_wire import Mcp

WS = "commonroom://workspace/"


@pytest.fixture
def people(shared_room):
    """Fresh sessions on the module's room (subscriptions are per session)."""
    room = shared_room
    alice = room.join("alice", "read,observe,propose,lease,approve,write")
    reader = room.join("reader", "read")
    callers = {"alice": Mcp(room.ingress, alice.token), "reader": Mcp(room.ingress, reader.token)}
    yield room, {"alice": alice, "reader": reader}, callers
    for caller in callers.values():
        caller.close()


def read(caller: Mcp, uri: str) -> dict:
    r = caller.post("resources/read", {"uri": uri})
    check("ReadResourceResultResponse", r.json())
    result = r.json()["result"]
    check("ReadResourceResult", result)
    assert result["resultType"] == "complete"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "commonroom"
    return result


def test_read_each_workspace_resource(people):
    room, http, callers = people
    reader = callers["reader"]
    doc = read(reader, WS + "document")
    assert doc["cacheScope"] == "private" and doc["ttlMs"] == 0
    [content] = doc["contents"]
    assert content["mimeType"] == "text/markdown"
    assert content["text"] == http["reader"].get("/workspace/document").json()["text"]
    assert content["_meta"]["commonroom/version"] == http["reader"].get("/workspace/document").json()["version"]
    for name, path in (("status", "/workspace/room"), ("leases", "/workspace/leases"),
                       ("proposals", "/workspace/proposals")):
        result = read(reader, WS + name)
        [content] = result["contents"]
        assert content["mimeType"] == "application/json" and content["uri"] == WS + name
        assert json.loads(content["text"]) == http["reader"].get(path).json(), name
    participants = json.loads(read(reader, WS + "participants")["contents"][0]["text"])
    assert {"alice", "reader"} <= {p["name"] for p in participants["participants"]}


def test_version_template(people):
    room, _, callers = people
    result = read(callers["reader"], WS + "versions/1")
    [content] = result["contents"]
    assert content["uri"] == WS + "versions/1"
    assert content["text"] == people[1]["reader"].get("/workspace/versions/1").json()["text"]
    assert content["_meta"]["commonroom/version"] == 1


@pytest.mark.parametrize("uri", [WS + "nothing", "file:///etc/passwd", WS + "versions/999", WS + "versions/x",
                                 WS + "versions/0", "skill://commonroom/other.md"])
def test_unknown_resource_is_invalid_params(people, uri):
    r = people[2]["reader"].post("resources/read", {"uri": uri})
    assert r.status_code == 200
    check("JSONRPCErrorResponse", r.json())
    assert r.json()["error"]["code"] == -32602


def test_read_needs_read(people):
    room = people[0]
    writer = Mcp(room.ingress, room.join("writer-only", "propose").token)
    r = writer.post("resources/read", {"uri": WS + "document"})
    assert r.status_code == 200
    check("JSONRPCErrorResponse", r.json())
    error = r.json()["error"]
    assert error["code"] == -31000 and error["data"]["error"] == "permission_denied"
    r = writer.post("resources/subscribe", {"uri": WS + "document"})
    assert r.json()["error"]["data"]["error"] == "permission_denied"
    writer.close()


def test_subscribe_and_unsubscribe(people):
    reader = people[2]["reader"]
    for method in ("resources/subscribe", "resources/unsubscribe", "resources/unsubscribe"):
        result = reader.result(method, {"uri": WS + "document"})
        check("EmptyResult", result)
        assert result["resultType"] == "complete"
    for uri in (WS + "versions/1", "skill://commonroom/SKILL.md", "http://x"):
        r = reader.post("resources/subscribe", {"uri": uri})
        assert r.status_code == 200 and r.json()["error"]["code"] == -32602


class Stream:
    """A ``GET /mcp`` stream read frame by frame (blocking, with a deadline)."""

    def __init__(self, caller: Mcp):
        self.client = httpx.Client(timeout=httpx.Timeout(10.0, read=10.0))
        self.cm = self.client.stream("GET", caller.url, headers={
            "Authorization": f"Bearer {caller.token}", "Accept": "text/event-stream",
            "MCP-Protocol-Version": MCP_VERSION})
        self.response = self.cm.__enter__()
        self.frames = iter_frames(self.response.iter_bytes())

    def next_message(self, deadline: float = 10.0) -> dict | None:
        """The next JSON-RPC message (None when the stream ends); comments skipped."""
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            try:
                frame = next(self.frames)
            except StopIteration:
                return None
            if frame.is_event:
                return frame.json()
        raise AssertionError("no message in time")

    def first_frame(self) -> Frame:
        return next(self.frames)

    def close(self) -> None:
        self.cm.__exit__(None, None, None)
        self.client.close()


def test_stream_headers_and_heartbeat(people):
    stream = Stream(people[2]["reader"])
    try:
        assert stream.response.status_code == 200
        assert stream.response.headers["content-type"].startswith("text/event-stream")
        assert stream.response.headers["x-accel-buffering"] == "no"
        assert stream.first_frame() == Frame(comments=[SSE_HEARTBEAT])
    finally:
        stream.close()


def test_updates_after_commits_for_subscribed_uris_only(people):
    room, http, callers = people
    reader = callers["reader"]
    reader.result("resources/subscribe", {"uri": WS + "proposals"})
    reader.result("resources/subscribe", {"uri": WS + "participants"})
    stream = Stream(reader)
    try:
        assert stream.first_frame() == Frame(comments=[SSE_HEARTBEAT])
        # Not subscribed to document/status: a direct write sends nothing.
        head = http["alice"].get("/workspace/document").json()["version"]
        assert http["alice"].request("PUT", "/workspace/document",
                                     json={"expected_version": head, "text": "# New\n"}).status_code == 200
        created = http["alice"].post("/workspace/proposals", {"base_version": head + 1, "text": "# Newer\n"})
        assert created.status_code == 201
        message = stream.next_message()
        check("ResourceUpdatedNotification", message)
        check("JSONRPCNotification", message)
        assert message == {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                           "params": {"uri": WS + "proposals"}}
        room.join("newcomer", "read")  # participant.joined + session.opened
        message = stream.next_message()
        assert message["params"]["uri"] == WS + "participants"
        # Now the document too, after unsubscribing from proposals.
        reader.result("resources/subscribe", {"uri": WS + "document"})
        reader.result("resources/unsubscribe", {"uri": WS + "proposals"})
        proposal_id = created.json()["id"]
        assert http["alice"].post(f"/workspace/proposals/{proposal_id}/approve", {}).status_code == 200
        message = stream.next_message()
        check("ResourceUpdatedNotification", message)
        assert message["params"]["uri"] == WS + "document"
    finally:
        stream.close()


def test_commit_over_mcp_notifies_status_and_document(people):
    _, _, callers = people
    reader, alice = callers["reader"], callers["alice"]
    reader.result("resources/subscribe", {"uri": WS + "status"})
    reader.result("resources/subscribe", {"uri": WS + "document"})
    stream = Stream(reader)
    try:
        stream.first_frame()
        head = alice.call_tool("document_read")["structuredContent"]["version"]
        result = alice.call_tool("document_write", {"expected_version": head, "text": "# Changed\n"})
        assert result["isError"] is False
        uris = {stream.next_message()["params"]["uri"], stream.next_message()["params"]["uri"]}
        assert uris == {WS + "document", WS + "status"}
    finally:
        stream.close()


def test_commits_do_not_wait_for_an_unread_stream(people):
    _, http, callers = people
    reader = callers["reader"]
    reader.result("resources/subscribe", {"uri": WS + "leases"})
    stream = Stream(reader)  # opened, never read
    try:
        started = time.monotonic()
        for _ in range(30):
            lease = http["alice"].post("/workspace/leases", {"region": None, "ttl_seconds": 30}).json()
            assert http["alice"].request("DELETE", f"/workspace/leases/{lease['id']}").status_code == 200
        assert time.monotonic() - started < 20
    finally:
        stream.close()


def test_revoked_session_ends_stream(people):
    room, http, _ = people
    victim = room.join("victim", "read")
    caller = Mcp(room.ingress, victim.token)
    caller.result("resources/subscribe", {"uri": WS + "participants"})
    stream = Stream(caller)
    try:
        stream.first_frame()
        r = httpx.post(room.owner + "/owner/revoke", json={"session": victim.session["id"]},
                       headers={"Authorization": f"Bearer {room.owner_token}"})
        assert r.status_code == 200, r.text
        assert stream.next_message() is None  # the stream ended
    finally:
        stream.close()
        caller.close()
