"""The cached MCP tool call answered by the room's front (commonroom/front/toolcalls.py), over raw ASGI.

``build_room`` gives the room's own ingress stack (FrontDoor → StreamGuard →
Falcon) on a real engine and sidecar; only
gunicorn is replaced by a hand-driven ``receive``/``send``. Every answer of
the front must be the answer the transport gives to the same request,
byte for byte (``fast.app`` is the stack without it), and every request it
cannot answer in full (errors, ACKs, piggybacks included) must reach the
transport, counted once.
"""

from __future__ import annotations

import asyncio
import base64
import json

import pytest

from commonroom.front.toolcalls import BODY_BYTES, CachedToolCall
from commonroom.bodyguard import BodyGuard
from tests.fakeclock import join
from tests.ingress import http_scope, sample_room

VERSION = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": {}}


@pytest.fixture
def room(tmp_path, monkeypatch):
    monkeypatch.setenv("COMMONROOM_RATE_LIMIT", "1000")
    yield from _room(tmp_path)


def _room(tmp_path):
    for engine, ingress in sample_room(tmp_path):
        assert isinstance(ingress.door("POST", "/mcp"), CachedToolCall)
        yield engine, ingress, ingress


def shapes(fast) -> dict:
    """The checked calls the front keeps (commonroom/front/shapes.py)."""
    return fast.door("POST", "/mcp").shapes


def message(request_id=1, name="document_read", arguments=None, meta=None, **extra) -> dict:
    params = {"name": name, "_meta": {**META, **(meta or {})}}
    if arguments is not None:
        params["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params, **extra}


def headers_for(token: str | None, name: str = "document_read", *extra: tuple[bytes, bytes],
                drop: tuple[bytes, ...] = ()) -> list[tuple[bytes, bytes]]:
    out = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
           (b"accept", b"application/json, text/event-stream"), (b"mcp-protocol-version", VERSION.encode()),
           (b"mcp-method", b"tools/call"), (b"mcp-name", name.encode())]
    if token:
        out.append((b"authorization", f"Bearer {token}".encode()))
    return [h for h in out if h[0] not in drop] + list(extra)


