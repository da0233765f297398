"""Bounded writes for streams, and clean-up when a request ends however it ends.

``shared/notes/runtime.md`` (Stalled readers): a frame "cannot be written to
a peer that is not reading and the worker has no write timeout: close such
a connection after a bounded wait rather than waiting on it." gunicorn's
``send()`` waits (``drain``) while the socket's write buffer is full, with
no limit. :class:`StreamGuard` is an ASGI wrapper around each of the
room's apps that watches every body ``send()`` of an event stream
(response ``Content-Type: text/event-stream``): one that has waited longer
than ``timeout`` seconds gets its request task cancelled, so the worker
stops serving it; gunicorn then closes the connection (the kernel keeps the
unread bytes until the peer reads or goes away). A single sweeper task per
process checks the in-flight writes every ``timeout / 4`` seconds (at most
1 s), so the cost of a send is two attribute stores.

Ordinary responses are not guarded: a slow client may legitimately take a
while to read a large document.

:func:`on_request_end` registers a callable (a stream's
``Subscription.close``) that runs when the request finishes, fails or is
cancelled, so a stream cut off inside Falcon's SSE loop never leaves a
subscriber behind in the hub. :func:`on_disconnect` registers one that
runs as soon as the server reports the client gone (``http.disconnect``
from ``receive()``, which Falcon's SSE loop watches), so a stream waiting
for events, or in the middle of a replay, ends at once rather than at its
next write.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable

log = logging.getLogger("commonroom.live")

#: Scope key holding the callables :func:`on_request_end` registered.
CLEANUP_KEY = "commonroom.on_request_end"
#: Scope key holding the callables :func:`on_disconnect` registered.
DISCONNECT_KEY = "commonroom.on_disconnect"
#: Scope key holding the request's :class:`_Exchange` (for :func:`exchange_of`).
EXCHANGE_KEY = "commonroom.exchange"


def on_request_end(scope: dict, callback: Callable[[], Any]) -> None:
    """Run ``callback()`` when the request ends (needs :class:`StreamGuard` outside)."""
    scope.setdefault(CLEANUP_KEY, []).append(callback)


def on_disconnect(scope: dict, callback: Callable[[], Any]) -> None:
    """Run ``callback()`` when ``receive()`` reports ``http.disconnect`` (needs
    :class:`StreamGuard` outside); at most once, and never after the request ended."""
    scope.setdefault(DISCONNECT_KEY, []).append(callback)


def exchange_of(scope: dict) -> "_Exchange | None":
    """The request's exchange (its guarded ``send``), when :class:`StreamGuard` serves it."""
    return scope.get(EXCHANGE_KEY)


class Suspended:
    """The rest of a coroutine that could not finish at once: a body ``send`` (the socket's buffer is full),
    a ``receive`` (the body is not there yet).

    Awaiting it resumes the coroutine each time what it waits for is done, in
    the awaiting task (cancelling that task cancels the coroutine), and gives
    what the coroutine returns. Built by :meth:`_Exchange.write_now` and
    ``commonroom.bodyguard.BodyGuard``.
    """

    __slots__ = ("coro", "waiting")

    def __init__(self, coro: Any, waiting: Any):
        self.coro = coro
        self.waiting = waiting

    def __await__(self) -> Any:
        coro, waiting = self.coro, self.waiting
        while True:
            try:
                yield waiting  # the task waits on what the send waits on (a Future, or None: one loop turn)
            except BaseException as exc:  # cancelled while waiting: the send gets the exception
                try:
                    waiting = coro.throw(exc)
                except StopIteration as done:
                    return done.value
                continue
            try:
                waiting = coro.send(None)
            except StopIteration as done:
                return done.value


def _run_all(callbacks: Any, what: str) -> None:
    for callback in callbacks:
        try:
            callback()
        except Exception:
            log.exception("%s failed", what)


def _is_event_stream(headers: Any) -> bool:
    for name, value in headers or ():
        if name.lower() == b"content-type":
            return value.split(b";")[0].strip().lower() == b"text/event-stream"
    return False


class _Watch:
    __slots__ = ("task", "since", "cancelled")

    def __init__(self, task: asyncio.Task | None):
        self.task = task
        self.since: float | None = None
        self.cancelled = False


