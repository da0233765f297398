"""The room's edges, over real sockets to a real room (docs/hardening.md, *What the room promises*).

1. Every request is parsed by gunicorn: a write sent while gunicorn's parser
   sits inside a pipelined request's head is header lines of that request,
   never a request of its own (the desync the byte-level write path had).
2. One Host rule, before routing, for every route on both listeners: 421
   for a name that is not the room's, 400 for an HTTP/1.1 request with no
   ``Host`` or several; a refused console login keeps its code.
3. Paths are taken as sent: a percent-encoded ``/`` or ``\\`` is 400.
4. Every answer carries ``X-Content-Type-Options: nosniff``.
"""

from __future__ import annotations

import json
import re
import socket
import time

import httpx
import pytest

from commonroom import schemas
from commonroom.operations import OPERATIONS
from tests.roomproc import ce, start_room

FOREIGN = ["rebind.example", "rebind.example:80", "127.0.0.2", "localhost.rebind.example", "", "localhost.",
           "[::2]", "127.0.0.1 x", "commonroom.example", "[::1]:8080", "localhost:\u00b2".encode("utf-8")]
SERVED = ["127.0.0.1", "localhost:1", "LOCALHOST", "commonroom", "127.0.0.1:65535"]


@pytest.fixture(scope="module")
def room(shared_room):
    return shared_room


@pytest.fixture(scope="module")
def bearer(room):
    return room.join("edges", "read,observe,propose,lease,approve,write,handoff,message").token


def port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def exchange(port_number: int, *parts: bytes, pause: float = 0.3, wait: float = 1.0) -> bytes:
    """Send ``parts`` on one connection, ``pause`` s apart (each its own read on the server), and read
    what the room answers until it closes the connection or ``wait`` s pass without a byte."""
    with socket.create_connection(("127.0.0.1", port_number)) as sock:
        for number, part in enumerate(parts):
            if number:
                time.sleep(pause)
            sock.sendall(part)
        sock.settimeout(wait)
        out = b""
        try:
            while chunk := sock.recv(65536):
                out += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    return out


def statuses(answer: bytes) -> list[int]:
    return [int(code) for code in re.findall(rb"HTTP/1\.[01] (\d{3}) ", answer)]


def write_head(path: str, token: str, body: bytes, host: str = "127.0.0.1") -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body


def created(room, bearer) -> tuple[list, list]:
    client = httpx.Client(base_url=room.ingress, headers={"Authorization": f"Bearer {bearer}"})
    proposals = client.get("/workspace/proposals").json()["proposals"]
    leases = client.get("/workspace/leases").json()["leases"]
    return proposals, leases


# -- 1. one parser ----------------------------------------------------------------

@pytest.mark.parametrize("host", ["127.0.0.1", "a"])
def test_a_write_inside_a_pipelined_head_is_header_lines_not_a_request(room, bearer, host):
    """A request smuggled inside a pipelined head: 200 for the GET, then 400 (with its foreign Host ``a``: 421, and the connection
    closes there); nothing created either way."""
    body = json.dumps({"base_version": 1, "text": "x\n", "summary": "SMUGGLED"}).encode()
    answer = exchange(port(room.ingress),
                      f"GET /workspace/room HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {bearer}\r\n\r\n"
                      "POST /workspace/leases HTTP/1.1\r\n".encode(),
                      write_head("/workspace/proposals", bearer, body, host))
    assert statuses(answer) == ([200, 400] if host == "127.0.0.1" else [421]), answer
    assert b"SMUGGLED" not in answer and b" 201 " not in answer
    assert created(room, bearer) == ([], [])


