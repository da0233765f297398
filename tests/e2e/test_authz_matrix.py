"""The authorization matrix over the whole operation table.

Every operation (HTTP route and MCP tool) × capability present or absent
× token state (missing, unknown, expired, revoked, valid, and the owner
token) × listener (ingress, owner port) answers exactly what the seeds
document (:mod:`tests.authz` derives the cells and their answers from
:data:`commonroom.operations.OPERATIONS`, so a new operation is covered
without editing this file). One room serves the module; the cells run in
one concurrent batch and each operation's test reads its own cells.

Then the ids of another participant reveal nothing: a task, a board
message and a peer id of participant A, used by participant B, get the
very answer an id that names nothing gets (the id itself aside), over
HTTP and MCP, and change nothing of A's.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from commonroom.operations import OPERATIONS
from commonroom.operations.spec import INGRESS
from commonroom.protocol import META_CAPABILITIES, TASKS_EXTENSION
from tests.authz import CAPABILITIES, Case, cases, check_http, check_mcp, inputs, session_sets
from tests.mcp_wire import META, Mcp
from tests.parity import http_request
from tests.roomproc import Room

CELLS = cases()
OPS = sorted({case.op for case in CELLS})
EXT = {**META, META_CAPABILITIES: {"extensions": {TASKS_EXTENSION: {}}}}


class Bearers:
    """The bearer of each token state and capability set, and the owner token."""

    def __init__(self, room: Room):
        self.room = room
        self.expired = room.join("authz-expired", list(CAPABILITIES), session_ttl_seconds=1)
        joined_at = time.monotonic()
        self.sessions = {label: room.join(f"authz-{label.replace(':', '-').replace('+', '-')}", sorted(caps))
                         for label, caps in session_sets().items()}
        revoked = room.join("authz-revoked", list(CAPABILITIES))
        answer = room.operator().post("/owner/revoke", {"session": revoked.session["id"]})
        assert answer.status_code == 200 and answer.json()["revoked"] is True, answer.text
        self.revoked = revoked.token
        time.sleep(max(0.0, 2.1 - (time.monotonic() - joined_at)))  # past the 1 s session TTL

    def token(self, case: Case) -> str | None:
        """The Authorization bearer of a cell (None: no header)."""
        if case.token == "valid":
            return self.sessions[case.caps].token
        return {
            "missing": None, "unknown": "crs_" + "A" * 43, "expired": self.expired.token,
            "revoked": self.revoked, "owner": self.room.owner_token,
        }[case.token]


def _base(room: Room, listener: str) -> str:
    return room.ingress if listener == INGRESS else room.owner


def _run(client: httpx.Client, room: Room, bearers: Bearers, case: Case) -> tuple[int, Any]:
    op = OPERATIONS[case.op]
    values = inputs(op)
    token = bearers.token(case)
    base = _base(room, case.listener)
    if case.adapter == "mcp":
        mcp = Mcp(base, token, client=client)
        params = {"name": op.name, "arguments": values}
        r = client.post(base + "/mcp", content=json.dumps(mcp.body("tools/call", params)),
                        headers=mcp.headers("tools/call", params))
        return r.status_code, _json(r.content)
    method, path, kwargs = http_request(op, values)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with client.stream(method, base + path, headers=headers, **kwargs) as r:
        if op.streams and r.status_code == 200:
            assert r.headers["content-type"].startswith("text/event-stream")
            return 200, None  # the stream opened; closing it ends it
        return r.status_code, _json(r.read())


def _json(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return data.decode("utf-8", "replace")


@pytest.fixture(scope="module")
def answers(shared_room: Room) -> dict[Case, tuple[int, Any]]:
    """Every cell's answer, asked concurrently (a few seconds for the whole table)."""
    bearers = Bearers(shared_room)
    limits = httpx.Limits(max_connections=16, max_keepalive_connections=16)
    with httpx.Client(timeout=30, limits=limits) as client, ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda case: _run(client, shared_room, bearers, case), CELLS))
    return dict(zip(CELLS, results))


