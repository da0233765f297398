"""Transports: how a participant dials the room (seed protocol.txt, Invitation).

``loopback`` (TCP on 127.0.0.1, the default) and ``local`` (a Unix socket
beside the document) are built in. Any other type, ``tailcat`` among them, is
a plugin found through the ``commonroom.transports`` entry-point group; when
none is installed it is ``transport_unavailable`` (503).

A plugin (the object its entry point names; docs/transport-plugins.md) has
three methods, each raising :class:`~commonroom.errors.TransportUnavailable`
to refuse:

- ``listen(address: str | None, port: int) -> (address, port, interface)``:
  where ``ce serve FILE --transport NAME [--address ADDR]`` opens the
  plugin's extra session ingress (the same app and rules as the loopback
  ingress) and the name of the network interface the room binds it to
  (``SO_BINDTODEVICE``: a connection arriving on any other interface finds
  no listener). It runs before the room starts; a refusal stops the start.
- ``hint(listener: dict) -> dict``: the transport hint (``transport.json``)
  that invitations carry, given the listener the room opened
  (``{"address": str, "port": int}``, the port the one bound).
- ``dial(hint: dict, timeout: float) -> socket.socket``: a connected stream
  socket to the room the hint names (``ce join`` and every later ``ce``
  command of the session).

Whatever a plugin answers, the room itself opens no plugin listener on a
loopback, wildcard or multicast address (:func:`check_listener`) and never
moves the owner port off 127.0.0.1.

The plugin interface, the lookup and the hint an invitation carries are in
:mod:`commonroom.transport_hints` (the engine builds invitations with it and
imports nothing of this module, whose :func:`dial` is the client's).
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

from .errors import TransportUnavailable
from .transport_hints import plugin

def is_loopback(address: str) -> bool:
    """True for ``localhost`` and addresses in 127.0.0.0/8 or ``::1``."""
    if address.strip().lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False


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
