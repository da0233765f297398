"""``/mcp`` transport rules, provoked with raw requests against a real room.

Seed protocol.txt (MCP): statuses, JSON-RPC codes and
messages of every header, version, ``_meta`` and method error; 202 for
notifications; Origin 403, Host 421; GET/DELETE 405; owner port 404; 401.
Every JSON-RPC body is validated against the official schema.
"""

from __future__ import annotations

import json

import httpx
import pytest

from commonroom.protocol import BASE64_HEAD, MCP_VERSION, META_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_VERSION
from tests.mcp_schema import check
from tests.mcp_wire import META, Mcp, encode, raw_post


@pytest.fixture(scope="module")
def mcp(shared_room):
    client = shared_room.join("transport-tester", "read,observe")
    caller = Mcp(shared_room.ingress, client.token)
    yield caller
    caller.close()


def _error(response: httpx.Response, status: int, code: int, message: str | None = None) -> dict:
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    check("JSONRPCErrorResponse", body)
    error = body["error"]
    assert error["code"] == code, body
    if message is not None:
        assert error["message"] == message, body
    return body


def _mismatch(response: httpx.Response, header: str) -> dict:
    body = _error(response, 400, -32020, "HeaderMismatch")
    check("HeaderMismatchError", body)
    assert body["error"]["data"]["header"] == header
    return body


# -- success and notifications ------------------------------------------------

def test_request_answered_with_result_and_id(mcp):
    body = mcp.body("server/discover", id="req-1")
    r = mcp.post("server/discover", body=body)
    assert r.status_code == 200
    data = r.json()
    check("JSONRPCResultResponse", data)
    check("DiscoverResultResponse", data)
    assert data["id"] == "req-1"


@pytest.mark.parametrize("request_id", [0, 2**62, -5, "abc", "x" * 200])
def test_ids_echoed(mcp, request_id):
    r = mcp.post("tools/list", id=request_id)
    assert r.status_code == 200
    assert r.json()["id"] == request_id


def test_notification_gets_202_and_empty_body(mcp):
    body = mcp.body("notifications/cancelled", {"requestId": 1}, id=None)
    r = mcp.post("notifications/cancelled", body=body, headers={"Mcp-Method": None, "MCP-Protocol-Version": None})
    assert r.status_code == 202
    assert r.content == b""


def test_a_null_id_is_not_a_notification(mcp):
    body = mcp.body("notifications/cancelled", {"requestId": 1}, id=None)
    body["id"] = None
    r = mcp.post("notifications/cancelled", body=body, headers={"Mcp-Method": None, "MCP-Protocol-Version": None})
    assert r.status_code == 400 and r.json()["id"] is None and r.json()["error"]["code"] == -32600


def test_unknown_notification_also_202(mcp):
    r = mcp.post("notifications/initialized", id=None)
    assert r.status_code == 202 and r.content == b""


# -- header and _meta validation, in the reference order ---------------------

def test_missing_protocol_version_header(mcp):
    _mismatch(mcp.post("tools/list", headers={"MCP-Protocol-Version": None}), "MCP-Protocol-Version")


def test_missing_method_header(mcp):
    _mismatch(mcp.post("tools/list", headers={"Mcp-Method": None}), "Mcp-Method")


@pytest.mark.parametrize("method,params", [
    ("tools/call", {"name": "workspace_status", "arguments": {}}),
    ("prompts/get", {"name": "summarize_changes", "arguments": {"since_version": "1"}}),
    ("resources/read", {"uri": "commonroom://workspace/status"}),
])
def test_missing_name_header(mcp, method, params):
    _mismatch(mcp.post(method, params, headers={"Mcp-Name": None}), "Mcp-Name")


def test_missing_header_checked_before_meta(mcp):
    _mismatch(mcp.post("tools/list", headers={"Mcp-Method": None}, meta=None), "Mcp-Method")


@pytest.mark.parametrize("meta", [
    None,
    {k: v for k, v in META.items() if k != META_VERSION},
    {k: v for k, v in META.items() if k != META_CAPABILITIES},
])
def test_missing_meta_or_field_is_400_invalid_params(mcp, meta):
    body = _error(mcp.post("server/discover", meta=meta, id=77), 400, -32602)
    assert body["id"] == 77


def test_client_info_is_optional(mcp):
    meta = {k: v for k, v in META.items() if k != META_CLIENT_INFO}
    assert mcp.post("server/discover", meta=meta).status_code == 200


def test_params_missing_entirely(mcp):
    body = {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}
    _error(mcp.post("tools/list", body=body), 400, -32602)


def test_header_version_differs_from_meta(mcp):
    meta = {**META, META_VERSION: MCP_VERSION}
    body = _mismatch(mcp.post("server/discover", meta=meta, headers={"MCP-Protocol-Version": "2025-11-25"}),
                     "MCP-Protocol-Version")
    assert body["error"]["data"]["header_value"] == "2025-11-25"


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "1900-01-01", "v999.0.0"])
def test_unsupported_version(mcp, version):
    meta = {**META, META_VERSION: version}
    r = mcp.post("server/discover", meta=meta, headers={"MCP-Protocol-Version": version}, id=301)
    body = _error(r, 400, -32022, "UnsupportedProtocolVersionError")
    check("UnsupportedProtocolVersionError", body)
    assert body["error"]["data"] == {"supported": [MCP_VERSION], "requested": version}
    assert body["id"] == 301


