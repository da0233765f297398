"""Wiring of a room's parts inside the worker: engine, live hub, both apps.

The hub is fed by the engine's one write path (``publish=hub.publish``);
``/workspace/observe`` reads it on both listeners. Each app is wrapped in
:class:`commonroom.live.guard.StreamGuard` (bounded writes for event
streams); the ingress counts requests per bearer (``commonroom.limits``)
and serves ``/mcp`` (``commonroom.mcp``; never the owner port).
SIGTERM ends the streams at once (``commonroom.live.stopping``), and the
shutdown hooks close the hub, then the engine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..engine import Engine
from ..limits import RateLimiter
from ..live.guard import StreamGuard
from ..live.hub import Hub
from ..live.sse import LiveSettings, ObserveResource
from ..live.stream import Streams
from ..live.stopping import end_streams_on_sigterm
from ..mcp import mcp_routes
from .app import create_app


def live_routes(engine: Engine, hub: Hub, settings: LiveSettings, streams: Streams | None = None) -> dict[str, Any]:
    """The routes that read the hub (both listeners); ``streams`` is the room's one stream registry."""
    return {"/workspace/observe": ObserveResource(engine, hub, settings, streams)}


def build_room(document: Path, owner_token_hash: str) -> tuple[Engine, Any, Any, list[Callable]]:
    """``(engine, owner_app, ingress_app, shutdown_hooks)`` for ``document``."""
    settings = LiveSettings.from_env()
    hub = Hub(queue_size=settings.queue_size)
    engine = Engine.open(document, publish=hub.publish, background_file=True)
    streams = Streams(hub, engine, heartbeat_seconds=settings.heartbeat_seconds)
    owner_app = create_app(engine, "owner", owner_token_hash,
                           extra_routes=live_routes(engine, hub, settings, streams))
    ingress_app = create_app(engine, "ingress",
                             extra_routes={**live_routes(engine, hub, settings, streams),
                                           **mcp_routes(engine, hub, heartbeat_seconds=settings.heartbeat_seconds,
                                                        streams=streams)},
                             limiter=RateLimiter())
    end_streams_on_sigterm(hub.close_nowait)
    return (
        engine,
        StreamGuard(owner_app, settings.write_timeout_seconds),
        StreamGuard(ingress_app, settings.write_timeout_seconds),
        [hub.close, engine.close],
    )
