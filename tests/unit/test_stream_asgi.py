"""The stream clean-up through the real app stack, in process, over raw ASGI.

``build_room`` gives the room's own apps (the owner listener's edge → StreamGuard → Falcon → the
observe resource → the stream primitive → the hub) on a real engine and
sidecar; only the server (gunicorn) is replaced by a hand-driven ASGI
``receive``/``send`` pair, so a test can make the client go away at an exact
point: in the middle of a replay, or while the stream waits for events.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from commonroom import tokens
from commonroom.http.edge import CloseConnection
from commonroom.live.stream import BATCH_EVENTS
from commonroom.room import build_room
from tests.ingress import http_scope

ROOT = Path(__file__).resolve().parents[2]
OWNER_TOKEN = "owner-test-token"


@pytest.fixture
def room(tmp_path):
    doc = tmp_path / "doc.md"
    shutil.copyfile(ROOT / "examples" / "sample.md", doc)
    engine, owner, ingress, hooks = build_room(doc, tokens.digest(OWNER_TOKEN))
    engine.store.write(lambda ctx: [
        ctx.emit("invitation.created", {"invitation_id": f"inv_{i}", "participant": f"bulk{i}",
                                        "capabilities": ["read"], "expires_at": "2030-01-01T00:00:00.000000+00:00"})
        for i in range(450)
    ])
    resource, *_ = owner.router.find("/workspace/observe")
    try:
        yield engine, Served(owner), resource
    finally:
        engine.close()


class Served:
    """The owner listener as served (its edge over the stream guard and Falcon), with the guard's state."""

    def __init__(self, listener):
        object.__setattr__(self, "listener", listener)

    async def __call__(self, scope, receive, send):
        await self.listener(scope, receive, send)

    def __getattr__(self, name):
        return getattr(self.listener.app, name)  # the StreamGuard's

    def __setattr__(self, name, value):
        setattr(self.listener.app, name, value)


def scope(query: str = "", path: str = "/workspace/observe") -> dict:
    return http_scope("GET", path, [(b"host", b"commonroom"), (b"accept", b"text/event-stream"),
                                     (b"authorization", f"Bearer {OWNER_TOKEN}".encode())], query.encode(),
                      asgi={"version": "3.0", "spec_version": "2.3"})


class Client:
    """A client that goes away (``http.disconnect``) once ``leave_after`` body chunks arrived."""

    def __init__(self, leave_after: int):
        self.leave_after = leave_after
        self.chunks: list[bytes] = []
        self.gone = asyncio.Event()
        self._requested = False

    async def receive(self) -> dict:
        if not self._requested:
            self._requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    status = 0

    async def send(self, message: dict) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        if message["type"] == "http.response.body" and message.get("body"):
            self.chunks.append(message["body"])
            if len(self.chunks) >= self.leave_after:
                self.gone.set()
                for _ in range(3):  # let the server notice, as a real peer close would
                    await asyncio.sleep(0)

    @property
    def ids(self) -> list[int]:
        text = b"".join(self.chunks).decode()
        return [int(line[4:]) for line in text.splitlines() if line.startswith("id: ")]


def test_client_gone_mid_replay_leaves_no_subscriber(room):
    engine, owner, resource = room

    async def main():
        client = Client(leave_after=2)  # retry:, then the first page of 200 events
        await asyncio.wait_for(owner(scope("since_event_id=0"), client.receive, client.send), 5)
        return client

    client = asyncio.run(main())
    assert client.ids == list(range(1, 201)), "the replay stopped after the page the client saw"
    assert resource.hub.subscribers == 0
    assert resource.streams.count == 0
    assert not owner._watches


def test_client_gone_while_waiting_ends_before_any_heartbeat(room):
    engine, owner, resource = room
    assert resource.streams.heartbeat_seconds >= 15

    async def main():
        client = Client(leave_after=99)
        task = asyncio.ensure_future(owner(scope(), client.receive, client.send))
        await asyncio.sleep(0.1)
        assert resource.hub.subscribers == 1 and resource.streams.count == 1 and len(owner._watches) == 1
        client.gone.set()
        await asyncio.wait_for(task, 2)
        return client

    client = asyncio.run(main())
    assert client.chunks == [b"retry: 5000\n\n"]
    assert resource.hub.subscribers == 0 and resource.streams.count == 0 and not owner._watches


def test_replay_runs_to_the_end_when_the_client_stays(room):
    engine, owner, resource = room

    async def main():
        client = Client(leave_after=99)
        task = asyncio.ensure_future(owner(scope("since_event_id=440"), client.receive, client.send))
        await asyncio.sleep(0.1)
        ids = client.ids
        await resource.hub.close()  # shutdown
        await asyncio.wait_for(task, 2)
        return ids

    assert asyncio.run(main()) == list(range(441, engine.last_event_id() + 1))
    assert resource.hub.subscribers == 0 and resource.streams.count == 0 and not owner._watches