def call(app, headers: list[tuple[bytes, bytes]], body: bytes | dict, *, chunks: int = 1,
         query: bytes = b"", disconnect: bool = False) -> tuple[int, list, bytes]:
    """One POST /mcp through ``app``: (status, ASGI headers, body); the body in ``chunks`` messages."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    scope = http_scope("POST", "/mcp", [*headers, (b"content-length", str(len(raw)).encode())], query)
    size = -(-len(raw) // chunks) if raw else 0
    parts = [raw[i:i + size] for i in range(0, len(raw), size)] if raw else [b""]
    inbox = [{"type": "http.request", "body": p, "more_body": i < len(parts) - 1} for i, p in enumerate(parts)]
    if disconnect:
        inbox[-1:] = [{"type": "http.disconnect"}]
    out: list[dict] = []

    async def receive() -> dict:
        return inbox.pop(0) if inbox else {"type": "http.disconnect"}

    async def send(sent: dict) -> None:
        out.append(sent)

    asyncio.run(app(scope, receive, send))
    if not out:
        return 0, [], b""
    start, *bodies = out
    return start["status"], start["headers"], b"".join(m.get("body", b"") for m in bodies)


def result_of(answer: tuple[int, list, bytes]) -> dict:
    return json.loads(answer[2])["result"]


VARIANTS = {
    "plain": (message(), ()),
    "string id": (message(request_id="r-\u00e9\u4e2d"), ()),
    "large id": (message(request_id=2**62), ()),
    "no arguments": (message(arguments=None), ()),
    "empty arguments": (message(arguments={}), ()),
    "client info and log level": (message(meta={"io.modelcontextprotocol/clientInfo": {"name": "x", "version": "1"},
                                                "io.modelcontextprotocol/logLevel": "debug"}), ()),
    "origin": (message(), ((b"origin", b"http://localhost:5173"),)),
    "params with another member": ({**message(), "params": {**message()["params"], "x": 1}}, ()),
    "base64 name": (message(), ((b"mcp-name", b"=?base64?" + base64.b64encode(b"document_read") + b"?="),)),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_fast_answer_is_the_transports_answer_byte_for_byte(room, variant):
    engine, _, fast = room
    _, joined = join(engine, "reader", ["read"])
    body, extra = VARIANTS[variant]
    drop = tuple(name for name, _ in extra)
    headers = headers_for(joined["token"], "document_read", *extra, drop=drop)
    first = call(fast, headers, body)  # a miss: the transport answers and its encoding is cached
    assert fast.served == 0
    route = call(fast.app, headers, body)
    answered = call(fast, headers, body)
    assert fast.served == 1, "a cached call with a live bearer is answered before Falcon"
    assert answered == route == first
    assert answered[0] == 200 and result_of(answered)["structuredContent"]["version"] == 1


def test_a_body_in_several_messages_is_read_whole(room):
    engine, _, fast = room
    _, joined = join(engine, "reader", ["read"])
    headers = headers_for(joined["token"])
    expected = call(fast, headers, message())
    assert call(fast, headers, message(), chunks=5) == expected
    assert fast.served == 1


def test_a_write_makes_the_next_call_a_miss_then_it_is_fast_again(room):
    engine, _, fast = room
    writer, joined = join(engine, "writer", ["read", "write"])
    headers = headers_for(joined["token"])
    call(fast, headers, message())
    engine.write(writer, 1, "# Changed\n\nnew text\n")
    miss = call(fast, headers, message())
    assert fast.served == 0 and result_of(miss)["structuredContent"]["version"] == 2
    assert call(fast, headers, message()) == miss and fast.served == 1


def _left_to_the_transport(fast, headers, body, **kw):
    """``body`` with ``headers`` is answered by the transport, the same as without the front."""
    served = fast.served
    answer = call(fast, headers, body, **kw)
    assert fast.served == served, "the front answered a call it must leave to the transport"
    return answer


def test_errors_and_other_calls_reach_the_transport(room):
    engine, _, fast = room
    _, reader = join(engine, "reader", ["read"])
    _, observer = join(engine, "observer", ["observe"])
    token = reader["token"]
    headers = headers_for(token)
    call(fast, headers, message())  # cached now
    cases = {
        "no bearer": (headers_for(None), message()),
        "unknown bearer": (headers_for("cr_s_unknown"), message()),
        "no read capability": (headers_for(observer["token"]), message()),
        "a region": (headers, message(arguments={"region": {"lines": [1, 2]}})),
        "invalid arguments": (headers, message(arguments={"region": 7})),
        "unknown argument": (headers, message(arguments={"bogus": 1})),
        "another tool": (headers_for(token, "versions_list"), message(name="versions_list")),
        "Mcp-Name differs": (headers_for(token, "versions_list"), message()),
        "no protocol version header": (headers_for(token, drop=(b"mcp-protocol-version",)), message()),
        "another protocol version": (headers, message(meta={"io.modelcontextprotocol/protocolVersion": "2025-06-18"})),
        "no _meta capabilities": (headers, {**message(), "params": {"name": "document_read", "_meta": {
            "io.modelcontextprotocol/protocolVersion": VERSION}}}),
        "foreign origin": (headers_for(token, "document_read", (b"origin", b"http://evil.example")), message()),
        "two bearers": (headers_for(token, "document_read", (b"authorization", b"Bearer other")), message()),
        "null id": (headers, message(request_id=None)),
        "notification": (headers, {k: v for k, v in message().items() if k != "id"}),
        "batch": (headers, [message()]),
        "not JSON": (headers, b"{"),
    }
    for name, (case_headers, body) in cases.items():
        got = _left_to_the_transport(fast, case_headers, body)
        assert got == call(fast.app, case_headers, body), name
        assert got[0] != 200 or "isError" in got[2].decode() or "region" in name or "another tool" in name, name
    assert _left_to_the_transport(fast, headers, message(), query=b"x=1")[0] in (200, 404)
    big = message(meta={"pad": "x" * BODY_BYTES})
    assert _left_to_the_transport(fast, headers, big) == call(fast.app, headers, big)
    gone = _left_to_the_transport(fast, headers, message(), chunks=2, disconnect=True)  # the client left mid-body
    assert gone == call(fast.app, headers, message(), chunks=2, disconnect=True) and gone[0] != 200


def test_a_call_with_something_to_piggyback_or_acknowledge_reaches_the_transport(room):
    engine, _, fast = room
    coordinator, _ = join(engine, "coordinator", ["read", "observe", "message"])
    worker, joined = join(engine, "worker", ["read", "observe", "message"])
    headers = headers_for(joined["token"])
    call(fast, headers, message())  # cached now
    note = engine.post_session_message(coordinator, worker.session_id, "guidance", "stop", requires_ack=True)
    shown = _left_to_the_transport(fast, headers, message())
    assert [m["message_id"] for m in result_of(shown)["_meta"]["commonroom/session_messages"]["messages"]] \
        == [note["message_id"]]
    acked = message(meta={"ack_session_message_ids": [note["message_id"]]})
    assert "commonroom/session_messages" not in result_of(_left_to_the_transport(fast, headers, acked))["_meta"]
    assert engine.first_acked_at(worker.session_id, note["message_id"]) is not None
    assert "commonroom/session_messages" in result_of(_left_to_the_transport(fast, headers, message()))["_meta"]


def test_peer_work_reaches_the_transport(room):
    engine, _, fast = room
    first, joined = join(engine, "worker", ["read", "observe", "message"])
    second, _ = join(engine, "worker", ["read", "observe", "message"])
    headers = headers_for(joined["token"])
    call(fast, headers, message())  # cached now
    engine.post_peer_message(second, engine.peer_id_of(first.session_id), "note", "look at section 2")
    shown = _left_to_the_transport(fast, headers, message())
    assert "look at section 2" in shown[2].decode()
    call(fast, headers, message())
    assert fast.served == 1, "once the projection is recorded, nothing is left to piggyback"


def test_a_fast_call_counts_once_against_the_rate_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("COMMONROOM_RATE_LIMIT", "20")
    for engine, _, fast in _room(tmp_path):
        _, joined = join(engine, "reader", ["read"])
        headers = headers_for(joined["token"])
        statuses = [call(fast, headers, message())[0] for _ in range(21)]
        assert statuses == [200] * 20 + [429]
        assert fast.served == 19  # the first was a miss
        status, answer_headers, _ = call(fast, headers, message())
        assert status == 429 and b"retry-after" in dict(answer_headers)


def _raw(body: dict, request_id_text: str) -> bytes:
    """``body`` as JSON with its id written as ``request_id_text`` (the id member last)."""
    text = json.dumps({k: v for k, v in body.items() if k != "id"})
    return (text[:-1] + ', "id": ' + request_id_text + "}").encode()


def test_a_repeated_call_with_new_ids_is_answered_as_the_transport_answers_it(room):
    engine, _, fast = room
    _, joined = join(engine, "reader", ["read"])
    headers = headers_for(joined["token"])
    # the id is last and its text, 1, also appears before it: the template is found where the id is
    body = message(meta={"io.modelcontextprotocol/clientInfo": {"name": "one", "version": "1"}})
    call(fast, headers, _raw(body, "1"))
    assert len(shapes(fast)) == 1
    for token in ("2", "-7", "0", str(2**62), '"abc"', '""', '"r 1"', "1"):
        raw = _raw(body, token)
        served = fast.served
        answered = call(fast, headers, raw)
        assert fast.served == served + 1, token
        assert answered == call(fast.app, headers, raw), token
        assert json.loads(answered[2])["id"] == json.loads(token)
    secret = joined["token"].encode()
    assert secret not in repr(shapes(fast)).encode(), "a shape keeps no bearer token (only its hash)"
    for token in ("null", "true", "1.5", '"a\\"b"', '"\\u00e9"', "1" * 21, "[1]"):
        raw = _raw(body, token)
        assert call(fast, headers, raw) == call(fast.app, headers, raw), token  # the full checks decided
    assert len(shapes(fast)) == 1


@pytest.mark.parametrize("id_last", [True, False])
def test_a_body_that_differs_elsewhere_is_checked_in_full(room, id_last):
    engine, _, fast = room
    _, joined = join(engine, "reader", ["read"])
    _, observer = join(engine, "observer", ["observe"])
    headers = headers_for(joined["token"])

    def raw_of(body: dict, request_id: int) -> bytes:
        return _raw(body, str(request_id)) if id_last else json.dumps({**body, "id": request_id}).encode()

    shaped = raw_of(message(arguments={}), 1)
    for body in (message(arguments={"region": {"lines": [1, 1]}}), message(arguments={"bogus": 1}),
                 # the same length as the shape's body, the same start and end
                 message(arguments={}, meta={"io.modelcontextprotocol/protocolVersion": "2025-06-18"})):
        call(fast, headers, shaped)  # the shape of these headers is this body's
        assert len(shapes(fast)) == 1
        raw = raw_of(body, 2)
        assert _left_to_the_transport(fast, headers, raw) == call(fast.app, headers, raw)
    other = headers_for(observer["token"])  # another bearer: another shape, its own checks
    assert _left_to_the_transport(fast, other, _raw(message(arguments={}), "2"))[2] \
        == call(fast.app, other, _raw(message(arguments={}), "2"))[2]


def test_the_template_is_where_the_id_is_not_where_its_text_first_appears():
    from commonroom.front.shapes import template

    body = message(meta={"x": 1, "y": "1"})
    raw = _raw(body, "1")
    prefix, suffix = template(raw, {**body, "id": 1})
    assert prefix.endswith(b'"id": ') and suffix == b"}" and len(prefix) + 1 + len(suffix) == len(raw)
    assert template(_raw(body, '"a\\u0041"'), {**body, "id": "a\\u0041"}) == (b"", b"")  # not a plain token


def test_an_id_that_is_a_probe_of_the_template_is_never_a_shape(room):
    engine, _, fast = room
    _, joined = join(engine, "reader", ["read"])
    headers = headers_for(joined["token"])
    for probe in ('"commonroom-id-probe"', "-7337"):
        value = json.loads(probe)
        first = json.dumps(message(request_id=value, meta={"x": value})).encode()
        call(fast, headers, first)
        call(fast, headers, first)
        assert not shapes(fast), probe
        for other in (b'"other"', b"5"):
            raw = other.join(first.rsplit(probe.encode(), 1))  # the meta member (last), not the id
            assert call(fast, headers, raw) == call(fast.app, headers, raw)
            assert json.loads(call(fast, headers, raw)[2])["id"] == value


def test_a_foreign_origin_is_refused_before_the_body_is_read(room):
    """(A foreign Host never reaches this path: the room's edge refuses it first, tests/e2e/test_ingress_edges.py.)"""
    engine, _, fast = room
    _, joined = join(engine, "reader", ["read"])
    token = joined["token"]
    call(fast, headers_for(token), message())
    for headers in (headers_for(token, "document_read", (b"origin", b"http://evil.example")),):
        read: list[dict] = []
        scope = http_scope("POST", "/mcp", [*headers, (b"content-length", b"10")])
        sent: list[dict] = []

        async def receive() -> dict:
            read.append({})
            return {"type": "http.request", "body": b"{}" * 5, "more_body": False}

        async def send(message: dict) -> None:
            sent.append(message)

        answers = []
        for app in (fast.app, fast):  # behind the worker's BodyGuard, as served: no body read unless asked
            read.clear()
            sent.clear()
            asyncio.run(BodyGuard(app, timeout=5)(scope, receive, send))
            answers.append((len(read), sent[0]["status"], sent[0]["headers"]))
        assert answers[0] == answers[1] and answers[0][:2] == (0, 403), "the transport answers 403 unread"


def test_only_a_live_sessions_small_requests_are_kept_as_shapes(room):
    engine, _, fast = room
    _, joined = join(engine, "reader", ["read"])
    for token in ("cr_s_unknown", "x"):
        assert call(fast, headers_for(token), message())[0] == 401
    assert not shapes(fast)
    padded = headers_for(joined["token"], "document_read", (b"x-pad", b"p" * 4096))
    for _ in range(3):
        assert call(fast, padded, message())[0] == 200
    assert not shapes(fast) and fast.served == 2  # answered, checked in full each time, not kept
