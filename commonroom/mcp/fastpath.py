"""Cached tool calls answered before Falcon: the hot MCP read at the cost of its checks.

Issue 13 (MCP: ≥ 0.6× a bare app returning the same answer bytes). A
client that follows the document repeats one ``tools/call document_read``;
once the head's answer is encoded (the dispatcher's cache of encoded
results), what is left per call was the stack around it: Falcon's request
and response, the transport's header dictionary, the body read through
Falcon's stream, the handler, the dispatcher's steps. The room spent
~0.9 ms of its one worker's CPU a call, the bare app ~0.35.

:class:`CachedToolCalls` wraps the ingress app and answers ``POST /mcp``
itself when the answer is known, with exactly the answer the transport
would give (``tests/unit/test_cached_tool_calls.py`` compares them byte for
byte). It runs the transport's own checks, in functions both share, and
answers only when every one of them passes:

- before the body is read (as the transport, which refuses a foreign
  ``Origin`` unread; the worker's ``BodyGuard`` reads nothing until
  asked; ``Host`` was checked at the room's edge, ``commonroom.http.edge``):
  no query string, a Content-Length of at most
  :data:`BODY_BYTES`, no header name sent twice or not in lower case,
  ``Origin`` (:func:`~commonroom.mcp.transport.origin_allowed`), and ``Mcp-Method:
  tools/call`` with an ``Mcp-Name`` of a tool that has a ``head_key``;
- then the body is read (every message read is replayed to the app when it
  answers instead); the bearer is one live session (``Engine.authenticate``,
  the session cache), before anything is parsed or remembered;
- one JSON-RPC request (:func:`~commonroom.mcp.transport.parse_message`)
  with an id, method ``tools/call``;
- the 2026-07-28 header rules (:func:`~commonroom.mcp.headers.check_request`),
  the params schema, the tool and its ``Mcp-Param-*`` headers
  (:meth:`~commonroom.mcp.dispatch.Dispatcher.tool_call`), the tool's
  ``authorize`` and its arguments' schema;
- the tool has a ``head_key`` and it names a cached encoding; the call
  ACKs nothing and the piggyback would add nothing
  (:meth:`~commonroom.mcp.dispatch.Dispatcher.quiet`);
- then the call is counted against the bearer's rate limit, as the
  transport would count it.

Anything else, every error included, goes to the app untouched, which
answers it as always; nothing was counted for it here (the limiter records
no refused request), so nothing is counted twice. The checks here only
read: the app repeats them on what it is given.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from .. import tokens
from ..errors import CommonroomError
from ..protocol import HeaderValueError, decode_header_value
from ..wire import bearer_of, counted
from .headers import NAME_PARAMS, check_request
from .jsonrpc import JsonRpcError
from .dispatch import dumps
from .registry import Context, Tool
from .transport import McpEndpoint, answer_bytes, origin_allowed, parse_message

__all__ = ["CachedToolCalls", "BODY_BYTES"]

log = logging.getLogger("commonroom.mcp")

#: The largest body read here; a longer one (a write, not a cached read) goes to the app.
BODY_BYTES = 16 * 1024
#: The request path of the Streamable HTTP transport.
PATH = "/mcp"

_JSON = (b"content-type", b"application/json")
#: An id put in place of a shape's: an integer literal of at most 20 characters (a
#: 64-bit integer fits; ``commonroom.jsontext``) or a string of printable ASCII without
#: quote or backslash, so the token means what it reads and its echo is itself.
ID_TOKEN = re.compile(rb'-?(?:0|[1-9][0-9]{0,18})|"[ !#-\[\]-~]{0,128}"')
#: The ids :func:`template` puts where it looks for the id's token (a string and an integer;
#: a call whose own id is one of them is never kept).
PROBES = (b'"commonroom-id-probe"', b"-7337")
#: Places :func:`template` tries before giving up (each is up to two parses of the body).
TEMPLATE_TRIES = 8
#: Shapes kept (all dropped when full), of requests of at most SHAPE_BYTES of body and headers,
#: with a live session: at most ~2.5 MB.
SHAPES = 256
SHAPE_BYTES = 2048
#: The request headers read here besides the MCP ones (``mcp-…``).
_READ = frozenset({b"origin", b"authorization"})

Receive = Callable[[], Awaitable[dict[str, Any]]]


def replaying(messages: list[dict[str, Any]], receive: Receive) -> Receive:
    """A ``receive`` that gives ``messages`` first, in order, then what ``receive`` gives."""
    pending = list(reversed(messages))

    async def replayed() -> dict[str, Any]:
        if pending:
            return pending.pop()
        return await receive()

    return replayed


def _shape_key(raw: list[tuple[bytes, bytes]]) -> tuple[tuple[tuple[bytes, bytes], ...], str | None]:
    """``(key, bearer)``: the headers less Content-Length, ``Authorization`` by its hash (no secret is
    kept as a key), and the bearer token of the request (None without one)."""
    out = []
    token = None
    for name, value in raw:
        if name == b"content-length":
            continue
        if name == b"authorization":
            token = bearer_of(value.decode("latin-1"))
            value = hashlib.sha256(value).digest()
        out.append((name, value))
    return tuple(out), token


def _headers(raw: list[tuple[bytes, bytes]], names: frozenset[str]) -> dict[str, str] | None:
    """The headers read here, decoded, when Origin is the room's (Host was checked at the edge,
    ``commonroom.http.edge``) and the call names one of
    ``names`` (``Mcp-Method: tools/call``, ``Mcp-Name``); else None (the app's to answer).

    By their names as sent (lower case in ASGI), as Falcon looks them up;
    only Host, Origin, Authorization and the MCP headers (``mcp-…``:
    ``check_request``, ``Mcp-Param-*``) are decoded. None too for a name
    sent twice or not in lower case (the transport folds case; its
    answer then is its own).
    """
    seen: set[bytes] = set()
    headers: dict[str, str] = {}
    for name, value in raw:
        if name in seen or name != name.lower():
            return None
        seen.add(name)
        if name in _READ or name.startswith(b"mcp-"):
            headers[name.decode("latin-1")] = value.decode("latin-1")
    if not origin_allowed(headers.get("origin")):
        return None
    try:
        if decode_header_value(headers.get("mcp-method", "")) != "tools/call" \
                or decode_header_value(headers.get("mcp-name", "")) not in names:
            return None  # another method or tool: the transport's alone, its body unread here
    except HeaderValueError:
        return None
    return headers


def _content_length(raw: list[tuple[bytes, bytes]]) -> int | None:
    """The body's length as ``Content-Length`` plain ASCII digits say (0 without it), else None (the app's to judge)."""
    found = None
    for name, value in raw:
        if name == b"content-length":
            if found is not None or not value.isdigit():
                return None
            found = int(value)
    return 0 if found is None else found


@dataclass(frozen=True)
class Shape:
    """A call that passed every check on its bytes (:meth:`CachedToolCalls._check`), less its id.

    A client that reads repeats one call with a new id and the same headers
    (Content-Length aside). ``prefix`` and ``suffix`` are its body around
    the id's token (:func:`template`); a body that is ``prefix`` + another
    plain id token + ``suffix`` with the same headers is, token for token,
    the same message with another id, so the same checks pass: only what
    depends on the room's state (the session, its capability, the cache,
    the piggyback, the rate limit) is asked again. Empty ``prefix`` and
    ``suffix``: the id's token was not found, the shape is not kept.
    ``headers``: those the checks read, less ``Authorization`` (no secret
    is kept: the bearer is read from each request).
    """

    prefix: bytes
    suffix: bytes
    headers: dict[str, str]
    params: dict[str, Any]
    tool: Tool
    arguments: dict[str, Any]

    def id_in(self, body: bytes) -> int | str | None:
        """The id of ``body`` when it is this call with a plain id token (:data:`ID_TOKEN`), else None."""
        prefix, suffix = self.prefix, self.suffix
        if len(body) <= len(prefix) + len(suffix) or not body.startswith(prefix) or not body.endswith(suffix):
            return None
        token = body[len(prefix):len(body) - len(suffix)]
        if not ID_TOKEN.fullmatch(token):
            return None
        return token[1:-1].decode("ascii") if token[:1] == b'"' else int(token)


def template(body: bytes, message: dict[str, Any]) -> tuple[bytes, bytes]:
    """``body`` around the token of ``message``'s id: ``(prefix, suffix)``, or ``(b"", b"")``.

    The token is where putting another id (:data:`PROBES`) parses to the same
    message with that id and nothing else changed; at most
    :data:`TEMPLATE_TRIES` places are tried, and only a plain token
    (:data:`ID_TOKEN`, as the client wrote it) is looked for.
    """
    text = dumps(message["id"]).encode("utf-8")
    if not ID_TOKEN.fullmatch(text) or text in PROBES:
        return b"", b""
    start = 0
    for _ in range(TEMPLATE_TRIES):
        at = body.find(text, start)
        if at == -1:
            break
        prefix, suffix = body[:at], body[at + len(text):]
        try:
            if all(parse_message(prefix + probe + suffix) == {**message, "id": json.loads(probe)} for probe in PROBES):
                return prefix, suffix
        except JsonRpcError:
            pass
        start = at + 1
    return b"", b""


class CachedToolCalls:
    """ASGI wrapper of the ingress app (see the module docstring).

    ``app``: the ingress app (``/mcp`` served by ``endpoint``);
    ``endpoint``: its :class:`~commonroom.mcp.transport.McpEndpoint` (the
    engine, the dispatcher); ``limiter``: the ingress
    rate limiter (or None). ``served`` counts the calls answered here.
    """

    def __init__(self, app: Callable, endpoint: McpEndpoint, limiter: Any):
        self.app = app
        self.endpoint = endpoint
        self.limiter = limiter
        self.served = 0
        #: the shapes of checked calls, by their headers (:func:`_shape_key`): see :class:`Shape`
        self.shapes: dict[tuple[tuple[bytes, bytes], ...], Shape] = {}
        #: the tools answered here (those with a ``head_key``; the catalog is fixed for the room's life)
        self.names = frozenset(tool.name for tool in endpoint.dispatcher.registry.tools.values()
                               if tool.head_key is not None)

    async def __call__(self, scope: dict[str, Any], receive: Receive,
                       send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:  # noqa: D102 - ASGI
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != PATH or scope["query_string"]:
            await self.app(scope, receive, send)
            return
        raw = scope["headers"]
        length = _content_length(raw) if isinstance(raw, list) else None
        if length is None or length > BODY_BYTES:
            await self.app(scope, receive, send)
            return
        key, token = _shape_key(raw)
        shape = self.shapes.get(key)
        # the transport refuses a foreign Host or Origin before it reads a body: so does this path
        # (a shape's headers passed these checks when it was kept)
        headers = shape.headers if shape is not None else _headers(raw, self.names)
        if headers is None or token is None:
            await self.app(scope, receive, send)
            return
        messages: list[dict[str, Any]] = []
        body = await self._body(receive, messages)
        answer = None if body is None else self._answer(key, shape, headers, token, body)
        if answer is None:
            await self.app(scope, replaying(messages, receive) if messages else receive, send)
            return
        self.served += 1
        await send({"type": "http.response.start", "status": 200,
                    "headers": [_JSON, (b"content-length", str(len(answer)).encode("latin-1"))]})
        await send({"type": "http.response.body", "body": answer})

    @staticmethod
    async def _body(receive: Receive, messages: list[dict[str, Any]]) -> bytes | None:
        """The whole body, or None (past :data:`BODY_BYTES`, or the client left); ``messages`` gets all read."""
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                return None
            size += len(message.get("body", b""))
            if size > BODY_BYTES:
                return None
            if not message.get("more_body", False):
                break
        return b"".join(m.get("body", b"") for m in messages)

    def _answer(self, key: tuple[tuple[bytes, bytes], ...], shape: Shape | None, headers: dict[str, str],
                token: str, body: bytes) -> bytes | None:
        """The response body of a cached call, or None to leave the request to the app.

        ``key``: :func:`_shape_key` of the request's headers; ``shape``: the
        shape kept for them, if any; ``headers``: those read here, decoded
        (:func:`_headers`); ``token``: the bearer.
        """
        request_id = None if shape is None else shape.id_in(body)
        digest = tokens.digest(token)
        try:
            if shape is None or request_id is None:
                small = len(body) + sum(len(name) + len(value) for name, value in key) <= SHAPE_BYTES
                checked = self._check(headers, token, digest, body, small)
                if checked is None:
                    return None
                shape, request_id = checked
                if shape.prefix:
                    if len(self.shapes) >= SHAPES:
                        self.shapes.clear()
                    self.shapes[key] = shape
            return self._cached(shape, token, digest, request_id)
        except (JsonRpcError, CommonroomError):
            return None  # the app gives the answer it always gives
        except Exception:
            log.exception("the MCP fast path failed; the transport answers")
            return None

    def _check(self, headers: dict[str, str], token: str, digest: str, body: bytes,
               small: bool) -> tuple[Shape, Any] | None:
        """Every check that depends on the request's bytes alone: ``(its shape, its id)``, or None.

        The bearer is authenticated first: nothing is remembered for a
        request without a live session. ``small``: the request may be kept
        as a shape (its template is looked for). Raises what the checks
        raise (the caller leaves the request to the app).
        """
        endpoint = self.endpoint
        endpoint.engine.authenticate(token, digest)
        dispatcher = endpoint.dispatcher
        message = parse_message(body)
        request_id, params = message.get("id"), message.get("params")
        if request_id is None or message["method"] != "tools/call" or not isinstance(params, dict):
            return None
        required, optional = dispatcher.registry.name_params()
        check_request(message, headers, {**NAME_PARAMS, **required}, optional)
        if not dispatcher.params_valid("tools/call", params):
            return None
        tool, arguments, acked = dispatcher.tool_call(params, headers)
        if acked or tool.head_key is None:  # an ACK may be a write: the full path records it
            return None
        if tool.validator is not None and not tool.validator.is_valid(arguments):
            return None
        prefix, suffix = template(body, message) if small else (b"", b"")
        kept = {name: value for name, value in headers.items() if name != "authorization"}
        return Shape(prefix, suffix, kept, params, tool, arguments), request_id

    def _cached(self, shape: Shape, token: str, digest: str, request_id: Any) -> bytes | None:
        """The answer to a checked call from the cache, or None; counts it against the rate limit."""
        dispatcher, engine = self.endpoint.dispatcher, self.endpoint.engine
        actor = engine.authenticate(token, digest)
        tool = shape.tool
        if tool.authorize is not None:
            tool.authorize(Context(engine=engine, actor=actor, method="tools/call", params=shape.params,
                                   registry=dispatcher.registry, runner=dispatcher.runner,
                                   request_id=request_id, headers=shape.headers, arguments=shape.arguments))
        key = None if tool.head_key is None else tool.head_key(engine, shape.arguments)
        encoded = None if key is None else dispatcher.cached((tool.name, key))
        if encoded is None or not dispatcher.quiet(actor):
            return None
        if not counted(self.limiter, digest):
            return None  # the app counts it and answers 429
        return answer_bytes(request_id, encoded)