# -- live events written from the hub's delivery (LiveStream._direct) ----------

def emit(engine, n: int = 1) -> int:
    """Commit ``n`` events on this thread (the hub delivers on it); the newest id."""
    engine.store.write(lambda ctx: [ctx.emit("invitation.revoked", {"invitation_id": f"inv_{i}"}) for i in range(n)])
    return engine.last_event_id()


class GatedClient(Client):
    """A client whose ``send`` of the chunk carrying ``gate_id`` waits until ``gate`` is set."""

    def __init__(self, gate_id: int | None = None):
        super().__init__(leave_after=10**6)
        self.gate = asyncio.Event()
        self.gate_id = gate_id

    async def send(self, message: dict) -> None:
        await super().send(message)
        body = message.get("body") or b""
        if self.gate_id is not None and f"id: {self.gate_id}\n".encode() in body:
            await self.gate.wait()


def test_a_waiting_stream_is_written_within_the_commit_that_published(room):
    engine, owner, resource = room

    async def main():
        client = Client(leave_after=99)
        task = asyncio.ensure_future(owner(scope(), client.receive, client.send))
        await asyncio.sleep(0.1)  # the stream now waits for events
        newest = emit(engine, 3)
        written = client.ids  # no await since the commit: the stream's task has not run
        client.gone.set()
        await asyncio.wait_for(task, 2)
        return newest, written, client.ids

    newest, written, ids = asyncio.run(main())
    assert written == [newest - 2, newest - 1, newest]
    assert ids == written
    assert resource.hub.subscribers == 0 and resource.streams.count == 0 and not owner._watches


def test_a_direct_write_that_must_wait_goes_out_before_the_events_after_it(room):
    engine, owner, resource = room

    async def main():
        client = GatedClient(gate_id=engine.last_event_id() + 1)
        task = asyncio.ensure_future(owner(scope(), client.receive, client.send))
        await asyncio.sleep(0.1)
        first = emit(engine)  # written at once; its send then waits for the gate
        later = emit(engine, 2)  # queued behind it
        await asyncio.sleep(0.1)
        held = client.ids
        client.gate.set()
        await asyncio.sleep(0.1)
        client.gone.set()
        await asyncio.wait_for(task, 2)
        return first, later, held, client.ids

    first, later, held, ids = asyncio.run(main())
    assert held == [first]
    assert ids == [first, later - 1, later]
    assert resource.hub.subscribers == 0 and resource.streams.count == 0 and not owner._watches


def test_a_direct_write_whose_reader_stalls_is_cut_off_by_the_guard(room):
    engine, owner, resource = room
    owner.timeout = 0.3  # the write guard's bound, seconds

    async def main():
        client = GatedClient(gate_id=engine.last_event_id() + 1)  # never opened
        task = asyncio.ensure_future(owner(scope(), client.receive, client.send))
        await asyncio.sleep(0.1)
        emit(engine)
        emit(engine)
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 3)

    asyncio.run(main())
    assert owner.stalled == 1
    assert resource.hub.subscribers == 0 and resource.streams.count == 0 and not owner._watches


@pytest.mark.parametrize("path", ["//workspace/observe", "///workspace/observe", "/workspace//observe"])
def test_a_path_spelled_with_extra_slashes_opens_no_stream(room, path):
    """Falcon's router skips empty segments; the edge refuses them (400, reason path) before any route runs."""
    engine, owner, resource = room
    client = Client(leave_after=99)

    async def main():
        with pytest.raises(CloseConnection):
            await asyncio.wait_for(owner(scope(path=path), client.receive, client.send), 2)

    asyncio.run(main())
    assert client.status == 400 and json.loads(b"".join(client.chunks))["details"]["reason"] == "path"
    assert resource.hub.subscribers == 0 and resource.streams.count == 0 and not owner._watches


def test_a_commit_bigger_than_a_batch_reaches_a_waiting_stream_in_batches(room):
    engine, owner, resource = room

    async def main():
        client = Client(leave_after=10**6)
        task = asyncio.ensure_future(owner(scope(), client.receive, client.send))
        await asyncio.sleep(0.1)
        newest = emit(engine, BATCH_EVENTS + 36)
        await asyncio.sleep(0.1)
        client.gone.set()
        await asyncio.wait_for(task, 2)
        return newest, client

    newest, client = asyncio.run(main())
    assert client.ids == list(range(newest - BATCH_EVENTS - 35, newest + 1))
    per_write = [chunk.count(b"\nid: ") + chunk.startswith(b"id: ") for chunk in client.chunks]
    assert max(per_write) <= BATCH_EVENTS, "one write carries at most a batch, as the queue's way does"
