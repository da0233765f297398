"""The method table: one JSON-RPC request (already checked) → one result.

:class:`Dispatcher` owns the core methods of 2026-07-28 that commonroom
serves (``server/discover``, ``tools/*``, ``resources/*``, ``prompts/*``)
and every method a :class:`~commonroom.mcp.registry.Registry` adds
(``resources/subscribe``, ``skills/*``, ``completion/complete``,
``tasks/*``, ``subscriptions/listen``). Every result leaves here with ``resultType``
and ``_meta["io.modelcontextprotocol/serverInfo"]``; cacheable results
also carry ``ttlMs`` and ``cacheScope``.

A :class:`~commonroom.errors.CommonroomError` raised outside a tool is
mapped by :func:`room_error`: "no such thing" codes → -32602, anything else
(permission_denied, limit_exceeded, …) → :data:`ROOM_ERROR`; ``data`` is the
HTTP error object either way.
"""

from __future__ import annotations

import base64
import inspect
import logging
from collections import OrderedDict
from typing import Any, Mapping

from jsonschema.exceptions import best_match

from .. import __version__, jsontext, schemas
from ..errors import CommonroomError, InvalidRequest
from ..protocol import ROOM_ERROR  # noqa: F401  (a room refusal outside tools; re-exported)
from .headers import check_param_headers
from .jsonrpc import (
    INVALID_PARAMS,
    META_SERVER_INFO,
    SUPPORTED_VERSIONS,
    JsonRpcError,
    internal_error,
    invalid_params,
    method_not_found,
)
from .registry import Context, Raw, Registry, Stream, Tool

log = logging.getLogger("commonroom.mcp")

SERVER_INFO = {"name": "commonroom", "version": __version__}
#: How long a client may cache discover and the catalog lists (ms); the
#: catalog is fixed for the life of the room process.
CATALOG_TTL_MS = 300_000
#: Encoded tool results kept for tools with a ``cache_key`` (LRU).
ENCODED_CACHE_SIZE = 32
#: ... and at most this many bytes of them.
ENCODED_CACHE_BYTES = 16 * 1024 * 1024
#: Error codes that mean "the named thing does not exist or is invalid" → -32602.
NOT_FOUND_CODES = {"not_found", "version_not_found", "proposal_not_found", "invalid_region", "invalid_request"}

INSTRUCTIONS = (
    "commonroom: people and agents edit one markdown document together. Read with "
    "document_read (or the commonroom://workspace/document resource); lease a region "
    "before a long edit (lease_acquire); propose changes with proposal_create against "
    "the version you read; on a stale_version result, re-read, rebase and propose again. "
    "The skill skill://commonroom/SKILL.md explains the whole workflow."
)


dumps = jsontext.dumps


def room_error(error: CommonroomError) -> JsonRpcError:
    """A room refusal on a non-tool method as a JSON-RPC error (HTTP 200)."""
    code = INVALID_PARAMS if error.code in NOT_FOUND_CODES else ROOM_ERROR
    return JsonRpcError(code, error.message, error.to_dict())


