"""The worker's ASGI wrapper: no body read before a resource asks, the whole body within a deadline.

Falcon's ASGI app awaits the first ``http.request`` event before it runs
anything, and asking gunicorn for it makes gunicorn write ``100 Continue``
and wait for the body; and gunicorn's wait for a body is per chunk, a wait
that expires reaching the app as ``http.disconnect`` (which Falcon takes as
the end of the body). :class:`BodyGuard` gives Falcon an empty first body
event (so nothing is read, and no ``100 Continue`` is written, until a
resource asks for the body: after authentication and after the
``Content-Length`` check of :func:`commonroom.wire.read_body`), bounds the
whole body to ``body_timeout`` seconds from the end of the headers (``408``,
connection closed), and never lets the app see a body cut short (a
disconnect or a gunicorn wait expiry in the middle of the body aborts the
request instead of ending the body early). See ``commonroom/worker.py``
for the rest of what the worker adds to gunicorn, and ``docs/operator.md``,
*Slow and oversized clients*.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable

from .checked import CHECKED
from .live.guard import Suspended
from .worker import error_body

__all__ = ["BodyGuard"]

log = logging.getLogger("commonroom.worker")


class _BodyAborted(BaseException):
    """Ends a request whose body timed out or was cut short (not an ``Exception``:
    Falcon's error handlers must not turn it into an answer)."""


def _expects_body(scope: dict[str, Any]) -> bool:
    checked = scope.get(CHECKED)
    if checked is not None:  # the edge's one reading of the headers
        headers = checked.headers
        if b"transfer-encoding" in headers:
            return True
        length = headers.get(b"content-length")
        return length is not None and length.strip() not in (b"0", b"")
    for name, value in scope.get("headers") or ():
        lname = name.lower()
        if lname == b"transfer-encoding":
            return True
        if lname == b"content-length":
            return value.strip() not in (b"0", b"")
    return False


class BodyGuard:
    """ASGI wrapper: no body read before a resource asks, the whole body within ``timeout`` s."""

    def __init__(self, app: Callable, timeout: float = 30.0):
        self.app = app
        self.timeout = timeout

    async def __call__(self, scope: dict[str, Any], receive: Callable[[], Awaitable[dict[str, Any]]],
                       send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:  # noqa: D102 - ASGI
        if scope["type"] != "http" or not _expects_body(scope):
            await self.app(scope, receive, send)
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        first = True
        complete = False
        started = False

        async def guarded_receive() -> dict[str, Any]:
            nonlocal first, complete
            if first:
                # Falcon awaits one event before it runs anything: an empty
                # one, so the body (and a 100 Continue) waits for a resource.
                first = False
                return {"type": "http.request", "body": b"", "more_body": True}
            if complete:
                return await receive()  # after the body: disconnect watching
            remaining = deadline - loop.time()
            if remaining <= 0:  # past the deadline: receive() is not even asked (no 100 Continue)
                raise _BodyAborted("timeout")
            # gunicorn answers at once when the body is buffered (a small body arrives with its
            # headers): run receive() to its first wait, and arm the deadline's timer only if it waits
            pending: Any = receive()
            message: Any = None
            if asyncio.iscoroutine(pending):  # gunicorn's is; any other awaitable waits as it is
                try:
                    pending = Suspended(pending, pending.send(None))
                except StopIteration as answered:
                    message, pending = answered.value, None
            if pending is not None:
                try:
                    async with asyncio.timeout(remaining):  # a timer, not wait_for's extra task per body
                        message = await pending
                except asyncio.TimeoutError:
                    raise _BodyAborted("timeout") from None
            if message["type"] != "http.request":
                raise _BodyAborted("cut short")  # never a truncated body
            if not message.get("more_body", False):
                complete = True
            return message

        async def tracked_send(message: dict[str, Any]) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if not complete:
                    # the body was not read: the server will not keep this
                    # connection, so the client must not reuse it either
                    headers = [(k, v) for k, v in message.get("headers") or () if k.lower() != b"connection"]
                    message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        try:
            await self.app(scope, guarded_receive, tracked_send)
        except _BodyAborted as aborted:
            log.info("request body %s after %.0f s: %s %s", aborted, self.timeout,
                     scope.get("method"), scope.get("path"))
            if started:
                return
            seconds = self.timeout
            body = error_body(408, f"the request body did not arrive within {seconds:g} s",
                             {"limit": "body_timeout", "timeout_seconds": seconds})
            try:
                await send({"type": "http.response.start", "status": 408,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(body)).encode()),
                                        (b"connection", b"close")]})
                await send({"type": "http.response.body", "body": body})
            except OSError:
                pass  # the client is gone
