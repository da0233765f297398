"""The one stream primitive: hub → replay → live → heartbeat → end, cleaned up on every path.

Every event stream of the room is a :class:`LiveStream` opened through the
room's :class:`Streams` (one per worker, built in ``commonroom/room.py``):
``GET /workspace/observe`` (``live/sse.py``), ``GET /mcp`` and the POST
answered with a stream (``mcp/stream.py``; ``subscriptions/listen``). An
adapter only supplies an :class:`Encoder`, which maps what happens to SSE
bytes; the lifecycle is written once, here:

1. **subscribe** to the hub first (``Hub.subscribe(session_id, accept)``),
   so nothing committed from now on can be missed;
2. **replay** from the cursor (``after``, an event id; ``None`` = no replay)
   out of the ring, page by page (``engine.events_after``); a cursor no
   longer covered by the ring ends the stream with ``cursor_lost``;
3. **live**: hub events in id order, skipping ids already sent, batched (at
   most :data:`BATCH_EVENTS` per write). With a ``direct`` encoder (observe)
   and the request's guarded send at hand, a stream that waits with nothing
   queued has the hub write each commit's events from the delivery itself
   (:meth:`LiveStream._direct`: one socket write per stream, no task wake-up;
   what cannot be written at once, a full socket buffer, is finished by the
   stream's own task, bounded by the write guard, before anything else);
4. **heartbeat** after ``heartbeat_seconds`` without a write (the session is
   rechecked there, one answer per session per second; an expired session's
   stream also ends at its ``expires_at``);
5. **end**, with one reason (:data:`END_REASONS`): ``lagged`` (the hub
   dropped the subscriber), ``cursor_lost``, ``revoked`` (the hub ended the
   session's subscriptions), ``expired``, ``shutdown`` (``Hub.close``),
   ``cancelled`` (:meth:`Streams.end` by key) or ``disconnected`` (the client
   went away, the request was cut off, or :meth:`LiveStream.close`).
   ``Encoder.end(reason, last_event_id)`` may add a last frame (observe's
   ``event: resync``, listen's final result); nothing is written after a
   disconnect.

Cleanup (hub unsubscribe, the key released) is :meth:`LiveStream.close`:
idempotent, and run by the frame generator's ``finally``, by
:func:`respond`'s request-end hook (``guard.on_request_end``, run by
``StreamGuard`` however the request ends: normally, by an exception, or
cancelled as a stalled reader) and by its disconnect hook
(``guard.on_disconnect``: as soon as the server reports
``http.disconnect``, even mid-replay or while the stream waits for events).

Board long-polls use :meth:`Streams.wait_next` (:mod:`commonroom.live.longpoll`:
the same hub subscription, one answer, then unsubscribed).
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any, AsyncIterator, Callable, Hashable

from ..clock import parse_rfc3339
from ..engine.history import REPLAY_PAGE
from ..protocol import SSE_HEARTBEAT
from .guard import Suspended, exchange_of, on_disconnect, on_request_end
from .base import (CANCELLED, CURSOR_LOST, DISCONNECTED, END_REASONS, EXPIRED, LAGGED, REVOKED, SHUTDOWN, Source,
                   accepts)
from .hub import CLOSED, HEARTBEAT, RESYNC, Hub, Subscription
from .longpoll import Wait, wait_next


__all__ = [
    "BATCH_EVENTS", "CANCELLED", "CURSOR_LOST", "DISCONNECTED", "END_REASONS", "EXPIRED", "Encoder",
    "Frame", "HEARTBEAT_BYTES", "LAGGED", "LiveStream", "REVOKED", "SHUTDOWN", "Streams", "accepts", "respond",
]

#: Most events handed to one ``Encoder.events`` call (one socket write).
BATCH_EVENTS = 64
#: How long one answer of "is this session live?" serves a session's streams (s).
LIVE_CACHE_SECONDS = 1.0
#: The comment line every encoder sends as its heartbeat by default.
HEARTBEAT_BYTES = f": {SSE_HEARTBEAT}\n\n".encode()


class Frame:
    """Pre-serialised SSE bytes that Falcon's ``resp.sse`` loop writes as is."""

    __slots__ = ("data",)

    def __init__(self, data: bytes):
        self.data = data

    def serialize(self, handler: Any = None) -> bytes:  # noqa: D102 - falcon protocol
        return self.data


