"""What every part of one ``ce mcp`` process shares: its session, its state, and stdout.

:class:`BridgeBase` holds the session (transport, bearer), the table of
requests read from stdin (unanswered, cancelled, in flight, their room
connections) and the one writer of stdout (:meth:`BridgeBase.write`: one
message a line, nothing for a request after its end). The forwarding
(:mod:`.forwarding`), the notification stream (:mod:`.notifications`) and
the stdin loop (:mod:`.bridge`) are mixins on it.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from dataclasses import dataclass, field
from typing import IO, Any

from .messages import request_key

log = logging.getLogger("commonroom.mcp_bridge")


@dataclass
class BridgeBase:
    """One ``ce mcp`` process's session, request table and stdout (see the module docstring)."""

    transport: dict[str, Any]
    token: str
    out: IO[bytes]
    timeout: float = 300.0
    stream_timeout: float = 90.0
    path: str = "/mcp"
    _write_lock: threading.Lock = field(default_factory=threading.Lock)
    _cancelled: set = field(default_factory=set)
    _inflight: set = field(default_factory=set)
    #: Requests read and not yet answered (nor cancelled): id key -> the request's id.
    _unanswered: dict = field(default_factory=dict)
    #: The room connection of each request in flight: id key -> (method, socket).
    _sockets: dict = field(default_factory=dict)
    #: The method of each request read: id key -> method.
    _methods: dict = field(default_factory=dict)
    _state_lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _tool_headers: dict[str, dict[str, str]] | None = None
    stream_connected: threading.Event = field(default_factory=threading.Event)

    # -- output -------------------------------------------------------------

    def write(self, message: Any, request_id: Any = None) -> None:
        """One protocol message on stdout, as one line.

        With ``request_id`` the message belongs to that request's exchange
        and is written only while the request is not cancelled or ended
        (checked under the write lock, so nothing follows its end). A
        response marks its request answered (:meth:`unanswered`).
        """
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        with self._write_lock:
            if self._stop.is_set() and self.out.closed:
                return
            if request_id is not None and self._is_cancelled(request_id):
                return
            if isinstance(message, dict) and "method" not in message and "id" in message:
                with self._state_lock:
                    self._unanswered.pop(request_key(message["id"]), None)
            try:
                self.out.write(data)
                self.out.flush()
            except (BrokenPipeError, ValueError, OSError) as exc:  # the client went away
                log.warning("stdout closed (%s); stopping", exc)
                self._stop.set()

    # -- the request table ------------------------------------------------

    def _is_cancelled(self, request_id: Any) -> bool:
        with self._state_lock:
            return request_key(request_id) in self._cancelled

    def _release(self, request_id: Any) -> None:
        """Shut down the room connection of ``request_id``'s exchange, if it has one open."""
        with self._state_lock:
            entry = self._sockets.pop(request_key(request_id), None)
        if entry is not None:
            try:
                entry[1].shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def unanswered(self) -> list[Any]:
        """The ids of the requests read from stdin that have had no response yet (nor were cancelled)."""
        with self._state_lock:
            return list(self._unanswered.values())
