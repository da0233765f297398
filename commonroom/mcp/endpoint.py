"""``/mcp`` on the session ingress: the Streamable HTTP transport (Falcon ASGI).

``POST /mcp`` (one JSON-RPC message per body), in this order:

1. ``Host`` was checked before any route ran (``commonroom.http.edge``:
   421 for a name this listener does not answer to);
2. ``Origin``, when present, must be http(s)://127.0.0.1 or localhost
   (any port) → else 403;
3. the body: too large → 413 / -32600; not JSON → 400 / -32700; not one
   JSON-RPC request or notification (batch, response, bad id) → 400 / -32600;
4. the bearer: missing or invalid → 401 with ``WWW-Authenticate: Bearer``
   and a JSON-RPC error (code -31000, data = the HTTP error object); past
   the bearer's rate limit → 429 (-31000) once the message is readable
   (the edge decided both, ``commonroom.http.edge``; they are answered here);
5. a notification (no id, or null) → 202 and an empty body;
   ``notifications/cancelled`` whose ``params.requestId`` names a stream this
   session opened with a POST (``subscriptions/listen``) ends that stream;
6. :func:`~commonroom.mcp.headers.check_request` (400 / -32020, -32602, -32022);
7. the method: unknown → 404 / -32601; else the dispatcher's result or
   JSON-RPC error with its status (docs/mcp.md, "Error statuses").

A method answered with a :class:`~commonroom.mcp.stream.HubStream` is
written as ``text/event-stream`` on the room's stream primitive
(``commonroom.live.stream``), keyed by the session and request id.

``GET /mcp`` is the notification stream (``stream.py``) only with Accept
``text/event-stream``, a valid bearer and ``MCP-Protocol-Version:
2026-07-28``; any other GET, and DELETE, is 405. Other methods are 405 too.
"""

from __future__ import annotations

import logging
from typing import Any, Mapping
from urllib.parse import urlsplit

import falcon

from .. import jsontext
from ..errors import CommonroomError, LimitExceeded
from ..live.stream import Streams, respond
from ..protocol import MAX_BODY_BYTES
from ..checked import BEARER, RATE, Checked, checked_of
from ..wire import read_body, retry_after
from .dispatch import ROOM_ERROR, Dispatcher, Encoded, dumps
from .headers import NAME_PARAMS, VERSION_HEADER, check_request, decode_value
from .jsonrpc import (
    PROTOCOL_VERSION,
    JsonRpcError,
    error_response,
    internal_error,
    invalid_request,
    is_request_id,
    method_not_found,
    parse_error,
    result_response,
)
from .registry import Stream
from .stream import HubStream, notification_accept, notification_encoder, sse_response, stream_key

log = logging.getLogger("commonroom.mcp")

#: Origin hosts accepted (seed: 127.0.0.1 or localhost).
ORIGIN_HOSTS = frozenset({"127.0.0.1", "localhost"})


def origin_allowed(header: str | None) -> bool:
    """True when there is no ``Origin`` or it is http(s)://127.0.0.1|localhost[:port]."""
    if header is None:
        return True
    try:
        parts = urlsplit(header.strip())
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and (parts.hostname or "") in ORIGIN_HOSTS and port_ok \
        and not parts.path.strip("/") and not parts.query


def lower_headers(req: falcon.asgi.Request) -> dict[str, str]:
    """The request headers with lower-cased names."""
    return {name.lower(): value for name, value in req.headers.items()}


def _send(resp: falcon.asgi.Response, body: dict[str, Any] | None, status: int) -> None:
    resp.status = status
    if body is None:
        resp.data = b""
        return
    resp.content_type = "application/json"
    resp.data = dumps(body).encode("utf-8")


def _forbidden(resp: falcon.asgi.Response, reason: str) -> None:
    _send(resp, error_response(None, JsonRpcError(-32600, "Forbidden", {"reason": reason})), 403)


def answer_bytes(request_id: Any, result: bytes) -> bytes:
    """The JSON-RPC response carrying an encoded ``result``, in one copy (``a + b + c`` copies it twice)."""
    return b"".join((b'{"jsonrpc":"2.0","id":', dumps(request_id).encode("utf-8"), b',"result":', result, b"}"))


