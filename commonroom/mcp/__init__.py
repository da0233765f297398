"""The MCP 2026-07-28 adapter: ``/mcp`` on the session ingress (no MCP SDK).

Modules, one concern each:

- :mod:`.jsonrpc`: framing, error objects and their HTTP statuses;
- :mod:`.headers`: the standard headers and the request checks, in order;
- :mod:`.endpoint`: the Falcon resource `/mcp` (POST/GET/DELETE, Origin, bearer; Host is the edge's);
- :mod:`.dispatch`: the method table; results get resultType and serverInfo;
- :mod:`.registry`: tools, resources, templates, prompts, extension methods,
  and the ``COMMONROOM_MCP_PLUGINS`` hook (the API is in its docstring);
- :mod:`.tools`, :mod:`.resources`, :mod:`.prompts`, :mod:`.skills`:
  commonroom's own catalog (the tools derived from the operation table);
- :mod:`.completions`: ``completion/complete`` (prompt and template arguments);
- :mod:`.tasks`: the tasks extension (``tasks/get|update|cancel``, ``handoff_create``
  answering ``resultType: "task"``, ``handoff_id`` completions);
- :mod:`.tooltasks`: task-running tools (``add_task_tool(registry, …)``): a call declaring the
  extension becomes a durable task of the room, run in the background;
- :mod:`.listen`: ``subscriptions/listen`` (resource updates and task notifications);
- :mod:`.stream`: ``GET /mcp`` notifications and POST-answered streams on
  the room's stream primitive (``commonroom.live.stream``).

:func:`mcp_routes` is what the composition root (:mod:`commonroom.room`) mounts on the ingress.
"""

from __future__ import annotations

from typing import Any

from ..operations import OPERATIONS, Table
from .completions import register_completions
from .dispatch import Dispatcher
from .prompts import register_prompts
from .registry import Registry
from .resources import Subscriptions, register_resources
from .listen import register_listen
from .skills import register_skills
from .tasks import register_tasks
from .tools import register_tools
from .endpoint import McpEndpoint

__all__ = ["McpEndpoint", "Registry", "build_registry", "mcp_routes"]


def build_registry(subscriptions: Subscriptions, plugins: str | None = None,
                   table: Table = OPERATIONS) -> Registry:
    """commonroom's catalog (tools from ``table``), then the plugins (``COMMONROOM_MCP_PLUGINS`` by default)."""
    registry = Registry()
    register_tools(registry, table)
    register_resources(registry, subscriptions)
    register_prompts(registry)
    register_skills(registry)
    register_completions(registry)
    register_tasks(registry, table)
    register_listen(registry)
    registry.load_plugins(plugins)
    return registry


def mcp_routes(engine: Any, hub: Any = None, *, heartbeat_seconds: float = 15.0,
               plugins: str | None = None, runner: Any = None, table: Table = OPERATIONS,
               streams: Any = None) -> dict[str, Any]:
    """``{"/mcp": McpEndpoint}`` for the session ingress (never the owner port).

    ``runner`` runs the tools' engine calls (writes on the writer thread);
    ``table`` is the operation table the tools come from; ``streams`` is the
    room's ``commonroom.live.stream.Streams`` (one is made on ``hub`` when
    not given).
    """
    subscriptions = Subscriptions()
    registry = build_registry(subscriptions, plugins, table)
    endpoint = McpEndpoint(engine, Dispatcher(engine, registry, runner), subscriptions, hub,
                           heartbeat_seconds=heartbeat_seconds,
                           streams=streams)
    return {"/mcp": endpoint}
