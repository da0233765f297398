"""commonroom's MCP tools against a real room: one engine call each, like HTTP.

Every tool works and its structured result validates against
its own outputSchema and the official CallToolResult; a permission failure
is an HTTP 200 result with ``isError: true`` whose text is the same error
object the HTTP API returns; work done over MCP is visible over HTTP and
the other way round.
"""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from tests.mcp_schema import check
from tests.mcp_wire import Mcp

ALL = "read,observe,propose,lease,approve,write"


@pytest.fixture(scope="module")
def people(shared_room):
    alice = shared_room.join("alice", ALL)
    bob = shared_room.join("bob", "read")
    carol = shared_room.join("carol", "read,propose,lease")
    callers = {n: Mcp(shared_room.ingress, c.token) for n, c in (("alice", alice), ("bob", bob), ("carol", carol))}
    http = {"alice": alice, "bob": bob, "carol": carol}
    schemas = {t["name"]: t for t in callers["alice"].result("tools/list")["tools"]}
    yield callers, http, schemas
    for caller in callers.values():
        caller.close()


def call(people, who: str, tool: str, arguments: dict | None = None) -> dict:
    """tools/call, checked against the official schema and the tool's outputSchema."""
    callers, _, schemas = people
    response = callers[who].post("tools/call", {"name": tool, "arguments": arguments or {}})
    assert response.status_code == 200, response.text
    check("CallToolResultResponse", response.json())
    result = response.json()["result"]
    check("CallToolResult", result)
    assert result["resultType"] == "complete"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "commonroom"
    assert result["content"][0]["type"] == "text"
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    errors = list(Draft202012Validator(schemas[tool]["outputSchema"]).iter_errors(result["structuredContent"]))
    assert not errors, [e.message for e in errors]
    return result


def ok(people, who, tool, arguments=None) -> dict:
    result = call(people, who, tool, arguments)
    assert result["isError"] is False, result["structuredContent"]
    return result["structuredContent"]


def refused(people, who, tool, arguments=None) -> dict:
    result = call(people, who, tool, arguments)
    assert result["isError"] is True
    return result["structuredContent"]


def test_read_tools(people, shared_room):
    status = ok(people, "bob", "workspace_status")
    assert status["file_name"] == "doc.md" and status["protocol"] == "commonroom"
    doc = ok(people, "bob", "document_read")
    assert doc["text"] == shared_room.document.read_text()
    region = ok(people, "bob", "document_read", {"region": {"heading": ["Design", "Storage"]}})
    assert region["text"].startswith("### Storage") and region["lines"][0] == 13
    lines = ok(people, "bob", "document_read", {"region": {"lines": [1, 1]}})
    assert lines["text"] == "# Release plan\n"
    names = [p["name"] for p in ok(people, "bob", "participants_list", {"limit": 200})["participants"]]
    assert {"alice", "bob", "carol"} <= set(names)
    assert ok(people, "bob", "versions_list")["versions"][-1]["number"] == 1
    assert ok(people, "bob", "version_get", {"number": 1})["text"]
    assert ok(people, "bob", "leases_list") == {"leases": []} or "leases" in ok(people, "bob", "leases_list")
    history = ok(people, "bob", "workspace_history", {"limit": 5})
    assert history["events"] and history["events"][0]["id"] >= 1


def test_same_as_http(people):
    _, http, _ = people
    assert ok(people, "bob", "workspace_status") == http["bob"].get("/workspace/room").json()
    assert ok(people, "bob", "document_read") == http["bob"].get("/workspace/document").json()
    assert ok(people, "bob", "versions_list") == http["bob"].get("/workspace/versions").json()


@pytest.mark.parametrize("tool,arguments,http_call", [
    ("proposal_create", {"base_version": 1, "text": "x\n", "summary": "s"},
     ("POST", "/workspace/proposals", {"base_version": 1, "text": "x\n", "summary": "s"})),
    ("document_write", {"expected_version": 1, "text": "x\n"},
     ("PUT", "/workspace/document", {"expected_version": 1, "text": "x\n"})),
    ("lease_acquire", {"region": None}, ("POST", "/workspace/leases", {"region": None})),
    ("proposal_approve", {"proposal_id": "p_nope"}, ("POST", "/workspace/proposals/p_nope/approve", None)),
])
def test_permission_failure_is_error_result_with_http_object(people, tool, arguments, http_call):
    _, http, _ = people
    error = refused(people, "bob", tool, arguments)
    method, path, body = http_call
    response = http["bob"].request(method, path, json=body)
    assert response.status_code == 403
    assert error == response.json()
    assert error["error"] == "permission_denied"


