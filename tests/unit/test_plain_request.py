"""What the room's protocol reads as one plain write (commonroom/wirewrites.py ``plain_request``).

Anything it does not take goes to gunicorn's parser, which answers it as
always (``tests/e2e/test_wire_writes.py`` checks that on a real room), so
the cases here are about never taking a request gunicorn would read or
refuse differently, and about reading exactly what was sent.
"""

from __future__ import annotations

import pytest
from gunicorn.config import Config

from commonroom.http.directwrites import DirectWrites, direct_writes
from commonroom.operations import INGRESS, OPERATIONS
from commonroom.wire import Rendered
from commonroom.wirewrites import answer_bytes, head_bound, plain_request, request_starts

BODY = b'{"region":{"lines":[2,2]}}'
HEAD = b"POST /workspace/leases HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer t\r\nContent-Length: 26\r\n"


def test_a_plain_write_is_read_as_sent():
    raw = (b"POST /workspace/leases HTTP/1.1\r\nhost:127.0.0.1\r\nAUTHORIZATION: \t Bearer t \t\r\n"
           b"Content-Type: application/json\r\nContent-Length: 26\r\nConnection: Keep-Alive\r\n"
           b"User-Agent: x\xe9\r\n\r\n" + BODY)
    scope, body = plain_request(raw, 4094)
    assert body == BODY
    assert scope == {"method": "POST", "path": "/workspace/leases", "query_string": b"", "headers": [
        (b"host", b"127.0.0.1"), (b"authorization", b"Bearer t"), (b"content-type", b"application/json"),
        (b"content-length", b"26"), (b"connection", b"Keep-Alive"), (b"user-agent", b"x\xe9")]}
    release = b"DELETE /workspace/leases/lease_1-a.B~ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n\r\n"
    assert plain_request(release, 4094) == ({"method": "DELETE", "path": "/workspace/leases/lease_1-a.B~",
                                             "query_string": b"", "headers": [(b"host", b"x"),
                                                                               (b"authorization", b"Bearer t")]},
                                            b"")


@pytest.mark.parametrize("raw", [
    HEAD + b"\r\n" + BODY[:-1],  # the body not all here
    HEAD + b"\r\n" + BODY + b"G",  # more than one request
    HEAD + b"\r\n" + BODY + HEAD + b"\r\n" + BODY,
    HEAD,  # the head not all here
    HEAD + b"\r\n",
    HEAD.replace(b"Content-Length: 26\r\n", b"") + b"\r\n" + BODY,  # a body without a length
    HEAD.replace(b"26", b"+26") + b"\r\n" + BODY,
    HEAD.replace(b"26", b"026") + b"\r\n" + BODY,  # a length not as written (BodyGuard reads "00" as one to come)
    HEAD.replace(b"26", b"00") + b"\r\n",
    HEAD.replace(b"26", b"2 6") + b"\r\n" + BODY,
    HEAD + b"Content-Length: 26\r\n\r\n" + BODY,  # a field twice
    HEAD + b"host: y\r\n\r\n" + BODY,
    HEAD.replace(b"Host: 127.0.0.1\r\n", b"") + b"\r\n" + BODY,  # no Host
    HEAD + b"Connection: close\r\n\r\n" + BODY,
    HEAD + b"Connection: keep-alive, Upgrade\r\n\r\n" + BODY,
    HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + BODY,
    HEAD + b"Expect: 100-continue\r\n\r\n" + BODY,
    HEAD + b"X-Forwarded-For: 1.2.3.4\r\n\r\n" + BODY,
    HEAD + b"Accept : */*\r\n\r\n" + BODY,  # whitespace before the colon
    HEAD + b" folded\r\n\r\n" + BODY,  # obs-fold
    HEAD + b"Accept: a\nb\r\n\r\n" + BODY,  # a bare LF
    HEAD + b"Accept: a\rb\r\n\r\n" + BODY,  # a bare CR
    HEAD + b"Accept: a\x00b\r\n\r\n" + BODY,
    HEAD + b"Accept: a\x7fb\r\n\r\n" + BODY,
    HEAD + b"Accept\r\n\r\n" + BODY,  # no colon
    b"\r\n" + HEAD + b"\r\n" + BODY,  # an empty line first
    HEAD.replace(b"HTTP/1.1", b"HTTP/1.0") + b"\r\n" + BODY,
    HEAD.replace(b"HTTP/1.1", b"HTTP/1.2") + b"\r\n" + BODY,
    HEAD.replace(b"HTTP/1.1", b"http/1.1") + b"\r\n" + BODY,
    HEAD.replace(b"POST /", b"POST  /") + b"\r\n" + BODY,  # two spaces
    HEAD.replace(b"leases", b"leases?x=1") + b"\r\n" + BODY,
    HEAD.replace(b"leases", b"leases#x") + b"\r\n" + BODY,
    HEAD.replace(b"leases", b"lea%73es") + b"\r\n" + BODY,
    HEAD.replace(b"/workspace/leases", b"http://x/workspace/leases") + b"\r\n" + BODY,
    HEAD.replace(b"/workspace/leases", b"*") + b"\r\n" + BODY,
    HEAD.replace(b"leases", b"le\xe9ses") + b"\r\n" + BODY,
])
def test_anything_else_is_left_to_gunicorn(raw):
    assert plain_request(raw, 4094) is None


