"""The room's Host and path rules: which names each listener answers to, which targets are paths.

docs/hardening.md, *What the room promises at its edges*. The edge
(:mod:`commonroom.http.edge`) applies them first, to every request on every
listener:

1. **Host** (:func:`host_refusal`): an HTTP/1.1 request without ``Host``,
   or with more than one, is 400 ``invalid_request`` with ``details.reason:
   "host"`` (RFC 9112 §3.2; gunicorn's parser refuses a second ``Host``
   first, and the worker answers that refusal with this envelope:
   ``commonroom.worker``); a request whose ``Host`` does not name this room
   *on the listener it arrived on* is **421** ``invalid_request`` with
   ``details.reason: "host"`` (HTTP's *Misdirected Request*: this server
   does not answer for that name; DNS rebinding protection). Any port. The
   names are data (:class:`HostNames`): a loopback TCP listener (the
   session ingress, the owner port) answers to the address it is bound to
   (``127.0.0.1``, ``[::1]``, another loopback address), ``localhost`` and
   ``commonroom`` (:data:`BYTE_CLIENT_HOST`, the byte client's name, seed
   protocol.txt); the Unix socket to :data:`LOOPBACK_NAMES`; a listener a
   transport plugin opens to the names the room gives it (its own address)
   and ``commonroom``; every listener also to the names an operator adds
   (``HostNames.extra``).
2. **Target** (:func:`target_refusal`): the request target must be a path
   as sent (origin form, starting with ``/``), with no percent-encoded
   ``/`` or ``\\`` (``%2F``, ``%5C``, any case): gunicorn decodes the
   path for the ASGI scope, so such a byte would become a separator the
   client did not send; and no empty segment (``//``, which Falcon's
   router would skip, serving ``//workspace/room`` as ``/workspace/room``).
   Refused 400 ``invalid_request`` with ``details.reason: "path"``.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Iterable, Mapping

from ..errors import InvalidRequest
from ..protocol import BYTE_CLIENT_HOST

__all__ = ["HostNames", "LOOPBACK_NAMES", "host_name", "host_refusal", "listener_names", "target_refusal"]

#: Host names a loopback listener answers to (any port).
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]", BYTE_CLIENT_HOST})
#: Percent-encodings of ``/`` and ``\`` (lower case; the target is lowered before the search).
_ENCODED_SEPARATORS = (b"%2f", b"%5c")
#: Longest ``Host`` value echoed in a refusal's details.
_ECHO = 200


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


def host_refusal(found: list[bytes], http_version: str | None, names: frozenset[str]) -> InvalidRequest | None:
    """Why a request with the ``Host`` values ``found`` is refused on a listener answering to ``names``, or None
    when it names the room.

    Raises nothing; returns the error to answer: 400 when an HTTP/1.1
    request has no ``Host`` or several, 421 when the one given names
    another host (an empty one, or none in HTTP/1.0, included).
    """
    if len(found) > 1 or (not found and http_version == "1.1"):
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


class HostNames:
    """The Host names each listener answers to, as data.

    ``listeners``: ``(address, port)`` of a listener a transport plugin
    opened → the names it answers to (``commonroom`` is added); any other
    listener answers to :func:`listener_names`. ``extra``: names every
    listener also answers to (an operator's own names for the room).
    """

    def __init__(self, listeners: Mapping[tuple[str, int], Iterable[str]] | None = None,
                 extra: Iterable[str] = ()):
        self.extra = frozenset(name.lower() for name in extra)
        self.listeners: dict[Any, frozenset[str]] = {
            tuple(key): frozenset(names) | {BYTE_CLIENT_HOST} | self.extra
            for key, names in (listeners or {}).items()}

    def of(self, server: Any) -> frozenset[str]:
        """The Host names the listener of ``server`` (the scope's ``(address, port)``) answers to."""
        key = tuple(server[:2]) if isinstance(server, (tuple, list)) else server
        found = self.listeners.get(key)
        if found is None:  # a room has a handful of listeners: each is worked out once
            found = self.listeners[key] = listener_names(key) | self.extra
        return found
