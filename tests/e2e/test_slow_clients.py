"""Slow and oversized clients on a real room.

The read timeouts are shortened through the room's environment
(``COMMONROOM_HEADER_TIMEOUT``, ``COMMONROOM_BODY_TIMEOUT``; defaults 10 s
and 30 s, docs/operator.md) so the test runs in seconds. The figures of the
slow-client run are printed (``pytest -s`` shows them).
"""

from __future__ import annotations

import json
import select
import socket
import statistics
import threading
import time

import httpx
import pytest

from tests.conftest import SAMPLE
from tests.roomproc import ce, start_room

HEADER_TIMEOUT = 2.0
BODY_TIMEOUT = 2.0
TEN_MB = 10 * 1024 * 1024
SLOW = 200


@pytest.fixture
def quick_room(tmp_path, monkeypatch):
    """A room whose header and body timeouts are 2 s."""
    monkeypatch.setenv("COMMONROOM_HEADER_TIMEOUT", str(HEADER_TIMEOUT))
    monkeypatch.setenv("COMMONROOM_BODY_TIMEOUT", str(BODY_TIMEOUT))
    room = start_room(tmp_path, SAMPLE)
    yield room
    room.stop()


def read_all(sock: socket.socket, timeout: float = 10.0) -> tuple[bytes, bool]:
    """Everything until the server closes: ``(bytes, closed)``."""
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except socket.timeout:
        return data, False
    except ConnectionResetError:
        pass
    return data, True


def status_and_body(raw: bytes) -> tuple[int, dict]:
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)


def connect(room) -> socket.socket:
    return socket.create_connection(("127.0.0.1", room.state["ingress"]["port"]))


def test_slow_headers_and_a_stalled_body_are_closed_while_requests_keep_answering(quick_room):
    room = quick_room
    reader = room.join("reader", "read")
    request = b"GET /workspace/room HTTP/1.1\r\nHost: commonroom\r\nAuthorization: Bearer x\r\n\r\n"
    started = time.monotonic()
    slow = [connect(room) for _ in range(SLOW)]
    for sock in slow:
        sock.setblocking(False)
    stalled = connect(room)
    stalled.sendall(b"POST /workspace/join HTTP/1.1\r\nHost: commonroom\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 100\r\n\r\n{")

    latencies: list[float] = []
    statuses: list[int] = []
    stop = threading.Event()

    def ordinary() -> None:
        with httpx.Client(base_url=room.ingress, headers={"Authorization": f"Bearer {reader.token}"},
                          timeout=10) as client:
            while not stop.is_set():
                t = time.monotonic()
                statuses.append(client.get("/workspace/document").status_code)
                latencies.append(time.monotonic() - t)
                time.sleep(0.05)

    worker = threading.Thread(target=ordinary)
    worker.start()
    sent = {sock: 0 for sock in slow}
    answers: dict[socket.socket, bytes] = {sock: b"" for sock in slow}
    closed_at: dict[socket.socket, float] = {}
    deadline = started + HEADER_TIMEOUT + 8
    try:
        # one header byte per connection every 0.25 s, never the last one: no header is ever whole.
        # The rounds are paced by the clock, not by select, which returns early once answers arrive.
        next_round = time.monotonic()
        while len(closed_at) < SLOW and time.monotonic() < deadline:
            if time.monotonic() >= next_round:
                next_round += 0.25
                for sock in slow:
                    if sock in closed_at or sent[sock] >= len(request) - 1:
                        continue
                    try:
                        sent[sock] += sock.send(request[sent[sock]:sent[sock] + 1])
                    except (BlockingIOError, BrokenPipeError, ConnectionResetError):
                        pass
            wait = max(0.0, min(0.25, next_round - time.monotonic()))
            readable, _, _ = select.select([s for s in slow if s not in closed_at], [], [], wait)
            for sock in readable:
                try:
                    chunk = sock.recv(65536)
                except ConnectionResetError:
                    chunk = b""
                except BlockingIOError:
                    continue
                answers[sock] += chunk
                if not chunk:
                    closed_at[sock] = time.monotonic() - started
        stalled_raw, stalled_closed = read_all(stalled)
        stalled_after = time.monotonic() - started
    finally:
        stop.set()
        worker.join()
        for sock in slow + [stalled]:
            sock.close()

    timed_out = sum(1 for sock in slow if sock in closed_at and answers[sock].startswith(b"HTTP/1.1 408 "))
    most_sent = max(sent.values())
    lat = sorted(latencies)
    p50 = statistics.median(lat)
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
    print(f"\nslow clients: {SLOW} slow-header connections opened (at most {most_sent} header bytes each), "
          f"{len(closed_at)} closed by the server, {timed_out} of them answered 408 by the header timeout "
          f"({HEADER_TIMEOUT:g} s), last closed after {max(closed_at.values(), default=0):.2f} s; "
          f"stalled body closed={stalled_closed} after {stalled_after:.2f} s; "
          f"ordinary requests: {len(lat)}, statuses {sorted(set(statuses))}, "
          f"latency p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, max {lat[-1] * 1000:.1f} ms")

    assert len(closed_at) == SLOW and timed_out == SLOW
    assert max(closed_at.values()) < HEADER_TIMEOUT + 5
    assert most_sent <= (HEADER_TIMEOUT + 8) / 0.25 + 1  # the rounds kept their pace
    status, body = status_and_body(next(iter(answers.values())))
    assert status == 408 and body["error"] == "limit_exceeded" and body["details"]["limit"] == "header_timeout"
    assert stalled_closed
    status, body = status_and_body(stalled_raw)
    assert status == 408 and body["details"] == {"limit": "body_timeout", "timeout_seconds": BODY_TIMEOUT}
    assert statuses and set(statuses) == {200}
    assert p99 < 2.0


