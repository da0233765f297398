"""The handoffs' shared ground: bounds, statuses, wire shapes, lookups and checks.

The state machines and who may do what are in :mod:`commonroom.engine.handoffs`
(seed ``tasks-and-handoffs.txt``; DESIGN.md, *Decisions for handoffs*);
:class:`HandoffBase` is what its transitions and :mod:`commonroom.engine.tasks`
both build on.
"""

from __future__ import annotations

from typing import Any, cast

from commonroom.generated.types.handoffs import Handoff as HandoffWire
from commonroom.generated.types.handoffs import HandoffAndTask, HandoffStatus, TaskStatus
from commonroom.generated.types.handoffs import Result as TaskResult
from commonroom.generated.types.handoffs import Task as TaskWire

from ..errors import HandoffConflict, HandoffNotFound, LimitExceeded, PermissionDenied
from ..store import WriteContext
from ..store.models import Handoff as HandoffRow
from ..store.models import Task as TaskRow
from ..store.rows import row_by_id
from ..vocabulary import TASK_STATUSES
from .base import Actor, EngineBase

#: At most this many tasks ``working`` or ``input_required`` in one room.
MAX_ACTIVE_TASKS = 32
#: A task is kept 24 h (``ttlMs``); clients poll every 5 s (``pollIntervalMs``).
TASK_TTL_MS = 24 * 3600 * 1000
#: The shortest TTL any task is given (every task gets TASK_TTL_MS): the TTL sweep reads
#: only tasks at least this old. A shorter TTL for some task must lower it.
MIN_TASK_TTL_MS = TASK_TTL_MS
POLL_INTERVAL_MS = 5000
TASK_SCHEMA_VERSION = 1
#: The owner/assignee id of the local operator (no participant row).
OPERATOR_ID = "operator"

#: A task still runs in these statuses; every other status of ``handoffs#TaskStatus`` is terminal.
ACTIVE: tuple[str, ...] = ("working", "input_required")
TERMINAL: tuple[str, ...] = tuple(status for status in TASK_STATUSES if status not in ACTIVE)
#: What each transition needs the handoff to be in.
NEEDS: dict[str, tuple[str, ...]] = {
    "accept": ("open",),
    "request_input": ("accepted",),
    "complete": ("accepted",),
    "approve": ("result_ready",),
    "reject": ("result_ready",),
    "cancel": ("open", "accepted"),
}


def acting_id(actor: Actor) -> str:
    """The participant id an actor acts as: its own, or :data:`OPERATOR_ID` for the local operator."""
    return actor.participant_id or OPERATOR_ID