def test_a_lease_write_split_around_a_write_creates_neither(room, bearer):
    """The variant: the head of a lease write, a whole proposal write, then the rest of the lease's head and body."""
    lease = json.dumps({"region": {"lines": [1, 2]}, "ttl_seconds": 60}).encode()
    proposal = json.dumps({"base_version": 1, "text": "x\n", "summary": "SMUGGLED"}).encode()
    answer = exchange(port(room.ingress),
                      f"GET /workspace/room HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {bearer}\r\n\r\n"
                      "POST /workspace/leases HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode(),
                      write_head("/workspace/proposals", bearer, proposal),
                      f"Authorization: Bearer {bearer}\r\nContent-Type: application/json\r\n"
                      f"Content-Length: {len(lease)}\r\n\r\n".encode() + lease)
    assert statuses(answer) == [200, 400], answer
    assert created(room, bearer) == ([], [])


def test_pipelined_writes_are_each_answered_in_order(room, bearer):
    """The other side of the rule: whole requests pipelined on one connection are each gunicorn's, in order."""
    first, second = (json.dumps({"region": {"lines": [n, n]}, "ttl_seconds": 60}).encode() for n in (3, 4))
    answer = exchange(port(room.ingress), write_head("/workspace/leases", bearer, first)
                      + write_head("/workspace/leases", bearer, second))
    assert statuses(answer) == [201, 201], answer
    client = httpx.Client(base_url=room.ingress, headers={"Authorization": f"Bearer {bearer}"})
    leases = client.get("/workspace/leases").json()["leases"]
    assert sorted(lease["lines"] for lease in leases) == [[3, 3], [4, 4]]
    for lease in leases:
        assert client.delete(f"/workspace/leases/{lease['id']}").status_code == 200


# -- 2. one Host rule ---------------------------------------------------------------

def routes(listener: str) -> list[tuple[str, str]]:
    """Every route of ``listener``'s operation table (path parameters filled with ``x``), and the others it serves."""
    found = {(op.http.method, re.sub(r"\{[^}]+\}", "x", op.http.path)) for op in OPERATIONS.http(listener)}
    found |= {("GET", "/openapi.json"), ("GET", "/no/such/route")}
    found |= {("POST", "/mcp"), ("GET", "/mcp")} if listener == "ingress" else {("GET", "/console")}
    return sorted(found)


def test_every_route_on_both_listeners_refuses_a_foreign_host_before_it_runs(room, bearer):
    for listener, base, token in (("ingress", room.ingress, bearer), ("owner", room.owner, room.owner_token)):
        for method, path in routes(listener):
            for host in ("rebind.example", ""):
                answer = httpx.request(method, base + path, headers={"Host": host, "Authorization": f"Bearer {token}"},
                                       content=b"{}" if method in ("POST", "PUT", "PATCH") else None)
                assert answer.status_code == 421, (listener, method, path, host, answer.text)
                body = answer.json()
                assert body["error"] == "invalid_request" and body["details"]["reason"] == "host", body
                assert schemas.errors_of("error", body) == []
                assert answer.headers["connection"] == "close"
                assert answer.headers["x-content-type-options"] == "nosniff"
    assert created(room, bearer) == ([], [])


@pytest.mark.parametrize("host", FOREIGN)
def test_foreign_names_are_421(room, host):
    for base in (room.ingress, room.owner):
        assert httpx.get(base + "/workspace/room", headers={"Host": host}).status_code == 421, (base, host)


@pytest.mark.parametrize("host", SERVED)
def test_the_rooms_names_are_served_on_any_port(room, bearer, host):
    answer = httpx.get(room.ingress + "/workspace/room", headers={"Host": host, "Authorization": f"Bearer {bearer}"})
    assert answer.status_code == 200, answer.text
    answer = httpx.get(room.owner + "/workspace/room",
                       headers={"Host": host, "Authorization": f"Bearer {room.owner_token}"})
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize("head,status", [
    (b"GET /workspace/room HTTP/1.1\r\n\r\n", 400),
    (b"GET /workspace/room HTTP/1.1\r\nHost: localhost\r\nHost: localhost\r\n\r\n", 400),
    (b"GET /workspace/room HTTP/1.0\r\n\r\n", 421),
    (b"GET /workspace/room HTTP/1.0\r\nHost: localhost\r\n\r\n", 401),
])
def test_a_missing_or_doubled_host(room, head, status):
    for base in (room.ingress, room.owner):
        answer = exchange(port(base), head)
        assert statuses(answer) == [status], answer
        assert b"x-content-type-options: nosniff" in answer.lower()
        if status != 401:  # the Host rule's own envelope, also where gunicorn's parser refuses a second Host
            body = json.loads(answer.split(b"\r\n\r\n", 1)[1])
            assert body["error"] == "invalid_request" and body["details"]["reason"] == "host", body
            assert schemas.errors_of("error", body) == []


