"""Request limits on a real room: 600 a minute per bearer, oversized bodies."""

from __future__ import annotations

import select
import socket
import time

import httpx
import pytest

from tests.ssekit import open_stream

TEN_MB = 10 * 1024 * 1024


def hammer(room, token: str, count: int) -> list[httpx.Response]:
    """``count`` small GETs over one keep-alive connection."""
    with httpx.Client(base_url=room.ingress, headers={"Authorization": f"Bearer {token}"}, timeout=30) as c:
        return [c.get("/workspace/session") for _ in range(count)]


def assert_limited(r: httpx.Response) -> None:
    assert r.status_code == 429, r.text
    body = r.json()
    assert body["error"] == "limit_exceeded"
    retry = body["retry_after_seconds"]
    assert isinstance(retry, int) and 1 <= retry <= 60
    assert r.headers["Retry-After"] == str(retry)


def test_the_601st_request_inside_a_minute_gets_429(room):
    alice = room.join("alice", "read,observe")
    bob = room.join("bob", "read")
    started = time.monotonic()
    answers = hammer(room, alice.token, 600)
    assert [r.status_code for r in answers] == [200] * 600
    assert time.monotonic() - started < 60
    assert_limited(alice.get("/workspace/session"))
    assert_limited(alice.get("/workspace/room"))  # refused requests do not reset the window
    stream = open_stream(("127.0.0.1", room.state["ingress"]["port"]), token=alice.token)
    assert stream.status == 429 and '"limit_exceeded"' in stream.body_text
    assert bob.get("/workspace/session").status_code == 200  # per bearer
    assert room.operator().get("/workspace/room").status_code == 200  # the owner port is not limited


def test_an_open_stream_counts_as_one_request(room):
    carol = room.join("carol", "read,observe")
    stream = open_stream(("127.0.0.1", room.state["ingress"]["port"]), token=carol.token)
    try:
        assert stream.next().retry == 5000
        answers = hammer(room, carol.token, 599)
        assert [r.status_code for r in answers] == [200] * 599
        assert_limited(carol.get("/workspace/session"))
        room.invite("still-streaming")  # the stream keeps delivering meanwhile
        (frame,) = stream.events(1)
        assert frame.event == "invitation.created"
    finally:
        stream.close()


def _read_response(sock: socket.socket, timeout: float = 10.0) -> tuple[int, bytes]:
    sock.settimeout(timeout)
    raw = b""
    while b"\r\n\r\n" not in raw:
        data = sock.recv(65536)
        if not data:
            break
        raw += data
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        data = sock.recv(65536)
        if not data:
            break
        body += data
    return status, body


def _send_until_answered(sock: socket.socket, chunks, limit_bytes: int) -> int:
    """Send chunks until the server answers (readable) or ``limit_bytes`` went out."""
    sent = 0
    for chunk in chunks:
        readable, _, _ = select.select([sock], [], [], 0)
        if readable:
            break
        try:
            sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            break
        sent += len(chunk)
        if sent >= limit_bytes:
            break
    return sent


@pytest.mark.parametrize("route", ["/workspace/join", "/workspace/proposals"])
def test_ten_megabyte_body_with_a_length_is_refused_before_it_is_sent(room, route):
    port = room.state["ingress"]["port"]
    token = room.join("big" + route.rsplit("/", 1)[-1], "read,propose").token
    sock = socket.create_connection(("127.0.0.1", port))
    try:
        head = (f"POST {route} HTTP/1.1\r\nHost: commonroom\r\nContent-Type: application/json\r\n"
                f"Authorization: Bearer {token}\r\nContent-Length: {TEN_MB}\r\n\r\n")
        sock.sendall(head.encode() + b"{" + b" " * 65535)  # 64 KiB of the promised 10 MB
        status, body = _read_response(sock)
        assert status == 413 and b'"limit_exceeded"' in body
    finally:
        sock.close()


def test_ten_megabyte_chunked_body_is_refused_while_streaming(room):
    """Chunked, no length: 9 MiB of a 10 MB body go out, the rest never does.

    The answer must come while the body is still incomplete (no last chunk),
    so the server refused it as the bytes passed the cap instead of reading
    it whole first.
    """
    port = room.state["ingress"]["port"]
    sock = socket.create_connection(("127.0.0.1", port))
    try:
        sock.sendall(b"POST /workspace/join HTTP/1.1\r\nHost: commonroom\r\nContent-Type: application/json\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        piece = 64 * 1024
        chunk = f"{piece:x}\r\n".encode() + b" " * piece + b"\r\n"
        nine_mib = 9 * 1024 * 1024
        sent = _send_until_answered(sock, (chunk for _ in range(nine_mib // piece)), nine_mib)
        status, body = _read_response(sock)
        assert status == 413 and b'"limit_exceeded"' in body
        assert sent < TEN_MB  # and the last chunk never went out
    finally:
        sock.close()


def test_ce_reports_the_limit_with_its_own_exit_status(room, tmp_path):
    import json

    from commonroom.errors import EXIT_CODES
    from tests.roomproc import ce

    session_file = tmp_path / "carl.json"
    assert ce("join", room.invite("carl", "read"), "--session-file", str(session_file)).returncode == 0
    token = json.loads(session_file.read_text())["token"]
    assert [r.status_code for r in hammer(room, token, 599)] == [200] * 599  # the join itself is not counted
    done = ce("call", "GET", "/workspace/room", "--session-file", str(session_file))
    assert done.returncode == 0, done.stderr  # the 600th
    done = ce("call", "GET", "/workspace/room", "--session-file", str(session_file))
    assert done.returncode == EXIT_CODES["limit_exceeded"]
    body = json.loads(done.stderr)
    assert body["error"] == "limit_exceeded" and body["retry_after_seconds"] >= 1
