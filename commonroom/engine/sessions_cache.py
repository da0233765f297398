"""Authenticated sessions kept in memory, so a request's bearer costs a hash and a lookup.

:meth:`commonroom.engine.access.AccessMixin.authenticate` reads the
session and its participant from the sidecar; the answer depends only on
those rows and on the clock. This cache keeps the answer of each live
session by its token's digest (never the token) and is exact because:

- every change to a session, a participant or an invitation is a write
  that emits a ``session.*``, ``participant.*`` or ``invitation.*`` event
  (the engine's rule: every state change appends its event), and the store
  calls :meth:`SessionCache.observe` with each committed write's events on
  the writer thread, after the commit and before the write is acknowledged
  or published; such a write empties the cache;
- a miss records the cache's *generation* before it reads the sidecar, and
  :meth:`SessionCache.put` keeps its answer only if no such write committed
  in between (else a reader that saw the old row could keep it after the
  write emptied the cache);
- expiry is checked on every request against the clock (the cache keeps
  the expiry instant), so an expired session is refused on time;
- only sessions that authenticated are kept; unknown, revoked and expired
  tokens are looked up each time.

The room is the only writer of its sidecar (offline ``ce`` writes need the
writer lock, which a running room holds), so no change escapes the events.
At most :data:`MAX_SESSIONS` entries are kept (a full cache is emptied).
"""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any, Iterable

from .actor import Actor

#: Most sessions kept; past it the cache starts over (each entry is ~1 KB).
MAX_SESSIONS = 10_000
#: Event types whose writes may change what a bearer authenticates as.
WATCHED = ("session.", "participant.", "invitation.")


class SessionCache:
    """token digest → ``(Actor, expires)`` of live sessions (safe across threads)."""

    def __init__(self, limit: int = MAX_SESSIONS):
        self.limit = limit
        self.generation = 0
        self._entries: dict[str, tuple[Actor, dt.datetime]] = {}
        self._lock = threading.Lock()

    def get(self, digest: str) -> tuple[Actor, dt.datetime] | None:
        """The kept ``(actor, expires)`` of the token whose digest is ``digest``, or None."""
        return self._entries.get(digest)

    def put(self, digest: str, generation: int, actor: Actor, expires: dt.datetime) -> None:
        """Keep ``actor`` for ``digest`` unless a watched write committed since ``generation``."""
        with self._lock:
            if generation != self.generation:
                return
            if len(self._entries) >= self.limit:
                self._entries.clear()
            self._entries[digest] = (actor, expires)

    def clear(self) -> None:
        """Forget every session (and make answers read before now unkeepable)."""
        with self._lock:
            self.generation += 1
            self._entries.clear()

    def observe(self, events: Iterable[dict[str, Any]]) -> None:
        """A write committed with ``events``: empty the cache if one of them is watched."""
        for event in events:
            if event["type"].startswith(WATCHED):
                self.clear()
                return

    def __len__(self) -> int:
        return len(self._entries)
