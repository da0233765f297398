"""Board and peer retention, run by the room scheduler (DESIGN.md, *Room timers* and *Boards: bounds*).

:meth:`RetentionMixin.sweep_board_retention` is the ``board-retention``
sweep of :func:`commonroom.room.room_timers` (every
:data:`commonroom.room.BOARD_SWEEP_SECONDS`), run on the writer thread
with the engine's clock:

- every board holding more than :data:`.board_base.RETAIN_MESSAGES`
  messages keeps its newest ones plus every open todo; the rest go, with
  their ACK rows, and the board's low-watermark moves to the newest
  revision pruned (a token from before it then reads ``history_lost``;
  a pruned direct reply makes its todo's assignment
  ``assignment_history_lost``);
- peer messages older than :data:`.peers.PEER_RETAIN_SECONDS` (24 h) go,
  and so do awareness dedup rows (``peer_seen``) as old; every recipient
  keeps at most :data:`.peers.PEER_RETAIN_MESSAGES` (200).

The count bounds also hold at every commit (the post that adds a message
prunes its own board or recipient); the sweep is where age-based
retention happens and it re-establishes any count bound (a sidecar from
before the bound, a bound lowered). Idempotent: a second run at the same
clock finds nothing; when nothing is due it only reads (three indexed or
grouped queries) and writes nothing.
"""

from __future__ import annotations

import datetime as _dt

from ..clock import rfc3339
from ..store import WriteContext
from . import board_base, peers
from .board_base import BoardBase


class RetentionMixin(BoardBase):
    """The retention sweep of boards and peer messages."""

    def _retention_due(self) -> tuple[list[str], str, list[str], bool]:
        """(boards over their bound, the peer cutoff, recipients over theirs, anything older than the cutoff)."""
        db = self.store.db
        cutoff = rfc3339(self.clock.now() - _dt.timedelta(seconds=peers.PEER_RETAIN_SECONDS))
        boards = [row[0] for row in db.execute_sql(
            'SELECT "board_session_id" FROM "board_message" GROUP BY "board_session_id" HAVING COUNT(*) > ? AND '
            'SUM(NOT ("kind" = \'todo\' AND "status" = \'open\')) > 0', (board_base.RETAIN_MESSAGES,)).fetchall()]
        recipients = [row[0] for row in db.execute_sql(
            'SELECT "recipient_session_id" FROM "peer_message" GROUP BY "recipient_session_id" HAVING COUNT(*) > ?',
            (peers.PEER_RETAIN_MESSAGES,)).fetchall()]
        old = bool(db.execute_sql('SELECT 1 FROM "peer_message" WHERE "created_at" < ? LIMIT 1', (cutoff,)).fetchone()
                   or db.execute_sql('SELECT 1 FROM "peer_seen" WHERE "shown_at" < ? LIMIT 1', (cutoff,)).fetchone())
        return boards, cutoff, recipients, old

    def sweep_board_retention(self) -> dict[str, int]:
        """Room timer sweep: board and peer retention (see the module docstring); what was pruned.

        ``{"board_messages": n, "peer_messages": n, "peer_seen": n}``, all
        0 when nothing was due (then nothing is written). One transaction.
        """
        boards, cutoff, recipients, old = self._retention_due()
        pruned = {"board_messages": 0, "peer_messages": 0, "peer_seen": 0}
        if not (boards or recipients or old):
            return pruned

        def prune(ctx: WriteContext) -> dict[str, int]:
            db = self.store.db
            for session_id in boards:
                pruned["board_messages"] += self._prune(session_id)
            pruned["peer_messages"] += db.execute_sql('DELETE FROM "peer_message" WHERE "created_at" < ?',
                                                      (cutoff,)).rowcount
            pruned["peer_seen"] += db.execute_sql('DELETE FROM "peer_seen" WHERE "shown_at" < ?', (cutoff,)).rowcount
            for recipient in recipients:
                pruned["peer_messages"] += self._prune_peers(recipient)
            return pruned

        return dict(self.store.write(prune))
