"""Plain writes answered from the connection's bytes, before gunicorn makes a request of them.

Issue 13 (writes: 16 clients ≥ 0.3× the bare fsync'd SQLite transaction
rate). With the room's own write path lean, most of what a lease write
cost the event loop was gunicorn's: its Python parser, and for every
request a wake-up of the connection's task, a task for the app call, a
future, and a keep-alive timer cancelled and armed again (~220 µs of the
loop's ~370 µs a write at sixteen clients, against ~150 µs for the whole
ASGI stack in process).

:class:`WireWrites` (a part of the worker's ``GuardedProtocol``) answers
a write itself when the bytes one read brought are exactly one plain
request (:func:`plain_request`) that
:class:`~commonroom.http.directwrites.DirectWrites` takes, on a
connection that is waiting for its next request (or its first). It answers
with ``DirectWrites.answer`` (the route's own answer) and gunicorn's own
status line, ``Server`` and ``Date`` (:func:`answer_bytes`): the bytes
gunicorn would send. Anything else (a request split over two reads, two
in one, a header outside :data:`FIELDS`, a header sent twice, chunked,
``Expect``, HTTP/1.0, a path with a query or a percent sign, a head longer
than gunicorn's smallest line limit, a request that ``DirectWrites`` does
not take) goes to gunicorn untouched, before anything is counted.

While an answer is in flight, bytes that arrive are held and handed on
after it, so answers keep their order; reading goes on up to gunicorn's
buffer bound (as gunicorn reads on while a request runs), so a client
that leaves is seen to leave, and nothing it sent behind runs. Afterwards
the connection is what gunicorn leaves after an answer: the keep-alive timer
armed, the worker's request count one more; a worker that is stopping
closes it after the answer (``Connection: close``), as gunicorn does.
``COMMONROOM_WIRE_WRITES=0`` turns this off.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from typing import TYPE_CHECKING, Any

from gunicorn.asgi import parser as _parser
from gunicorn.asgi import protocol as _protocol

if TYPE_CHECKING:
    from .http.directwrites import DirectWrites
    from .wire import Rendered

__all__ = ["FIELDS", "WireWrites", "answer_bytes", "head_bound", "plain_request", "request_starts", "wire_writes"]

log = logging.getLogger("commonroom.worker")

#: A request target answered here: an absolute path of unreserved and sub-delimiter characters,
#: no query, no fragment, no percent-encoding (so the path is the target as sent).
_TARGET = re.compile(rb"/[A-Za-z0-9._~!$&'()*+,;=:@/-]*")
#: A header field line: a token, a colon, optional whitespace, a value of visible characters,
#: spaces, tabs and obs-text (RFC 9110 section 5.5, what gunicorn's parser accepts).
_FIELD = re.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*([\t\x20-\x7e\x80-\xff]*)")
#: The header fields a plain write may carry, each at most once (what HTTP clients send with one).
FIELDS = frozenset((b"host", b"authorization", b"content-type", b"content-length", b"user-agent", b"accept",
                    b"accept-encoding", b"connection"))
#: Statuses of an operation's answer sent here: each has a body, none closes the connection.
_STATUSES = frozenset((200, 201, 202))

PlainRequest = tuple[dict[str, Any], bytes]

# gunicorn's own pieces of an answer, and its Python parser (internals the stubs do not describe;
# checked by the tests against the pinned gunicorn, as commonroom/worker.py's)
_status_line: Any = getattr(_protocol, "_get_cached_status_line")
_date_header: Any = getattr(_protocol, "_get_cached_date_header")
_SERVER_HEADER: bytes = getattr(_protocol, "_CACHED_SERVER_HEADER")
_PythonParser: Any = getattr(_parser, "PythonProtocol")


def plain_request(data: bytes, head_max: int) -> PlainRequest | None:
    """``(scope, body)`` when ``data`` is exactly one plain HTTP/1.1 request, else None.

    Plain: a request line ``METHOD /path HTTP/1.1`` (:data:`_TARGET`), header
    fields from :data:`FIELDS` only, each once, ``Host`` among them,
    ``Connection`` (if sent) ``keep-alive``, a head of at most ``head_max``
    bytes, and a body of exactly its ``Content-Length`` (written as its
    decimal length: the worker's ``BodyGuard`` reads ``00`` as a body still
    to come; none without one) with nothing after it. ``scope`` has the keys
    ``DirectWrites.take`` reads (``method``, ``path``, ``query_string``,
    ``headers``: lower-case names, values without surrounding whitespace).
    """
    end = data.find(b"\r\n\r\n")
    if end < 0 or end > head_max:
        return None
    lines = data[:end].split(b"\r\n")
    request_line = lines[0].split(b" ")
    if len(request_line) != 3 or request_line[2] != b"HTTP/1.1" or _TARGET.fullmatch(request_line[1]) is None:
        return None
    headers: list[tuple[bytes, bytes]] = []
    seen: dict[bytes, bytes] = {}
    for line in lines[1:]:
        field = _FIELD.fullmatch(line)
        if field is None:
            return None
        name = field[1].lower()
        if name not in FIELDS or name in seen:
            return None
        value = field[2].rstrip(b" \t")
        seen[name] = value
        headers.append((name, value))
    if b"host" not in seen or seen.get(b"connection", b"keep-alive").lower() != b"keep-alive":
        return None
    body = data[end + 4:]
    length = seen.get(b"content-length")
    if length is None:
        if body:
            return None
    elif length != str(len(body)).encode():
        return None
    scope = {"method": request_line[0].decode("latin-1"), "path": request_line[1].decode("ascii"),
             "query_string": b"", "headers": headers}
    return scope, body


def answer_bytes(out: Rendered, close: bool) -> bytes:
    """The HTTP/1.1 answer gunicorn writes for ``out``: status line, its headers, ``Server``, ``Date``
    (``Connection: close`` when ``close``), the body."""
    parts = [_status_line((1, 1), out.status)]
    for name, value in out.asgi_headers():
        parts += (name, b": ", value, b"\r\n")
    parts += (_SERVER_HEADER, _date_header())
    if close:
        parts.append(b"Connection: close\r\n")
    parts += (b"\r\n", out.data)
    return b"".join(parts)


def wire_writes(app: Any, env: Any = os.environ) -> "DirectWrites | None":
    """The ``DirectWrites`` of the room's ASGI app (``BodyGuard`` → ``RoomASGI`` → its ingress app), unless
    ``COMMONROOM_WIRE_WRITES=0``, the app has none, or one of its operations answers with a status
    outside :data:`_STATUSES`."""
    from .http.directwrites import DirectWrites

    if env.get("COMMONROOM_WIRE_WRITES", "1") == "0":
        return None
    ingress = getattr(getattr(app, "app", None), "ingress_app", None)
    if not isinstance(ingress, DirectWrites) or not ingress.statuses <= _STATUSES:
        return None  # an answer without a body (204, 304) is framed by gunicorn's rules, not answer_bytes'
    return ingress


def head_bound(cfg: Any) -> int:
    """The longest head (bytes) read here under gunicorn's settings ``cfg``: below every line limit of its
    parser (which answers a longer line itself), and 0 (none) when its field count limit is under
    :data:`FIELDS`' (a head of all of them would be over it)."""
    if 0 < cfg.limit_request_fields < len(FIELDS):
        return 0
    return min(cfg.limit_request_line or 4094, (cfg.limit_request_field_size or 8190) - 2)


