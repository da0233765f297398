"""The room's edge: what every request must be before any route runs, on every listener.

docs/hardening.md, *What the room promises at its edges*. Every
request was parsed by gunicorn; :class:`Edge` then decides, once, before
the room's apps and their fast paths see it:

1. **Host** (:func:`host_refusal`): an HTTP/1.1 request without ``Host``,
   or with more than one, is 400 ``invalid_request`` with ``details.reason:
   "host"`` (RFC 9112 §3.2; gunicorn's parser refuses a second ``Host``
   first, and the worker answers that refusal with this envelope:
   ``commonroom.worker``); a
   request whose ``Host`` does not name this room *on the listener it
   arrived on* is **421** ``invalid_request`` with ``details.reason:
   "host"`` (HTTP's *Misdirected Request*: this server does not answer for
   that name; DNS rebinding protection). Any port. A loopback TCP listener
   (the session ingress, the owner port) answers to the address it is
   bound to (``127.0.0.1``, ``[::1]``, another loopback address),
   ``localhost`` and ``commonroom`` (:data:`BYTE_CLIENT_HOST`, the byte
   client's name, seed protocol.txt); the Unix socket to
   :data:`LOOPBACK_NAMES`; a listener a transport plugin opens to the names
   the room gives it (its own address) and ``commonroom``.
2. **Target** (:func:`target_refusal`): the request target must be a path
   as sent (origin form, starting with ``/``), with no percent-encoded
   ``/`` or ``\\`` (``%2F``, ``%5C``, any case): gunicorn decodes the
   path for the ASGI scope, so such a byte would become a separator the
   client did not send; and no empty segment (``//``, which Falcon's
   router would skip, serving ``//workspace/room`` as ``/workspace/room``).
   Refused 400 ``invalid_request`` with ``details.reason: "path"``.
3. **nosniff**: every answer of both listeners carries
   ``X-Content-Type-Options: nosniff`` (:data:`NOSNIFF`), JSON errors and
   401s included; the worker's own answers made before the app
   (``commonroom.worker``) carry it too.

A refused request is answered with the seed's error envelope and the
connection closed (nothing of the request was read, so it cannot be kept);
nothing runs, nothing is counted, a console login code is not used up.

**An answer that says ``Connection: close`` closes.** gunicorn decides
keep-alive from the request alone and writes the app's ``connection``
header as it is, so a connection the answer announced closed would go on
serving what the client pipelined behind (which a client trusting the
header retries: a write done twice). Whatever app sent the header (the
refusals here, ``commonroom.bodyguard.BodyGuard`` for a body it did not
read), :class:`Edge` raises :class:`CloseConnection` once that answer is
complete: an exception after a complete response is where ASGI servers
close the connection (gunicorn does, logging it at debug level).

The room serves no WebSocket: a handshake is refused (gunicorn answers it
``403`` with no body and closes), whatever its path or ``Host``.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Awaitable, Callable, Iterable, Mapping

from ..errors import InvalidRequest
from ..protocol import BYTE_CLIENT_HOST
from ..wire import Rendered, send_error

__all__ = ["CloseConnection", "Edge", "LOOPBACK_NAMES", "NOSNIFF", "host_name", "host_refusal", "listener_names",
           "target_refusal"]

#: Host names a loopback listener answers to (any port).
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]", BYTE_CLIENT_HOST})
#: The header every answer carries.
NOSNIFF = (b"x-content-type-options", b"nosniff")
_CLOSE = (b"connection", b"close")
#: Percent-encodings of ``/`` and ``\`` (lower case; the target is lowered before the search).
_ENCODED_SEPARATORS = (b"%2f", b"%5c")
#: Longest ``Host`` value echoed in a refusal's details.
_ECHO = 200

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def host_name(value: bytes) -> str | None:
    """The host name of a ``Host`` value (lower case, port dropped), or None when it is not ``name[:port]``.

    ``[v6]`` keeps its brackets; a port must be digits; an empty value,
    a name with a space, or a bracket left open is None.
    """
    text = value.decode("latin-1").strip().lower()
    if not text or " " in text or "\t" in text:
        return None
    if text.startswith("["):
        end = text.find("]")
        if end == -1:
            return None
        name, rest = text[: end + 1], text[end + 1:]
        if rest and not (rest.startswith(":") and rest[1:].isascii() and rest[1:].isdigit()):
            return None
        return name
    name, colon, port = text.partition(":")
    if colon and not (port.isascii() and port.isdigit()):
        return None
    return name or None


def host_refusal(scope: Mapping[str, Any], names: frozenset[str]) -> InvalidRequest | None:
    """Why ``scope``'s ``Host`` is refused on a listener answering to ``names``, or None when it names the room.

    Raises nothing; returns the error to answer: 400 when an HTTP/1.1
    request has no ``Host`` or several, 421 when the one given names
    another host (an empty one, or none in HTTP/1.0, included).
    """
    found: list[bytes] = [value for key, value in scope.get("headers") or () if key == b"host"]
    if len(found) > 1 or (not found and scope.get("http_version") == "1.1"):
        what = "more than one Host header" if found else "no Host header"
        return InvalidRequest(f"an HTTP/1.1 request needs exactly one Host header; this one has {what}",
                              details={"reason": "host", "host_headers": len(found)})
    given = found[0] if found else b""
    name = host_name(given)
    if name is not None and name in names:
        return None
    shown = given.decode("latin-1")[:_ECHO]
    return InvalidRequest(f"Host {shown!r} does not name this room on this listener; "
                          f"use one of {', '.join(sorted(names))}",
                          details={"reason": "host", "host": shown, "served": sorted(names)}, status=421)


def target_refusal(scope: Mapping[str, Any]) -> InvalidRequest | None:
    """Why ``scope``'s request target is refused (400), or None when its path is taken as sent."""
    raw = scope.get("raw_path") or scope.get("path", "").encode("utf-8", "surrogateescape")
    if not raw.startswith(b"/"):
        return InvalidRequest("the request target must be a path starting with '/'",
                              details={"reason": "path"})
    if b"//" in raw:  # an empty segment: Falcon's router would skip it and serve another spelling of a route
        return InvalidRequest("an empty path segment ('//') is not accepted; send the path with one '/' "
                              "between its segments", details={"reason": "path"})
    if b"%" in raw:
        lowered = raw.lower()
        if any(encoded in lowered for encoded in _ENCODED_SEPARATORS):
            return InvalidRequest("a percent-encoded '/' or '\\' is not accepted in a path; "
                                  "send the path's separators as they are",
                                  details={"reason": "path"})
    return None