class Encoder:
    """Maps one stream's happenings to SSE bytes; subclass per adapter.

    Every method returns the bytes of zero or more complete SSE blocks
    (each ending with a blank line), or ``None`` to write nothing. Called on
    the event loop; must not block and must not mutate the event dicts.
    """

    #: True when :meth:`events` depends only on its argument (no state of its own):
    #: the hub may then have the stream write live events at once, from the delivery
    #: itself, instead of waking the stream's task for each (``LiveStream._direct``).
    direct = False

    def open(self) -> bytes | None:
        """Sent first, once, before any replay (observe: ``retry:``; MCP: a comment)."""
        return None

    def events(self, events: list[dict[str, Any]]) -> bytes | None:
        """One batch of events (1 to :data:`BATCH_EVENTS`, id order, each id once)."""
        raise NotImplementedError

    def heartbeat(self) -> bytes | None:
        """After ``heartbeat_seconds`` without a write; default ``: heartbeat``."""
        return HEARTBEAT_BYTES

    def end(self, reason: str, last_event_id: int | None) -> bytes | None:
        """The last frame for ``reason`` (one of :data:`END_REASONS`, never
        ``disconnected``); ``last_event_id`` is the room's newest id for
        ``lagged``/``cursor_lost``, else None. Default: nothing."""
        return None


