"""The cached tool call: ``POST /mcp`` ``tools/call`` of an operation declared ``Mcp(cache="head")``.

A client that follows the document repeats one ``tools/call``; once the
head's result is encoded (the dispatcher's cache of encoded results),
:class:`CachedToolCall` answers it with exactly the answer the transport
gives. It runs the transport's own checks, in the functions both share:

- before the body is read (as the transport, which refuses a foreign
  ``Origin`` unread): ``Origin`` (:func:`~commonroom.mcp.endpoint.origin_allowed`)
  and ``Mcp-Method: tools/call`` with an ``Mcp-Name`` of a cached tool
  (:meth:`CachedToolCall.admit`); the door checks the bearer then;
- one JSON-RPC request (:func:`~commonroom.mcp.endpoint.parse_message`)
  with an id, method ``tools/call``; the 2026-07-28 header rules
  (:func:`~commonroom.mcp.headers.check_request`), the params schema, the
  tool and its ``Mcp-Param-*`` headers
  (:meth:`~commonroom.mcp.dispatch.Dispatcher.tool_call`) and its
  arguments' schema, once per shape of call (:mod:`commonroom.front.shapes`);
- the call gives no argument (``head_key``), its result is cached, it
  ACKs nothing and the piggyback would add nothing
  (:meth:`~commonroom.mcp.dispatch.Dispatcher.quiet`).

Anything else, every error included, is the transport's. The checks here
only read: the transport repeats them on what it is given.
"""

from __future__ import annotations

import logging
from typing import Any

from ..errors import CommonroomError
from ..mcp.headers import NAME_PARAMS, check_request
from ..mcp.jsonrpc import JsonRpcError
from ..mcp.endpoint import McpEndpoint, answer_bytes, origin_allowed, parse_message
from ..operations import Operation
from ..protocol import HeaderValueError, decode_header_value
from .request import Answer, Request
from .shapes import SHAPE_BYTES, SHAPES, Shape, template

__all__ = ["CachedToolCall", "BODY_BYTES"]

log = logging.getLogger("commonroom.mcp")

#: The largest body read here; a longer one (a write, not a cached read) is the transport's.
BODY_BYTES = 16 * 1024

_JSON = (b"content-type", b"application/json")

HeaderKey = tuple[tuple[bytes, bytes], ...]


class CachedToolCall:
    """The door of the cached tool calls (:class:`~commonroom.front.request.Door`).

    ``endpoint``: the ingress's :class:`~commonroom.mcp.endpoint.McpEndpoint`
    (the engine, the dispatcher); ``ops``: the operations whose calls are
    answered here, by tool name. ``shapes``: the checked calls kept, by
    their headers (less ``Content-Length`` and ``Authorization``).
    """

    has_body = True
    reads_body = True
    body_limit = BODY_BYTES

    def __init__(self, endpoint: McpEndpoint, ops: dict[str, Operation]):
        self.endpoint = endpoint
        self.ops = ops
        self.shapes: dict[HeaderKey, Shape] = {}

    def admit(self, request: Request) -> Operation | None:
        """The operation the call names, if its Origin is the room's and it is a cached tool's call."""
        key = tuple(item for item in request.headers.items() if item[0] != b"content-length")
        shape = self.shapes.get(key)
        if shape is not None:  # its headers passed these checks when it was kept
            request.state = key, shape, shape.headers
            return shape.op
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in key
                   if name == b"origin" or name.startswith(b"mcp-")}
        if not origin_allowed(headers.get("origin")):
            return None
        try:
            if decode_header_value(headers.get("mcp-method", "")) != "tools/call":
                return None  # another method: the transport's alone, its body unread here
            op = self.ops.get(decode_header_value(headers.get("mcp-name", "")))
        except HeaderValueError:
            return None
        request.state = key, None, headers
        return op

    def ready(self, request: Request) -> tuple[Any, bytes] | None:
        """``(the call's id, the cached result)``, or None: the transport answers."""
        if not request.complete:
            return None
        key, shape, headers = request.state
        body = request.body
        request_id = None if shape is None else shape.id_in(body)
        try:
            if shape is None or request_id is None:
                small = len(body) + sum(len(name) + len(value) for name, value in key) <= SHAPE_BYTES
                checked = self._check(request.op, headers, body, small)
                if checked is None:
                    return None
                shape, request_id = checked
                if shape.prefix:
                    if len(self.shapes) >= SHAPES:
                        self.shapes.clear()
                    self.shapes[key] = shape
            return self._cached(shape, request.actor, request_id)
        except (JsonRpcError, CommonroomError):
            return None  # the transport gives the answer it always gives
        except Exception:
            log.exception("a cached tool call failed; the transport answers")
            return None

    async def answer(self, request: Request, ticket: tuple[Any, bytes]) -> Answer:  # noqa: D102 - Door
        body = answer_bytes(*ticket)
        return 200, [_JSON, (b"content-length", str(len(body)).encode("latin-1"))], body

    def _check(self, op: Operation | None, headers: dict[str, str], body: bytes,
               small: bool) -> tuple[Shape, Any] | None:
        """Every check that depends on the request's bytes alone: ``(its shape, its id)``, or None.

        ``small``: the request may be kept as a shape (its template is
        looked for). Raises what the checks raise (the transport answers).
        """
        dispatcher = self.endpoint.dispatcher
        message = parse_message(body)
        request_id, params = message.get("id"), message.get("params")
        if request_id is None or message["method"] != "tools/call" or not isinstance(params, dict):
            return None
        required, optional = dispatcher.registry.name_params()
        check_request(message, headers, {**NAME_PARAMS, **required}, optional)
        if not dispatcher.params_valid("tools/call", params):
            return None
        tool, arguments, acked = dispatcher.tool_call(params, headers)
        if acked or tool.head_key is None or op is None or tool.name != op.name:  # an ACK may be a write
            return None
        if tool.validator is not None and not tool.validator.is_valid(arguments):
            return None
        prefix, suffix = template(body, message) if small else (b"", b"")
        return Shape(prefix, suffix, headers, params, op, tool, arguments), request_id

    def _cached(self, shape: Shape, actor: Any, request_id: Any) -> tuple[Any, bytes] | None:
        """The cached result of a checked call of ``actor``, when nothing would be piggybacked."""
        dispatcher, engine = self.endpoint.dispatcher, self.endpoint.engine
        tool = shape.tool
        key = None if tool.head_key is None else tool.head_key(engine, shape.arguments)
        encoded = None if key is None else dispatcher.cached((tool.name, key))
        if encoded is None or not dispatcher.quiet(actor):
            return None
        return request_id, encoded
