"""The byte client of ``ce join``, ``ce call`` and ``ce mcp`` (seed protocol.txt, HTTP).

It speaks HTTP/1.1 over the socket the transport hint dials, with
``Host: commonroom``. Through a transport plugin (an overlay, where a
tunnel can die quietly) a request that gets no byte of its answer for
:data:`NO_BYTE_SECONDS` fails, naming the address and saying the overlay
may be down; one whose answer stops after some bytes says "the answer
stalled after N bytes" (a tunnel that drops large packets: its MTU), not
that the room closed the connection. Request/response calls send ``Connection: close`` and
read the body until ``Content-Length``; :func:`stream` reads a server-sent
event stream (chunked or close-delimited) frame by frame, parsed by
:mod:`commonroom.sse_client`.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from . import errors
from .protocol import BYTE_CLIENT_HOST as HOST
from .protocol import EVENT_STREAM_TYPE
from .sse_client import Frame, SSEParser
from .transport import dial


#: Through a transport plugin: the longest wait for the next byte of an answer (seconds) unless the caller
#: waits longer on purpose (a long-poll's ``idle``).
NO_BYTE_SECONDS = 10.0


def where(transport: dict[str, Any]) -> str:
    """``ADDRESS:PORT`` (``[v6]:PORT``) of a hint; the socket path of a ``local`` one."""
    address, port = transport.get("address"), transport.get("port")
    if port is None:
        return str(address)
    return f"[{address}]:{port}" if ":" in str(address) else f"{address}:{port}"


def quiet_limit(transport: dict[str, Any], timeout: float, idle: float | None) -> float:
    """The longest silence a request tolerates: ``idle`` when given, else :data:`NO_BYTE_SECONDS` through a
    plugin transport (at most ``timeout``), else ``timeout``."""
    if idle is not None:
        return idle
    return min(timeout, NO_BYTE_SECONDS) if transport.get("type") not in ("loopback", "local") else timeout


def lost_answer(transport: dict[str, Any], exc: BaseException, received: int, quiet: float) -> errors.TransportUnavailable:
    """What a connection that failed after the request was sent means, in the colleague's words."""
    room = where(transport)
    details = {"transport": transport.get("type"), "address": transport.get("address"),
               "port": transport.get("port"), "received_bytes": received}
    if isinstance(exc, TimeoutError):
        if received:
            message = (f"the answer stalled after {received} bytes from the room at {room} (nothing more for "
                       f"{quiet:g} s): the overlay may drop large packets (its MTU) or be down")
        else:
            message = (f"no answer from the room at {room} in {quiet:g} s (the answer stalled after 0 bytes): the "
                       "overlay may be down (is the tunnel up on this machine?) or drop large packets (its MTU), "
                       "or the room is stuck")
    elif received:
        message = f"the room at {room} closed the connection after {received} bytes of its answer"
    else:
        message = f"the room at {room} closed the connection without answering ({exc})"
    return errors.TransportUnavailable(message, details=details)


@dataclass
class Response:
    """A parsed response: status, lower-cased headers, raw body.

    ``ended``: for a stream, how its frames ended (``""`` while open or for
    a plain answer, ``"closed"``, or ``"silent"``: no byte for the read
    timeout).
    """

    status: int
    headers: dict[str, str]
    body: bytes
    ended: str = ""

    def json(self) -> Any:
        """The body as JSON (``None`` when empty)."""
        return json.loads(self.body) if self.body.strip() else None


def _request_bytes(method: str, path: str, body: bytes | None, headers: dict[str, str], close: bool) -> bytes:
    for part in (method, path, *headers, *headers.values()):
        if any(c in part for c in "\r\n\0") or (part is path and " " in part):
            raise errors.InvalidRequest(
                "a request line or header may not contain CR, LF, NUL (or a path a space)",
                details={"value": part[:200]},
            )
    lines = [f"{method} {path} HTTP/1.1", f"Host: {HOST}"]
    lines.append("Connection: close" if close else "Connection: keep-alive")
    for name, value in headers.items():
        lines.append(f"{name}: {value}")
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")