class LiveStream:
    """One open stream (build with :meth:`Streams.open`).

    ``frames()`` is the async iterator of :class:`Frame` to hand to Falcon
    (``resp.sse``); iterate it once. ``reason`` is None while the stream
    runs, then one of :data:`END_REASONS`. ``close()`` ends it from outside.
    """

    __slots__ = ("streams", "encoder", "sub", "session_id", "expires_at", "accept", "after", "key", "reason",
                 "exchange", "last", "last_write", "next_check", "deadline", "pending", "_closed", "__weakref__")

    def __init__(self, streams: "Streams", encoder: Encoder, sub: Subscription, *,
                 session_id: str | None, expires_at: str | None, accept: Callable[[dict], bool] | None,
                 after: int | None, key: Hashable | None):
        self.streams = streams
        self.encoder = encoder
        self.sub = sub
        self.session_id = session_id
        self.expires_at = expires_at
        self.accept = accept
        self.after = after
        self.key = key
        self.reason: str | None = None
        #: The request's guarded send (set by :func:`respond`); with it and a
        #: ``direct`` encoder, live events are written from the hub's delivery.
        self.exchange: Any = None
        self.last = 0  # the newest event id written (live phase)
        self.last_write = 0.0  # loop time of the last write (live phase)
        self.next_check = 0.0  # loop time of the next session recheck (live phase)
        self.deadline: float | None = None  # loop time the session expires (live phase; None: never)
        self.pending: Suspended | None = None  # a direct write waiting for the socket to drain
        self._closed = False

    @property
    def ended(self) -> bool:
        """True once the stream has a reason to end (no more events will be written)."""
        return self.reason is not None

    def close(self, reason: str = DISCONNECTED) -> None:
        """End the stream and clean up (hub unsubscribe, key released). Idempotent.

        A running ``frames()`` wakes up, writes ``Encoder.end(reason)`` unless
        ``reason`` is ``disconnected``, and stops.
        """
        if self.reason is None:
            self.reason = reason
        if self._closed:
            return
        self._closed = True
        self.sub.direct = None
        self.sub.close()
        self.streams._release(self)

    def _finish(self, reason: str) -> Frame | None:
        """Record ``reason`` (first one wins), clean up, and the encoder's last frame."""
        if self.reason is None:
            self.reason = reason
        reason = self.reason
        self.close(reason)
        if reason == DISCONNECTED:
            return None
        last = self.streams.source.last_event_id() if reason in (LAGGED, CURSOR_LOST) else None
        data = self.encoder.end(reason, last)
        return Frame(data) if data else None

    def _reason_for(self, item: Any) -> str:
        if self.reason is not None:
            return self.reason
        if item is RESYNC:
            return LAGGED
        if self.streams.hub.closed:
            return SHUTDOWN
        return REVOKED

    async def frames(self) -> AsyncIterator[Frame]:
        """Open frame, replay after ``after``, then live until an end (see the module docstring)."""
        try:
            data = self.encoder.open()
            if data and self.reason is None:
                yield Frame(data)
            last = 0 if self.after is None else self.after
            if self.after is not None:
                source = self.streams.source
                while self.reason is None:
                    if source.cursor_lost(last):
                        frame = self._finish(CURSOR_LOST)
                        if frame is not None:
                            yield frame
                        return
                    page = source.events_after(last, REPLAY_PAGE)
                    batch = [e for e in page if accepts(self.accept, e)]
                    if page:
                        last = page[-1]["id"]
                    if batch:
                        data = self.encoder.events(batch)
                        if data:
                            yield Frame(data)
                    if len(page) < REPLAY_PAGE or self.sub.ended:
                        break
            async for frame in self._live(last):
                yield frame
        finally:
            self.close()

    def _expiry_deadline(self, loop: asyncio.AbstractEventLoop) -> float | None:
        if self.session_id is None or not self.expires_at:
            return None
        remaining = (parse_rfc3339(self.expires_at) - self.streams.source.clock.now()).total_seconds()
        return loop.time() + max(0.0, remaining)

    def _direct(self, events: list[dict[str, Any]]) -> bool:
        """Write ``events`` now (the hub calls this while the stream waits with an empty queue).

        False: not written, the hub queues them and wakes the stream (it must
        recheck its session first, or a write is still draining). When the
        socket's buffer is full the bytes stay with the transport and the
        stream is woken to await the rest of the send before anything else.
        """
        if self.pending is not None or self.reason is not None or len(events) > BATCH_EVENTS:
            return False  # a commit bigger than a write's batch goes the queue's way (bounded, resync)
        now = time.monotonic()  # the event loop's clock (BaseEventLoop.time)
        if self.session_id is not None and now >= self.next_check:
            return False
        if self.deadline is not None and now >= self.deadline:
            return False  # the session has expired: the stream ends at its next wake, nothing more goes out
        last = self.last
        batch = [e for e in events if e["id"] > last] if events[0]["id"] <= last else events
        if not batch:
            return True
        data = self.encoder.events(batch)
        if data:
            self.pending = self.exchange.write_now(data)
            self.last_write = now
        self.last = batch[-1]["id"]
        if self.pending is not None:
            self.sub.wake()
        return True

    async def _live(self, last: int) -> AsyncIterator[Frame]:
        loop = asyncio.get_running_loop()
        sub, encoder, streams = self.sub, self.encoder, self.streams
        heartbeat = streams.heartbeat_seconds
        session_id = self.session_id
        deadline = self.deadline = self._expiry_deadline(loop)
        self.last = last
        self.last_write = loop.time()
        # Streams opened together must not all recheck their session at once.
        self.next_check = self.last_write + heartbeat * (0.5 + random.random())
        if self.exchange is not None and encoder.direct:
            sub.direct = self._direct  # cleared by close()
        while True:
            if self.pending is not None:
                await self._finish_pending()
            if self.reason is not None:  # closed from outside while we were writing
                frame = self._finish(self.reason)
                if frame is not None:
                    yield frame
                return
            now = loop.time()
            wait = self.last_write + heartbeat - now
            if deadline is not None:
                wait = min(wait, deadline - now)
            item = await sub.get(max(wait, 0.0))
            if self.pending is not None:  # what was written directly goes out before anything else
                await self._finish_pending()
            now = loop.time()
            if item is HEARTBEAT:
                if deadline is not None and now >= deadline:
                    if not streams.session_live(session_id, fresh=True):
                        frame = self._finish(EXPIRED)
                        if frame is not None:
                            yield frame
                        return
                    deadline = self.deadline = now + 1.0  # clocks disagree by a hair: look again soon
                if now - self.last_write >= heartbeat * 0.999:
                    if not streams.session_live(session_id):
                        frame = self._finish(EXPIRED)
                        if frame is not None:
                            yield frame
                        return
                    self.next_check = now + heartbeat
                    self.last_write = now
                    data = encoder.heartbeat()
                    if data:
                        yield Frame(data)
                continue
            if not isinstance(item, dict):  # RESYNC or CLOSED
                frame = self._finish(self._reason_for(item))
                if frame is not None:
                    yield frame
                return
            batch, self.last, item = sub.take_after(item, self.last, BATCH_EVENTS)
            if batch:
                data = encoder.events(batch)
                if data:
                    self.last_write = now
                    yield Frame(data)
            if session_id is not None and now >= self.next_check:
                self.next_check = now + heartbeat
                if not streams.session_live(session_id):
                    frame = self._finish(EXPIRED)
                    if frame is not None:
                        yield frame
                    return
            if isinstance(item, dict) or item is HEARTBEAT:
                continue
            frame = self._finish(self._reason_for(item))
            if frame is not None:
                yield frame
            return

    async def _finish_pending(self) -> None:
        pending, self.pending = self.pending, None
        if pending is not None:
            await self.exchange.finish(pending)


