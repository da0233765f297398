"""The room's gunicorn worker: read timeouts and a bound on open connections.

gunicorn 27.0.1's ``asgi`` worker (pinned in ``pyproject.toml``) gives a
slow or hostile client a lot of room (read in its source,
``gunicorn/asgi/protocol.py`` and ``gunicorn/workers/gasgi.py``):

- **No header timeout.** The first request on a connection waits for its
  headers without limit (``_handle_connection`` arms the keep-alive timer
  only from the second request on). 200 connections sending a header byte
  at a time stay open for ever.
- **The body wait is per chunk.** ``BodyReceiver._wait_for_data`` waits
  ``cfg.timeout`` (30 s when the setting is 0, as the room sets it) for
  *each* chunk, so a body trickling one byte every 29 s is never bounded;
  and a wait that expires surfaces to the app as ``http.disconnect``,
  which Falcon takes as the end of the body (a truncated body).
- **``worker_connections`` is stored, not enforced** (its own docs: "only
  affects the gthread and gevent worker types").
- **The listen backlog is 100.** It creates its servers with
  ``loop.create_server(sock=...)`` and no ``backlog``; asyncio then calls
  ``sock.listen(100)`` on the room's listener, replacing the 2048 it was
  made with. A burst of more than ~100 connects (subscribers reconnecting
  after a restart, a bench's clients) had SYNs dropped and waited the
  kernel's 1 s retransmit.
- Falcon's ASGI app awaits the first ``http.request`` event before it
  runs anything, and asking for it makes gunicorn write ``100 Continue``
  and wait for the body: a ``Content-Length: 10485760`` with no body bytes
  got no answer, and ``Expect: 100-continue`` got ``100 Continue`` for a
  body the room then refused.

What this module adds (each documented in ``docs/operator.md``, *Slow and
oversized clients*):

- :class:`RoomWorker` / :class:`GuardedProtocol`: the ``asgi`` worker
  with a protocol subclass that closes a connection whose first request's
  headers are not complete within ``header_timeout`` seconds (answered
  ``408`` first), and that bounds the open connections per listener
  (``max_connections`` on the session ingress, ``max_owner_connections``
  on the owner port): a connection beyond the bound is answered ``503``
  with ``Retry-After`` and closed once its headers arrive (or after at
  most 2 s). Later requests on a kept-alive connection are bounded by
  gunicorn's own keep-alive timer (5 s from the previous answer).
- :class:`commonroom.bodyguard.BodyGuard` (its own module): an ASGI
  wrapper that reads no body before a resource asks and bounds the whole
  body to ``body_timeout`` seconds.
- :meth:`RoomWorker.notify`: the worker's servers keep the listeners'
  backlog (:data:`LISTEN_BACKLOG`).
"""

from __future__ import annotations

import asyncio
import logging
from http import HTTPStatus
import os
import resource
import signal
import sys
from dataclasses import dataclass
from typing import Any, Mapping

from gunicorn.asgi import protocol as _protocol
from gunicorn.workers import gasgi

# The stubs (types-gunicorn) do not describe the asgi worker's internals this
# module builds on; typed as Any, checked by the tests against the pinned gunicorn.
_ASGIProtocol: Any = getattr(_protocol, "ASGIProtocol")
_ASGIWorker: Any = getattr(gasgi, "ASGIWorker")

log = logging.getLogger("commonroom.worker")

#: Longest wait for the headers of a connection already over the bound.
REFUSE_WITHIN_SECONDS = 2.0
#: Seconds a connection that has not sent a whole request head gets at a graceful stop (RoomWorker._shutdown).
SHUTDOWN_HEAD_GRACE = 1.0
#: A response body at least this large (bytes) is written with its head in one writev (GuardedProtocol._send_body),
#: gunicorn's threshold for handing head and body to ``writelines``.
LARGE_BODY_BYTES = 65536
#: Before Python 3.12 asyncio's ``writelines`` joins its buffers (from 3.12 it sends them with ``sendmsg``).
_WRITELINES_JOINS = sys.version_info < (3, 12)
#: Pending connections a listener holds before the kernel drops SYNs (gunicorn's default ``backlog``).
LISTEN_BACKLOG = 2048
#: Descriptors kept free beyond both connection bounds (sidecar, log, accept).
RESERVED_FDS = 64


