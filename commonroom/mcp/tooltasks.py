"""Task-running tools: a tool whose call becomes a durable task of the room.

The tasks extension lets ``tools/call`` answer ``resultType: "task"``
(``CreateTaskResult``) when the request declared
``io.modelcontextprotocol/tasks``; the client then follows the task with
``tasks/get``, answers its input requests with ``tasks/update``, stops it
with ``tasks/cancel`` and hears of it on ``subscriptions/listen``. The
room's own tool of that kind is ``handoff_create`` (:mod:`.tasks`); a
plugin adds others with this module's function (it builds on the registry,
so the registry does not know it)::

    add_task_tool(registry, name, *, description, input_schema, run,
                  task_support="optional", prepare=None, title=None, annotations=None)

``run(job)`` (``async def``) does the work with a :class:`TaskJob` and
returns the tool's value, as a handler does (any JSON value, or ``Raw``
with the CallToolResult). A call that declared the extension:

1. ``prepare(ctx)`` (optional, synchronous with the call) may answer
   without a task, e.g. ``Raw({"resultType": "input_required", ...})`` to
   gather input first (multi round-trip); ``None`` goes on;
2. the engine creates the task (:meth:`~commonroom.engine.tasks.TasksMixin.start_tool_task`,
   committed on the writer thread) and the call answers ``CreateTaskResult``;
3. ``run(job)`` goes on in the background on the room's event loop. Its
   value finishes the task ``completed`` (a ``CommonroomError`` raised is a
   tool error: ``completed`` with ``result.isError``); a ``JsonRpcError``
   (or any other exception, as -32603) finishes it ``failed`` with that
   error. ``await job.ask({key: request})`` makes the task
   ``input_required`` and returns the answers once ``tasks/update`` has
   brought all of them; ``await job.sleep(s)`` waits. Both raise
   :class:`TaskEnded` once the task is terminal (cancelled), and the run
   stops there.

Without the declaration a ``task_support="optional"`` tool runs inline and
answers an ordinary tool result (``job.task_id`` is None; ``job.ask`` is
-32021); a ``"required"`` one is -32021 with
``data.requiredCapabilities.extensions["io.modelcontextprotocol/tasks"]``
before anything runs. The background run lives in the room process: a
restart ends it, and the new process fails its task at start-up
(``Engine.fail_interrupted_tool_tasks``, -32603).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any, Awaitable, Callable

from ..errors import CommonroomError
from ..protocol import TASKS_EXTENSION
from .dispatch import tool_error, tool_result
from .jsonrpc import JsonRpcError, missing_capability
from .registry import Context, Raw, Registry, Tool
from .tasks import require_extension, task_result

log = logging.getLogger("commonroom.mcp")

#: How often a waiting run looks at its task (a read of the sidecar on the loop).
POLL_SECONDS = 0.05
TERMINAL = frozenset({"completed", "failed", "cancelled"})
TASK_SUPPORT = ("optional", "required")

#: Background runs in flight (a reference keeps each from being collected).
_RUNS: set[asyncio.Task[None]] = set()


class TaskEnded(Exception):
    """The job's task reached a terminal status (cancelled) while the run waited."""


class TaskJob:
    """What ``run`` receives: the call's context and the task it runs under (``task_id`` None inline)."""

    def __init__(self, ctx: Context, task_id: str | None):
        self.ctx = ctx
        self.task_id = task_id
        self.arguments = ctx.arguments

    async def _write(self, fn: Callable[..., Any], *args: Any) -> Any:
        runner = self.ctx.runner
        return await runner.write(fn, *args) if runner is not None else fn(*args)

    def _task(self) -> dict[str, Any]:
        task = self.ctx.engine.tool_task(self.task_id)
        if task is None or task["status"] in TERMINAL:
            raise TaskEnded(self.task_id)
        return task

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds``; :class:`TaskEnded` as soon as the task is terminal."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, seconds)
        while True:
            if self.task_id is not None:
                self._task()
            left = deadline - loop.time()
            if left <= 0:
                return
            await asyncio.sleep(min(POLL_SECONDS, left) if self.task_id is not None else left)

    async def ask(self, requests: dict[str, Any], message: str | None = None) -> dict[str, Any]:
        """Ask the caller (the task becomes ``input_required``); the answers, once every key has one."""
        if self.task_id is None:
            raise missing_capability({"extensions": {TASKS_EXTENSION: {}}})
        await self._write(self.ctx.engine.ask_tool_task, self.task_id, requests, message)
        while True:
            task = self._task()
            answers = task.get("inputResponses") or {}
            if task["status"] == "working" and all(key in answers for key in requests):
                return {key: answers[key] for key in requests}
            await asyncio.sleep(POLL_SECONDS)


