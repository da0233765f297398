"""The published API: the schema files and one OpenAPI 3.1 document per listener.

``GET /schema`` lists the schema files, ``GET /schema/{name}`` serves one
(``editing.json``), and ``GET /openapi.json`` describes the HTTP API of the
listener it is asked on (the session ingress or the owner port), built
from the operation table (:mod:`commonroom.operations`): every operation's
``operationId`` is its name, its tag its concern, its parameters are typed
from its input schema (an integer with its bounds), its request body and
answer reference named components, and every status it can answer is
listed with the error catalogue's codes. Every named shape of ``schema/``
is its own component (``#/components/schemas/Proposal``), so mainstream
client generators resolve them. All three routes are public: they hold no
secrets.
"""

from __future__ import annotations

import copy
import re
from functools import lru_cache
from typing import Any

import falcon
import falcon.asgi

from .. import PROTOCOL_VERSION, __version__
from ..bundle import bundle
from ..errors import NotFound
from ..schemas import load_all
from ..operations import INGRESS, Operation, Table
from ..wire import dumps, send
from .operations import Binding

_PREFIX = "#/components/schemas/"
SCHEMAS = load_all()
#: Tags of the table's concerns, in the order the documents list them.
TAGS: dict[str, str] = {
    "session": "Joining and the calling session",
    "room": "The room: status, participants, history",
    "document": "The document and its versions",
    "leases": "Leases on regions",
    "proposals": "Proposals and their review",
    "owner": "The local operator (owner port)",
    "live": "Event streams",
    "mcp": "MCP 2026-07-28 (JSON-RPC 2.0)",
    "published": "The published API itself",
}
_ERROR = {"$ref": _PREFIX + "Error"}


def _file(name: str) -> str:
    return name if name.endswith(".json") else name + ".json"


def _root_name(file: str) -> str:
    """The component name of a whole schema file (its title, e.g. ``Error``)."""
    return re.sub(r"[^A-Za-z0-9]", "", SCHEMAS[file].get("title") or file[: -len(".json")].title())


def component_name(name: str) -> str:
    """``"editing#Proposal"`` → ``"Proposal"``; ``"error"`` → ``"Error"``."""
    file, _, definition = name.partition("#")
    return definition or _root_name(_file(file))


def ref(name: str) -> dict[str, str]:
    """A ``$ref`` to the component of schema ``name`` (``"file#Def"``)."""
    return {"$ref": _PREFIX + component_name(name)}


