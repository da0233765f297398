"""End the live streams as soon as the worker is told to stop (SIGTERM).

``shared/notes/runtime.md`` (Shutdown): open streams hold SIGTERM for the
whole graceful timeout, after which gunicorn kills the worker and the app's
shutdown hooks never run. The ASGI lifespan ``shutdown`` comes only after
the connections are gone, so it cannot be what ends them. Instead
:func:`end_streams_on_sigterm` chains a callback onto the worker's own
SIGTERM handler on its event loop: gunicorn's handler runs first (the worker
stops accepting and will not keep connections alive), then the callback
(``Hub.close_nowait``) ends every stream, so the worker exits at once and
the clients reconnect later with ``Last-Event-ID``.

asyncio keeps one handler per signal and has no public way to read it, so
this looks at the loop's ``_signal_handlers`` table; if that is missing (an
event loop without it), nothing is chained and the function says so.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import Any, Callable

log = logging.getLogger("commonroom.live")


def end_streams_on_sigterm(callback: Callable[[], Any], loop: asyncio.AbstractEventLoop | None = None) -> bool:
    """Run ``callback()`` right after the loop's current SIGTERM handler; True if chained."""
    if loop is None:
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:
            return False
    table = getattr(loop, "_signal_handlers", None)
    previous = table.get(signal.SIGTERM) if isinstance(table, dict) else None
    if previous is None:
        log.debug("no SIGTERM handler on the loop; streams end at the graceful timeout")
        return False

    def on_sigterm() -> None:
        try:
            previous._callback(*previous._args)
        finally:
            callback()

    loop.add_signal_handler(signal.SIGTERM, on_sigterm)
    return True
