"""Server-sent event streams of ``/mcp``, on the room's one stream primitive.

Every MCP stream is a ``text/event-stream`` of JSON-RPC messages, each one
``event: message`` frame, with ``: heartbeat`` comment lines; no event ids
(streams are not resumable in 2026-07-28). The lifecycle (hub subscription,
heartbeats, the endings on revoke, lag, expiry, shutdown, cancel or
disconnect, and the clean-up) is :mod:`commonroom.live.stream`; this module
only maps events to messages (:class:`McpEncoder`).

- ``GET /mcp`` (:func:`notification_encoder`): committed events whose
  resources the session subscribed to (``resources/subscribe``) become
  ``notifications/resources/updated {uri}``, one per URI for the events
  already queued together (a join is two events). A lagging subscriber's
  stream ends (the client reconnects and rereads); so does a revoked
  session's, and every stream at shutdown.
- A POST answered with a stream (``subscriptions/listen``): a registry
  method returns a :class:`HubStream`; the transport opens it under the key
  ``("mcp", session_id, request_id)``, so ``notifications/cancelled`` with
  that ``requestId`` ends it (``Streams.end``), and its ``final(reason)``
  message (the listen result) is the last frame of every ending but a
  disconnect.
- Any other :class:`~commonroom.mcp.registry.Stream` (a plugin's own async
  iterator of messages) is written by :func:`sse_response`, closed when the
  request ends or the client goes away.
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Callable, Iterable

import falcon
from falcon.asgi import SSEvent

from ..live.guard import on_disconnect, on_request_end
from ..live.stream import HEARTBEAT_BYTES, Encoder
from .dispatch import dumps
from .jsonrpc import notification
from .registry import Stream

UPDATED = "notifications/resources/updated"
#: The first bytes of a ``GET /mcp`` stream: the client sees the stream is open.
OPENING_COMMENT = HEARTBEAT_BYTES


def message_bytes(message: dict[str, Any]) -> bytes:
    """One JSON-RPC message as an ``event: message`` SSE block (compact JSON, one line)."""
    return b"event: message\ndata: " + dumps(message).encode("utf-8") + b"\n\n"


class McpEncoder(Encoder):
    """JSON-RPC frames for one MCP stream.

    ``to_messages(events) -> list[message]`` maps a batch of hub events
    (id order) to notifications; ``first`` are messages sent before anything
    else (listen's acknowledgement); ``final(reason) -> message | None`` is
    the last message for an ending (reason as in
    ``commonroom.live.stream.END_REASONS``); ``opening`` are raw bytes sent
    first (``GET /mcp``: a comment line).
    """

    def __init__(self, to_messages: Callable[[list[dict[str, Any]]], Iterable[dict[str, Any]]], *,
                 first: Iterable[dict[str, Any]] = (), final: Callable[[str], dict[str, Any] | None] | None = None,
                 opening: bytes | None = None):
        self.to_messages = to_messages
        self.first = list(first)
        self.final = final
        self.opening = opening

    def open(self) -> bytes | None:
        """``opening`` then the ``first`` messages."""
        data = (self.opening or b"") + b"".join(message_bytes(m) for m in self.first)
        return data or None

    def events(self, events: list[dict[str, Any]]) -> bytes | None:
        """The messages ``to_messages`` makes of ``events`` (nothing when none)."""
        return b"".join(message_bytes(m) for m in self.to_messages(events)) or None

    def end(self, reason: str, last_event_id: int | None) -> bytes | None:
        """``final(reason)`` when given and not None."""
        message = self.final(reason) if self.final is not None else None
        return message_bytes(message) if message is not None else None


def notification_encoder(subscriptions: Any, session_id: str | None) -> McpEncoder:
    """``GET /mcp``'s encoder: ``notifications/resources/updated`` once per URI per batch."""

    def updated(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        uris: dict[str, None] = {}
        for event in events:
            uris.update(dict.fromkeys(subscriptions.wants(session_id, event)))
        return [notification(UPDATED, {"uri": uri}) for uri in uris]

    return McpEncoder(updated, opening=OPENING_COMMENT)


def notification_accept(subscriptions: Any, session_id: str | None) -> Callable[[dict[str, Any]], bool]:
    """The hub filter of ``GET /mcp``: events that change a resource the session subscribed to."""
    return lambda event: bool(subscriptions.wants(session_id, event))


class HubStream(Stream):
    """A registry method's result answered as a hub-fed ``text/event-stream``.

    Not yet open: the transport opens it on the room's ``Streams`` with the
    caller's session and the key ``("mcp", session_id, request_id)``.
    ``accept(event) -> bool`` filters hub events; ``encoder`` maps them
    (usually a :class:`McpEncoder` with ``first``/``final``).
    """

    def __init__(self, encoder: Encoder, *, accept: Callable[[dict[str, Any]], bool] | None = None):
        # Not a message iterator: nothing to iterate, nothing to close until opened.
        self.messages = None  # type: ignore[assignment]
        self.close = lambda: None
        self.encoder = encoder
        self.accept = accept


def stream_key(session_id: str | None, request_id: Any) -> tuple[str, str | None, Any]:
    """The ``Streams`` key of the stream answering ``request_id`` for ``session_id``."""
    return ("mcp", session_id, request_id)


def sse_response(resp: falcon.asgi.Response, stream: Stream, scope: dict | None = None) -> None:
    """Make ``resp`` an event stream of a plain ``stream``'s messages (``None`` =
    heartbeat comment); ``stream.close()`` runs when it ends, when the request
    ends (``scope`` given) and when the client goes away."""
    resp.content_type = "text/event-stream"
    resp.set_header("Cache-Control", "no-store")
    resp.set_header("X-Accel-Buffering", "no")
    messages = stream.messages

    async def emitter() -> AsyncIterator[SSEvent]:
        try:
            async for message in messages:
                if message is None:
                    yield SSEvent(comment="heartbeat")
                else:
                    yield SSEvent(data=dumps(message).encode("utf-8"), event="message")
        finally:
            stream.close()
            aclose = getattr(messages, "aclose", None)
            if aclose is not None:
                await aclose()

    if scope is not None:
        on_request_end(scope, stream.close)
        on_disconnect(scope, stream.close)
    resp.sse = emitter()