def test_invalid_arguments_are_error_results(people):
    error = refused(people, "alice", "version_get", {"number": "one"})
    assert error["error"] == "invalid_request" and error["details"]["pointer"] == "/number"
    error = refused(people, "alice", "document_read", {"extra": 1})
    assert error["error"] == "invalid_request"
    error = refused(people, "alice", "version_get", {})
    assert error["error"] == "invalid_request"


def test_room_errors_are_error_results(people):
    assert refused(people, "bob", "version_get", {"number": 999})["error"] == "version_not_found"
    assert refused(people, "bob", "proposal_get", {"proposal_id": "p_nope"})["error"] == "proposal_not_found"
    error = refused(people, "bob", "document_read", {"region": {"heading": ["No such heading"]}})
    assert error["error"] == "invalid_region" and error["region"] == {"heading": ["No such heading"]}


def test_unknown_tool_is_invalid_params_200(people):
    callers, _, _ = people
    r = callers["bob"].post("tools/call", {"name": "nope", "arguments": {}})
    assert r.status_code == 200
    check("JSONRPCErrorResponse", r.json())
    assert r.json()["error"]["code"] == -32602


def test_arguments_must_be_an_object(people):
    callers, _, _ = people
    r = callers["bob"].post("tools/call", {"name": "workspace_status", "arguments": [1]})
    assert r.status_code == 200 and r.json()["error"]["code"] == -32602


def test_lease_lifecycle(people):
    lease = ok(people, "carol", "lease_acquire", {"region": {"heading": ["Open questions"]}, "ttl_seconds": 60})
    assert lease["status"] == "active" and lease["participant"] == "carol"
    listed = ok(people, "bob", "leases_list")["leases"]
    assert lease["id"] in [item["id"] for item in listed]
    conflict = refused(people, "alice", "lease_acquire", {"region": {"heading": ["Open questions"]}})
    assert conflict["error"] == "lease_conflict" and conflict["lease_id"] == lease["id"]
    renewed = ok(people, "carol", "lease_renew", {"lease_id": lease["id"], "ttl_seconds": 120})
    assert renewed["expires_at"] >= lease["expires_at"]
    released = ok(people, "carol", "lease_release", {"lease_id": lease["id"]})
    assert released["status"] == "released"
    assert lease["id"] not in [item["id"] for item in ok(people, "bob", "leases_list")["leases"]]
    for tool in ("lease_release", "lease_renew"):  # no longer active: 409 with its id and status
        gone = refused(people, "carol", tool, {"lease_id": lease["id"]})
        assert gone["error"] == "lease_conflict" and gone["lease_id"] == lease["id"]
        assert gone["details"]["status"] == "released"


def test_proposal_flow_visible_both_ways(people):
    _, http, _ = people
    head = ok(people, "carol", "document_read")["version"]
    proposal = ok(people, "carol", "proposal_create", {
        "base_version": head, "region": {"heading": ["Design", "Transport"]},
        "text": "### Transport\n\nParticipants dial the session ingress; agents use /mcp.\n", "summary": "mention MCP"})
    assert proposal["status"] == "open" and proposal["author"] == "carol"
    assert http["bob"].get(f"/workspace/proposals/{proposal['id']}").json() == proposal
    assert ok(people, "bob", "proposal_get", {"proposal_id": proposal["id"]}) == proposal
    assert proposal["id"] in [p["id"] for p in ok(people, "bob", "proposals_list", {"status": "open"})["proposals"]]

    over_http = http["carol"].post("/workspace/proposals", {
        "base_version": head, "region": {"heading": ["Goals"]},
        "text": "## Goals\n\n- Ship it.\n\n", "summary": "shorter goals"}).json()
    assert ok(people, "bob", "proposal_get", {"proposal_id": over_http["id"]})["summary"] == "shorter goals"
    withdrawn = ok(people, "carol", "proposal_withdraw", {"proposal_id": over_http["id"]})
    assert withdrawn["status"] == "withdrawn"

    approved = ok(people, "alice", "proposal_approve", {"proposal_id": proposal["id"]})
    assert approved["proposal"]["status"] == "approved"
    new_version = approved["version"]["number"]
    assert new_version == head + 1
    assert "agents use /mcp" in ok(people, "bob", "document_read")["text"]
    assert ok(people, "bob", "version_get", {"number": new_version})["proposal_id"] == proposal["id"]
    diff = ok(people, "bob", "versions_diff", {"from_version": head, "to_version": new_version})
    assert "+Participants dial the session ingress; agents use /mcp." in diff["diff"]
    assert ok(people, "bob", "versions_diff", {"from_version": head})["to_version"] == new_version


