"""ACK piggyback and the board audit log (seed ``collaboration-board.txt``).

A message on a session's board is addressed to that session: its open
``requires_ack`` messages ride on the session's MCP tool results until it
echoes their ids (:meth:`AcksMixin.pending_acks`,
:meth:`AcksMixin.ack_session_messages`). Every board call is audited with
metadata only (:func:`audit_metadata`). See ``docs/boards.md``, *ACK* and
*Audit*.
"""

from __future__ import annotations

from typing import Any

from commonroom.generated.types.boards import Message

from ..store import WriteContext
from ..store.rows import select_rows
from .base import Actor
from .board_base import ACK_PIGGYBACK, AUDIT_ROWS, BoardBase, completion_identity, fence_fingerprint


#: The open ``requires_ack`` messages of a board, as the condition on ``"board_message"`` (one parameter:
#: the board's session id): the one reading of what :meth:`AcksMixin.pending_acks` shows, which the
#: piggyback probe (:mod:`commonroom.engine.piggyback`) also asks.
OPEN_ACKS = '"board_session_id" = ? AND "requires_ack" = 1 AND "status" = \'open\''


class AcksMixin(BoardBase):
    """ACK piggyback and audit rows."""

    # -- ACK piggyback -------------------------------------------------------
    def pending_acks(self, actor: Actor, acked: frozenset[str] = frozenset()) -> tuple[list[Message], int]:
        """Open ``requires_ack`` messages addressed to the caller's session, less ``acked``.

        A message on a session's board is addressed to that session. At
        most :data:`ACK_PIGGYBACK` (oldest first) and how many more were
        left off. Showing a message records nothing. A read.
        """
        if actor.session_id is None:
            return [], 0
        # the hot path (every tool call): one indexed probe
        found = self.store.db.execute_sql(f'SELECT "id" FROM "board_message" WHERE {OPEN_ACKS} ORDER BY "seq" LIMIT ?',
                                          (actor.session_id, ACK_PIGGYBACK + 1 + len(acked))).fetchall()
        if not found or all(row[0] in acked for row in found):
            if len(found) <= ACK_PIGGYBACK + len(acked):
                return [], 0
        shown = sorted(acked)
        unacked = f'WHERE {OPEN_ACKS} AND "id" NOT IN ({", ".join("?" * len(shown))}) ' if shown else f'WHERE {OPEN_ACKS} '
        rows = select_rows(self.store.models.BoardMessage, unacked + 'ORDER BY "seq" LIMIT ?',
                           (actor.session_id, *shown, ACK_PIGGYBACK + 1))
        if len(rows) <= ACK_PIGGYBACK:
            return [self._message_wire(r) for r in rows], 0
        total = self.store.db.execute_sql(f'SELECT COUNT(*) FROM "board_message" {unacked}',
                                          (actor.session_id, *shown)).fetchone()[0]
        return [self._message_wire(r) for r in rows[:ACK_PIGGYBACK]], total - ACK_PIGGYBACK

    def unrecorded_acks(self, actor: Actor, acked: frozenset[str]) -> list[str]:
        """Which of ``acked`` are open ``requires_ack`` messages of the caller's board with no ACK yet (a read)."""
        if actor.session_id is None or not acked:
            return []
        ids = sorted(acked)
        found = [row[0] for row in self.store.db.execute_sql(
            f'SELECT "id" FROM "board_message" WHERE {OPEN_ACKS} AND "id" IN ({", ".join("?" * len(ids))})',
            (actor.session_id, *ids)).fetchall()]
        if not found:
            return []
        A = self.store.models.BoardAck
        done = {r.message_id for r in A.select(A.message_id).where((A.session_id == actor.session_id)
                                                                    & A.message_id.in_(found))}
        return [m for m in found if m not in done]

    def ack_session_messages(self, actor: Actor, message_ids: list[str]) -> int:
        """Record the first ACK time of each id (a write); returns how many were recorded now.

        Only open ``requires_ack`` messages of the caller's own board count;
        an unknown, foreign, stale or repeated id records nothing. ACK never
        resolves or answers anything and advances no revision.
        """
        if actor.session_id is None or not message_ids:
            return 0
        session_id = actor.session_id

        def ack(ctx: WriteContext) -> int:
            now = self.clock.stamp()
            count = 0
            for message_id in self.unrecorded_acks(actor, frozenset(message_ids)):
                count += self.store.db.execute_sql(
                    'INSERT OR IGNORE INTO "board_ack" ("session_id", "message_id", "first_acked_at") '
                    'VALUES (?, ?, ?)', (session_id, message_id, now)).rowcount
            return count

        return self.store.write(ack)

    def first_acked_at(self, session_id: str, message_id: str) -> str | None:
        """When ``session_id`` first ACKed ``message_id`` (None: never). Observability only."""
        A = self.store.models.BoardAck
        row = A.get_or_none((A.session_id == session_id) & (A.message_id == message_id))
        return None if row is None else str(row.first_acked_at)

    # -- audit -----------------------------------------------------------------
    def record_board_audit(self, actor: Actor, operation: str, outcome: str, values: dict[str, Any],
                           result: Any = None) -> None:
        """Append one audit row for a board call (a write); see :meth:`record_board_audits`."""
        self.record_board_audits([(actor, operation, outcome, values, result)])

    def record_board_audits(self, entries: list[tuple[Actor, str, str, dict[str, Any], Any]]) -> None:
        """Append audit rows ``(actor, operation, outcome, values, result)`` in one write.

        Metadata only (:func:`audit_metadata`): never a body, an answer or a
        raw completion key. Keeps the newest :data:`AUDIT_ROWS` rows.
        """
        if not entries:
            return
        A = self.store.models.BoardAudit

        def record(ctx: WriteContext) -> None:
            now = self.clock.stamp()
            rowid = 0
            for actor, operation, outcome, values, result in entries:
                board, message_id, details = audit_metadata(operation, values, result)
                rowid = self.store.insert(A, created_at=now, operation=operation, outcome=outcome,
                                          participant_id=actor.participant_id, session_id=actor.session_id,
                                          board_session_id=board, message_id=message_id, details=details)
            self.store.db.execute_sql('DELETE FROM "board_audit" WHERE "id" <= ?', (rowid - AUDIT_ROWS,))

        self.store.write(record)