@dataclass(frozen=True)
class ConnectionLimits:
    """The room's read timeouts and connection bounds (env ``COMMONROOM_*``)."""

    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections: int = 4096
    max_owner_connections: int = 64

    ENV = {
        "header_timeout": "COMMONROOM_HEADER_TIMEOUT",
        "body_timeout": "COMMONROOM_BODY_TIMEOUT",
        "max_connections": "COMMONROOM_MAX_CONNECTIONS",
        "max_owner_connections": "COMMONROOM_MAX_OWNER_CONNECTIONS",
    }

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "ConnectionLimits":
        """The limits, each overridable by its variable; ``ValueError`` names a bad one."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for field, name in cls.ENV.items():
            raw = (env.get(name) or "").strip()
            if not raw:
                continue
            kind = int if field.startswith("max_") else float
            try:
                value = kind(raw)
            except ValueError:
                value = 0
            if not value > 0 or value != value or value == float("inf"):
                what = "a whole number" if kind is int else "a number of seconds"
                raise ValueError(f"{name}={raw!r}: expected {what} above 0")
            values[field] = value
        return cls(**values)

    def fitted(self) -> tuple["ConnectionLimits", str | None]:
        """These limits, with both bounds fitted under the open-files limit.

        Returns ``(limits, warning)``; the warning says what was lowered.
        """
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY:
            return self, None
        room = soft - RESERVED_FDS - self.max_owner_connections
        if self.max_connections <= room:
            return self, None
        lowered = max(1, room)
        return (
            ConnectionLimits(self.header_timeout, self.body_timeout, lowered, self.max_owner_connections),
            f"the open-files limit is {soft}: the session ingress holds at most {lowered} connections "
            f"(not {self.max_connections}); raise the limit (ulimit -n) to hold more",
        )


def error_body(status: int, message: str, details: dict[str, Any], retry: int | None = None,
               code: str = "limit_exceeded") -> bytes:
    """The seed's error envelope as JSON bytes, for an answer made before any route runs (``status`` unused
    but for the reader: it is the caller's); ``retry``: ``retry_after_seconds``."""
    from .wire import dumps

    body: dict[str, Any] = {"error": code, "message": message, "details": details}
    if retry is not None:
        body["retry_after_seconds"] = retry
    return dumps(body)


#: gunicorn's own refusals (before the app runs), as the catalogue's codes.
_PARSER_REFUSALS = {414: ("limit_exceeded", "request_line"), 431: ("limit_exceeded", "request_headers")}
#: gunicorn's parser refuses a second ``Host`` before the room's edge sees the request
#: (``commonroom.http.edge``): its message → the edge's own message for that request, answered with
#: the edge's ``details.reason: "host"`` (a test fails when gunicorn words it otherwise:
#: ``tests/e2e/test_ingress_edges.py::test_a_missing_or_doubled_host``).
_HOST_REFUSALS = {"Duplicate host header":
                  "an HTTP/1.1 request needs exactly one Host header; this one has more than one Host header"}


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def _raw_answer(status: int, body: bytes, retry: int | None = None,
                extra: tuple[tuple[str, str], ...] | list[tuple[str, str]] = ()) -> bytes:
    lines = "".join(f"{name}: {value}\r\n" for name, value in extra)
    if retry is not None:
        lines += f"Retry-After: {retry}\r\n"
    # nosniff: every answer of the room carries it (commonroom.http.edge, docs/hardening.md)
    head = (f"HTTP/1.1 {status} {_reason(status)}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n{lines}X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n")
    return head.encode("latin-1") + body


