"""The two board summaries in a real room (``ce serve``), through HTTP, MCP and ``ce``.

The seed's coordinator → worker flow: C posts a todo, W works under its own
session (a lease, a version) and completes the todo under
``recording_session_id = W``; C then reads ``session_discussion_summary(C)``
and ``session_handoff_summary(W)``. Each answer is valid against its schema,
the MCP tools declare the output schemas, and the three adapters give the
same answer. Every error code of the two operations is provoked through each
adapter (an unknown session and a known one answer a caller without ``read``
identically), and a board holding more than the bounds gives a truncated,
valid answer within the byte bound over HTTP.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from commonroom import jsontext, schemas
from commonroom.bundle import bundle
from commonroom.engine import board_summaries
from commonroom.errors import EXIT_CODES
from commonroom.operations import OPERATIONS
from tests.conftest import SAMPLE
from tests.e2e.test_editing_cli import run
from tests.mcp_wire import Mcp
from tests.roomproc import start_room

OPS = ("session_discussion_summary", "session_handoff_summary")
SHAPES = {"session_discussion_summary": "boards#DiscussionSummary", "session_handoff_summary": "boards#HandoffSummary"}
CE = {"session_discussion_summary": "discussion", "session_handoff_summary": "handoff"}


def _path(operation: str, session_id: str) -> str:
    http = OPERATIONS[operation].http
    assert http is not None and http.method == "GET"
    return http.path.replace("{session_id}", session_id)


class Caller:
    """One session through the three adapters."""

    def __init__(self, room: Any, name: str, caps: str, folder: Path):
        self.file = folder / f"{name}.json"
        code, _, err = run("join", room.invite(name, caps), "--session-file", str(self.file))
        assert code == 0, err
        stored = json.loads(self.file.read_text())
        self.id, self.token, self.room = stored["session_id"], stored["token"], room
        self.mcp = Mcp(room.ingress, self.token)

    def http(self, method: str, path: str, body: Any = None) -> Any:
        import httpx

        return httpx.request(method, self.room.ingress + path, json=body, timeout=30,
                             headers={"Authorization": f"Bearer {self.token}"})

    def call(self, adapter: str, operation: str, session_id: str) -> tuple[str, Any]:
        """``("", answer)`` or ``(error code, details or stderr)``."""
        if adapter == "http":
            r = self.http("GET", _path(operation, session_id))
            body = r.json()
            return ("", body) if r.status_code == 200 else (body["error"], body.get("details"))
        if adapter == "mcp":
            result = self.mcp.call_tool(operation, {"session_id": session_id})
            value = result["structuredContent"]
            assert value == json.loads(result["content"][0]["text"])
            return (value["error"], value.get("details")) if result["isError"] else ("", value)
        code, out, err = run("board", "summary", CE[operation], session_id, "--session-file", str(self.file), "--json")
        if code == 0:
            return "", json.loads(out)
        found = [c for c, status in EXIT_CODES.items() if status == code]
        assert found and found[0] in err, (code, err)
        return found[0], err


@pytest.fixture(scope="module")
def flow(tmp_path_factory):
    """A room after the coordinator → worker flow: C, W and B (no ``read``)."""
    folder = tmp_path_factory.mktemp("summaries")
    mp = pytest.MonkeyPatch()
    mp.setenv("COMMONROOM_RATE_LIMIT", "100000")
    room = start_room(folder / "room", SAMPLE)
    c = Caller(room, "coordinator", "read,observe,message", folder)
    w = Caller(room, "worker", "read,observe,message,lease,write", folder)
    b = Caller(room, "blind", "observe,message", folder)

    def ok(r: Any, status: int = 200) -> Any:
        assert r.status_code == status, r.text
        return r.json()

    todo = ok(c.http("POST", f"/workspace/boards/{c.id}/messages",
                     {"kind": "todo", "body": "Implement the intro; answer with the version.", "priority": "high",
                      "requires_ack": True}), 201)
    ok(c.http("POST", f"/workspace/boards/{c.id}/messages", {"kind": "decision", "body": "Intro first, then FAQ."}),
       201)
    question = ok(w.http("POST", f"/workspace/boards/{c.id}/messages",
                         {"kind": "question", "body": "British or American spelling?",
                          "reply_to": todo["message_id"], "recording_session_id": w.id}), 201)
    assignment = ok(w.http("GET", f"/workspace/boards/{c.id}/messages/{todo['message_id']}/assignment"))
    lease = ok(w.http("POST", "/workspace/leases", {"region": {"lines": [1, 1]}, "ttl_seconds": 600}), 201)
    head = ok(w.http("GET", "/workspace/document"))["version"]
    version = ok(w.http("PUT", "/workspace/document", {"expected_version": head, "text": "# Intro, rewritten\n",
                                                        "region": {"lines": [1, 1]}, "summary": "the intro"}))
    done = ok(w.http("POST", f"/workspace/boards/{c.id}/messages/{todo['message_id']}/complete",
                     {"answer": f"done: version {version['number']}", "completion_key": "W-intro-1",
                      "expected_assignment_fence": assignment["assignment_fence"], "recording_session_id": w.id}))
    yield {"room": room, "c": c, "w": w, "b": b, "todo": todo, "question": question, "lease": lease,
           "version": version, "done": done, "folder": folder}
    for caller in (c, w, b):
        caller.mcp.close()
    room.stop()
    mp.undo()


def _steady(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer without what moves with the clock (an open todo's age)."""
    copy = json.loads(json.dumps(answer))
    for todo in copy.get("open_todos", {}).get("items", []):
        todo.pop("age_seconds")
    return copy


