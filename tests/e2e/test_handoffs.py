"""Handoffs and tasks through a real room.

Every transition in ``tests/conformance/handoffs/`` through every path that
reaches it, with the role the case names: HTTP, MCP (the tools, or the
tasks extension's ``tasks/*`` for ``task_*``) and ``ce`` (the participant
commands with a stored session of the role's participant; ``ce task`` and
``ce task-cancel --participant``; ``ce call`` for ``task_update``). A
refusal and an acknowledgement (``ack``: an update that answers nothing
outstanding) change nothing and emit nothing. Also: ten concurrent
identical creates; a task surviving a room restart; the ``ce`` handoff
commands.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from commonroom.errors import EXIT_CODES, STATUS
from commonroom.operations import OPERATIONS
from commonroom.protocol import META_CAPABILITIES, TASKS_EXTENSION
from tests.mcp_wire import META, Mcp
from tests.parity import http_request
from tests.roomproc import ce

CASES = sorted((Path(__file__).resolve().parents[1] / "conformance" / "handoffs").glob("*.json"))
ROLES = {"owner": "read,handoff", "worker": "read,handoff", "boss": "read,approve", "stranger": "read,handoff"}


@pytest.fixture(scope="module")
def people(shared_room, tmp_path_factory):
    """role → (HTTP client, MCP client, ``ce`` session file, participant name); the document's path
    under None, the operator's client under ``"operator"``."""
    out: dict[Any, Any] = {None: str(shared_room.document), "operator": shared_room.operator()}
    files = tmp_path_factory.mktemp("sessions")
    for role, caps in ROLES.items():
        name = f"hf-{role}"
        client = shared_room.join(name, caps)
        session_file = files / f"{role}.json"
        joined = ce("join", shared_room.invite(name, caps), "--session-file", str(session_file))
        assert joined.returncode == 0, joined.stderr
        out[role] = (client, Mcp(shared_room.ingress, client.token), str(session_file), name)
    yield out
    for role in ROLES:
        out[role][1].close()


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


#: Each operation's ``ce`` form: the participant command, or the operator's as the participant.
CE_COMMANDS = {"handoff_accept": "handoff-accept", "handoff_request_input": "handoff-request-input",
               "handoff_complete": "handoff-complete", "handoff_approve": "handoff-approve",
               "handoff_reject": "handoff-reject", "handoff_cancel": "handoff-cancel"}


def _via_ce(people, role: str, op_name: str, values: dict[str, Any]) -> tuple[bool, int, dict[str, Any]]:
    """Run the operation with ``ce`` as ``role``; (ok, exit status, the JSON answer or error)."""
    _, _, session_file, name = people[role]
    if op_name in CE_COMMANDS:
        argv = [CE_COMMANDS[op_name], values["handoff_id"]]
        for option in ("message", "result", "reason"):
            if option in values:
                argv += [f"--{option}", values[option]]
        argv += ["--session-file", session_file]
    elif op_name == "task_update":  # no command of its own: the route with the stored session
        argv = ["call", "POST", "/workspace/task/update", "--data", json.dumps(values), "--session-file", session_file]
    else:  # task_get, task_cancel: the operator's commands, as the role's participant
        argv = [{"task_get": "task", "task_cancel": "task-cancel"}[op_name], people[None], values["task_id"],
                "--participant", name]
    done = ce(*argv, "--json")
    return done.returncode == 0, done.returncode, json.loads(done.stdout if done.returncode == 0 else done.stderr)


def _events(people, ids) -> list[dict[str, Any]]:
    """The handoff's own events (read by the operator: the owner port has no rate limit)."""
    return people["operator"].get(f"/workspace/handoffs/{ids['handoff_id']}/events").json()["events"]


def _statuses(people, ids) -> tuple[str, str]:
    operator = people["operator"]
    handoff = operator.get(f"/workspace/handoffs/{ids['handoff_id']}").json()
    task = operator.get("/workspace/task", params={"task_id": ids["task_id"]}).json()
    return handoff["status"], task["status"]


@pytest.mark.parametrize("adapter", ["http", "mcp", "ce"])
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
        client, mcp = people[role][:2]
        before = _events(people, ids)
        if adapter == "http":
            ok, status, body = _via_http(client, op_name, values)
        elif adapter == "mcp":
            ok, status, body = _via_mcp(mcp, op_name, values)
        else:
            ok, status, body = _via_ce(people, role, op_name, values)
        expect = spec["expect"]
        if expect["outcome"] in ("ok", "ack"):
            assert ok, body
            if adapter == "mcp" and op_name in TASK_METHODS and op_name != "task_get":
                assert body["resultType"] == "complete"  # the extension's ack
        else:
            assert not ok and body["error"] == expect["error"], body
            if adapter == "http":
                assert status == expect["status"] == STATUS[expect["error"]]
            elif adapter == "ce":
                assert status == EXIT_CODES[expect["error"]]
            if expect["error"] == "handoff_not_found":
                assert set(body["details"]) <= {"task_id", "handoff_id"}  # nothing revealed
            if expect["error"] == "handoff_conflict":
                assert body["details"]["status"] == expect["handoff"] and body["details"]["handoff_id"] == ids["handoff_id"]
        assert _statuses(people, ids) == (expect["handoff"], expect["task"])
        if expect["outcome"] != "ok":  # a refusal or an acknowledgement changes nothing and emits nothing
            assert _events(people, ids) == before
    finally:  # keep the room under its 32 active tasks
        people["operator"].post("/workspace/task/cancel", {"task_id": ids["task_id"]})


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
    mine, cursor = [], None  # every page: the shared room holds the transition cases' handoffs too
    while True:
        page = shared_room.operator().get("/workspace/handoffs", params={"limit": 200, **({"cursor": cursor} if cursor else {})}).json()
        mine += [h for h in page["handoffs"] if h["summary"] == "concurrent"]
        cursor = page["next_cursor"]
        if not cursor:
            break
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


@pytest.mark.parametrize("adapter", ["http", "mcp", "ce"])
def test_an_assignee_without_handoff_is_refused(people, adapter):
    """Naming an assignee who lacks ``handoff`` (so could never accept) is ``invalid_request`` naming the
    capability, on every path; nothing is created."""
    client, mcp, session_file, _ = people["owner"]
    boss = people["boss"][3]  # read, approve: no handoff
    before = people["operator"].get("/workspace/handoffs", params={"status": "open", "limit": 200}).json()
    if adapter == "http":
        r = client.post("/workspace/handoffs", {"summary": "for the boss", "assignee": boss})
        assert r.status_code == 400
        body = r.json()
    elif adapter == "mcp":
        result = mcp.call_tool("handoff_create", {"summary": "for the boss", "assignee": boss})
        assert result["isError"]
        body = result["structuredContent"]
    else:
        done = ce("handoff-create", "--summary", "for the boss", "--assignee", boss, "--session-file", session_file, "--json")
        assert done.returncode == EXIT_CODES["invalid_request"], done.stderr
        body = json.loads(done.stderr)
    assert body["error"] == "invalid_request" and body["details"]["capability"] == "handoff", body
    assert "handoff" in body["message"] and body["details"]["assignee"] == boss
    after = people["operator"].get("/workspace/handoffs", params={"status": "open", "limit": 200}).json()
    assert after == before
