"""Every stream kind on a real room ends cleanly: observe, GET /mcp, a POST answered with a stream.

The room loads ``tests.stream_plugin`` (``test/listen``: a listen-shaped
POST stream on the room's stream primitive; ``test/live``: the hub's
subscriber count, the open streams and the guard's watched writes). After
every ending all three return to zero. The heartbeat is the default 15 s,
so a clean-up seen within two seconds of a disconnect is the disconnect
hook's doing, not the next write's.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SAMPLE
from tests.mcp_wire import Mcp
from tests.roomproc import ROOT, Room, start_room
from tests.ssekit import SSEStream, open_stream, wait_until

PLUGIN = "tests.stream_plugin:register"


def start(folder: Path) -> Room:
    saved = dict(os.environ)
    os.environ["COMMONROOM_MCP_PLUGINS"] = PLUGIN
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), saved.get("PYTHONPATH")]))
    try:
        return start_room(folder, SAMPLE)
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    r = start(tmp_path_factory.mktemp("stream-endings"))
    yield r
    r.stop()


def addr(room: Room) -> tuple[str, int]:
    return ("127.0.0.1", room.state["ingress"]["port"])


class Counter:
    """``test/live`` with one session (joining costs an invitation per call otherwise)."""

    def __init__(self, room: Room):
        self.mcp = Mcp(room.ingress, room.join("counter", "read").token)

    def __call__(self) -> dict[str, int]:
        result = self.mcp.result("test/live")
        return {k: result[k] for k in ("subscribers", "streams", "watches")}

    def zero(self, timeout: float = 2.0) -> bool:
        return wait_until(lambda: self() == {"subscribers": 0, "streams": 0, "watches": 0}, timeout, 0.05)


@pytest.fixture(scope="module")
def counter(room):
    c = Counter(room)
    yield c
    c.mcp.close()


def listen(room: Room, token: str, request_id: Any, types: list[str] | None = None) -> SSEStream:
    caller = Mcp(room.ingress, token)
    params = {"types": types or []}
    headers = caller.headers("test/listen", params)
    body = json.dumps(caller.body("test/listen", params, id=request_id)).encode()
    caller.close()
    return open_stream(addr(room), "/mcp", method="POST", body=body, headers=headers)


def get_mcp(room: Room, token: str) -> SSEStream:
    return open_stream(addr(room), "/mcp", token=token, headers={"MCP-Protocol-Version": "2026-07-28"})


def invite(room: Room, name: str) -> None:
    assert room.operator().post("/owner/invitations", {"participant": name, "capabilities": ["read"]}).status_code == 201


def messages(frames) -> list[dict]:
    return [f.json() for f in frames if f.event == "message"]


def test_post_stream_ack_events_then_cancelled_by_request_id(room, counter):
    client = room.join("listener", "read")
    stream = listen(room, client.token, "L-1", ["invitation.created"])
    try:
        assert stream.status == 200 and stream.headers["content-type"].startswith("text/event-stream")
        ack = stream.next().json()
        assert ack["method"] == "notifications/subscriptions/acknowledged"
        assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "L-1"
        invite(room, "seen-by-listen")
        event = stream.next().json()
        assert event["method"] == "notifications/test/event" and event["params"]["type"] == "invitation.created"
        # Another session naming the same request id ends nothing: keys belong to a session.
        stranger = Mcp(room.ingress, room.join("stranger", "read").token)
        assert stranger.post("notifications/cancelled", {"requestId": "L-1"}, id=None).status_code == 202
        stranger.close()
        invite(room, "still-seen")
        assert stream.next().json()["params"]["type"] == "invitation.created"
        mine = Mcp(room.ingress, client.token)
        assert mine.post("notifications/cancelled", {"requestId": "L-1"}, id=None).status_code == 202
        mine.close()
        rest = messages(stream.read_to_end(timeout=5))
        assert stream.eof
        assert rest[-1] == {"jsonrpc": "2.0", "id": "L-1", "result": {
            "resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": "L-1"},
            "reason": "cancelled"}}
    finally:
        stream.close()
    assert counter.zero(), counter()


def test_a_second_stream_on_an_open_request_id_is_refused(room, counter):
    client = room.join("twice", "read")
    first = listen(room, client.token, 5)
    try:
        assert first.next().json()["method"] == "notifications/subscriptions/acknowledged"
        second = listen(room, client.token, 5)
        assert second.status == 400 and json.loads(second.body_text)["error"]["code"] == -32600
    finally:
        first.close()
    assert counter.zero(), counter()


def test_revoked_session_ends_every_kind_with_cleanup(room, counter):
    victim = room.join("victim", "read,observe")
    streams = [open_stream(addr(room), token=victim.token), get_mcp(room, victim.token),
               listen(room, victim.token, "L-rev")]
    try:
        assert all(s.status == 200 for s in streams)
        for s in streams:
            assert s.next() is not None  # retry:, the opening comment, the ack
        assert counter()["subscribers"] == 3
        r = room.operator().post("/owner/revoke", {"session": victim.session["id"]})
        assert r.status_code == 200
        ends = [s.read_to_end(timeout=5) for s in streams]
        assert all(s.eof for s in streams)
        assert messages(ends[2])[-1]["result"]["reason"] == "revoked"
    finally:
        for s in streams:
            s.close()
    assert counter.zero(), counter()


def test_client_disconnect_cleans_up_without_waiting_for_a_write(room, counter):
    client = room.join("leaver", "read,observe")
    invite(room, "something-to-replay")
    streams = [open_stream(addr(room), token=client.token), get_mcp(room, client.token),
               listen(room, client.token, "L-gone"),
               open_stream(addr(room), token=client.token, headers={"Last-Event-ID": "0"})]
    for s in streams:
        assert s.status == 200 and s.next() is not None
    assert wait_until(lambda: counter()["subscribers"] == 4, 2)
    closed_at = time.monotonic()
    for s in streams:
        s.close()
    assert counter.zero(), counter()
    assert time.monotonic() - closed_at < 5  # well before a 15 s heartbeat


def test_sigterm_sends_the_final_result_then_ends(tmp_path):
    room = start(tmp_path)
    try:
        client = room.join("to-the-end", "read,observe")
        stream = listen(room, client.token, 99)
        observer = open_stream(addr(room), token=client.token)
        assert stream.next().json()["method"] == "notifications/subscriptions/acknowledged"
        assert observer.next().retry == 5000
        room.proc.send_signal(15)
        ended = messages(stream.read_to_end(timeout=10))
        observer.read_to_end(timeout=10)
        assert stream.eof and observer.eof
        assert ended[-1]["result"]["reason"] == "shutdown"
        assert room.proc.wait(10) == 0
    finally:
        room.stop()
