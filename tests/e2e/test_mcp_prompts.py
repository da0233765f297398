"""commonroom's prompts: real room data in the messages, arguments checked.

``review_proposal``, ``summarize_changes``, ``draft_section``.
"""

from __future__ import annotations

import pytest

from tests.mcp_schema import check
from tests.mcp_wire import Mcp


@pytest.fixture(scope="module")
def room_with_history(shared_room):
    alice = shared_room.join("alice", "read,propose,approve,write")
    mcp = Mcp(shared_room.ingress, alice.token)
    proposal = mcp.call_tool("proposal_create", {
        "base_version": 1, "region": {"heading": ["Design", "Storage"]},
        "text": "### Storage\n\nThe sidecar keeps versions, events and leases.\n\n",
        "summary": "storage details"})["structuredContent"]
    yield mcp, proposal
    mcp.close()


def get(mcp: Mcp, name: str, arguments: dict) -> dict:
    r = mcp.post("prompts/get", {"name": name, "arguments": arguments})
    check("GetPromptResultResponse", r.json())
    result = r.json()["result"]
    check("GetPromptResult", result)
    assert result["resultType"] == "complete"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "commonroom"
    return result


def test_review_proposal(room_with_history):
    mcp, proposal = room_with_history
    result = get(mcp, "review_proposal", {"proposal_id": proposal["id"]})
    [message] = result["messages"]
    text = message["content"]["text"]
    assert message["role"] == "user"
    assert proposal["id"] in text and "storage details" in text
    assert "The sidecar keeps versions, events and leases." in text
    assert "The markdown file is the artifact" in text  # the base text it replaces
    assert "proposal_approve" in text


def test_summarize_changes(room_with_history):
    mcp, proposal = room_with_history
    approved = mcp.call_tool("proposal_approve", {"proposal_id": proposal["id"]})["structuredContent"]
    text = get(mcp, "summarize_changes", {"since_version": "1"})["messages"][0]["content"]["text"]
    assert f"v{approved['version']['number']} by alice" in text and "storage details" in text
    assert "+The sidecar keeps versions, events and leases." in text


def test_draft_section_existing_and_new(room_with_history):
    mcp, _ = room_with_history
    result = get(mcp, "draft_section", {"heading": "Design > Transport", "instructions": "mention MCP"})
    embedded, ask = result["messages"]
    assert embedded["content"]["type"] == "resource"
    assert embedded["content"]["resource"]["uri"] == "commonroom://workspace/document"
    assert "# Release plan" in embedded["content"]["resource"]["text"]
    text = ask["content"]["text"]
    assert "Participants dial the session ingress" in text and "mention MCP" in text and "lease_acquire" in text
    text = get(mcp, "draft_section", {"heading": "Security"})["messages"][1]["content"]["text"]
    assert "does not exist yet" in text


@pytest.mark.parametrize("name,arguments,code", [
    ("review_proposal", {}, -32602),
    ("review_proposal", {"proposal_id": "p_nope"}, -32602),
    ("summarize_changes", {"since_version": "abc"}, -32602),
    ("nope", {}, -32602),
])
def test_prompt_errors(room_with_history, name, arguments, code):
    mcp, _ = room_with_history
    r = mcp.post("prompts/get", {"name": name, "arguments": arguments})
    assert r.status_code == 200
    check("JSONRPCErrorResponse", r.json())
    assert r.json()["error"]["code"] == code


def test_prompt_needs_read(shared_room):
    mcp = Mcp(shared_room.ingress, shared_room.join("no-read", "propose").token)
    r = mcp.post("prompts/get", {"name": "summarize_changes", "arguments": {"since_version": "1"}})
    assert r.status_code == 200 and r.json()["error"]["code"] == -31000
    assert r.json()["error"]["data"]["error"] == "permission_denied"
    mcp.close()