def test_method_header_differs(mcp):
    _mismatch(mcp.post("tools/list", headers={"Mcp-Method": "prompts/list"}), "Mcp-Method")


@pytest.mark.parametrize("method,params,wrong", [
    ("tools/call", {"name": "workspace_status", "arguments": {}}, "document_read"),
    ("prompts/get", {"name": "summarize_changes", "arguments": {"since_version": "1"}}, "review_proposal"),
    ("resources/read", {"uri": "commonroom://workspace/status"}, "commonroom://workspace/document"),
])
def test_name_header_differs(mcp, method, params, wrong):
    _mismatch(mcp.post(method, params, headers={"Mcp-Name": wrong}), "Mcp-Name")


def test_header_values_base64_decoded(mcp):
    r = mcp.post("resources/read", {"uri": "commonroom://workspace/status"},
                 headers={"Mcp-Name": encode("commonroom://workspace/status"),
                          "Mcp-Method": encode("resources/read"),
                          "MCP-Protocol-Version": encode(MCP_VERSION)})
    assert r.status_code == 200, r.text
    check("ReadResourceResultResponse", r.json())


def test_base64_value_compared_after_decoding(mcp):
    r = mcp.post("tools/call", {"name": "workspace_status", "arguments": {}},
                 headers={"Mcp-Name": encode("document_read")})
    _mismatch(r, "Mcp-Name")


def test_broken_base64_is_header_mismatch(mcp):
    r = mcp.post("tools/call", {"name": "workspace_status", "arguments": {}}, headers={"Mcp-Name": "=?base64?%%%?="})
    _mismatch(r, "mcp-name")


def test_sentinel_markers_are_case_sensitive(mcp):
    value = "=?BASE64?" + encode("workspace_status")[len(BASE64_HEAD):]
    _mismatch(mcp.post("tools/call", {"name": "workspace_status", "arguments": {}}, headers={"Mcp-Name": value}),
              "Mcp-Name")


def test_surrounding_blanks_tolerated(mcp):
    body = json.dumps(mcp.body("tools/call", {"name": "workspace_status", "arguments": {}})).encode()
    status, answer = raw_post(mcp.base, [
        ("Authorization", f" Bearer {mcp.token}"), ("Content-Type", "application/json"),
        ("Mcp-Name", "  workspace_status\t "), ("Mcp-Method", "\ttools/call "),
        ("MCP-Protocol-Version", f"   {MCP_VERSION}\t")], body)
    assert status == 200, answer
    check("CallToolResultResponse", json.loads(answer))


def test_blanks_inside_base64_form_tolerated(mcp):
    body = json.dumps(mcp.body("tools/call", {"name": "workspace_status", "arguments": {}})).encode()
    status, answer = raw_post(mcp.base, [
        ("Authorization", f"Bearer {mcp.token}"), ("Mcp-Name", "  " + encode("workspace_status") + "  "),
        ("Mcp-Method", "tools/call"), ("MCP-Protocol-Version", MCP_VERSION)], body)
    assert status == 200, answer


def test_header_names_case_insensitive(mcp):
    r = mcp.post("resources/read", {"uri": "commonroom://workspace/status"},
                 headers={"MCP-Protocol-Version": None, "Mcp-Method": None, "Mcp-Name": None,
                          "mcp-protocol-version": MCP_VERSION, "MCP-METHOD": "resources/read",
                          "mCp-NaMe": "commonroom://workspace/status"})
    assert r.status_code == 200, r.text


def test_non_ascii_name_sent_as_base64(mcp):
    uri = "commonroom://workspace/versions/é"
    r = mcp.post("resources/read", {"uri": uri}, headers={"Mcp-Name": encode(uri)})
    body = _error(r, 200, -32602)  # past the header checks: no such version
    assert body["error"]["data"]["error"] == "invalid_request"


def test_raw_non_ascii_header_value_is_malformed(mcp):
    uri = "commonroom://workspace/versions/é"
    body = json.dumps(mcp.body("resources/read", {"uri": uri})).encode()
    status, answer = raw_post(mcp.base, [
        ("Authorization", f"Bearer {mcp.token}"), ("Mcp-Name", uri), ("Mcp-Method", "resources/read"),
        ("MCP-Protocol-Version", MCP_VERSION)], body)
    assert status == 400
    error = json.loads(answer)["error"]
    assert (error["code"], error["message"]) == (-32020, "HeaderMismatch")


# -- methods --------------------------------------------------------------------

@pytest.mark.parametrize("method", ["initialize", "ping", "logging/setLevel", "tasks/result", "tasks/list",
                                    "unknown/method"])
def test_unknown_and_removed_methods_404(mcp, method):
    body = _error(mcp.post(method, id=500), 404, -32601)
    assert body["id"] == 500