def test_a_head_over_the_bound_is_left_to_gunicorn():
    raw = HEAD + b"\r\n" + BODY
    head = raw.index(b"\r\n\r\n")
    assert plain_request(raw, head) is not None
    assert plain_request(raw, head - 1) is None


def test_the_answer_is_gunicorn_s_framing_of_the_rendered_answer():
    out = Rendered()
    out.status, out.data = 429, b'{"error":{}}'
    out.set_header("Retry-After", "3")
    answer = answer_bytes(out, close=False).decode("latin-1")
    head, body = answer.split("\r\n\r\n")
    lines = head.split("\r\n")
    assert lines[:5] == ["HTTP/1.1 429 Too Many Requests", "content-type: application/json", "retry-after: 3",
                         "content-length: 12", "Server: gunicorn/asgi"]
    assert lines[5].startswith("Date: ") and lines[5].endswith(" GMT") and len(lines) == 6
    assert body == '{"error":{}}'
    assert answer_bytes(out, close=True).decode("latin-1").split("\r\n\r\n")[0].endswith("\r\nConnection: close")


def test_the_first_look_passes_the_room_s_writes_and_no_read_nor_mcp_call():
    direct = DirectWrites(None, None, None, None, direct_writes(OPERATIONS, INGRESS))  # type: ignore[arg-type]
    starts = request_starts(direct)
    assert b"POST /workspace/leases" in starts and b"DELETE /workspace/leases/" in starts
    assert b"POST /workspace/boards/" in starts
    for line in (b"POST /workspace/leases HTTP/1.1", b"DELETE /workspace/leases/lease_1 HTTP/1.1",
                 b"POST /workspace/boards/s1/messages HTTP/1.1"):
        assert line.startswith(starts)
    for line in (b"GET /workspace/document HTTP/1.1", b"POST /mcp HTTP/1.1", b"GET /workspace/leases HTTP/1.1",
                 b"POST /workspace/join HTTP/1.1"):
        assert not line.startswith(starts), line


def test_the_head_bound_stays_under_gunicorn_s_limits():
    cfg = Config()
    assert head_bound(cfg) == 4094  # the request line's limit (the field's is 8190)
    cfg.set("limit_request_field_size", 200)
    assert head_bound(cfg) == 198  # a field line and its CRLF within it
    cfg.set("limit_request_fields", 5)  # fewer fields than a plain write may carry: none read here
    assert head_bound(cfg) == 0
    assert plain_request(HEAD + b"\r\n" + BODY, head_bound(cfg)) is None
