"""A small, real SSE client for tests: raw sockets, HTTP/1.1, chunked decoding.

Nothing is mocked: :func:`open_stream` dials the room (TCP or its Unix
socket), sends ``GET`` and parses the response head; :class:`SSEStream`
then yields parsed frames (``Frame``) as the bytes arrive, or lets a test
stop reading on purpose (``paused`` readers leave the bytes in the kernel).
"""

from __future__ import annotations

import socket
import threading
import time
from collections import deque
from typing import Iterator

from commonroom.protocol import BYTE_CLIENT_HOST, EVENT_STREAM_TYPE
from commonroom.sse_client import Frame, SSEParser

__all__ = ["Collector", "Frame", "SSEStream", "open_stream", "wait_until"]


class SSEStream:
    """An open response. ``status``/``headers`` are parsed; frames on demand."""

    def __init__(self, sock: socket.socket, status: int, headers: dict[str, str], rest: bytes):
        self.sock = sock
        self.status = status
        self.headers = headers
        self.chunked = headers.get("transfer-encoding", "").lower() == "chunked"
        self._raw = rest  # undecoded bytes after the head
        self._body = b""  # decoded body bytes not yet given to the parser
        self._parser = SSEParser()
        self._ready: deque[Frame] = deque()  # parsed frames not yet handed out
        self.eof = False
        self.body_text = ""

    # -- bytes -------------------------------------------------------------
    def _recv(self, timeout: float | None) -> bool:
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(262144)
        except socket.timeout:
            return False
        except OSError:
            data = b""
        if not data:
            self.eof = True
            return False
        self._raw += data
        return True

    def _decode(self) -> None:
        if not self.chunked:
            self._body += self._raw
            self._raw = b""
            return
        while True:
            head, sep, tail = self._raw.partition(b"\r\n")
            if not sep:
                return
            size = int(head.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                self._raw = b""
                self.eof = True
                return
            if len(tail) < size + 2:
                return
            self._body += tail[:size]
            self._raw = tail[size + 2:]

    def feed(self, data: bytes = b"", *, eof: bool = False) -> list[Frame]:
        """Frames completed by ``data`` (bytes a caller read itself; ``eof``: the peer closed)."""
        if eof:
            self.eof = True
        self._raw += data
        self._decode()
        return list(self._parse())

    # -- frames ------------------------------------------------------------
    def _parse(self) -> Iterator[Frame]:
        if self._body:
            self._ready.extend(self._parser.feed(self._body))
            self._body = b""
        if self.eof:
            self._ready.extend(self._parser.close())
        while self._ready:
            yield self._ready.popleft()

    def frames(self, timeout: float = 10.0) -> Iterator[Frame]:
        """Frames until EOF; ``TimeoutError`` if nothing new comes for ``timeout`` s."""
        while True:
            self._decode()
            yield from self._parse()
            if self.eof:
                return
            if not self._recv(timeout):
                if self.eof:
                    self._decode()
                    yield from self._parse()
                    return
                raise TimeoutError(f"no SSE bytes for {timeout} s")

    def next(self, timeout: float = 10.0) -> Frame | None:
        """The next frame (None at EOF)."""
        for frame in self.frames(timeout):
            return frame
        return None

    def events(self, count: int, timeout: float = 10.0) -> list[Frame]:
        """The next ``count`` event frames (comments and retry skipped)."""
        out: list[Frame] = []
        for frame in self.frames(timeout):
            if frame.event is not None:
                out.append(frame)
                if len(out) == count:
                    break
        return out

    def read_to_end(self, timeout: float = 10.0) -> list[Frame]:
        """Every frame until the server ends the stream."""
        return list(self.frames(timeout))

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def open_stream(
    address: tuple[str, int] | str,
    path: str = "/workspace/observe",
    *,
    token: str | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 10.0,
    method: str = "GET",
    body: bytes | None = None,
) -> SSEStream:
    """``GET path`` (or ``method`` with ``body``) as an event stream on ``(host, port)`` or a Unix socket path."""
    if isinstance(address, str):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        sock.connect(address)
    else:
        sock = socket.create_connection(address, timeout=timeout)
    lines = [f"{method} {path} HTTP/1.1", f"Host: {BYTE_CLIENT_HOST}"]
    if not any(name.lower() == "accept" for name in headers or {}):
        lines.append(f"Accept: {EVENT_STREAM_TYPE}")
    if token:
        lines.append(f"Authorization: Bearer {token}")
    for name, value in (headers or {}).items():
        lines.append(f"{name}: {value}")
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b""))
    raw = b""
    while b"\r\n\r\n" not in raw:
        data = sock.recv(65536)
        if not data:
            raise ConnectionError(f"closed before the response head: {raw!r}")
        raw += data
    head, _, rest = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parsed = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        parsed[name.strip().lower()] = value.strip()
    stream = SSEStream(sock, int(status_line.split()[1]), parsed, rest)
    if stream.status != 200:
        body = rest
        if "content-length" in parsed:
            while len(body) < int(parsed["content-length"]):
                data = sock.recv(65536)
                if not data:
                    break
                body += data
        stream.body_text = body.decode("utf-8", "replace")
        sock.close()
    return stream


class Collector(threading.Thread):
    """Reads a stream in a thread until ``until_id`` (or EOF), keeping event frames."""

    def __init__(self, stream: SSEStream, until_id: int | None = None, timeout: float = 30.0):
        super().__init__(daemon=True)
        self.stream = stream
        self.until_id = until_id
        self.timeout = timeout
        self.frames: list[Frame] = []
        self.error: BaseException | None = None
        self.ended = False

    def run(self) -> None:
        try:
            for frame in self.stream.frames(self.timeout):
                if frame.event is None:
                    continue
                self.frames.append(frame)
                if self.until_id is not None and frame.id is not None and int(frame.id) >= self.until_id:
                    return
            self.ended = True
        except BaseException as exc:  # reported by the test
            self.error = exc

    @property
    def ids(self) -> list[int]:
        return [int(f.id) for f in self.frames if f.id is not None]


def wait_until(predicate, timeout: float = 10.0, interval: float = 0.02) -> bool:
    """Poll ``predicate`` until true or ``timeout``; returns its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())
