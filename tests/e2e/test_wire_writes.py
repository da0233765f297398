"""Plain writes answered from the connection's bytes (commonroom/wirewrites.py), on a real room.

A write whose whole request comes in one read is answered by the room's
protocol; the same request split over two reads (the head's first bytes,
then the rest 50 ms later) goes through gunicorn, Falcon's stack and the
ASGI ``DirectWrites``. Both must give the same bytes (the ``Date`` line and
new ids and stamps masked). ``tests/wire_probe.py`` logs each answer from
the bytes, so every test also checks which path answered. Requests the
wire path must leave alone are checked against a room with it turned off
(``COMMONROOM_WIRE_WRITES=0``); writes that arrive behind one in flight
(``tests/writer_hold.py`` holds it) keep their order.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import struct
import time
from pathlib import Path

import pytest

from tests.bench.load import KeepAlive, request_bytes
from tests.roomproc import Client, Room, plugin_env, start_room
from tests.wire_probe import DONE, LINE
from tests.writer_hold import HOLD, MARKER

TEXT = "".join(f"line {i}\n" for i in range(1, 41))
PLUGINS = "tests.wire_probe:register,tests.writer_hold:register"
STAMP = re.compile(rb'"(?:lease_|message_|)[a-z_]*(?:id|_at)":"[^"]*"')
DATE = re.compile(rb"\r\nDate: [^\r]*")


def masked(head: bytes, body: bytes | bytearray) -> bytes:
    """An answer with its ``Date`` and the ids and stamps two writes never share blanked."""
    return DATE.sub(b"\r\nDate: -", head) + b"\r\n\r\n" + STAMP.sub(b'"":""', bytes(body))


def probed(room: Room, line: str = LINE) -> int:
    """The writes the room has answered from the bytes so far (its log's probe lines; ``DONE``: answers ended)."""
    log = room.document.with_name(room.document.name + ".serve.log")
    return log.read_text("utf-8", "replace").count(line)


def send(client: KeepAlive, raw: bytes, *, split: bool = False) -> None:
    """Send ``raw`` in one write, or in two 50 ms apart (two reads for the room: gunicorn's path)."""
    if split:
        client.sock.sendall(raw[:7])
        time.sleep(0.05)
        raw = raw[7:]
    client.sock.sendall(raw)


def exchange(client: KeepAlive, raw: bytes, *, split: bool = False) -> tuple[int, bytes, bytearray]:
    """Send ``raw`` (see :func:`send`); ``(status, masked answer, body)``."""
    send(client, raw, split=split)
    status, _, body = client.answer()
    return status, masked(client.head, body), body


def closed_within(client: KeepAlive, seconds: float) -> bool:
    """True when the room closes the connection within ``seconds`` (nothing else arriving first)."""
    client.sock.settimeout(seconds)
    try:
        return client.sock.recv(1) == b""
    except socket.timeout:
        return False


@pytest.fixture(scope="module")
def rooms(tmp_path_factory):
    """A room answering from the bytes, and one with that turned off; both with the probe and the hold."""
    folder = tmp_path_factory.mktemp("wire")
    on = start_room(folder / "on", text=TEXT, env=plugin_env(PLUGINS))
    off = start_room(folder / "off", text=TEXT, env={**plugin_env(PLUGINS), "COMMONROOM_WIRE_WRITES": "0"})
    yield on, off
    for room in (on, off):
        room.stop()


def lease(line: int) -> bytes:
    return json.dumps({"region": {"lines": [line, line]}, "ttl_seconds": 60}).encode()


def test_a_plain_write_answers_from_the_bytes_as_gunicorn_answers_it(rooms):
    room, _ = rooms
    writer = room.join("writer", "read,lease,message")
    other = room.join("other", "read,lease")
    auth = {"Authorization": f"Bearer {writer.token}"}
    theirs = other.post("/workspace/leases", {"region": {"lines": [30, 30]}, "ttl_seconds": 60}).json()["id"]
    board = f"/workspace/boards/{writer.session['id']}/messages"
    client = KeepAlive(room.ingress)
    answers: dict[bool, list[tuple[int, bytes]]] = {}
    for split in (True, False):  # gunicorn's path first: the keep-alive timer checked below is the wire path's
        before = probed(room)
        got = answers[split] = []
        status, answer, body = exchange(client, request_bytes("POST", "/workspace/leases", auth, lease(2)), split=split)
        got.append((status, answer))
        mine = json.loads(body)["id"]
        for method, path, payload in (
                ("POST", f"/workspace/leases/{mine}/renew", json.dumps({"ttl_seconds": 90}).encode()),
                ("DELETE", f"/workspace/leases/{mine}", b""),
                ("DELETE", f"/workspace/leases/{mine}", b""),  # released already: lease_conflict
                ("POST", "/workspace/leases", lease(30)),  # conflict
                ("POST", "/workspace/leases", b'{"region": '),  # not JSON
                ("POST", "/workspace/leases", json.dumps({"region": {"lines": [2]}}).encode()),  # schema
                ("DELETE", f"/workspace/leases/{theirs}", b""),  # someone else's: not found to them
                ("DELETE", "/workspace/leases/lease_0000", b""),  # unknown
                ("POST", board, json.dumps({"kind": "note", "body": "hello"}).encode()),
        ):
            got.append(exchange(client, request_bytes(method, path, auth, payload), split=split)[:2])
        assert probed(room) - before == (0 if split else len(got)), "which path answered"
    assert answers[False] == answers[True]
    assert [status for status, _ in answers[False]] == [201, 200, 200, 409, 409, 400, 400, 404, 404, 201]
    assert closed_within(client, 8), "the keep-alive timer runs again after an answer from the bytes (5 s)"


# Requests the wire path leaves to gunicorn, each sent in one write: {name: (raw, answers expected)}.
# "{token}" and "{lease}" are filled in per room.
_PLAIN = "POST /workspace/leases HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Length: {n}\r\n"
LEFT = {
    "two in one read": (_PLAIN + "\r\n{body}DELETE /workspace/leases/lease_0000 HTTP/1.1\r\nHost: x\r\n"
                        "Authorization: Bearer {token}\r\n\r\n", 2),
    "a header outside the plain ones": (_PLAIN + "X-Trace: 1\r\n\r\n{body}", 1),
    "Host twice": (_PLAIN + "Host: y\r\n\r\n{body}", 1),
    "no Host": (_PLAIN.replace("Host: x\r\n", "") + "\r\n{body}", 1),
    "Connection: close": (_PLAIN + "Connection: close\r\n\r\n{body}", 1),
    "HTTP/1.0": (_PLAIN.replace("HTTP/1.1", "HTTP/1.0") + "\r\n{body}", 1),
    "a query": (_PLAIN.replace("leases ", "leases?x=1 ") + "\r\n{body}", 1),
    "a percent sign": (_PLAIN.replace("leases ", "lea%73es ") + "\r\n{body}", 1),
    "chunked": ("POST /workspace/leases HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                "Transfer-Encoding: chunked\r\n\r\n{chunked}", 1),
    "Expect": (_PLAIN + "Expect: 100-continue\r\n\r\n{body}", 1),
    "a folded header": (_PLAIN + "User-Agent: a\r\n b\r\n\r\n{body}", 1),
    "a bare LF": (_PLAIN + "User-Agent: a\n\r\n{body}", 1),
    "a space before the colon": (_PLAIN + "Accept : */*\r\n\r\n{body}", 1),
    "a control character in a value": (_PLAIN + "User-Agent: a\x01b\r\n\r\n{body}", 1),
    "an empty line first": ("\r\n" + _PLAIN + "\r\n{body}", 1),
    "a body longer than its length": (_PLAIN + "\r\n{body}xyz", 2),
    "a Content-Length with a sign": (_PLAIN.replace("Length: {n}", "Length: +{n}") + "\r\n{body}", 1),
    "a zero length written 00": (_PLAIN.replace("Length: {n}", "Length: 00") + "\r\n", 1),
    "a length with a leading zero": (_PLAIN.replace("Length: {n}", "Length: 0{n}") + "\r\n{body}", 1),
    "a bad bearer": (_PLAIN.replace("{token}", "nope") + "\r\n{body}", 1),
    "no bearer": (_PLAIN.replace("Authorization: Bearer {token}\r\n", "") + "\r\n{body}", 1),
    "a read": ("GET /workspace/document HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n", 1),
    "a body on a release": ("DELETE /workspace/leases/{lease} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                            "Content-Length: 2\r\n\r\n{{}}", 1),
}


def _raw(template: str, token: str, lease_id: str, line: int) -> bytes:
    body = lease(line).decode()
    chunked = f"{len(body):x}\r\n{body}\r\n0\r\n\r\n"
    return template.format(token=token, n=len(body), body=body, chunked=chunked, lease=lease_id).encode("latin-1")


def _answers(client: KeepAlive, count: int) -> list[bytes]:
    """The next ``count`` answers (masked), fewer when the room closes the connection first."""
    got = []
    client.sock.settimeout(10)
    for _ in range(count):
        try:
            _, _, body = client.answer()
        except ConnectionError:
            break
        got.append(masked(client.head, body))
    return got


@pytest.mark.parametrize("name", sorted(LEFT))
def test_what_is_not_a_plain_write_in_one_read_is_gunicorn_s(rooms, name):
    template, expected = LEFT[name]
    outcomes = []
    for room in rooms:
        writer = room.join(re.sub(r"[^a-z0-9]+", "-", name.lower()), "read,lease")
        mine = writer.post("/workspace/leases", {"region": {"lines": [35, 35]}, "ttl_seconds": 60}).json()["id"]
        before = probed(room)
        client = KeepAlive(room.ingress)
        client.sock.sendall(_raw(template, writer.token, mine, 3))
        outcomes.append(_answers(client, expected))
        client.close()
        assert probed(room) == before, f"{name}: answered from the bytes"
        writer.request("DELETE", f"/workspace/leases/{mine}")
        for held in writer.get("/workspace/leases").json()["leases"]:
            if held["session_id"] == writer.session["id"]:
                writer.request("DELETE", f"/workspace/leases/{held['id']}")
    assert len(outcomes[0]) >= 1
    assert outcomes[0] == outcomes[1]


def held_post(room: Room, participant: str, body: str = MARKER) -> tuple[Client, dict[str, str], str, KeepAlive]:
    """A new participant's post of ``body`` (holding the writer), sent in one write and not yet answered.

    ``(client, its Authorization header, its board's messages path, the connection)``.
    """
    writer = room.join(participant, "read,lease,message")
    auth = {"Authorization": f"Bearer {writer.token}"}
    board = f"/workspace/boards/{writer.session['id']}/messages"
    client = KeepAlive(room.ingress)
    send(client, request_bytes("POST", board, auth, json.dumps({"kind": "note", "body": body}).encode()))
    return writer, auth, board, client


def test_writes_behind_one_in_flight_wait_their_turn(rooms):
    """The writer holds an answer 2 s: what arrives meanwhile follows it, a whole write from the bytes again."""
    room, _ = rooms
    before = probed(room)
    _, auth, board, client = held_post(room, "queued")
    time.sleep(HOLD / 8)
    send(client, request_bytes("POST", "/workspace/leases", auth, lease(20)))  # whole, behind the post
    answers = [client.answer()[0], json.loads(client.answer()[2])["region"]]
    assert answers == [201, {"lines": [20, 20]}]
    assert probed(room) - before == 2, "the post, and the acquire held behind it, answered from the bytes"
    send(client, request_bytes("POST", board, auth, json.dumps({"kind": "note", "body": MARKER}).encode()))
    time.sleep(HOLD / 8)
    second = request_bytes("POST", "/workspace/leases", auth, lease(21))
    send(client, second[:20])  # in pieces, and one more with the last of them: gunicorn's
    time.sleep(0.05)
    send(client, second[20:] + request_bytes("DELETE", "/workspace/leases/lease_0000", auth))
    statuses = []
    for _ in range(3):
        status, _, body = client.answer()
        statuses.append((status, json.loads(body).get("region")))
    assert statuses == [(201, None), (201, {"lines": [21, 21]}), (404, None)]
    assert probed(room) - before == 3
    assert client.call(request_bytes("POST", "/workspace/leases", auth, lease(22)))[0] == 201
    assert probed(room) - before == 4
    client.close()


@pytest.mark.parametrize("leaving", ["end of file", "reset"])
def test_a_client_that_leaves_behind_a_write_in_flight_gets_nothing_more_done(rooms, leaving):
    """As on gunicorn's path: the write in flight is done, the one sent behind it is not, nothing is answered."""
    room, _ = rooms
    writer, auth, board, client = held_post(room, f"left-{leaving.replace(' ', '-')}", MARKER + " first")
    time.sleep(HOLD / 8)
    send(client, request_bytes("POST", board, auth, json.dumps({"kind": "note", "body": "second"}).encode()))
    time.sleep(0.1)
    if leaving == "reset":
        client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()
    else:
        client.sock.shutdown(socket.SHUT_WR)
        assert closed_within(client, HOLD * 2), "no answer to a client that has left"
    time.sleep(HOLD)
    bodies = [m["body"] for m in writer.get(board).json()["messages"]]
    assert bodies == [MARKER + " first"]


def test_a_client_gone_before_its_answer_leaves_its_write_done_and_the_room_serving(rooms):
    room, _ = rooms
    writer, _, board, client = held_post(room, "leaver", MARKER + " gone")
    time.sleep(HOLD / 8)
    client.close()
    time.sleep(HOLD)
    bodies = [m["body"] for m in writer.get(board).json()["messages"]]
    assert MARKER + " gone" in bodies
    assert writer.post("/workspace/leases", {"region": {"lines": [25, 25]}, "ttl_seconds": 60}).status_code == 201
    log = room.document.with_name(room.document.name + ".serve.log").read_text("utf-8", "replace")
    assert "Traceback" not in log


def test_a_stop_answers_the_write_in_flight_and_then_closes(tmp_path: Path):
    room = start_room(tmp_path, text=TEXT, env=plugin_env(PLUGINS))
    try:
        client = held_post(room, "stopper")[3]
        time.sleep(HOLD / 4)
        room.proc.send_signal(signal.SIGTERM)
        client.sock.settimeout(10)
        status, headers, _ = client.answer()
        assert status == 201 and headers.get("connection") == "close"
        assert closed_within(client, 5)
        assert room.proc.wait(15) == 0
        assert probed(room) == 1
    finally:
        room.stop()


def test_an_answer_left_unread_by_a_client_that_resets_ends_with_the_connection(tmp_path: Path):
    """Answers of ~16 KB that the client never reads fill the socket, then the transport (writing paused:
    the answer waits for the client, as gunicorn's send does); the client's reset ends that wait."""
    room = start_room(tmp_path, text=TEXT, env={**plugin_env(PLUGINS), "COMMONROOM_RATE_LIMIT": "100000"})
    try:
        writer = room.join("unread", "read,message")
        auth = {"Authorization": f"Bearer {writer.token}"}
        post = request_bytes("POST", f"/workspace/boards/{writer.session['id']}/messages", auth,
                             json.dumps({"kind": "note", "body": "x" * 16000}).encode())
        client = KeepAlive(room.ingress, receive_buffer=4096)
        client.sock.settimeout(2)
        sent = 0
        with pytest.raises(OSError):  # socket.timeout: the room stopped reading this client
            for sent in range(2000):
                client.sock.sendall(post)
                time.sleep(0.01)
        client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()
        assert sent > 10
        deadline = time.monotonic() + 10
        while probed(room, DONE) < probed(room) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert probed(room, DONE) == probed(room) > 10, "an answer's task still waits for a client that is gone"
        assert writer.get("/workspace/document").status_code == 200
    finally:
        room.stop()