class NullId(JsonRpcError):
    """A request whose id is null: MCP forbids it (it is not a notification either)."""

    def __init__(self) -> None:
        super().__init__(-32600, "Invalid Request", status=400, data=
                         {"reason": "a request id is a string or an integer, never null; "
                                    "a notification has no id member"})


def parse_message(raw: bytes) -> dict[str, Any]:
    """One JSON-RPC request or notification from a POST body (transport step 3).

    Raises -32700 (not JSON) or -32600 (a batch, a response, a bad method,
    params or id), each with HTTP 400; :class:`NullId` for ``"id": null``.
    """
    try:
        message = jsontext.loads(raw)
    except jsontext.NotJson as exc:
        raise parse_error(str(exc)) from None
    if isinstance(message, list):
        raise invalid_request("one JSON-RPC message per body; batches are not accepted")
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise invalid_request('not a JSON-RPC 2.0 message (jsonrpc must be "2.0")')
    if "method" not in message:
        raise invalid_request("clients send requests and notifications only, not responses")
    if not isinstance(message["method"], str) or not message["method"]:
        raise invalid_request("method must be a non-empty string")
    if "params" in message and not isinstance(message["params"], dict):
        raise invalid_request("params must be an object (MCP names its parameters)")
    if "id" in message and message["id"] is None:
        raise NullId()
    if message.get("id") is not None and not is_request_id(message["id"]):
        raise invalid_request("id must be a string or an integer")
    return message


