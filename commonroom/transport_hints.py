"""Transport types and the hint an invitation carries (seed protocol.txt, Invitation).

``loopback`` and ``local`` are built in; any other type is a plugin found
through the ``commonroom.transports`` entry-point group (the interface:
:class:`TransportPlugin`, described in :mod:`commonroom.transport`, which
also holds the client's :func:`~commonroom.transport.dial` and the room's
listener check). The engine builds an invitation's hint with :func:`hint`;
this module imports neither the client nor a room process.
"""

from __future__ import annotations

import socket
from typing import Any, Protocol

from .errors import TransportUnavailable

BUILTIN = ("loopback", "local")
ENTRY_POINT_GROUP = "commonroom.transports"


class TransportPlugin(Protocol):
    """What an entry point of the ``commonroom.transports`` group names (see the module docstring)."""

    def listen(self, address: str | None, port: int) -> tuple[str, int, str]:
        """``(address, port, interface)`` of the extra session ingress; ``TransportUnavailable`` to refuse.

        ``interface``: the name of the network interface (``wg0``,
        ``tailscale0``) the room binds the listener to; connections arriving
        on any other interface are refused by the kernel.
        """

    def hint(self, listener: dict[str, Any]) -> dict[str, Any]:
        """The invitation's transport hint for the opened ``listener``; ``TransportUnavailable`` to refuse."""

    def dial(self, hint: dict[str, Any], timeout: float) -> socket.socket:
        """A connected stream socket to the room ``hint`` names; ``TransportUnavailable`` when it cannot."""


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
