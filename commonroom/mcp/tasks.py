"""The MCP tasks extension (``io.modelcontextprotocol/tasks``) on handoff tasks.

A handoff's task (:mod:`commonroom.engine.handoffs`) is the extension's
task. Every method here needs the client to declare the extension on the
request (``_meta`` client capabilities ``extensions`` with
``io.modelcontextprotocol/tasks``); otherwise it is 400 / -32021
``MissingRequiredClientCapability`` with ``data.requiredCapabilities``.

==============  ==============================================================
method          answer
==============  ==============================================================
``tasks/get``   ``resultType: "complete"`` and the task (``taskId``, ``status``,
                …, ``inputRequests`` / ``result`` / ``error`` by status, plus
                commonroom's own ``handoffId``, ``owner``, ``assignee``…)
``tasks/update`` records ``inputResponses`` for the outstanding
                ``inputRequests`` (the task is ``working`` again once every one
                is answered); the ack ``{resultType: "complete"}``. Answers
                that match nothing outstanding are acknowledged alike and
                change nothing (the extension's rule)
``tasks/cancel`` the ack; a terminal task stays as it was, any other is
                ``cancelled`` (and its open or accepted handoff) before the
                answer. The owner or ``approve`` only: the assignee gets
                -32602 with ``data.error: "permission_denied"``
==============  ==============================================================

An unknown task id and a task this session may not see (only the owner,
the assignee and ``approve`` holders see one) are the same -32602
``unknown task`` (``data.taskId``). ``tasks/result`` and ``tasks/list`` are
not served (404 -32601). ``Mcp-Name``, when sent, must equal
``params.taskId``; it may be left out (the official Python SDK does not
send it).

``handoff_create`` called with the extension declared answers
``resultType: "task"``: the task object (``CreateTaskResult``), after the
commit; without it, the ordinary tool result (handoff and task).
"""

from __future__ import annotations

from typing import Any, Callable

from ..errors import CommonroomError, HandoffNotFound
from ..operations import OPERATIONS, Table
from ..protocol import TASKS_EXTENSION
from .jsonrpc import invalid_params, missing_capability
from .registry import Context, Raw, Registry

#: The fields of the official ``Task`` (and its per-status variants) a task carries.
TASK_FIELDS = ("taskId", "status", "statusMessage", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs",
               "inputRequests", "result", "error")

#: What a ``CreateTaskResult`` never carries (``tasks/get``'s DetailedTask does, by status).
DETAIL_FIELDS = frozenset({"inputRequests", "inputResponses", "result", "error"})


def require_extension(ctx: Context) -> None:
    """-32021 unless the request declared the tasks extension."""
    if not ctx.declared("extensions", TASKS_EXTENSION):
        raise missing_capability({"extensions": {TASKS_EXTENSION: {}}})


def official(task: dict[str, Any]) -> dict[str, Any]:
    """The task with the official schema's fields first, then commonroom's own."""
    out = {k: task[k] for k in TASK_FIELDS if k in task}
    out.update({k: v for k, v in task.items() if k not in out})
    return out


async def _run(ctx: Context, table: Table, name: str, values: dict[str, Any]) -> Any:
    op = table[name]
    task_id = values.get("task_id")
    try:
        if ctx.runner is None:
            return op.bind(ctx.engine, ctx.actor, values)
        return await ctx.runner.run(op, ctx.actor, values)
    except HandoffNotFound:
        raise invalid_params("unknown task", {"taskId": task_id}) from None
    except CommonroomError as exc:
        # a refusal of the room (permission_denied, a malformed value): -32602 with the room's own
        # error object as data, the same object HTTP answers (docs/handoffs.md says why -32602)
        raise invalid_params(exc.message, exc.to_dict()) from None


def _handlers(table: Table) -> dict[str, Callable[[Context], Any]]:
    async def get(ctx: Context) -> dict[str, Any]:
        require_extension(ctx)
        task = await _run(ctx, table, "task_get", {"task_id": ctx.params["taskId"]})
        return {**official(task), "resultType": "complete"}

    async def update(ctx: Context) -> dict[str, Any]:
        require_extension(ctx)
        await _run(ctx, table, "task_update",
                   {"task_id": ctx.params["taskId"], "input_responses": ctx.params["inputResponses"]})
        return {}

    async def cancel(ctx: Context) -> dict[str, Any]:
        require_extension(ctx)
        await _run(ctx, table, "task_cancel", {"task_id": ctx.params["taskId"]})
        return {}

    return {"tasks/get": get, "tasks/update": update, "tasks/cancel": cancel}


def task_result(ctx: Context, value: Any) -> Any:
    """``handoff_create``'s value as ``CreateTaskResult`` when the extension is declared."""
    if ctx.declared("extensions", TASKS_EXTENSION) and isinstance(value, dict) and "task" in value:
        # A retry may find the task further on: what it carries by status lives on tasks/get only.
        task = {k: v for k, v in official(value["task"]).items() if k not in DETAIL_FIELDS}
        return Raw({**task, "resultType": "task"})
    return value


def wrap_task_tool(registry: Registry, name: str = "handoff_create") -> None:
    """Make tool ``name`` answer ``resultType: "task"`` for clients that declared the extension."""
    tool = registry.tools.get(name)
    if tool is None:
        return
    inner = tool.handler

    async def handler(ctx: Context) -> Any:
        value = inner(ctx)
        if hasattr(value, "__await__"):
            value = await value
        return task_result(ctx, value)

    handler.__name__ = getattr(inner, "__name__", name)
    tool.handler = handler


def handoff_ids(ctx: Context, value: str) -> list[str]:
    """Every handoff id the session can read, newest first (completion ``handoff_id``)."""
    rows: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = ctx.engine.handoffs(ctx.actor, None, 200, cursor)
        rows.extend(page["handoffs"])
        cursor = page["next_cursor"]
        if not cursor:
            break
    return [h["id"] for h in reversed(rows)]


def register_tasks(registry: Registry, table: Table = OPERATIONS) -> None:
    """The tasks methods, the extension, ``handoff_create``'s task result and ``handoff_id`` completions."""
    for method, handler in _handlers(table).items():
        schema = {"tasks/get": "mcp#TaskIdParams", "tasks/cancel": "mcp#TaskIdParams",
                  "tasks/update": "mcp#TaskUpdateParams"}[method]
        registry.add_method(method, handler, name_param="taskId", name_required=False, params_schema=schema)
    registry.add_extension(TASKS_EXTENSION, {})
    wrap_task_tool(registry)
    registry.add_completion("handoff_id", handoff_ids)


__all__ = ["register_tasks", "require_extension", "task_result", "handoff_ids"]
