"""A test-only MCP plugin exercising every part of the registry API.

Loaded by ``tests/e2e/test_mcp_registry.py`` through
``COMMONROOM_MCP_PLUGINS=tests.mcp_plugin:register``; never by the product.
"""

from __future__ import annotations

import asyncio
from typing import Any

from commonroom.errors import PermissionDenied
from commonroom.mcp.jsonrpc import missing_capability
from commonroom.mcp.registry import Context, Raw, Registry, Stream


async def _slow_echo(ctx: Context) -> dict[str, Any]:
    await asyncio.sleep(0.01)
    return {"echo": ctx.arguments["text"], "session": bool(ctx.actor.session_id)}


def _needs_sampling(ctx: Context) -> Any:
    if not ctx.declared("sampling"):
        raise missing_capability({"sampling": {}})
    return {"ok": True}


def _stream(ctx: Context) -> Stream:
    async def messages():
        yield {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "one"}}
        yield None
        yield {"jsonrpc": "2.0", "id": ctx.request_id, "result": {"resultType": "complete"}}

    return Stream(messages())


def register(registry: Registry) -> None:
    """Add the plugin's entries."""
    registry.add_tool(
        "plugin_echo", description="Echo text (async handler).", handler=_slow_echo,
        input_schema={"type": "object", "required": ["text"], "additionalProperties": False,
                      "properties": {"text": {"type": "string"}}},
        output_schema={"type": "object", "properties": {"echo": {"type": "string"}}})
    registry.add_tool(
        "plugin_header", description="A tool with Mcp-Param headers.",
        handler=lambda ctx: {"region": ctx.arguments.get("region"), "count": ctx.arguments.get("count")},
        input_schema={"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"}}})
    registry.add_tool(
        "plugin_raw", description="Returns its own content blocks.", input_schema={"type": "object"},
        handler=lambda ctx: Raw({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                                 "isError": True}))
    registry.add_tool("plugin_denied", description="Always refused.", input_schema={"type": "object"},
                      handler=lambda ctx: (_ for _ in ()).throw(PermissionDenied("no", details={})))
    registry.add_tool("plugin_sampling", description="Needs the sampling capability.",
                      input_schema={"type": "object"}, handler=_needs_sampling)
    registry.add_tool("plugin_input_required", description="Asks for input (MRTR).",
                      input_schema={"type": "object"},
                      handler=lambda ctx: Raw({"resultType": "input_required", "requestState": "s1"}))
    registry.add_resource("test://static", name="static", mime_type="text/plain",
                          read=lambda ctx: "static text", cache_scope="public", ttl_ms=60000)
    registry.add_resource("test://blob", name="blob", mime_type="application/octet-stream",
                          read=lambda ctx: b"\x00\x01\x02")
    registry.add_template("test://item/{id}/data", name="item", mime_type="application/json",
                          read=lambda ctx: {"id": ctx.variables["id"], "uri": ctx.uri})
    registry.add_prompt("plugin_greet", description="Greets.", arguments=[{"name": "who", "required": True}],
                        get=lambda ctx: [{"role": "user",
                                          "content": {"type": "text", "text": f"Hello {ctx.arguments['who']}"}}])
    registry.add_completion("who", lambda ctx, value: ["Ann", "Bob", "Annika"], prompt="plugin_greet")
    registry.add_method("test/stream", _stream)
    registry.add_extension("com.example/test", {"on": True})
