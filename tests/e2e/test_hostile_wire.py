"""Hostile wire input, each case a regression test through a real room.

1. Every number read from the wire is parsed once, with its bounds: huge
   integers (past Python's 4,300-digit limit) in JSON, a path, a header, a
   resource URI or a prompt argument are 400 / -32700 / -32602, never 500;
   only ASCII digits count; an empty ``since_event_id`` is 400.
2. Every MCP method's params are checked against their schema (-32602).
3. Strict JSON in: ``NaN``, ``Infinity`` and overflowing numbers are refused.
4. Authorization comes before the body: no capability, 403, whatever the body.
5. A JSON-RPC request with ``"id": null`` is 400 -32600 with ``id: null``;
   a 202 carries no Content-Type.
6. 405 has its own code (``method_not_allowed``) and the right ``Allow``.
7. ``POST /mcp`` over the body limit carries the ``limit_exceeded`` object.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from commonroom import schemas
from commonroom.protocol import MAX_BODY_BYTES, ROOM_ERROR
from tests.mcp_wire import Mcp
from tests.roomproc import start_room

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample.md"
HUGE = "9" * 5000


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    r = start_room(tmp_path_factory.mktemp("wire"), SAMPLE)
    yield r
    r.stop()


@pytest.fixture(scope="module")
def people(room):
    full = room.join("wire-full", "read,observe,propose,lease,approve,write")
    reader = room.join("wire-reader", "read,observe")
    mcp = Mcp(room.ingress, full.token)
    yield full, reader, mcp
    mcp.close()


def error(response: httpx.Response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == code, body
    assert schemas.errors_of("error", body) == []
    return body


def rpc_error(response: httpx.Response, status: int, code: int) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"]["code"] == code, body
    return body


def raw(client, method: str, path: str, body: str, **headers: str) -> httpx.Response:
    return client.request(method, path, content=body.encode(), headers={"Content-Type": "application/json", **headers})


# -- 1. numbers --------------------------------------------------------------------

def test_a_huge_integer_in_json_is_400_with_or_without_a_bearer(room, people):
    full, _, _ = people
    r = httpx.post(room.ingress + "/workspace/join", content=f'{{"invitation": {HUGE}}}'.encode(), timeout=30)
    error(r, 400, "invalid_request")
    error(raw(full, "PUT", "/workspace/document", f'{{"expected_version": {HUGE}, "text": "x"}}'),
          400, "invalid_request")
    error(raw(full, "POST", "/workspace/proposals", f'{{"base_version": 1, "text": "x", "summary": {HUGE}}}'),
          400, "invalid_request")


def test_a_huge_request_id_is_a_parse_error_and_401_without_a_bearer(room, people):
    _, _, mcp = people
    body = f'{{"jsonrpc":"2.0","id":{HUGE},"method":"ping"}}'.encode()
    r = httpx.post(mcp.url, content=body, headers={"Content-Type": "application/json"}, timeout=30)
    assert r.status_code == 401
    rpc_error(mcp.post("ping", raw=body), 400, -32700)


@pytest.mark.parametrize("path", ["/workspace/versions/\u0661", "/workspace/versions/%201", "/workspace/versions/\uff11",
                                  "/workspace/versions/" + "9" * 400, "/workspace/versions/-1",
                                  "/workspace/versions?limit=%201", "/workspace/versions?limit=\u0661",
                                  "/workspace/diff?from=1&to=" + "9" * 400])
def test_numbers_in_paths_and_queries_are_ascii_digits_within_bounds(people, path):
    full, _, _ = people
    body = error(full.get(path), 400, "invalid_request")
    assert body["details"]["parameter"] in ("number", "limit", "to")


@pytest.mark.parametrize("headers, query", [({"Last-Event-ID": HUGE}, ""), ({"Last-Event-ID": "\u0661".encode()}, ""),
                                            ({}, "?since_event_id="), ({}, "?since_event_id=" + "9" * 400),
                                            ({}, "?since_event_id=3&since_event_id=1")])
def test_observe_cursors_are_bounded_and_never_empty(people, headers, query):
    full, _, _ = people
    body = error(full.get("/workspace/observe" + query, headers=headers), 400, "invalid_request")
    assert body["details"]["parameter"] in ("Last-Event-ID", "since_event_id")


def test_mcp_numbers_in_uris_and_prompt_arguments(people):
    _, _, mcp = people
    r = mcp.post("resources/read", {"uri": "commonroom://workspace/versions/" + HUGE})
    rpc_error(r, 200, -32602)
    r = mcp.post("resources/read", {"uri": "commonroom://workspace/versions/\u0661"})
    rpc_error(r, 200, -32602)
    prompts = mcp.result("prompts/list")["prompts"]
    with_version = [p for p in prompts if any(a["name"] == "since_version" for a in p.get("arguments", []))]
    assert with_version, prompts
    arguments = {a["name"]: "1" for a in with_version[0]["arguments"] if a.get("required")}
    arguments["since_version"] = HUGE
    rpc_error(mcp.post("prompts/get", {"name": with_version[0]["name"], "arguments": arguments}), 200, -32602)


# -- 2. params against their schema ----------------------------------------------

@pytest.mark.parametrize("method, params", [
    ("skills/get", {"uri": []}), ("skills/get", {"uri": {}}), ("resources/subscribe", {"uri": None}),
    ("prompts/get", {"name": "x", "arguments": {"a": 1}}), ("tools/list", {"cursor": 5}),
    ("server/discover", {"_meta": {}, "extra": 1}),
])
def test_params_that_do_not_match_their_schema_are_32602(people, method, params):
    _, _, mcp = people
    r = mcp.post(method, params)
    if method == "server/discover":  # extra params are allowed (MCP is extensible); _meta is checked first
        assert r.status_code in (200, 400), r.text
        return
    body = rpc_error(r, 200, -32602)
    assert body["error"]["data"]["pointer"].startswith("/params"), body


def test_a_tool_name_that_is_not_a_string_is_refused_not_500(people):
    _, _, mcp = people
    r = mcp.post("tools/call", {"name": ["x"]}, headers={"Mcp-Name": "x"})
    assert r.status_code in (200, 400), r.text
    assert r.json()["error"]["code"] in (-32602, -32020), r.text


# -- 3. strict JSON ------------------------------------------------------------------

@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_non_standard_numbers_are_refused(room, people, literal):
    full, _, mcp = people
    error(raw(full, "POST", "/workspace/proposals", f'{{"base_version": {literal}, "text": "x"}}'), 400, "invalid_request")
    body = f'{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":{literal}}}}}'.encode()
    r = httpx.post(mcp.url, content=body, headers={**mcp.headers("tools/call", {"name": "x"}),
                                                    "Authorization": f"Bearer {mcp.token}"}, timeout=30)
    rpc_error(r, 400, -32700)
    assert literal.lstrip("-") not in r.text or "is not JSON" in r.text or "too large" in r.text
    json.loads(r.text, parse_constant=lambda c: pytest.fail(f"{c} in an answer"))


@pytest.mark.parametrize("body", ["\t", " ", "\r\n"])
def test_a_body_of_only_whitespace_is_not_json(people, body):
    """An optional body may be absent (no bytes), but whitespace alone is not a JSON text."""
    full, _, _ = people
    lease = full.post("/workspace/leases", {"region": {"heading": ["Release plan", "Goals"]}})
    assert lease.status_code == 201, lease.text
    path = f"/workspace/leases/{lease.json()['id']}/renew"
    answer = error(raw(full, "POST", path, body), 400, "invalid_request")
    assert "not JSON" in answer["message"]
    assert raw(full, "POST", path, "").status_code == 200
    assert full.request("DELETE", path.removesuffix("/renew")).status_code in (200, 204)


# -- 4. authorization first ------------------------------------------------------------

@pytest.mark.parametrize("method, path", [
    ("PUT", "/workspace/document"), ("POST", "/workspace/leases"), ("POST", "/workspace/leases/l_x/renew"),
    ("POST", "/workspace/proposals"), ("POST", "/workspace/proposals/pr_x/reject"),
])
def test_a_bad_body_without_the_capability_is_403(people, method, path):
    _, reader, _ = people
    body = error(reader.request(method, path, json={"bogus": 1}), 403, "permission_denied")
    assert "pointer" not in body["details"]


def test_a_tool_without_the_capability_is_refused_before_its_arguments(room, people):
    _, reader, _ = people
    mcp = Mcp(room.ingress, reader.token)
    try:
        result = mcp.call_tool("document_write", {"bogus": 1})
        assert result["isError"] is True and result["structuredContent"]["error"] == "permission_denied"
    finally:
        mcp.close()


# -- 5. null ids, empty 202s -------------------------------------------------------------

def test_a_null_request_id_is_invalid_request_answered_with_id_null(people):
    _, _, mcp = people
    body = mcp.body("tools/list", {}, id=None)
    body["id"] = None
    r = mcp.post("tools/list", body=body)
    assert r.status_code == 400 and r.headers["content-type"].startswith("application/json")
    answer = r.json()
    assert answer["id"] is None and answer["error"]["code"] == -32600


def test_a_notification_gets_202_without_content_type(people):
    _, _, mcp = people
    r = mcp.post("notifications/initialized", id=None)
    assert r.status_code == 202 and r.content == b""
    assert "content-type" not in r.headers


# -- 6. 405 ------------------------------------------------------------------------------

def test_405_has_its_own_code_and_allow(room, people):
    full, _, mcp = people
    body = error(full.request("PATCH", "/workspace/document"), 405, "method_not_allowed")
    assert body["details"]["allowed"] == ["GET", "PUT"]
    assert full.request("PATCH", "/workspace/document").headers["allow"] == "GET, PUT"
    r = full.request("OPTIONS", "/workspace/room")
    error(r, 405, "method_not_allowed")
    assert r.headers["allow"] == "GET"
    r = httpx.request("DELETE", room.owner + "/owner/invitations",
                      headers={"Authorization": f"Bearer {room.owner_token}"}, timeout=30)
    error(r, 405, "method_not_allowed")
    for method in ("PUT", "OPTIONS", "PATCH", "DELETE"):
        r = httpx.request(method, mcp.url, headers={"Authorization": f"Bearer {mcp.token}"}, timeout=30)
        assert r.status_code == 405 and r.headers["allow"] == "GET, POST", (method, r.headers)


# -- 7. 413 over MCP ------------------------------------------------------------------------

def test_an_oversized_mcp_body_carries_the_limit_exceeded_object(people):
    _, _, mcp = people
    big = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * (MAX_BODY_BYTES + 10) + b'"}}'
    r = httpx.post(mcp.url, content=big, headers={**mcp.headers("ping", {}), "Authorization": f"Bearer {mcp.token}"},
                   timeout=60)
    body = rpc_error(r, 413, ROOM_ERROR)
    assert body["error"]["data"]["error"] == "limit_exceeded"
    assert body["error"]["data"]["details"]["limit_bytes"] == MAX_BODY_BYTES
