"""One declaration reaches every place.

A test-only table gets one extra operation; the HTTP routes of both
listeners, the MCP tools (input and output schemas), both OpenAPI
documents, the docs tables and the parity cases all have it, with no
other edit. The room's own apps are driven in process (httpx over ASGI).
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import httpx
import pytest

from commonroom.http.openapi import build
from commonroom.mcp import build_registry
from commonroom.mcp.resources import Subscriptions
from commonroom.operations import INGRESS, OPERATIONS, OWNER, Http, Mcp, Operation
from commonroom.operations.docs import BLOCKS, http_table, tool_table
from tests.parity import both, http_request, sample_input

ROOT = Path(__file__).resolve().parents[2]

PROBE = Operation(
    "probe_version", "A test-only probe: one version", "version", "editing#VersionGetInput",
    "editing#VersionInfo", "document", args=("number",), capability="read", errors=("version_not_found",),
    http=Http("GET", "/workspace/probe/{number}"),
    mcp=Mcp("Probe", "A test-only probe. Needs read.", headers={"number": "Number"}))


@pytest.fixture
def table():
    t = OPERATIONS.copy()
    t.add(PROBE)
    assert "probe_version" not in OPERATIONS
    return t


def test_the_declaration_is_in_every_derived_place(table):
    # MCP: a tool with the input schema (and its x-mcp-header hint) and the answer-or-error output
    tool = build_registry(Subscriptions(), plugins="", table=table).tools["probe_version"]
    assert tool.input_schema["properties"]["number"]["x-mcp-header"] == "Number"
    assert tool.input_schema["required"] == ["number"]
    assert len(tool.output_schema["anyOf"]) == 2 and tool.annotations["readOnlyHint"] is True
    # OpenAPI: both listeners (the binding says both)
    for listener in (INGRESS, OWNER):
        entry = build(table, listener)["paths"]["/workspace/probe/{number}"]["get"]
        assert entry["operationId"] == "probe_version" and set(entry["responses"]) >= {"200", "400", "403", "404"}
    # docs tables
    assert "`probe_version`" in http_table(table) and "`probe_version`" in tool_table(table)
    assert set(BLOCKS) == {"protocol.md", "mcp.md"}
    # parity cases
    assert PROBE in both(table)
    assert http_request(PROBE, sample_input(PROBE)) == ("GET", "/workspace/probe/1", {"params": {}})


def test_the_declaration_is_served_by_both_apps(table, tmp_path):
    from commonroom.room import build_room

    doc = tmp_path / "doc.md"
    shutil.copyfile(ROOT / "examples" / "sample.md", doc)
    engine, owner, ingress, hooks = build_room(doc, "0" * 64, table=table)
    engine.set_ingress({"transport": "loopback", "host": "127.0.0.1", "port": 9})

    async def drive():
        token = engine.join(engine.invite("probe", ["read"])["token"])["token"]
        auth = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=ingress), base_url="http://commonroom") as c:
            r = await c.get("/workspace/probe/1", headers=auth)
            assert r.status_code == 200 and r.json()["number"] == 1
            r = await c.get("/workspace/probe/9", headers=auth)
            assert r.status_code == 404 and r.json()["error"] == "version_not_found"
            r = await c.get("/workspace/probe/x", headers=auth)
            assert r.status_code == 400 and r.json()["details"]["parameter"] == "number"
            r = await c.get("/openapi.json")
            assert "/workspace/probe/{number}" in r.json()["paths"]
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=owner), base_url="http://127.0.0.1") as c:
            r = await c.get("/workspace/probe/1")
            assert r.status_code == 401

    try:
        asyncio.run(drive())
    finally:
        for hook in hooks:
            result = hook()
            if asyncio.iscoroutine(result):
                asyncio.run(result)


def test_a_streaming_operation_is_served_by_the_stream_the_room_names(table):
    from commonroom.http.operations import operation_routes, stream_routes

    observe = OPERATIONS["workspace_observe"]
    assert observe.streams and observe.mcp is None
    assert observe.http.path not in operation_routes(table, INGRESS, None)  # type: ignore[arg-type]
    resource = object()
    assert stream_routes(table, INGRESS, {"workspace_observe": resource}) == {observe.http.path: resource}
    with pytest.raises(ValueError, match="workspace_observe has no stream"):
        stream_routes(table, OWNER, {})
    entry = build(table, INGRESS)["paths"][observe.http.path]["get"]
    assert "text/event-stream" in entry["responses"]["200"]["content"]
    assert {p["name"] for p in entry["parameters"]} == {"since_event_id", "Last-Event-ID"}


def test_a_duplicate_name_or_route_is_refused(table):
    with pytest.raises(ValueError, match="declared already"):
        table.add(PROBE)
    with pytest.raises(ValueError, match="probe_version already"):
        table.add(Operation("other", "x", "version", "editing#VersionGetInput", "editing#VersionInfo", "document",
                            http=Http("GET", "/workspace/probe/{number}")))
    with pytest.raises(ValueError, match="unknown error codes"):
        Operation("bad", "x", "version", "common#NoArguments", "room#Document", "document", errors=("nope",))


def test_docs_follow_the_table():
    from codegen.docs import stale

    assert stale() == [], "run python -m codegen.docs"