class _Exchange:
    """One request's ``send`` and ``receive`` as :class:`StreamGuard` hands them to the app.

    A slotted object rather than two closures: an open stream keeps it for
    its whole life, so its size counts per subscriber (~200 B instead of ~600).
    """

    __slots__ = ("guard", "scope", "inner_receive", "inner_send", "watch", "loop")

    def __init__(self, guard: "StreamGuard", scope: dict[str, Any], receive: Callable[[], Awaitable[dict[str, Any]]],
                 send: Callable[[dict[str, Any]], Awaitable[None]], loop: asyncio.AbstractEventLoop):
        self.guard = guard
        self.scope = scope
        self.inner_receive = receive
        self.inner_send = send
        self.watch: _Watch | None = None
        self.loop = loop

    async def send(self, message: dict) -> None:
        """Send ``message``; an event stream's body writes are timed (the sweeper cuts a stalled one)."""
        watch = self.watch
        if watch is None:
            if message["type"] == "http.response.start" and _is_event_stream(message.get("headers")):
                watch = self.watch = _Watch(asyncio.current_task())
                self.guard._watches.add(watch)
                self.guard._ensure_sweeper(self.loop)
            await self.inner_send(message)
            return
        watch.since = self.loop.time()
        try:
            await self.inner_send(message)
        finally:
            watch.since = None

    def write_now(self, data: bytes) -> Suspended | None:
        """Send ``data`` as the next body chunk of an open event stream, without a task switch.

        gunicorn's ``send`` of a body chunk writes to the socket and returns at
        once unless the socket's buffer is full; this runs it to that point
        in the caller (the hub's delivery). None: sent. Otherwise the bytes
        are with the transport and the :class:`Suspended` rest of the send
        (waiting for the buffer to drain) must be awaited with
        :meth:`finish` before anything else is sent. An exception of the
        send propagates (nothing more was sent).
        """
        coro: Any = self.inner_send({"type": "http.response.body", "body": data, "more_body": True})
        try:
            waiting = coro.send(None)
        except StopIteration:
            return None
        return Suspended(coro, waiting)

    async def finish(self, pending: Suspended) -> None:
        """Await the rest of a :meth:`write_now` send, timed like any other stream write."""
        watch = self.watch
        if watch is not None:
            watch.since = self.loop.time()
        try:
            await pending
        finally:
            if watch is not None:
                watch.since = None

    async def receive(self) -> dict:
        """The next event; ``http.disconnect`` runs the request's disconnect clean-ups first."""
        message = await self.inner_receive()
        if message["type"] == "http.disconnect":
            _run_all(self.scope.pop(DISCONNECT_KEY, ()), "disconnect clean-up")
        return message


class StreamGuard:
    """ASGI wrapper: bound the wait of every event-stream write to ``timeout`` s."""

    def __init__(self, app: Callable, timeout: float = 10.0):
        self.app = app
        self.timeout = timeout
        self.stalled = 0  # streams cut off so far (for the logs and tests)
        self._watches: set[_Watch] = set()
        self._sweeper: asyncio.Task | None = None

    async def __call__(self, scope: dict[str, Any], receive: Callable[[], Awaitable[dict[str, Any]]],
                       send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:  # noqa: D102 - ASGI
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        exchange = _Exchange(self, scope, receive, send, asyncio.get_running_loop())
        scope[EXCHANGE_KEY] = exchange
        try:
            # A cut-off stream ends in CancelledError, which gunicorn takes as
            # a client gone: it closes the connection without an error log.
            await self.app(scope, exchange.receive, exchange.send)
        finally:
            if exchange.watch is not None:
                self._watches.discard(exchange.watch)
            scope.pop(DISCONNECT_KEY, None)
            scope.pop(EXCHANGE_KEY, None)
            _run_all(scope.pop(CLEANUP_KEY, ()), "request clean-up")

    def _ensure_sweeper(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = loop.create_task(self._sweep())

    async def _sweep(self) -> None:
        interval = min(1.0, self.timeout / 4)
        loop = asyncio.get_running_loop()
        while self._watches:
            await asyncio.sleep(interval)
            now = loop.time()
            for watch in list(self._watches):
                if watch.since is not None and not watch.cancelled and now - watch.since > self.timeout:
                    watch.cancelled = True
                    self.stalled += 1
                    log.warning("closing an event stream whose reader stalled for %.0f s", self.timeout)
                    if watch.task is not None:
                        watch.task.cancel()
