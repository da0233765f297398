"""Session message boards (seed ``collaboration-board.txt``; DESIGN.md, *Boards*).

Every commonroom session has a board (the seed's Workflow Session, named by
its public id). Messages have a kind, a priority, tags, an optional
``reply_to`` on the same board and ``requires_ack``. A ``todo`` is the
executable assignment: :meth:`BoardsMixin.get_session_assignment` reads the
todo and every retained direct reply in one snapshot with an opaque
``assignment_fence`` over exactly that state, and
:meth:`BoardsMixin.complete_session_message` completes it in one
transaction (one ``answer`` reply, the todo resolved, ``resolved_by_message_id``,
a completion identity derived from the caller's key and a fingerprint of
the accepted fence), replays an exact retry and fails closed on any other
reuse of the key. :meth:`BoardsMixin.observe_session_messages` is the
message-state delta over a durable per-board revision, with opaque signed
tokens and one bounded wait on the live hub.

Authority (DESIGN.md: "the authority boundary is the room plus
capabilities"): any session of the room holding ``read`` reads any board
of the room, one holding ``message`` posts and completes on any board; a
session or message id grants nothing by itself. A message id of another
board is ``message_not_found`` (nothing revealed). ``recording_session_id``
must be a live session of the caller's own participant; it alone sets
``author_session_id``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any, Callable

import peewee as pw

from generated.types.boards import Assignment, Completion, Message, MessagesPage, Observation

from .. import tokens
from ..errors import (AssignmentHistoryLost, AssignmentStale, AssignmentTooLarge, CommonroomError,
                      CompletionMismatch, CompletionPersistenceUncertain, InvalidRequest, LimitExceeded,
                      MessageNotFound, NotFound, PermissionDenied)
from ..store import WriteContext
from ..store.models import BoardMessage as MessageRow
from .base import Actor, EngineBase, decode_cursor, encode_cursor, parse_limit, require

KINDS = ("note", "proposal", "question", "answer", "decision", "risk", "progress", "guidance", "todo")
PRIORITIES = ("low", "normal", "high", "urgent")
STATUSES = ("open", "resolved")

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


class BoardsMixin(EngineBase):
    """Posting, listing, assignment, completion and observation on session boards."""

    #: The room's :class:`commonroom.live.stream.Streams` (set by the room), for waits.
    board_streams: Any = None

    # -- checks -------------------------------------------------------------
    def _board_exists(self, session_id: str) -> None:
        Session = self.store.models.Session
        if not isinstance(session_id, str) or not Session.select().where(Session.id == session_id).exists():
            raise NotFound("no such session board", details={"session_id": session_id})

    def _recording(self, actor: Actor, recording_session_id: str | None) -> str | None:
        """The authorized ``author_session_id``: a live session of the caller's participant, else None."""
        if recording_session_id is None:
            return None
        Session = self.store.models.Session
        row = Session.get_or_none(Session.id == recording_session_id)
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
        checked_kind = BoardsMixin._check_choice(kind, KINDS, "kind")
        if checked_kind is None:
            raise InvalidRequest("kind is required", details={"parameter": "kind"})
        checked_priority = BoardsMixin._check_choice(priority, PRIORITIES, "priority", "normal")
        assert checked_priority is not None
        return checked_kind, checked_priority, BoardsMixin._check_text(body, "body"), BoardsMixin._check_tags(tags)

    @staticmethod
    def _check_choice(value: Any, choices: tuple[str, ...], name: str, default: str | None = None) -> Any:
        if value is None:
            return default
        if value not in choices:
            raise InvalidRequest(f"{name} must be one of {', '.join(choices)}, not {value!r}",
                                 details={"parameter": name})
        return value

    def _message(self, session_id: str, message_id: Any) -> MessageRow:
        M = self.store.models.BoardMessage
        row = M.get_or_none((M.id == message_id) & (M.board_session_id == session_id))
        if row is None:
            raise MessageNotFound("no such message on this board",
                                  details={"session_id": session_id, "message_id": message_id})
        return row

    # -- wire ---------------------------------------------------------------
    def _message_wire(self, row: MessageRow) -> Message:
        return {
            "message_id": row.id,
            "session_id": row.board_session_id,
            "kind": row.kind,  # type: ignore[typeddict-item]
            "priority": row.priority,  # type: ignore[typeddict-item]
            "tags": list(row.tags or []),
            "body": row.body,
            "reply_to": row.reply_to,
            "requires_ack": bool(row.requires_ack),
            "status": row.status,  # type: ignore[typeddict-item]
            "resolved_by_message_id": row.resolved_by_message_id,
            "resolved_at": row.resolved_at,
            "author": {"participant_id": row.participant_id,
                       "name": self.participant_name(row.participant_id) or "operator"},
            "author_session_id": row.author_session_id,
            "created_at": row.created_at,
            "updated_at": row.updated_at,
        }

    # -- the board's revision and retention ---------------------------------
    def _board_state(self, session_id: str) -> tuple[int, int]:
        """``(revision, low_watermark)`` of a board (0, 0 before its first message)."""
        Board = self.store.models.Board
        row = Board.get_or_none(Board.session_id == session_id)
        return (0, 0) if row is None else (row.revision, row.low_watermark)

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
        return M.get_by_id(message_id)

    def _prune(self, session_id: str) -> None:
        """Keep the board's newest :data:`RETAIN_MESSAGES` messages plus every open todo.

        A pruned direct reply marks its todo (``replies_pruned``: its
        assignment is incomplete from then on); the board's low-watermark
        moves to the newest revision pruned.
        """
        db = self.store.db
        found = db.execute_sql('SELECT "seq" FROM "board_message" WHERE "board_session_id" = ? '
                               'ORDER BY "seq" DESC LIMIT 1 OFFSET ?', (session_id, RETAIN_MESSAGES - 1)).fetchone()
        if found is None:
            return
        doomed = db.execute_sql(
            'SELECT "id", "reply_to", "revision" FROM "board_message" WHERE "board_session_id" = ? AND "seq" < ? '
            'AND NOT ("kind" = \'todo\' AND "status" = \'open\')', (session_id, found[0])).fetchall()
        if not doomed:
            return
        for message_id, reply_to, _ in doomed:
            if reply_to is not None:
                db.execute_sql('UPDATE "board_message" SET "replies_pruned" = "replies_pruned" + 1 '
                               'WHERE "id" = ? AND "board_session_id" = ?', (reply_to, session_id))
            db.execute_sql('DELETE FROM "board_message" WHERE "id" = ?', (message_id,))
        newest = max(rev for _, _, rev in doomed)
        db.execute_sql('UPDATE "board" SET "low_watermark" = MAX("low_watermark", ?) WHERE "session_id" = ?',
                       (newest, session_id))

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
        query = M.select().where(M.board_session_id == session_id)
        if message_id is not None:
            query = query.where(M.id == message_id)
        if reply_to is not None:
            query = query.where(M.reply_to == reply_to)
        if kind is not None:
            query = query.where(M.kind == kind)
        if status is not None:
            query = query.where(M.status == status)
        after = decode_cursor(cursor)
        if after is not None:
            if not (isinstance(after, dict) and isinstance(after.get("seq"), int)):
                raise InvalidRequest("cursor is not one this room issued", details={"parameter": "cursor"})
            query = query.where(M.seq > after["seq"])
        rows = list(query.order_by(M.seq).limit(size + 1))
        more = len(rows) > size
        rows = rows[:size]
        return {"messages": [self._message_wire(r) for r in rows],
                "next_cursor": encode_cursor({"seq": rows[-1].seq}) if more else None}

    # -- the assignment -----------------------------------------------------
    def _snapshot(self, session_id: str, todo: MessageRow) -> Assignment:
        """The todo and every retained direct reply, with the fence over exactly that state.

        ``AssignmentHistoryLost`` when retention pruned a direct reply;
        ``AssignmentTooLarge`` beyond :data:`SNAPSHOT_REPLIES` replies or
        :data:`SNAPSHOT_BYTES` bytes.
        """
        M = self.store.models.BoardMessage
        if todo.replies_pruned:
            raise AssignmentHistoryLost(
                f"{todo.replies_pruned} direct replies of this todo were pruned by retention",
                details={"session_id": session_id, "message_id": todo.id, "pruned_replies": todo.replies_pruned})
        rows = list(M.select().where((M.board_session_id == session_id) & (M.reply_to == todo.id))
                    .order_by(M.seq).limit(SNAPSHOT_REPLIES + 1))
        if len(rows) > SNAPSHOT_REPLIES:
            raise AssignmentTooLarge(f"the todo has more than {SNAPSHOT_REPLIES} direct replies",
                                     details={"limit": "assignment_replies", "maximum": SNAPSHOT_REPLIES,
                                              "message_id": todo.id})
        todo_wire = self._message_wire(todo)
        replies = [self._message_wire(r) for r in rows]
        state = [self.workspace_id, session_id, todo_wire, replies]
        encoded = _canonical(state)
        if len(encoded) > SNAPSHOT_BYTES:
            raise AssignmentTooLarge(f"the assignment is {len(encoded)} bytes; at most {SNAPSHOT_BYTES}",
                                     details={"limit": "assignment_bytes", "maximum": SNAPSHOT_BYTES,
                                              "actual": len(encoded), "message_id": todo.id})
        return {"session_id": session_id, "todo": todo_wire, "replies": replies,
                "completable": todo.status == "open", "assignment_fence": FENCE_PREFIX + _sha(encoded)}

    def _todo(self, session_id: str, message_id: str) -> MessageRow:
        row = self._message(session_id, message_id)
        if row.kind != "todo":
            raise InvalidRequest(f"message {message_id} is a {row.kind}, not a todo",
                                 details={"parameter": "message_id", "kind": row.kind})
        return row

    def get_session_assignment(self, actor: Actor, session_id: str, message_id: str) -> Assignment:
        """One store snapshot of a todo, its retained direct replies and their ``assignment_fence``. Needs ``read``."""
        require(actor, "read")
        with self.store.db.atomic():  # one read transaction: one snapshot
            self._board_exists(session_id)
            return self._snapshot(session_id, self._todo(session_id, message_id))

    def complete_session_message(self, actor: Actor, session_id: str, message_id: str, answer: str,
                                 completion_key: str, expected_assignment_fence: str | None = None,
                                 priority: str | None = None, tags: list[str] | None = None,
                                 recording_session_id: str | None = None) -> Completion:
        """Complete an open todo atomically, fenced and idempotent (see ``docs/boards.md``). Needs ``message``.

        One transaction adds exactly one ``answer`` reply, resolves the
        todo (``resolved_by_message_id``) and stores the completion identity
        (a digest of ``completion_key``), the accepted fence's fingerprint
        and a digest of the content. The same key with the same content and
        fence answers the original completion again (``replayed``); the same
        key with anything else is ``CompletionMismatch``. A fence other than
        the current one is ``AssignmentStale`` (nothing written). A commit
        whose outcome is unknown is ``CompletionPersistenceUncertain``.
        """
        require(actor, "message")
        if expected_assignment_fence is None:
            raise InvalidRequest("expected_assignment_fence is required: read get_session_assignment first",
                                 details={"parameter": "expected_assignment_fence"})
        fence = expected_assignment_fence
        if (not isinstance(fence, str) or not fence.startswith(FENCE_PREFIX)
                or len(fence) != len(FENCE_PREFIX) + 64
                or any(c not in "0123456789abcdef" for c in fence[len(FENCE_PREFIX):])):
            raise InvalidRequest("expected_assignment_fence is not an assignment_fence this room issued",
                                 details={"parameter": "expected_assignment_fence"})
        if not isinstance(completion_key, str) or not 0 < len(completion_key) <= KEY_CHARS:
            raise InvalidRequest(f"completion_key must be 1 to {KEY_CHARS} characters",
                                 details={"parameter": "completion_key"})
        answer = self._check_text(answer, "answer")
        priority = self._check_choice(priority, PRIORITIES, "priority", "normal")
        tag_list = self._check_tags(tags)
        identity = completion_identity(completion_key)
        fingerprint = fence_fingerprint(fence)

        def complete(ctx: WriteContext) -> Completion:
            self._board_exists(session_id)
            author = self._recording(actor, recording_session_id)
            digest = _sha(_canonical({"answer": answer, "tags": tag_list, "priority": priority,
                                      "author_session_id": author, "fence": fingerprint}))
            todo = self._todo(session_id, message_id)
            if todo.status != "open":
                return self._replay(session_id, todo, identity, digest)
            current = self._snapshot(session_id, todo)
            if current["assignment_fence"] != fence:
                raise AssignmentStale(
                    "the assignment changed since your fence: re-evaluate the current assignment",
                    details={"state_changed": False, "session_id": session_id, "message_id": message_id,
                             "assignment": current, "fresh_assignment_fence": current["assignment_fence"]})
            reply = self._insert_message(ctx, actor, session_id, kind="answer", body=answer, priority=priority,
                                         tags=tag_list, reply_to=todo.id, requires_ack=False,
                                         author_session_id=author)
            revision = self._next_revision(session_id)
            now = self.clock.stamp()
            M = self.store.models.BoardMessage
            self.store.update(M, todo.id, status="resolved", resolved_by_message_id=reply.id, resolved_at=now,
                              revision=revision, updated_at=now, completion_id=identity,
                              completion_fence=fingerprint, completion_digest=digest)
            ctx.emit("board.message_resolved",
                     {"board_session_id": session_id, "message_id": todo.id, "revision": revision,
                      "resolved_by_message_id": reply.id},
                     participant_id=actor.participant_id, session_id=actor.session_id)
            self._prune(session_id)
            return {"session_id": session_id, "todo": self._message_wire(M.get_by_id(todo.id)),
                    "answer": self._message_wire(reply), "replayed": False}

        try:
            return self.store.write(complete)
        except CommonroomError as exc:
            if exc.code != "storage_unavailable":
                raise
            raise self._uncertain(session_id, message_id, exc) from exc
        except (pw.DatabaseError, pw.InterfaceError, OSError) as exc:
            raise self._uncertain(session_id, message_id, exc) from exc

    @staticmethod
    def _uncertain(session_id: str, message_id: str, exc: Exception) -> CompletionPersistenceUncertain:
        """The seed's answer when a completion's commit could not be confirmed (storage failures included)."""
        return CompletionPersistenceUncertain(
            "the completion's commit could not be confirmed: retry the exact same request",
            details={"failure_kind": "outcome_unknown", "retry_same_completion": True,
                     "recovery_kind": "retry_same", "session_id": session_id, "message_id": message_id,
                     "cause": type(exc).__name__})

    def _replay(self, session_id: str, todo: MessageRow, identity: str, digest: str) -> Completion:
        """A resolved todo: the original completion for an exact retry, else a refusal (nothing written)."""
        M = self.store.models.BoardMessage
        if todo.completion_id is not None and hmac.compare_digest(todo.completion_id, identity):
            if todo.completion_digest is None or todo.completion_fence is None or todo.resolved_by_message_id is None:
                raise CompletionMismatch("this todo's completion record is incomplete: not replayable",
                                         details={"session_id": session_id, "message_id": todo.id})
            if not hmac.compare_digest(todo.completion_digest, digest):
                raise CompletionMismatch(
                    "this completion_key completed this todo with a different answer, tags, priority, author "
                    "or fence", details={"session_id": session_id, "message_id": todo.id})
            reply = M.get_or_none((M.id == todo.resolved_by_message_id) & (M.board_session_id == session_id))
            if reply is None:
                raise AssignmentHistoryLost("the original answer was pruned by retention",
                                            details={"session_id": session_id, "message_id": todo.id})
            return {"session_id": session_id, "todo": self._message_wire(todo), "answer": self._message_wire(reply),
                    "replayed": True}
        details: dict[str, Any] = {"state_changed": False, "session_id": session_id, "message_id": todo.id,
                                   "fresh_assignment_fence": None}
        try:
            details["assignment"] = self._snapshot(session_id, todo)
        except CommonroomError:
            details["assignment"] = None
        raise AssignmentStale("the todo is already resolved by another completion", details=details)

    # -- observation ----------------------------------------------------------
    def _token_key(self) -> bytes:
        secret = self.store.meta("board_token_secret")
        if not secret:
            raise InvalidRequest("this sidecar has no board token key")
        return secret.encode("ascii")

    def _token(self, session_id: str, revision: int) -> str:
        payload = base64.urlsafe_b64encode(_canonical([session_id, revision])).rstrip(b"=").decode()
        mac = hmac.new(self._token_key(), payload.encode(), hashlib.sha256).hexdigest()[:32]
        return f"{TOKEN_PREFIX}{payload}.{mac}"

    def _read_token(self, session_id: str, token: str, revision: int) -> int:
        """The revision inside ``token``; ``InvalidRequest`` when forged, foreign or from the future."""
        bad = InvalidRequest("after_observation_token is not a token of this board",
                             details={"parameter": "after_observation_token"})
        if not isinstance(token, str) or not token.startswith(TOKEN_PREFIX) or token.count(".") != 2:
            raise bad
        payload, mac = token[len(TOKEN_PREFIX):].split(".")
        expected = hmac.new(self._token_key(), payload.encode(), hashlib.sha256).hexdigest()[:32]
        if not hmac.compare_digest(mac, expected):
            raise bad
        try:
            board, after = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        except (ValueError, TypeError):
            raise bad from None
        if board != session_id or not isinstance(after, int) or isinstance(after, bool) or not 0 <= after <= revision:
            raise bad
        return after

    def _observe_now(self, session_id: str, after: int, limit: int) -> Observation:
        M = self.store.models.BoardMessage
        with self.store.db.atomic():
            revision, low = self._board_state(session_id)
            rows = list(M.select().where((M.board_session_id == session_id) & (M.revision > after))
                        .order_by(M.revision).limit(limit + 1))
        more = len(rows) > limit
        rows = rows[:limit]
        through = rows[-1].revision if more else revision
        return {"session_id": session_id, "observation_token": self._token(session_id, through), "baseline": False,
                "changed": bool(rows), "messages": [self._message_wire(r) for r in rows], "has_more": more,
                "history_lost": after < low, "wait_outcome": "updated" if rows else "timeout"}

    async def observe_session_messages(self, actor: Actor, session_id: str,
                                       after_observation_token: str | None = None, wait_seconds: Any = None,
                                       limit: Any = None) -> Observation:
        """The board's message-state delta after a token (see ``docs/boards.md``). Needs ``read``.

        Without a token: a baseline (the current revision), nothing
        replayed. With one: retained messages whose state changed after it,
        in change order, at most ``limit`` (1–100); ``has_more`` when there
        are more (the token then covers only what was returned). With
        nothing new and ``wait_seconds`` > 0, one wait on the live hub.
        """
        require(actor, "read")
        wait = 0 if wait_seconds is None else wait_seconds
        if not isinstance(wait, int) or isinstance(wait, bool) or not 0 <= wait <= WAIT_SECONDS_MAX:
            raise InvalidRequest(f"wait_seconds must be an integer from 0 to {WAIT_SECONDS_MAX}",
                                 details={"parameter": "wait_seconds"})
        size = OBSERVE_PAGE if limit is None else limit
        if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= OBSERVE_PAGE:
            raise InvalidRequest(f"limit must be an integer from 1 to {OBSERVE_PAGE}", details={"parameter": "limit"})
        self._board_exists(session_id)
        revision, _ = self._board_state(session_id)
        if after_observation_token is None:
            return {"session_id": session_id, "observation_token": self._token(session_id, revision),
                    "baseline": True, "changed": False, "messages": [], "has_more": False, "history_lost": False,
                    "wait_outcome": None}
        after = self._read_token(session_id, after_observation_token, revision)
        mark = self.store.last_event_id()  # before the read: a change after it is in the ring
        result = self._observe_now(session_id, after, size)
        if result["changed"] or result["history_lost"] or wait == 0 or self.board_streams is None:
            return result
        accept: Callable[[dict], bool] = lambda event: (
            event.get("type") in BOARD_EVENTS and event.get("payload", {}).get("board_session_id") == session_id)
        await self.board_streams.wait_next(mark, float(wait), session_id=actor.session_id, accept=accept)
        return self._observe_now(session_id, after, size)

    # -- ACK piggyback (issue 11 item 6) ---------------------------------------
    def pending_acks(self, actor: Actor, acked: frozenset[str] = frozenset()) -> tuple[list[Message], int]:
        """Open ``requires_ack`` messages addressed to the caller's session, less ``acked``.

        A message on a session's board is addressed to that session. At
        most :data:`ACK_PIGGYBACK` (oldest first) and how many more were
        left off. Showing a message records nothing. A read.
        """
        if actor.session_id is None:
            return [], 0
        # the hot path (every tool call): one indexed probe, no query building
        found = self.store.db.execute_sql(
            'SELECT "id" FROM "board_message" WHERE "board_session_id" = ? AND "requires_ack" = 1 AND '
            '"status" = \'open\' ORDER BY "seq" LIMIT ?', (actor.session_id, ACK_PIGGYBACK + 1 + len(acked))).fetchall()
        if not found or all(row[0] in acked for row in found):
            if len(found) <= ACK_PIGGYBACK + len(acked):
                return [], 0
        M = self.store.models.BoardMessage
        query = M.select().where((M.board_session_id == actor.session_id) & (M.requires_ack == True)  # noqa: E712
                                 & (M.status == "open"))
        if acked:
            query = query.where(M.id.not_in(list(acked)))
        rows = list(query.order_by(M.seq).limit(ACK_PIGGYBACK + 1))
        if len(rows) <= ACK_PIGGYBACK:
            return [self._message_wire(r) for r in rows], 0
        return [self._message_wire(r) for r in rows[:ACK_PIGGYBACK]], query.count() - ACK_PIGGYBACK

    def unrecorded_acks(self, actor: Actor, acked: frozenset[str]) -> list[str]:
        """Which of ``acked`` are open ``requires_ack`` messages of the caller's board with no ACK yet (a read)."""
        if actor.session_id is None or not acked:
            return []
        M, A = self.store.models.BoardMessage, self.store.models.BoardAck
        rows = (M.select(M.id).where((M.board_session_id == actor.session_id) & (M.requires_ack == True)  # noqa: E712
                                     & (M.status == "open") & M.id.in_(list(acked))))
        found = [r.id for r in rows]
        if not found:
            return []
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

    # -- audit (issue 11 item 9) -------------------------------------------------
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
                     "complete_session_message", "observe_session_messages", "post_peer_message"})


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
    if operation == "post_session_message":
        details.update(kind=_str(values.get("kind")), body_bytes=_bytes(values.get("body")),
                       tag_count=_count(values.get("tags")), reply_to=_str(values.get("reply_to")),
                       requires_ack=bool(values.get("requires_ack")))
        if ok:
            message_id = result.get("message_id")
            details["author_session_id"] = result.get("author_session_id")
    elif operation == "post_peer_message":
        details.update(peer_id=_str(values.get("peer_id")), kind=_str(values.get("kind")),
                       body_bytes=_bytes(values.get("body")), tag_count=_count(values.get("tags")),
                       requires_ack=bool(values.get("requires_ack")))
        if ok:
            message_id = result.get("message_id")
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
    return board, message_id, details
