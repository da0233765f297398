"""The live hub: one in-process publisher, many bounded subscribers.

Seed ``tasks-and-handoffs.txt`` (Recovery): "Live delivery happens after that
commit and does not wait for a client." :meth:`Hub.publish` is handed the
events of each commit (``Store.write`` calls it after ``COMMIT``); it appends
each event to every interested subscriber's bounded queue and returns. It
never blocks and never waits for a reader.

Every stream of the room uses this hub: ``GET /workspace/observe``, the MCP
``GET /mcp`` stream and ``subscriptions/listen``, the board long-polls.

Shapes:

- an *event* is the wire dict of ``commonroom.store.event_dict`` (schema
  ``events.json#/$defs/Event``): ``{id, type, time, actor, payload}``;
  the hub passes the same dict object to every subscriber: never mutate it.
- :meth:`Subscription.get` returns an event, or one of three sentinels:
  :data:`HEARTBEAT` (the timeout passed with nothing to deliver; the stream
  is still live), :data:`RESYNC` (the queue overflowed: this subscriber
  lagged and was dropped; the client must reread state), :data:`CLOSED`
  (the subscription ended: closed, its session revoked or expired, or the
  room shutting down). RESYNC and CLOSED are terminal and sticky: every
  later ``get()`` returns the same sentinel at once, and events still
  queued are discarded.

Direct delivery: a subscriber with ``direct`` set (an observe stream, see
``LiveStream._direct``) that is waiting in ``get()`` with an empty queue is
handed its accepted events at once and writes them itself; this spares a
task wake-up per subscriber per commit (at 10,000 observers, the cost that
decides delivery latency). It answers False to be queued as usual.

Threads: everything runs on the event loop of the worker. ``publish`` may
be called from another thread; it then hands the events to the loop with
``call_soon_threadsafe``. ``subscribe``, ``get``, ``close`` and
``end_session`` are for the loop thread.

Revocation: a ``session.revoked`` event (payload ``{session_id}``) ends that
session's subscriptions as it is published (they get CLOSED), so a revoked
session's streams stop within the same loop turn as the commit.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any, Callable

log = logging.getLogger("commonroom.live")

__all__ = ["CLOSED", "HEARTBEAT", "RESYNC", "Hub", "Subscription"]


class _Sentinel:
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self) -> str:
        return self.name


#: The subscriber lagged (its queue was full) and was dropped; reread state.
RESYNC = _Sentinel("RESYNC")
#: The subscription ended (closed, session revoked/expired, room stopping).
CLOSED = _Sentinel("CLOSED")
#: ``get(timeout)`` found nothing within ``timeout``; the stream is still live.
HEARTBEAT = _Sentinel("HEARTBEAT")

#: Default bound of each subscriber's queue, in events.
DEFAULT_QUEUE_SIZE = 1024
#: ``get(timeout)`` of at least this many seconds uses the hub's shared ticker
#: (one timer for all waiters, firing every :data:`TICK_SECONDS`), so such a
#: HEARTBEAT may come up to that much late; shorter timeouts are exact.
COARSE_TIMEOUT = 1.0
TICK_SECONDS = 0.25


def _wake(waiter: asyncio.Future | None) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(None)


class Subscription:
    """One subscriber's bounded queue. Build with :meth:`Hub.subscribe`.

    ``session_id`` (may be None for the operator) lets the hub end it when
    the session is revoked; ``accept(event) -> bool`` filters what is queued
    (called on the loop thread for each published event; an exception counts
    as False and is logged).
    """

    __slots__ = ("hub", "session_id", "accept", "queue", "state", "direct", "_waiter", "__weakref__")

    def __init__(self, hub: "Hub", session_id: str | None, accept: Callable[[dict], bool] | None):
        self.hub = hub
        self.session_id = session_id
        self.accept = accept
        # a list, not a deque: an empty deque holds a 64-slot block (~760 B) for every
        # idle stream; the queue is short and bounded, so pop(0) is a small memmove
        self.queue: list[dict[str, Any]] = []
        self.state: _Sentinel | None = None
        #: Set by a stream that can write events itself (``LiveStream._direct``): while
        #: it waits with an empty queue, the hub hands it accepted events at once;
        #: ``direct(events) -> bool``, False = queue them as usual.
        self.direct: Callable[[list[dict[str, Any]]], bool] | None = None
        self._waiter: asyncio.Future | None = None

    @property
    def ended(self) -> bool:
        """True once RESYNC or CLOSED is the answer of every ``get()``."""
        return self.state is not None

    async def get(self, timeout: float | None = None) -> dict[str, Any] | _Sentinel:
        """The next event, or RESYNC / CLOSED (terminal), or HEARTBEAT after ``timeout`` s.

        ``timeout=None`` waits until something arrives. Cancelling the caller
        leaves the subscription as it was.
        """
        if self.state is not None:
            return self.state
        if self.queue:
            return self.queue.pop(0)
        if timeout is not None and timeout <= 0:
            return HEARTBEAT
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        self._waiter = waiter
        timer = None
        coarse = timeout is not None and timeout >= COARSE_TIMEOUT
        if coarse and timeout is not None:  # heartbeat-sized waits share the hub's ticker instead of a timer each
            self.hub._wait_until(self, loop.time() + timeout, loop)
        elif timeout is not None:
            timer = loop.call_later(timeout, _wake, waiter)
        try:
            await waiter
        finally:
            self._waiter = None
            if timer is not None:
                timer.cancel()
            if coarse:
                self.hub._deadlines.pop(self, None)
        if self.state is not None:
            return self.state
        if self.queue:
            return self.queue.pop(0)
        return HEARTBEAT

    def get_nowait(self) -> dict[str, Any] | _Sentinel:
        """Like ``get(0)`` without awaiting: an event, RESYNC, CLOSED or HEARTBEAT (empty)."""
        if self.state is not None:
            return self.state
        if self.queue:
            return self.queue.pop(0)
        return HEARTBEAT

    def take_after(self, item: dict[str, Any], last: int, limit: int) -> tuple[list[dict[str, Any]], int, Any]:
        """The queued events after event id ``last``, starting with ``item`` (an event already got), at most ``limit``.

        Returns ``(events, the newest id taken or last, what ended the take)``:
        the last event taken when ``limit`` did, else what :meth:`get_nowait`
        answered that is not an event (HEARTBEAT when the queue is empty,
        RESYNC or CLOSED). Events at or below ``last`` are skipped.
        """
        events: list[dict[str, Any]] = []
        while True:
            if item["id"] > last:
                events.append(item)
                last = item["id"]
            if len(events) >= limit:
                return events, last, item
            following = self.get_nowait()
            if not isinstance(following, dict):
                return events, last, following
            item = following

    def close(self) -> None:
        """Unsubscribe; a pending or later ``get()`` returns CLOSED."""
        self.hub._drop(self)
        self._end(CLOSED)

    def wake(self) -> None:
        """Wake a pending ``get()`` with nothing queued (it answers HEARTBEAT); a direct
        writer uses it to have its stream finish a send that had to wait."""
        _wake(self._waiter)

    # -- hub side --------------------------------------------------------

    def _end(self, state: _Sentinel) -> None:
        if self.state is None:
            self.state = state
            self.queue.clear()
        _wake(self._waiter)


class Hub:
    """The room's live publisher (see the module docstring).

    ``queue_size`` bounds each subscriber's queue (events). Counters for
    operators and the benchmark: :attr:`subscribers`, :attr:`published`
    (events), :attr:`lagged` (subscribers dropped with RESYNC).
    """

    def __init__(self, *, queue_size: int = DEFAULT_QUEUE_SIZE):
        if queue_size < 1:
            raise ValueError("queue_size must be at least 1")
        self.queue_size = queue_size
        self.published = 0
        self.lagged = 0
        self._subs: dict[Subscription, None] = {}  # insertion-ordered set
        self._by_session: dict[str, set[Subscription]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._closed = False
        self._deadlines: dict[Subscription, float] = {}
        self._ticker: asyncio.TimerHandle | None = None
        #: Events published off the loop, waiting for the one scheduled delivery (see publish).
        self._pending: list[dict[str, Any]] = []
        self._pending_lock = threading.Lock()

    @property
    def subscribers(self) -> int:
        """Live subscriptions right now."""
        return len(self._subs)

    @property
    def closed(self) -> bool:
        """True after :meth:`close`: new subscriptions are born CLOSED."""
        return self._closed

    def _bind(self) -> None:
        if self._loop is None:
            try:
                self._loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            self._loop_thread = threading.get_ident()

    def subscribe(
        self,
        *,
        session_id: str | None = None,
        accept: Callable[[dict], bool] | None = None,
    ) -> Subscription:
        """A new subscription receiving every event published from now on.

        After :meth:`close` the subscription is already CLOSED.
        """
        self._bind()
        sub = Subscription(self, session_id, accept)
        if self._closed:
            sub._end(CLOSED)
            return sub
        self._subs[sub] = None
        if session_id is not None:
            self._by_session.setdefault(session_id, set()).add(sub)
        return sub

    def publish(self, events: list[dict[str, Any]]) -> None:
        """Queue ``events`` (one commit's, in id order) for every subscriber.

        Never blocks. Thread-safe: off the loop thread it defers to the loop,
        and commits published while a delivery is already scheduled join it
        (one wake-up of the loop per burst, not per commit; order kept).
        A subscriber whose queue would overflow is dropped (RESYNC).
        """
        if not events:
            return
        loop = self._loop
        if loop is not None and self._loop_thread != threading.get_ident():
            if loop.is_closed():
                return
            with self._pending_lock:
                scheduled = bool(self._pending)
                self._pending.extend(events)
            if scheduled:
                return
            try:
                loop.call_soon_threadsafe(self._deliver_pending)
            except RuntimeError:  # loop closed between the check and the call
                pass
            return
        if self._pending:  # published off the loop before these: theirs first
            self._deliver_pending()
        self._deliver(events)

    def _deliver_pending(self) -> None:
        """On the loop: deliver everything published off the loop since the last delivery."""
        with self._pending_lock:
            events, self._pending = self._pending, []
        if events:
            self._deliver(events)

    def _deliver(self, events: list[dict[str, Any]]) -> None:
        self.published += len(events)
        limit = self.queue_size
        # a revocation ends its session's streams with the queued events unsent: no direct writes then
        revoking = any(event.get("type") == "session.revoked" for event in events)
        for sub in list(self._subs):
            accept = sub.accept
            accepted = events if accept is None else self._accepted(accept, events)
            if not accepted:
                continue
            queue = sub.queue
            direct = sub.direct
            if direct is not None and not queue and not revoking:
                waiter = sub._waiter
                if waiter is not None and not waiter.done():  # parked in get(): write now, no wake-up
                    try:
                        if direct(accepted):
                            continue
                    except Exception:
                        log.exception("direct delivery failed; queueing")
            if len(queue) + len(accepted) > limit:
                self.lagged += 1
                self._drop(sub)
                sub._end(RESYNC)
                continue
            queue.extend(accepted)
            _wake(sub._waiter)
        if revoking:
            for event in events:
                if event.get("type") == "session.revoked":
                    session_id = (event.get("payload") or {}).get("session_id")
                    if session_id:
                        self.end_session(session_id)

    @staticmethod
    def _accepted(accept: Callable[[dict], bool], events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for event in events:
            try:
                if accept(event):
                    out.append(event)
            except Exception:
                log.exception("subscriber filter failed on event %s", event.get("id"))
        return out

    def end_session(self, session_id: str) -> None:
        """End every subscription of ``session_id`` (their ``get()`` returns CLOSED)."""
        for sub in list(self._by_session.get(session_id, ())):
            self._drop(sub)
            sub._end(CLOSED)

    def close_nowait(self) -> None:
        """End every subscription (CLOSED) and refuse new ones; loop thread only."""
        self._closed = True
        for sub in list(self._subs):
            self._drop(sub)
            sub._end(CLOSED)

    async def close(self) -> None:
        """At shutdown: every subscription's ``get()`` returns CLOSED."""
        self.close_nowait()
        await asyncio.sleep(0)  # let the woken streams run their endings

    def _wait_until(self, sub: Subscription, deadline: float, loop: asyncio.AbstractEventLoop) -> None:
        self._deadlines[sub] = deadline
        if self._ticker is None:
            self._ticker = loop.call_later(TICK_SECONDS, self._tick, loop)

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        now = loop.time()
        for sub, deadline in list(self._deadlines.items()):
            if deadline <= now:
                del self._deadlines[sub]
                _wake(sub._waiter)
        self._ticker = loop.call_later(TICK_SECONDS, self._tick, loop) if self._deadlines else None

    def _drop(self, sub: Subscription) -> None:
        self._subs.pop(sub, None)
        if sub.session_id is not None:
            peers = self._by_session.get(sub.session_id)
            if peers is not None:
                peers.discard(sub)
                if not peers:
                    del self._by_session[sub.session_id]
