"""The cached read answered by the room's front (commonroom/front/reads.py), over raw ASGI.

``build_room`` gives the room's own ingress stack (FrontDoor → StreamGuard →
Falcon) on a real engine and sidecar; only gunicorn is replaced by a
hand-driven ``receive``/``send``. Every answer of the front must be the
answer the Falcon route gives to the same request, byte for byte, and every
request it cannot answer in full (errors included) must reach Falcon.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from commonroom.front.reads import CachedRead
from tests.fakeclock import join
from tests.ingress import http_scope, sample_room


@pytest.fixture
def room(tmp_path, monkeypatch):
    monkeypatch.setenv("COMMONROOM_RATE_LIMIT", "20")
    for engine, ingress in sample_room(tmp_path):
        assert isinstance(ingress.door("GET", "/workspace/document"), CachedRead)
        yield engine, ingress, ingress


def call(app, token: str | None, *headers: tuple[bytes, bytes], query: bytes = b"") -> tuple[int, list, bytes]:
    scope = http_scope("GET", "/workspace/document", [(b"host", b"127.0.0.1:8000"), *headers]
                       + ([(b"authorization", f"Bearer {token}".encode())] if token else []), query)
    out: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        out.append(message)

    asyncio.run(app(scope, receive, send))
    start, *bodies = out
    return start["status"], start["headers"], b"".join(m.get("body", b"") for m in bodies)


VARIANTS = {
    "plain": (),
    "gzip": ((b"accept-encoding", b"gzip, deflate"),),
    "gzip refused": ((b"accept-encoding", b"gzip;q=0"),),
    "etag matches": ((b"if-none-match", b"TAG"),),
    "gzip etag matches": ((b"accept-encoding", b"gzip"), (b"if-none-match", b"GZTAG")),
    "any etag": ((b"if-none-match", b"*"),),
    "other etag": ((b"if-none-match", b'"sha256:00"'),),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_fast_answer_is_the_routes_answer_byte_for_byte(room, variant):
    engine, ingress, fast = room
    _, joined = join(engine, "reader", ["read"])
    token = joined["token"]
    _, _, plain = call(ingress, token)  # the route's answer (a miss), now cached
    tag = b'"' + json.loads(plain)["content_hash"].encode() + b'"'
    headers = tuple((name, value.replace(b"GZTAG", tag[:-1] + b'-gzip"').replace(b"TAG", tag))
                    for name, value in VARIANTS[variant])
    before = fast.served
    answers = fast.door("GET", "/workspace/document").answers
    answers._entries.clear()  # the next request is a miss: the Falcon route answers it
    answers.held = 0
    route = call(ingress, token, *headers)
    assert fast.served == before
    answered = call(ingress, token, *headers)
    assert fast.served == before + 1, "a cached read with a live bearer is answered before Falcon"
    assert answered == route


def test_errors_and_other_requests_reach_the_route(room):
    engine, ingress, fast = room
    _, reader = join(engine, "reader", ["read"])
    _, observer = join(engine, "observer", ["observe"])
    call(ingress, reader["token"])  # cached now
    served = fast.served
    assert call(ingress, None)[0] == 401
    assert call(ingress, "cr_s_unknown")[0] == 401
    status, _, body = call(ingress, observer["token"])
    assert status == 403 and b"read" in body
    assert call(ingress, reader["token"], query=b"region=%7B%22lines%22%3A%5B1%2C1%5D%7D")[0] == 200
    assert call(ingress, reader["token"], (b"content-length", b"0"))[0] == 200
    assert call(ingress, reader["token"], (b"authorization", b"Bearer other"))[0] == 401  # two bearers
    assert fast.served == served


def test_a_fast_read_counts_once_against_the_rate_limit(room):
    engine, ingress, fast = room
    _, joined = join(engine, "reader", ["read"])
    token = joined["token"]
    statuses = [call(ingress, token)[0] for _ in range(21)]  # the room allows 20 a minute here
    assert statuses == [200] * 20 + [429]
    assert fast.served == 19  # the first was a miss
    status, headers, _ = call(ingress, token)
    assert status == 429 and (b"retry-after" in dict(headers))


def test_the_edge_answers_the_heads_read_at_once_and_follows_the_head(room):
    """A cached read at the head is sent by the edge itself (the front door counts it), from the entry it
    answered last while the head stays; a new version is answered as soon as it is the head."""
    engine, ingress, fast = room
    writer, joined = join(engine, "writer", ["read", "write"])
    token = joined["token"]
    first = json.loads(call(ingress, token)[2])  # a miss: the route answers and fills the cache
    served = fast.served
    assert json.loads(call(ingress, token)[2]) == first and fast.served == served + 1
    answers = fast.door("GET", "/workspace/document").answers
    answers._entries.clear()  # the cache let the head's answer go: the edge still has it, for this head
    answers.held = 0
    assert json.loads(call(ingress, token)[2]) == first and fast.served == served + 2
    engine.write(writer, first["version"], first["text"] + "\nOne more line.\n")
    status, _, body = call(ingress, token)  # the new head: a miss, answered by the route
    assert status == 200 and json.loads(body)["version"] == first["version"] + 1
    assert fast.served == served + 2
    status, _, again = call(ingress, token)
    assert again == body and fast.served == served + 3
