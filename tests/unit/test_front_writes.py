"""Writes answered by the room's front (commonroom/front/writes.py), over raw ASGI.

``build_room`` gives the room's own ingress stack (FrontDoor → StreamGuard →
Falcon) on a real engine, runner and
sidecar, under the worker's ``BodyGuard``; only gunicorn is replaced by a
hand-driven ``receive``/``send``.
The same request sent to the whole stack and to the stack below the fast
path (``ingress.app``: Falcon's route) must get the same answer, byte for
byte where the room's state allows (an error), and field for field with
new ids and stamps masked where it cannot (two leases); every request the
front does not take must reach Falcon unread and uncounted.
"""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from commonroom.front.writes import BODY_BYTES
from commonroom.bodyguard import BodyGuard
from tests.fakeclock import join
from tests.ingress import http_scope, sample_room


@pytest.fixture
def room(tmp_path, monkeypatch):
    monkeypatch.setenv("COMMONROOM_RATE_LIMIT", "40")
    yield from sample_room(tmp_path)


class Exchange:
    """What one request read and was sent."""

    def __init__(self) -> None:
        self.reads = 0
        self.status = 0
        self.headers: list = []
        self.body = b""


def call(app, method: str, path: str, token: str | None, body: bytes | None = None, *extra: tuple[bytes, bytes],
         query: bytes = b"") -> Exchange:
    headers = [(b"host", b"127.0.0.1:8000")]
    if token:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    if body is not None:
        headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += list(extra)
    pieces = [body[:3], body[3:]] if body else [b""]
    events = [{"type": "http.request", "body": piece, "more_body": i < len(pieces) - 1} for i, piece in enumerate(pieces)]
    return drive(BodyGuard(app, 30), method, path, headers, events, query=query, wait=True)  # as the worker serves it


def drive(app, method: str, path: str, headers: list, events: list[dict], *, query: bytes = b"",
          wait: bool = False) -> Exchange:
    """Run one request through ``app``: ``events`` are what ``receive()`` gives, then ``http.disconnect``
    (after an hour with ``wait``: a client that stays)."""
    scope = http_scope(method, path, headers, query)
    seen = Exchange()
    pending = list(events)

    async def receive() -> dict:
        seen.reads += 1
        if pending:
            return pending.pop(0)
        if wait:
            await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            seen.status, seen.headers = message["status"], list(message["headers"])
        else:
            seen.body += message.get("body", b"")

    asyncio.run(app(scope, receive, send))
    return seen


def answer(exchange: Exchange) -> tuple[int, list, bytes]:
    return exchange.status, exchange.headers, exchange.body


STAMP = re.compile(rb'"(?:lease_|)[a-z_]*(?:id|_at)":"[^"]*"')


def masked(exchange: Exchange) -> tuple[int, list, bytes]:
    """The answer with ids and time stamps blanked (two writes never share them)."""
    return exchange.status, exchange.headers, STAMP.sub(b'"":""', exchange.body)


def lease(line: int) -> bytes:
    return json.dumps({"region": {"lines": [line, line]}, "ttl_seconds": 60}).encode()


def test_a_lease_acquired_and_released_answers_as_the_route(room):
    engine, ingress = room
    _, joined = join(engine, "writer", ["read", "lease"])
    token = joined["token"]
    served = ingress.served
    answers = []
    for app in (ingress, ingress.app):  # the same acquire and release, answered here, then by the route
        acquired = call(app, "POST", "/workspace/leases", token, lease(2))
        lease_id = json.loads(acquired.body)["id"]
        released = call(app, "DELETE", f"/workspace/leases/{lease_id}", token)
        assert released.reads == 1, "a release has no body: its first message only is read, as Falcon reads it"
        answers.append((masked(acquired), masked(released)))
        row = engine.store.db.execute_sql("SELECT released_at FROM lease WHERE id = ?", (lease_id,)).fetchone()
        assert row[0] is not None
    assert ingress.served == served + 2
    assert answers[0] == answers[1]
    assert answers[0][0][0] == 201 and answers[0][1][0] == 200
    assert b'"region":{"lines":[2,2]}' in answers[0][0][2]