class Streams:
    """The room's streams: opens them on the hub, ends them by key, counts them.

    ``hub`` is the room's :class:`~commonroom.live.hub.Hub`; ``source`` reads
    the ring and sessions (the engine); ``heartbeat_seconds`` > 0 is the
    idle interval before a heartbeat frame.
    """

    def __init__(self, hub: Hub, source: Source, *, heartbeat_seconds: float = 15.0):
        if heartbeat_seconds <= 0:
            raise ValueError("heartbeat_seconds must be positive")
        self.hub = hub
        self.source = source
        self.heartbeat_seconds = heartbeat_seconds
        self._open: dict[LiveStream, None] = {}
        self._keys: dict[Hashable, LiveStream] = {}
        self._live_cache: dict[str, tuple[float, bool]] = {}

    @property
    def count(self) -> int:
        """Streams open right now (opened and not yet closed)."""
        return len(self._open)

    def open(self, encoder: Encoder, *, session_id: str | None = None, expires_at: str | None = None,
             accept: Callable[[dict], bool] | None = None, after: int | None = None,
             key: Hashable | None = None) -> LiveStream:
        """Subscribe now and return the stream (its frames start when iterated).

        ``session_id`` (None for the operator) lets a revocation end it;
        ``expires_at`` (RFC 3339) ends it when the session expires;
        ``accept(event) -> bool`` filters live and replayed events; ``after``
        is the replay cursor (an event id ≥ 0; None: no replay); ``key``
        names it for :meth:`end` (``ValueError`` if that key is open).
        Loop thread only. After ``Hub.close`` the stream ends at once
        (``shutdown``).
        """
        if key is not None and key in self._keys:
            raise ValueError(f"a stream with key {key!r} is already open")
        sub = self.hub.subscribe(session_id=session_id, accept=accept)
        stream = LiveStream(self, encoder, sub, session_id=session_id, expires_at=expires_at,
                            accept=accept, after=after, key=key)
        self._open[stream] = None
        if key is not None:
            self._keys[key] = stream
        return stream

    def get(self, key: Hashable) -> LiveStream | None:
        """The open stream named ``key``, else None."""
        return self._keys.get(key)

    def end(self, key: Hashable, reason: str = CANCELLED) -> bool:
        """End the stream named ``key`` (its encoder's ``end(reason)`` is its last
        frame); False when no such stream is open."""
        stream = self._keys.get(key)
        if stream is None:
            return False
        stream.close(reason)
        return True

    def _release(self, stream: LiveStream) -> None:
        self._open.pop(stream, None)
        if stream.key is not None and self._keys.get(stream.key) is stream:
            del self._keys[stream.key]

    def session_live(self, session_id: str | None, *, fresh: bool = False) -> bool:
        """Is ``session_id`` still live? Shares one answer per session for
        :data:`LIVE_CACHE_SECONDS` (a thousand streams of one session cost one
        query); ``fresh`` always asks the source. None (operator) is live."""
        if session_id is None:
            return True
        now = time.monotonic()
        cached = self._live_cache.get(session_id)
        if not fresh and cached is not None and now - cached[0] < LIVE_CACHE_SECONDS:
            return cached[1]
        live = self.source.session_live(session_id)
        if len(self._live_cache) >= 4096:
            self._live_cache.clear()
        self._live_cache[session_id] = (now, live)
        return live

    async def wait_next(self, after: int, timeout: float, *, session_id: str | None = None,
                        accept: Callable[[dict], bool] | None = None) -> Wait:
        """The board long-poll on this room's hub: :func:`commonroom.live.longpoll.wait_next`."""
        return await wait_next(self.hub, self.source, after, timeout, session_id=session_id, accept=accept)


def respond(req: Any, resp: Any, stream: LiveStream, *,
            content_type: str = "text/event-stream; charset=utf-8") -> None:
    """Answer the Falcon request with ``stream``: event-stream headers
    (``Cache-Control: no-store``, ``X-Accel-Buffering: no``), ``resp.sse``,
    and ``stream.close`` hooked to the request's end and to the client's
    disconnect (both need :class:`~commonroom.live.guard.StreamGuard`)."""
    resp.content_type = content_type
    resp.set_header("Cache-Control", "no-store")
    resp.set_header("X-Accel-Buffering", "no")
    on_request_end(req.scope, stream.close)
    on_disconnect(req.scope, stream.close)
    stream.exchange = exchange_of(req.scope)
    resp.sse = stream.frames()
