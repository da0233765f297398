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
(:mod:`commonroom.mcp.dispatch`).
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from ..bundle import bundle
from ..operations import OPERATIONS, Operation, Table
from .registry import Context, Registry

def _document_key(version: int, content_hash: str, region: Any) -> tuple[int, str, str]:
    """The cache key of a ``document_read`` answer: the version, its hash and the region asked for."""
    return version, content_hash, repr(region)


def _document_head_key(engine: Any, arguments: dict[str, Any]) -> tuple[int, str, str] | None:
    """The key of the whole head's ``document_read`` answer, from the head alone (a region needs the handler)."""
    if arguments.get("region") is not None:
        return None
    head = engine.head()
    return _document_key(head.number, head.hash, None)


#: Tools whose encoded result may be reused while the key is the same
#: (the engine answers every call the full path takes; only the JSON encoding is cached).
CACHE_KEYS: dict[str, Callable[[Context, Any], Any]] = {
    "document_read": lambda ctx, v: _document_key(v["version"], v["content_hash"], ctx.arguments.get("region")),
}
#: ... and that key from the head alone, for the calls :mod:`commonroom.mcp.fastpath` answers from
#: the cached encoding (``engine.document(actor)`` is the head's text, number and hash: nothing else).
HEAD_KEYS: dict[str, Callable[[Any, dict[str, Any]], Any]] = {
    "document_read": _document_head_key,
}


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
                          annotations=tool_annotations(op), handler=_handler(op), cache_key=CACHE_KEYS.get(op.name),
                          authorize=_authorize(op), checked=True, head_key=HEAD_KEYS.get(op.name))  # schema/ is checked by the tests
