"""The ring and lagging subscribers on a real room, with real sockets.

One room takes 2,100 commits (invitations through the owner API) while 50
observers read every event, one observer stops reading (on the room's Unix
socket, whose small kernel buffer fills fast), and a cursor taken before the
commits ages off the 2,000-row ring. The room runs with a 256-event hub
queue (``COMMONROOM_STREAM_QUEUE``) so the stalled reader overflows within
the 2,100 commits, and a long write timeout so that it is the hub, not the
write guard, that drops it. A second room checks the write guard itself.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from commonroom import schemas
from commonroom.engine import Engine
from commonroom.protocol import SSE_EVENT_RESYNC
from tests.conftest import SAMPLE
from tests.roomproc import Room, start_room
from tests.ssekit import Collector, SSEStream, open_stream, wait_until

COMMITS = 2100
READERS = 50
LANES = 4


@contextmanager
def environment(**values: str):
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@dataclass
class RingRun:
    room: Room
    cursor0: int
    final: int
    readers: list[Collector] = field(default_factory=list)
    stalled: SSEStream | None = None
    seconds: float = 0.0


@pytest.fixture(scope="module")
def ring_run(tmp_path_factory):
    with environment(COMMONROOM_STREAM_QUEUE="256", COMMONROOM_STREAM_WRITE_TIMEOUT="120"):
        room = start_room(tmp_path_factory.mktemp("ring"), SAMPLE, args=("--socket",))
    try:
        viewer = room.join("viewer", "read,observe")
        sleeper = room.join("sleeper", "read,observe")
        cursor0 = room.operator().get("/workspace/room").json()["last_event_id"]
        address = ("127.0.0.1", room.state["ingress"]["port"])
        readers = []
        for _ in range(READERS):
            stream = open_stream(address, token=viewer.token, headers={"Last-Event-ID": str(cursor0)})
            assert stream.status == 200
            collector = Collector(stream, timeout=120)
            collector.start()
            readers.append(collector)
        stalled = open_stream(room.state["ingress"]["socket"], token=sleeper.token,
                              headers={"Last-Event-ID": str(cursor0)})
        assert stalled.status == 200  # and from now on nobody reads it
        started = time.monotonic()

        def commit(lane: int) -> None:  # a few clients in parallel keep the room busy
            with httpx.Client(base_url=room.owner, timeout=30,
                              headers={"Authorization": f"Bearer {room.owner_token}"}) as owner:
                for i in range(lane, COMMITS, LANES):
                    r = owner.post("/owner/invitations", json={"participant": f"r{i}", "capabilities": ["read"]})
                    assert r.status_code == 201, r.text

        with ThreadPoolExecutor(LANES) as pool:
            list(pool.map(commit, range(LANES)))
        final = room.operator().get("/workspace/room").json()["last_event_id"]
        run = RingRun(room, cursor0, final, readers, stalled, time.monotonic() - started)
        yield run
    finally:
        room.stop()


def test_fifty_readers_receive_every_event_in_order(ring_run):
    print(f"{COMMITS} commits in {ring_run.seconds:.1f} s")
    expected = list(range(ring_run.cursor0 + 1, ring_run.final + 1))
    assert len(expected) == COMMITS
    for reader in ring_run.readers:
        assert wait_until(lambda: reader.ids and reader.ids[-1] >= ring_run.final, 60), reader.error
    for reader in ring_run.readers:  # every event from the cursor on, in order, no gap (the module's
        # other tests may have added events after the run's: they follow in the same order)
        assert reader.ids[: len(expected)] == expected
        assert reader.ids == list(range(ring_run.cursor0 + 1, ring_run.cursor0 + 1 + len(reader.ids)))
        assert reader.error is None
    sample = ring_run.readers[0].frames[-1].json()
    assert schemas.errors_of("events#Event", sample) == []


def test_the_stalled_reader_was_dropped_with_resync(ring_run):
    frames = ring_run.stalled.read_to_end(timeout=30)
    assert ring_run.stalled.eof, "the stream must end after resync"
    assert frames[0].retry == 5000
    assert frames[-1].event == SSE_EVENT_RESYNC
    assert frames[-1].json()["reason"] == "lagged"
    ids = [int(f.id) for f in frames if f.id is not None]
    assert ids == list(range(ring_run.cursor0 + 1, ring_run.cursor0 + 1 + len(ids)))  # in order, no gap
    assert len(ids) < COMMITS  # it was cut off before the end


def test_an_old_cursor_that_fell_off_the_ring_gets_resync(ring_run):
    room = ring_run.room
    viewer = room.join("late-viewer", "read,observe")
    stream = open_stream(("127.0.0.1", room.state["ingress"]["port"]), token=viewer.token,
                         headers={"Last-Event-ID": str(ring_run.cursor0)})
    frames = stream.read_to_end(timeout=10)
    assert stream.eof
    assert [f.retry for f in frames[:1]] == [5000]
    assert [f.event for f in frames[1:]] == [SSE_EVENT_RESYNC]
    body = frames[-1].json()
    assert body["reason"] == "cursor_lost" and body["last_event_id"] >= ring_run.final
    assert schemas.errors_of("events#Resync", body) == []


def test_the_ring_keeps_the_newest_2000_and_replays_them(ring_run):
    room = ring_run.room
    viewer = room.join("ring-viewer", "read,observe")
    page = room.operator().get("/workspace/history", params={"limit": 1}).json()
    last = page["last_event_id"]
    assert page["oldest_event_id"] == last - 1999
    stream = open_stream(("127.0.0.1", room.state["ingress"]["port"]), token=viewer.token,
                         headers={"Last-Event-ID": str(last - 2000)})
    try:
        replay = stream.events(2000, timeout=20)
        assert [int(f.id) for f in replay] == list(range(last - 1999, last + 1))
    finally:
        stream.close()
    lost = room.operator().get("/workspace/history", params={"cursor": _cursor(ring_run.cursor0)}).json()
    assert lost["history_lost"] is True and lost["events"][0]["id"] == last - 1999


def _cursor(after: int) -> str:
    from commonroom.engine.base import encode_cursor

    return encode_cursor({"after": after})


def test_a_reader_stalled_past_the_write_timeout_is_cut_off(tmp_path: Path):
    """The write guard: a replay bigger than the socket buffers, never read (``//workspace/observe`` is
    refused at the edge, ``test_ingress_edges.py``; the guard on that spelling: ``test_stream_asgi.py``)."""
    path = "/workspace/observe"
    document = tmp_path / "doc.md"
    document.write_bytes(SAMPLE.read_bytes())
    engine = Engine.open(document)  # fill the ring before the room starts: one transaction
    engine.store.write(lambda ctx: [
        ctx.emit("invitation.created", {"invitation_id": f"inv_{i}", "participant": f"bulk{i}",
                                        "capabilities": ["read"], "expires_at": "2030-01-01T00:00:00.000000+00:00"})
        for i in range(1999)
    ])
    engine.close()
    with environment(COMMONROOM_STREAM_WRITE_TIMEOUT="1"):
        room = start_room(tmp_path, args=("--socket",))
    try:
        client = room.join("frozen", "read,observe")
        oldest = room.operator().get("/workspace/history", params={"limit": 1}).json()["oldest_event_id"]
        stream = open_stream(room.state["ingress"]["socket"], path, token=client.token,
                             headers={"Last-Event-ID": str(oldest - 1)})
        assert stream.status == 200
        time.sleep(3.5)  # > write timeout + the guard's sweep
        assert room.operator().get("/workspace/room").status_code == 200  # the room is fine
        frames = stream.read_to_end(timeout=10)
        assert stream.eof
        ids = [int(f.id) for f in frames if f.id is not None]
        assert 0 < len(ids) < 2000 and ids == list(range(oldest, oldest + len(ids)))
        assert not any(f.event == SSE_EVENT_RESYNC for f in frames)
    finally:
        room.stop()
