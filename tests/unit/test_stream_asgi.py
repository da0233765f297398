"""The stream clean-up through the real app stack, in process, over raw ASGI.

``build_room`` gives the room's own apps (StreamGuard → Falcon → the
observe resource → the stream primitive → the hub) on a real engine and
sidecar; only the server (gunicorn) is replaced by a hand-driven ASGI
``receive``/``send`` pair, so a test can make the client go away at an exact
point: in the middle of a replay, or while the stream waits for events.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from commonroom import tokens
from commonroom.room import build_room

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
    resource, *_ = owner.app._router.find("/workspace/observe")
    try:
        yield engine, owner, resource
    finally:
        engine.close()


def scope(query: str = "") -> dict:
    return {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
        "method": "GET", "scheme": "http", "path": "/workspace/observe", "raw_path": b"/workspace/observe",
        "query_string": query.encode(), "root_path": "",
        "headers": [(b"host", b"commonroom"), (b"accept", b"text/event-stream"),
                    (b"authorization", f"Bearer {OWNER_TOKEN}".encode())],
        "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000),
    }


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

    async def send(self, message: dict) -> None:
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