def test_the_matrix_covers_every_operation_both_ways():
    table = {op.name for op in OPERATIONS if op.http is not None}
    assert set(OPS) == table
    tools = {case.op for case in CELLS if case.adapter == "mcp"}
    assert tools == {op.name for op in OPERATIONS if op.mcp is not None}
    assert {"handoff_create", "handoff_complete", "post_session_message", "complete_session_message",
            "post_peer_message", "task_get", "invitation_create"} <= set(OPS)
    assert len(CELLS) > 1000


@pytest.mark.parametrize("name", OPS)
def test_every_cell_answers_as_documented(answers, name):
    op = OPERATIONS[name]
    wrong = []
    for case in (c for c in CELLS if c.op == name):
        status, body = answers[case]
        check = check_mcp if case.adapter == "mcp" else check_http
        why = check(op, case, status, body)
        if why:
            wrong.append(f"{case.label}: {why}")
    assert wrong == []


@pytest.mark.parametrize("name", sorted({c.op for c in CELLS if c.adapter == "mcp" and c.expect.code == "permission_denied"}))
def test_a_tool_refusal_is_the_http_error_object(answers, name):
    """``isError`` result: structured content and text are exactly the HTTP API's error object."""
    for case in (c for c in CELLS if c.op == name and c.adapter == "mcp" and c.expect.code == "permission_denied"):
        twin = next(c for c in CELLS if c.op == name and c.adapter == "http" and c.listener == case.listener
                    and c.token == case.token and c.caps == case.caps)
        result = answers[case][1]["result"]
        assert result["structuredContent"] == answers[twin][1]
        assert json.loads(result["content"][0]["text"]) == answers[twin][1]


# ---------------------------------------------- another participant's ids


def _scrub(value: Any, secret: str, stand_in: str) -> Any:
    """``value`` with every occurrence of the id ``secret`` replaced by ``stand_in``."""
    return json.loads(json.dumps(value).replace(secret, stand_in))


@pytest.fixture(scope="module")
def two(shared_room: Room):
    """Participant A (two sessions, a handoff, a todo) and participant B (no approve)."""
    caps = "read,observe,propose,lease,handoff,message"
    a1, a2, b = (shared_room.join(name, caps) for name in ("ids-a", "ids-a", "ids-b"))
    clients = {k: Mcp(shared_room.ingress, v.token) for k, v in (("a1", a1), ("a2", a2), ("b", b))}
    created = a1.post("/workspace/handoffs", {"summary": "A's own work"})
    assert created.status_code == 201, created.text
    todo = a1.post(f"/workspace/boards/{a1.session['id']}/messages", {"kind": "todo", "body": "A's todo"})
    assert todo.status_code == 201, todo.text
    fence = a1.get(f"/workspace/boards/{a1.session['id']}/messages/{todo.json()['message_id']}/assignment")
    assert fence.status_code == 200, fence.text
    meta = clients["a2"].call_tool("document_read", {})["_meta"]
    peers = meta["commonroom/peer_awareness"]
    assert len(peers) == 1
    yield {"a1": a1, "b": b, "mcp": clients, "task": created.json()["task"]["taskId"],
           "handoff": created.json()["handoff"]["id"], "message": todo.json()["message_id"], "peer": peers[0]["peer_id"],
           "fence": fence.json()["assignment_fence"]}
    for client in clients.values():
        client.close()


def _same(answer_known: tuple[int, Any], answer_unknown: tuple[int, Any], known: str, unknown: str) -> None:
    assert answer_known[0] == answer_unknown[0]
    assert _scrub(answer_known[1], known, "ID") == _scrub(answer_unknown[1], unknown, "ID")


