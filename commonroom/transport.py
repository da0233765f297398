"""Transports: how a participant dials the room (seed protocol.txt, Invitation).

``loopback`` (TCP on 127.0.0.1, the default) and ``local`` (a Unix socket
beside the document) are built in. Any other type, ``tailcat`` among them, is
a plugin found through the ``commonroom.transports`` entry-point group; when
none is installed it is ``transport_unavailable`` (503).

A plugin (the object its entry point names; docs/transport-plugins.md) has
three methods, each raising :class:`~commonroom.errors.TransportUnavailable`
to refuse:

- ``listen(address: str | None, port: int) -> (address, port)``: where
  ``ce serve FILE --transport NAME [--address ADDR]`` opens the plugin's
  extra session ingress (the same app and rules as the loopback ingress).
  It runs before the room starts; a refusal stops the start.
- ``hint(listener: dict) -> dict``: the transport hint (``transport.json``)
  that invitations carry, given the listener the room opened
  (``{"address": str, "port": int}``, the port the one bound).
- ``dial(hint: dict, timeout: float) -> socket.socket``: a connected stream
  socket to the room the hint names (``ce join`` and every later ``ce``
  command of the session).

Whatever a plugin answers, the room itself opens no plugin listener on a
loopback, wildcard or multicast address (:func:`check_listener`) and never
moves the owner port off 127.0.0.1.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any, Protocol

from .errors import TransportUnavailable

BUILTIN = ("loopback", "local")
ENTRY_POINT_GROUP = "commonroom.transports"


class TransportPlugin(Protocol):
    """What an entry point of the ``commonroom.transports`` group names (see the module docstring)."""

    def listen(self, address: str | None, port: int) -> tuple[str, int]:
        """The ``(address, port)`` of the extra session ingress; ``TransportUnavailable`` to refuse."""

    def hint(self, listener: dict[str, Any]) -> dict[str, Any]:
        """The invitation's transport hint for the opened ``listener``; ``TransportUnavailable`` to refuse."""

    def dial(self, hint: dict[str, Any], timeout: float) -> socket.socket:
        """A connected stream socket to the room ``hint`` names; ``TransportUnavailable`` when it cannot."""


def is_loopback(address: str) -> bool:
    """True for ``localhost`` and addresses in 127.0.0.0/8 or ``::1``."""
    if address.strip().lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False


def installed() -> list[str]:
    """Every transport type this machine knows: the built-in ones and the installed plugins, sorted."""
    from importlib.metadata import entry_points

    return sorted(BUILTIN + tuple(e.name for e in entry_points(group=ENTRY_POINT_GROUP)))


def plugin(kind: str) -> TransportPlugin:
    """The plugin object for ``kind``; ``TransportUnavailable`` if absent."""
    from importlib.metadata import entry_points  # only a plugin transport pays for it

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == kind:
            loaded: TransportPlugin = ep.load()
            return loaded
    raise TransportUnavailable(
        f"the {kind!r} transport is not available here (no plugin installed)",
        details={"transport": kind, "installed": installed()},
    )


def check_listener(kind: str, address: str, port: int) -> str:
    """``address`` in its canonical text when a plugin listener may bind it.

    A plugin's extra ingress listens on one specific unicast address of
    this machine: never a loopback address (that is the loopback
    transport's), a wildcard (``0.0.0.0``, ``::``: every interface, the
    LAN and the public ones among them) or a multicast one; the port is
    1 to 65535 or 0 (a free one). Raises ``TransportUnavailable``.
    """
    details = {"transport": kind, "address": address, "port": port}
    try:
        ip = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        raise TransportUnavailable(f"the {kind} transport must listen on an IP address, not {address!r}",
                                   details=details) from None
    if ip.is_loopback or ip.is_unspecified or ip.is_multicast:
        what = "a loopback" if ip.is_loopback else "a wildcard" if ip.is_unspecified else "a multicast"
        raise TransportUnavailable(f"the {kind} transport refuses {address}: {what} address is not an "
                                   "overlay address", details=details)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise TransportUnavailable(f"the {kind} transport needs a port from 0 to 65535, not {port!r}",
                                   details=details)
    return str(ip)


def hint(kind: str, ingress: dict[str, Any] | None) -> dict[str, Any]:
    """The transport hint for ``kind`` given the room's ingress listener.

    ``ingress`` is ``{"host": str, "port": int}`` (and ``"socket": path``
    when the room listens on a Unix socket, ``"transports": {name:
    {"address", "port"}}`` for each plugin listener). Raises
    ``TransportUnavailable`` when the room does not listen that way or no
    plugin exists.
    """
    if kind == "loopback":
        if not ingress or not ingress.get("port"):
            raise TransportUnavailable(
                "the room has no loopback ingress yet; start it with ce serve",
                details={"transport": kind},
            )
        return {"type": "loopback", "address": ingress.get("host", "127.0.0.1"),
                "port": int(ingress["port"]), "encrypted": False, "mode": "private"}
    if kind == "local":
        if not ingress or not ingress.get("socket"):
            raise TransportUnavailable(
                "the room does not listen on a Unix socket; start it with ce serve --socket",
                details={"transport": kind},
            )
        return {"type": "local", "address": ingress["socket"], "port": None,
                "encrypted": False, "mode": "local"}
    impl = plugin(kind)
    listener = ((ingress or {}).get("transports") or {}).get(kind)
    if not listener:
        raise TransportUnavailable(
            f"the room does not listen for the {kind} transport; start it with ce serve FILE --transport {kind}",
            details={"transport": kind},
        )
    return impl.hint(dict(listener))


def dial(transport: dict[str, Any], timeout: float = 10.0) -> socket.socket:
    """An open stream socket to the room the hint names.

    Raises ``TransportUnavailable`` when it cannot connect (names the address).
    """
    kind = transport.get("type")
    try:
        if kind == "loopback":
            address, port = transport.get("address"), transport.get("port")
            if not isinstance(address, str) or not is_loopback(address):
                raise TransportUnavailable(
                    f"a loopback transport must name a loopback address, not {address!r}",
                    details={"transport": kind, "address": address},
                )
            if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
                raise TransportUnavailable(f"a loopback transport must name a port from 1 to 65535, not {port!r}",
                                           details={"transport": kind, "port": port})
            return socket.create_connection((address, port), timeout=timeout)
        if kind == "local":
            path = transport.get("address")
            if not isinstance(path, str):
                raise TransportUnavailable(f"a local transport must name a socket path, not {path!r}",
                                           details={"transport": kind, "address": path})
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout)
            sock.connect(path)
            return sock
    except OSError as exc:
        where = f"{transport.get('address')}:{transport.get('port')}" if kind == "loopback" else transport.get("address")
        raise TransportUnavailable(
            f"cannot reach the room at {where}: {exc.strerror or exc}",
            details={"transport": kind, "address": transport.get("address"), "port": transport.get("port")},
        ) from None
    return plugin(str(kind)).dial(transport, timeout)
