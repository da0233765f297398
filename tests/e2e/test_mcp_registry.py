"""The registry API and the ``COMMONROOM_MCP_PLUGINS`` hook, against a real room.

A room started with ``tests.mcp_plugin:register`` serves the plugin's
tools, resources, template, prompt, methods and capabilities beside
commonroom's own; without the variable none of them exist.
"""

from __future__ import annotations

import json
import os

import pytest

from commonroom.mcp.registry import Registry
from commonroom.protocol import META_CAPABILITIES, SSE_EVENT_MESSAGE, SSE_HEARTBEAT
from commonroom.sse_client import Frame, parse
from tests.conftest import SAMPLE
from tests.mcp_schema import check
from tests.mcp_wire import META, Mcp, encode
from tests.roomproc import ROOT, start_room


@pytest.fixture(scope="module")
def mcp(tmp_path_factory):
    saved = dict(os.environ)
    os.environ["COMMONROOM_MCP_PLUGINS"] = "tests.mcp_plugin:register"
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), saved.get("PYTHONPATH")]))
    try:
        room = start_room(tmp_path_factory.mktemp("plugin-room"), SAMPLE)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    caller = Mcp(room.ingress, room.join("plugin-user", "read").token)
    yield caller
    caller.close()
    room.stop()


def test_plugin_entries_listed_after_commonrooms(mcp):
    tools = [t["name"] for t in mcp.result("tools/list")["tools"]]
    assert tools[0] == "workspace_status" and tools[-6:] == [
        "plugin_echo", "plugin_header", "plugin_raw", "plugin_denied", "plugin_sampling", "plugin_input_required"]
    assert {"test://static", "test://blob"} <= {r["uri"] for r in mcp.result("resources/list")["resources"]}
    templates = [t["uriTemplate"] for t in mcp.result("resources/templates/list")["resourceTemplates"]]
    assert "test://item/{id}/data" in templates
    assert "plugin_greet" in [p["name"] for p in mcp.result("prompts/list")["prompts"]]
    discover = mcp.result("server/discover")
    assert discover["capabilities"]["completions"] == {}
    assert discover["capabilities"]["extensions"]["com.example/test"] == {"on": True}


def test_async_tool_and_argument_validation(mcp):
    result = mcp.call_tool("plugin_echo", {"text": "hi"})
    check("CallToolResult", result)
    assert result["structuredContent"] == {"echo": "hi", "session": True}
    bad = mcp.call_tool("plugin_echo", {"text": 5})
    assert bad["isError"] is True and bad["structuredContent"]["error"] == "invalid_request"


def test_raw_and_error_results(mcp):
    raw = mcp.call_tool("plugin_raw")
    check("CallToolResult", raw)
    assert [c["text"] for c in raw["content"]] == ["a", "b"] and raw["isError"] is True
    denied = mcp.call_tool("plugin_denied")
    assert denied["isError"] is True and json.loads(denied["content"][0]["text"])["error"] == "permission_denied"
    pending = mcp.call_tool("plugin_input_required")
    check("InputRequiredResult", pending)
    assert pending["resultType"] == "input_required" and pending["requestState"] == "s1"


def test_missing_client_capability(mcp):
    r = mcp.post("tools/call", {"name": "plugin_sampling", "arguments": {}}, id=401)
    assert r.status_code == 400
    check("MissingRequiredClientCapabilityError", r.json())
    assert r.json()["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}
    meta = {**META, META_CAPABILITIES: {"sampling": {}}}
    r = mcp.post("tools/call", {"name": "plugin_sampling", "arguments": {}}, meta=meta)
    assert r.json()["result"]["structuredContent"] == {"ok": True}


def test_mcp_param_headers(mcp):
    params = {"name": "plugin_header", "arguments": {"region": "Ünïcode", "count": 7}}
    good = {"Mcp-Param-Region": encode("Ünïcode"), "Mcp-Param-Count": "007"}
    assert mcp.post("tools/call", params, headers=good).status_code == 200
    for bad in ({"Mcp-Param-Region": encode("other"), "Mcp-Param-Count": "7"},
                {"Mcp-Param-Count": "7"},
                {"Mcp-Param-Region": encode("Ünïcode"), "Mcp-Param-Count": "8"}):
        r = mcp.post("tools/call", params, headers=bad)
        assert r.status_code == 400 and r.json()["error"]["code"] == -32020, bad
    # A null or absent argument expects no header.
    r = mcp.post("tools/call", {"name": "plugin_header", "arguments": {"region": None}})
    assert r.status_code == 200


def test_resources_and_template(mcp):
    static = mcp.result("resources/read", {"uri": "test://static"})
    check("ReadResourceResult", static)
    assert static["contents"] == [{"uri": "test://static", "text": "static text", "mimeType": "text/plain"}]
    assert (static["cacheScope"], static["ttlMs"]) == ("public", 60000)
    blob = mcp.result("resources/read", {"uri": "test://blob"})
    check("ReadResourceResult", blob)
    assert blob["contents"][0]["blob"] == "AAEC"
    item = mcp.result("resources/read", {"uri": "test://item/42/data"})
    assert json.loads(item["contents"][0]["text"]) == {"id": "42", "uri": "test://item/42/data"}
    assert item["contents"][0]["mimeType"] == "application/json"


def test_prompt_and_methods(mcp):
    got = mcp.result("prompts/get", {"name": "plugin_greet", "arguments": {"who": "Ann"}})
    check("GetPromptResult", got)
    assert got["messages"][0]["content"]["text"] == "Hello Ann"
    r = mcp.post("prompts/get", {"name": "plugin_greet", "arguments": {}})
    assert r.status_code == 200 and r.json()["error"]["code"] == -32602
    completion = mcp.result("completion/complete", {"ref": {"type": "ref/prompt", "name": "plugin_greet"},
                                                    "argument": {"name": "who", "value": "an"}})
    check("CompleteResult", completion)
    assert completion["completion"] == {"values": ["Ann", "Annika"], "total": 2, "hasMore": False}


def test_stream_result_is_an_event_stream(mcp):
    r = mcp.post("test/stream")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    frames = parse(r.content)
    data = [frame.json() for frame in frames if frame.is_event]
    assert [m.get("method") for m in data] == ["notifications/message", None]
    assert {frame.type for frame in frames if frame.is_event} == {SSE_EVENT_MESSAGE}
    assert Frame(comments=[SSE_HEARTBEAT]) in frames


def test_registry_refuses_bad_entries():
    registry = Registry()
    registry.add_tool("t", description="d", input_schema={"type": "object"}, handler=lambda c: 1)
    with pytest.raises(ValueError):
        registry.add_tool("t", description="d", input_schema={"type": "object"}, handler=lambda c: 1)
    with pytest.raises(ValueError):
        registry.add_tool("u", description="d", input_schema={"type": "string"}, handler=lambda c: 1)
    with pytest.raises(ValueError):
        registry.add_resource("x://", name="x", mime_type=None, read=lambda c: "", cache_scope="shared")
    with pytest.raises(RuntimeError):
        registry.load_plugins("no_colon_here")
    assert registry.load_plugins("") == []


def test_failing_plugin_stops_the_room(tmp_path):
    saved = dict(os.environ)
    os.environ["COMMONROOM_MCP_PLUGINS"] = "no_such_module_here:register"
    try:
        with pytest.raises(RuntimeError, match="no_such_module_here"):
            start_room(tmp_path, SAMPLE, wait=20)
    finally:
        os.environ.clear()
        os.environ.update(saved)
