"""``GET /workspace/observe``: the Server-Sent Events stream of the room.

Seed ``protocol.txt`` (HTTP): "The stream replays events still in the
sidecar ring, then pushes new ones. event: resync means the cursor fell off
the ring or the subscriber lagged; read /workspace/room again. Heartbeats
are comment lines. The retry hint is 5 seconds. A revoked session ends the
stream." Capability ``observe``; on the owner port the operator observes.

Wire (UTF-8, ``text/event-stream``)::

    retry: 5000                               first, once

    id: 42                                    one frame per event
    event: version.committed
    data: {"id":42,"type":"version.committed","time":"…","actor":{…},"payload":{…}}

    : heartbeat                               after 15 s without a write

    event: resync                             then the stream ends
    data: {"reason":"cursor_lost"|"lagged","last_event_id":N}

The cursor is the ``Last-Event-ID`` header (what an ``EventSource``
resends), else the ``since_event_id`` query parameter: a non-negative
integer, else ``invalid_request``. Without one the stream starts with the
next commit.

Order of work, so nothing falls in a gap: subscribe to the hub first, then
read the ring after the cursor (in pages) and send it, then send the live
events, skipping every id already sent. The stream ends on RESYNC, when the
session is revoked (the hub ends it as ``session.revoked`` is published) or
expires (a timer at ``expires_at``; the session is also rechecked every
0.5–1.5 heartbeat intervals, jittered, one answer per session per second),
and when the room stops (``Hub.close``).

Settings (environment of ``ce serve``): ``COMMONROOM_HEARTBEAT_SECONDS``
(default 15), ``COMMONROOM_STREAM_QUEUE`` (hub queue per subscriber, default
1024 events), ``COMMONROOM_STREAM_WRITE_TIMEOUT`` (see ``guard.py``).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from dataclasses import dataclass
from typing import Any, AsyncIterator

import falcon

from ..clock import parse_rfc3339
from ..engine import Actor, Engine, require
from ..engine.history import REPLAY_PAGE
from ..errors import InvalidRequest
from .guard import on_request_end
from .hub import CLOSED, HEARTBEAT, RESYNC, Hub, Subscription

#: Reconnection hint sent first (milliseconds; the seed's 5 seconds).
RETRY_MS = 5000
#: Most events written in one send when a subscriber has a backlog.
BATCH_EVENTS = 64
#: How long one answer of "is this session live?" serves a session's streams (s).
LIVE_CACHE_SECONDS = 1.0


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    value = float(raw)
    if value <= 0:
        raise ValueError(f"{name} must be positive")
    return value


@dataclass(frozen=True)
class LiveSettings:
    """Stream settings; :meth:`from_env` reads the ``COMMONROOM_*`` variables."""

    heartbeat_seconds: float = 15.0
    queue_size: int = 1024
    write_timeout_seconds: float = 10.0

    @classmethod
    def from_env(cls) -> "LiveSettings":
        """Defaults overridden by the environment (``ValueError`` for a bad value)."""
        return cls(
            heartbeat_seconds=_env_float("COMMONROOM_HEARTBEAT_SECONDS", 15.0),
            queue_size=int(_env_float("COMMONROOM_STREAM_QUEUE", 1024)),
            write_timeout_seconds=_env_float("COMMONROOM_STREAM_WRITE_TIMEOUT", 10.0),
        )


class Frame:
    """Pre-serialised SSE bytes that Falcon's ``resp.sse`` loop writes as is."""

    __slots__ = ("data",)

    def __init__(self, data: bytes):
        self.data = data

    def serialize(self, handler: Any = None) -> bytes:  # noqa: D102 - falcon protocol
        return self.data


RETRY_FRAME = Frame(f"retry: {RETRY_MS}\n\n".encode())
HEARTBEAT_FRAME = Frame(b": heartbeat\n\n")


def event_bytes(event: dict[str, Any]) -> bytes:
    """``id:``/``event:``/``data:`` lines of one event (compact JSON, one line)."""
    data = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
    return f"id: {event['id']}\nevent: {event['type']}\ndata: {data}\n\n".encode("utf-8")


def resync_frame(reason: str, last_event_id: int) -> Frame:
    """``event: resync`` with ``{"reason", "last_event_id"}`` (no id line)."""
    data = json.dumps({"reason": reason, "last_event_id": last_event_id}, separators=(",", ":"))
    return Frame(f"event: resync\ndata: {data}\n\n".encode())


def parse_cursor(req: falcon.asgi.Request) -> int | None:
    """``Last-Event-ID`` (preferred) or ``since_event_id``; None when neither."""
    for name, value in (("Last-Event-ID", req.get_header("Last-Event-ID")),
                        ("since_event_id", req.get_param("since_event_id"))):
        if value is None or not value.strip():
            continue
        text = value.strip()
        if not (text.isascii() and text.isdigit()):
            raise InvalidRequest(f"{name} must be a non-negative integer event id, not {value!r}",
                                 details={"parameter": name})
        return int(text)
    return None


