"""What the front reads of a request: its headers, their framing and its body (ASGI only).

:func:`body_length` reads the headers' framing (the edge read the headers),
:func:`read_body` the body as Falcon's stream reads it, and :class:`Request`
carries what was read to the door that answers (:class:`Door`).
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Protocol

from ..operations import Operation

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
#: ``(status, ASGI headers, body)`` of an answer.
Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


class Request:
    """One request the front may answer: what the door reads of it, step by step.

    ``scope`` (ASGI), ``params`` (path parameters), ``headers`` (by name,
    less ``Authorization``: the edge's, read only),
    ``op``, ``actor`` and ``digest`` (the bearer's token digest) as the
    edge decided them (:class:`~commonroom.checked.Checked`), ``body`` and
    ``complete`` (the whole framed body arrived) once read, and ``state``:
    what the door kept between its steps.
    """

    __slots__ = ("scope", "params", "headers", "op", "actor", "digest", "body", "complete", "state")

    def __init__(self, scope: dict[str, Any], params: dict[str, str], headers: dict[bytes, bytes]):
        self.scope = scope
        self.params = params
        self.headers = headers
        self.op: Operation | None = None
        self.actor: Any = None
        self.digest = ""
        self.body = b""
        self.complete = True
        self.state: Any = None


class Door(Protocol):
    """One kind of request the front answers (see :mod:`commonroom.front`).

    ``has_body``: the request carries a body framed by a ``Content-Length``
    of at most ``body_limit`` bytes (else it has no ``Content-Length``);
    ``reads_body``: the body is read before :meth:`ready` (as Falcon awaits
    the first message even without one).
    """

    has_body: bool
    reads_body: bool
    body_limit: int

    def admit(self, request: Request) -> Operation | None:
        """The operation asked for, from the headers alone (before the body), or None: the app's.

        The route's own operation, whose capability the edge checked; or,
        for a tool call, the tool's (checked here, as the route does not name it)."""

    def ready(self, request: Request) -> Any:
        """After the bearer and the body: what :meth:`answer` needs, or None (the app answers)."""

    async def answer(self, request: Request, ticket: Any) -> Answer:
        """The answer (counted already); nothing raises."""


def body_length(headers: dict[bytes, bytes], door: Door) -> int | None:
    """The body's length as framed for ``door`` (0 without a body), else None (the app's to judge).

    No ``Transfer-Encoding``; a ``Content-Length`` of plain ASCII digits of
    at most ``door.body_limit`` exactly when the door takes a body.
    """
    length = headers.get(b"content-length")
    if b"transfer-encoding" in headers:
        return None
    if not door.has_body:
        return None if length is not None else 0
    if length is None or not length.isdigit() or int(length) > door.body_limit:
        return None
    return int(length)


async def read_body(receive: Receive, length: int, messages: list[dict[str, Any]]) -> bytes | None:
    """The body as Falcon's stream reads it, or None when the client left before the request began.

    As Falcon's app, the first message is awaited even without a body;
    the body ends at ``length`` bytes, at the message that says there is no
    more, or where the client left (``messages`` then ends with that
    ``http.disconnect``). Every message read is appended to ``messages``
    (the app is given them again: :func:`replaying`). The worker's
    ``BodyGuard`` bounds the wait and refuses a body cut short (its
    exception ends the request, as it does under Falcon).
    """
    chunks: list[bytes] = []
    remaining = length
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return b"".join(chunks) if chunks else None
        chunk = message.get("body", b"")
        if len(chunk) > remaining:
            chunk = chunk[:remaining]
        chunks.append(chunk)
        remaining -= len(chunk)
        if remaining <= 0 or not message.get("more_body", False):
            return b"".join(chunks)


def replaying(messages: list[dict[str, Any]], receive: Receive) -> Receive:
    """A ``receive`` that gives ``messages`` first, in order, then what ``receive`` gives."""
    pending = list(reversed(messages))

    async def replayed() -> dict[str, Any]:
        if pending:
            return pending.pop()
        return await receive()

    return replayed