def test_another_participants_task_is_an_unknown_task(two):
    b, mcp = two["b"], two["mcp"]["b"]
    task = two["task"]
    for method, path, extra in (("GET", "/workspace/task", None), ("POST", "/workspace/task/cancel", {}),
                                ("POST", "/workspace/task/update", {"input_responses": {}})):
        def ask(task_id: str) -> tuple[int, Any]:
            if method == "GET":
                r = b.get(path, params={"task_id": task_id})
            else:
                r = b.post(path, {"task_id": task_id, **(extra or {})})
            return r.status_code, r.json()
        known, unknown = ask(task), ask("task_0000000000000000")
        assert known[0] == 404 and known[1]["error"] == "handoff_not_found", known
        _same(known, unknown, task, "task_0000000000000000")
    for method, params in (("tasks/get", {}), ("tasks/cancel", {}), ("tasks/update", {"inputResponses": {}})):
        answers = []
        for task_id in (task, "task_0000000000000000"):
            r = mcp.post(method, {"taskId": task_id, **params}, meta=EXT)
            answers.append((r.status_code, r.json()["error"]))
        assert answers[0][1]["code"] == -32602 and answers[0][1]["message"] == "unknown task"
        _same(answers[0], answers[1], task, "task_0000000000000000")
    mine = two["a1"].get("/workspace/task", params={"task_id": task})
    assert mine.status_code == 200 and mine.json()["status"] == "working"  # B's cancels did nothing


def test_another_boards_message_is_an_unknown_message(two):
    b, mcp = two["b"], two["mcp"]["b"]
    board, message, nothing = b.session["id"], two["message"], "msg_0000000000000000"
    tries = [
        ("get_session_assignment", {"session_id": board}),
        ("complete_session_message", {"session_id": board, "answer": "done", "completion_key": "k",
                                      "expected_assignment_fence": two["fence"]}),
        ("post_session_message", {"session_id": board, "kind": "answer", "body": "hi", "reply_to": "{id}"}),
        ("list_session_messages", {"session_id": board}),
    ]
    for name, values in tries:
        def ask_http(msg: str) -> tuple[int, Any]:
            full = {k: (msg if v == "{id}" else v) for k, v in values.items()}
            if "reply_to" not in values:
                full["message_id"] = msg
            method, path, kwargs = http_request(OPERATIONS[name], full)
            r = b.request(method, path, **kwargs)
            return r.status_code, r.json()

        def ask_mcp(msg: str) -> tuple[int, Any]:
            full = {k: (msg if v == "{id}" else v) for k, v in values.items()}
            if "reply_to" not in values:
                full["message_id"] = msg
            result = mcp.call_tool(name, full)
            return int(result.get("isError", False)), result.get("structuredContent")
        for ask in (ask_http, ask_mcp):
            known, unknown = ask(message), ask(nothing)
            _same(known, unknown, message, nothing)
            if name == "list_session_messages":
                assert known[1]["messages"] == [], known
            else:
                assert known[1]["error"] == "message_not_found", (name, known)
    todo = two["a1"].get(f"/workspace/boards/{two['a1'].session['id']}/messages",
                         params={"message_id": message}).json()["messages"]
    assert [m["status"] for m in todo] == ["open"]  # B's completion did nothing


def test_another_participants_peer_is_an_unknown_peer(two):
    b, mcp = two["b"], two["mcp"]["b"]
    peer, nothing = two["peer"], "peer_00000000000000000000000000000000"
    body = {"kind": "note", "body": "hello"}
    http = [b.post(f"/workspace/peers/{p}/messages", body) for p in (peer, nothing)]
    assert http[0].status_code == 404 and http[0].json()["error"] == "peer_not_found"
    _same((http[0].status_code, http[0].json()), (http[1].status_code, http[1].json()), peer, nothing)
    tool = [mcp.call_tool("post_peer_message", {"peer_id": p, **body}) for p in (peer, nothing)]
    assert tool[0]["isError"] is True
    _same((1, tool[0]["structuredContent"]), (1, tool[1]["structuredContent"]), peer, nothing)
    seen = two["mcp"]["a1"].call_tool("document_read", {})["_meta"]
    assert "commonroom/peer_messages" not in seen  # nothing reached A
