"""Handoffs and tasks through a real room (issue 10 items 1-3 and 7).

Every transition in ``tests/conformance/handoffs/`` through HTTP and
through MCP tools; ten concurrent identical creates; a task surviving a
room restart; the ``ce`` handoff commands.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from commonroom.operations import OPERATIONS
from commonroom.protocol import META_CAPABILITIES, TASKS_EXTENSION
from tests.mcp_wire import META, Mcp
from tests.parity import http_request
from tests.roomproc import ce

CASES = sorted((Path(__file__).resolve().parents[1] / "conformance" / "handoffs").glob("*.json"))
ROLES = {"owner": "read,handoff", "worker": "read,handoff", "boss": "read,approve", "stranger": "read,handoff"}


@pytest.fixture(scope="module")
def people(shared_room):
    out = {}
    for role, caps in ROLES.items():
        client = shared_room.join(f"hf-{role}", caps)
        out[role] = (client, Mcp(shared_room.ingress, client.token))
    yield out
    for _, mcp in out.values():
        mcp.close()


def _fill(values: dict[str, Any], ids: dict[str, str]) -> dict[str, Any]:
    return json.loads(json.dumps(values).replace("{handoff_id}", ids["handoff_id"]).replace("{task_id}", ids["task_id"]))


def _input(op_name: str, given: dict[str, Any], ids: dict[str, str]) -> dict[str, Any]:
    values = dict(given)
    if op_name.startswith("task_"):
        values["task_id"] = ids["task_id"]
    else:
        values["handoff_id"] = ids["handoff_id"]
    return _fill(values, ids)


def _via_http(client, op_name: str, values: dict[str, Any]) -> tuple[bool, int, dict[str, Any]]:
    method, path, kwargs = http_request(OPERATIONS[op_name], values)
    r = client.request(method, path, **kwargs)
    return r.status_code < 400, r.status_code, r.json()


#: The task operations' MCP form: the tasks extension's methods (declared on the request).
TASK_METHODS = {"task_get": "tasks/get", "task_update": "tasks/update", "task_cancel": "tasks/cancel"}
EXT = {**META, META_CAPABILITIES: {"extensions": {TASKS_EXTENSION: {}}}}


def _via_mcp(mcp, op_name: str, values: dict[str, Any]) -> tuple[bool, int | None, dict[str, Any]]:
    if op_name in TASK_METHODS:
        params = {"taskId": values["task_id"]}
        if "input_responses" in values:
            params["inputResponses"] = values["input_responses"]
        data = mcp.post(TASK_METHODS[op_name], params, meta=EXT).json()
        if "result" in data:
            return True, None, data["result"]
        error = data["error"]
        assert error["code"] == -32602, error
        if error["message"] == "unknown task":  # the same answer for unknown and foreign ids
            return False, None, {"error": "handoff_not_found", "details": {"task_id": error["data"]["taskId"]}}
        return False, None, error["data"]
    result = mcp.call_tool(op_name, values)
    return not result["isError"], None, result["structuredContent"]


def _statuses(people, ids) -> tuple[str, str]:
    boss = people["boss"][0]
    handoff = boss.get(f"/workspace/handoffs/{ids['handoff_id']}").json()
    task = boss.get("/workspace/task", params={"task_id": ids["task_id"]}).json()
    return handoff["status"], task["status"]


@pytest.mark.parametrize("adapter", ["http", "mcp"])
@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_transition(people, case, adapter):
    spec = json.loads(case.read_text("utf-8"))
    owner = people["owner"][0]
    created = owner.post("/workspace/handoffs", {"summary": spec["description"]})
    assert created.status_code == 201, created.text
    ids = {"handoff_id": created.json()["handoff"]["id"], "task_id": created.json()["task"]["taskId"]}
    try:
        for op_name, role, given in spec["setup"]:
            ok, status, body = _via_http(people[role][0], op_name, _input(op_name, given, ids))
            assert ok, (op_name, status, body)
        op_name, role, given = spec["call"]
        values = _input(op_name, given, ids)
        if adapter == "mcp" and OPERATIONS[op_name].mcp is None and op_name not in TASK_METHODS:
            pytest.skip(f"{op_name} is no MCP tool")
        client, mcp = people[role]
        ok, status, body = _via_http(client, op_name, values) if adapter == "http" else _via_mcp(mcp, op_name, values)
        expect = spec["expect"]
        if expect["outcome"] == "ok":
            assert ok, body
        else:
            assert not ok and body["error"] == expect["error"], body
            if status is not None:
                assert status == expect["status"]
            if expect["error"] == "handoff_not_found":
                assert set(body["details"]) <= {"task_id", "handoff_id"}  # nothing revealed
        assert _statuses(people, ids) == (expect["handoff"], expect["task"])
    finally:  # keep the room under its 32 active tasks
        people["boss"][0].post("/workspace/task/cancel", {"task_id": ids["task_id"]})


def test_ten_concurrent_identical_creates_make_one_handoff(shared_room, people):
    owner = people["owner"][0]
    body = {"summary": "concurrent", "constraints": "none", "artifacts": [{"uri": "https://example.com/a"}],
            "idempotency_key": "ten-at-once"}
    answers: list[Any] = [None] * 10
    barrier = threading.Barrier(10)

    def create(i: int) -> None:
        barrier.wait()
        r = owner.post("/workspace/handoffs", body)
        answers[i] = (r.status_code, r.json())

    threads = [threading.Thread(target=create, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(a == answers[0] for a in answers), answers
    status, first = answers[0]
    assert status == 201
    page = shared_room.operator().get("/workspace/handoffs", params={"limit": 200}).json()
    mine = [h for h in page["handoffs"] if h["summary"] == "concurrent"]
    assert [h["id"] for h in mine] == [first["handoff"]["id"]]
    events = owner.get(f"/workspace/handoffs/{first['handoff']['id']}/events").json()["events"]
    assert [e["type"] for e in events] == ["handoff.created"]
    other = owner.post("/workspace/handoffs", {**body, "summary": "different"})
    assert other.status_code == 409 and other.json()["error"] == "idempotency_mismatch"
    people["boss"][0].post("/workspace/task/cancel", {"task_id": first["task"]["taskId"]})


def test_limits_are_limit_exceeded_with_the_bound(people):
    owner = people["owner"][0]
    r = owner.post("/workspace/handoffs", {"summary": "s" * 2001})
    assert r.status_code == 429 and r.json()["details"]["limit"] == "summary_chars"
    assert "Retry-After" not in r.headers and "retry_after_seconds" not in r.json()
    result = people["owner"][1].call_tool("handoff_create", {"summary": "s", "constraints": "c" * 8001})
    assert result["isError"] and result["structuredContent"]["details"]["limit"] == "constraints_chars"


def test_a_task_survives_a_restart_and_the_ce_commands(room, tmp_path):
    owner = room.join("owner", "read,handoff")
    created = owner.post("/workspace/handoffs", {"summary": "survive"}).json()
    task_id, handoff_id = created["task"]["taskId"], created["handoff"]["id"]
    again = room.restart()
    try:
        r = owner.request("GET", "/workspace/task", params={"task_id": task_id})
        assert r.status_code == 200 and r.json() == created["task"]
        # the operator's commands (the room is running: reads on the sidecar, the cancel on the owner port)
        doc = str(again.document)
        listed = ce("handoffs", doc, "--json")
        assert listed.returncode == 0 and json.loads(listed.stdout)["handoffs"][0]["id"] == handoff_id
        assert json.loads(ce("handoff", doc, handoff_id, "--json").stdout)["status"] == "open"
        assert json.loads(ce("handoff-events", doc, handoff_id, "--json").stdout)["events"][0]["type"] == "handoff.created"
        shown = ce("task", doc, task_id, "--participant", "owner", "--json")
        assert shown.returncode == 0 and json.loads(shown.stdout)["taskId"] == task_id
        missing = ce("task", doc, task_id, "--json")
        assert missing.returncode == 2  # --participant is required
        hidden = ce("task", doc, task_id, "--participant", "nobody", "--json")
        assert hidden.returncode == 28 and json.loads(hidden.stderr)["error"] == "handoff_not_found"
        cancelled = ce("task-cancel", doc, task_id, "--participant", "owner", "--json")
        assert cancelled.returncode == 0 and json.loads(cancelled.stdout)["status"] == "cancelled"
        assert owner.get(f"/workspace/handoffs/{handoff_id}").json()["status"] == "cancelled"
    finally:
        again.stop()


def test_ce_script_commands(room, tmp_path):
    def session(name: str, caps: str) -> str:
        path = tmp_path / f"{name}.json"
        done = ce("join", room.invite(name, caps), "--session-file", str(path))
        assert done.returncode == 0, done.stderr
        return str(path)

    owner, worker, boss = session("owner", "read,handoff"), session("worker", "read,handoff"), session("boss", "read,approve")
    made = ce("handoff-create", "--summary", "by script", "--artifact", "file:///a.md", "--idempotency-key", "k",
              "--session-file", owner, "--json")
    assert made.returncode == 0, made.stderr
    handoff_id = json.loads(made.stdout)["handoff"]["id"]
    assert json.loads(ce("handoff-accept", handoff_id, "--session-file", worker, "--json").stdout)["handoff"]["status"] == "accepted"
    asked = ce("handoff-request-input", handoff_id, "--message", "why?", "--session-file", worker, "--json")
    assert json.loads(asked.stdout)["task"]["status"] == "input_required"
    done = ce("handoff-complete", handoff_id, "--result", "because", "--session-file", worker, "--json")
    assert json.loads(done.stdout)["handoff"]["result"] == "because"
    refused = ce("handoff-approve", handoff_id, "--session-file", worker, "--json")
    assert refused.returncode == 11  # permission_denied
    approved = ce("handoff-approve", handoff_id, "--session-file", boss, "--json")
    assert json.loads(approved.stdout)["status"] == "approved"
    again = ce("handoff-reject", handoff_id, "--session-file", boss, "--json")
    assert again.returncode == 29 and json.loads(again.stderr)["details"]["status"] == "approved"
    other = json.loads(ce("handoff-create", "--summary", "x", "--session-file", owner, "--json").stdout)["handoff"]["id"]
    assert json.loads(ce("handoff-cancel", other, "--reason", "r", "--session-file", owner, "--json").stdout)["status"] == "cancelled"