def _rewrite(node: Any, file: str) -> Any:
    """Point every ``$ref`` of a schema from ``file`` at its component."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("$schema", "$defs", "$id"):
                continue
            if key == "$ref" and isinstance(value, str):
                target, _, pointer = value.partition("#")
                target = target or file
                if pointer.startswith("/$defs/") and pointer.count("/") == 2:
                    out[key] = _PREFIX + pointer[len("/$defs/"):]
                elif pointer in ("", "/"):
                    out[key] = _PREFIX + _root_name(target)
                else:
                    raise ValueError(f"{file}: $ref {value!r} does not name a shape")
            else:
                out[key] = _rewrite(value, file)
        return out
    if isinstance(node, list):
        return [_rewrite(item, file) for item in node]
    return node


def components() -> dict[str, Any]:
    """Every named shape of ``schema/`` as its own component (names are unique)."""
    out: dict[str, Any] = {}
    for file, schema in sorted(SCHEMAS.items()):
        named = dict(schema.get("$defs", {}))
        if any(k in schema for k in ("type", "oneOf", "anyOf", "allOf", "properties", "$ref")):
            named[_root_name(file)] = {k: v for k, v in schema.items() if k != "$defs"}
        for name, shape in named.items():
            if name in out:
                raise ValueError(f"schema name {name} is defined twice ({file})")
            out[name] = _rewrite(copy.deepcopy(shape), file)
    return dict(sorted(out.items()))


def _camel(name: str) -> str:
    return "".join(part.title() for part in name.split("_"))


def _property_schema(op: Operation, prop: str) -> dict[str, Any]:
    """The schema of input property ``prop``, as written in ``schema/`` (refs to components)."""
    file, _, definition = op.input.partition("#")
    shape = SCHEMAS[_file(file)]["$defs"][definition]
    return _rewrite(copy.deepcopy(shape["properties"][prop]), _file(file))


#: A path parameter is one segment taken as sent: no ``/`` or ``\\``, which the room's edge refuses even
#: percent-encoded (``commonroom.http.rules.target_refusal``, docs/hardening.md).
PATH_SEGMENT = {"pattern": "^[^/\\\\]*$"}


@lru_cache(maxsize=1)
def _named_shapes() -> dict[str, Any]:
    """:func:`components`, built once (read, never changed: :func:`_segment` copies what it takes)."""
    return components()


def _segment(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` of a path parameter, held to :data:`PATH_SEGMENT` when it is a string (a named string
    shape is written out in place: client generators take no ``allOf`` of a string)."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(_PREFIX):
        named = _named_shapes().get(ref[len(_PREFIX):])
        if isinstance(named, dict) and named.get("type") == "string":
            schema = {**copy.deepcopy(named), **{k: v for k, v in schema.items() if k != "$ref"}}
    if schema.get("type") == "string" and "pattern" not in schema and "enum" not in schema:
        return {**schema, **PATH_SEGMENT}
    return schema


def _parameters(op: Operation, binding: Binding, required: set[str]) -> list[dict[str, Any]]:
    params: list[dict[str, Any]] = []
    for where, table in (("path", binding.path), ("query", binding.query)):
        for wire, prop in table.items():
            schema = _property_schema(op, prop)
            if where == "path":
                schema = _segment(schema)
            description = schema.pop("description", None) or binding.properties.get(prop, {}).get("description")
            param: dict[str, Any] = {"name": wire, "in": where, "required": where == "path" or prop in required}
            if description:
                param["description"] = description
            if binding.kinds[prop] == "json":
                param["content"] = {"application/json": {"schema": schema}}
            else:
                param["schema"] = schema
            params.append(param)
    for header, prop in binding.http.headers.items():
        schema = _property_schema(op, prop)
        schema.pop("description", None)
        params.append({"name": header, "in": "header", "required": False, "schema": schema,
                       "description": f"The same as {binding.http.wire(prop)}; wins over it."})
    return params


def _body(op: Operation, binding: Binding, extra: dict[str, Any]) -> dict[str, Any] | None:
    """The requestBody: the input's component, or a derived ``<Op>Body`` without path properties."""
    if not binding.http.has_body:
        return None
    if not binding.path:
        schema: dict[str, Any] = ref(op.input)
        whole = bundle(op.input)
        required = bool(whole.get("required")) or whole.get("minProperties", 0) > 0
    else:
        file, _, definition = op.input.partition("#")
        shape = copy.deepcopy(SCHEMAS[_file(file)]["$defs"][definition])
        for prop in binding.path.values():
            shape.get("properties", {}).pop(prop, None)
        shape["required"] = [r for r in shape.get("required", []) if r not in binding.path.values()]
        if not shape["required"]:
            del shape["required"]
        if not shape.get("properties"):
            return None
        name = _camel(op.name) + "Body"
        shape["description"] = f"The body of {op.http.method} {op.http.path} (the input {component_name(op.input)} without its path parameters)."  # type: ignore[union-attr]
        extra[name] = _rewrite(shape, _file(file))
        schema = {"$ref": _PREFIX + name}
        required = bool(shape.get("required")) or shape.get("minProperties", 0) > 0
    return {"required": required, "content": {"application/json": {"schema": schema}}}


#: What the room's HTTP server answers before any route runs (commonroom/worker.py), on every route.
SERVER_REFUSALS: dict[int, str] = {
    408: "limit_exceeded: the headers or the body did not arrive in time",
    414: "limit_exceeded: the request line is too long",
    431: "limit_exceeded: the request headers are too large",
    503: "limit_exceeded: the listener holds its maximum of open connections (Retry-After)",
}


def with_server_refusals(responses: dict[str, Any]) -> dict[str, Any]:
    """``responses`` plus :data:`SERVER_REFUSALS` (a status already listed gains the text)."""
    out = dict(responses)
    for status, text in SERVER_REFUSALS.items():
        key = str(status)
        if key in out:
            out[key] = {**out[key], "description": out[key]["description"] + "; " + text}
        else:
            out[key] = {"description": text, "content": {"application/json": {"schema": _ERROR}}}
    return dict(sorted(out.items()))


