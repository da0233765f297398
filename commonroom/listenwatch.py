"""A plugin listener follows its address: noticed gone within seconds, listening again when it is back.

An overlay address can go away under a running room (a re-keyed node, a
new tailnet, ``wg-quick down``, tailscaled restarting and making its
interface anew). The listening socket stays open, but nothing reaches it:
its address is no longer this machine's, or the interface it is bound to
(``SO_BINDTODEVICE``, :func:`commonroom.server.bind_to_device`) is gone and
a new one with the same name has another index. :class:`ListenerWatch`, a
thread of the room's worker, looks every :data:`POLL_SECONDS` at each
plugin listener:

- **gone** when the interface's index is not the one the listener is bound
  to, or the address can no longer be bound here (``EADDRNOTAVAIL``). The
  room then says so: one warning in its log (``ce serve``'s output), the
  listener marked gone in the engine (``Engine.listener_gone``: the
  owner's ``GET /workspace/room`` and ``ce status`` show it, and an
  invitation for that transport is ``transport_unavailable``);
- **back** when the plugin's ``listen`` accepts the same address again (for
  ``tailcat``: held by an overlay interface): the socket is bound to the
  interface it names now, the room logs it and invitations are made again.

Two checks a second (an interface index, a throwaway bind) cost nothing;
the plugin is asked only while the address is gone. Nothing here rebinds
the port: the socket and the invitations already out keep their port.
"""

from __future__ import annotations

import errno
import logging
import socket
import threading
from dataclasses import dataclass
from typing import Any, Callable

from .errors import TransportUnavailable

log = logging.getLogger("commonroom.listeners")

#: Seconds between two looks at the plugin listeners (the room notices a lost address within about this).
POLL_SECONDS = 2.0


@dataclass
class Watched:
    """One plugin listener: its transport ``name``, ``address``, ``port``, ``interface`` and bound index."""

    name: str
    address: str
    port: int
    interface: str
    sock: socket.socket | None
    index: int = 0
    gone: bool = False


def bind_to_device(sock: socket.socket, device: str) -> None:
    """Make ``sock`` take only packets that arrive through interface ``device`` (``SO_BINDTODEVICE``).

    Linux accepts a packet for a local address on any interface (the weak
    host model): without this, a LAN neighbour routing the overlay address
    through the room's LAN address would reach a plugin's listener in
    clear. Bound, the kernel finds no listener for such a packet and
    answers it with a reset: no HTTP byte. Raises ``OSError`` (``ENODEV``
    for an interface that does not exist, ``ENOPROTOOPT`` where the system
    has no such option).
    """
    option = getattr(socket, "SO_BINDTODEVICE", None)
    if option is None:
        raise OSError(errno.ENOPROTOOPT, "this system cannot bind a listener to one interface (SO_BINDTODEVICE)")
    sock.setsockopt(socket.SOL_SOCKET, option, device.encode())


def interface_index(name: str) -> int:
    """The index of interface ``name`` here, 0 when there is none."""
    try:
        return socket.if_nametoindex(name)
    except OSError:
        return 0


def address_here(address: str) -> bool:
    """True when ``address`` is an address of this machine (a throwaway UDP socket can bind it)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        try:
            probe.bind((address, 0))
        except OSError as exc:
            if exc.errno == errno.EADDRNOTAVAIL:
                return False
            raise
    return True


def find_listener(sockets: list[socket.socket], address: str, port: int) -> socket.socket | None:
    """The listening socket of ``sockets`` bound to ``(address, port)``, or None."""
    for sock in sockets:
        try:
            name = sock.getsockname()
        except OSError:
            continue
        if isinstance(name, tuple) and name[0] == address and name[1] == port:
            return sock
    return None


class ListenerWatch:
    """The watching thread (see the module docstring).

    ``listeners``: ``(transport, address, port, interface)`` of each plugin
    listener; ``sockets``: the worker's listening sockets;
    ``mark(transport, gone)``: told each change (``gone`` True or False);
    ``plugin(transport)``: the plugin object (``listen`` asked while gone).
    """

    def __init__(self, listeners: tuple[tuple[str, str, int, str], ...], sockets: list[socket.socket],
                 mark: Callable[[str, bool], None], plugin: Callable[[str], Any],
                 poll_seconds: float = POLL_SECONDS):
        self.watched = [Watched(name, address, port, interface, find_listener(sockets, address, port),
                                interface_index(interface)) for name, address, port, interface in listeners]
        self.mark, self.plugin, self.poll_seconds = mark, plugin, poll_seconds
        for item in self.watched:
            if item.sock is None:
                log.warning("the %s listener on %s:%s is not among this worker's sockets: when its interface is made "
                            "anew it cannot be bound to the new one", item.name, item.address, item.port)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the thread (nothing to do without plugin listeners)."""
        if self.watched and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="listener-watch", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop the thread (a shutdown hook; returns at once)."""
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.poll_seconds):
            for item in self.watched:
                try:
                    self.look(item)
                except Exception:  # a look that fails is tried again at the next poll
                    log.exception("watching the %s listener on %s failed", item.name, item.address)

    def look(self, item: Watched) -> None:
        """One look at ``item``: mark it gone, or bring it back (see the module docstring)."""
        if not item.gone:
            index = interface_index(item.interface)
            if index == item.index and index and address_here(item.address):
                return
            item.gone = True
            self.mark(item.name, True)
            where = (f"interface {item.interface} is gone" if not index else
                     f"interface {item.interface} was made anew" if index != item.index else
                     f"the address is no longer on {item.interface}")
            log.warning("the %s address %s is gone (%s): nothing reaches the room there, and %s invitations are "
                        "refused until it comes back (checked every %.0f s)",
                        item.name, item.address, where, item.name, self.poll_seconds)
        if not address_here(item.address):
            return
        try:
            answer = tuple(self.plugin(item.name).listen(item.address, item.port))
        except TransportUnavailable:
            return
        if len(answer) != 3 or answer[0] != item.address or not isinstance(answer[2], str):
            return
        if item.sock is not None:
            bind_to_device(item.sock, answer[2])
        item.interface, item.index, item.gone = answer[2], interface_index(answer[2]), False
        self.mark(item.name, False)
        log.warning("the %s address %s is back on %s: the room listens there again", item.name, item.address,
                    item.interface)
