"""Which requests the front answers and how, derived from the operation table.

On a listener, from each operation's declaration
(:mod:`commonroom.operations.spec`): ``GET`` of ``Http(cache="head")``
without path parameters is a cached read; every operation that changes
state, neither public nor a stream, a direct write (its route's
:class:`~commonroom.http.operations.Binding`); and ``POST /mcp`` a cached
tool call of the operations declared ``Mcp(cache="head")``. Public
operations, streams and ``cache="version"`` reads are the app's.
"""

from __future__ import annotations

from typing import Any

from ..http.answers import AnswerCache
from ..http.operations import Binding
from ..mcp.endpoint import McpEndpoint
from ..operations import Table
from ..operations.runner import Runner
from .reads import CachedRead
from .request import Door
from .toolcalls import CachedToolCall
from .writes import DirectWrite

__all__ = ["front_routes"]


def front_routes(table: Table, listener: str, engine: Any, runner: Runner, answers: AnswerCache,
                 mcp: dict[str, McpEndpoint] | None = None) -> dict[str, dict[str, Door]]:
    """Path template → {method: door} of the requests the front answers on ``listener``.

    ``answers``: the answer cache the routes fill; ``mcp``: the ingress's
    MCP routes (``{"/mcp": endpoint}``), if it serves them.
    """
    routes: dict[str, dict[str, Door]] = {}
    for op in table.http(listener):
        http = op.http
        assert http is not None
        if http.public or op.streams:
            continue
        if op.read_only and http.cache == "head" and http.method == "GET" and not http.path_params():
            routes.setdefault(http.path, {})["GET"] = CachedRead(op, engine, answers)
        elif not op.read_only and http.cache is None:
            routes.setdefault(http.path, {})[http.method] = DirectWrite(Binding(op), runner)
    cached = {op.name: op for op in table.tools() if op.mcp is not None and op.mcp.cache == "head"}
    for path, endpoint in (mcp or {}).items():
        if cached:
            routes.setdefault(path, {})["POST"] = CachedToolCall(endpoint, cached)
    return routes