def trickle(sock: socket.socket, pieces: list[bytes]) -> tuple[bytes, float]:
    """Send ``pieces`` one every 0.4 s (none left: only wait) and read what the room answers until it
    closes or the body's deadline is long past: ``(bytes read, seconds from the first piece's turn)``."""
    started = time.monotonic()
    sock.setblocking(False)
    raw = b""
    while time.monotonic() - started < BODY_TIMEOUT + 5:
        if pieces:
            try:
                sock.send(pieces[0])
                pieces.pop(0)
            except (BlockingIOError, BrokenPipeError, ConnectionResetError):
                pass
        readable, _, _ = select.select([sock], [], [], 0.4)
        if readable:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                chunk = b""
            raw += chunk
            if not chunk:
                break
    return raw, time.monotonic() - started


def test_a_trickled_body_is_bounded_as_a_whole(quick_room):
    """One body byte every 0.4 s keeps every single wait short; the whole body still times out."""
    sock = connect(quick_room)
    try:
        sock.sendall(b"POST /workspace/join HTTP/1.1\r\nHost: commonroom\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n")
        raw, elapsed = trickle(sock, [b" "] * 100)
    finally:
        sock.close()
    status, body = status_and_body(raw)
    assert status == 408 and body["details"]["limit"] == "body_timeout"
    assert BODY_TIMEOUT - 0.5 < elapsed < BODY_TIMEOUT + 3


@pytest.mark.parametrize("trickled", [False, True])
def test_a_slow_body_of_a_write_the_front_door_reads_is_bounded_too(quick_room, trickled):
    """A lease request with a live bearer is the front door's (commonroom/front/), whose body is read
    under the worker's BodyGuard as any other: a body stalled after three bytes, or trickled a byte every
    0.4 s, is 408 body_timeout at the deadline, the connection closed, and no lease is taken."""
    writer = quick_room.join("slow-writer", "read,lease")
    payload = json.dumps({"region": {"lines": [1, 1]}, "ttl_seconds": 60}).encode()
    sock = connect(quick_room)
    try:
        sock.sendall(b"POST /workspace/leases HTTP/1.1\r\nHost: commonroom\r\nContent-Type: application/json\r\n"
                     + f"Authorization: Bearer {writer.token}\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
                     + payload[:3])
        # trickled: a byte every 0.4 s, never the last one; else stalled
        raw, elapsed = trickle(sock, [payload[i:i + 1] for i in range(3, len(payload) - 1)] if trickled else [])
    finally:
        sock.close()
    status, body = status_and_body(raw)
    assert status == 408 and body["details"] == {"limit": "body_timeout", "timeout_seconds": BODY_TIMEOUT}
    assert b"connection: close" in raw.lower()
    assert BODY_TIMEOUT - 0.5 < elapsed < BODY_TIMEOUT + 3
    assert writer.get("/workspace/leases").json()["leases"] == []