def request_starts(direct: "DirectWrites") -> tuple[bytes, ...]:
    """How the request line of each write ``direct`` answers begins: its method, a space, and its path
    template up to the first parameter (``b"DELETE /workspace/leases/"``), so that a read (``GET``) or an
    MCP call (``POST /mcp``) is told apart by one ``bytes.startswith``."""
    return tuple(sorted({f"{method} {path.split('{', 1)[0]}".encode() for method, path in direct.templates}))


class WireWrites:
    """The part of the room's protocol that answers plain writes from the bytes (see the module docstring).

    Mixed into ``GuardedProtocol`` ahead of gunicorn's ``ASGIProtocol``,
    whose connection state it reads and keeps; ``_room_wire`` is set on
    connections of the session ingress that may answer here.
    """

    _room_wire: DirectWrites | None = None
    #: the answer in flight, and the bytes that arrived meanwhile
    _room_wire_task: asyncio.Task | None = None
    _room_wire_held: bytearray | None = None
    #: the answer is written and waits for the client to read it (see _room_wire_lost)
    _room_wire_draining = False
    # gunicorn's ASGIProtocol state, and GuardedProtocol's, read and kept here
    worker: Any
    transport: Any
    _awaiting_request: bool
    _current_request: Any
    _finishing_calls: dict
    _callback_parser: Any
    _closed: bool
    _keepalive: float
    _flow_control: Any
    _h2c_buffer: Any
    _max_buffer_size: int
    _room_partial: bool
    _room_heads: int

    def _room_wire_received(self, data: bytes) -> bool:
        """True when ``data`` is answered here (or held behind an answer in flight); False: gunicorn's."""
        if self._room_wire_task is not None:
            # held for after the answer, reading on (as gunicorn reads on while a request runs, up to its
            # buffer's bound): the client's end of file or reset is seen, and ends the connection
            held = self._room_wire_held
            if held is None:
                held = self._room_wire_held = bytearray()
            held += data
            if len(held) > self._max_buffer_size:
                self._pause_reading()  # type: ignore[attr-defined]  # gunicorn's
            return True
        direct = self._room_wire
        worker = self.worker
        parser = self._callback_parser
        if (direct is None or not data.startswith(worker.room_wire_starts) or not self._awaiting_request
                or self._room_partial or self._closed or self._current_request is not None
                or self._finishing_calls or self._h2c_buffer is not None
                or parser.__class__ is not _PythonParser or parser._buffer or not worker.alive
                or not self._keepalive or worker.nr + 1 >= worker.max_requests):
            return False
        request = plain_request(data, worker.room_head_max)
        if request is None:
            return False
        scope, body = request
        taken = direct.take(scope)
        if taken is None:
            return False
        binding, params, actor, _ = taken
        self._room_cancel_timer()  # type: ignore[attr-defined]  # GuardedProtocol's header timer
        self._cancel_keepalive_timer()  # type: ignore[attr-defined]  # gunicorn's
        self._room_heads += 1
        self._room_wire_task = worker.loop.create_task(
            self._room_wire_answer(direct.answer(binding, params, actor, body, scope)))
        return True

    def _room_wire_lost(self) -> None:
        """At the connection's loss: an answer waiting for the client to read it waits no more.

        asyncio never resumes writing on a transport that is gone, so its
        wait would last for ever (gunicorn's own send is cancelled with the
        app call). Only that wait is cancelled: an answer still being made
        finishes, and its write is done, as on gunicorn's path.
        """
        if self._room_wire_draining and self._room_wire_task is not None:
            self._room_wire_task.cancel()

    async def _room_wire_answer(self, answering: Any) -> None:
        """Write the answer, then leave the connection as gunicorn leaves it after one; hand on held bytes."""
        close = True
        try:
            out = await answering
            worker = self.worker
            close = not worker.alive or worker.nr + 1 >= worker.max_requests
            if not self._closed:
                self._safe_write(answer_bytes(out, close))  # type: ignore[attr-defined]  # gunicorn's
                flow = self._flow_control
                if flow is not None and flow.write_paused:
                    # as gunicorn's send: the connection goes on once the client reads (what it sends meanwhile
                    # is held, up to the buffer's bound)
                    self._room_wire_draining = True
                    try:
                        await flow.drain()
                    except asyncio.CancelledError:  # the connection was lost (_room_wire_lost)
                        pass
                    finally:
                        self._room_wire_draining = False
        except Exception:  # a bug of this path (the answer's own are answered 500): the connection ends
            log.exception("answering a plain write failed")
            close = True
        finally:
            self._room_wire_task = None
            self.worker.nr += 1
        held, self._room_wire_held = self._room_wire_held, None
        if self._closed:
            return
        if close:
            self._room_drop()  # type: ignore[attr-defined]  # GuardedProtocol's
            return
        self._arm_keepalive_timer()  # type: ignore[attr-defined]  # gunicorn's
        self._resume_reading()  # type: ignore[attr-defined]  # gunicorn's (if the held bytes or the drain paused it)
        if held is not None:
            self.data_received(bytes(held))  # type: ignore[attr-defined]
