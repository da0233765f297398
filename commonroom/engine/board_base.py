"""The common ground of session boards: bounds, checks, the message wire shape, revision and retention.

Seed ``collaboration-board.txt``; DESIGN.md, *Boards*. :class:`BoardBase`
is what the board mixins share (:mod:`.boards` posting and listing,
:mod:`.board_completion` the assignment and its fenced completion,
:mod:`.board_observation` the observation delta, :mod:`.board_acks` ACK
piggyback and audit): checking a message's kind, priority, body and tags
against the bounds, the authorized ``author_session_id``, a message row
as its wire shape (``boards#Message``), the board's durable revision and
its retention (newest :data:`RETAIN_MESSAGES` plus every open todo).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from commonroom.generated.types.boards import Message

from .. import tokens
from ..errors import InvalidRequest, LimitExceeded, MessageNotFound, NotFound, PermissionDenied
from ..store import WriteContext
from ..store.models import BoardMessage as MessageRow
from ..store.rows import first_row, row_by_id
from ..vocabulary import MESSAGE_KINDS, MESSAGE_STATUSES, PRIORITIES
from .base import Actor, EngineBase

#: The message kinds: ``boards#MessageKind`` (:mod:`commonroom.vocabulary`).
KINDS = MESSAGE_KINDS
#: ``boards#Priority`` (lowest first) and ``boards#MessageStatus``.
STATUSES = MESSAGE_STATUSES

#: Bounds (DESIGN.md, *Boards: bounds*); each is ``limit_exceeded`` beyond, nothing stored.
BODY_BYTES = 16 * 1024
TAGS_MAX = 16
TAG_CHARS = 64
#: An assignment snapshot's bounds (``assignment_too_large`` beyond).
SNAPSHOT_REPLIES = 200
SNAPSHOT_BYTES = 256 * 1024
#: A board keeps its newest messages plus every open todo.
RETAIN_MESSAGES = 2000
#: Messages in one observation page, and the longest wait.
OBSERVE_PAGE = 100
WAIT_SECONDS_MAX = 30
#: ``completion_key`` length bound (characters).
KEY_CHARS = 200

#: ACK piggyback: open ``requires_ack`` messages shown on one tool result (oldest first),
#: and the most ids one request may echo in ``ack_session_message_ids``.
ACK_PIGGYBACK = 20
ACK_IDS_MAX = 100
#: The audit log keeps its newest rows (DESIGN.md, *Boards: bounds*).
AUDIT_ROWS = 20_000

#: A message's columns as the plain-SQL reads select them (the wire shape's sources, and its revision).
WIRE_COLUMNS = ("id", "board_session_id", "kind", "priority", "tags", "body", "reply_to", "requires_ack", "status",
                "resolved_by_message_id", "resolved_at", "participant_id", "author_session_id", "created_at",
                "updated_at", "revision")

FENCE_PREFIX = "af1."
TOKEN_PREFIX = "bo1."
BOARD_EVENTS = ("board.message_posted", "board.message_resolved")


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _sha(data: bytes | str) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def completion_identity(key: str) -> str:
    """The stored identity of a completion key: a fixed-size digest, never the key."""
    return "cid_" + _sha("commonroom completion key\x00" + key)


def fence_fingerprint(fence: str) -> str:
    """The stored fingerprint of an accepted assignment fence."""
    return _sha("commonroom assignment fence\x00" + fence)


class BoardBase(EngineBase):
    """Checks, the wire shape, the revision and retention shared by the board mixins."""

    # -- checks -------------------------------------------------------------
    def _board_exists(self, session_id: str) -> None:
        if not self._board_known(session_id):
            raise NotFound("no such session board", details={"session_id": session_id})

    def _recording(self, actor: Actor, recording_session_id: str | None) -> str | None:
        """The authorized ``author_session_id``: a live session of the caller's participant, else None."""
        if recording_session_id is None:
            return None
        row = row_by_id(self.store.models.Session, recording_session_id)
        now = self.clock.stamp()
        if (row is None or actor.participant_id is None or row.participant_id != actor.participant_id
                or row.revoked_at is not None or row.expires_at <= now):
            raise PermissionDenied("recording_session_id is not a live session of the caller's participant",
                                   details={"parameter": "recording_session_id"})
        return str(row.id)

    @staticmethod
    def _check_text(value: Any, name: str) -> str:
        if not isinstance(value, str) or value == "":
            raise InvalidRequest(f"{name} must be a non-empty string", details={"parameter": name})
        size = len(value.encode("utf-8"))
        if size > BODY_BYTES:
            raise LimitExceeded(f"{name} is {size} bytes; at most {BODY_BYTES}",
                                details={"limit": f"{name}_bytes", "maximum": BODY_BYTES, "actual": size})
        return value

    @staticmethod
    def _check_tags(tags: Any) -> list[str]:
        if tags is None:
            return []
        if not isinstance(tags, list) or not all(isinstance(t, str) and t for t in tags):
            raise InvalidRequest("tags must be a list of non-empty strings", details={"parameter": "tags"})
        if len(tags) > TAGS_MAX:
            raise LimitExceeded(f"{len(tags)} tags; at most {TAGS_MAX}",
                                details={"limit": "tags", "maximum": TAGS_MAX, "actual": len(tags)})
        for tag in tags:
            if len(tag) > TAG_CHARS:
                raise LimitExceeded(f"a tag of {len(tag)} characters; at most {TAG_CHARS}",
                                    details={"limit": "tag_chars", "maximum": TAG_CHARS, "actual": len(tag)})
        return list(tags)

    @staticmethod
    def _check_message(kind: Any, priority: Any, body: Any, tags: Any) -> tuple[str, str, str, list[str]]:
        """A message's kind (required), priority (default normal), body and tags, checked against the bounds."""
        checked_kind = BoardBase._check_choice(kind, KINDS, "kind")
        if checked_kind is None:
            raise InvalidRequest("kind is required", details={"parameter": "kind"})
        checked_priority = BoardBase._check_choice(priority, PRIORITIES, "priority", "normal")
        assert checked_priority is not None
        return checked_kind, checked_priority, BoardBase._check_text(body, "body"), BoardBase._check_tags(tags)

    @staticmethod
    def _check_choice(value: Any, choices: tuple[str, ...], name: str, default: str | None = None) -> Any:
        if value is None:
            return default
        if value not in choices:
            raise InvalidRequest(f"{name} must be one of {', '.join(choices)}, not {value!r}",
                                 details={"parameter": name})
        return value

    def _message(self, session_id: str, message_id: Any) -> MessageRow:
        row = first_row(self.store.models.BoardMessage, 'WHERE "id" = ? AND "board_session_id" = ?',
                        (message_id, session_id))
        if row is None:
            raise MessageNotFound("no such message on this board",
                                  details={"session_id": session_id, "message_id": message_id})
        return row

    # -- wire ---------------------------------------------------------------
    def _message_wire(self, row: MessageRow) -> Message:
        """A message row as its wire shape (``boards#Message``)."""
        return self._wire_of(row.__data__)

    def _wire_of(self, values: dict[str, Any]) -> Message:
        """The wire shape of a message from its column values (``tags`` decoded).

        ``first_acked_at``: when the board's own session first ACKed it
        (only a ``requires_ack`` message can be ACKed; null otherwise).
        """
        first_acked_at = None
        if values["requires_ack"]:
            found = self.store.db.execute_sql(
                'SELECT "first_acked_at" FROM "board_ack" WHERE "session_id" = ? AND "message_id" = ?',
                (values["board_session_id"], values["id"])).fetchone()
            first_acked_at = found[0] if found else None
        return {
            "message_id": values["id"],
            "session_id": values["board_session_id"],
            "kind": values["kind"],
            "priority": values["priority"],
            "tags": list(values["tags"] or []),
            "body": values["body"],
            "reply_to": values["reply_to"],
            "requires_ack": bool(values["requires_ack"]),
            "status": values["status"],
            "resolved_by_message_id": values["resolved_by_message_id"],
            "resolved_at": values["resolved_at"],
            "author": {"participant_id": values["participant_id"],
                       "name": self.participant_name(values["participant_id"]) or "operator"},
            "author_session_id": values["author_session_id"],
            "created_at": values["created_at"],
            "updated_at": values["updated_at"],
            "first_acked_at": first_acked_at,
        }

    def _board_known(self, session_id: Any) -> bool:
        """True when ``session_id`` names a session of the room (every session has a board); plain SQL."""
        return isinstance(session_id, str) and self.store.db.execute_sql(
            'SELECT 1 FROM "session" WHERE "id" = ?', (session_id,)).fetchone() is not None

    # -- the board's revision and retention ---------------------------------
    def _board_state(self, session_id: str) -> tuple[int, int]:
        """``(revision, low_watermark)`` of a board (0, 0 before its first message); plain SQL."""
        found = self.store.db.execute_sql('SELECT "revision", "low_watermark" FROM "board" WHERE "session_id" = ?',
                                          (session_id,)).fetchone()
        return (0, 0) if found is None else (int(found[0]), int(found[1]))

    def _next_revision(self, session_id: str) -> int:
        db = self.store.db
        db.execute_sql('INSERT OR IGNORE INTO "board" ("session_id", "revision", "low_watermark", "created_at") '
                       'VALUES (?, 0, 0, ?)', (session_id, self.clock.stamp()))
        db.execute_sql('UPDATE "board" SET "revision" = "revision" + 1 WHERE "session_id" = ?', (session_id,))
        return int(db.execute_sql('SELECT "revision" FROM "board" WHERE "session_id" = ?',
                                  (session_id,)).fetchone()[0])

    def _insert_message(self, ctx: WriteContext, actor: Actor, session_id: str, *, kind: str, body: str,
                        priority: str, tags: list[str], reply_to: str | None, requires_ack: bool,
                        author_session_id: str | None, status: str = "open", **extra: Any) -> MessageRow:
        M = self.store.models.BoardMessage
        revision = self._next_revision(session_id)
        now = self.clock.stamp()
        message_id = tokens.new_id("msg_")
        self.store.insert(M, id=message_id, board_session_id=session_id, seq=revision, revision=revision,
                          kind=kind, priority=priority, tags=tags, body=body, reply_to=reply_to,
                          requires_ack=requires_ack, status=status, participant_id=actor.participant_id,
                          author_session_id=author_session_id, created_at=now, updated_at=now, replies_pruned=0,
                          **extra)
        ctx.emit("board.message_posted",
                 {"board_session_id": session_id, "message_id": message_id, "kind": kind, "revision": revision,
                  "reply_to": reply_to},
                 participant_id=actor.participant_id, session_id=actor.session_id)
        return self._message(session_id, message_id)

    def _prune(self, session_id: str) -> int:
        """Keep the board's newest :data:`RETAIN_MESSAGES` messages plus every open todo; how many went.

        A pruned direct reply marks its todo (``replies_pruned``: its
        assignment is incomplete from then on); a pruned message's ACK row
        goes with it; the board's low-watermark moves to the newest
        revision pruned. Inside a write; idempotent.
        """
        db = self.store.db
        found = db.execute_sql('SELECT "seq" FROM "board_message" WHERE "board_session_id" = ? '
                               'ORDER BY "seq" DESC LIMIT 1 OFFSET ?', (session_id, RETAIN_MESSAGES - 1)).fetchone()
        if found is None:
            return 0
        doomed = db.execute_sql(
            'SELECT "id", "reply_to", "revision" FROM "board_message" WHERE "board_session_id" = ? AND "seq" < ? '
            'AND NOT ("kind" = \'todo\' AND "status" = \'open\')', (session_id, found[0])).fetchall()
        if not doomed:
            return 0
        for message_id, reply_to, _ in doomed:
            if reply_to is not None:
                db.execute_sql('UPDATE "board_message" SET "replies_pruned" = "replies_pruned" + 1 '
                               'WHERE "id" = ? AND "board_session_id" = ?', (reply_to, session_id))
            db.execute_sql('DELETE FROM "board_message" WHERE "id" = ?', (message_id,))
            db.execute_sql('DELETE FROM "board_ack" WHERE "session_id" = ? AND "message_id" = ?',
                           (session_id, message_id))
        newest = max(rev for _, _, rev in doomed)
        db.execute_sql('UPDATE "board" SET "low_watermark" = MAX("low_watermark", ?) WHERE "session_id" = ?',
                       (newest, session_id))
        return len(doomed)