# -- framing --------------------------------------------------------------------

def test_body_not_json(mcp):
    _error(mcp.post("tools/list", raw=b"{not json"), 400, -32700)


def test_batch_refused(mcp):
    _error(mcp.post("tools/list", body=[mcp.body("tools/list")]), 400, -32600)


def test_response_posted_refused(mcp):
    _error(mcp.post("tools/list", body={"jsonrpc": "2.0", "id": 1, "result": {}}), 400, -32600)


def test_wrong_jsonrpc_version(mcp):
    body = mcp.body("tools/list")
    body["jsonrpc"] = "1.0"
    _error(mcp.post("tools/list", body=body), 400, -32600)


def test_bad_id_type(mcp):
    body = mcp.body("tools/list")
    body["id"] = {"x": 1}
    _error(mcp.post("tools/list", body=body), 400, -32600)


# -- security: Origin, Host, bearer ---------------------------------------------

@pytest.mark.parametrize("origin", ["http://127.0.0.1", "http://localhost:3000", "http://127.0.0.1:8080"])
def test_loopback_origins_allowed(mcp, origin):
    assert mcp.post("tools/list", headers={"Origin": origin}).status_code == 200


@pytest.mark.parametrize("origin", ["http://evil.example", "http://127.0.0.1.evil.example", "null",
                                    "http://localhost.evil.example:80", "file://"])
def test_other_origins_403(mcp, origin):
    r = mcp.post("tools/list", headers={"Origin": origin})
    assert r.status_code == 403
    check("JSONRPCErrorResponse", r.json())


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1:1", "commonroom", "LOCALHOST:9"])
def test_served_hosts_allowed(mcp, host):
    assert mcp.post("tools/list", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize("host", ["evil.example", "evil.example:80", "127.0.0.2", "localhost.evil.example", "",
                                  "[::1]:80"])
def test_other_hosts_421(mcp, host):
    """The room's one Host rule (commonroom.http.edge) answers /mcp as every route: 421, the error envelope."""
    r = mcp.post("tools/list", headers={"Host": host})
    assert r.status_code == 421
    assert r.json()["error"] == "invalid_request" and r.json()["details"]["reason"] == "host"


@pytest.mark.parametrize("token", [None, "cr_s_not-a-real-token"])
def test_bearer_missing_or_invalid_401(shared_room, token):
    caller = Mcp(shared_room.ingress, token)
    r = caller.post("server/discover", id=9)
    body = _error(r, 401, -31000)
    assert body["id"] == 9
    assert body["error"]["data"]["error"] == "unauthorized"
    assert r.headers["www-authenticate"].startswith("Bearer")
    caller.close()


def test_notification_without_bearer_401(shared_room):
    caller = Mcp(shared_room.ingress, None)
    r = caller.post("notifications/cancelled", id=None)
    assert r.status_code == 401
    caller.close()


# -- other HTTP methods and the owner port --------------------------------------

def test_delete_405(mcp):
    r = httpx.delete(mcp.url, headers={"Authorization": f"Bearer {mcp.token}"})
    assert r.status_code == 405
    assert "POST" in r.headers["allow"]


@pytest.mark.parametrize("headers", [
    {},  # no Accept
    {"Accept": "application/json"},
    {"Accept": "text/event-stream"},  # no version header
    {"Accept": "text/event-stream", "MCP-Protocol-Version": "2025-11-25"},
])
def test_get_without_stream_conditions_405(mcp, headers):
    r = httpx.get(mcp.url, headers={"Authorization": f"Bearer {mcp.token}", **headers})
    assert r.status_code == 405


def test_get_without_valid_bearer_405(mcp):
    r = httpx.get(mcp.url, headers={"Accept": "text/event-stream", "MCP-Protocol-Version": MCP_VERSION})
    assert r.status_code == 405
    r = httpx.get(mcp.url, headers={"Accept": "text/event-stream", "MCP-Protocol-Version": MCP_VERSION,
                                    "Authorization": "Bearer nope"})
    assert r.status_code == 405


@pytest.mark.parametrize("method", ["PUT", "PATCH"])
def test_other_methods_405(mcp, method):
    r = httpx.request(method, mcp.url, headers={"Authorization": f"Bearer {mcp.token}"})
    assert r.status_code == 405


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
def test_owner_port_has_no_mcp(shared_room, method):
    r = httpx.request(method, shared_room.owner + "/mcp",
                      headers={"Authorization": f"Bearer {shared_room.owner_token}",
                               "Accept": "text/event-stream", "MCP-Protocol-Version": MCP_VERSION},
                      json=Mcp(shared_room.owner, None).body("server/discover") if method == "POST" else None)
    assert r.status_code == 404


def test_log_level_accepted_and_checked(mcp):
    meta = {**META, META_LOG_LEVEL: "debug"}
    assert mcp.post("tools/list", meta=meta).status_code == 200
    meta = {**META, META_LOG_LEVEL: "loud"}
    _error(mcp.post("tools/list", meta=meta), 400, -32602)
