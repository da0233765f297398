"""The one check per request (commonroom/http/edge.py, docs/hardening.md *One check per request*), over raw ASGI.

The session ingress as the room builds it; each request is checked once, in order (Host and path, route,
bearer, capability, one rate count), and the first refusal ends the checks: nothing after it is counted.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from commonroom.checked import BEARER, CAPABILITY, CHECKED, RATE, ROUTE
from tests.fakeclock import join
from tests.ingress import http_scope, sample_room


@pytest.fixture
def room(tmp_path, monkeypatch):
    monkeypatch.setenv("COMMONROOM_RATE_LIMIT", "3")
    yield from sample_room(tmp_path)


def request(app, method: str, path: str, token: str | None, body: bytes = b"") -> tuple[int, dict, dict]:
    """``(status, body as JSON or {}, the scope)`` of one request."""
    headers = [(b"host", b"127.0.0.1:8000")]
    if token:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    if body:
        headers += [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    scope = http_scope(method, path, headers)
    sent: list[dict] = []
    events = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict:
        return events.pop(0) if events else {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    data = b"".join(m.get("body", b"") for m in sent[1:])
    return sent[0]["status"], (json.loads(data) if data else {}), scope


def test_each_refusal_names_its_step_and_nothing_after_it_runs(room):
    engine, ingress = room
    _, reader = join(engine, "reader", ["read"])
    lease = json.dumps({"region": {"lines": [2, 2]}, "ttl_seconds": 60}).encode()
    cases = [
        (("DELETE", "/workspace/leases", reader["token"]), 405, ROUTE),
        (("GET", "/workspace/document", None), 401, BEARER),
        (("GET", "/workspace/document", "cr_s_unknown"), 401, BEARER),
        (("POST", "/workspace/leases", reader["token"], lease), 403, CAPABILITY),
    ]
    for args, status, stage in cases:
        got, body, scope = request(ingress, *args)
        checked = scope[CHECKED]
        assert (got, checked.stage) == (status, stage), (args, body)
        assert body["error"] == checked.refusal.code
        assert checked.op is None if stage in (ROUTE, BEARER) else checked.op.name == "lease_acquire"


def test_a_request_refused_before_the_count_is_not_counted(room):
    engine, ingress = room
    _, reader = join(engine, "reader", ["read"])
    lease = json.dumps({"region": {"lines": [2, 2]}, "ttl_seconds": 60}).encode()
    for _ in range(5):  # forbidden: refused at the capability, before the one count
        assert request(ingress, "POST", "/workspace/leases", reader["token"], lease)[0] == 403
    statuses = [request(ingress, "GET", "/workspace/document", reader["token"])[0] for _ in range(4)]
    assert statuses == [200, 200, 200, 429]  # the room allows 3 a minute here
    status, _, scope = request(ingress, "GET", "/workspace/document", reader["token"])
    assert (status, scope[CHECKED].stage) == (429, RATE)


def test_the_route_falcon_serves_is_the_edges(room):
    engine, ingress = room
    _, reader = join(engine, "reader", ["read"])
    status, _, scope = request(ingress.app, "GET", "/workspace/versions/1", reader["token"])  # Falcon answers
    checked = scope[CHECKED]
    assert status == 200 and checked.template == "/workspace/versions/{number}" and checked.params == {"number": "1"}
    assert checked.op is not None and checked.op.name == "version_get" and checked.actor is not None