class CloseConnection(Exception):
    """Raised by :class:`Edge` after a complete answer that announced ``Connection: close``, so that the
    server closes the connection (see the module docstring)."""


def listener_names(server: Any) -> frozenset[str]:
    """The Host names of a room listener that is not a transport plugin's, by the scope's ``server``.

    A TCP listener bound to a loopback address: that address (``[v6]``
    in brackets), ``localhost`` and ``commonroom``; a non-loopback one
    (none but a plugin's exists): ``commonroom`` only; anything else (the
    Unix socket): :data:`LOOPBACK_NAMES`.
    """
    if not (isinstance(server, tuple) and len(server) >= 2 and isinstance(server[0], str)
            and isinstance(server[1], int)):
        return LOOPBACK_NAMES
    try:
        address = ipaddress.ip_address(server[0].split("%", 1)[0])
    except ValueError:
        return LOOPBACK_NAMES
    if not address.is_loopback:
        return frozenset({BYTE_CLIENT_HOST})
    bound = f"[{address.compressed}]" if address.version == 6 else address.compressed
    return frozenset({bound, "localhost", BYTE_CLIENT_HOST})


class Edge:
    """ASGI wrapper: the Host rule, the target rule and ``nosniff``, before the room's apps.

    ``app``: the room's ASGI app (``commonroom.http.app.RoomASGI``).
    ``listeners``: ``(address, port)`` of a listener a transport plugin
    opened → the Host names it answers to (``commonroom`` is added); any
    other listener answers to :func:`listener_names`. ``refused`` counts
    the requests refused here.
    """

    def __init__(self, app: Callable, listeners: Mapping[tuple[str, int], Iterable[str]] | None = None):
        self.app = app
        self.listeners: dict[Any, frozenset[str]] = {
            tuple(key): frozenset(names) | {BYTE_CLIENT_HOST} for key, names in (listeners or {}).items()}
        self.refused = 0

    def names(self, server: Any) -> frozenset[str]:
        """The Host names the listener of ``server`` (the scope's ``(address, port)``) answers to."""
        key = tuple(server[:2]) if isinstance(server, (tuple, list)) else server
        found = self.listeners.get(key)
        if found is None:
            found = self.listeners[key] = listener_names(key)  # a room has a handful of listeners
        return found

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:  # noqa: D102 - ASGI
        kind = scope["type"]
        if kind == "websocket":
            self.refused += 1
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008})  # before accept: the server's 403
            return
        if kind != "http":
            await self.app(scope, receive, send)
            return
        error = target_refusal(scope) or host_refusal(scope, self.names(scope.get("server")))
        if error is not None:
            self.refused += 1
            out = Rendered()
            send_error(out, error)
            await send({"type": "http.response.start", "status": out.status,
                        "headers": [*out.asgi_headers(), NOSNIFF, _CLOSE]})
            await send({"type": "http.response.body", "body": out.data})
            raise CloseConnection(f"refused at the edge: {error.code} {error.status}")
        closing = False

        async def send_nosniff(message: dict[str, Any]) -> None:
            nonlocal closing
            if message["type"] == "http.response.start":  # a new message: an app may reuse its own
                headers = message.get("headers", ())
                closing = _CLOSE in headers
                message = {**message, "headers": [*headers, NOSNIFF]}
            await send(message)

        await self.app(scope, receive, send_nosniff)
        if closing:
            raise CloseConnection("the answer said Connection: close")
