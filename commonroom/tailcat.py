"""The ``tailcat`` transport: the room on an encrypted overlay (a tailnet or plain WireGuard).

A transport plugin (:mod:`commonroom.transport`) registered in the
``commonroom.transports`` entry-point group by this project's
``pyproject.toml``, exactly as a third-party plugin would be; the room has
no special case for it. It invents no security of its own: the overlay
(WireGuard, which Tailscale and Headscale also use) encrypts and
authenticates every packet between its members, and only they can route to
an overlay address. Hence the hint ``{"type": "tailcat", "address",
"port", "encrypted": true, "mode": "private"}``.

How an interface is recognised as an overlay (Linux; ``ip -j -d addr``,
iproute2): its link kind is ``wireguard`` (the kernel module), or it is a
``tun`` device that is either named ``tailscale*`` (tailscaled's device) or
has a WireGuard UAPI socket ``/var/run/wireguard/<name>.sock`` (a userspace
WireGuard: ``wireguard-go``, ``boringtun``). Anything else (``eth*``,
``wlan*``, bridges, veth, other tun/tap devices) is not an overlay, nor is
any loopback or wildcard address.

- :meth:`Tailcat.listen` (``ce serve FILE --transport tailcat``) takes
  ``--address ADDR`` when given, else ``tailscale ip -4`` when the
  ``tailscale`` command exists, and refuses (``TransportUnavailable``) an
  address that is not on an overlay interface of this machine.
- :meth:`Tailcat.dial` (``ce join`` and the session's later commands)
  refuses to connect when this machine's route to the address does not go
  out through an overlay interface (``ip -j route get``), so a session's
  bearer never crosses a plain network because the overlay is down. On a
  system without ``/sys/class/net`` (not Linux) the route is not checked.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import TransportUnavailable
from .transport import check_listener

NAME = "tailcat"
#: Where WireGuard userspace implementations put their control socket (wireguard-go, boringtun).
WIREGUARD_UAPI = Path("/var/run/wireguard")
#: The device name tailscaled gives its tun device (``--tun`` default ``tailscale0``).
TAILSCALE_PREFIX = "tailscale"


@dataclass(frozen=True)
class Interface:
    """A network interface: its ``name``, link ``kind`` (``""`` when none) and addresses (text)."""

    name: str
    kind: str
    addresses: tuple[str, ...]

    @property
    def overlay(self) -> str | None:
        """``"wireguard"``, ``"wireguard-userspace"`` or ``"tailscale"`` when this is an overlay; else None."""
        if self.kind == "wireguard":
            return "wireguard"
        if self.kind == "tun" and self.name.startswith(TAILSCALE_PREFIX):
            return "tailscale"
        if self.kind == "tun" and (WIREGUARD_UAPI / f"{self.name}.sock").exists():
            return "wireguard-userspace"
        return None


def _ip(*args: str) -> Any:
    """``ip -j ARGS`` parsed; ``TransportUnavailable`` when iproute2 is missing or fails."""
    if shutil.which("ip") is None:
        raise TransportUnavailable("the tailcat transport needs iproute2's ip command to recognise "
                                   "an overlay interface", details={"transport": NAME})
    done = subprocess.run(["ip", "-j", *args], capture_output=True, text=True, timeout=10)
    if done.returncode != 0:
        raise TransportUnavailable(f"ip {' '.join(args)} failed: {done.stderr.strip()[:200]}",
                                   details={"transport": NAME})
    return json.loads(done.stdout or "[]")


def interfaces() -> list[Interface]:
    """This machine's (this network namespace's) interfaces, with their link kind and addresses."""
    found = []
    for link in _ip("-d", "addr", "show"):
        kind = str((link.get("linkinfo") or {}).get("info_kind") or "")
        addresses = tuple(str(a["local"]) for a in link.get("addr_info") or [] if a.get("local"))
        found.append(Interface(str(link.get("ifname", "")), kind, addresses))
    return found


def overlay_of(address: str) -> Interface | None:
    """The overlay interface that holds ``address``, or None (not held here, or not on an overlay)."""
    for interface in interfaces():
        if address in interface.addresses:
            return interface if interface.overlay else None
    return None


def tailscale_address() -> str:
    """The first line of ``tailscale ip -4``; ``TransportUnavailable`` when it has none."""
    try:
        done = subprocess.run(["tailscale", "ip", "-4"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TransportUnavailable(f"tailscale ip -4 failed: {exc}", details={"transport": NAME}) from None
    lines = done.stdout.split()
    if done.returncode != 0 or not lines:
        raise TransportUnavailable(f"tailscale ip -4 gave no address ({done.stderr.strip()[:200] or 'not up?'}); "
                                   "run tailscale up or give --address", details={"transport": NAME})
    return lines[0]


def magicdns_name() -> str | None:
    """This machine's MagicDNS name (``Self.DNSName`` of ``tailscale status --json``), or None.

    None when there is no ``tailscale`` command, it fails, or it names
    none (MagicDNS off); the trailing dot is dropped.
    """
    if shutil.which("tailscale") is None:
        return None
    try:
        done = subprocess.run(["tailscale", "status", "--json"], capture_output=True, text=True, timeout=10)
        name = json.loads(done.stdout).get("Self", {}).get("DNSName") if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError, AttributeError):
        return None
    return name.rstrip(".") if isinstance(name, str) and name.rstrip(".") else None


def resolve(name: str, port: int) -> list[str]:
    """The addresses ``name`` resolves to here (``getaddrinfo``: ``/etc/hosts``, DNS), in its order.

    An IP address resolves to itself. Raises ``TransportUnavailable`` when
    the name does not resolve.
    """
    try:
        return [check_listener(NAME, name, port)]
    except TransportUnavailable:
        pass
    try:
        found = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise TransportUnavailable(f"the room's name {name} does not resolve here ({exc}); check the name in the "
                                   "invitation, or ask the room's operator for an address",
                                   details={"transport": NAME, "address": name, "port": port}) from None
    return list(dict.fromkeys(str(info[4][0]) for info in found))


def overlay_route(address: str) -> str | None:
    """The overlay interface this machine routes ``address`` through, or None (``ip -j route get``).

    Where there is no ``/sys/class/net`` (not Linux) the route is not
    checked: ``""``.
    """
    if not Path("/sys/class/net").is_dir():
        return ""
    route = _ip("route", "get", address)
    device = str(route[0].get("dev", "")) if route else ""
    by_name = {i.name: i for i in interfaces()}
    return device if device in by_name and by_name[device].overlay is not None else None


class Tailcat:
    """The plugin object (see :mod:`commonroom.transport` for the interface)."""

    def host_names(self) -> list[str]:
        """The Host names this machine has on the overlay: its MagicDNS name when ``tailscale`` knows one."""
        name = magicdns_name()
        return [name] if name else []

    def listen(self, address: str | None, port: int) -> tuple[str, int, str]:
        """Where the room listens for tailcat: ``address`` or ``tailscale ip -4``, and its overlay interface.

        Returns ``(address, port, interface name)``; the room binds the
        listener to that interface (``SO_BINDTODEVICE``), so a packet for
        the address arriving on any other interface (a LAN neighbour
        routing to it) finds no listener.
        Raises ``TransportUnavailable`` for no address at all, a loopback,
        wildcard or multicast one, or one that is not an address of a
        WireGuard or Tailscale interface of this machine (LAN, public).
        """
        if address is None:
            if shutil.which("tailscale") is None:
                raise TransportUnavailable("the tailcat transport needs --address ADDR (an address of a WireGuard "
                                           "interface here) when there is no tailscale command",
                                           details={"transport": NAME})
            address = tailscale_address()
        canonical = check_listener(NAME, address, port)
        interface = overlay_of(canonical)
        if interface is None:
            where = next((i.name for i in interfaces() if canonical in i.addresses), None)
            reason = (f"it is on {where}, not a WireGuard or Tailscale interface" if where
                      else "no interface of this machine has it")
            raise TransportUnavailable(f"the tailcat transport refuses {canonical}: {reason}",
                                       details={"transport": NAME, "address": canonical, "interface": where})
        return canonical, port, interface.name

    def hint(self, listener: dict[str, Any]) -> dict[str, Any]:
        """``{"type": "tailcat", "address", "port", "encrypted": true, "mode": "private"}``."""
        return {"type": NAME, "address": str(listener["address"]), "port": int(listener["port"]),
                "encrypted": True, "mode": "private"}

    def dial(self, hint: dict[str, Any], timeout: float = 10.0) -> socket.socket:
        """A TCP connection to the hint's address, refused unless it leaves through an overlay interface.

        The address may be a name (``ce invite --transport tailcat
        --address NAME``): it is resolved here and the first address routed
        through an overlay interface is dialled; none is refused before a
        byte is sent.
        """
        address, port = hint.get("address"), hint.get("port")
        details = {"transport": NAME, "address": address, "port": port}
        if not isinstance(address, str) or isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise TransportUnavailable(f"a tailcat hint names an address and a port, not {address!r}:{port!r}",
                                       details=details)
        candidates = resolve(address, port)
        canonical, refused = "", []
        for candidate in candidates:
            check_listener(NAME, candidate, port)  # a name resolving to loopback or a wildcard is refused too
            if overlay_route(candidate) is not None:
                canonical = candidate
                break
            refused.append(candidate)
        if not canonical:
            shown = address if [address] == refused else f"{address} ({', '.join(refused)})"
            device = str(_ip("route", "get", refused[0])[0].get("dev", "")) if refused else ""
            raise TransportUnavailable(f"{shown} is not reached through a WireGuard or Tailscale interface "
                                       f"here (the route goes out {device or 'nowhere'}); join the overlay first",
                                       details={**details, "interface": device})
        try:
            return socket.create_connection((canonical, port), timeout=timeout)
        except OSError as exc:
            raise TransportUnavailable(f"cannot reach the room at {canonical}:{port}: {exc.strerror or exc}",
                                       details=details) from None


#: The entry point's target (``commonroom.transports``: ``tailcat = "commonroom.tailcat:plugin"``).
plugin = Tailcat()