class _Reader:
    """Buffered reads from a socket."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buf = b""
        self.received = 0  # bytes read from the socket so far

    def _fill(self) -> bool:
        chunk = self.sock.recv(65536)
        if not chunk:
            return False
        self.received += len(chunk)
        self.buf += chunk
        return True

    def until(self, marker: bytes) -> bytes:
        while marker not in self.buf:
            if not self._fill():
                raise ConnectionError("connection closed mid-response")
        head, _, self.buf = self.buf.partition(marker)
        return head

    def exactly(self, size: int) -> bytes:
        while len(self.buf) < size:
            if not self._fill():
                raise ConnectionError("connection closed mid-body")
        data, self.buf = self.buf[:size], self.buf[size:]
        return data

    def rest(self) -> bytes:
        while self._fill():
            pass
        data, self.buf = self.buf, b""
        return data

    def chunks(self) -> Iterator[bytes]:
        while True:
            size_line = self.until(b"\r\n").split(b";")[0].strip()
            size = int(size_line or b"0", 16)
            if size == 0:
                self.until(b"\r\n")
                return
            data = self.exactly(size)
            self.exactly(2)
            yield data


def _head(reader: _Reader) -> tuple[int, dict[str, str]]:
    head = reader.until(b"\r\n\r\n").decode("latin-1")
    status_line, *header_lines = head.split("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/"):
        raise ConnectionError(f"not an HTTP response: {status_line!r}")
    headers: dict[str, str] = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


def _body(reader: _Reader, headers: dict[str, str]) -> bytes:
    """A whole response body: until Content-Length, chunked, or until close."""
    if "content-length" in headers:
        return reader.exactly(int(headers["content-length"]))
    if headers.get("transfer-encoding", "").lower() == "chunked":
        return b"".join(reader.chunks())
    return reader.rest()


def request(
    transport: dict[str, Any],
    method: str,
    path: str,
    *,
    body: Any = None,
    token: str | None = None,
    headers: dict[str, str] | None = None,
    raw_body: bytes | None = None,
    timeout: float = 60.0,
    idle: float | None = None,
) -> Response:
    """One request/response call; raises ``TransportUnavailable`` if undialable or the answer is lost.

    ``timeout``: the connect timeout and the longest silence on a loopback
    or local transport; through a plugin transport the longest silence is
    :data:`NO_BYTE_SECONDS` unless ``idle`` says otherwise (a long-poll).
    """
    all_headers = dict(headers or {})
    data = raw_body
    if body is not None and data is None:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        all_headers.setdefault("Content-Type", "application/json")
    if token:
        all_headers["Authorization"] = f"Bearer {token}"
    if data is None and method.upper() in ("POST", "PUT", "PATCH"):
        data = b""
    quiet = quiet_limit(transport, timeout, idle)
    sock = dial(transport, min(timeout, NO_BYTE_SECONDS))
    reader = _Reader(sock)
    try:
        sock.settimeout(quiet)
        sock.sendall(_request_bytes(method.upper(), path, data, all_headers, close=True))
        status, response_headers = _head(reader)
        return Response(status, response_headers, _body(reader, response_headers))
    except (OSError, ConnectionError) as exc:
        raise lost_answer(transport, exc, reader.received, quiet) from None
    finally:
        sock.close()


def call_json(transport: dict[str, Any], method: str, path: str, **kwargs: Any) -> Any:
    """``request`` then the JSON body; a non-2xx answer raises its ``CommonroomError``."""
    return answer_json(request(transport, method, path, **kwargs))


def answer_json(response: Response) -> Any:
    """The JSON body of an answer; a non-2xx answer raises its ``CommonroomError``.

    ``InvalidRequest`` when the body is not JSON or a non-2xx body is not an
    error envelope.
    """
    try:
        value = response.json()
    except ValueError:
        raise errors.InvalidRequest(
            f"the room answered {response.status} with a body that is not JSON",
            details={"status": response.status},
        ) from None
    if response.status >= 400:
        if isinstance(value, dict) and "error" in value:
            raise errors.from_dict(value)
        raise errors.InvalidRequest(f"the room answered {response.status}", details={"status": response.status, "body": value})
    return value


def stream(
    transport: dict[str, Any],
    path: str,
    *,
    token: str | None = None,
    headers: dict[str, str] | None = None,
    timeout: float | None = None,
    method: str = "GET",
    raw_body: bytes | None = None,
    on_socket: Callable[[socket.socket], None] | None = None,
) -> tuple[Response, Iterator[Frame]]:
    """Open ``method path`` (GET unless told) as an event stream: the head and its frames.

    ``on_socket(sock)``, when given, is called with the connected socket
    before the request is sent, so another thread can end the exchange
    (``sock.shutdown``): a cancelled request releases its connection at
    once instead of waiting for the room's answer.

    The frames (:class:`commonroom.sse_client.Frame`, every block including
    comment-only and ``retry``-only ones) come as their bytes arrive; the
    iterator ends when the connection does (closing it closes the socket).
    A non-200 answer, or one that is not ``text/event-stream``, is returned
    with its whole body (read until ``Content-Length``) and an empty iterator.
    """
    all_headers = {"Accept": EVENT_STREAM_TYPE, **(headers or {})}
    if token:
        all_headers["Authorization"] = f"Bearer {token}"
    if raw_body is None and method.upper() in ("POST", "PUT", "PATCH"):
        raw_body = b""
    sock = dial(transport, NO_BYTE_SECONDS)
    if on_socket is not None:
        on_socket(sock)
    reader = _Reader(sock)
    try:
        sock.settimeout(timeout)
        sock.sendall(_request_bytes(method.upper(), path, raw_body, all_headers, close=True))
        status, response_headers = _head(reader)
        if status != 200 or not response_headers.get("content-type", "").startswith(EVENT_STREAM_TYPE):
            body = _body(reader, response_headers)
            sock.close()
            return Response(status, response_headers, body), iter(())
    except (OSError, ConnectionError) as exc:
        sock.close()
        raise lost_answer(transport, exc, reader.received, timeout or 0.0) from None
    response = Response(status, response_headers, b"")

    def frames() -> Iterator[Frame]:
        parser = SSEParser()
        try:
            source = (
                reader.chunks()
                if response_headers.get("transfer-encoding", "").lower() == "chunked"
                else _raw(reader)
            )
            for data in source:
                yield from parser.feed(data)
            yield from parser.close()
            response.ended = "closed"
        except TimeoutError:
            response.ended = "silent"
            return
        except (OSError, ConnectionError):
            response.ended = "closed"
            return
        finally:
            sock.close()

    return response, frames()


def _raw(reader: _Reader) -> Iterator[bytes]:
    if reader.buf:
        data, reader.buf = reader.buf, b""
        yield data
    while True:
        chunk = reader.sock.recv(65536)
        if not chunk:
            return
        yield chunk
