"""Interop: the official Python MCP SDK (``mcp`` 2.3.0, a test dependency) against a real room.

The SDK's ``Client(..., mode="2026-07-28")`` talks to ``/mcp`` of a room
serving a corpus document, with the session bearer set on its HTTP client
(``streamable_http_client(url, http_client=...)``). Every JSON-RPC message
the SDK receives is recorded off the wire (an httpx2 response hook) and
validated against the official 2026-07-28 schema by ``$defs`` name.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

mcp = pytest.importorskip("mcp", reason="the official MCP SDK is a test dependency (pip install -e .[test])")
httpx2 = pytest.importorskip("httpx2")

from mcp.client import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402

from commonroom.protocol import MCP_VERSION  # noqa: E402
from tests.mcp_schema import check as validate  # noqa: E402
from tests.roomproc import CORPUS, start_room  # noqa: E402

DOC = CORPUS / "system-design-primer-README-zh-Hans.md"
VERSION = MCP_VERSION

#: request method → the schema ``$defs`` name of its complete result.
RESULT_DEFS = {
    "server/discover": "DiscoverResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
}


class Wire:
    """Every POST /mcp exchange the SDK made: (request message, HTTP status, response message)."""

    def __init__(self) -> None:
        self.exchanges: list[tuple[dict[str, Any], int, Any]] = []

    async def on_response(self, response: "httpx2.Response") -> None:
        if response.request.method != "POST":
            return
        await response.aread()
        request = json.loads(response.request.content or b"null")
        body = response.content
        kind = response.headers.get("content-type", "")
        if kind.startswith("text/event-stream"):
            messages = [json.loads(line[5:]) for line in body.decode().splitlines() if line.startswith("data:")]
        else:
            messages = [json.loads(body)] if body.strip() else []
        for message in messages:
            self.exchanges.append((request, response.status_code, message))

    def check(self) -> int:
        """Validate every recorded message; returns how many."""
        for request, _status, message in self.exchanges:
            if "method" in message:
                validate("JSONRPCNotification", message)
            elif "error" in message:
                validate("JSONRPCErrorResponse", message)
            else:
                validate("JSONRPCResultResponse", message)
                result = message["result"]
                if result.get("resultType") == "input_required":
                    validate("InputRequiredResult", result)
                elif request.get("method") in RESULT_DEFS:
                    validate(RESULT_DEFS[request["method"]], result)
        return len(self.exchanges)

    def methods(self) -> list[str]:
        return [request.get("method") for request, _s, _m in self.exchanges]


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    r = start_room(tmp_path_factory.mktemp("sdk"), DOC)
    yield r
    r.stop()


def sdk_client(room, token: str, wire: Wire) -> Client:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    http.event_hooks["response"].append(wire.on_response)
    return Client(streamable_http_client(room.ingress + "/mcp", http_client=http), mode=VERSION)


def run(coro):
    return asyncio.run(coro)


def tool_value(result: Any) -> dict[str, Any]:
    """A commonroom tool's value: structuredContent, which the text content repeats."""
    assert not result.is_error, result
    value = result.structured_content
    assert value == json.loads(result.content[0].text)
    return value


def test_lists_calls_reads_and_gets(room):
    wire = Wire()
    reader = room.join("sdk-reader", "read,observe")

    async def scenario() -> None:
        async with sdk_client(room, reader.token, wire) as client:
            assert client.protocol_version == VERSION
            tools = await client.list_tools()
            names = {tool.name for tool in tools.tools}
            assert {"document_read", "workspace_status", "proposal_create", "versions_list"} <= names
            read_tool = next(t for t in tools.tools if t.name == "document_read")
            assert read_tool.input_schema["type"] == "object" and read_tool.output_schema

            document = tool_value(await client.call_tool("document_read", {}))
            assert document["text"] == DOC.read_text("utf-8")
            assert document["version"] == 1

            status = tool_value(await client.call_tool("workspace_status", {}))
            assert status["file_name"] == room.document.name

            resources = await client.list_resources()
            uris = {str(r.uri) for r in resources.resources}
            assert "commonroom://workspace/document" in uris
            read = await client.read_resource("commonroom://workspace/document")
            texts = [c.text for c in read.contents if hasattr(c, "text")]
            assert DOC.read_text("utf-8") in texts[0]

            templates = await client.list_resource_templates()
            assert templates.resource_templates

            prompts = await client.list_prompts()
            by_name = {p.name: p for p in prompts.prompts}
            assert {"review_proposal", "summarize_changes", "draft_section"} <= set(by_name)
            assert [a.name for a in by_name["summarize_changes"].arguments if a.required] == ["since_version"]
            got = await client.get_prompt("summarize_changes", {"since_version": "1"})
            assert got.messages and got.messages[0].role == "user"
            drafted = await client.get_prompt("draft_section", {"heading": "目的"})
            assert "目的" in json.dumps([m.model_dump(mode="json") for m in drafted.messages],
                                                ensure_ascii=False)

    run(scenario())
    assert wire.check() >= 9
    assert {"tools/list", "tools/call", "resources/read", "prompts/get"} <= set(wire.methods())