class GuardedProtocol(_ASGIProtocol):
    """gunicorn's HTTP/1 protocol plus a header timeout and a connection bound (every request is parsed
    by gunicorn's parser: docs/hardening.md, *Who parses*)."""

    _room_timer: asyncio.TimerHandle | None = None
    _room_listener: str | None = None
    _room_refuse = False
    #: request heads completed on this connection, and whether bytes of a head not yet
    #: complete have arrived (RoomWorker._shutdown tells an idle connection from a new one)
    _room_heads = 0
    _room_partial = False
    _response_buffer: bytes | None  # gunicorn's: the head, until the first body write

    def connection_made(self, transport: Any) -> None:  # noqa: D102 - asyncio
        super().connection_made(transport)
        worker = self.worker
        limits: ConnectionLimits = worker.room_limits
        sockname = transport.get_extra_info("sockname")
        owner = isinstance(sockname, tuple) and len(sockname) >= 2 and sockname[1] == worker.room_owner_port
        self._room_listener = "owner" if owner else "ingress"
        counts = worker.room_connections
        counts[self._room_listener] += 1
        worker.room_protocols.add(self)
        bound = limits.max_owner_connections if owner else limits.max_connections
        self._room_refuse = counts[self._room_listener] > bound
        wait = min(limits.header_timeout, REFUSE_WITHIN_SECONDS) if self._room_refuse else limits.header_timeout
        self._room_timer = worker.loop.call_later(wait, self._room_headers_late)

    def data_received(self, data: bytes) -> None:  # noqa: D102 - asyncio
        if self._current_request is None:
            self._room_partial = True  # bytes of a head: the next request has begun
        super().data_received(data)

    def _on_headers_complete(self) -> Any:  # noqa: D102 - parser callback
        self._room_cancel_timer()
        self._room_heads += 1
        self._room_partial = False
        if self._room_refuse:
            self._room_refuse = False
            self._room_close(503)
            return False
        return super()._on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:  # noqa: D102 - asyncio
        self._room_cancel_timer()
        if self._room_listener is not None:
            self.worker.room_connections[self._room_listener] -= 1
            self._room_listener = None
        self.worker.room_protocols.discard(self)
        super().connection_lost(exc)

    def _room_idle(self) -> bool | None:
        """At a graceful stop: True when no request is in flight and none has begun (a kept-alive
        connection between requests), False for a connection that has not sent a whole head yet
        (a new one, or half a head), None while a request is in flight."""
        if self._closed or self._current_request is not None or self._finishing_calls:
            return None
        return self._room_heads > 0 and not self._room_partial

    def _room_drop(self) -> None:
        """Close this connection between requests (a refusal, a late head, a graceful stop)."""
        self._close_transport()
        if self._request_ready is not None:
            self._request_ready.set()  # the connection loop sees _closed and ends

    def _room_cancel_timer(self) -> None:
        if self._room_timer is not None:
            self._room_timer.cancel()
            self._room_timer = None

    def _send_body(self, body: bytes, chunked: bool = False, last: bool = False, size: int | None = None) -> None:
        """gunicorn's, except that before Python 3.12 a large body and its head go out in one gathered write.

        gunicorn hands a body of 64 KB or more with its buffered head to
        ``transport.writelines`` to spare a copy; before Python 3.12 asyncio's
        ``writelines`` joins them, copying the body (~1 MB for an old
        version). Here the head and the body are written by one ``writev``
        on the socket (what 3.12's ``writelines`` does with ``sendmsg``): no
        join, and no write of the head alone, which would wake the client
        for a few hundred bytes before the body; what the socket does not
        take is left to the transport (an old version's read stays fast,
        docs/performance.md).
        """
        head = self._response_buffer
        if _WRITELINES_JOINS and not chunked and head and len(body) >= LARGE_BODY_BYTES:
            self._response_buffer = None
            self._write_gathered(head, body)
            return
        super()._send_body(body, chunked, last, size)

    def _write_gathered(self, head: bytes, body: bytes) -> None:
        """Write ``head`` then ``body`` with one ``writev`` when the transport holds nothing; the rest to it.

        With bytes already waiting in the transport (or no socket, or TLS,
        which the room does not serve but gunicorn could), both go through
        gunicorn's writes, in order, as before. An error of the
        socket is left to the transport: its own write meets it again and
        closes the connection as it always does.
        """
        transport = self.transport
        sent = 0
        if (transport is not None and not transport.is_closing() and not transport.get_write_buffer_size()
                and transport.get_extra_info("sslcontext") is None):  # TLS writes through its transport only
            sock = transport.get_extra_info("socket")
            try:
                sent = os.writev(sock.fileno(), (head, body)) if sock is not None else 0
            except OSError:  # full (EAGAIN), interrupted, or an error the transport's write meets again below
                pass
        if sent < len(head):
            self._safe_write(head[sent:])
            sent = len(head)
        if sent < len(head) + len(body):
            self._safe_write(memoryview(body)[sent - len(head):])

    def _send_error_response(self, status: int, message: str, extra_headers: Any = ()) -> None:
        """gunicorn's own answers made before or instead of the app (400, 414, 431, 426, 501, 500, ...), with
        their status and extra headers, as the room's JSON error envelope (a 5xx: the room's 500 body)."""
        if status >= 500 and status != 503:
            from .wire import INTERNAL_ERROR

            body = INTERNAL_ERROR
        elif status == 400 and message in _HOST_REFUSALS:  # the edge's Host rule, said where gunicorn says it
            body = error_body(status, _HOST_REFUSALS[message], {"reason": "host", "host_headers": 2},
                              code="invalid_request")
        else:
            code, limit = _PARSER_REFUSALS.get(status, ("invalid_request", None))
            details: dict[str, Any] = {"reason": message[:200]}
            if limit is not None:
                details["limit"] = limit
            body = error_body(status, message[:200], details, code=code)
        extra = [(str(name), str(value)) for name, value in extra_headers or ()
                 if str(name).lower() not in ("content-type", "content-length", "connection")]
        self._safe_write(_raw_answer(status, body, extra=extra))

    def _room_headers_late(self) -> None:
        self._room_timer = None
        if self._closed or self._current_request is not None:
            return
        if self._room_refuse:
            self._room_close(503)
        else:
            self._room_close(408)

    def _room_close(self, status: int) -> None:
        limits: ConnectionLimits = self.worker.room_limits
        if status == 503:
            owner = self._room_listener == "owner"
            bound = limits.max_owner_connections if owner else limits.max_connections
            where = "owner port" if owner else "session ingress"
            body = error_body(503, f"the room's {where} already holds its maximum of {bound} open connections; "
                                  "try again shortly", {"limit": "connections", "max_connections": bound}, 1)
            self._safe_write(_raw_answer(503, body, retry=1))
        else:
            seconds = limits.header_timeout
            body = error_body(408, f"the request headers did not arrive within {seconds:g} s",
                             {"limit": "header_timeout", "timeout_seconds": seconds})
            self._safe_write(_raw_answer(408, body))
        self._room_drop()