@pytest.mark.parametrize("operation", OPS)
def test_the_three_adapters_answer_alike_and_valid(flow, operation):
    c, w = flow["c"], flow["w"]
    target = c.id if operation == "session_discussion_summary" else w.id
    answers = {}
    for adapter in ("http", "mcp", "ce"):
        code, answer = c.call(adapter, operation, target)
        assert code == "", answer
        schemas.validate(SHAPES[operation], answer)
        answers[adapter] = _steady(answer)
    assert answers["http"] == answers["mcp"] == answers["ce"]
    tools = {t["name"]: t for t in c.mcp.result("tools/list")["tools"]}
    tool = tools[operation]
    assert tool["annotations"]["readOnlyHint"] is True
    jsonschema.validate(c.call("mcp", operation, target)[1], tool["outputSchema"])
    assert bundle(SHAPES[operation]) in tool["outputSchema"]["anyOf"]  # the answer, or the error object
    code, readable, err = run("board", "summary", CE[operation], target, "--session-file", str(c.file))
    assert code == 0 and target in readable, err


def test_the_discussion_summary_of_the_coordinators_board(flow):
    c, done = flow["c"], flow["done"]
    _, summary = c.call("http", "session_discussion_summary", c.id)
    assert summary["by_kind"] == {**dict.fromkeys(summary["by_kind"], 0), "todo": 1, "decision": 1, "question": 1,
                                  "answer": 1}
    assert summary["by_status"] == {"open": 3, "resolved": 1}
    assert summary["open_todos"]["total"] == 0  # completed
    # the question was answered by nobody: the answer replies to the todo, not to it
    assert [q["message_id"] for q in summary["open_questions"]["items"]] == [flow["question"]["message_id"]]
    assert summary["answers"]["items"][0]["message_id"] == done["answer"]["message_id"]
    assert summary["answers"]["items"][0]["author_session_id"] == flow["w"].id
    assert summary["decisions"]["items"][0]["body"] == "Intro first, then FAQ."
    assert summary["last_activity_at"] == done["todo"]["updated_at"]
    assert summary["history_lost"] is False and summary["truncated"] is False


def test_the_handoff_summary_of_the_worker(flow):
    c, w, done = flow["c"], flow["w"], flow["done"]
    _, summary = c.call("http", "session_handoff_summary", w.id)
    assert summary["session"]["participant"]["name"] == "worker" and summary["session"]["revoked_at"] is None
    assert [v["number"] for v in summary["versions"]["items"]] == [flow["version"]["number"]]
    assert summary["versions"]["items"][0]["summary"] == "the intro"
    assert [x["lease_id"] for x in summary["leases"]["items"]] == [flow["lease"]["id"]]
    assert summary["completed_todos"]["items"] == [{
        "session_id": c.id, "todo_message_id": flow["todo"]["message_id"],
        "answer_message_id": done["answer"]["message_id"], "resolved_at": done["todo"]["resolved_at"]}]
    assert {m["message_id"] for m in summary["messages"]["items"]} == {
        done["answer"]["message_id"], flow["question"]["message_id"]}
    assert summary["proposals"]["total"] == 0 and summary["handoffs"]["total"] == 0
    # nothing was copied into the coordinator's board, and W's own board is untouched
    _, board = c.call("http", "session_discussion_summary", w.id)
    assert board["retained"] == 0