class HandoffBase(EngineBase):
    """What the handoff transitions (:mod:`.handoffs`) and the task methods (:mod:`.tasks`) share:
    wire shapes, lookups, state checks, the ``handoff.*`` event and the active-task bound."""

    # -- wire shapes ---------------------------------------------------------

    def _display(self, participant_id: str | None) -> str | None:
        if participant_id is None:
            return None
        if participant_id == OPERATOR_ID:
            return "operator"
        return self.participant_name(participant_id) or "?"

    def _handoff_dict(self, row: HandoffRow) -> HandoffWire:
        return {
            "id": row.id,
            "status": cast("HandoffStatus", row.status),
            "summary": row.summary,
            "constraints": row.constraints,
            "artifacts": row.artifacts,
            "owner": self._display(row.owner_id) or "?",
            "assignee": self._display(row.assignee_id),
            "task_id": row.task_id,
            "result": row.result,
            "created_at": row.created_at,
            "updated_at": row.updated_at,
            "accepted_at": row.accepted_at,
            "result_at": row.result_at,
            "decided_at": row.decided_at,
            "decided_by": row.decided_by,
            "reason": row.reason,
        }

    def _task_dict(self, row: TaskRow) -> TaskWire:
        task: TaskWire = {
            "taskId": row.id,
            "status": cast("TaskStatus", row.status),
            "createdAt": row.created_at,
            "lastUpdatedAt": row.last_updated_at,
            "ttlMs": row.ttl_ms,
            "pollIntervalMs": row.poll_interval_ms,
            "handoffId": row.handoff_id or None,
            "owner": self._display(row.owner_id) or "?",
            "assignee": self._display(row.assignee_id),
            "operation": row.operation,
            "correlationId": row.correlation_id,
            "schemaVersion": 1,
        }
        if row.status_message:
            task["statusMessage"] = row.status_message
        if row.status == "input_required":
            task["inputRequests"] = row.input_requests or {}
        if row.input_responses:
            task["inputResponses"] = row.input_responses
        if row.status == "completed" and row.result is not None:
            # the core CallToolResult: resultType is required there (a client such as the official
            # TypeScript ext-tasks decodes it as one); rows stored before it was kept get it here
            task["result"] = cast("TaskResult", {**row.result, "resultType": "complete"})
        if row.status == "failed" and row.error is not None:
            task["error"] = row.error
        return task

    def _pair(self, handoff: HandoffRow, task: TaskRow) -> HandoffAndTask:
        return {"handoff": self._handoff_dict(handoff), "task": self._task_dict(task)}

    # -- rows ------------------------------------------------------------------

    def _get_handoff(self, handoff_id: str) -> HandoffRow:
        row = row_by_id(self.store.models.Handoff, handoff_id)
        if row is None:
            raise HandoffNotFound(f"no handoff {handoff_id}", details={"handoff_id": handoff_id})
        return row

    def _task_of(self, handoff: HandoffRow) -> TaskRow | None:
        return row_by_id(self.store.models.Task, handoff.task_id)

    def _live_task(self, handoff: HandoffRow) -> TaskRow:
        task = self._task_of(handoff)
        if task is None:  # only after the TTL sweep deleted a terminal task
            raise HandoffConflict(f"handoff {handoff.id}'s task is gone (expired)",
                                  details={"status": handoff.status, "task_status": None,
                                           "handoff_id": handoff.id})
        return task

    def _conflict(self, row: HandoffRow, task: TaskRow | None, action: str) -> HandoffConflict:
        needs = NEEDS[action]
        return HandoffConflict(
            f"handoff {row.id} is {row.status}; {action.replace('_', ' ')} needs {' or '.join(needs)}",
            details={"status": row.status, "task_status": task.status if task else None,
                     "handoff_id": row.id, "action": action, "allowed_from": list(needs)})

    def _require_state(self, row: HandoffRow, task: TaskRow | None, action: str) -> None:
        if row.status not in NEEDS[action]:
            raise self._conflict(row, task, action)

    def _require_assignee(self, actor: Actor, row: HandoffRow) -> None:
        if row.assignee_id != acting_id(actor):
            raise PermissionDenied(f"only the assignee of handoff {row.id} may do this",
                                   details={"required": "assignee", "handoff_id": row.id})

    def _require_may_cancel(self, actor: Actor, owner_id: str, **details: Any) -> None:
        """The one rule for cancelling a handoff or a task, whatever the path: its owner or ``approve``.

        ``handoff_cancel``, ``tasks/cancel``, ``POST /workspace/task/cancel``
        and ``ce task cancel`` all check it (DESIGN.md, *Who may see a task*:
        the assignee sees the task but may not cancel it).
        ``PermissionDenied`` (``details.required``: ``owner or approve``,
        plus ``details``) before anything changes or is emitted.
        """
        if owner_id != acting_id(actor) and "approve" not in actor.capabilities:
            raise PermissionDenied("only the owner or a session with approve may cancel it",
                                   details={"required": "owner or approve", **details})

    def _emit(self, ctx: WriteContext, actor: Actor | None, handoff: HandoffRow, task: TaskRow | None,
              type: str, **extra: Any) -> None:
        """Append ``type`` to the ring and to the handoff's own event list (same transaction)."""
        payload = {"handoff_id": handoff.id, "task_id": handoff.task_id, "status": handoff.status,
                   "task_status": task.status if task is not None else None, **extra}
        participant_id = actor.participant_id if actor else None
        session_id = actor.session_id if actor else None
        event = ctx.emit(type, payload, participant_id=participant_id, session_id=session_id)
        self.store.insert(self.store.models.HandoffEvent, event_id=event["id"], handoff_id=handoff.id,
                          type=type, created_at=event["time"], participant_id=participant_id,
                          session_id=session_id, payload=payload)

    def _cancel(self, ctx: WriteContext, actor: Actor | None, row: HandoffRow, task: TaskRow | None,
                reason: str | None, *, by: str | None = None) -> None:
        """Cancel handoff ``row`` and its unfinished ``task`` (inside a write): shared by ``cancel_handoff``
        and the task's own cancel (``tasks``); ``by`` is who is named, else the actor, else ``room``."""
        now = self.clock.stamp()
        by = by or (actor.name if actor else "room")
        if task is not None and task.status not in TERMINAL:
            self._save(task, status="cancelled", status_message=reason or f"cancelled by {by}",
                       input_requests=None, last_updated_at=now)
        self._save(row, status="cancelled", decided_at=now, decided_by=by, reason=reason, updated_at=now)
        self._emit(ctx, actor, row, task, "handoff.cancelled", by=by, reason=reason)

    def _require_capacity(self) -> None:
        """``LimitExceeded`` (``active_tasks``) when :data:`MAX_ACTIVE_TASKS` tasks are active (in a write)."""
        Task = self.store.models.Task
        active = Task.select().where(Task.status.in_(ACTIVE)).count()
        if active >= MAX_ACTIVE_TASKS:
            raise LimitExceeded(
                f"{active} tasks are working or waiting for input; a room holds at most {MAX_ACTIVE_TASKS}",
                details={"limit": "active_tasks", "maximum": MAX_ACTIVE_TASKS, "size": active})

    def _save(self, row: Any, **values: Any) -> None:
        for name, value in values.items():
            setattr(row, name, value)
        self.store.update(type(row), row.id, **values)
