"""Session message boards (seed ``collaboration-board.txt``; DESIGN.md, *Boards*).

Every commonroom session has a board (the seed's Workflow Session, named by
its public id). Messages have a kind, a priority, tags, an optional
``reply_to`` on the same board and ``requires_ack``. A ``todo`` is the
executable assignment: :meth:`~.board_completion.CompletionMixin.get_session_assignment` reads the
todo and every retained direct reply in one snapshot with an opaque
``assignment_fence`` over exactly that state, and
:meth:`~.board_completion.CompletionMixin.complete_session_message` completes it in one
transaction (one ``answer`` reply, the todo resolved, ``resolved_by_message_id``,
a completion identity derived from the caller's key and a fingerprint of
the accepted fence), replays an exact retry and fails closed on any other
reuse of the key. :meth:`~.board_observation.ObservationMixin.observe_session_messages` is the
message-state delta over a durable per-board revision, with opaque signed
tokens and one bounded wait on the live hub.
:mod:`.board_summaries` holds the two bounded summaries
(``session_discussion_summary``, ``session_handoff_summary``).

Authority (DESIGN.md: "the authority boundary is the room plus
capabilities"): any session of the room holding ``read`` reads any board
of the room, one holding ``message`` posts and completes on any board; a
session or message id grants nothing by itself. A message id of another
board is ``message_not_found`` (nothing revealed). ``recording_session_id``
must be a live session of the caller's own participant; it alone sets
``author_session_id``.
"""

from __future__ import annotations

from typing import Any

from commonroom.generated.types.boards import Message, MessagesPage

from ..errors import InvalidRequest
from ..store import WriteContext
from ..store.rows import select_rows, where_sql
from .base import Actor, decode_cursor, encode_cursor, parse_limit, require
from .board_acks import AcksMixin
from .board_base import KINDS, STATUSES
from .board_completion import CompletionMixin
from .board_observation import ObservationMixin
from .board_summaries import SummariesMixin


class BoardsMixin(CompletionMixin, ObservationMixin, AcksMixin, SummariesMixin):
    """Posting, listing, assignment, completion, observation and the two summaries on session boards."""

    # -- posting and listing --------------------------------------------------
    def post_session_message(self, actor: Actor, session_id: str, kind: str, body: str, priority: str | None = None,
                             tags: list[str] | None = None, reply_to: str | None = None,
                             requires_ack: bool | None = None, recording_session_id: str | None = None) -> Message:
        """Post a message on ``session_id``'s board. Needs ``message``.

        ``NotFound`` (no such board), ``MessageNotFound`` (``reply_to`` not
        on this board), ``LimitExceeded`` (a bound; nothing stored),
        ``PermissionDenied`` (``recording_session_id`` not the caller's).
        """
        require(actor, "message")
        kind, priority, body, tag_list = self._check_message(kind, priority, body, tags)

        def post(ctx: WriteContext) -> Message:
            self._board_exists(session_id)
            author = self._recording(actor, recording_session_id)
            if reply_to is not None:
                self._message(session_id, reply_to)
            row = self._insert_message(ctx, actor, session_id, kind=kind, body=body, priority=priority,
                                       tags=tag_list, reply_to=reply_to, requires_ack=bool(requires_ack),
                                       author_session_id=author)
            self._prune(session_id)
            return self._message_wire(row)

        return self.store.write(post)

    def list_session_messages(self, actor: Actor, session_id: str, message_id: str | None = None,
                              reply_to: str | None = None, kind: str | None = None, status: str | None = None,
                              limit: Any = None, cursor: str | None = None) -> MessagesPage:
        """Retained messages of a board, oldest first; every filter given must hold (AND). Needs ``read``."""
        require(actor, "read")
        M = self.store.models.BoardMessage
        size = parse_limit(limit)
        self._check_choice(kind, KINDS, "kind")
        self._check_choice(status, STATUSES, "status")
        self._board_exists(session_id)
        conditions, params = ['"board_session_id" = ?'], [session_id]
        for column, value in (("id", message_id), ("reply_to", reply_to), ("kind", kind), ("status", status)):
            if value is not None:
                conditions.append(f'"{column}" = ?')
                params.append(value)
        after = decode_cursor(cursor)
        if after is not None:
            if not (isinstance(after, dict) and isinstance(after.get("seq"), int)):
                raise InvalidRequest("cursor is not one this room issued", details={"parameter": "cursor"})
            conditions.append('"seq" > ?')
            params.append(after["seq"])
        rows = select_rows(M, where_sql(conditions) + 'ORDER BY "seq" LIMIT ?', [*params, size + 1])
        more = len(rows) > size
        rows = rows[:size]
        return {"messages": [self._message_wire(r) for r in rows],
                "next_cursor": encode_cursor({"seq": rows[-1].seq}) if more else None}
