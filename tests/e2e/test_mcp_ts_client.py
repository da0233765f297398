"""A whole handoff driven by the official MCP TypeScript client with its tasks extension.

The owner is ``tests/clients/ts_handoff.mjs``: ``@modelcontextprotocol/client``
2.4.0 pinned to 2026-07-28 with ``@modelcontextprotocol/ext-tasks`` 0.2.2
(installed by ``npm ci`` from ``tests/clients/package.json`` and its lock, as
the suite's other npm peers: ``tests/clients/generators.py``). It calls
``handoff_create`` with the extension declared, answers the assignee's
question in ``onInputRequest`` and ``settle()``s the task. This test plays
the assignee over HTTP (accept, request input, complete once answered) and
checks that the client settled ``completed`` with the result, and that every
answer it received validates against the official schemas (the completed
task's ``result`` as the core ``CallToolResult``, which ext-tasks decodes it
as). Skipped only when Node is not installed; a failed install fails.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from typing import Any

import pytest

from tests.clients.generators import HERE, SetupError, npm_packages
from tests.mcp_schema import check

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="Node is not installed")

SCHEMAS = {"tools/call": "tasks:CreateTaskResult", "tasks/get": "tasks:GetTaskResult",
           "tasks/update": "tasks:UpdateTaskResult", "tasks/cancel": "tasks:CancelTaskResult"}


def _until(what: str, probe: Any, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_typescript_client_drives_a_whole_handoff(room):
    try:
        node = npm_packages()
    except SetupError as exc:
        pytest.fail(f"could not install the pinned npm packages: {exc}")
    owner = room.join("ts-owner", "read,handoff")
    worker = room.join("ts-worker", "read,handoff")
    proc = subprocess.Popen([node, str(HERE / "ts_handoff.mjs"), room.ingress + "/mcp", owner.token,
                             "release notes from the TS client", "markdown"],
                            cwd=HERE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def opened() -> Any:
            page = worker.get("/workspace/handoffs", params={"status": "open"}).json()["handoffs"]
            return next((h for h in page if h["summary"] == "release notes from the TS client"), None)

        handoff = _until("the client's handoff_create", opened)
        assert worker.post(f"/workspace/handoffs/{handoff['id']}/accept").status_code == 200
        asked = worker.post(f"/workspace/handoffs/{handoff['id']}/request-input", {"message": "Which format?"})
        assert asked.status_code == 200, asked.text
        task_id = asked.json()["task"]["taskId"]

        def answered() -> Any:
            task = worker.get("/workspace/task", params={"task_id": task_id}).json()
            return task if task["status"] == "working" and "input_1" in task.get("inputResponses", {}) else None

        task = _until("the client's answer (tasks/update)", answered)
        assert task["inputResponses"]["input_1"] == {"action": "accept", "content": {"answer": "markdown"}}
        done = worker.post(f"/workspace/handoffs/{handoff['id']}/complete", {"result": "written in markdown"})
        assert done.status_code == 200, done.text
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    steps = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert proc.returncode == 0, (out[-4000:], err[-4000:])
    by_step = {s["step"]: s for s in steps}
    assert by_step["connected"]["era"] == "modern"
    assert by_step["called"]["kind"] == "task" and by_step["called"]["taskId"] == task_id
    assert by_step["input"]["kind"] == "elicitation" and by_step["input"]["params"]["message"] == "Which format?"
    settled = by_step["settled"]
    assert settled["status"] == "completed", settled
    check("CallToolResult", settled["result"])
    assert settled["result"]["content"] == [{"type": "text", "text": "written in markdown"}]
    assert settled["result"]["structuredContent"]["handoff"]["status"] == "result_ready"
    wire = [s for s in steps if s["step"] == "wire"]
    assert {"tools/call", "tasks/get", "tasks/update"} <= {s["method"] for s in wire}
    for s in wire:
        assert s["status"] == 200 and "result" in s["body"], s
        check(SCHEMAS[s["method"]], s["body"]["result"])
        if s["method"] == "tasks/get" and s["body"]["result"]["status"] == "completed":
            check("CallToolResult", s["body"]["result"]["result"])
