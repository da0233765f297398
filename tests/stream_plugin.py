"""A test-only MCP plugin for the stream primitive; never loaded by the product.

Loaded by ``tests/e2e/test_live_stream_endings.py`` through
``COMMONROOM_MCP_PLUGINS=tests.stream_plugin:register``:

- ``test/listen`` is shaped like ``subscriptions/listen``: a POST answered
  with a hub-fed stream (``HubStream``), an acknowledgement first, one
  ``notifications/test/event`` per accepted event, and a final result
  naming the reason the stream ended;
- ``test/live`` reports the room's live counters (hub subscribers, open
  streams, event-stream writes the guard watches), found with ``gc``
  (unfreezing what the worker froze at start, then freezing again) because
  the product offers no such route.
"""

from __future__ import annotations

import gc
from typing import Any

from commonroom.live.guard import StreamGuard
from commonroom.live.hub import Hub
from commonroom.live.stream import Streams
from commonroom.mcp.jsonrpc import META_SUBSCRIPTION_ID, notification
from commonroom.mcp.registry import Context, Registry
from commonroom.mcp.stream import HubStream, McpEncoder


def _listen(ctx: Context) -> HubStream:
    request_id = ctx.request_id
    tag = {META_SUBSCRIPTION_ID: request_id}
    types = set(ctx.params.get("types") or ())

    def to_messages(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [notification("notifications/test/event", {"_meta": tag, "id": e["id"], "type": e["type"]})
                for e in events]

    def final(reason: str) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id,
                "result": {"resultType": "complete", "_meta": tag, "reason": reason}}

    ack = notification("notifications/subscriptions/acknowledged", {"_meta": tag, "types": sorted(types)})
    return HubStream(McpEncoder(to_messages, first=[ack], final=final),
                     accept=(lambda event: event["type"] in types) if types else None)


def _live(ctx: Context) -> dict[str, Any]:
    gc.unfreeze()  # the worker freezes what it built at start (server.py); look at it too
    objects = gc.get_objects()
    gc.freeze()
    return {
        "subscribers": sum(o.subscribers for o in objects if isinstance(o, Hub)),
        "streams": sum(o.count for o in objects if isinstance(o, Streams)),
        "watches": sum(len(o._watches) for o in objects if isinstance(o, StreamGuard)),
    }


def register(registry: Registry) -> None:
    """Add ``test/listen`` and ``test/live``."""
    registry.add_method("test/listen", _listen)
    registry.add_method("test/live", _live)
