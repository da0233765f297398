"""The docs tables derived from the operation table.

``python -m codegen`` writes :func:`http_table` into ``docs/protocol.md``
and :func:`tool_table` into ``docs/mcp.md`` between the markers
``<!-- operations:http -->`` / ``<!-- operations:tools -->`` and
``<!-- /operations -->``; a test fails when the docs fall behind the table.
"""

from __future__ import annotations

import re

from ..bundle import bundle
from ..errors import STATUS
from .spec import INGRESS, OWNER, Operation, Table

END = "<!-- /operations -->"


def _listeners(op: Operation) -> str:
    assert op.http is not None
    names = {INGRESS: "ingress", OWNER: "owner"}
    return ", ".join(names[name] for name in op.http.listeners)


def _capability(op: Operation) -> str:
    if op.http is not None and op.http.public:
        return "none (public)"
    if OWNER in (op.http.listeners if op.http else ()) and INGRESS not in op.http.listeners:  # type: ignore[union-attr]
        return "owner token"
    return op.capability or "any session"


def _input(op: Operation) -> str:
    assert op.http is not None
    props = list(bundle(op.input).get("properties", {}))
    in_path = {op.http.prop(w) for w in op.http.path_params()}
    rest = [op.http.wire(p) for p in props if p not in in_path]
    if not rest:
        return ""
    if op.http.has_body:
        return f"`{op.input}`"
    headers = "".join(f"`{h}` or " for h in op.http.headers)
    return headers + "`?" + "&".join(rest) + "`"


def _errors(op: Operation) -> str:
    return ", ".join(f"`{code}` {STATUS[code]}" for code in op.errors)


def http_table(table: Table) -> str:
    """The HTTP routes: method, path, operation, engine method, capability, input, answer, errors of its own."""
    rows = ["| method | path | operation | engine method | capability | input | answer | its own errors | listeners |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for op in table:
        if op.http is None:
            continue
        status = f"{op.http.status} " if op.http.status != 200 else ""
        answer = f"`text/event-stream` of `{op.answer}`" if op.streams else f"{status}`{op.answer}`"
        rows.append(f"| {op.http.method} | `{op.http.path}` | `{op.name}` | `{op.method}` | {_capability(op)} | {_input(op)} "
                    f"| {answer} | {_errors(op)} | {_listeners(op)} |")
    return "\n".join(rows)


def tool_table(table: Table) -> str:
    """The MCP tools: name, arguments, engine method, capability, HTTP equivalent."""
    rows = ["| tool | arguments | engine method | capability | HTTP equivalent |",
            "| --- | --- | --- | --- | --- |"]
    for op in table.tools():
        schema = bundle(op.input)
        required = set(schema.get("required", []))
        args = ", ".join(p if p in required else p + "?" for p in schema.get("properties", {}))
        http = f"`{op.http.method} {op.http.path}`" if op.http else ""
        rows.append(f"| `{op.name}` | {'`{' + args + '}`' if args else ''} | `{op.method}` "
                    f"| {op.capability or 'any session'} | {http} |")
    return "\n".join(rows)


def fill(text: str, marker: str, table_text: str) -> str:
    """``text`` with the block after ``<!-- operations:MARKER -->`` replaced by ``table_text``."""
    start = f"<!-- operations:{marker} -->"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise ValueError(f"no {start} … {END} block")
    return pattern.sub(lambda _: f"{start}\n{table_text}\n{END}", text)


#: docs file → (marker, renderer) blocks it holds.
BLOCKS = {"protocol.md": ("http", http_table), "mcp.md": ("tools", tool_table)}


def render(name: str, text: str, table: Table) -> str:
    """The docs file ``name`` (``protocol.md``…) with its operation blocks brought up to date."""
    marker, renderer = BLOCKS[name]
    return fill(text, marker, renderer(table))
