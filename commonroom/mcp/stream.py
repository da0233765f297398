"""Server-sent event streams of ``/mcp``.

- :func:`sse_response` writes a :class:`~commonroom.mcp.registry.Stream`
  as ``text/event-stream``: each JSON-RPC message is one ``event: message``
  frame, ``None`` is a ``: heartbeat`` comment line. No event ids (streams
  are not resumable in 2026-07-28).
- :func:`notification_stream` is the ``GET /mcp`` stream of one session:
  committed events from the live hub (``commonroom.live.hub``) whose
  resources the session subscribed to (``resources/subscribe``) become
  ``notifications/resources/updated {uri}``. The hub never waits for a
  slow reader: a lagging subscriber gets RESYNC and the stream ends (the
  client reconnects and rereads); a revoked session or shutdown gets CLOSED.
  Events already queued together are coalesced: one notification per URI.
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Callable

import falcon
from falcon.asgi import SSEvent

from .dispatch import dumps
from .jsonrpc import notification
from .registry import Stream

UPDATED = "notifications/resources/updated"


def sse_response(resp: falcon.asgi.Response, stream: Stream) -> None:
    """Make ``resp`` an event stream of ``stream``'s messages."""
    resp.content_type = "text/event-stream"
    resp.set_header("Cache-Control", "no-store")
    resp.set_header("X-Accel-Buffering", "no")

    async def emitter() -> AsyncIterator[SSEvent]:
        try:
            async for message in stream.messages:
                if message is None:
                    yield SSEvent(comment="heartbeat")
                else:
                    yield SSEvent(data=dumps(message).encode("utf-8"), event="message")
        finally:
            stream.close()

    resp.sse = emitter()


def notification_stream(hub: Any, subscriptions: Any, actor: Any, heartbeat_seconds: float = 15.0,
                        session_live: Callable[[str], bool] | None = None) -> Stream:
    """The ``GET /mcp`` stream for ``actor``'s session (see the module docstring).

    ``session_live(session_id)`` is rechecked at every heartbeat: an expired
    session's stream ends (a revoked one is ended by the hub at once).
    """
    from ..live.hub import CLOSED, HEARTBEAT, RESYNC

    session_id = actor.session_id
    subscription = hub.subscribe(session_id=session_id,
                                 accept=lambda event: bool(subscriptions.wants(session_id, event)))

    async def messages() -> AsyncIterator[dict[str, Any] | None]:
        yield None  # a first comment line: the client sees the stream is open
        while True:
            item = await subscription.get(timeout=heartbeat_seconds)
            if item is CLOSED or item is RESYNC:
                return
            if item is HEARTBEAT or item is None:
                if session_live is not None and session_id and not session_live(session_id):
                    return
                yield None
                continue
            # One hint per URI for what is already queued (a join is two events).
            uris: dict[str, None] = {}
            while isinstance(item, dict):
                uris.update(dict.fromkeys(subscriptions.wants(session_id, item)))
                item = subscription.get_nowait()
            for uri in uris:
                yield notification(UPDATED, {"uri": uri})
            if item is CLOSED or item is RESYNC:
                return

    return Stream(messages(), subscription.close)
