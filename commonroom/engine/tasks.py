"""Tasks: reading and steering them, the TTL sweep, and the tasks of task-running tools.

Every task is a row of the ``task`` table with the MCP tasks statuses
(``working`` ⇄ ``input_required`` → ``completed`` | ``failed`` |
``cancelled``). Most are a handoff's execution record (operation
``handoff.execute``, created with the handoff: :mod:`.handoffs`). A task
can also record one run of a **task-running MCP tool** (operation
``tool:<name>``; the MCP adapter's :mod:`commonroom.mcp.tooltasks` starts
it when the caller declared the tasks extension and runs the tool in the
background). Such a task has no handoff (``handoff_id`` is stored as ``""``,
``handoffId`` null on the wire), belongs to the caller and changes only
here:

=========================  ===========================================================
:meth:`start_tool_task`    ``working``, owned by the caller (the 32-active cap applies)
:meth:`ask_tool_task`      ``input_required`` with the tool's input requests
:meth:`task_update`        the caller's answers; ``working`` again once all are in
:meth:`finish_tool_task`   ``completed`` with the CallToolResult (a tool error is
                           ``result.isError``) or ``failed`` with a JSON-RPC error
:meth:`task_cancel`        ``cancelled`` (the tool sees it and stops)
start-up                   ``failed`` when still active (:meth:`fail_interrupted_tool_tasks`:
                           the run died with the previous room process)
=========================  ===========================================================

Each change is one :meth:`Store.write` emitting ``task.updated``
(``task_id``, ``operation``, ``task_status``): what ``subscriptions/listen``
turns into ``notifications/tasks``. A terminal task never leaves its
status: a tool finishing after a cancel changes nothing.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from commonroom.generated.types.handoffs import Task as TaskWire

from .. import tokens
from ..clock import rfc3339
from ..errors import HandoffNotFound, InvalidRequest
from ..store import WriteContext
from ..store.models import Task as TaskRow
from ..store.models import live_session, participant_key
from ..store.rows import row_by_id
from .base import Actor
from .handoff_base import (ACTIVE, MIN_TASK_TTL_MS, NEEDS, POLL_INTERVAL_MS, TASK_SCHEMA_VERSION, TASK_TTL_MS, TERMINAL,
                           HandoffBase, acting_id)

#: What ``task.handoff_id`` holds for a tool's task (the column is NOT NULL since schema 3).
NO_HANDOFF = ""
#: A tool's task has operation ``tool:<name>``.
TOOL_OPERATION_PREFIX = "tool:"


class TasksMixin(HandoffBase):
    """Read, answer and cancel tasks; expire them; run the tasks of task-running tools."""

    # -- reading and steering (GET /workspace/task; the MCP tasks methods plug in here) --

    def _viewer(self, actor: Actor, participant: str | None) -> Actor:
        """Whose view a task read takes: the actor, or the participant the operator names."""
        if participant is None:
            return actor
        Participant, Session = self.store.models.Participant, self.store.models.Session
        found = Participant.get_or_none(Participant.name_key == participant_key(participant))
        if actor.kind == "operator":
            if found is None:
                return Actor(kind="session", capabilities=frozenset(), participant_id="\x00none")
            now = self.clock.stamp()
            caps: set[str] = set()
            for session in Session.select().where((Session.participant == found.id)
                                                  & live_session(Session, now)):
                caps.update(session.capabilities)
            return Actor(kind="session", capabilities=frozenset(caps), participant_id=found.id,
                         participant_name=found.name)
        if found is None or found.id != actor.participant_id:
            return Actor(kind="session", capabilities=frozenset(), participant_id="\x00none")
        return actor

    def _visible_task(self, actor: Actor, task_id: str, participant: str | None = None) -> TaskRow:
        """The task, if ``actor`` (or the named participant) may see it; else ``HandoffNotFound``."""
        Task = self.store.models.Task
        viewer = self._viewer(actor, participant)
        row = row_by_id(Task, task_id) if isinstance(task_id, str) else None
        if row is None or not self.task_visible(viewer, row):
            raise HandoffNotFound("no such task", details={"task_id": task_id})
        return row

    def task_visible(self, actor: Actor, row: TaskRow) -> bool:
        """DESIGN.md's rule: the task's owner, its assignee, or a holder of ``approve``."""
        who = acting_id(actor)
        return "approve" in actor.capabilities or who in (row.owner_id, row.assignee_id)

    def task_get(self, actor: Actor, task_id: str, participant: str | None = None) -> TaskWire:
        """The task (MCP ``DetailedTask`` fields plus ours), for those who may see it.

        ``HandoffNotFound`` for an unknown id and for a task the caller may
        not see alike (``tasks/get``: -32602 ``unknown task``).
        ``participant``: the operator reads as that participant (``ce task
        --participant``); a session may name only itself.
        """
        return self._task_dict(self._visible_task(actor, task_id, participant))

    def task_update(self, actor: Actor, task_id: str, input_responses: dict[str, Any],
                    participant: str | None = None) -> TaskWire:
        """Answer outstanding input requests (``tasks/update``): the task as it is after the update.

        Answers for keys that are outstanding are recorded; once every
        request is answered the task is ``working`` again. Keys that are not
        outstanding are ignored (the tasks extension's rule): an update
        that answers nothing outstanding (unknown or already answered keys,
        a task that is ``working`` or terminal) is acknowledged, changes
        nothing and emits nothing, the same on every path. Never restarts
        work: only answering the last outstanding request makes an
        ``input_required`` task ``working``. ``HandoffNotFound`` for an
        unknown or invisible task; ``InvalidRequest`` only for a
        malformed ``input_responses`` (not an object).
        """
        if not isinstance(input_responses, dict):
            raise InvalidRequest("input_responses must be an object", details={"pointer": "/input_responses"})

        def update(ctx: WriteContext) -> TaskWire:
            viewer = self._viewer(actor, participant)  # who answers: the named participant, not "operator"
            task = self._visible_task(viewer, task_id)
            outstanding = dict(task.input_requests or {}) if task.status == "input_required" else {}
            answered = [k for k in input_responses if k in outstanding]
            if not answered:  # nothing outstanding is answered: acknowledged, nothing changes
                return self._task_dict(task)
            responses = dict(task.input_responses or {})
            for key in answered:
                responses[key] = input_responses[key]
                del outstanding[key]
            now = self.clock.stamp()
            status = "input_required" if outstanding else "working"
            self._save(task, status=status, input_requests=outstanding or None, input_responses=responses,
                       status_message=task.status_message if outstanding else None, last_updated_at=now)
            if task.handoff_id == NO_HANDOFF:
                self._emit_task(ctx, viewer, task, keys=answered)
            else:
                row = self._get_handoff(task.handoff_id)
                self._save(row, updated_at=now)
                self._emit(ctx, viewer, row, task, "handoff.input_received", keys=answered)
            return self._task_dict(task)

        return self.store.write(update)

    def task_cancel(self, actor: Actor, task_id: str, participant: str | None = None,
                    reason: str | None = None) -> TaskWire:
        """Cancel a task (``tasks/cancel``): a terminal task stays as it was; any other is ``cancelled``,
        and its handoff too while ``open`` or ``accepted``.

        Same visibility as :meth:`task_get` (``HandoffNotFound``); then the
        rule ``handoff_cancel`` shares (:meth:`_require_may_cancel`): the
        task's owner or ``approve``. The assignee sees the task but may not
        cancel it (``PermissionDenied``; nothing changes, nothing is
        emitted). ``participant``: the operator acts as that participant
        (``ce task cancel FILE ID --participant``), who is then recorded as the one
        who cancelled (the task's status message, the handoff's
        ``decided_by``, the event). A tool's task is cancelled
        alone; its running tool sees the status and stops
        (:meth:`finish_tool_task` leaves a terminal task as it is).
        """

        def cancel(ctx: WriteContext) -> TaskWire:
            viewer = self._viewer(actor, participant)
            task = self._visible_task(viewer, task_id)
            self._require_may_cancel(viewer, task.owner_id, task_id=task.id)
            if task.status in TERMINAL:
                return self._task_dict(task)
            if task.handoff_id == NO_HANDOFF:
                self._save(task, status="cancelled", status_message=reason or f"cancelled by {viewer.name}",
                           input_requests=None, last_updated_at=self.clock.stamp())
                self._emit_task(ctx, viewer, task)
                return self._task_dict(task)
            row = self._get_handoff(task.handoff_id)
            if row.status in NEEDS["cancel"]:
                self._cancel(ctx, viewer, row, task, reason)
            else:  # cannot happen (an active task's handoff is open or accepted); cancel the task alone
                self._save(task, status="cancelled", status_message=reason or "cancelled",
                           input_requests=None, last_updated_at=self.clock.stamp())
            return self._task_dict(task)

        return self.store.write(cancel)

    # -- the TTL sweep (the room's scheduler calls it; idempotent) --------------------

    def sweep_tasks(self) -> dict[str, int]:
        """Expire tasks by the clock: ``{"expired": n, "deleted": m}``.

        A task not terminal one TTL after its creation becomes ``failed``
        ("task expired", JSON-RPC error -32603) and its handoff, if
        ``open`` or ``accepted``, ``cancelled``; a terminal task is deleted
        one TTL after its last update (the handoff keeps the result).
        Active work inside its TTL is never touched. A tool's task expires
        the same way (``task.updated``).
        """
        Task, Handoff = self.store.models.Task, self.store.models.Handoff

        def sweep(ctx: WriteContext) -> dict[str, int]:
            now = self.clock.now()
            # only tasks at least the shortest TTL old are read (indexes task_status_created and
            # task_status_updated); each one's own ttl_ms decides
            horizon = rfc3339(now - dt.timedelta(milliseconds=MIN_TASK_TTL_MS))
            expired = deleted = 0
            for task in Task.select().where(Task.status.in_(ACTIVE) & (Task.created_at <= horizon)):
                if task.created_at > rfc3339(now - dt.timedelta(milliseconds=task.ttl_ms)):
                    continue
                stamp = rfc3339(now)
                self._save(task, status="failed", status_message="task expired", input_requests=None,
                           error={"code": -32603, "message": "task expired"}, last_updated_at=stamp)
                row = Handoff.get_or_none(Handoff.id == task.handoff_id)
                if task.handoff_id == NO_HANDOFF:
                    self._emit_task(ctx, None, task)
                elif row is not None and row.status in NEEDS["cancel"]:
                    self._cancel(ctx, None, row, task, "task expired", by="room")
                expired += 1
            marks = ", ".join("?" for _ in TERMINAL)
            due = self.store.db.execute_sql(
                f'SELECT "id", "ttl_ms", "last_updated_at" FROM "task" WHERE "status" IN ({marks}) '
                'AND "last_updated_at" <= ?', (*sorted(TERMINAL), horizon)).fetchall()
            for task_id, ttl_ms, last_updated_at in due:
                if last_updated_at <= rfc3339(now - dt.timedelta(milliseconds=ttl_ms)):
                    Task.delete().where(Task.id == task_id).execute()
                    deleted += 1
            return {"expired": expired, "deleted": deleted}

        return self.store.write(sweep)

    # -- the tasks of task-running tools (the MCP adapter's background runs call these) --

    def _emit_task(self, ctx: WriteContext, actor: Actor | None, task: TaskRow, **extra: Any) -> None:
        """``task.updated`` for a tool's task (same transaction as the change)."""
        ctx.emit("task.updated", {"task_id": task.id, "operation": task.operation, "task_status": task.status,
                                  **extra},
                 participant_id=actor.participant_id if actor else None,
                 session_id=actor.session_id if actor else None)

    def _tool_task(self, task_id: str) -> TaskRow:
        row = row_by_id(self.store.models.Task, task_id)
        if row is None or row.handoff_id != NO_HANDOFF:
            raise HandoffNotFound("no such tool task", details={"task_id": task_id})
        return row

    def start_tool_task(self, actor: Actor, tool: str) -> TaskWire:
        """A new ``working`` task for one run of the task-running tool ``tool``, owned by the caller.

        Operation ``tool:<tool>``, the usual TTL and poll hint; the
        correlation id is the task id. ``LimitExceeded`` (``active_tasks``)
        when 32 tasks are active. Answered after the commit, so ``tasks/get``
        finds it at once.
        """
        Task = self.store.models.Task
        if not isinstance(tool, str) or not tool:
            raise InvalidRequest("tool must be a non-empty name", details={"pointer": "/tool"})

        def start(ctx: WriteContext) -> TaskWire:
            self._require_capacity()
            now = self.clock.stamp()
            task_id = tokens.new_secret("task_")
            values = dict(id=task_id, handoff_id=NO_HANDOFF, owner_id=acting_id(actor), assignee_id=None,
                          operation=TOOL_OPERATION_PREFIX + tool, status="working", created_at=now,
                          last_updated_at=now, ttl_ms=TASK_TTL_MS, poll_interval_ms=POLL_INTERVAL_MS,
                          correlation_id=task_id, schema_version=TASK_SCHEMA_VERSION, input_seq=0)
            self.store.insert(Task, **values)
            task = Task(**values)
            self._emit_task(ctx, actor, task)
            return self._task_dict(task)

        return self.store.write(start)

    def ask_tool_task(self, task_id: str, requests: dict[str, Any], message: str | None = None) -> TaskWire:
        """The running tool asks its caller: the task becomes ``input_required`` with ``requests``.

        ``requests``: key → an MCP request (``elicitation/create``,
        ``sampling/createMessage``, ``roots/list``), added to those
        outstanding; a key already used by this task is ``InvalidRequest``
        (keys are never reused). A terminal task is left as it is.
        """
        if not isinstance(requests, dict) or not requests:
            raise InvalidRequest("requests must be a non-empty object", details={"pointer": "/requests"})

        def ask(ctx: WriteContext) -> TaskWire:
            task = self._tool_task(task_id)
            if task.status in TERMINAL:
                return self._task_dict(task)
            outstanding = dict(task.input_requests or {})
            used = set(outstanding) | set(task.input_responses or {})
            reused = sorted(set(requests) & used)
            if reused:
                raise InvalidRequest("input request keys are never reused within a task",
                                     details={"keys": reused})
            outstanding.update(requests)
            self._save(task, status="input_required", status_message=message, input_requests=outstanding,
                       input_seq=task.input_seq + len(requests), last_updated_at=self.clock.stamp())
            self._emit_task(ctx, None, task, keys=sorted(requests))
            return self._task_dict(task)

        return self.store.write(ask)

    def finish_tool_task(self, task_id: str, result: dict[str, Any] | None = None,
                         error: dict[str, Any] | None = None) -> TaskWire:
        """The running tool finished: ``completed`` with ``result`` or ``failed`` with ``error``.

        ``result`` is the CallToolResult (a tool execution error is
        ``completed`` with ``result.isError``); ``error`` is a JSON-RPC error
        object (``code``, ``message``, ``data``?), for a protocol-level
        failure. Exactly one of them. A terminal task (cancelled meanwhile)
        stays as it was.
        """
        if (result is None) == (error is None):
            raise InvalidRequest("finish a tool task with a result or an error, not both",
                                 details={"pointer": "/result"})

        def finish(ctx: WriteContext) -> TaskWire:
            task = self._tool_task(task_id)
            if task.status in TERMINAL:
                return self._task_dict(task)
            now = self.clock.stamp()
            if result is not None:
                self._save(task, status="completed", status_message=None, result=result, input_requests=None,
                           last_updated_at=now)
            else:
                assert error is not None
                self._save(task, status="failed", status_message=str(error.get("message") or "failed"),
                           error=error, input_requests=None, last_updated_at=now)
            self._emit_task(ctx, None, task)
            return self._task_dict(task)

        return self.store.write(finish)

    def tool_task(self, task_id: str) -> TaskWire | None:
        """A tool's task as its running tool sees it (no visibility check: the tool runs in the room); None once gone."""
        try:
            return self._task_dict(self._tool_task(task_id))
        except HandoffNotFound:
            return None

    def fail_interrupted_tool_tasks(self) -> int:
        """At start-up: every active tool task becomes ``failed`` (-32603 "interrupted: the room restarted").

        A tool's run lives in the room process, so when the room starts no
        run exists and such a task would otherwise wait for the TTL sweep.
        Returns how many were failed; call it before requests are served.
        """
        Task = self.store.models.Task

        def fail(ctx: WriteContext) -> int:
            rows = list(Task.select().where((Task.handoff_id == NO_HANDOFF) & Task.status.in_(ACTIVE)))
            stamp = self.clock.stamp()
            for task in rows:
                message = "interrupted: the room restarted"
                self._save(task, status="failed", status_message=message, input_requests=None,
                           error={"code": -32603, "message": message}, last_updated_at=stamp)
                self._emit_task(ctx, None, task)
            return len(rows)

        return self.store.write(fail)

