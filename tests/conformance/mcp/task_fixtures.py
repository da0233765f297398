"""The conformance suite's task-running fixture tools (tests only; ``fixtures.register`` adds them).

The ``tasks-*`` scenarios of @modelcontextprotocol/conformance 0.2.0-alpha.12
call these names (their descriptions, and the checks inside the installed
``dist/index.js``, say what each must do). Each is a real task-running tool
of the room (``add_task_tool(registry, …)`` of :mod:`commonroom.mcp.tooltasks`):
called with the tasks extension declared, it answers ``CreateTaskResult``
after the task is committed in the sidecar and runs in the background; the
task answers ``tasks/get``, ``tasks/update``, ``tasks/cancel`` and shows up on
``subscriptions/listen``.

==========================  ==========  ==================================================
tool                        support     what the run does
==========================  ==========  ==================================================
``slow_compute``            optional    sleeps ``seconds`` (stopped by ``tasks/cancel``), then text
``failing_job``             required    ~0.5 s, then a tool error (``completed``, ``isError``)
``protocol_error_job``      optional    raises a JSON-RPC error (``failed`` with ``error``)
``confirm_delete``          optional    one ``elicitation/create`` input request, then text
``multi_input``             optional    two input requests at once, then text
``test_tool_with_task``     required    round 1 asks ``user_name`` synchronously
                                        (``input_required``, no task); round 2 makes the
                                        task, whose result greets that name
==========================  ==========  ==================================================
"""

from __future__ import annotations

from typing import Any

from commonroom.mcp.jsonrpc import JsonRpcError
from commonroom.mcp.registry import Raw
from commonroom.mcp.tooltasks import add_task_tool

from .fixtures import _accepted, _elicit

SLOW_COMPUTE = {"type": "object",
                "properties": {"seconds": {"type": "number", "minimum": 0}, "label": {"type": "string"}}}
FILENAME = {"type": "object", "properties": {"filename": {"type": "string"}}}
NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}


def _text(text: str, *, error: bool = False) -> Raw:
    return Raw({"content": [{"type": "text", "text": text}], "isError": error})


async def slow_compute(job: Any) -> Raw:
    seconds = float(job.arguments.get("seconds", 1))
    label = job.arguments.get("label", "")
    await job.sleep(seconds)
    return _text(f"slow_compute {label} done after {seconds:g}s")


async def failing_job(job: Any) -> Raw:
    await job.sleep(0.5)
    return _text("failing_job failed on purpose (a tool execution error)", error=True)


async def protocol_error_job(job: Any) -> Raw:
    await job.sleep(0.1)
    raise JsonRpcError(-32603, "protocol_error_job broke on purpose (a protocol-level error)")


async def confirm_delete(job: Any) -> Raw:
    filename = job.arguments.get("filename", "?")
    answers = await job.ask({"confirm_delete": _elicit(f"Delete {filename}?", "confirm", "boolean")},
                            f"waiting for confirmation to delete {filename}")
    if _accepted(answers["confirm_delete"], "confirm"):
        return _text(f"Deleted {filename}")
    return _text(f"Kept {filename}")


async def multi_input(job: Any) -> Raw:
    answers = await job.ask({"name": _elicit("What is your name?", "name"),
                             "confirm": _elicit("Shall I go on?", "confirm", "boolean")})
    return _text(f"name={_accepted(answers['name'], 'name')} confirm={_accepted(answers['confirm'], 'confirm')}")


def _user_name(ctx: Any) -> Any:
    answers = ctx.params.get("inputResponses")
    return answers.get("user_name") if isinstance(answers, dict) else None


def with_task_round_one(ctx: Any) -> Raw | None:
    """Round 1 of ``test_tool_with_task``: ask for the name synchronously (no task yet)."""
    if _user_name(ctx) is None:
        return Raw({"resultType": "input_required", "inputRequests": {"user_name": _elicit("What is your name?", "name")}})
    return None


async def with_task(job: Any) -> Raw:
    await job.sleep(0.2)
    return _text(f"Hello, {_accepted(_user_name(job.ctx), 'name') or 'stranger'}! (from a task)")


def register_task_tools(registry: Any) -> None:
    """Add the ``tasks-*`` scenarios' fixture tools."""
    def add(name: str, **kwargs: Any) -> None:
        add_task_tool(registry, name, **kwargs)

    add("slow_compute", description="Sleeps `seconds`, then answers (a task when the client declares tasks)",
        input_schema=SLOW_COMPUTE, run=slow_compute)
    add("failing_job", description="Always ends in a tool error after ~0.5 s (runs only as a task)",
        input_schema=NO_ARGS, run=failing_job, task_support="required")
    add("protocol_error_job", description="Always ends in a protocol-level error", input_schema=NO_ARGS,
        run=protocol_error_job)
    add("confirm_delete", description="Asks for confirmation (elicitation), then deletes nothing",
        input_schema=FILENAME, run=confirm_delete)
    add("multi_input", description="Asks two questions at once", input_schema=NO_ARGS, run=multi_input)
    add("test_tool_with_task", description="Asks for a name synchronously, then greets it from a task",
        input_schema=NO_ARGS, run=with_task, task_support="required", prepare=with_task_round_one)
