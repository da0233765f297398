"""Stream clients of the soak suite (tests/e2e/test_soak.py), one kind per process.

Run by the suite as ``python -m tests.soak_streams SPEC_JSON``. The process
opens ``count`` streams of one kind on the room's ingress, prints
``ready``, then reads every stream on one epoll selector (plain sockets,
the least client work per frame, as tests/bench/fanout.py) until a line on
stdin says stop; it then writes one record per stream to ``out`` (JSON)
and prints ``done``.

Kinds:

- ``observe``: ``GET /workspace/observe?since_event_id=S``; the record
  keeps every event id in arrival order and the ``resync`` frame, if any.
- ``mcp_get``: ``GET /mcp`` (the session subscribed to the document
  beforehand); ``listen``: ``POST /mcp`` ``subscriptions/listen`` with
  ``resourceSubscriptions`` = the document. Both keep the number of
  ``notifications/resources/updated`` frames and the wall time of the last.
- ``board``: one kept-alive connection per waiter doing
  ``observe_session_messages`` long-polls (``wait_seconds``) in a loop,
  each with the token the previous answer returned; the record keeps every
  message id seen, the number of waits and every non-200 answer.

Every record says whether (and how) the stream ended before stop.
"""

from __future__ import annotations

import json
import resource
import selectors
import socket
import sys
import time
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import quote

from commonroom.protocol import BYTE_CLIENT_HOST, MCP_VERSION, VERSION_HEADER
from tests.bench.longpoll import _response
from tests.mcp_wire import Mcp
from tests.ssekit import SSEStream, open_stream

DOCUMENT_URI = "commonroom://workspace/document"
UPDATED = "notifications/resources/updated"


def _record(kind: str) -> dict[str, Any]:
    return {"kind": kind, "ids": [], "updates": 0, "last_update": 0.0, "ended": None, "resync": None,
            "final": None, "waits": 0, "errors": [], "messages": []}


def _open(spec: dict[str, Any], i: int) -> SSEStream:
    """Stream ``i`` of an SSE kind, head read; raises unless 200."""
    address = ("127.0.0.1", spec["port"])
    token = spec["tokens"][i % len(spec["tokens"])]
    if spec["kind"] == "observe":
        stream = open_stream(address, f"/workspace/observe?since_event_id={spec['since']}", token=token)
    elif spec["kind"] == "mcp_get":
        stream = open_stream(address, "/mcp", token=token, headers={VERSION_HEADER: MCP_VERSION})
    else:
        caller = Mcp("", token)
        params = {"notifications": {"resourceSubscriptions": [DOCUMENT_URI]}}
        body = json.dumps(caller.body("subscriptions/listen", params, id=f"soak-{spec['index']}-{i}")).encode()
        stream = open_stream(address, "/mcp", method="POST", body=body,
                             headers=caller.headers("subscriptions/listen", params))
    if stream.status != 200:
        raise SystemExit(f"{spec['kind']} refused: {stream.status} {stream.body_text[:300]}")
    return stream


def _take(record: dict[str, Any], frames: list, now: float) -> None:
    """Note what ``frames`` of one SSE stream carry."""
    for frame in frames:
        if frame.event == "resync":
            record["resync"] = frame.json()
        elif frame.id is not None and record["kind"] == "observe":
            record["ids"].append(int(frame.id))
        elif frame.event == "message":
            message = frame.json()
            if message.get("method") == UPDATED:
                record["updates"] += 1
                record["last_update"] = now
            elif "result" in message:
                record["final"] = message["result"]


def arrivals(socks: list[socket.socket]) -> Iterator[tuple[int, bytes]]:
    """``(index, bytes)`` as the sockets deliver them (``b""``: that peer closed, it is dropped),
    after printing ``ready``, until a line arrives on stdin."""
    selector = selectors.DefaultSelector()
    for i, sock in enumerate(socks):
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ, i)
    selector.register(sys.stdin, selectors.EVENT_READ, -1)
    print("ready", flush=True)
    while True:
        for key, _ in selector.select(1.0):
            if key.data < 0:
                return
            try:
                data = socks[key.data].recv(262144)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                selector.unregister(socks[key.data])
            yield key.data, data


def sse_process(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Hold ``count`` SSE streams until stop; their records."""
    streams = [_open(spec, i) for i in range(spec["count"])]
    records = [_record(spec["kind"]) for _ in streams]
    for i, stream in enumerate(streams):
        _take(records[i], stream.feed(), time.time())  # what came with the head
    for i, data in arrivals([stream.sock for stream in streams]):
        _take(records[i], streams[i].feed(data, eof=not data), time.time())
        if streams[i].eof:
            records[i]["ended"] = time.time()
    return records


def _wait_request(spec: dict[str, Any], i: int, after: str) -> bytes:
    token = spec["tokens"][i % len(spec["tokens"])]
    query = f"after_observation_token={quote(after, safe='')}&wait_seconds={spec['wait']}"
    return (f"GET /workspace/boards/{spec['board']}/observe?{query} HTTP/1.1\r\nHost: {BYTE_CLIENT_HOST}\r\n"
            f"Authorization: Bearer {token}\r\n\r\n").encode()


def board_process(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """``count`` waiters long-polling one board in a loop until stop; their records."""
    records = [_record("board") for _ in range(spec["count"])]
    after = [spec["after"]] * spec["count"]
    buffers = [b""] * spec["count"]
    socks = [socket.create_connection(("127.0.0.1", spec["port"])) for _ in range(spec["count"])]
    for i, sock in enumerate(socks):
        sock.sendall(_wait_request(spec, i, after[i]))
        records[i]["waits"] += 1
    for i, data in arrivals(socks):
        if not data:
            records[i]["ended"] = time.time()
            continue
        buffers[i] += data
        parsed = _response(buffers[i])
        if parsed is None:
            continue
        status, body, buffers[i] = parsed
        if status == 200:
            records[i]["messages"] += [m["message_id"] for m in body.get("messages", [])]
            after[i] = body["observation_token"]
        else:
            records[i]["errors"].append([status, body])
            time.sleep(0.05)
        socks[i].setblocking(True)
        socks[i].sendall(_wait_request(spec, i, after[i]))
        socks[i].setblocking(False)
        records[i]["waits"] += 1
    return records


def main() -> None:
    """One client process: ``SPEC_JSON`` = {kind, port, tokens, count, out, …}."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    spec = json.loads(sys.argv[1])
    records = board_process(spec) if spec["kind"] == "board" else sse_process(spec)
    Path(spec["out"]).write_text(json.dumps(records))
    print("done", flush=True)


if __name__ == "__main__":
    main()
