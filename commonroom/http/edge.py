"""The room's edge: what every request must be before any route runs, on every listener.

Issue 34 (docs/hardening.md, *What the room promises at its edges*). Every
request was parsed by gunicorn; :class:`Edge` then decides, once, before
the room's apps and their fast paths see it:

1. **Host** (:func:`host_refusal`): an HTTP/1.1 request without ``Host``,
   or with more than one, is 400 ``invalid_request`` (RFC 9112 §3.2); a
   request whose ``Host`` does not name this room *on the listener it
   arrived on* is **421** ``invalid_request`` with ``details.reason:
   "host"`` (HTTP's *Misdirected Request*: this server does not answer for
   that name; DNS rebinding protection). The names of a loopback listener
   (the session ingress, the owner port, the Unix socket) are
   :data:`LOOPBACK_NAMES`, any port; a listener a transport plugin opens
   answers to the names it gives (its own address) and ``commonroom``
   (:data:`BYTE_CLIENT_HOST`, the byte client's name, seed protocol.txt).
2. **Target** (:func:`target_refusal`): the request target must be a path
   as sent (origin form, starting with ``/``), with no percent-encoded
   ``/`` or ``\\`` (``%2F``, ``%5C``, any case): gunicorn decodes the
   path for the ASGI scope, so such a byte would become a separator the
   client did not send. Refused 400 ``invalid_request`` with
   ``details.reason: "path"``.
3. **nosniff**: every answer of both listeners carries
   ``X-Content-Type-Options: nosniff`` (:data:`NOSNIFF`), JSON errors and
   401s included; the worker's own answers made before the app
   (``commonroom.worker``) carry it too.

A refused request is answered with the seed's error envelope and the
connection closed (nothing of the request was read, so it cannot be kept);
nothing runs, nothing is counted, a console login code is not used up.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Iterable, Mapping

from ..errors import InvalidRequest
from ..protocol import BYTE_CLIENT_HOST
from ..wire import Rendered, send_error

__all__ = ["Edge", "LOOPBACK_NAMES", "NOSNIFF", "host_name", "host_refusal", "target_refusal"]

#: Host names a loopback listener answers to (any port).
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]", BYTE_CLIENT_HOST})
#: The header every answer carries.
NOSNIFF = (b"x-content-type-options", b"nosniff")
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
        if rest and not (rest.startswith(":") and rest[1:].isdigit()):
            return None
        return name
    name, colon, port = text.partition(":")
    if colon and not port.isdigit():
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
    if b"%" in raw:
        lowered = raw.lower()
        if any(encoded in lowered for encoded in _ENCODED_SEPARATORS):
            return InvalidRequest("a percent-encoded '/' or '\\' is not accepted in a path; "
                                  "send the path's separators as they are",
                                  details={"reason": "path"})
    return None


class Edge:
    """ASGI wrapper: the Host rule, the target rule and ``nosniff``, before the room's apps.

    ``app``: the room's ASGI app (``commonroom.http.app.RoomASGI``).
    ``listeners``: ``(address, port)`` of a listener a transport plugin
    opened → the Host names it answers to (``commonroom`` is added); any
    other listener answers to :data:`LOOPBACK_NAMES`. ``refused`` counts
    the requests refused here.
    """

    def __init__(self, app: Callable, listeners: Mapping[tuple[str, int], Iterable[str]] | None = None):
        self.app = app
        self.listeners = {tuple(key): frozenset(names) | {BYTE_CLIENT_HOST}
                          for key, names in (listeners or {}).items()}
        self.refused = 0

    def names(self, server: Any) -> frozenset[str]:
        """The Host names the listener of ``server`` (the scope's ``(address, port)``) answers to."""
        if self.listeners and isinstance(server, tuple) and len(server) >= 2:
            found = self.listeners.get((server[0], server[1]))
            if found is not None:
                return found
        return LOOPBACK_NAMES

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:  # noqa: D102 - ASGI
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        error = target_refusal(scope) or host_refusal(scope, self.names(scope.get("server")))
        if error is not None:
            self.refused += 1
            out = Rendered()
            send_error(out, error)
            await send({"type": "http.response.start", "status": out.status,
                        "headers": [*out.asgi_headers(), NOSNIFF, (b"connection", b"close")]})
            await send({"type": "http.response.body", "body": out.data})
            return

        async def send_nosniff(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":  # a new message: an app may reuse its own
                message = {**message, "headers": [*message.get("headers", ()), NOSNIFF]}
            await send(message)

        await self.app(scope, receive, send_nosniff)