@pytest.mark.parametrize("path", ["//workspace/room", "/workspace//room", "///workspace/room", "/workspace/room//"])
def test_an_empty_path_segment_is_refused(room, bearer, path):
    for base, token in ((room.ingress, bearer), (room.owner, room.owner_token)):
        head = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\r\n".encode()
        answer = exchange(port(base), head)
        assert statuses(answer) == [400], answer
        body = json.loads(answer.split(b"\r\n\r\n", 1)[1])
        assert body["error"] == "invalid_request" and body["details"]["reason"] == "path", body


def test_a_console_login_refused_for_its_host_keeps_its_code(room):
    done = ce("console", str(room.document))
    assert done.returncode == 0, done.stderr
    url = done.stdout.strip()
    refused = httpx.get(url, headers={"Host": "rebind.example"})
    assert refused.status_code == 421 and "set-cookie" not in refused.headers
    refused = httpx.get(url, headers={"Host": "rebind.example", "Authorization": f"Bearer {room.owner_token}"})
    assert refused.status_code == 421 and "set-cookie" not in refused.headers
    answer = httpx.get(url)  # the code still works, once
    assert answer.status_code == 303 and "set-cookie" in answer.headers


@pytest.mark.parametrize("first,status", [
    ("GET /workspace/room HTTP/1.1\r\nHost: rebind.example\r\n\r\n", 421),
    ("GET /workspace%2Froom HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 400),
    ("POST /workspace/leases HTTP/1.1\r\nHost: rebind.example\r\nContent-Length: 2\r\n\r\n{}", 421),
    ("POST /workspace/leases HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}", 401),
])
def test_an_answer_that_says_close_closes_and_nothing_behind_it_runs(room, bearer, first, status):
    """A refusal (or any answer) announcing ``Connection: close`` closes: a write pipelined behind it never runs."""
    lease = json.dumps({"region": {"lines": [6, 6]}, "ttl_seconds": 60}).encode()
    with socket.create_connection(("127.0.0.1", port(room.ingress))) as sock:
        sock.sendall(first.encode() + write_head("/workspace/leases", bearer, lease))
        sock.settimeout(5)
        out = b""
        while chunk := sock.recv(65536):  # ends at the room's close, not at the timeout
            out += chunk
    assert statuses(out) == [status], out
    assert b"connection: close" in out.lower()
    assert created(room, bearer) == ([], [])


def test_the_room_serves_no_websocket(room):
    """A handshake is refused on both listeners, whatever its path (no route, no error handler runs)."""
    log = room.document.with_name(room.document.name + ".serve.log")
    before = log.read_text() if log.exists() else ""
    for base, path in ((room.ingress, "/workspace/room"), (room.owner, "/console"), (room.ingress, "/a%2Fb")):
        answer = exchange(port(base), f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                                      "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                                      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n".encode())
        assert statuses(answer) == [403], answer
    old = exchange(port(room.ingress), b"GET /workspace/room HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                                       b"Connection: Upgrade\r\nSec-WebSocket-Version: 8\r\n"
                                       b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
    assert statuses(old) == [426] and b"Sec-WebSocket-Version: 13" in old and b"nosniff" in old, old
    after = log.read_text() if log.exists() else ""
    assert "Traceback" not in after[len(before):]


def test_a_room_on_another_loopback_address_answers_to_it(tmp_path):
    """Names are where bound: a room on 127.0.0.2 answers to 127.0.0.2 (the URL it prints), not to 127.0.0.1."""
    other = start_room(tmp_path, text="# other\n", args=("--host", "127.0.0.2"))
    try:
        ingress = other.ingress
        assert other.state["ingress"]["host"] == "127.0.0.2" and "127.0.0.2" in ingress
        assert httpx.get(ingress + "/workspace/room").status_code == 401
        assert httpx.get(ingress + "/workspace/room", headers={"Host": "localhost"}).status_code == 401
        assert httpx.get(ingress + "/workspace/room", headers={"Host": "127.0.0.1"}).status_code == 421
        assert httpx.post(ingress + "/mcp", content=b"{}").status_code == 401
    finally:
        other.stop()


# -- 3. paths as sent ----------------------------------------------------------------

@pytest.mark.parametrize("encoded", ["%2F", "%2f", "%5C", "%5c"])
def test_an_encoded_separator_is_refused_on_every_route(room, bearer, encoded):
    client = httpx.Client(base_url=room.ingress, headers={"Authorization": f"Bearer {bearer}"})
    lease = client.post("/workspace/leases", json={"region": {"lines": [5, 5]}, "ttl_seconds": 60}).json()
    expires = lease["expires_at"]
    for listener, base, token in (("ingress", room.ingress, bearer), ("owner", room.owner, room.owner_token)):
        for method, path in routes(listener):
            if path.count("/") < 2:
                continue
            head, _, tail = path.rpartition("/")
            bent = f"{head}{encoded}{tail}"
            answer = exchange(port(base), f"{method} {bent} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                                          f"{token}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode())
            assert statuses(answer) == [400], (method, bent, answer)
            assert b'"reason":"path"' in answer and b"nosniff" in answer
    # the renewal that a decoded path reached before
    answer = exchange(port(room.ingress), f"POST /workspace/leases{encoded}{lease['id']}{encoded}renew HTTP/1.1\r\n"
                                          f"Host: 127.0.0.1\r\nAuthorization: Bearer {bearer}\r\n"
                                          "Content-Length: 2\r\nConnection: close\r\n\r\n{}".encode())
    assert statuses(answer) == [400]
    after = client.get("/workspace/leases").json()["leases"]
    assert [one["expires_at"] for one in after if one["id"] == lease["id"]] == [expires]
    assert client.delete(f"/workspace/leases/{lease['id']}").status_code == 200


def test_an_absolute_target_is_refused(room):
    answer = exchange(port(room.ingress), b"GET http://127.0.0.1/workspace/room HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                          b"Connection: close\r\n\r\n")
    assert statuses(answer) == [400], answer


# -- 4. nosniff everywhere ------------------------------------------------------------

def test_every_kind_of_answer_carries_nosniff(room, bearer):
    auth = {"Authorization": f"Bearer {bearer}"}
    answers = [
        httpx.get(room.ingress + "/workspace/room"),  # 401
        httpx.get(room.ingress + "/workspace/room", headers=auth),  # 200 (cached read)
        httpx.get(room.ingress + "/workspace/document", headers=auth),
        httpx.get(room.ingress + "/nothing", headers=auth),  # 404
        httpx.put(room.ingress + "/workspace/room", headers=auth),  # 405
        httpx.post(room.ingress + "/workspace/leases", headers=auth, content=b"{"),  # 400
        httpx.get(room.ingress + "/openapi.json"),
        httpx.post(room.ingress + "/mcp", headers=auth, content=b"{}"),
        httpx.get(room.owner + "/owner/sessions"),  # 401 on the owner port
        httpx.get(room.owner + "/console"),
    ]
    for answer in answers:
        assert answer.headers.get_list("x-content-type-options") == ["nosniff"], (answer.request.url, answer.headers)
    with httpx.stream("GET", room.ingress + "/workspace/observe", headers={**auth, "Accept": "text/event-stream"}) as live:
        assert live.status_code == 200 and live.headers["x-content-type-options"] == "nosniff"
    refused = exchange(port(room.ingress), b"GET /workspace/room HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n")
    assert statuses(refused) == [400] and b"X-Content-Type-Options: nosniff" in refused