ERRORS = {
    "conflict": ("POST", "/workspace/leases", lease(5)),
    "not json": ("POST", "/workspace/leases", b'{"region": '),
    "whitespace": ("POST", "/workspace/leases", b" \t"),
    "not an object": ("POST", "/workspace/leases", b"[1]"),
    "schema": ("POST", "/workspace/leases", json.dumps({"region": {"lines": [2]}}).encode()),
    "unknown property": ("POST", "/workspace/leases", json.dumps({"region": None, "colour": 1}).encode()),
    "path in the body": ("POST", "/workspace/leases/LEASE/renew", json.dumps({"lease_id": "x"}).encode()),
    "unknown lease": ("DELETE", "/workspace/leases/lease_0000", None),
    "someone else's lease": ("DELETE", "/workspace/leases/LEASE", None),
    "stale proposal": ("POST", "/workspace/proposals", json.dumps(
        {"base_version": 99, "region": None, "text": "x\n"}).encode()),
    "unknown proposal": ("POST", "/workspace/proposals/p_0/approve", b"{}"),
    "empty body": ("POST", "/workspace/proposals", b""),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_an_error_answers_as_the_route_byte_for_byte(room, case):
    engine, ingress = room
    _, holder = join(engine, "holder", ["read", "lease"])
    held = json.loads(call(ingress, "POST", "/workspace/leases", holder["token"], lease(5)).body)["id"]
    _, joined = join(engine, "writer", ["read", "lease", "propose", "approve"])
    method, path, body = ERRORS[case]
    path = path.replace("LEASE", held)
    served = ingress.served
    fast = call(ingress, method, path, joined["token"], body)
    assert ingress.served == served + 1, "answered before Falcon"
    route = call(ingress.app, method, path, joined["token"], body)
    assert fast.status >= 400, fast.body
    assert answer(fast) == answer(route)


def test_a_bug_answers_500_as_the_route(room, monkeypatch):
    engine, ingress = room
    _, joined = join(engine, "writer", ["read", "lease"])

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(engine, "acquire_lease", broken)
    served = ingress.served
    fast = call(ingress, "POST", "/workspace/leases", joined["token"], lease(2))
    assert ingress.served == served + 1
    route = call(ingress.app, "POST", "/workspace/leases", joined["token"], lease(2))
    assert fast.status == 500 and answer(fast) == answer(route)
    assert json.loads(fast.body) == {"title": "500 Internal Server Error"}


def test_requests_it_does_not_take_reach_the_route_unread(room):
    engine, ingress = room
    _, writer = join(engine, "writer", ["read", "lease"])
    _, reader = join(engine, "reader", ["read"])
    token = writer["token"]
    served = ingress.served
    cases = [
        (call(ingress, "POST", "/workspace/leases", None, lease(2)), 401),
        (call(ingress, "POST", "/workspace/leases", "cr_s_unknown", lease(2)), 401),
        (call(ingress, "POST", "/workspace/leases", reader["token"], lease(2)), 403),
        (call(ingress, "POST", "/workspace/leases", token, lease(2), (b"authorization", b"Bearer x")), 401),
        (call(ingress, "DELETE", "/workspace/leases", token), 405),
        (call(ingress, "POST", "/workspace/lease", token, lease(2)), 404),
        (call(ingress, "DELETE", "/workspace/leases/lease_0000", token, b"{}"), 404),  # a body it does not take
        (call(ingress, "POST", "/workspace/leases", token, lease(2), (b"transfer-encoding", b"chunked")), None),
        (call(ingress, "POST", "/workspace/leases", token, lease(2), query=b"x=1"), 201),
        (call(ingress, "POST", "/workspace/leases", token, b" " * (BODY_BYTES + 1)), 400),
    ]
    assert ingress.served == served, "none of them was answered before Falcon"
    for exchange, status in cases:
        if status is not None:
            assert exchange.status == status, exchange.body
    unread = [cases[i][0].reads for i in (0, 1, 2, 3, 5)]  # those with a body the route refuses unread
    assert unread == [0] * 5, "refused before its body was read, as Falcon refuses"


def test_a_write_counts_once_against_the_rate_limit(room):
    engine, ingress = room
    _, joined = join(engine, "writer", ["read", "lease"])
    token = joined["token"]
    statuses = []
    for _ in range(21):  # the room allows 40 a minute here: 20 pairs, then the 41st request
        acquired = call(ingress, "POST", "/workspace/leases", token, lease(2))
        statuses.append(acquired.status)
        if acquired.status == 201:
            statuses.append(call(ingress, "DELETE", f"/workspace/leases/{json.loads(acquired.body)['id']}",
                                 token).status)
    assert statuses == [201, 200] * 20 + [429]
    assert ingress.served == 40, "the refused one went to Falcon, which counted and refused it"


def exchange(app, method: str, path: str, token: str, messages: list[dict], length: int | None) -> Exchange:
    """Send ``messages`` as the request's events (no ``BodyGuard``: as Falcon is asked for them)."""
    headers = [(b"host", b"127.0.0.1:8000"), (b"authorization", f"Bearer {token}".encode())]
    if length is not None:
        headers.append((b"content-length", str(length).encode()))
    return drive(app, method, path, headers, messages)


def test_a_client_gone_before_its_request_began_gets_nothing_done(room):
    engine, ingress = room
    _, joined = join(engine, "writer", ["read", "lease"])
    token = joined["token"]
    for app in (ingress.app, ingress):  # the route, then the front
        lease_id = json.loads(call(ingress, "POST", "/workspace/leases", token, lease(2)).body)["id"]
        gone = exchange(app, "DELETE", f"/workspace/leases/{lease_id}", token, [{"type": "http.disconnect"}], None)
        assert (gone.status, gone.body) == (0, b""), "nobody to answer"
        row = engine.store.db.execute_sql("SELECT released_at FROM lease WHERE id = ?", (lease_id,)).fetchone()
        assert row[0] is None, "the release did not run"
        call(ingress, "DELETE", f"/workspace/leases/{lease_id}", token)


@pytest.mark.parametrize("case", ["longer than framed", "in pieces", "cut short"])
def test_the_body_is_read_as_falcons_stream_reads_it(room, case):
    engine, ingress = room
    _, joined = join(engine, "writer", ["read", "lease"])
    body = lease(3)
    messages = {
        "longer than framed": [{"type": "http.request", "body": body + b"   garbage", "more_body": False}],
        "in pieces": [{"type": "http.request", "body": body[:5], "more_body": True},
                      {"type": "http.request", "body": body[5:], "more_body": False}],
        "cut short": [{"type": "http.request", "body": body[:5], "more_body": True}, {"type": "http.disconnect"}],
    }[case]
    answers = []
    for app in (ingress, ingress.app):
        served = ingress.served
        answered = exchange(app, "POST", "/workspace/leases", joined["token"], list(messages), len(body))
        assert ingress.served == served + (app is ingress)
        answers.append(masked(answered))
        if answered.status == 201:
            call(ingress, "DELETE", f"/workspace/leases/{json.loads(answered.body)['id']}", joined["token"])
    assert answers[0] == answers[1]
    assert answers[0][0] == (400 if case == "cut short" else 201)
