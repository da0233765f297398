"""Transports: how a participant dials the room (seed protocol.txt, Invitation).

``loopback`` (TCP on 127.0.0.1, the default) and ``local`` (a Unix socket
beside the document) are built in. Any other type, ``tailcat`` among them, is
a plugin found through the ``commonroom.transports`` entry-point group; when
none is installed it is ``transport_unavailable`` (503).

A plugin is a callable ``plugin(room_hint: dict) -> dict`` returning the hint
to put in invitations, and may expose ``dial(hint) -> socket``.
"""

from __future__ import annotations

import socket
from typing import Any

from .errors import TransportUnavailable

BUILTIN = ("loopback", "local")
ENTRY_POINT_GROUP = "commonroom.transports"


def is_loopback(address: str) -> bool:
    """True for ``localhost`` and addresses in 127.0.0.0/8 or ``::1``."""
    import ipaddress

    if address.strip().lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False


def plugin(kind: str) -> Any:
    """The plugin object for ``kind``; ``TransportUnavailable`` if absent."""
    from importlib.metadata import entry_points  # only a plugin transport pays for it

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == kind:
            return ep.load()
    raise TransportUnavailable(
        f"the {kind!r} transport is not available here (no plugin installed)",
        details={"transport": kind, "installed": sorted(BUILTIN + tuple(e.name for e in entry_points(group=ENTRY_POINT_GROUP)))},
    )


def hint(kind: str, ingress: dict[str, Any] | None) -> dict[str, Any]:
    """The transport hint for ``kind`` given the room's ingress listener.

    ``ingress`` is ``{"host": str, "port": int}`` (and ``"socket": path``
    when the room listens on a Unix socket). Raises ``TransportUnavailable``
    when the room does not listen that way or no plugin exists.
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
    return plugin(kind)(dict(ingress or {}))


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
    impl = plugin(str(kind))
    if not hasattr(impl, "dial"):
        raise TransportUnavailable(f"the {kind!r} plugin cannot dial", details={"transport": kind})
    return impl.dial(transport)
