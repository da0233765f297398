"""commonroom's MCP tools, derived from the operation table (:mod:`commonroom.operations`).

Every operation with an :class:`~commonroom.operations.Mcp` binding is one
tool: its name is the operation's name, its ``inputSchema`` the
operation's input schema (the same one HTTP validates, bundled
self-contained by :mod:`commonroom.bundle`, with the ``x-mcp-header``
hints the binding names), its ``outputSchema`` the answer schema or the
error object, and its handler runs the same engine method through the
room's :class:`~commonroom.operations.runner.Runner` (writes on the one
writer thread). A refusal by the engine (``CommonroomError``:
permission_denied, stale_version, lease_conflict…) becomes an
``isError: true`` result whose text is the HTTP error object
(:mod:`commonroom.mcp.dispatch`). A tool declared ``Mcp(cache="head")``
keeps its encoded result per head version and arguments (``cache_key``,
``head_key``).
"""

from __future__ import annotations

import inspect
import json
from typing import Any, Callable

from ..bundle import bundle
from ..operations import OPERATIONS, Operation, Table
from .registry import Context, Registry

def _arguments_key(arguments: dict[str, Any]) -> str:
    """The arguments given (those not null), as canonical JSON: part of a cached result's key."""
    return json.dumps({name: value for name, value in arguments.items() if value is not None},
                      sort_keys=True, separators=(",", ":"))


#: The key of a call with no argument given (the head's whole answer).
NO_ARGUMENTS = _arguments_key({})


def _cache_key(ctx: Context, value: Any) -> tuple[int, str, str]:
    """The key of a ``Mcp(cache="head")`` result: its version, its content hash and the arguments."""
    return value["version"], value["content_hash"], _arguments_key(ctx.arguments)


def _head_key(engine: Any, arguments: dict[str, Any]) -> tuple[int, str, str] | None:
    """The same key from the head alone, for a call with no argument given (else None: the handler answers).

    The room's front (:mod:`commonroom.front.toolcalls`) answers such a call from the cached encoding.
    """
    if any(value is not None for value in arguments.values()):
        return None
    head = engine.head()
    return head.number, head.hash, NO_ARGUMENTS


def tool_annotations(op: Operation) -> dict[str, Any]:
    """MCP ``ToolAnnotations`` of ``op`` (hints only)."""
    assert op.mcp is not None
    out: dict[str, Any] = {"title": op.mcp.title, "readOnlyHint": op.read_only, "openWorldHint": False}
    if not op.read_only:
        out["destructiveHint"] = op.mcp.destructive
        out["idempotentHint"] = op.mcp.idempotent
    return out


def input_schema(op: Operation) -> dict[str, Any]:
    """The tool's self-contained ``inputSchema`` with its ``x-mcp-header`` hints."""
    assert op.mcp is not None
    schema = bundle(op.input)
    for prop, header in op.mcp.headers.items():
        schema["properties"][prop]["x-mcp-header"] = header
    return schema


def output_schema(op: Operation) -> dict[str, Any]:
    """The tool's ``outputSchema``: the answer, or the error object of an ``isError`` result."""
    return {"type": "object", "anyOf": [bundle(op.answer), bundle("error")]}


def _handler(op: Operation) -> Callable[[Context], Any]:
    async def handler(ctx: Context) -> Any:
        if ctx.runner is None:
            result = op.bind(ctx.engine, ctx.actor, ctx.arguments)
            return await result if inspect.isawaitable(result) else result
        return await ctx.runner.run(op, ctx.actor, ctx.arguments)

    handler.__name__ = op.name
    return handler


def _authorize(op: Operation) -> Callable[[Context], None]:
    def authorize(ctx: Context) -> None:
        op.authorize(ctx.actor)

    return authorize


def register_tools(registry: Registry, table: Table = OPERATIONS) -> None:
    """Add a tool for every operation of ``table`` with an MCP binding."""
    for op in table.tools():
        assert op.mcp is not None
        registry.add_tool(op.name, title=op.mcp.title, description=op.mcp.description,
                          input_schema=input_schema(op), output_schema=output_schema(op),
                          annotations=tool_annotations(op), handler=_handler(op), cache_key=_cache_key if op.mcp.cache == "head" else None,
                          authorize=_authorize(op), checked=True, head_key=_head_key if op.mcp.cache == "head" else None,
                          result_bytes=op.mcp.result_bytes)  # schema/ is checked by the tests
