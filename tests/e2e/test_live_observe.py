"""GET /workspace/observe against a real room: framing, replay, live, endings.

Every stream here is a real socket to a real ``ce serve`` (tests/ssekit.py).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import httpx
import pytest

from commonroom import schemas
from commonroom.protocol import SSE_EVENT_RESYNC
from tests.conftest import SAMPLE
from tests.roomproc import Room, start_room
from tests.ssekit import Collector, open_stream, wait_until


def addr(room: Room) -> tuple[str, int]:
    return ("127.0.0.1", room.state["ingress"]["port"])


def owner_addr(room: Room) -> tuple[str, int]:
    return ("127.0.0.1", room.state["owner_port"])


def last_event_id(room: Room) -> int:
    return room.operator().get("/workspace/room").json()["last_event_id"]


def make_events(room: Room, count: int, prefix: str = "e") -> None:
    with httpx.Client(base_url=room.owner, headers={"Authorization": f"Bearer {room.owner_token}"},
                      timeout=30) as client:
        for i in range(count):
            r = client.post("/owner/invitations", json={"participant": f"{prefix}{i}", "capabilities": ["read"]})
            assert r.status_code == 201, r.text


@pytest.fixture(scope="module")
def live_room(tmp_path_factory):
    os.environ["COMMONROOM_HEARTBEAT_SECONDS"] = "0.5"
    try:
        r = start_room(tmp_path_factory.mktemp("live"), SAMPLE)
    finally:
        del os.environ["COMMONROOM_HEARTBEAT_SECONDS"]
    yield r
    r.stop()


@pytest.fixture(scope="module")
def watcher(live_room):
    return live_room.join("watcher", "read,observe")


def test_stream_head_retry_and_a_live_event(live_room, watcher):
    stream = open_stream(addr(live_room), token=watcher.token)
    try:
        assert stream.status == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        assert stream.headers["cache-control"] == "no-store"
        assert stream.headers["x-accel-buffering"] == "no"
        first = stream.next()
        assert first.retry == 5000 and first.event is None
        make_events(live_room, 1, "live")
        (frame,) = stream.events(1)
        event = frame.json()
        assert frame.event == event["type"] == "invitation.created"
        assert frame.id == str(event["id"])
        assert event["payload"]["participant"] == "live0"
        assert event["actor"] == {"participant_id": None, "session_id": None}
        assert schemas.errors_of("events#Event", event) == []
    finally:
        stream.close()


def test_wire_frame_is_id_event_data(live_room, watcher):
    stream = open_stream(addr(live_room), token=watcher.token)
    try:
        stream.next()
        make_events(live_room, 1, "wire")
        deadline = time.monotonic() + 10
        while b"\n\n" not in stream._body and time.monotonic() < deadline:
            stream._recv(1)
            stream._decode()
        lines = stream._body.decode().split("\n\n")[0].split("\n")
        assert lines[0].startswith("id: ") and lines[1] == "event: invitation.created"
        assert lines[2].startswith("data: {") and len(lines) == 3
    finally:
        stream.close()


def test_heartbeat_comment_lines(live_room, watcher):
    stream = open_stream(addr(live_room), token=watcher.token)
    try:
        stream.next()
        frame = stream.next(timeout=5)
        assert frame.comments == ["heartbeat"] and frame.event is None and frame.data is None
    finally:
        stream.close()


def test_replay_from_last_event_id_then_live(live_room, watcher):
    cursor = last_event_id(live_room)
    make_events(live_room, 5, "missed")
    stream = open_stream(addr(live_room), token=watcher.token, headers={"Last-Event-ID": str(cursor)})
    try:
        replay = stream.events(5)
        assert [int(f.id) for f in replay] == list(range(cursor + 1, cursor + 6))
        assert [f.json()["payload"]["participant"] for f in replay] == [f"missed{i}" for i in range(5)]
        make_events(live_room, 2, "after")
        live = stream.events(2)
        assert [int(f.id) for f in live] == [cursor + 6, cursor + 7]
        assert [f.json()["payload"]["participant"] for f in live] == ["after0", "after1"]
    finally:
        stream.close()


def test_since_event_id_query_and_header_precedence(live_room, watcher):
    cursor = last_event_id(live_room)
    make_events(live_room, 3, "since")
    stream = open_stream(addr(live_room), f"/workspace/observe?since_event_id={cursor + 1}", token=watcher.token)
    try:
        assert [int(f.id) for f in stream.events(2)] == [cursor + 2, cursor + 3]
    finally:
        stream.close()
    stream = open_stream(addr(live_room), "/workspace/observe?since_event_id=0", token=watcher.token,
                         headers={"Last-Event-ID": str(cursor + 2)})
    try:
        assert [int(f.id) for f in stream.events(1)] == [cursor + 3]
    finally:
        stream.close()


def test_no_gap_and_no_duplicate_while_commits_race_the_replay(live_room, watcher):
    cursor = last_event_id(live_room)
    make_events(live_room, 20, "before")
    done = threading.Event()

    def writer():
        make_events(live_room, 60, "race")
        done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    time.sleep(0.05)
    stream = open_stream(addr(live_room), token=watcher.token, headers={"Last-Event-ID": str(cursor)})
    collector = Collector(stream)
    collector.start()
    try:
        thread.join(60)
        final = last_event_id(live_room)
        assert wait_until(lambda: collector.ids and collector.ids[-1] >= final, 20), collector.error
        assert collector.ids == list(range(cursor + 1, final + 1))
    finally:
        stream.close()


def test_operator_observes_on_the_owner_port(live_room):
    cursor = last_event_id(live_room)
    stream = open_stream(owner_addr(live_room), token=live_room.owner_token,
                         headers={"Last-Event-ID": str(cursor - 1)})
    try:
        assert stream.status == 200
        assert [int(f.id) for f in stream.events(1)] == [cursor]
    finally:
        stream.close()


def test_observe_refusals(live_room):
    reader = live_room.join("reader-only", "read")
    stream = open_stream(addr(live_room), token=reader.token)
    assert stream.status == 403 and '"permission_denied"' in stream.body_text
    stream = open_stream(addr(live_room))
    assert stream.status == 401 and '"unauthorized"' in stream.body_text
    observer = live_room.join("observer", "observe")
    for bad in ("abc", "-1", "1.5"):
        stream = open_stream(addr(live_room), token=observer.token, headers={"Last-Event-ID": bad})
        assert stream.status == 400 and '"invalid_request"' in stream.body_text, bad
    stream = open_stream(addr(live_room), "/workspace/observe?since_event_id=x", token=observer.token)
    assert stream.status == 400 and "since_event_id" in stream.body_text


def test_cursor_from_the_future_is_resync(live_room, watcher):
    stream = open_stream(addr(live_room), token=watcher.token, headers={"Last-Event-ID": "99999999"})
    frames = stream.read_to_end()
    assert frames[0].retry == 5000
    assert frames[-1].event == SSE_EVENT_RESYNC and frames[-1].json()["reason"] == "cursor_lost"
    assert stream.eof


def test_revoking_the_session_ends_its_stream_within_a_second(live_room):
    victim = live_room.join("victim", "read,observe")
    bystander = live_room.join("bystander", "read,observe")
    doomed = open_stream(addr(live_room), token=victim.token)
    other = open_stream(addr(live_room), token=bystander.token)
    try:
        assert doomed.next().retry == 5000 and other.next().retry == 5000
        r = live_room.operator().post("/owner/revoke", {"session": victim.session["id"]})
        assert r.status_code == 200 and r.json()["revoked"] is True
        revoked_at = time.monotonic()
        rest = doomed.read_to_end(timeout=5)
        assert doomed.eof and time.monotonic() - revoked_at < 1.0
        assert all(f.event is None or f.event != SSE_EVENT_RESYNC for f in rest)
        (seen,) = other.events(1)
        assert seen.event == "session.revoked"
        assert seen.json()["payload"] == {"session_id": victim.session["id"]}
        again = open_stream(addr(live_room), token=victim.token)
        assert again.status == 401
    finally:
        doomed.close()
        other.close()


def test_expired_session_stream_ends(live_room):
    brief = live_room.join("brief", "read,observe", session_ttl_seconds=2)
    stream = open_stream(addr(live_room), token=brief.token)
    try:
        assert stream.next().retry == 5000
        started = time.monotonic()
        stream.read_to_end(timeout=6)
        assert stream.eof
        assert time.monotonic() - started < 3.5
    finally:
        stream.close()


def test_sigterm_ends_open_streams_quickly(tmp_path: Path):
    room = start_room(tmp_path, SAMPLE)
    try:
        client = room.join("late", "read,observe")
        streams = [open_stream(addr(room), token=client.token) for _ in range(3)]
        streams.append(open_stream(owner_addr(room), token=room.owner_token))
        for s in streams:
            assert s.next().retry == 5000
        started = time.monotonic()
        room.proc.send_signal(15)
        for s in streams:
            s.read_to_end(timeout=10)
            assert s.eof
        assert time.monotonic() - started < 2.0  # ended by the room, not by the 5 s graceful timeout
        room.proc.wait(15)
    finally:
        room.stop()
