"""Every task result is the core ``CallToolResult``.

ext-tasks (the official TypeScript tasks client) decodes a completed task's
``result`` as the core ``CallToolResult``, whose ``resultType`` is required:
without it ``settle()`` reports the task ``failed``. Each kind of completed
task is validated here against the official 2026-07-28 schema as
``tasks/get`` and ``GET /workspace/task`` answer it: a handoff's task, the
tasks of task-running tools (a result and a tool error), and all of them
again after the room restarted. After the task row expired no task result
is served (``tests/engine/test_engine_handoffs.py``: the handoff keeps the
text).
"""

from __future__ import annotations

import os
import time
from typing import Any

from commonroom.protocol import META_CAPABILITIES, TASKS_EXTENSION
from tests.mcp_schema import check
from tests.mcp_wire import META, Mcp
from tests.roomproc import ROOT, start_room

EXT = {**META, META_CAPABILITIES: {"extensions": {TASKS_EXTENSION: {}}}}
PLUGIN = "tests.conformance.mcp.fixtures:register"


def _settled(mcp: Mcp, task_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        task = check("tasks:GetTaskResult", mcp.result("tasks/get", {"taskId": task_id}, meta=EXT))
        if task["status"] in ("completed", "failed", "cancelled") or time.monotonic() > deadline:
            return task
        time.sleep(0.1)


def _results(room, owner_token: str, tasks: dict[str, str]) -> dict[str, dict[str, Any]]:
    """name → the completed task's result, each checked as the core CallToolResult over MCP and HTTP."""
    out = {}
    mcp = Mcp(room.ingress, owner_token)
    operator = room.operator()
    try:
        for name, task_id in tasks.items():
            task = _settled(mcp, task_id)
            assert task["status"] == "completed", (name, task)
            out[name] = check("CallToolResult", task["result"])
            assert task["result"]["resultType"] == "complete"
            over_http = operator.get("/workspace/task", params={"task_id": task_id}).json()
            assert check("CallToolResult", over_http["result"]) == task["result"]
    finally:
        mcp.close()
    return out


def test_every_completed_task_result_is_a_core_call_tool_result(tmp_path):
    env = {"COMMONROOM_MCP_PLUGINS": PLUGIN,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    room = start_room(tmp_path, text="# Tasks\n", env=env)
    try:
        owner = room.join("owner", "read,handoff")
        worker = room.join("worker", "read,handoff")
        mcp = Mcp(room.ingress, owner.token)
        try:
            created = mcp.result("tools/call", {"name": "handoff_create", "arguments": {"summary": "s"}}, meta=EXT)
            computed = mcp.result("tools/call", {"name": "slow_compute", "arguments": {"seconds": 0}}, meta=EXT)
            tool_error = mcp.result("tools/call", {"name": "failing_job", "arguments": {}}, meta=EXT)
        finally:
            mcp.close()
        assert worker.post(f"/workspace/handoffs/{created['handoffId']}/accept").status_code == 200
        assert worker.post(f"/workspace/handoffs/{created['handoffId']}/complete", {"result": "r"}).status_code == 200
        tasks = {"handoff": created["taskId"], "tool": computed["taskId"], "tool error": tool_error["taskId"]}
        first = _results(room, owner.token, tasks)
        assert first["handoff"]["content"] == [{"type": "text", "text": "r"}]
        assert first["tool error"]["isError"] is True
        again = room.restart()
        try:
            assert _results(again, owner.token, tasks) == first  # the same results after a restart
        finally:
            again.stop()
    finally:
        room.stop()