class _FrameCache:
    """Serialised frames of recent events, shared by every stream of one app."""

    def __init__(self, size: int = 512):
        self.size = size
        self.frames: dict[int, bytes] = {}

    def get(self, event: dict[str, Any]) -> bytes:
        key = event["id"]
        data = self.frames.get(key)
        if data is None:
            data = event_bytes(event)
            if len(self.frames) >= self.size:
                for old in list(self.frames)[: self.size // 2]:
                    del self.frames[old]
            self.frames[key] = data
        return data


class ObserveResource:
    """``GET /workspace/observe`` (Falcon ASGI resource)."""

    def __init__(self, engine: Engine, hub: Hub, settings: LiveSettings | None = None):
        self.engine = engine
        self.hub = hub
        self.settings = settings or LiveSettings()
        self.cache = _FrameCache()
        self._live_cache: dict[str, tuple[float, bool]] = {}

    async def on_get(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        """Check the capability and cursor, then hand Falcon the frame stream."""
        actor: Actor = req.context.actor
        require(actor, "observe")
        after = parse_cursor(req)
        resp.content_type = "text/event-stream; charset=utf-8"
        resp.set_header("Cache-Control", "no-store")
        resp.set_header("X-Accel-Buffering", "no")
        resp.sse = self.frames(actor, after, req.scope)

    def _session_live(self, actor: Actor, *, fresh: bool = False) -> bool:
        """Is the actor's session still live? Periodic checks share one answer per
        session for a second (a thousand streams of one session cost one query);
        ``fresh`` always asks the sidecar."""
        session_id = actor.session_id
        if session_id is None:
            return True
        now = time.monotonic()
        cached = self._live_cache.get(session_id)
        if not fresh and cached is not None and now - cached[0] < LIVE_CACHE_SECONDS:
            return cached[1]
        live = self.engine.session_live(session_id)
        if len(self._live_cache) >= 4096:
            self._live_cache.clear()
        self._live_cache[session_id] = (now, live)
        return live

    def _expiry_deadline(self, actor: Actor, loop: asyncio.AbstractEventLoop) -> float | None:
        if actor.session_id is None or not actor.expires_at:
            return None
        remaining = (parse_rfc3339(actor.expires_at) - self.engine.clock.now()).total_seconds()
        return loop.time() + max(0.0, remaining)

    async def frames(self, actor: Actor, after: int | None, scope: dict) -> AsyncIterator[Frame]:
        """The stream: retry hint, the ring after ``after`` (page by page), then live."""
        sub = self.hub.subscribe(session_id=actor.session_id)
        on_request_end(scope, sub.close)
        try:
            yield RETRY_FRAME
            last = 0 if after is None else after
            while after is not None:
                if self.engine.cursor_lost(last):
                    yield resync_frame("cursor_lost", self.engine.last_event_id())
                    return
                page = self.engine.events_after(last, REPLAY_PAGE)
                if page:
                    yield Frame(b"".join(self.cache.get(e) for e in page))
                    last = page[-1]["id"]
                if len(page) < REPLAY_PAGE or sub.ended:
                    break
            async for frame in self._live(actor, sub, last):
                yield frame
        finally:
            sub.close()

    async def _live(self, actor: Actor, sub: Subscription, last: int) -> AsyncIterator[Frame]:
        loop = asyncio.get_running_loop()
        heartbeat = self.settings.heartbeat_seconds
        deadline = self._expiry_deadline(actor, loop)
        last_write = loop.time()
        # Streams opened together must not all recheck their session at once.
        next_check = last_write + heartbeat * (0.5 + random.random())
        while True:
            now = loop.time()
            wait = last_write + heartbeat - now
            if deadline is not None:
                wait = min(wait, deadline - now)
            item = await sub.get(max(wait, 0.0))
            now = loop.time()
            if item is HEARTBEAT:
                if deadline is not None and now >= deadline:
                    if not self._session_live(actor, fresh=True):
                        return
                    deadline = now + 1.0  # clocks disagree by a hair: look again soon
                if now - last_write >= heartbeat * 0.999:
                    if not self._session_live(actor):
                        return
                    next_check = now + heartbeat
                    last_write = now
                    yield HEARTBEAT_FRAME
                continue
            if item is RESYNC:
                yield resync_frame("lagged", self.engine.last_event_id())
                return
            if item is CLOSED:
                return
            chunks: list[bytes] = []
            while True:
                if item["id"] > last:
                    chunks.append(self.cache.get(item))
                    last = item["id"]
                if len(chunks) >= BATCH_EVENTS:
                    break
                item = sub.get_nowait()
                if not isinstance(item, dict):
                    break
            if chunks:
                last_write = now
                yield Frame(b"".join(chunks))
            if actor.session_id is not None and now >= next_check:
                next_check = now + heartbeat
                if not self._session_live(actor):
                    return
            if isinstance(item, dict) or item is HEARTBEAT:
                continue
            if item is RESYNC:
                yield resync_frame("lagged", self.engine.last_event_id())
            return
