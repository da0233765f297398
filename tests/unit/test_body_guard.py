"""``commonroom.bodyguard.BodyGuard`` at its deadline, driven in process.

The guard steps ``receive()`` by hand and arms its timer only when the body
is not there yet; these cases pin down that nothing else changed with it:
a read after the deadline is refused before ``receive()`` is asked (so
gunicorn writes no ``100 Continue`` for a body the room then refuses), a
buffered body is returned at once, a body that never comes is cut at the
deadline, and a ``receive`` that returns a plain awaitable still works.
The slow clients over real sockets are in ``tests/e2e/test_slow_clients.py``.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from gunicorn.asgi.protocol import BodyReceiver

from commonroom.bodyguard import BodyGuard

SCOPE = {"type": "http", "method": "POST", "path": "/x", "headers": [(b"content-length", b"4")]}
BODY = {"type": "http.request", "body": b"abcd", "more_body": False}


def reading_app(log: list, wait_before_reading: float = 0.0):
    """An app that reads the whole body (after Falcon's first event) and answers 200."""
    async def app(scope, receive, send):
        await receive()  # the guard's empty first event
        if wait_before_reading:
            await asyncio.sleep(wait_before_reading)
        while True:
            message = await receive()
            log.append(message.get("body"))
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})
    return app


def serve(app, receive, timeout: float) -> list[int]:
    """The statuses ``BodyGuard(app)`` sends for one request."""
    statuses: list[int] = []

    async def send(message):
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    asyncio.run(BodyGuard(app, timeout)(SCOPE, receive, send))
    return statuses


def test_a_buffered_body_is_read_at_once():
    log: list = []

    async def receive():
        return BODY

    assert serve(reading_app(log), receive, 5.0) == [200]
    assert log == [b"abcd"]


def test_a_body_that_arrives_later_is_waited_for_within_the_deadline():
    log: list = []

    async def receive():
        await asyncio.sleep(0.05)
        return BODY

    assert serve(reading_app(log), receive, 5.0) == [200]
    assert log == [b"abcd"]


def test_a_body_that_never_comes_is_cut_at_the_deadline():
    async def receive():
        await asyncio.sleep(60)

    assert serve(reading_app([]), receive, 0.1) == [408]


def test_a_read_after_the_deadline_is_refused_even_when_the_body_is_buffered():
    async def receive():
        return BODY

    assert serve(reading_app([], wait_before_reading=0.15), receive, 0.1) == [408]


def test_a_receive_that_returns_a_future_still_works():
    log: list = []

    def receive():
        future = asyncio.get_running_loop().create_future()
        future.set_result(BODY)
        return future

    assert serve(reading_app(log), receive, 5.0) == [200]
    assert log == [b"abcd"]


def test_a_read_after_the_deadline_writes_no_100_continue():
    """gunicorn's own body receiver writes ``100 Continue`` when first asked; past the deadline it is not asked."""
    written: list[bytes] = []
    protocol = SimpleNamespace(_closed=False, cfg=SimpleNamespace(timeout=30), _safe_write=written.append,
                               _maybe_resume_reading=lambda: None)
    request = SimpleNamespace(_expect_100_continue=True, content_length=4, chunked=False)
    receiver = BodyReceiver(request, protocol)
    assert serve(reading_app([], wait_before_reading=0.15), receiver.receive, 0.1) == [408]
    assert written == []