def test_permission_failure_is_an_error_result(room):
    wire = Wire()
    reader = room.join("sdk-readonly", "read")

    async def scenario() -> Any:
        async with sdk_client(room, reader.token, wire) as client:
            return await client.call_tool("proposal_create", {"base_version": 1, "text": "x\n"})

    result = run(scenario())
    assert result.is_error is True
    error = json.loads(result.content[0].text)
    assert error["error"] == "permission_denied"
    assert wire.check() == 1
    assert wire.exchanges[0][1] == 200  # a tool result, not a JSON-RPC error


def test_unknown_tool_is_a_jsonrpc_error(room):
    wire = Wire()
    reader = room.join("sdk-unknown", "read")

    async def scenario() -> None:
        async with sdk_client(room, reader.token, wire) as client:
            with pytest.raises(Exception) as caught:
                await client.call_tool("no_such_tool", {})
            assert "no_such_tool" in str(caught.value) or "Unknown tool" in str(caught.value)

    run(scenario())
    wire.check()
    assert wire.exchanges[-1][2]["error"]["code"] == -32602


def test_bad_bearer_fails_cleanly(room):
    wire = Wire()

    async def scenario() -> None:
        async with sdk_client(room, "crs_not_a_session", wire) as client:
            with pytest.raises(Exception):
                await client.list_tools()

    run(scenario())
    assert wire.exchanges and wire.exchanges[0][1] == 401
    wire.check()


def _proposal_tools_ready(room) -> bool:
    probe = room.join("sdk-probe", "read,propose")
    r = probe.post("/workspace/proposals", {"base_version": 1, "text": "probe\n", "summary": "probe",
                                            "region": {"lines": [1, 1]}})
    if r.status_code == 201:
        probe.post(f"/workspace/proposals/{r.json()['id']}/withdraw")
        return True
    return False


def test_proposals_cross_between_mcp_and_http(room):
    if not _proposal_tools_ready(room):
        pytest.skip("the proposal engine methods are not in yet (POST /workspace/proposals fails)")
    wire = Wire()
    author = room.join("sdk-author", "read,propose")
    http_author = room.join("http-author", "read,propose")
    head = author.get("/workspace/document").json()
    first_line = head["text"].splitlines(keepends=True)[0]

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with sdk_client(room, author.token, wire) as client:
            made = tool_value(await client.call_tool("proposal_create", {
                "base_version": head["version"], "region": {"lines": [1, 1]},
                "text": first_line.rstrip("\n") + " (via MCP)\n", "summary": "made through the SDK"}))
            # …and one made over HTTP, read back through MCP
            r = http_author.post("/workspace/proposals", {
                "base_version": head["version"], "region": {"lines": [1, 1]},
                "text": first_line.rstrip("\n") + " (via HTTP)\n", "summary": "made over HTTP"})
            assert r.status_code == 201, r.text
            fetched = tool_value(await client.call_tool("proposal_get", {"proposal_id": r.json()["id"]}))
            listed = tool_value(await client.call_tool("proposals_list", {"status": "open"}))
            return made, fetched, listed

    made, fetched, listed = run(scenario())
    over_http = author.get(f"/workspace/proposals/{made['id']}")
    assert over_http.status_code == 200, over_http.text
    assert over_http.json()["summary"] == "made through the SDK"
    assert over_http.json()["text"].endswith("(via MCP)\n")
    assert fetched["summary"] == "made over HTTP"
    listed_ids = {p["id"] for p in listed.get("proposals") or listed.get("items") or []}
    assert {made["id"], fetched["id"]} <= listed_ids
    wire.check()


def test_sdk_listen_gets_the_ack_and_resource_updates(room):
    """``Client.listen`` (subscriptions/listen): the honored filter, then an update event."""
    watcher = room.join("sdk-watcher", "read")
    participants = "commonroom://workspace/participants"
    # No Wire hook here: it reads each response to the end, and a listen answer stays open.
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {watcher.token}"})

    async def scenario() -> None:
        async with Client(streamable_http_client(room.ingress + "/mcp", http_client=http), mode=VERSION) as client:
            async with client.listen(resource_subscriptions=[participants, "commonroom://nope"],
                                     tools_list_changed=True) as sub:
                assert list(sub.honored.resource_subscriptions or []) == [participants]
                assert not sub.honored.tools_list_changed
                await asyncio.to_thread(room.join, "sdk-newcomer", "read")
                event = await asyncio.wait_for(sub.__anext__(), 15)
                assert participants in json.dumps(event.model_dump(mode="json") if hasattr(event, "model_dump")
                                                   else str(event), default=str)

    run(scenario())
