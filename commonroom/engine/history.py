"""The event ring as history and as the replay buffer of the live streams.

Seed ``protocol.txt`` (Persistence): "The event table is a ring of the
newest 2000 rows. It is the replay buffer for workspace.observe." Ids are
AUTOINCREMENT: monotonic, never reused, and they keep counting after rows
are trimmed (``Store.last_event_id``).

- :meth:`HistoryMixin.history` pages through the ring, oldest first
  (``events.json#/$defs/HistoryPage``; capability ``read``).
- :func:`event_cursor` reads the room's one cursor form: an event id as a
  decimal string. History's ``cursor``/``next_cursor`` and the observe
  stream's ``since_event_id``/``Last-Event-ID`` are the same thing.
- :meth:`HistoryMixin.events_after` / :meth:`HistoryMixin.ring_bounds` /
  :meth:`HistoryMixin.cursor_lost` are what a stream needs to replay after a
  ``Last-Event-ID`` and to tell when the cursor fell off the ring.
"""

from __future__ import annotations

from typing import Any, cast

from commonroom.generated.types.events import Event as EventWire
from commonroom.generated.types.events import HistoryPage

from .. import numbers
from ..errors import InvalidRequest
from ..store.db import event_dict
from ..store.rows import select_rows
from .base import Actor, EngineBase, decode_cursor, parse_limit, require

#: Most rows one replay read returns (streams read the ring in pages).
REPLAY_PAGE = 200


def event_cursor(value: Any, parameter: str = "cursor", *, legacy: bool = False) -> int | None:
    """The event id in a cursor: a non-negative decimal integer as text
    (ASCII digits only, :func:`commonroom.numbers.natural`); ``None`` for
    ``None`` (an empty string is refused, not "no cursor").

    ``legacy`` also accepts the opaque cursor history issued before (base64
    JSON ``{"after": N}``), so a page fetched before an upgrade can be
    followed on. Anything else is ``InvalidRequest`` with
    ``details.parameter = parameter``.
    """
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= numbers.MAX_SAFE:
        return value
    text = value if isinstance(value, str) else ""
    try:
        return numbers.natural(text)
    except numbers.NotANumber:
        pass
    if legacy:
        try:
            position = decode_cursor(text)
        except InvalidRequest:
            position = None
        after = position.get("after") if isinstance(position, dict) else None
        if isinstance(after, int) and not isinstance(after, bool) and after >= 0:
            return after
    if parameter == "cursor":
        message = f"cursor is not one this room issued (an event id), not {value!r}"
    else:
        message = f"{parameter} must be a non-negative integer event id, not {value!r}"
    raise InvalidRequest(message, details={"parameter": parameter})


class HistoryMixin(EngineBase):
    """``history`` (capability ``read``) and ring lookups for the streams."""

    def history(self, actor: Actor, limit: Any = None, cursor: str | None = None) -> HistoryPage:
        """A page of the events still in the ring after ``cursor``, oldest first.

        ``limit`` 1 to 200 (default 50) else ``InvalidRequest``; ``cursor``
        is an event id as a decimal string (:func:`event_cursor`): a previous
        page's ``next_cursor``, or any id seen on ``/workspace/observe``
        (absent: from the oldest event kept). Returns ``{events,
        next_cursor, history_lost, oldest_event_id, last_event_id}``:
        ``next_cursor`` is the id of this page's last event as a decimal
        string (the same value ``/workspace/observe`` takes as
        ``since_event_id`` or ``Last-Event-ID``), null when this page reached
        the newest event (keep the last id and resume from it);
        ``history_lost`` is true when events after the cursor were already
        trimmed off the ring. Needs ``read``.
        """
        Event = self.store.models.Event
        require(actor, "read")
        size = parse_limit(limit)
        position = event_cursor(cursor, "cursor", legacy=True)
        after = 0 if position is None else position
        rows = select_rows(Event, 'WHERE "id" > ? ORDER BY "id" LIMIT ?', (after, size + 1))
        events = cast("list[EventWire]", [event_dict(r) for r in rows[:size]])  # store.event_dict builds the wire Event
        oldest, last = self.ring_bounds()
        more = len(rows) > size
        return {
            "events": events,
            "next_cursor": str(events[-1]["id"]) if more else None,
            "history_lost": position is not None and self.cursor_lost(after),
            "oldest_event_id": oldest,
            "last_event_id": last,
        }

    def ring_bounds(self) -> tuple[int | None, int]:
        """``(oldest id still in the ring or None when empty, newest id ever)``."""
        oldest = self.store.db.execute_sql('SELECT MIN("id") FROM "event"').fetchone()[0]
        return oldest, self.store.last_event_id()

    def cursor_lost(self, after: int) -> bool:
        """True when some event with id > ``after`` is no longer in the ring.

        Also true for a cursor beyond the newest id (from another sidecar):
        either way the client must reread state rather than trust a replay.
        """
        last = self.store.last_event_id()
        if after >= last:  # the common case of a live cursor: one indexed read
            return after > last
        oldest, _ = self.ring_bounds()
        return oldest is None or oldest > after + 1

    def events_after(self, event_id: int, limit: int = REPLAY_PAGE) -> list[dict[str, Any]]:
        """Up to ``limit`` events with id > ``event_id``, oldest first (wire dicts)."""
        if event_id >= self.store.last_event_id():  # nothing newer: no query to build
            return []
        Event = self.store.models.Event
        rows = select_rows(Event, 'WHERE "id" > ? ORDER BY "id" LIMIT ?', (event_id, limit))
        return [event_dict(r) for r in rows]

    def last_event_id(self) -> int:
        """The newest event id ever appended (0 when none)."""
        return self.store.last_event_id()