#: The operations whose every call the room audits (metadata only).
AUDITED = frozenset({"post_session_message", "list_session_messages", "get_session_assignment",
                     "complete_session_message", "observe_session_messages", "post_peer_message",
                     "list_session_peers", "session_discussion_summary", "session_handoff_summary"})


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _bytes(value: Any) -> int | None:
    return len(value.encode("utf-8")) if isinstance(value, str) else None


def _count(value: Any) -> int:
    return len(value) if isinstance(value, list) else 0


def audit_metadata(operation: str, values: dict[str, Any], result: Any) -> tuple[str | None, str | None, dict]:
    """``(board_session_id, message_id, details)`` of one board call: ids, counts and identities only.

    ``details`` never holds a body, an answer, a tag's text or a raw
    completion key: bodies become byte counts, tags a count, the key its
    completion identity (``cid_…``), a fence its fingerprint.
    """
    ok = isinstance(result, dict)
    board = _str(values.get("session_id"))
    message_id = _str(values.get("message_id"))
    details: dict[str, Any] = {}
    recording = _str(values.get("recording_session_id"))
    if recording is not None:
        details["recording_session_id"] = recording
    if operation in ("post_session_message", "post_peer_message"):
        details.update(kind=_str(values.get("kind")), body_bytes=_bytes(values.get("body")),
                       tag_count=_count(values.get("tags")), requires_ack=bool(values.get("requires_ack")))
        board_post = operation == "post_session_message"
        details.update({"reply_to": _str(values.get("reply_to"))} if board_post
                       else {"peer_id": _str(values.get("peer_id"))})
        if ok:
            message_id = result.get("message_id")
            if board_post:
                details["author_session_id"] = result.get("author_session_id")
    elif operation == "complete_session_message":
        key, fence = values.get("completion_key"), values.get("expected_assignment_fence")
        details.update(answer_bytes=_bytes(values.get("answer")), tag_count=_count(values.get("tags")),
                       completion_id=completion_identity(key) if isinstance(key, str) else None,
                       fence_fingerprint=fence_fingerprint(fence) if isinstance(fence, str) else None)
        if ok:
            answer = result.get("answer") or {}
            details.update(answer_message_id=answer.get("message_id"), replayed=bool(result.get("replayed")),
                           author_session_id=answer.get("author_session_id"))
    elif operation == "get_session_assignment":
        if ok:
            fence = result.get("assignment_fence")
            details.update(reply_count=_count(result.get("replies")), completable=result.get("completable"),
                           fence_fingerprint=fence_fingerprint(fence) if isinstance(fence, str) else None)
    elif operation == "list_session_messages":
        details["filters"] = sorted(k for k in ("message_id", "reply_to", "kind", "status")
                                    if values.get(k) is not None)
        details["reply_to"] = _str(values.get("reply_to"))
        if ok:
            details["returned"] = _count(result.get("messages"))
    elif operation == "observe_session_messages":
        details.update(with_token=values.get("after_observation_token") is not None,
                       wait_seconds=values.get("wait_seconds") if isinstance(values.get("wait_seconds"), int) else None)
        if ok:
            details.update(returned=_count(result.get("messages")), has_more=bool(result.get("has_more")),
                           history_lost=bool(result.get("history_lost")), wait_outcome=result.get("wait_outcome"))
    elif operation in ("session_discussion_summary", "session_handoff_summary") and ok:
        details.update(truncated=bool(result.get("truncated")), history_lost=bool(result.get("history_lost")))
    elif operation == "list_session_peers" and ok:
        details.update(peers=_count(result.get("peers")), returned=_count(result.get("messages")))
    return board, message_id, details