def _error_responses(statuses: dict[int, list[str]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for status, codes in statuses.items():
        entry: dict[str, Any] = {"description": ", ".join(codes),
                                 "content": {"application/json": {"schema": _ERROR}}}
        if status == 429:
            entry["headers"] = {"Retry-After": {"description": "Seconds to wait before trying again.",
                                                "schema": {"type": "integer", "minimum": 0}}}
        out[str(status)] = entry
    return out


def operation_object(op: Operation, listener: str, extra: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI Operation Object of ``op`` on ``listener`` (``extra`` collects derived components)."""
    assert op.http is not None
    binding = Binding(op)
    required = set(bundle(op.input).get("required", []))
    out: dict[str, Any] = {
        "operationId": op.name,
        "summary": op.summary,
        "tags": [op.tag],
    }
    if op.mcp is not None:
        out["description"] = op.mcp.description
    params = _parameters(op, binding, required)
    if params:
        out["parameters"] = params
    body = _body(op, binding, extra)
    if body is not None:
        out["requestBody"] = body
    media = "text/event-stream" if op.streams else "application/json"
    success: dict[str, Any] = {"description": op.summary + (f" (an event stream: each event's data is one {component_name(op.answer)})"
                                            if op.streams else ""),
               "content": {media: {"schema": ref(op.answer)}}}
    if op.http.cache is not None:
        etag = {"ETag": {"description": "The answer's content_hash as a strong entity tag (with -gzip inside "
                                        "the quotes for the gzip representation).", "schema": {"type": "string"}},
                "Vary": {"description": "Accept-Encoding: gzip is honoured.", "schema": {"type": "string"}}}
        success["headers"] = etag
        success["description"] += "; gzip-encoded when Accept-Encoding allows it"
        cached = {"304": {"description": "Not Modified: the request's If-None-Match header names this answer's "
                                          "ETag (an ETag this route answered before, while it still matches)", "headers": etag}}
    else:
        cached = {}
    out["responses"] = {str(op.http.status): success, **cached, **_error_responses(op.error_statuses(listener))}
    out["security"] = [] if op.http.public else [{"bearer": []}]
    if op.capability:
        out["x-capability"] = op.capability
    if op.mcp is not None:
        out["x-mcp-tool"] = op.name
    return out


def _published(listener: str) -> dict[str, Any]:
    """``/openapi.json``, ``/schema`` and ``/schema/{name}``."""
    def get(op_id: str, summary: str, schema: dict[str, Any], params: list | None = None,
            not_found: bool = False) -> dict[str, Any]:
        responses: dict[str, Any] = {"200": {"description": summary,
                                             "content": {"application/json": {"schema": schema}}}}
        if not_found:  # a name of a path segment: also 400 for a '/' or '\\' in it (the edge's path rule)
            responses.update(_error_responses({400: ["invalid_request"], 404: ["not_found"]}))
        op: dict[str, Any] = {"operationId": op_id, "summary": summary, "tags": ["published"],
                              "security": [], "responses": responses}
        if params:
            op["parameters"] = params
        return {"get": op}

    return {
        "/openapi.json": get("openapi_get", f"This OpenAPI document (the {listener} listener)", {"type": "object"}),
        "/schema": get("schemas_list", "The schema files", {
            "type": "object", "required": ["schemas"], "additionalProperties": False,
            "properties": {"schemas": {"type": "array", "items": {"type": "string"}}}}),
        "/schema/{name}": get("schema_get", "One schema file (JSON Schema 2020-12)", {"type": "object"}, [
            {"name": "name", "in": "path", "required": True, "schema": {"type": "string", "minLength": 1, **PATH_SEGMENT},
             "description": "A file name, with or without .json (editing.json)."}], not_found=True),
    }


def _mcp() -> dict[str, Any]:
    rpc = {"application/json": {"schema": ref("mcp#JsonRpcAnswer")}}
    stream = {"text/event-stream": {"schema": {"type": "string"}}}

    def error(text: str) -> dict[str, Any]:
        return {"description": text, "content": rpc}

    optional_bearer: list[dict[str, list[str]]] = [{}, {"bearer": []}]
    return {
        "post": {"operationId": "mcp_post", "summary": "MCP 2026-07-28 (JSON-RPC 2.0; see docs/mcp.md)",
                 "tags": ["mcp"], "security": [{"bearer": []}],
                 "requestBody": {"required": True,
                                 "content": {"application/json": {"schema": ref("mcp#JsonRpcMessage")}}},
                 "responses": {
                     "200": {"description": "the JSON-RPC response (an event stream for a streamed method)",
                             "content": {**rpc, **stream}},
                     "202": {"description": "a notification, accepted"},
                     "400": error("parse error, invalid request or params, header mismatch (JSON-RPC error)"),
                     "401": error("no valid bearer (checked before the message's own errors)"),
                     "403": error("Origin refused"),
                     "404": error("unknown method (-32601)"),
                     "413": error("body over 8 MiB"),
                     "429": {**error("rate limit"), "headers": {"Retry-After": {
                         "description": "Seconds to wait before trying again.",
                         "schema": {"type": "integer", "minimum": 0}}}}}},
        "get": {"operationId": "mcp_stream", "summary": "MCP notification stream (server to client)",
                "tags": ["mcp"], "security": optional_bearer,
                "responses": {"200": {"description": "event stream", "content": stream},
                              "403": error("Origin refused"),
                              "405": error("no stream without a valid bearer, Accept: text/event-stream and "
                                           "MCP-Protocol-Version 2026-07-28"),
                              "429": error("rate limit")}},
    }


def build(table: Table | None = None, listener: str = INGRESS) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``listener``'s HTTP API (``"ingress"`` or ``"owner"``)."""
    if table is None:
        from ..operations import OPERATIONS

        table = OPERATIONS
    extra: dict[str, Any] = {}
    paths: dict[str, Any] = {}
    for op in table.http(listener):
        assert op.http is not None
        paths.setdefault(op.http.path, {})[op.http.method.lower()] = operation_object(op, listener, extra)
    if listener == INGRESS:
        paths["/mcp"] = _mcp()
    paths.update(_published(listener))
    for item in paths.values():
        for entry in item.values():
            entry["responses"] = with_server_refusals(entry["responses"])
    schemas = components()
    schemas.update(extra)
    used_tags = {op["tags"][0] for item in paths.values() for op in item.values()}
    where = "the session ingress" if listener == INGRESS else "the owner port (127.0.0.1, owner token)"
    return {
        "openapi": "3.1.0",
        "info": {"title": f"commonroom ({listener})", "version": __version__,
                 "description": f"The HTTP API of a commonroom room on {where} "
                                f"(protocol commonroom, version {PROTOCOL_VERSION})."},
        "tags": [{"name": name, "description": text} for name, text in TAGS.items() if name in used_tags],
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": dict(sorted(schemas.items())),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description":
                                           "a session token (ingress)" if listener == INGRESS
                                           else "the owner token (owner port)"}},
        },
    }


