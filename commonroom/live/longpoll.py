"""The board long-poll: the accepted events after a cursor, or the next ones within a timeout.

Boards seed (``observe_session_messages`` with ``wait``): one answer, not a
stream. :func:`wait_next` subscribes on the room's hub before it reads the
ring, so nothing committed in between is missed, and unsubscribes before it
returns (also when cancelled). It shares the hub, the ring reader and the
end reasons (:mod:`commonroom.live.base`) with :mod:`commonroom.live.stream`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Callable

from ..engine.history import REPLAY_PAGE
from .base import CURSOR_LOST, LAGGED, REVOKED, SHUTDOWN, Source, accepts
from .hub import HEARTBEAT, RESYNC, Hub

__all__ = ["Wait", "wait_next"]


@dataclass
class Wait:
    """The answer of :meth:`Streams.wait_next`.

    ``events``: the accepted events after the cursor, id order (empty on
    timeout or an end). ``reason``: ``"events"``, ``"timeout"``, or an end
    reason (``cursor_lost``, ``lagged``, ``revoked``, ``shutdown``).
    ``last_event_id``: the id to wait after next time (the last event
    returned, else the cursor given).
    """

    events: list[dict[str, Any]] = field(default_factory=list)
    reason: str = "timeout"
    last_event_id: int = 0


async def wait_next(hub: Hub, source: Source, after: int, timeout: float, *, session_id: str | None = None,
                    accept: Callable[[dict], bool] | None = None) -> Wait:
    """Events after ``after`` (an event id ≥ 0) accepted by ``accept``, or
    wait up to ``timeout`` seconds for the next: the board long-poll.

    ``hub`` is the room's hub, ``source`` reads its ring (the engine).
    Subscribes before reading the ring (no gap), returns at most
    :data:`REPLAY_PAGE` events, and always unsubscribes before returning
    (also when cancelled). ``reason`` says why it returned (see
    :class:`Wait`).
    """
    sub = hub.subscribe(session_id=session_id, accept=accept)
    try:
        if source.cursor_lost(after):
            return Wait([], CURSOR_LOST, after)
        last = after
        while True:
            page = source.events_after(last, REPLAY_PAGE)
            found = [e for e in page if accepts(accept, e)]
            if page:
                last = page[-1]["id"]
            if found:
                return Wait(found, "events", last)
            if len(page) < REPLAY_PAGE:
                break
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            item = await sub.get(max(0.0, deadline - loop.time()))
            if item is HEARTBEAT:
                if loop.time() >= deadline:
                    return Wait([], "timeout", last)
                continue
            if not isinstance(item, dict):
                reason = LAGGED if item is RESYNC else SHUTDOWN if hub.closed else REVOKED
                return Wait([], reason, last)
            found, last, _ = sub.take_after(item, last, REPLAY_PAGE)
            if found:
                return Wait(found, "events", last)
    finally:
        sub.close()
