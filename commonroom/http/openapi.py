"""The published API: the schema files and an OpenAPI 3.1 document derived from them.

``GET /schema`` lists the schema files, ``GET /schema/{name}`` serves one
(``editing.json``), and ``GET /openapi.json`` describes every HTTP route,
built from the route table itself (each route's ``Method``: request and
answer schemas, status, capability, summary) with the schema files as
components, so third-party clients can be generated. All three are public:
they hold no secrets. The same files drive the tests.
"""

from __future__ import annotations

import copy
from typing import Any

from .. import PROTOCOL_VERSION, __version__
from ..errors import NotFound
from ..schemas import load_all
from .endpoint import Call, Endpoint, Method

_PREFIX = "#/components/schemas/"
SCHEMAS = load_all()


def _component(name: str) -> str:
    return name[: -len(".json")] if name.endswith(".json") else name


def _rewrite(node: Any, file: str) -> Any:
    """Point every ``$ref`` of schema ``file`` into ``#/components/schemas``."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "$schema":
                continue
            if key == "$ref" and isinstance(value, str):
                target, _, pointer = value.partition("#")
                owner = _component(target) if target else file
                out[key] = _PREFIX + owner + pointer
            else:
                out[key] = _rewrite(value, file)
        return out
    if isinstance(node, list):
        return [_rewrite(item, file) for item in node]
    return node


def schema_ref(name: str) -> dict[str, str]:
    """``"editing#Proposal"`` → ``{"$ref": "#/components/schemas/editing/$defs/Proposal"}``."""
    file, _, definition = name.partition("#")
    return {"$ref": _PREFIX + _component(file) + (f"/$defs/{definition}" if definition else "")}


def _operation(path: str, verb: str, method: Method, public: bool, where: str) -> dict[str, Any]:
    params = [{"name": part[1:-1], "in": "path", "required": True, "schema": {"type": "string"}}
              for part in path.split("/") if part.startswith("{")]
    params += [{"name": name, "in": "query", "required": False, "schema": {"type": "string"}}
               for name in method.query]
    answer = schema_ref(method.answer) if method.answer else {}
    op: dict[str, Any] = {
        "operationId": f"{verb.lower()}_{path.strip('/').replace('/', '_').replace('{', '').replace('}', '')}",
        "summary": method.summary,
        "responses": {
            str(method.status): {"description": "success", "content": {"application/json": {"schema": answer}}},
            "default": {"description": "an error of the catalogue",
                        "content": {"application/json": {"schema": schema_ref("error")}}},
        },
        "x-listener": where,
    }
    if params:
        op["parameters"] = params
    if method.schema:
        op["requestBody"] = {"required": True,
                             "content": {"application/json": {"schema": schema_ref(method.schema)}}}
    if method.capability:
        op["x-capability"] = method.capability
    op["security"] = [] if public else [{"bearer": []}]
    return op


def build() -> dict[str, Any]:
    """The OpenAPI 3.1 document of the room's HTTP API."""
    from .routes import ingress_routes, owner_routes

    paths: dict[str, Any] = {}
    ingress = ingress_routes(None)  # type: ignore[arg-type]  (introspection only)
    owner = owner_routes(None)  # type: ignore[arg-type]
    for path in sorted(set(ingress) | set(owner)):
        endpoint = ingress.get(path) or owner[path]
        where = "both" if path in ingress and path in owner else ("ingress" if path in ingress else "owner")
        paths[path] = {verb.lower(): _operation(path, verb, m, endpoint.public, where)
                       for verb, m in sorted(endpoint.methods.items())}
    paths["/workspace/observe"] = {"get": {
        "operationId": "get_workspace_observe", "summary": "Server-sent events: replay after the cursor, then live",
        "parameters": [{"name": "since_event_id", "in": "query", "required": False, "schema": {"type": "integer"}},
                       {"name": "Last-Event-ID", "in": "header", "required": False, "schema": {"type": "string"}}],
        "responses": {"200": {"description": "event stream", "content": {"text/event-stream": {"schema": schema_ref("events#Event")}}},
                      "default": {"description": "an error of the catalogue",
                                  "content": {"application/json": {"schema": schema_ref("error")}}}},
        "x-capability": "observe", "x-listener": "both", "security": [{"bearer": []}]}}
    paths["/mcp"] = {"post": {
        "operationId": "post_mcp", "summary": "MCP 2026-07-28 (JSON-RPC 2.0; see docs/mcp.md)",
        "requestBody": {"required": True, "content": {"application/json": {"schema": {"type": "object"}}}},
        "responses": {"200": {"description": "JSON-RPC response", "content": {"application/json": {"schema": {"type": "object"}}}},
                      "202": {"description": "notification accepted"}},
        "x-listener": "ingress", "security": [{"bearer": []}]}}
    for extra in ("/openapi.json", "/schema", "/schema/{name}"):
        paths[extra] = {"get": {"operationId": "get" + extra.replace("/", "_").replace(".", "_").replace("{", "").replace("}", ""),
                                "summary": "The published API (public)", "security": [], "x-listener": "both",
                                "responses": {"200": {"description": "JSON", "content": {"application/json": {"schema": {"type": "object"}}}}}}}
        if "{name}" in extra:
            paths[extra]["get"]["parameters"] = [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}]
    return {
        "openapi": "3.1.0",
        "info": {"title": "commonroom", "version": __version__,
                 "description": f"The HTTP API of a commonroom room (protocol commonroom, version {PROTOCOL_VERSION})."},
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": {_component(name): _rewrite(copy.deepcopy(schema), _component(name))
                        for name, schema in sorted(SCHEMAS.items())},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "a session token (ingress) or the owner token (owner port)"}},
        },
    }


def _schema(call: Call) -> Any:
    name = call.params["name"]
    file = name if name.endswith(".json") else name + ".json"
    if file not in SCHEMAS:
        raise NotFound(f"no schema {name}", details={"schemas": sorted(SCHEMAS)})
    return SCHEMAS[file]


def published_routes() -> dict[str, Endpoint]:
    """``/openapi.json``, ``/schema`` and ``/schema/{name}``, public, on both listeners."""
    document = build()
    return {
        "/openapi.json": Endpoint(None, public=True, get=Method(lambda c: document, summary="OpenAPI 3.1")),  # type: ignore[arg-type]
        "/schema": Endpoint(None, public=True, get=Method(lambda c: {"schemas": sorted(SCHEMAS)}, summary="Schema files")),  # type: ignore[arg-type]
        "/schema/{name}": Endpoint(None, public=True, get=Method(_schema, summary="One schema file")),  # type: ignore[arg-type]
    }
