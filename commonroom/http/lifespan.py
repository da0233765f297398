"""The room's ASGI lifespan: its startup hooks before the worker serves, its shutdown hooks after.

:class:`Lifespan` is run by the room's edge (:class:`commonroom.http.edge.Edge`)
for the ``lifespan`` scope gunicorn opens once per worker.
"""

from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable

log = logging.getLogger("commonroom.http")


class Lifespan:
    """``startup`` callables run (awaited if coroutines) when the worker starts (the room timers, the
    checkpoint warm-up); one that fails fails the startup, so the worker does not serve. ``shutdown``
    callables run (awaited if coroutines) when the worker stops, each whatever the one before did."""

    def __init__(self, startup: list[Callable[[], Any]] | None = None,
                 shutdown: list[Callable[[], Any]] | None = None):
        self.startup = list(startup or [])
        self.shutdown = list(shutdown or [])

    async def run(self, receive: Callable[[], Awaitable[dict[str, Any]]],
                  send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        """Answer the lifespan messages until the shutdown is complete."""
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    for hook in self.startup:
                        result = hook()
                        if hasattr(result, "__await__"):
                            await result
                except Exception as exc:
                    log.exception("startup hook failed")
                    await send({"type": "lifespan.startup.failed", "message": repr(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                for hook in self.shutdown:
                    try:
                        result = hook()
                        if hasattr(result, "__await__"):
                            await result
                    except Exception:  # a failing hook must not stop shutdown
                        log.exception("shutdown hook failed")
                await send({"type": "lifespan.shutdown.complete"})
                return