def test_reject(people):
    head = ok(people, "carol", "document_read")["version"]
    proposal = ok(people, "carol", "proposal_create", {
        "base_version": head, "region": {"lines": [1, 1]}, "text": "# Plan\n", "summary": "rename"})
    rejected = ok(people, "alice", "proposal_reject", {"proposal_id": proposal["id"], "reason": "keep the title"})
    assert rejected["status"] == "rejected" and rejected["reason"] == "keep the title"
    again = refused(people, "alice", "proposal_approve", {"proposal_id": proposal["id"]})
    assert again["error"] == "proposal_conflict"  # no longer open: 409 with its id and status
    assert again["proposal_id"] == proposal["id"] and again["details"]["status"] == "rejected"


def test_write_and_stale_version(people):
    _, http, _ = people
    head = ok(people, "alice", "document_read")["version"]
    version = ok(people, "alice", "document_write", {
        "expected_version": head, "region": {"heading": ["Open questions"]},
        "text": "## Open questions\n\n1. Who approves proposals on weekends?\n2. How long should invitations last? A day.\n",
        "summary": "answer"})
    assert version["number"] == head + 1 and version["source"] == "write"
    stale = refused(people, "alice", "document_write", {"expected_version": head, "text": "gone\n"})
    assert stale["error"] == "stale_version"
    assert stale["current_version"] == head + 1 and stale["expected_version"] == head
    same = http["alice"].request("PUT", "/workspace/document", json={"expected_version": head, "text": "gone\n"})
    assert same.status_code == 409 and same.json() == stale


def test_stale_proposal_carries_recovery_fields(people):
    base = ok(people, "alice", "document_read")["version"]
    ok(people, "alice", "document_write", {"expected_version": base, "region": {"lines": [3, 3]},
                                            "text": "This is the sample document of a commonroom.\n"})
    stale = call(people, "carol", "proposal_create", {
        "base_version": base, "region": {"lines": [3, 3]}, "text": "Something else entirely.\n"})
    body = stale["structuredContent"]
    assert stale["isError"] is True
    assert body["error"] == "stale_version" and body["base_version"] == base
    assert body["current_version"] == base + 1 and body["diff"] and body["changes"]


def test_a_region_write_rebases_and_a_write_of_nothing_commits_nothing(people):
    """``document_write`` on an older version whose region nobody touched since commits, rebased."""
    base = ok(people, "alice", "document_read")["version"]
    other = people[1]["alice"].request("PUT", "/workspace/document", json={  # another change, over HTTP
        "expected_version": base, "region": {"lines": [3, 3]}, "text": "A sample document, edited by bob.\n"})
    assert other.status_code == 200, other.text
    rebased = ok(people, "alice", "document_write", {
        "expected_version": base, "region": {"heading": ["Open questions"]},
        "text": "## Open questions\n\n1. Who approves on weekends? Alice.\n2. How long should invitations last?\n"})
    assert rebased["committed"] is True and rebased["rebased_from"] == base and rebased["number"] == base + 2
    text = ok(people, "alice", "document_read")["text"]
    assert "edited by bob" in text and "Alice." in text
    same = ok(people, "alice", "document_write", {"expected_version": base + 2, "region": {"lines": [3, 3]},
                                                  "text": "A sample document, edited by bob.\n"})
    assert same["committed"] is False and same["number"] == base + 2
    stale = refused(people, "alice", "document_write", {"expected_version": base, "region": {"lines": [3, 3]},
                                                        "text": "Mine instead.\n"})
    assert stale["error"] == "stale_version" and "edited by bob" in stale["diff"]
