"""Benchmark: MCP ``tools/call`` of the read-document tool, ours vs the official SDK.

Run::

    /tmp/venv/bin/python tests/bench/mcp_calls.py [--seconds 10] [--clients 16] [--doc NAME]

One run, side by side, on the same document and the same SQLite sidecar:

- **commonroom**: a real room (``ce serve``: gunicorn, one asgi worker,
  Falcon) on a copy of a corpus document; a participant with ``read`` calls
  the room's read-document tool through ``POST /mcp`` with its bearer.
- **official SDK**: a server built on the official Python SDK (``mcp``
  2.3.0, ``MCPServer`` with its stateless streamable HTTP app, JSON
  responses, served by uvicorn, one process) exposing an equivalent tool
  that reads the head version's text from the room's sidecar
  (``<file>.commonroom.db``, table ``version``, highest ``number``) on every
  call.
- **bare app**: :mod:`tests.bench.bare_app` (Falcon on gunicorn ``-k asgi
  -w 1``, as the room) answering every request with exactly the bytes of the
  room's answer: the stack's ceiling for this answer.

The same load drives all three, in alternating rounds: ``wrk`` (a Lua
script sets the method and body) when it is installed, else the asyncio
generator below; ``--clients`` concurrent keep-alive HTTP/1.1 connections
sending the identical 2026-07-28 ``tools/call`` (headers and ``_meta`` as
the revision requires) back to back for ``--seconds`` after a warm-up. It
prints calls per second and p50/p99 latency for each, and the ratios
(targets: ours ≥ 4× the SDK, and ≥ 0.6× the bare app). Each server's
answer is checked once for the document text before timing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from commonroom.protocol import MCP_VERSION, META_CAPABILITIES, META_CLIENT_INFO, META_VERSION  # noqa: E402
from tests.bench import bare_app, load  # noqa: E402
from tests.roomproc import CORPUS, start_room  # noqa: E402

VERSION = MCP_VERSION
DEFAULT_DOC = "system-design-primer-README-zh-Hans.md"
READ_TOOL = "document_read"


# -- the SDK side ------------------------------------------------------------

_local = threading.local()


def head_text(db_path: str) -> str:
    """The head version's text from a room sidecar (checkpoint plus hunks).

    One read-only connection per thread, kept open; the usual head row is a
    checkpoint (its text stored as is, or compressed in ``packed``).
    """
    con = getattr(_local, "con", None)
    if con is None:
        con = _local.con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, check_same_thread=False)
    from commonroom.engine.checkpoints import unpack

    def text_of(content: str | None, packed: bytes | None) -> str | None:
        return content if content is not None else None if packed is None else unpack(packed)

    number, content, packed, delta = con.execute(
        "SELECT number, content, packed, delta FROM version ORDER BY number DESC LIMIT 1").fetchone()
    text = text_of(content, packed)
    if text is not None:
        return text
    from commonroom import regions
    from commonroom.engine.versions import apply_hunk

    hunks = [json.loads(delta)]
    for _number, content, packed, delta in con.execute(
            "SELECT number, content, packed, delta FROM version WHERE number < ? ORDER BY number DESC LIMIT 1100",
            (number,)):
        text = text_of(content, packed)
        if text is not None:
            lines = regions.lines_of(text)
            for item in reversed(hunks):
                lines = apply_hunk(lines, item)
            return "".join(lines)
        hunks.append(json.loads(delta))
    raise RuntimeError("no checkpoint within the last 1,100 versions")


def serve_sdk(db_path: str, port: int, tool_name: str) -> None:
    """Run the official-SDK server (blocking): one tool, uvicorn, one process."""
    import uvicorn
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("sdk-bench", version="1", log_level="WARNING")

    @server.tool(name=tool_name, description="Read the head version of the document.")
    def read_document() -> str:
        return head_text(db_path)

    app = server.streamable_http_app(stateless_http=True, json_response=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


# -- load generator ----------------------------------------------------------

def request_parts(token: str | None, tool: str) -> tuple[dict[str, str], bytes]:
    """The headers (no Host, no Content-Length) and body of the ``tools/call`` every client sends."""
    body = json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": {}, "_meta": {
            META_VERSION: VERSION,
            META_CAPABILITIES: {},
            META_CLIENT_INFO: {"name": "mcp-bench", "version": "1"}}},
    }).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": VERSION, "Mcp-Method": "tools/call", "Mcp-Name": tool}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers, body


def request_bytes(port: int, token: str | None, tool: str) -> bytes:
    """The whole HTTP/1.1 request of :func:`request_parts`, for the asyncio generator."""
    headers, body = request_parts(token, tool)
    lines = ["POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}", *(f"{k}: {v}" for k, v in headers.items()),
             f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def measure(port: int, token: str | None, tool: str, clients: int, warmup: float, seconds: float) -> dict[str, Any]:
    """One round against the server on ``port``: ``wrk`` when installed (``tool`` says which), else :func:`drive`."""
    if load.have_wrk():
        headers, body = request_parts(token, tool)
        load.wrk(f"http://127.0.0.1:{port}/mcp", headers, clients, warmup, method="POST", body=body)
        r = load.wrk(f"http://127.0.0.1:{port}/mcp", headers, clients, seconds, method="POST", body=body)
        return {"tool": "wrk", "calls": int(r["rps"] * seconds), "errors": r["non_2xx"], "reconnects": 0,
                "per_second": r["rps"], "p50_ms": r["p50"], "p99_ms": r["p99"]}
    return {"tool": "asyncio", **asyncio.run(drive(port, request_bytes(port, token, tool), clients, warmup, seconds))}


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    status = int(status_line.split(" ", 2)[1])
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        if name:
            headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        parts = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
        body = b"".join(parts)
    else:
        body = await reader.read()
    close = headers.get("connection", "").lower() == "close"
    return status, body, close


async def one_call(port: int, payload: bytes) -> tuple[int, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(payload)
        await writer.drain()
        status, body, _ = await _read_response(reader)
        return status, body
    finally:
        writer.close()


class _Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection with one request in flight.

    Bodies are counted, not kept (``Content-Length``, or the end of a chunked
    body), so the generator copies as little as possible.
    """

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future | None = None
        self.head = b""
        self.remaining: int | None = None
        self.chunked = False
        self.tail = b""
        self.status = 0
        self.close = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def send(self, payload: bytes) -> asyncio.Future:
        self.waiter = asyncio.get_running_loop().create_future()
        self.head, self.remaining, self.chunked, self.tail = b"", None, False, b""
        self.transport.write(payload)
        return self.waiter

    def data_received(self, data: bytes) -> None:
        if self.remaining is None and not self.chunked:
            self.head += data
            index = self.head.find(b"\r\n\r\n")
            if index < 0:
                return
            head, data = self.head[:index].decode("latin-1"), self.head[index + 4:]
            lines = head.split("\r\n")
            self.status = int(lines[0].split(" ", 2)[1])
            headers = {n.strip().lower(): v.strip() for n, _, v in (line.partition(":") for line in lines[1:])}
            self.close = headers.get("connection", "").lower() == "close"
            if "content-length" in headers:
                self.remaining = int(headers["content-length"])
            else:
                self.chunked = True
        if self.chunked:
            self.tail = (self.tail + data)[-7:]
            if self.tail.endswith(b"0\r\n\r\n"):
                self._done()
            return
        self.remaining -= len(data)
        if self.remaining <= 0:
            self._done()

    def _done(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(self.status)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(ConnectionError("connection lost"))


async def drive(port: int, payload: bytes, clients: int, warmup: float, seconds: float) -> dict[str, Any]:
    """``clients`` keep-alive connections calling back to back; latencies after warm-up."""
    loop = asyncio.get_running_loop()
    start = time.perf_counter()
    measure_from = start + warmup
    stop_at = measure_from + seconds
    latencies: list[float] = []
    errors = 0
    reconnects = 0

    async def connect() -> _Connection:
        _transport, protocol = await loop.create_connection(_Connection, "127.0.0.1", port)
        return protocol

    async def worker() -> None:
        nonlocal errors, reconnects
        connection = await connect()
        try:
            while True:
                began = time.perf_counter()
                if began >= stop_at:
                    return
                status = await connection.send(payload)
                ended = time.perf_counter()
                if began >= measure_from:
                    if status == 200:
                        latencies.append(ended - began)
                    else:
                        errors += 1
                if connection.close:
                    connection.transport.close()
                    reconnects += 1
                    connection = await connect()
        finally:
            connection.transport.close()

    await asyncio.gather(*(worker() for _ in range(clients)))
    latencies.sort()
    count = len(latencies)
    return {
        "calls": count,
        "errors": errors,
        "reconnects": reconnects,
        "per_second": count / seconds,
        "p50_ms": statistics.median(latencies) * 1000 if latencies else float("nan"),
        "p99_ms": latencies[min(count - 1, int(count * 0.99))] * 1000 if latencies else float("nan"),
    }


def check_answer(body: bytes, text: str, who: str) -> int:
    """The answer is a complete CallToolResult containing the document text; returns its size."""
    answer = json.loads(body)
    result = answer.get("result")
    if not isinstance(result, dict) or result.get("isError"):
        raise SystemExit(f"{who}: unexpected answer {body[:500]!r}")
    if text[:2000] not in _texts(result):
        raise SystemExit(f"{who}: the answer does not carry the document text")
    return len(body)


def _texts(result: dict[str, Any]) -> str:
    out = []
    for item in result.get("content") or []:
        if item.get("type") == "text":
            out.append(item["text"])
            try:
                value = json.loads(item["text"])
                if isinstance(value, dict):
                    out.extend(str(v) for v in value.values())
            except ValueError:
                pass
    structured = result.get("structuredContent")
    if isinstance(structured, dict):
        out.extend(str(v) for v in structured.values())
    return "\n".join(out)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the SDK server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("the SDK server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="measured seconds per round and server")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (medians are reported)")
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--doc", default=DEFAULT_DOC, help="corpus document name")
    parser.add_argument("--tool", default=READ_TOOL, help="the room's read-document tool")
    parser.add_argument("--serve-sdk", nargs=2, metavar=("DB", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_sdk:
        serve_sdk(args.serve_sdk[0], int(args.serve_sdk[1]), args.tool)
        return

    source = CORPUS / args.doc
    text = source.read_text("utf-8")
    print(f"document: {args.doc} ({source.stat().st_size} bytes); {args.clients} concurrent clients; "
          f"{args.rounds} alternating rounds of {args.seconds:.0f}s per server (after {args.warmup:.0f}s warm-up)",
          flush=True)
    rounds: dict[str, list[dict[str, Any]]] = {"commonroom": [], "official SDK": [], "bare app": []}
    with tempfile.TemporaryDirectory(prefix="mcp-bench-") as tmp:
        # The seed's 600 requests a minute per bearer would cap one client at
        # 10 calls/s: the room runs with the operator override instead (the
        # limiter stays on the request path, counting every call).
        os.environ["COMMONROOM_RATE_LIMIT"] = str(10**9)
        room = start_room(Path(tmp), source, name=args.doc)
        proc = bare = None
        try:
            reader = room.join("bench-reader", "read")
            ours_port = room.state["ingress"]["port"]
            db = str(room.document.with_name(room.document.name + ".commonroom.db"))
            theirs_port = free_port()
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            proc = subprocess.Popen([sys.executable, __file__, "--serve-sdk", db, str(theirs_port),
                                     "--tool", args.tool], env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            wait_port(theirs_port, proc)
            targets = {"commonroom": (ours_port, reader.token), "official SDK": (theirs_port, None)}
            for name, (port, token) in list(targets.items()):
                status, body = asyncio.run(one_call(port, request_bytes(port, token, args.tool)))
                if status != 200:
                    raise SystemExit(f"{name}: HTTP {status}: {body[:500]!r}")
                print(f"{name}: answer of {check_answer(body, text, name)} bytes carries the document", flush=True)
                if name == "commonroom":  # the bare app answers every request with exactly these bytes
                    answer = Path(tmp) / "answer.json"
                    answer.write_bytes(body)
                    bare, bare_base = bare_app.serve(answer)
                    targets["bare app"] = (int(bare_base.rsplit(":", 1)[1]), None)
            print(f"load: {'wrk' if load.have_wrk() else 'asyncio'}", flush=True)
            for number in range(args.rounds):
                order = list(targets) if number % 2 == 0 else list(reversed(targets))
                for name in order:
                    port, token = targets[name]
                    result = measure(port, token, args.tool, args.clients, args.warmup, args.seconds)
                    rounds[name].append(result)
                    print(f"  round {number + 1} {name:<13} {result['per_second']:7.0f} calls/s  "
                          f"p99 {result['p99_ms']:6.1f} ms  errors {result['errors']}", flush=True)
        finally:
            for server in (proc, bare):
                if server is not None:
                    server.terminate()
                    try:
                        server.wait(10)
                    except subprocess.TimeoutExpired:
                        server.kill()
            room.stop()

    print()
    print(f"{'server':<14} {'calls/s':>10} {'p50 ms':>9} {'p99 ms':>9} {'calls':>8} {'errors':>7}   (medians of rounds)")
    summary = {}
    for name, results in rounds.items():
        summary[name] = {key: statistics.median(r[key] for r in results)
                         for key in ("per_second", "p50_ms", "p99_ms")}
        summary[name]["calls"] = sum(r["calls"] for r in results)
        summary[name]["errors"] = sum(r["errors"] for r in results)
        r = summary[name]
        print(f"{name:<14} {r['per_second']:>10.0f} {r['p50_ms']:>9.1f} {r['p99_ms']:>9.1f} "
              f"{r['calls']:>8} {r['errors']:>7}")
    ours = summary["commonroom"]["per_second"]
    print(f"\nthroughput ratio commonroom / official SDK: {ours / max(summary['official SDK']['per_second'], 1e-9):.2f}x"
          f" (target >= 4x); commonroom / bare app, same answer bytes: "
          f"{ours / max(summary['bare app']['per_second'], 1e-9):.2f}x (target >= 0.6x)")


if __name__ == "__main__":
    main()