@pytest.mark.parametrize("expect", [False, True])
def test_an_oversized_length_is_refused_at_once_without_100_continue(quick_room, expect):
    extra = b"Expect: 100-continue\r\n" if expect else b""
    for route in (b"/workspace/join", b"/workspace/proposals"):
        sock = connect(quick_room)
        try:
            started = time.monotonic()
            sock.sendall(b"POST " + route + b" HTTP/1.1\r\nHost: commonroom\r\nContent-Type: application/json\r\n"
                         + extra + f"Content-Length: {TEN_MB}\r\n\r\n".encode())  # and no body byte
            raw, closed = read_all(sock)
            elapsed = time.monotonic() - started
        finally:
            sock.close()
        assert b"100 Continue" not in raw
        status, body = status_and_body(raw)
        # join is public: 413 from the length; proposals needs a bearer: 401, still before any body byte
        assert (status, body["error"]) in ((413, "limit_exceeded"), (401, "unauthorized")), raw
        if route == b"/workspace/join":
            assert status == 413 and body["details"] == {"limit_bytes": 8 * 1024 * 1024}
        assert closed and elapsed < 1.0  # answered and closed at once, not after a timeout


def test_a_body_the_room_will_read_still_gets_100_continue(quick_room):
    token = quick_room.invite("continued", "read")
    payload = json.dumps({"invitation": token}).encode()
    sock = connect(quick_room)
    try:
        sock.sendall(b"POST /workspace/join HTTP/1.1\r\nHost: commonroom\r\nContent-Type: application/json\r\n"
                     b"Expect: 100-continue\r\n" + f"Content-Length: {len(payload)}\r\n\r\n".encode())
        sock.settimeout(5)
        interim = sock.recv(65536)
        assert interim.startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
        sock.sendall(payload)
        raw = interim[len(b"HTTP/1.1 100 Continue\r\n\r\n"):]
        while b"\r\n\r\n" not in raw or not raw.rstrip().endswith(b"}"):
            raw += sock.recv(65536)
    finally:
        sock.close()
    status, body = status_and_body(raw)
    assert status == 201 and body["session"]["participant"]["name"] == "continued"


def test_connections_beyond_the_bound_get_a_clear_refusal(tmp_path, monkeypatch):
    monkeypatch.setenv("COMMONROOM_MAX_CONNECTIONS", "20")
    monkeypatch.setenv("COMMONROOM_HEADER_TIMEOUT", "30")
    room = start_room(tmp_path, SAMPLE)
    held: list[socket.socket] = []
    try:
        reader = room.join("reader", "read")
        held = [connect(room) for _ in range(20)]
        time.sleep(0.3)
        extra = connect(room)
        extra.sendall(b"GET /workspace/room HTTP/1.1\r\nHost: commonroom\r\n\r\n")
        raw, closed = read_all(extra)
        extra.close()
        assert closed
        status, body = status_and_body(raw)
        assert status == 503 and body["error"] == "limit_exceeded"
        assert body["details"] == {"limit": "connections", "max_connections": 20}
        assert body["retry_after_seconds"] == 1 and b"Retry-After: 1\r\n" in raw
        # the owner port has its own bound: the operator still gets in
        assert room.operator().get("/workspace/room").status_code == 200
        for sock in held:
            sock.close()
        held = []
        time.sleep(0.3)
        assert reader.get("/workspace/room").status_code == 200
    finally:
        for sock in held:
            sock.close()
        room.stop()


@pytest.mark.parametrize("name,value", [("COMMONROOM_HEADER_TIMEOUT", "soon"),
                                        ("COMMONROOM_BODY_TIMEOUT", "0"),
                                        ("COMMONROOM_MAX_CONNECTIONS", "-5")])
def test_a_bad_limit_in_the_environment_stops_serve_with_one_line(tmp_path, name, value):
    document = tmp_path / "doc.md"
    document.write_text("# doc\n")
    done = ce("serve", str(document), "--port", "0", "--owner-port", "0", env={name: value}, timeout=30)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and name in done.stderr, done.stderr
