"""Load generators for the benchmarks: ``wrk`` when installed, else our own asyncio one.

- :class:`KeepAlive`: one blocking HTTP/1.1 keep-alive connection (raw
  socket, ``Content-Length`` bodies), for latency probes where an HTTP
  library's own cost must not dominate (httpx spends milliseconds on a 1 MB
  body).
- :func:`asyncio_load`: ``connections`` keep-alive connections sending the
  same request back to back for ``seconds``; requests/s and latency
  percentiles. Pure stdlib.
- :func:`wrk`: the same through ``wrk`` (Debian's package) when it is on
  ``PATH``; :func:`http_load` picks one and says which.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from typing import Any
from urllib.parse import urlsplit


def request_bytes(method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b"",
                  host: str = "127.0.0.1") -> bytes:
    """An HTTP/1.1 keep-alive request (``Host: host``: the listener's own address)."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body)}")
        lines.append("Content-Type: application/json")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def _head(raw: bytes) -> tuple[int, dict[str, str]]:
    lines = raw.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return status, headers


class KeepAlive:
    """One keep-alive connection to ``base`` (``http://host:port``)."""

    def __init__(self, base: str, receive_buffer: int | None = None):
        """Connect to ``base``; ``receive_buffer``: the socket's ``SO_RCVBUF`` in bytes, set before it connects."""
        parts = urlsplit(base)
        self.sock = socket.socket()
        if receive_buffer is not None:  # before connect, so the window offered to the server is small too
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        self.sock.connect((parts.hostname, parts.port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = bytearray()
        #: the head of the last answer, as it came (status line and header lines)
        self.head = b""

    def call(self, raw: bytes) -> tuple[int, dict[str, str], bytes | bytearray]:
        """Send one request (from :func:`request_bytes`); its status, headers and body (:meth:`answer`)."""
        self.sock.sendall(raw)
        return self.answer()

    def answer(self) -> tuple[int, dict[str, str], bytes | bytearray]:
        """The next answer on the connection: its status, headers and body (requests may be pipelined).

        The body is received straight into one buffer of its Content-Length
        (``recv_into``), so a 1 MB answer costs the client one copy, as in a
        client written in C, not the several of growing and slicing a buffer.
        """
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        end = self.buffer.index(b"\r\n\r\n")
        self.head = bytes(self.buffer[:end])
        status, headers = _head(self.head)
        del self.buffer[: end + 4]
        size = int(headers.get("content-length", "0"))
        body = bytearray(size)
        view = memoryview(body)
        have = min(size, len(self.buffer))
        view[:have] = self.buffer[:have]
        del self.buffer[:have]
        while have < size:
            got = self.sock.recv_into(view[have:])
            if not got:
                raise ConnectionError("the server closed the connection")
            have += got
        return status, headers, body

    def _fill(self) -> None:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        self.buffer += chunk

    def close(self) -> None:
        """Close the socket."""
        self.sock.close()


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50, p99 and max of ``samples`` (seconds), in ms."""
    ordered = sorted(samples) or [0.0]
    return {"p50": statistics.median(ordered) * 1000,
            "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
            "max": ordered[-1] * 1000}


async def _connection(host: str, port: int, raw: bytes, deadline: float, samples: list[float],
                      statuses: dict[int, int]) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            writer.write(raw)
            head = await reader.readuntil(b"\r\n\r\n")
            status, headers = _head(head[:-4])
            size = int(headers.get("content-length", "0"))
            if size:
                await reader.readexactly(size)
            samples.append(time.perf_counter() - start)
            statuses[status] = statuses.get(status, 0) + 1
    finally:
        writer.close()


async def _load(base: str, raw: bytes, connections: int, seconds: float) -> dict[str, Any]:
    parts = urlsplit(base)
    samples: list[float] = []
    statuses: dict[int, int] = {}
    start = time.perf_counter()
    deadline = start + seconds
    await asyncio.gather(*(_connection(parts.hostname or "127.0.0.1", parts.port or 80, raw, deadline, samples,
                                       statuses) for _ in range(connections)))
    elapsed = time.perf_counter() - start
    return {"rps": len(samples) / elapsed, "statuses": statuses, **percentiles(samples)}


def asyncio_load(base: str, raw: bytes, connections: int = 16, seconds: float = 5.0) -> dict[str, Any]:
    """Requests/s and latency of ``raw`` sent back to back on ``connections`` connections."""
    return asyncio.run(_load(base, raw, connections, seconds))


def lua_string(raw: bytes) -> str:
    """A Lua string literal of exactly the bytes ``raw``: printable ASCII as it is, every other byte, ``\\`` and ``"`` as ``\\ddd``."""
    return '"' + "".join(chr(b) if 32 <= b < 127 and b not in (34, 92) else f"\\{b:03d}" for b in raw) + '"'


def wrk(url: str, headers: dict[str, str], connections: int = 16, seconds: float = 5.0,
        threads: int = 2, method: str = "GET", body: bytes = b"") -> dict[str, Any]:
    """``wrk`` against ``url``: requests/s, p50/p99 latency and non-2xx count.

    Another ``method`` or a ``body`` (UTF-8 text, sent as it is with every
    request) goes through a two-line Lua script, wrk's documented way.
    """
    args = ["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{max(1, int(seconds))}s", "--latency"]
    for name, value in headers.items():
        args += ["-H", f"{name}: {value}"]
    with tempfile.NamedTemporaryFile("w", suffix=".lua", encoding="utf-8") as script:
        if method != "GET" or body:
            script.write(f"wrk.method = {lua_string(method.encode())}\nwrk.body = {lua_string(body)}\n")
            script.flush()
            args += ["-s", script.name]
        out = subprocess.run([*args, url], capture_output=True, text=True, timeout=seconds + 60).stdout

    def ms(label: str) -> float:
        found = re.search(rf"^\s*{label}\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
        if not found:
            return float("nan")
        value, unit = float(found.group(1)), found.group(2)
        return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value

    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    return {"rps": float(rps.group(1)) if rps else 0.0, "p50": ms("50%"), "p99": ms("99%"),
            "non_2xx": int(bad.group(1)) if bad else 0, "raw": out}


def have_wrk() -> bool:
    """True when ``wrk`` is on PATH."""
    return shutil.which("wrk") is not None


def http_load(base: str, path: str, headers: dict[str, str], connections: int = 16,
              seconds: float = 5.0) -> dict[str, Any]:
    """GET ``path`` under load with wrk if installed, else :func:`asyncio_load`; ``tool`` says which."""
    if have_wrk():
        return {"tool": "wrk", **wrk(base + path, headers, connections, seconds)}
    return {"tool": "asyncio", **asyncio_load(base, request_bytes("GET", path, headers), connections, seconds)}