@pytest.mark.parametrize("adapter", ("http", "mcp", "ce"))
@pytest.mark.parametrize("operation", OPS)
def test_each_error_code_through_each_adapter(flow, operation, adapter):
    c, w, b = flow["c"], flow["w"], flow["b"]
    assert set(OPERATIONS[operation].errors) == {"not_found"}
    code, details = c.call(adapter, operation, "s_no_such_session")
    assert code == "not_found"
    if adapter != "ce":
        assert details == {"session_id": "s_no_such_session"}
    # without read: a session that exists and one that does not answer exactly alike
    known, known_details = b.call(adapter, operation, w.id)
    unknown, unknown_details = b.call(adapter, operation, "s_no_such_session")
    assert known == unknown == "permission_denied" and known_details == unknown_details
    code, details = c.call(adapter, operation, "s_" + "x" * 80)  # longer than a session id can be
    assert code == "invalid_request"


def test_a_board_beyond_the_bounds_answers_truncated_and_valid_over_http_and_mcp(flow, tmp_path):
    # a session of its own fills its board: the worker's summaries stay as the flow left them
    c, w = flow["c"], Caller(flow["room"], "bulky", "read,observe,message", tmp_path)
    body = "界" * (board_summaries.SUMMARY_TEXT_CHARS + 20)
    for kind in ("todo", "question", "decision", "risk", "answer"):
        for _ in range(board_summaries.SUMMARY_ITEMS + 1):
            r = w.http("POST", f"/workspace/boards/{w.id}/messages",
                       {"kind": kind, "body": body, "recording_session_id": w.id})
            assert r.status_code == 201, r.text
    for operation in OPS:
        r = c.http("GET", _path(operation, w.id))
        assert r.status_code == 200 and len(r.content) <= board_summaries.SUMMARY_BYTES
        summary = r.json()
        schemas.validate(SHAPES[operation], summary)
        assert summary["truncated"] is True
        # MCP keeps the bound too: the text repeats the JSON only while both copies fit in it
        response = c.mcp.post("tools/call", {"name": operation, "arguments": {"session_id": w.id}})
        assert response.status_code == 200
        result = response.json()["result"]
        structured = result["structuredContent"]
        schemas.validate(SHAPES[operation], structured)
        text = result["content"][0]["text"]
        twice = len(jsontext.dumps(structured).encode("utf-8")) + len(jsontext.dumps(text).encode("utf-8"))
        assert twice <= board_summaries.SUMMARY_BYTES, (operation, twice)
        assert len(response.content) <= board_summaries.SUMMARY_BYTES + 1024  # + the JSON-RPC envelope
        as_text = jsontext.dumps(jsontext.dumps(structured)).encode("utf-8")
        if text.startswith("{"):
            assert json.loads(text) == structured
        else:  # the JSON twice would not fit: one sentence instead
            assert len(as_text) + len(jsontext.dumps(structured).encode("utf-8")) > board_summaries.SUMMARY_BYTES
            assert "structuredContent" in text and len(text) < 300
    discussion = c.http("GET", _path("session_discussion_summary", w.id)).json()
    assert discussion["retained"] == 5 * (board_summaries.SUMMARY_ITEMS + 1)
    assert all(discussion[k]["truncated"] for k in ("open_todos", "open_questions", "decisions", "risks", "answers"))
    assert all(item["body_truncated"] for item in discussion["risks"]["items"])
    w.mcp.close()


def test_the_skill_served_over_mcp_tells_an_agent_when_to_read_them(flow):
    contents = flow["c"].mcp.result("resources/read", {"uri": "skill://commonroom/SKILL.md"})["contents"]
    text = contents[0]["text"]
    for word in ("session_discussion_summary", "session_handoff_summary", "get_session_assignment",
                 "complete_session_message", "history_lost", "truncated"):
        assert word in text, word


def test_each_summary_call_is_audited_with_metadata_only(flow):
    import sqlite3

    room, c, w = flow["room"], flow["c"], flow["w"]
    for operation, target in (("session_discussion_summary", c.id), ("session_handoff_summary", w.id)):
        assert c.call("http", operation, target)[0] == ""
    assert flow["b"].call("http", "session_handoff_summary", w.id)[0] == "permission_denied"  # refused by the adapter
    con = sqlite3.connect(str(room.document.with_name(room.document.name + ".commonroom.db")))
    try:
        rows = con.execute("SELECT operation, outcome, session_id, board_session_id, details FROM board_audit "
                           "WHERE operation LIKE 'session_%_summary' ORDER BY id DESC LIMIT 2").fetchall()
    finally:
        con.close()
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [("session_handoff_summary", "ok", c.id, w.id),
                                                      ("session_discussion_summary", "ok", c.id, c.id)]
    for row in rows:
        assert set(json.loads(row[4])) == {"truncated", "history_lost"}  # never a body
