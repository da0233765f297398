"""The seed's error codes an MCP client can meet, each provoked through /mcp.

Tool failures are ``isError`` results carrying the HTTP error object;
refusals before any tool runs (an expired session, the rate limit) are
JSON-RPC errors whose ``data`` is that same object, with the HTTP status the
seed gives the code. The other codes (invitations, join) have no MCP route.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from commonroom import schemas
from tests.mcp_schema import check
from tests.mcp_wire import Mcp
from tests.roomproc import start_room

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample.md"


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    r = start_room(tmp_path_factory.mktemp("mcp-codes"), SAMPLE)
    yield r
    r.stop()


def refused_by_tool(mcp: Mcp, tool: str, arguments: dict) -> dict:
    result = mcp.call_tool(tool, arguments)
    check("CallToolResult", result)
    assert result["isError"] is True, result
    body = result["structuredContent"]
    assert schemas.errors_of("error", body) == []
    return body


def test_proposal_conflict_through_a_tool(room):
    author = room.join("author", "read,propose")
    approver = room.join("approver", "read,propose,approve")
    a, b = Mcp(room.ingress, author.token), Mcp(room.ingress, approver.token)
    try:
        mine = a.call_tool("proposal_create", {"base_version": 1, "region": {"heading": ["Goals"]},
                                               "text": "## Goals\n\n- mine\n\n", "summary": "mine"})
        theirs = b.call_tool("proposal_create", {"base_version": 1, "region": {"heading": ["Goals"]},
                                                 "text": "## Goals\n\n- theirs\n\n", "summary": "theirs"})
        assert b.call_tool("proposal_approve", {"proposal_id": theirs["structuredContent"]["id"]})["isError"] is False
        body = refused_by_tool(b, "proposal_approve", {"proposal_id": mine["structuredContent"]["id"]})
        assert body["error"] == "proposal_conflict"
        assert body["proposal_id"] == mine["structuredContent"]["id"] and body["details"]["hunks"]
    finally:
        a.close()
        b.close()


def test_session_expired_is_a_401_json_rpc_error(room):
    short = room.join("short", "read", session_ttl_seconds=1)
    mcp = Mcp(room.ingress, short.token)
    try:
        assert mcp.call_tool("workspace_status")["isError"] is False
        time.sleep(1.3)
        response = mcp.post("tools/call", {"name": "workspace_status", "arguments": {}})
        assert response.status_code == 401
        error = response.json()["error"]
        check("JSONRPCErrorResponse", response.json())
        assert error["data"]["error"] == "session_expired"
    finally:
        mcp.close()


def test_the_601st_request_in_a_minute_is_429_with_retry_after(room):
    busy = room.join("busy", "read")
    mcp = Mcp(room.ingress, busy.token)
    try:
        statuses = [mcp.post("tools/call", {"name": "workspace_status", "arguments": {}}).status_code
                    for _ in range(600)]
        assert set(statuses) == {200}
        response = mcp.post("tools/call", {"name": "workspace_status", "arguments": {}})
        assert response.status_code == 429
        assert int(response.headers["Retry-After"]) >= 1
        data = response.json()["error"]["data"]
        assert data["error"] == "limit_exceeded" and data["retry_after_seconds"] >= 1
    finally:
        mcp.close()
