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
  call. The room is stopped first, so the SDK server has the machine.

The same load generator drives both: ``--clients`` concurrent keep-alive
HTTP/1.1 connections in one asyncio process, each sending the identical
2026-07-28 ``tools/call`` (headers and ``_meta`` as the revision requires)
back to back for ``--seconds`` after a warm-up. It prints calls per second and
p50/p99 latency for each, and the throughput ratio (target: ours >= 2x).
Each server's answer is checked once for the document text before timing.
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
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.roomproc import CORPUS, start_room  # noqa: E402

VERSION = "2026-07-28"
DEFAULT_DOC = "system-design-primer-README-zh-Hans.md"
READ_TOOL = "document_read"


# -- the SDK side ------------------------------------------------------------

def head_text(db_path: str) -> str:
    """The head version's text from a room sidecar (checkpoint plus hunks)."""
    from commonroom import regions
    from commonroom.engine.versions import apply_hunk

    con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT number, content, delta FROM version ORDER BY number DESC LIMIT 64").fetchall()
    finally:
        con.close()
    hunks = []
    for _number, content, delta in rows:
        if content is not None:
            lines = regions.lines_of(content)
            for item in reversed(hunks):
                lines = apply_hunk(lines, item)
            return "".join(lines)
        hunks.append(json.loads(delta))
    raise RuntimeError("no checkpoint within the last 64 versions")


def serve_sdk(db_path: str, port: int, tool_name: str) -> None:
    """Run the official-SDK server (blocking): one tool, uvicorn, one process."""
    import uvicorn
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("sdk-bench", version="1")

    @server.tool(name=tool_name, description="Read the head version of the document.")
    def read_document() -> str:
        return head_text(db_path)

    app = server.streamable_http_app(stateless_http=True, json_response=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


# -- load generator ----------------------------------------------------------

def request_bytes(port: int, token: str | None, tool: str) -> bytes:
    body = json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "mcp-bench", "version": "1"}}},
    }).encode()
    lines = [
        "POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}", "Content-Type: application/json",
        "Accept: application/json, text/event-stream", f"MCP-Protocol-Version: {VERSION}",
        "Mcp-Method: tools/call", f"Mcp-Name: {tool}", f"Content-Length: {len(body)}",
    ]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


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


async def drive(port: int, payload: bytes, clients: int, warmup: float, seconds: float) -> dict[str, Any]:
    """``clients`` keep-alive connections calling back to back; latencies after warm-up."""
    start = time.perf_counter()
    measure_from = start + warmup
    stop_at = measure_from + seconds
    latencies: list[float] = []
    errors = 0
    reconnects = 0

    async def worker() -> None:
        nonlocal errors, reconnects
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while True:
                began = time.perf_counter()
                if began >= stop_at:
                    return
                writer.write(payload)
                status, _body, close = await _read_response(reader)
                ended = time.perf_counter()
                if began >= measure_from:
                    if status == 200:
                        latencies.append(ended - began)
                    else:
                        errors += 1
                if close:
                    writer.close()
                    reconnects += 1
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
        finally:
            writer.close()

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
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=2.0)
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
    print(f"document: {args.doc} ({source.stat().st_size} bytes), {args.clients} clients, "
          f"{args.seconds:.0f}s after {args.warmup:.0f}s warm-up", flush=True)
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="mcp-bench-") as tmp:
        room = start_room(Path(tmp), source, name=args.doc)
        try:
            reader = room.join("bench-reader", "read")
            port = room.state["ingress"]["port"]
            payload = request_bytes(port, reader.token, args.tool)
            status, body = asyncio.run(one_call(port, payload))
            if status != 200:
                raise SystemExit(f"commonroom: HTTP {status}: {body[:500]!r}")
            size = check_answer(body, text, "commonroom")
            print(f"commonroom answer: {size} bytes", flush=True)
            results["commonroom"] = asyncio.run(drive(port, payload, args.clients, args.warmup, args.seconds))
        finally:
            room.stop()
        db = str(room.document.with_name(room.document.name + ".commonroom.db"))
        port = free_port()
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen([sys.executable, __file__, "--serve-sdk", db, str(port), "--tool", args.tool],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            wait_port(port, proc)
            payload = request_bytes(port, None, args.tool)
            status, body = asyncio.run(one_call(port, payload))
            if status != 200:
                raise SystemExit(f"official SDK: HTTP {status}: {body[:500]!r}")
            size = check_answer(body, text, "official SDK")
            print(f"official SDK answer: {size} bytes", flush=True)
            results["official SDK"] = asyncio.run(drive(port, payload, args.clients, args.warmup, args.seconds))
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()

    print()
    print(f"{'server':<14} {'calls/s':>10} {'p50 ms':>9} {'p99 ms':>9} {'calls':>8} {'errors':>7}")
    for name, r in results.items():
        print(f"{name:<14} {r['per_second']:>10.0f} {r['p50_ms']:>9.1f} {r['p99_ms']:>9.1f} "
              f"{r['calls']:>8} {r['errors']:>7}")
    ratio = results["commonroom"]["per_second"] / max(results["official SDK"]["per_second"], 1e-9)
    print(f"\nthroughput ratio commonroom / official SDK: {ratio:.2f}x (target >= 2x)")


if __name__ == "__main__":
    main()