#: This worker process's listening sockets (set by :meth:`RoomWorker.init_process`, before the app is built).
_LISTENING: list[Any] = []


def listening_sockets() -> list[Any]:
    """The worker's listening sockets (``socket.socket``), for what acts on a listener after the fork
    (``commonroom.listenwatch``: a plugin listener bound again to its interface)."""
    return [getattr(listener, "sock", listener) for listener in _LISTENING]


class RoomWorker(_ASGIWorker):
    """gunicorn's ``asgi`` worker serving connections with :class:`GuardedProtocol`."""

    def init_process(self) -> None:  # noqa: D102 - gunicorn hook
        _LISTENING[:] = list(self.sockets)
        config = self.app.config  # commonroom.roomapp.WorkerConfig
        self.room_limits = config.limits
        self.room_owner_port = config.owner_port
        self.room_connections = {"owner": 0, "ingress": 0}
        #: the open connections (closed when idle at a graceful stop, see _shutdown)
        self.room_protocols: set[GuardedProtocol] = set()
        #: gasgi's serving task, and whether its heartbeat loop runs (see handle_exit_signal)
        self._room_task: asyncio.Task | None = None
        self._room_beating = False
        # gasgi creates its servers with ``lambda: ASGIProtocol(self)``, a
        # module-level name: this process's servers use the subclass.
        setattr(gasgi, "ASGIProtocol", GuardedProtocol)
        super().init_process()

    async def _shutdown(self) -> None:
        """gasgi's graceful stop, after closing every connection with no request in flight.

        gasgi stops listening and then waits, up to ``graceful_timeout``,
        until no connection is open; a keep-alive connection waiting for its
        next request (an HTTP client's pool, the console's browser) would stay
        open until its keep-alive timeout and hold the stop that long. So a
        connection between requests is closed at once, as other
        servers do at a graceful stop (a client retries an idempotent
        request on a reused connection that was closed). A connection that
        has not sent a whole head yet (just opened, or half a head) gets
        :data:`SHUTDOWN_HEAD_GRACE` seconds to send it, since a client does
        not retry on a new connection; one whose head has arrived is in
        flight: it is answered, then its connection closes (gunicorn keeps
        none alive once the worker stops). A quick stop (SIGINT, SIGQUIT)
        is gasgi's own.
        """
        if not self._quick_shutdown:
            for server in self.servers:
                server.close()  # no new connection (gasgi closes them again)
            deadline = self.loop.time() + SHUTDOWN_HEAD_GRACE
            while not self._quick_shutdown:
                waiting = False
                for protocol in list(self.room_protocols):  # rescanned: a connection_made may come late
                    idle = protocol._room_idle()
                    if idle or (idle is False and self.loop.time() >= deadline):
                        protocol._room_drop()
                    elif idle is False:
                        waiting = True
                if not waiting:
                    break
                await asyncio.sleep(0.05)
        await super()._shutdown()

    def notify(self) -> None:
        """gunicorn's heartbeat, called once a second by gasgi's serving loop (in its task).

        The first call with the servers made: each listener's backlog set
        back to :data:`LISTEN_BACKLOG` (gasgi's ``create_server(sock=...)``
        passes no ``backlog``, and asyncio listens again with its default of
        100), and the serving task remembered, so that SIGTERM can wake it
        (see :meth:`handle_exit_signal`).
        """
        if self.servers and self._room_task is None:
            for sock in listening_sockets():
                if hasattr(sock, "listen"):
                    sock.listen(LISTEN_BACKLOG)
            self._room_task = asyncio.current_task()
        self._room_beating = bool(self.servers)  # the servers exist: this is the serving loop
        super().notify()

    def handle_exit_signal(self) -> None:
        """SIGTERM: stop serving now, not at the serving loop's next heartbeat.

        gasgi only clears ``alive``; its serving loop notices after its
        ``asyncio.sleep(1.0)``, so a stop waited half a second on average
        before its graceful shutdown began. Cancelling that sleep (gasgi
        catches the ``CancelledError`` and shuts down as usual) starts it at
        once. Only the serving loop's sleep is cancelled, and only once:
        during startup or an already running shutdown nothing is.
        """
        super().handle_exit_signal()
        self._room_wake()

    def init_signals(self) -> None:
        """gasgi's signal handlers, but SIGINT is ignored: stopping the worker is the arbiter's job.

        Ctrl-C sends SIGINT to the whole process group, the worker too. Had
        the worker stopped on it by itself, it could be past closing its
        loop (which puts every signal back to its default) when the
        arbiter's own SIGQUIT arrived: the worker then died of that signal
        and the arbiter logged ``Worker (pid:…) was sent SIGQUIT!``. The
        worker now stops on the arbiter's SIGQUIT alone, once.
        """
        super().init_signals()
        self.loop.remove_signal_handler(signal.SIGINT)
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    def handle_quit_signal(self) -> None:
        """SIGQUIT (the arbiter's quick stop, on Ctrl-C): as :meth:`handle_exit_signal`, quick."""
        super().handle_quit_signal()
        self._room_wake()

    def _room_wake(self) -> None:
        """Cancel the serving loop's heartbeat sleep (once; see :meth:`handle_exit_signal`)."""
        task = self._room_task
        if self._room_beating and task is not None and not task.done():
            self._room_beating = False
            task.cancel()
