"""The one probe of every MCP tool call: would its result carry a piggyback?

Every tool result of a session may carry, in ``_meta``, the open
``requires_ack`` messages of its board (:meth:`AcksMixin.pending_acks
<commonroom.engine.board_acks.AcksMixin.pending_acks>`, docs/boards.md
*ACK*) and its peer messages and peer awareness
(:meth:`PeersMixin.peer_work <commonroom.engine.peers.PeersMixin.peer_work>`,
*Window Peer*). Almost always there is nothing: asking both costs three
statements a call. :meth:`PiggybackMixin.piggyback_pending` asks the same
questions in one statement, so a call with nothing to carry pays for one
probe; only when it says yes are the others asked, to build what is shown.
The statement is composed of the conditions each concern writes once
(:data:`~commonroom.engine.board_acks.OPEN_ACKS`,
:data:`~commonroom.engine.peers.PEER_WORK`), so it cannot drift from them.
``tests/engine/test_board_acks_peers.py`` holds it equal to them.

A "nothing" is kept per connection (peewee's: one per thread; the
connection itself is the key, so a later one never inherits it) and
session, and reused while the sidecar is unchanged and the time is before the answer could change by itself:

- *unchanged*: SQLite's ``PRAGMA data_version`` of the thread's connection
  (it moves when any other connection commits) and the connection's own
  ``total_changes`` (its own writes) are what they were;
- *by itself*: with no write, time only ends things (a session expires, a
  peer message or an event leaves its window), except one: an awareness
  shown to the caller stops hiding its peer 24 h after it was shown. So a
  "nothing" is reused only before the oldest such row of the caller ages
  out, and never after the clock went back.
"""

from __future__ import annotations

import datetime as _dt

from ..clock import parse_rfc3339, rfc3339
from .base import Actor, EngineBase
from .board_acks import OPEN_ACKS
from .peers import PEER_RETAIN_SECONDS, PEER_WORK, SEEN_SINCE, peer_work_parameters

#: Is there an open ``requires_ack`` message on the board of the session (the parameter)?
_BOARD = f'SELECT EXISTS (SELECT 1 FROM "board_message" WHERE {OPEN_ACKS})'
#: ... or peer work (:data:`~commonroom.engine.peers.PEER_WORK`)? Parameters: the session, then
#: :func:`~commonroom.engine.peers.peer_work_parameters`.
_PENDING = f'{_BOARD} OR {PEER_WORK}'
#: The oldest awareness row still hiding a peer from the observer (it stops 24 h after shown_at).
_OLDEST_SEEN = f'SELECT MIN("shown_at") FROM {SEEN_SINCE}'
#: "Nothing" answers kept (per thread and session); all dropped when full.
QUIET_KEPT = 4096


class PiggybackMixin(EngineBase):
    """The piggyback probe."""

    def _generation(self) -> tuple[int, int]:
        """What changes when the sidecar does, seen from this thread's connection (see the module docstring)."""
        connection = self.store.db.connection()  # peewee: one per thread
        return connection.execute("PRAGMA data_version").fetchone()[0], connection.total_changes

    def piggyback_pending(self, actor: Actor) -> bool:
        """True when a tool result of ``actor`` that ACKs nothing would carry something (a read).

        Exactly ``bool(pending_acks(actor)[0]) or peer_work(actor,
        frozenset())``, in one statement: an open ``requires_ack`` message
        on the caller's board, a peer message to show, or another live
        session of its participant with meaningful activity in the last
        :data:`~commonroom.engine.peers.AWARENESS_SECONDS` not shown to it
        in the last 24 h. False for the operator (no session).
        """
        session, participant = actor.session_id, actor.participant_id
        if session is None:
            return False
        db = self.store.db
        if participant is None:  # no participant, no peers
            return bool(db.execute_sql(_BOARD, (session,)).fetchone()[0])
        now = self.clock.now()
        key = (db.connection(), session)  # the connection itself: a new one is never taken for an old one
        quiet = self._quiet
        generation = self._generation()
        kept = quiet.get(key)
        if kept is not None and kept[0] == generation and kept[1] <= now < kept[2]:
            return False
        retain = rfc3339(now - _dt.timedelta(seconds=PEER_RETAIN_SECONDS))
        row = db.execute_sql(_PENDING, (session, *peer_work_parameters(session, participant, now))).fetchone()
        if row[0]:
            quiet.pop(key, None)
            return True
        oldest = db.execute_sql(_OLDEST_SEEN, (session, retain)).fetchone()[0]
        until = (_dt.datetime.max.replace(tzinfo=_dt.timezone.utc) if oldest is None
                 else parse_rfc3339(oldest) + _dt.timedelta(seconds=PEER_RETAIN_SECONDS))
        if len(quiet) >= QUIET_KEPT:
            quiet.clear()
        quiet[key] = (generation, now, until)
        return False
