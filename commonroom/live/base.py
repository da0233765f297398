"""What every live wait shares: the reader of the ring (:class:`Source`), the hub's filter rule
(:func:`accepts`) and why a wait ends (:data:`END_REASONS`).

Both :mod:`commonroom.live.stream` (the streams) and
:mod:`commonroom.live.longpoll` (the board long-poll) build on it.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from ..protocol import RESYNC_CURSOR_LOST as CURSOR_LOST, RESYNC_LAGGED as LAGGED

REVOKED = "revoked"
EXPIRED = "expired"
SHUTDOWN = "shutdown"
CANCELLED = "cancelled"
DISCONNECTED = "disconnected"
#: Every reason a stream ends with (``LiveStream.reason``).
END_REASONS = (LAGGED, CURSOR_LOST, REVOKED, EXPIRED, SHUTDOWN, CANCELLED, DISCONNECTED)


class Source(Protocol):
    """What a stream reads besides the hub (the :class:`~commonroom.engine.Engine` is one)."""

    clock: Any

    def events_after(self, event_id: int, limit: int = ...) -> list[dict[str, Any]]: ...
    def cursor_lost(self, after: int) -> bool: ...
    def last_event_id(self) -> int: ...
    def session_live(self, session_id: str) -> bool: ...


def accepts(accept: Callable[[dict], bool] | None, event: dict[str, Any]) -> bool:
    """Whether ``accept`` takes ``event``: True without a filter, False when the filter raises."""
    if accept is None:
        return True
    try:
        return bool(accept(event))
    except Exception:  # the hub's rule: a failing filter counts as "no"
        return False