class McpEndpoint:
    """The ``/mcp`` Falcon resource. ``public`` and ``answers_refusals``: the room's edge checks its bearer
    and counts it (:class:`~commonroom.checked.Checked`), and this answers those refusals in JSON-RPC, in
    the transport's order."""

    public = True
    answers_refusals = True
    #: ``Allow`` of every 405 it answers (DELETE is answered, always 405).
    allow = ("GET", "POST")
    #: Any other method is answered here (a JSON-RPC 405), not by the app.
    handles_any_method = True

    def __init__(self, engine: Any, dispatcher: Dispatcher, subscriptions: Any = None, hub: Any = None,
                 *, heartbeat_seconds: float = 15.0,
                 streams: Streams | None = None):
        self.engine = engine
        self.dispatcher = dispatcher
        self.subscriptions = subscriptions
        self.hub = hub
        self.heartbeat_seconds = heartbeat_seconds
        if streams is None and hub is not None:
            streams = Streams(hub, engine, heartbeat_seconds=heartbeat_seconds)
        self.streams = streams

    def _guard(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> bool:
        if not origin_allowed(req.get_header("Origin")):
            _forbidden(resp, "Origin must be 127.0.0.1 or localhost")
            return False
        return True

    async def on_post(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        """One JSON-RPC message → one JSON answer (or 202)."""
        if not self._guard(req, resp):
            return
        message: dict[str, Any] | None = None
        try:
            unreadable: JsonRpcError | None = None
            try:
                message = await self._read(req)
            except JsonRpcError as exc:
                if exc.status == 413:
                    raise
                unreadable = exc  # answered after authentication: a missing bearer is 401 first
            request_id = message.get("id") if message else None
            checked = checked_of(req.scope)
            refusal = checked.refused(BEARER)
            if refusal is not None:
                if not isinstance(refusal, CommonroomError):
                    raise refusal  # a sidecar that could not answer: the app's 500
                body = error_response(request_id, JsonRpcError(ROOM_ERROR, refusal.message, refusal.to_dict()))
                _send(resp, body, 401)
                resp.set_header("WWW-Authenticate",
                                'Bearer realm="commonroom"' + (', error="invalid_token"' if checked.token_given else ""))
                return
            actor = checked.actor
            if unreadable is not None or message is None:
                raise unreadable or invalid_request("no message")
            if not self._counted(resp, request_id, checked):
                return
            if request_id is None:
                self._notified(message, actor)
                _send(resp, None, 202)
                return
            headers = lower_headers(req)
            required, optional = self.dispatcher.registry.name_params()
            check_request(message, headers, {**NAME_PARAMS, **required}, optional)
            if not self.dispatcher.knows(message["method"]):
                raise method_not_found(message["method"])
            result = await self.dispatcher.handle(message, actor, headers)
        except JsonRpcError as exc:
            if isinstance(exc, NullId):  # the id it sent, null, is the one it gets back
                _send(resp, {"jsonrpc": "2.0", "id": None, "error": exc.to_dict()}, exc.status)
            else:
                _send(resp, error_response(message.get("id") if message else None, exc), exc.status)
            return
        if isinstance(result, HubStream):
            self._stream(req, resp, result, actor, request_id)
            return
        if isinstance(result, Stream):
            sse_response(resp, result, req.scope)
            return
        if isinstance(result, Encoded):
            resp.status = 200
            resp.content_type = "application/json"
            # one copy of the (often large) encoded result: a + b + c would copy it twice
            resp.data = answer_bytes(request_id, result.data)
            return
        _send(resp, result_response(request_id, result), 200)

    def _notified(self, message: dict[str, Any], actor: Any) -> None:
        """Act on a notification: ``notifications/cancelled`` ends the caller's stream of that request."""
        if message.get("method") != "notifications/cancelled" or self.streams is None:
            return
        params = message.get("params")
        if isinstance(params, dict) and is_request_id(params.get("requestId")):
            self.streams.end(stream_key(actor.session_id, params["requestId"]))

    def _stream(self, req: falcon.asgi.Request, resp: falcon.asgi.Response, result: HubStream, actor: Any,
                request_id: Any) -> None:
        """Answer with ``result`` opened on the room's streams under (session, request id)."""
        if self.streams is None:
            error = internal_error()
            _send(resp, error_response(request_id, error), error.status)
            return
        try:
            live = self.streams.open(result.encoder, session_id=actor.session_id, expires_at=actor.expires_at,
                                     accept=result.accept, key=stream_key(actor.session_id, request_id))
        except ValueError:
            error = invalid_request("a stream answering this request id is already open")
            _send(resp, error_response(request_id, error), error.status)
            return
        respond(req, resp, live, content_type="text/event-stream")

    @staticmethod
    def _counted(resp: falcon.asgi.Response, request_id: Any, checked: Checked) -> bool:
        """False (429 sent) when the edge's one rate count refused the request (past its bearer's limit)."""
        exc = checked.refused(RATE)
        if isinstance(exc, CommonroomError):
            _send(resp, error_response(request_id, JsonRpcError(ROOM_ERROR, exc.message, exc.to_dict())),
                  exc.status)
            retry_after(resp, exc)
            return False
        return True

    async def _read(self, req: falcon.asgi.Request) -> dict[str, Any]:
        try:
            raw = await read_body(req)
        except LimitExceeded as exc:
            # the same error object a 429 carries: a room refusal (-31000) with limit_exceeded as data
            raise JsonRpcError(ROOM_ERROR, exc.message, exc.to_dict(), status=413) from None
        return parse_message(raw)

    async def on_get(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        """The notification stream, or 405."""
        if not self._guard(req, resp):
            return
        accept = req.get_header("Accept") or ""
        version = req.get_header(VERSION_HEADER)
        checked = checked_of(req.scope)
        refusal = checked.refused(BEARER)
        if refusal is not None and not isinstance(refusal, CommonroomError):
            raise refusal  # a sidecar that could not answer: the app's 500
        actor = None if refusal is not None else checked.actor
        try:
            version = decode_value(VERSION_HEADER, version) if version is not None else None
        except JsonRpcError:
            actor = None
        if (actor is None or "text/event-stream" not in accept.lower() or version != PROTOCOL_VERSION
                or self.streams is None or self.subscriptions is None):
            self._not_allowed(resp)
            return
        if not self._counted(resp, None, checked):
            return
        stream = self.streams.open(notification_encoder(self.subscriptions, actor.session_id),
                                   session_id=actor.session_id, expires_at=actor.expires_at,
                                   accept=notification_accept(self.subscriptions, actor.session_id))
        respond(req, resp, stream, content_type="text/event-stream")

    async def on_delete(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        """No sessions to end: 405."""
        self._not_allowed(resp)

    async def on_put(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:
        """405 (as every method but GET and POST)."""
        self._not_allowed(resp)

    on_patch = on_options = on_head = on_put

    @staticmethod
    def _not_allowed(resp: falcon.asgi.Response) -> None:
        _send(resp, error_response(None, JsonRpcError(-32600, "Method Not Allowed",
                                                      {"reason": "GET /mcp needs Accept: text/event-stream, "
                                                                 "a valid bearer and MCP-Protocol-Version "
                                                                 f"{PROTOCOL_VERSION}; DELETE is not used"})), 405)
        resp.set_header("Allow", "GET, POST")
