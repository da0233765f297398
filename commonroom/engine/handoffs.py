"""Handoffs and their tasks (seed ``tasks-and-handoffs.txt``; DESIGN.md, *Decisions for handoffs*).

A **handoff** is work one participant asks another to do::

    open ──accept──▶ accepted ──complete──▶ result_ready ──approve──▶ approved
      │                 │                        └───────reject───▶ rejected
      └──cancel─────────┴──cancel──▶ cancelled

A **task** is its execution record, with the MCP tasks statuses::

    working ⇄ input_required ──▶ completed | failed | cancelled   (terminal)

Creating a handoff creates its task (``working``); accepting leaves the
task ``working`` and records the assignee; ``handoff_request_input`` makes
it ``input_required`` until ``task_update`` (:mod:`.tasks`) has answered
every outstanding request; completing makes it ``completed`` (the result
is copied onto the handoff, which becomes ``result_ready``). Approval and
rejection decide the handoff and never rewrite the task. Cancelling the
handoff cancels a task that is not terminal; cancelling the task
(``tasks/cancel``) cancels a handoff that is still ``open`` or
``accepted``. A terminal task never leaves its status.

Who may do what: create and accept need ``handoff``; complete and request
input: the assignee only; approve and reject need ``approve``; cancel: the
owner or ``approve``; handoff reads need ``read``. A task is visible
(``task_get``, ``task_update``, ``task_cancel`` in :mod:`.tasks`) to its owner,
its assignee and holders of ``approve``; to anyone else it does not exist
(``handoff_not_found``). The MCP tasks methods (``tasks/get|update|cancel``)
call those three methods and map ``handoff_not_found`` to -32602 ``unknown
task``.

Every change is one :meth:`Store.write` that appends its ``handoff.*``
event to the ring and to the handoff's own event list (``handoff_event``,
kept for the handoff's lifetime).

Reading and steering tasks (``task_get``, ``task_update``, ``task_cancel``),
the TTL sweep and the tasks of task-running tools live in
:mod:`commonroom.engine.tasks`.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from commonroom.generated.types.handoffs import Handoff as HandoffWire
from commonroom.generated.types.handoffs import HandoffAndTask, HandoffEventsPage, HandoffsPage

from .. import tokens
from ..errors import (HandoffConflict, HandoffNotFound, IdempotencyMismatch, InvalidRequest, LimitExceeded,
                      PermissionDenied)
from ..store import WriteContext
from ..store.db import event_dict
from ..store.models import Handoff as HandoffRow
from ..store.models import Task as TaskRow
from ..store.models import live_session, participant_key
from ..store.rows import select_rows
from ..vocabulary import HANDOFF_STATUSES
from .base import Actor, decode_cursor, encode_cursor, page_after_stamp_and_id, parse_limit, require
from .handoff_base import ACTIVE, POLL_INTERVAL_MS, TASK_SCHEMA_VERSION, TASK_TTL_MS, TERMINAL, HandoffBase, acting_id

#: Bounds (characters for the texts, UTF-8 bytes for the result).
MAX_SUMMARY_CHARS = 2000
MAX_CONSTRAINTS_CHARS = 8000
MAX_RESULT_BYTES = 256 * 1024
TASK_OPERATION = "handoff.execute"
DEFAULT_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"],
}


def _too_long(what: str, limit: str, size: int, maximum: int, unit: str) -> LimitExceeded:
    return LimitExceeded(f"{what} is {size} {unit}; at most {maximum} are allowed",
                         details={"limit": limit, "maximum": maximum, "size": size})


def _request_hash(summary: str, constraints: str, artifacts: list[Any], assignee: str | None) -> str:
    canonical = json.dumps({"summary": summary, "constraints": constraints, "artifacts": artifacts,
                            "assignee": assignee}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class HandoffsMixin(HandoffBase):
    """Create, accept, complete, decide and cancel handoffs; read them and their events."""

    # -- creating ----------------------------------------------------------------

    def create_handoff(self, actor: Actor, summary: str, constraints: str | None = None,
                       artifacts: list[Any] | None = None, assignee: str | None = None,
                       idempotency_key: str | None = None) -> HandoffAndTask:
        """Create a handoff and its task (``working``): ``{handoff, task}``.

        Needs ``handoff``. ``assignee`` names the participant who alone may
        accept (``InvalidRequest`` if there is none of that name, or if they
        lack ``handoff``: no live session of theirs and no open invitation
        to them grants it, ``details.capability``).
        Idempotent per participant and ``idempotency_key``: a retry returns
        the original handoff and task as they are now, a different request
        with the key is ``IdempotencyMismatch``. ``LimitExceeded``
        (``details.limit``: ``summary_chars``, ``constraints_chars``,
        ``active_tasks``) stores nothing.
        """
        models = self.store.models
        Handoff, Task = models.Handoff, models.Task
        require(actor, "handoff")
        constraints = constraints or ""
        artifacts = list(artifacts or [])
        if not isinstance(summary, str) or not summary:
            raise InvalidRequest("summary must be a non-empty string", details={"pointer": "/summary"})
        if len(summary) > MAX_SUMMARY_CHARS:
            raise _too_long("summary", "summary_chars", len(summary), MAX_SUMMARY_CHARS, "characters")
        if len(constraints) > MAX_CONSTRAINTS_CHARS:
            raise _too_long("constraints", "constraints_chars", len(constraints), MAX_CONSTRAINTS_CHARS,
                            "characters")
        assignee_id: str | None = None
        if assignee is not None:
            Participant = models.Participant
            found = Participant.get_or_none(Participant.name_key == participant_key(assignee))
            if found is None:
                raise InvalidRequest(f"no participant named {assignee!r}",
                                     details={"pointer": "/assignee", "assignee": assignee})
            assignee_id = found.id
            if not self._may_hold_handoff(found.id, found.name_key):
                raise InvalidRequest(
                    f"{assignee!r} lacks the handoff capability, so could never accept it; "
                    "invite them with handoff first",
                    details={"pointer": "/assignee", "assignee": assignee, "capability": "handoff"})
        owner = acting_id(actor)
        fingerprint = _request_hash(summary, constraints, artifacts, assignee_id)

        def create(ctx: WriteContext) -> HandoffAndTask:
            if idempotency_key is not None:
                earlier = Handoff.get_or_none((Handoff.owner_id == owner)
                                              & (Handoff.idempotency_key == idempotency_key))
                if earlier is not None:
                    if earlier.request_hash != fingerprint:
                        raise IdempotencyMismatch(
                            f"idempotency_key {idempotency_key!r} was used for a different request",
                            details={"idempotency_key": idempotency_key, "handoff_id": earlier.id})
                    return self._pair(earlier, self._live_task(earlier))
            self._require_capacity()
            now = self.clock.stamp()
            handoff_id = tokens.new_id("ho_")
            task_id = tokens.new_secret("task_")  # hard to guess (it is still not authorization)
            handoff_values = dict(
                id=handoff_id, status="open", summary=summary, constraints=constraints, artifacts=artifacts,
                owner_id=owner, owner_session_id=actor.session_id, assignee_id=assignee_id,
                idempotency_key=idempotency_key, request_hash=fingerprint, task_id=task_id,
                created_at=now, updated_at=now)
            task_values = dict(
                id=task_id, handoff_id=handoff_id, owner_id=owner, assignee_id=assignee_id,
                operation=TASK_OPERATION, status="working", created_at=now, last_updated_at=now,
                ttl_ms=TASK_TTL_MS, poll_interval_ms=POLL_INTERVAL_MS, correlation_id=handoff_id,
                schema_version=TASK_SCHEMA_VERSION, input_seq=0)
            self.store.insert(Handoff, **handoff_values)
            self.store.insert(Task, **task_values)
            handoff, task = Handoff(**handoff_values), Task(**task_values)
            self._emit(ctx, actor, handoff, task, "handoff.created", summary=summary,
                       owner=self._display(owner), assignee=self._display(assignee_id))
            return self._pair(handoff, task)

        return self.store.write(create)

    def _may_hold_handoff(self, participant_id: str, name_key: str) -> bool:
        """Whether the participant holds ``handoff`` (needed to accept): a live session of
        theirs has it, or an open invitation to their name grants it."""
        models = self.store.models
        Session, Invitation = models.Session, models.Invitation
        now = self.clock.stamp()
        sessions = Session.select(Session.capabilities).where(
            (Session.participant == participant_id) & live_session(Session, now))
        if any("handoff" in row.capabilities for row in sessions):
            return True
        invitations = Invitation.select(Invitation.capabilities).where(
            (Invitation.participant_key == name_key) & Invitation.redeemed_at.is_null()
            & Invitation.revoked_at.is_null() & (Invitation.expires_at > now))
        return any("handoff" in row.capabilities for row in invitations)

    # -- the assignee ------------------------------------------------------------

    def accept_handoff(self, actor: Actor, handoff_id: str) -> HandoffAndTask:
        """Accept an ``open`` handoff: it becomes ``accepted``, its task stays ``working`` with the assignee.

        Needs ``handoff`` (and, when the handoff names an assignee, to be
        that participant: ``PermissionDenied``). ``HandoffNotFound``,
        ``HandoffConflict`` (not open).
        """
        require(actor, "handoff")

        def accept(ctx: WriteContext) -> HandoffAndTask:
            row = self._get_handoff(handoff_id)
            task = self._task_of(row)
            self._require_state(row, task, "accept")
            task = self._live_task(row)
            who = acting_id(actor)
            if row.assignee_id is not None and row.assignee_id != who:
                raise PermissionDenied(f"handoff {row.id} is for {self._display(row.assignee_id)}",
                                       details={"required": "assignee", "handoff_id": row.id})
            now = self.clock.stamp()
            self._save(row, status="accepted", assignee_id=who, accepted_at=now, updated_at=now)
            self._save(task, assignee_id=who, last_updated_at=now)
            self._emit(ctx, actor, row, task, "handoff.accepted", assignee=self._display(who))
            return self._pair(row, task)

        return self.store.write(accept)

    def request_handoff_input(self, actor: Actor, handoff_id: str, message: str,
                              requested_schema: dict[str, Any] | None = None) -> HandoffAndTask:
        """Ask the owner for input: the task becomes ``input_required`` with one more request.

        The assignee only (``PermissionDenied``), on an ``accepted`` handoff
        whose task is active (``HandoffConflict``). The request is an MCP
        ``elicitation/create`` (form mode, ``requested_schema`` or one
        string ``answer``) under a new key ``input_<n>`` (never reused);
        ``task_update`` (:mod:`.tasks`) answers it.
        """
        if not isinstance(message, str) or not message:
            raise InvalidRequest("message must be a non-empty string", details={"pointer": "/message"})
        schema = requested_schema if requested_schema is not None else DEFAULT_INPUT_SCHEMA
        if not isinstance(schema, dict) or schema.get("type") != "object" or not isinstance(
                schema.get("properties"), dict):
            raise InvalidRequest("requested_schema must be {type: object, properties: {...}}",
                                 details={"pointer": "/requested_schema"})

        def ask(ctx: WriteContext) -> HandoffAndTask:
            row = self._get_handoff(handoff_id)
            task = self._task_of(row)
            self._require_state(row, task, "request_input")
            self._require_assignee(actor, row)
            task = self._live_task(row)
            if task.status not in ACTIVE:
                raise self._conflict(row, task, "request_input")
            key = f"input_{task.input_seq + 1}"
            requests = dict(task.input_requests or {})
            requests[key] = {"method": "elicitation/create",
                             "params": {"mode": "form", "message": message, "requestedSchema": schema}}
            now = self.clock.stamp()
            self._save(task, status="input_required", status_message=message, input_requests=requests,
                       input_seq=task.input_seq + 1, last_updated_at=now)
            self._save(row, updated_at=now)
            self._emit(ctx, actor, row, task, "handoff.input_requested", keys=[key])
            return self._pair(row, task)

        return self.store.write(ask)

    def complete_handoff(self, actor: Actor, handoff_id: str, result: str) -> HandoffAndTask:
        """Complete an ``accepted`` handoff with ``result`` (text): task ``completed``, handoff ``result_ready``.

        The task's ``result`` becomes ``handoff_create``'s finished tool result:
        ``{content: [{type: text, text: result}], structuredContent: {handoff, task}, isError: false}``
        (the pair as of the completion, the task without its own result).

        The assignee only. The result is copied onto the handoff (it
        outlives the task row). A second completion never replaces it: the
        same text again answers as before (a retry), other text is
        ``HandoffConflict``; so is completing a handoff that is not
        ``accepted`` or whose task is terminal. ``LimitExceeded``
        (``result_bytes``) beyond 256 KiB of UTF-8.
        """
        if not isinstance(result, str):
            raise InvalidRequest("result must be a string", details={"pointer": "/result"})
        size = len(result.encode("utf-8"))
        if size > MAX_RESULT_BYTES:
            raise _too_long("result", "result_bytes", size, MAX_RESULT_BYTES, "bytes")

        def complete(ctx: WriteContext) -> HandoffAndTask:
            row = self._get_handoff(handoff_id)
            task = self._task_of(row)
            if row.status == "result_ready" and row.result == result and row.assignee_id == acting_id(actor):
                return self._pair(row, self._live_task(row))  # the same completion again
            self._require_state(row, task, "complete")
            self._require_assignee(actor, row)
            task = self._live_task(row)
            if task.status in TERMINAL:
                raise self._conflict(row, task, "complete")
            now = self.clock.stamp()
            self._save(row, status="result_ready", result=result, result_at=now, updated_at=now)
            self._save(task, status="completed", status_message=None, input_requests=None, last_updated_at=now)
            # The task's result is handoff_create's tool result, finished: the text, and as
            # structuredContent the {handoff, task} pair of this moment (valid against the tool's
            # outputSchema, so a client that checks it, like the official SDK, accepts it).
            tool_result = {"content": [{"type": "text", "text": result}],
                           "structuredContent": self._pair(row, task), "isError": False}
            self._save(task, result=tool_result)
            self._emit(ctx, actor, row, task, "handoff.completed")
            return self._pair(row, task)

        return self.store.write(complete)

    # -- deciding ----------------------------------------------------------------

    def approve_handoff(self, actor: Actor, handoff_id: str) -> HandoffWire:
        """Approve the result of a ``result_ready`` handoff. Needs ``approve``; the task is not rewritten."""
        require(actor, "approve")
        return self._decide_handoff(actor, handoff_id, "approve", "approved", None)

    def reject_handoff(self, actor: Actor, handoff_id: str, reason: str | None = None) -> HandoffWire:
        """Reject the result of a ``result_ready`` handoff. Needs ``approve``; the task is not rewritten."""
        require(actor, "approve")
        return self._decide_handoff(actor, handoff_id, "reject", "rejected", reason)

    def _decide_handoff(self, actor: Actor, handoff_id: str, action: str, status: str,
                reason: str | None) -> HandoffWire:
        def decide(ctx: WriteContext) -> HandoffWire:
            row = self._get_handoff(handoff_id)
            task = self._task_of(row)
            self._require_state(row, task, action)
            now = self.clock.stamp()
            self._save(row, status=status, decided_at=now, decided_by=actor.name, reason=reason, updated_at=now)
            extra: dict[str, Any] = {"by": actor.name}
            if action == "reject":
                extra["reason"] = reason
            self._emit(ctx, actor, row, task, f"handoff.{status}", **extra)
            return self._handoff_dict(row)

        return self.store.write(decide)

    def cancel_handoff(self, actor: Actor, handoff_id: str, reason: str | None = None) -> HandoffWire:
        """Cancel an ``open`` or ``accepted`` handoff, and its task unless terminal.

        ``HandoffConflict`` once it has a result, is decided or cancelled,
        whoever asks (the state is checked before the caller); then the
        owner or a holder of ``approve`` (``PermissionDenied``, the rule
        ``task_cancel`` shares: :meth:`_require_may_cancel`).
        """
        def cancel(ctx: WriteContext) -> HandoffWire:
            row = self._get_handoff(handoff_id)
            task = self._task_of(row)
            self._require_state(row, task, "cancel")  # the state before the caller, as every transition
            self._require_may_cancel(actor, row.owner_id, handoff_id=row.id)
            self._cancel(ctx, actor, row, task, reason)
            return self._handoff_dict(row)

        return self.store.write(cancel)

    # -- reading -------------------------------------------------------------------

    def handoff(self, actor: Actor, handoff_id: str) -> HandoffWire:
        """One handoff. Needs ``read``; ``HandoffNotFound``."""
        require(actor, "read")
        return self._handoff_dict(self._get_handoff(handoff_id))

    def handoffs(self, actor: Actor, status: str | None = None, limit: Any = None,
                 cursor: str | None = None) -> HandoffsPage:
        """Handoffs oldest first, optionally by ``status``, paged. Needs ``read``."""
        Handoff = self.store.models.Handoff
        require(actor, "read")
        size = parse_limit(limit)
        if status not in (None, "") and status not in HANDOFF_STATUSES:
            raise InvalidRequest(f"status must be one of {', '.join(HANDOFF_STATUSES)}, not {status!r}",
                                 details={"parameter": "status"})
        by_status = status not in (None, "")
        rows = page_after_stamp_and_id(Handoff, cursor, size, ('"status" = ?',) if by_status else (),
                                       (status,) if by_status else ())
        last = rows[size - 1] if len(rows) > size else None
        return {"handoffs": [self._handoff_dict(r) for r in rows[:size]],
                "next_cursor": encode_cursor([last.created_at, last.id]) if last else None}

    def handoff_events(self, actor: Actor, handoff_id: str, limit: Any = None,
                       cursor: str | None = None) -> HandoffEventsPage:
        """A handoff's own events, oldest first, paged (kept past the ring). Needs ``read``."""
        require(actor, "read")
        size = parse_limit(limit)
        self._get_handoff(handoff_id)
        after = decode_cursor(cursor)
        if after is not None and (isinstance(after, bool) or not isinstance(after, int)):
            raise InvalidRequest("cursor is not one this room issued", details={"parameter": "cursor"})
        rows = select_rows(self.store.models.HandoffEvent,
                           'WHERE "handoff_id" = ? ' + ('AND "event_id" > ? ' if after is not None else "")
                           + 'ORDER BY "event_id" LIMIT ?',
                           [handoff_id, *([after] if after is not None else []), size + 1])
        last = rows[size - 1] if len(rows) > size else None
        events = [event_dict(_AsEvent(r)) for r in rows[:size]]
        return {"handoff_id": handoff_id, "events": events,  # type: ignore[typeddict-item]
                "next_cursor": encode_cursor(last.event_id) if last else None}

class _AsEvent:
    """A ``handoff_event`` row seen as an event row (for :func:`event_dict`)."""

    def __init__(self, row: Any) -> None:
        self.id = row.event_id
        self.type = row.type
        self.created_at = row.created_at
        self.participant_id = row.participant_id
        self.session_id = row.session_id
        self.payload = row.payload