class Encoded:
    """A result already encoded as JSON bytes (the hot ``tools/call`` path)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes):
        self.data = data


_SERVER_META = dumps({META_SERVER_INFO: SERVER_INFO}).encode("utf-8")

#: ``params._meta`` of a ``tools/call`` (stripped before the arguments are validated):
#: the ids of ``requires_ack`` messages this request ACKs (docs/boards.md, *ACK*).
META_ACK_IDS = "ack_session_message_ids"
#: ... and the wrapper form of ``recording_session_id`` (for tools that take one).
META_RECORDING = "recording_session_id"
#: Result ``_meta`` key: the open ``requires_ack`` messages addressed to the caller's session.
META_SESSION_MESSAGES = "commonroom/session_messages"


def ack_ids(meta: Any) -> frozenset[str]:
    """The ids a request ACKs (``_meta.ack_session_message_ids``); anything malformed is ignored."""
    if not isinstance(meta, dict):
        return frozenset()
    ids = meta.get(META_ACK_IDS)
    if not isinstance(ids, list):
        return frozenset()
    from ..engine.board_base import ACK_IDS_MAX
    return frozenset(i for i in ids[:ACK_IDS_MAX] if isinstance(i, str) and 0 < len(i) <= 200)


def bounded_text(structured: bytes, bound: int) -> str:
    """The text content of a size-bounded answer whose JSON is too large to repeat within ``bound`` bytes."""
    return (f"The answer is in structuredContent ({len(structured)} bytes of JSON); it is not repeated as text, "
            f"so the result stays within this tool's bound of {bound} bytes.")


def encode_tool_value(value: Any, meta: dict[str, Any] | None = None, bound: int | None = None) -> bytes:
    """A successful tool value as the bytes of a complete CallToolResult.

    The value is encoded once and spliced in as ``structuredContent``; its
    JSON text is encoded once more as the text content (MCP's SHOULD, for
    clients that read only text). With ``bound`` (the tool's
    ``result_bytes``: a board summary's 64 KiB) the text repeats the JSON
    only while text and ``structuredContent`` together stay within it;
    beyond, it is :func:`bounded_text`, one sentence, so the result never
    carries the answer twice past its bound. ``meta`` adds result
    ``_meta`` members (the piggyback) beside serverInfo.
    """
    text = dumps(value)
    structured = (text if isinstance(value, dict) else dumps({"value": value})).encode("utf-8")
    quoted = dumps(text).encode("utf-8")
    if bound is not None and len(quoted) + len(structured) > bound:
        quoted = dumps(bounded_text(structured, bound)).encode("utf-8")
    return b"".join((
        b'{"content":[{"type":"text","text":', quoted, b'}],"structuredContent":',
        structured, b',"isError":false,"resultType":"complete","_meta":',
        _SERVER_META if not meta else dumps({META_SERVER_INFO: SERVER_INFO, **meta}).encode("utf-8"), b"}",
    ))


def tool_result(value: Any) -> dict[str, Any]:
    """A successful tool value as a CallToolResult."""
    structured = value if isinstance(value, dict) else {"value": value}
    return {"content": [{"type": "text", "text": dumps(value)}], "structuredContent": structured,
            "isError": False}


def tool_error(error: CommonroomError) -> dict[str, Any]:
    """A room refusal as a CallToolResult with ``isError: true`` (same object as HTTP)."""
    body = error.to_dict()
    return {"content": [{"type": "text", "text": dumps(body)}], "structuredContent": body, "isError": True}


async def _call(handler: Any, ctx: Context) -> Any:
    result = handler(ctx)
    if inspect.isawaitable(result):
        result = await result
    return result


class Dispatcher:
    """Runs checked requests against the engine and the registry."""

    def __init__(self, engine: Any, registry: Registry, runner: Any = None):
        self.engine = engine
        self.registry = registry
        self.runner = runner
        self._encoded: OrderedDict[Any, bytes] = OrderedDict()
        self._encoded_bytes = 0
        #: method → its params schema (``schema/mcp.json``); -32602 when they do not match.
        self.params_schemas: dict[str, str] = {
            "server/discover": "mcp#DiscoverParams", "tools/list": "mcp#ListParams",
            "tools/call": "mcp#ToolCallParams", "resources/list": "mcp#ListParams",
            "resources/read": "mcp#UriParams", "resources/templates/list": "mcp#ListParams",
            "prompts/list": "mcp#ListParams", "prompts/get": "mcp#PromptGetParams",
            **{m.name: m.params_schema for m in registry.methods.values() if m.params_schema},
        }
        self.core = {
            "server/discover": self.discover,
            "tools/list": self.tools_list,
            "tools/call": self.tools_call,
            "resources/list": self.resources_list,
            "resources/read": self.resources_read,
            "resources/templates/list": self.templates_list,
            "prompts/list": self.prompts_list,
            "prompts/get": self.prompts_get,
        }

    def knows(self, method: str) -> bool:
        """True when ``method`` is served."""
        return method in self.core or method in self.registry.methods

    def params_valid(self, method: str, params: dict[str, Any]) -> bool:
        """True when ``params`` match ``method``'s params schema (or it has none).

        :func:`commonroom.schemas.is_valid` on the bundled schema; small
        params found valid are remembered whole (``remember=True``): a
        client that reads repeats its whole call, ``_meta`` included.
        """
        schema = self.params_schemas.get(method)
        return schema is None or schemas.is_valid(schema, params, remember=True)

    async def handle(self, message: dict[str, Any], actor: Any,
                     headers: Mapping[str, str]) -> dict[str, Any] | Stream | Encoded:
        """The result of one checked request (raises ``JsonRpcError``)."""
        method = message["method"]
        params = message.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise invalid_params("params must be an object", {"field": "params"})
        if not self.params_valid(method, params):
            _check_params(self.params_schemas[method], params)
        ctx = Context(engine=self.engine, actor=actor, method=method, params=params,
                      registry=self.registry, runner=self.runner, request_id=message.get("id"), headers=headers)
        try:
            if method in self.core:
                result = await self.core[method](ctx)
            elif method in self.registry.methods:
                result = await _call(self.registry.methods[method].handler, ctx)
                if isinstance(result, Raw):
                    result = result.result
            else:
                raise method_not_found(method)
        except JsonRpcError:
            raise
        except CommonroomError as exc:
            raise room_error(exc) from None
        except Exception:
            log.exception("MCP %s failed", method)
            raise internal_error() from None
        if isinstance(result, (Stream, Encoded)):
            return result
        return finish(result)

    # -- discovery --------------------------------------------------------
    async def discover(self, ctx: Context) -> dict[str, Any]:
        """``server/discover`` (seed: no list-changed flags, nothing secret)."""
        capabilities: dict[str, Any] = {
            "tools": {},
            "prompts": {},
            "resources": {"subscribe": True},
            **self.registry.capabilities,
        }
        if self.registry.extensions:
            capabilities["extensions"] = {k: dict(v) for k, v in self.registry.extensions.items()}
        return {
            "supportedVersions": list(SUPPORTED_VERSIONS),
            "capabilities": capabilities,
            "instructions": INSTRUCTIONS,
            "ttlMs": CATALOG_TTL_MS,
            "cacheScope": "public",
        }

    # -- tools ------------------------------------------------------------
    async def tools_list(self, ctx: Context) -> dict[str, Any]:
        """``tools/list``: the whole catalog, one page."""
        _no_cursor(ctx)
        return {"tools": [t.descriptor() for t in self.registry.tools.values()],
                "ttlMs": CATALOG_TTL_MS, "cacheScope": "public"}

    def tool_call(self, params: dict[str, Any], headers: Mapping[str, str]) -> tuple[Tool, dict[str, Any],
                                                                                   frozenset[str]]:
        """``(tool, arguments, ACKed ids)`` of checked ``tools/call`` params, before the tool runs.

        The arguments get ``_meta.recording_session_id`` when the tool takes
        one and they do not. Raises -32602 (no such tool, arguments not an
        object) or 400 / -32020 (an ``Mcp-Param-*`` header that differs).
        """
        name = params.get("name")
        if not isinstance(name, str):
            raise invalid_params("params.name must be a tool name", {"field": "name"})
        tool = self.registry.tools.get(name)
        if tool is None:
            raise invalid_params(f"Unknown tool: {name}", {"name": name})
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise invalid_params("params.arguments must be an object", {"field": "arguments"})
        check_param_headers(tool.input_schema, arguments, headers)
        meta = params.get("_meta")
        recording = meta.get(META_RECORDING) if isinstance(meta, dict) else None
        if recording is not None and "recording_session_id" in tool.input_schema.get("properties", {}):
            arguments = {**arguments}
            arguments.setdefault("recording_session_id", recording)
        return tool, arguments, ack_ids(meta)

    async def tools_call(self, ctx: Context) -> dict[str, Any] | Encoded:
        """``tools/call``: validate arguments, run the handler, wrap the value."""
        tool, ctx.arguments, acked = self.tool_call(ctx.params, ctx.headers)
        arguments = ctx.arguments
        try:
            if tool.authorize is not None:
                tool.authorize(ctx)
            _validate_arguments(tool.validator, arguments)
            value = await _call(tool.handler, ctx)
        except CommonroomError as exc:
            error = tool_error(exc)
            extra = await self._piggyback(ctx, acked)
            if extra:
                error["_meta"] = extra
            return error
        if isinstance(value, Raw):
            return value.result
        extra = await self._piggyback(ctx, acked)
        if extra:
            return Encoded(encode_tool_value(value, extra, tool.result_bytes))
        if tool.cache_key is None:
            return Encoded(encode_tool_value(value, bound=tool.result_bytes))
        return Encoded(self._cached_encoding((tool.name, tool.cache_key(ctx, value)), value))

    async def _piggyback(self, ctx: Context, acked: frozenset[str]) -> dict[str, Any]:
        """Result ``_meta`` for the caller's session: records first ACKs, then the open ``requires_ack`` messages.

        An echoed id suppresses its message on this result only; the first
        time it is echoed its ACK time is recorded (a write, on the writer
        thread). Never fails the call: a failure is logged and nothing is added.
        """
        actor, engine = ctx.actor, self.engine
        if getattr(actor, "session_id", None) is None or not hasattr(engine, "pending_acks") \
                or not hasattr(engine, "peer_work"):
            return {}
        try:
            if not acked and self.quiet(actor):
                return {}  # the common case: one probe, nothing to carry
            if acked:
                fresh = engine.unrecorded_acks(actor, acked)
                if fresh:
                    if self.runner is not None:
                        await self.runner.write(engine.ack_session_messages, actor, fresh)
                    else:
                        engine.ack_session_messages(actor, fresh)
            messages, omitted = engine.pending_acks(actor, acked)
            out: dict[str, Any] = {}
            if messages:
                out[META_SESSION_MESSAGES] = {"messages": messages, "omitted": omitted}
            if engine.peer_work(actor, acked):
                if self.runner is not None:
                    out.update(await self.runner.write(engine.project_peers, actor, acked))
                else:
                    out.update(engine.project_peers(actor, acked))
        except Exception:
            log.exception("ACK piggyback failed")
            return {}
        return out

    def quiet(self, actor: Any) -> bool:
        """True when :meth:`_piggyback` adds nothing to a call of ``actor`` that ACKs nothing (reads only).

        One probe (:meth:`commonroom.engine.piggyback.PiggybackMixin.piggyback_pending`):
        no open ``requires_ack`` message for its session and no peer work.
        False when the probe fails: the full path logs that.
        """
        if getattr(actor, "session_id", None) is None:
            return True
        try:
            return not self.engine.piggyback_pending(actor)
        except Exception:  # an engine without boards included: the full path decides
            return False

    def cached(self, key: Any) -> bytes | None:
        """The cached encoding of a complete result under ``(tool name, cache key)``, else None."""
        data = self._encoded.get(key)
        if data is not None:
            self._encoded.move_to_end(key)
        return data

    def _cached_encoding(self, key: Any, value: Any) -> bytes:
        data = self.cached(key)
        if data is not None:
            return data
        data = encode_tool_value(value)
        if len(data) <= ENCODED_CACHE_BYTES // 4:
            self._encoded[key] = data
            self._encoded_bytes += len(data)
            while len(self._encoded) > ENCODED_CACHE_SIZE or self._encoded_bytes > ENCODED_CACHE_BYTES:
                self._encoded_bytes -= len(self._encoded.popitem(last=False)[1])
        return data

    # -- resources --------------------------------------------------------
    async def resources_list(self, ctx: Context) -> dict[str, Any]:
        """``resources/list``: every fixed-URI resource."""
        _no_cursor(ctx)
        return {"resources": [r.descriptor() for r in self.registry.resources.values()],
                "ttlMs": CATALOG_TTL_MS, "cacheScope": "public"}

    async def templates_list(self, ctx: Context) -> dict[str, Any]:
        """``resources/templates/list``."""
        _no_cursor(ctx)
        return {"resourceTemplates": [t.descriptor() for t in self.registry.templates],
                "ttlMs": CATALOG_TTL_MS, "cacheScope": "public"}

    async def resources_read(self, ctx: Context) -> dict[str, Any]:
        """``resources/read``; an unknown URI is -32602."""
        uri = ctx.params.get("uri")
        if not isinstance(uri, str):
            raise invalid_params("params.uri must be a string", {"field": "uri"})
        found = self.registry.find_resource(uri)
        if found is None:
            raise invalid_params("Resource not found", {"uri": uri})
        entry, variables = found
        ctx.uri, ctx.variables = uri, variables
        value = await _call(entry.read, ctx)
        if isinstance(value, Raw):
            return value.result
        return {"contents": contents_of(uri, entry, value), "ttlMs": entry.ttl_ms,
                "cacheScope": entry.cache_scope}

    # -- prompts ----------------------------------------------------------
    async def prompts_list(self, ctx: Context) -> dict[str, Any]:
        """``prompts/list``."""
        _no_cursor(ctx)
        return {"prompts": [p.descriptor() for p in self.registry.prompts.values()],
                "ttlMs": CATALOG_TTL_MS, "cacheScope": "public"}

    async def prompts_get(self, ctx: Context) -> dict[str, Any]:
        """``prompts/get``: required arguments checked, then the prompt's ``get``."""
        name = ctx.params.get("name")
        prompt = self.registry.prompts.get(name) if isinstance(name, str) else None
        if prompt is None:
            raise invalid_params(f"Unknown prompt: {name}", {"name": name})
        arguments = ctx.params.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise invalid_params("params.arguments must be an object", {"field": "arguments"})
        missing = [a["name"] for a in prompt.arguments if a.get("required") and arguments.get(a["name"]) in (None, "")]
        if missing:
            raise invalid_params(f"Missing required arguments: {', '.join(missing)}", {"missing": missing})
        ctx.arguments = arguments
        value = await _call(prompt.get, ctx)
        if isinstance(value, Raw):
            return value.result
        if isinstance(value, list):
            return {"description": prompt.description, "messages": value}
        return dict(value)


def finish(result: dict[str, Any]) -> dict[str, Any]:
    """Add ``resultType`` (default complete) and serverInfo to a result."""
    out = dict(result)
    out.setdefault("resultType", "complete")
    meta = dict(out.get("_meta") or {})
    meta.setdefault(META_SERVER_INFO, SERVER_INFO)
    out["_meta"] = meta
    return out


def contents_of(uri: str, entry: Any, value: Any) -> list[dict[str, Any]]:
    """A read handler's value as ResourceContents."""
    mime = getattr(entry, "mime_type", None)
    if isinstance(value, list):
        return value
    if isinstance(value, bytes):
        item: dict[str, Any] = {"uri": uri, "blob": base64.b64encode(value).decode("ascii")}
    elif isinstance(value, str):
        item = {"uri": uri, "text": value}
    else:
        item = {"uri": uri, "text": dumps(value)}
        mime = mime or "application/json"
    if mime:
        item["mimeType"] = mime
    return [item]


def _no_cursor(ctx: Context) -> None:
    if ctx.params.get("cursor") is not None:
        raise invalid_params("unknown cursor: every list is one page", {"field": "cursor"})


def _check_params(schema: str, params: dict[str, Any]) -> None:
    """-32602 naming the pointer when ``params`` do not match ``schema`` (``"mcp#ToolCallParams"``).

    Called for params :meth:`Dispatcher.params_valid` refused: only invalid
    ones pay for collecting every error to name the best.
    """
    error = best_match(schemas.validator(schema).iter_errors(params))
    if error is None:
        return
    pointer = "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in error.absolute_path)
    pointer = "" if pointer == "/" else pointer
    raise invalid_params(f"Invalid params at {pointer or '/'}: {error.message}",
                         {"pointer": "/params" + pointer, "reason": error.message})


def _validate_arguments(validator: Any, arguments: dict[str, Any]) -> None:
    """``InvalidRequest`` naming the pointer when ``arguments`` do not match the tool's ``validator`` (None: any)."""
    if validator is None or validator.is_valid(arguments):
        return
    error = best_match(validator.iter_errors(arguments))
    if error is None:
        return
    pointer = "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in error.absolute_path)
    pointer = "" if pointer == "/" else pointer
    raise InvalidRequest(
        f"arguments are invalid at {pointer or '/'}: {error.message}",
        details={"pointer": pointer,
                 "schema_path": "/" + "/".join(str(p) for p in error.absolute_schema_path),
                 "reason": error.message},
    )


__all__ = ["Dispatcher", "Encoded", "SERVER_INFO", "finish", "tool_result", "tool_error", "room_error",
           "encode_tool_value"]
