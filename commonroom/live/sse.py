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

The lifecycle (subscribe first, replay the ring after the cursor in pages,
then live events skipping ids already sent, heartbeats, the endings and
their clean-up) is the shared primitive :mod:`commonroom.live.stream`; this
module only maps events to frames (:class:`ObserveEncoder`): ``retry:``
first, one ``id:``/``event:``/``data:`` block per event, ``event: resync``
for the ``lagged`` and ``cursor_lost`` endings, nothing for the others
(revoked, expired, shutdown, disconnected).

Settings (environment of ``ce serve``): ``COMMONROOM_HEARTBEAT_SECONDS``
(default 15), ``COMMONROOM_STREAM_QUEUE`` (hub queue per subscriber, default
1024 events), ``COMMONROOM_STREAM_WRITE_TIMEOUT`` (see ``guard.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import falcon

from .. import jsontext
from ..engine import Actor, Engine
from ..engine.history import event_cursor
from ..errors import InvalidRequest
from ..protocol import SSE_EVENT_RESYNC, SSE_RETRY_MS
from .hub import Hub
from .stream import BATCH_EVENTS, CURSOR_LOST, LAGGED, LIVE_CACHE_SECONDS, Encoder, Frame, \
    Streams, respond

# BATCH_EVENTS (events per write) and LIVE_CACHE_SECONDS live in .stream.
__all__ = ["BATCH_EVENTS", "LIVE_CACHE_SECONDS", "Frame", "LiveSettings", "ObserveEncoder", "ObserveResource",
           "event_bytes", "parse_cursor", "resync_frame"]


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


RETRY_FRAME = Frame(f"retry: {SSE_RETRY_MS}\n\n".encode())  # sent first


def event_bytes(event: dict[str, Any]) -> bytes:
    """``id:``/``event:``/``data:`` lines of one event (compact JSON, one line)."""
    data = jsontext.dumps(event)
    return f"id: {event['id']}\nevent: {event['type']}\ndata: {data}\n\n".encode("utf-8")


def resync_frame(reason: str, last_event_id: int) -> Frame:
    """``event: resync`` with ``{"reason", "last_event_id"}`` (no id line)."""
    data = jsontext.dumps({"reason": reason, "last_event_id": last_event_id})
    return Frame(f"event: {SSE_EVENT_RESYNC}\ndata: {data}\n\n".encode())


def parse_cursor(req: falcon.asgi.Request) -> int | None:
    """``Last-Event-ID`` (preferred) or ``since_event_id``; None when neither.

    The one cursor form of the room: an event id as a decimal string, the
    same as ``/workspace/history``'s ``cursor``/``next_cursor``. Anything
    else is ``InvalidRequest`` (400) with ``details.parameter`` naming it.
    """
    given = req.params.get("since_event_id")
    if isinstance(given, list):
        raise InvalidRequest(f"since_event_id is given {len(given)} times; give it once",
                             details={"parameter": "since_event_id"})
    for name, value in (("Last-Event-ID", req.get_header("Last-Event-ID")), ("since_event_id", given)):
        after = event_cursor(value, name)
        if after is not None:
            return after
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


class ObserveEncoder(Encoder):
    """Observe's frames: ``retry:``, event blocks with ids, ``event: resync`` at a lag or lost cursor."""

    __slots__ = ("cache",)
    direct = True  # events() is the shared frames of its argument, nothing else

    def __init__(self, cache: _FrameCache):
        self.cache = cache

    def open(self) -> bytes:
        """``retry: 5000``."""
        return RETRY_FRAME.data

    def events(self, events: list[dict[str, Any]]) -> bytes:
        """One ``id``/``event``/``data`` block per event (shared serialisation)."""
        if len(events) == 1:
            return self.cache.get(events[0])
        get = self.cache.get
        return b"".join([get(e) for e in events])

    def end(self, reason: str, last_event_id: int | None) -> bytes | None:
        """``event: resync`` for ``lagged`` and ``cursor_lost``; nothing otherwise."""
        if reason in (LAGGED, CURSOR_LOST):
            return resync_frame(reason, last_event_id or 0).data
        return None


class ObserveResource:
    """``GET /workspace/observe`` (Falcon ASGI resource).

    ``streams`` is the room's :class:`~commonroom.live.stream.Streams` (one
    is made on ``hub`` when not given).
    """

    def __init__(self, engine: Engine, hub: Hub, settings: LiveSettings | None = None,
                 streams: Streams | None = None):
        self.engine = engine
        self.hub = hub
        self.settings = settings or LiveSettings()
        self.streams = streams or Streams(hub, engine, heartbeat_seconds=self.settings.heartbeat_seconds)
        self.cache = _FrameCache()
        self.encoder = ObserveEncoder(self.cache)

    async def on_get(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        """Check the capability and cursor, then hand Falcon the frame stream."""
        actor: Actor = req.context.actor  # holding "observe": the edge checked (commonroom.http.edge)
        after = parse_cursor(req)
        stream = self.streams.open(self.encoder, session_id=actor.session_id, expires_at=actor.expires_at,
                                   after=after)
        respond(req, resp, stream)
