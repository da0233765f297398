"""A todo's assignment and its fenced, idempotent completion (seed ``collaboration-board.txt``).

:meth:`CompletionMixin.get_session_assignment` reads the todo and every
retained direct reply in one snapshot with an opaque ``assignment_fence``
over exactly that state; :meth:`CompletionMixin.complete_session_message`
completes it in one transaction (one ``answer`` reply, the todo resolved,
``resolved_by_message_id``, a completion identity derived from the
caller's key and a fingerprint of the accepted fence), replays an exact
retry and fails closed on any other reuse of the key. The protocol as a
client follows it: ``docs/boards.md``, *The completion protocol*.
"""

from __future__ import annotations

import hmac
from typing import Any

import peewee as pw

from commonroom.generated.types.boards import Assignment, Completion, Message

from ..errors import (AssignmentHistoryLost, AssignmentStale, AssignmentTooLarge, CommonroomError,
                      CompletionMismatch, CompletionPersistenceUncertain, InvalidRequest)
from ..store import WriteContext
from ..store.models import BoardMessage as MessageRow
from ..store.rows import first_row, select_rows
from .base import Actor, require
from .board_base import (FENCE_PREFIX, KEY_CHARS, PRIORITIES, SNAPSHOT_BYTES, SNAPSHOT_REPLIES, BoardBase,
                         _canonical, _sha, completion_identity, fence_fingerprint)


class CompletionMixin(BoardBase):
    """The assignment snapshot and the completion protocol."""

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
        rows = select_rows(M, 'WHERE "board_session_id" = ? AND "reply_to" = ? ORDER BY "seq" LIMIT ?',
                           (session_id, todo.id, SNAPSHOT_REPLIES + 1))
        if len(rows) > SNAPSHOT_REPLIES:
            raise AssignmentTooLarge(f"the todo has more than {SNAPSHOT_REPLIES} direct replies",
                                     details={"limit": "assignment_replies", "maximum": SNAPSHOT_REPLIES,
                                              "message_id": todo.id})
        todo_wire = self._message_wire(todo)
        replies = [self._message_wire(r) for r in rows]
        # the fence covers the assignment's semantic state: an ACK (observability only) changes no fence
        def semantic(wire: Message) -> dict[str, Any]:
            return {k: v for k, v in wire.items() if k != "first_acked_at"}

        state = [self.workspace_id, session_id, semantic(todo_wire), [semantic(r) for r in replies]]
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
            # a group commit that fails after this returned: the same answer as a commit failing here
            ctx.on_commit_failure = lambda exc: self._uncertain(session_id, message_id, exc)
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
            # read before the prune: a todo resolved now and older than the board's newest
            # RETAIN_MESSAGES messages goes with it (it is no longer an open todo)
            resolved = self._message_wire(self._message(session_id, todo.id))
            self._prune(session_id)
            return {"session_id": session_id, "todo": resolved, "answer": self._message_wire(reply),
                    "replayed": False}

        try:
            return self.store.write(complete)
        except CommonroomError as exc:
            if exc.code != "storage_unavailable":
                raise
            raise self._uncertain(session_id, message_id, exc) from exc
        except (pw.DatabaseError, pw.InterfaceError, OSError) as exc:
            raise self._uncertain(session_id, message_id, exc) from exc

    @staticmethod
    def _uncertain(session_id: str, message_id: str, exc: BaseException) -> CompletionPersistenceUncertain:
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
            reply = first_row(M, 'WHERE "id" = ? AND "board_session_id" = ?', (todo.resolved_by_message_id, session_id))
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
