"""The event ring as history and as the replay buffer of the live streams.

Seed ``protocol.txt`` (Persistence): "The event table is a ring of the
newest 2000 rows. It is the replay buffer for workspace.observe." Ids are
AUTOINCREMENT: monotonic, never reused, and they keep counting after rows
are trimmed (``Store.last_event_id``).

- :meth:`HistoryMixin.history` pages through the ring, oldest first
  (``events.json#/$defs/HistoryPage``; capability ``read``).
- :meth:`HistoryMixin.events_after` / :meth:`HistoryMixin.ring_bounds` /
  :meth:`HistoryMixin.cursor_lost` are what a stream needs to replay after a
  ``Last-Event-ID`` and to tell when the cursor fell off the ring.
"""

from __future__ import annotations

from typing import Any, cast

from generated.types.events import Event as EventWire
from generated.types.events import HistoryPage

from ..errors import InvalidRequest
from ..store.db import event_dict
from ..store.models import Event
from .base import Actor, EngineBase, decode_cursor, encode_cursor, parse_limit, require

#: Most rows one replay read returns (streams read the ring in pages).
REPLAY_PAGE = 200


class HistoryMixin(EngineBase):
    """``history`` (capability ``read``) and ring lookups for the streams."""

    def history(self, actor: Actor, limit: Any = None, cursor: str | None = None) -> HistoryPage:
        """A page of the events still in the ring after ``cursor``, oldest first.

        ``limit`` 1 to 200 (default 50) else ``InvalidRequest``; ``cursor`` is
        a previous page's ``next_cursor`` (absent: from the oldest event kept).
        Returns ``{events, next_cursor, history_lost, oldest_event_id,
        last_event_id}``: ``next_cursor`` is null when this page reached the
        newest event (keep the last id and resume with ``since_event_id`` on
        ``/workspace/observe``, or call again later with the cursor of the
        last page); ``history_lost`` is true when events after the cursor
        were already trimmed off the ring. Needs ``read``.
        """
        require(actor, "read")
        size = parse_limit(limit)
        position = decode_cursor(cursor)
        if position is None:
            after = 0
        elif isinstance(position, dict) and isinstance(position.get("after"), int) and position["after"] >= 0:
            after = position["after"]
        else:
            raise InvalidRequest("cursor is not one this room issued", details={"parameter": "cursor"})
        rows = list(Event.select().where(Event.id > after).order_by(Event.id).limit(size + 1))
        events = cast("list[EventWire]", [event_dict(r) for r in rows[:size]])  # store.event_dict builds the wire Event
        oldest, last = self.ring_bounds()
        more = len(rows) > size
        return {
            "events": events,
            "next_cursor": encode_cursor({"after": events[-1]["id"]}) if more else None,
            "history_lost": position is not None and self.cursor_lost(after),
            "oldest_event_id": oldest,
            "last_event_id": last,
        }

    def ring_bounds(self) -> tuple[int | None, int]:
        """``(oldest id still in the ring or None when empty, newest id ever)``."""
        oldest = Event.select(Event.id).order_by(Event.id).limit(1).scalar()
        return oldest, self.store.last_event_id()

    def cursor_lost(self, after: int) -> bool:
        """True when some event with id > ``after`` is no longer in the ring.

        Also true for a cursor beyond the newest id (from another sidecar):
        either way the client must reread state rather than trust a replay.
        """
        oldest, last = self.ring_bounds()
        if after > last:
            return True
        if after == last:
            return False
        return oldest is None or oldest > after + 1

    def events_after(self, event_id: int, limit: int = REPLAY_PAGE) -> list[dict[str, Any]]:
        """Up to ``limit`` events with id > ``event_id``, oldest first (wire dicts)."""
        query = Event.select().where(Event.id > event_id).order_by(Event.id).limit(limit)
        return [event_dict(r) for r in query]

    def last_event_id(self) -> int:
        """The newest event id ever appended (0 when none)."""
        return self.store.last_event_id()
