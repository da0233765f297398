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

from .errors import InvalidRequest, TransportUnavailable

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
    if listener.get("gone_since"):
        raise TransportUnavailable(
            f"the room's {kind} address {listener.get('address')} is gone from this machine (since "
            f"{listener['gone_since']}): an invitation naming it would not reach the room. The room listens "
            "again when the address comes back; or restart it on the new one (ce serve FILE --transport "
            f"{kind} --address NEW)",
            details={"transport": kind, "address": listener.get("address"), "gone_since": listener["gone_since"]},
        )
    return impl.hint({k: v for k, v in listener.items() if k != "gone_since"})


def invitation_address(kind: str, hint: dict[str, Any], address: str, ingress: dict[str, Any] | None) -> str:
    """The name an invitation's ``hint`` carries instead of its listener's address (``ce invite --address``).

    It must be a name the room answers to: the listener's own address or
    one of the room's allowed Host names (``ce serve --allow-host``,
    recorded as the ingress's ``allowed_hosts``), compared in lower case
    without a trailing dot. Raises ``InvalidRequest`` for a built-in
    transport or any other name.
    """
    if kind in BUILTIN:
        raise InvalidRequest(f"an address in the invitation belongs to a plugin transport, not {kind}",
                             details={"transport": kind, "address": address})
    name = address.strip().lower().rstrip(".")
    allowed = sorted({str(hint["address"]).lower(), *((ingress or {}).get("allowed_hosts") or ())})
    if name not in allowed:
        raise InvalidRequest(f"the room does not answer to {address!r}; allow it with ce serve --allow-host "
                             f"{name} (it answers to {', '.join(allowed)})",
                             details={"transport": kind, "address": address, "allowed": allowed})
    return name