def _as_result(value: Any) -> dict[str, Any]:
    """A run's value as the CallToolResult a task keeps (``resultType: "complete"`` is added when the task
    is read, for every task alike: ``HandoffBase._task_dict``)."""
    if isinstance(value, Raw):
        out = {k: v for k, v in value.result.items() if k not in ("resultType", "_meta")}
        out.setdefault("isError", False)
        return out
    return tool_result(value)


async def _finish(job: TaskJob, run: Callable[[TaskJob], Awaitable[Any]]) -> None:
    """Run ``run`` in the background and record how it ended on the task."""
    engine, task_id = job.ctx.engine, job.task_id
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    try:
        result = _as_result(await run(job))
    except TaskEnded:
        return
    except asyncio.CancelledError:  # the room is stopping: the task stays as it is
        raise
    except CommonroomError as exc:
        result = tool_error(exc)
    except JsonRpcError as exc:
        error = exc.to_dict()
    except Exception as exc:  # a crash of the tool is a protocol-level failure
        log.exception("task-running tool of task %s failed", task_id)
        error = {"code": -32603, "message": f"internal error: {type(exc).__name__}"}
    try:
        await job._write(engine.finish_tool_task, task_id, result, error)
    except Exception:
        log.exception("could not record the end of task %s", task_id)


def task_tool_handler(name: str, run: Callable[[TaskJob], Awaitable[Any]], task_support: str,
                      prepare: Callable[[Context], Any] | None) -> Callable[[Context], Any]:
    """The ``tools/call`` handler of a task-running tool (see the module docstring)."""

    async def handler(ctx: Context) -> Any:
        declared = ctx.declared("extensions", TASKS_EXTENSION)
        if not declared:
            if task_support == "required":
                require_extension(ctx)
            return await run(TaskJob(ctx, None))
        if prepare is not None:
            early = prepare(ctx)
            if inspect.isawaitable(early):
                early = await early
            if early is not None:
                return early
        job = TaskJob(ctx, None)
        task = await job._write(ctx.engine.start_tool_task, ctx.actor, name)
        job.task_id = task["taskId"]
        background = asyncio.get_running_loop().create_task(_finish(job, run), name=f"task {job.task_id}")
        _RUNS.add(background)
        background.add_done_callback(_RUNS.discard)
        return task_result(ctx, {"task": task})

    handler.__name__ = name
    return handler


def add_task_tool(registry: Registry, name: str, *, description: str, input_schema: dict[str, Any],
                  run: Callable[[TaskJob], Awaitable[Any]], task_support: str = "optional",
                  prepare: Callable[[Context], Any] | None = None, title: str | None = None,
                  annotations: dict[str, Any] | None = None) -> Tool:
    """Register a task-running tool on ``registry`` (see the module docstring); ``ValueError`` for a bad
    ``task_support`` or a ``run`` that is not ``async``."""
    if task_support not in TASK_SUPPORT:
        raise ValueError(f"tool {name!r}: task_support must be one of {', '.join(TASK_SUPPORT)}")
    if not inspect.iscoroutinefunction(run):
        raise ValueError(f"tool {name!r}: run must be an async function")
    return registry.add_tool(name, description=description, input_schema=input_schema, title=title,
                             annotations=annotations, handler=task_tool_handler(name, run, task_support, prepare))


__all__ = ["TaskEnded", "TaskJob", "add_task_tool", "task_tool_handler"]