@lru_cache(maxsize=8)
def _encoded(listener: str, table: Table) -> bytes:
    return dumps(build(table, listener))


class _Published:
    """``/openapi.json``, ``/schema``, ``/schema/{name}`` (public, JSON)."""

    public = True

    def __init__(self, table: Table, listener: str, what: str):
        self.table, self.listener, self.what = table, listener, what

    async def on_get(self, req: falcon.asgi.Request, resp: falcon.asgi.Response, name: str | None = None) -> None:
        if self.what == "openapi":
            resp.status = 200
            resp.content_type = "application/json"
            resp.data = _encoded(self.listener, self.table)
        elif self.what == "list":
            send(resp, {"schemas": sorted(SCHEMAS)})
        else:
            file = _file(name or "")
            if file not in SCHEMAS:
                raise NotFound(f"no schema {name}", details={"schemas": sorted(SCHEMAS)})
            send(resp, SCHEMAS[file])


def published_routes(table: Table, listener: str) -> dict[str, Any]:
    """The published API's routes for ``listener``."""
    return {"/openapi.json": _Published(table, listener, "openapi"),
            "/schema": _Published(table, listener, "list"),
            "/schema/{name}": _Published(table, listener, "one")}


__all__ = ["build", "components", "published_routes", "ref", "component_name"]
