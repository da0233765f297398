"""Hostile and careless input, found by a new user's trial run.

Every case must give a clear error of the documented shape (never a 500 or
a traceback) and lose nothing: lone surrogates and absurd nesting in JSON,
a non-UTF-8 or deleted file while the room runs, a room restarted on a
missing or non-UTF-8 file, out-of-range ports, names with control
characters, a write that changes nothing, a CR/LF-injected path, and a
"loopback" token that names another host.
"""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import httpx
import pytest

from commonroom import schemas
from commonroom.protocol import MCP_VERSION
from tests.roomproc import ce, start_room

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample.md"


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    r = start_room(tmp_path_factory.mktemp("hostile"), SAMPLE)
    yield r
    r.stop()


def assert_error(response: httpx.Response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == code, body
    assert schemas.errors_of("error", body) == []
    return body


RAW_SURROGATE = b'{"base_version": 1, "text": "\\ud800", "summary": "s"}'
DEEP = b"[" * 100000 + b"]" * 100000


@pytest.mark.parametrize("body", [RAW_SURROGATE, DEEP, b'{"base_version": 1, "text": "\\udfff tail"}'])
def test_json_the_room_cannot_keep_is_invalid_request(room, body):
    alice = room.join(f"alice{len(body)}", "read,propose")
    r = alice.request("POST", "/workspace/proposals", content=body, headers={"Content-Type": "application/json"})
    assert_error(r, 400, "invalid_request")


def test_nesting_on_the_public_join_route_is_invalid_request(room):
    r = httpx.post(room.ingress + "/workspace/join", content=DEEP, timeout=30)
    assert_error(r, 400, "invalid_request")


def test_surrogate_in_a_region_query_is_invalid_request(room):
    reader = room.join("reader-q", "read")
    r = reader.get("/workspace/document", params={"region": '{"heading": ["\\ud800"]}'})
    assert_error(r, 400, "invalid_request")


def test_surrogate_and_nesting_over_mcp_are_parse_errors(room):
    agent = room.join("agent-mcp", "read,propose")
    for body in (DEEP, b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "\\ud800"}}'):
        r = httpx.post(room.ingress + "/mcp", content=body, timeout=30,
                       headers={"Authorization": f"Bearer {agent.token}", "Content-Type": "application/json",
                                "Accept": "application/json, text/event-stream",
                                "MCP-Protocol-Version": MCP_VERSION, "Mcp-Method": "tools/call"})
        assert r.status_code == 400, r.text
        assert r.json()["error"]["code"] == -32700


def test_names_with_control_or_invisible_characters_are_refused(room):
    headers = {"Authorization": f"Bearer {room.owner_token}"}
    for name in ("evil\nname", "tab\there", "rtl\u202eoverride", "zero\u200bwidth", "   "):
        r = httpx.post(room.owner + "/owner/invitations", json={"participant": name, "capabilities": ["read"]},
                       headers=headers, timeout=30)
        assert_error(r, 400, "invalid_request")
    # NFC: a decomposed name is stored composed, so the two spellings are one participant
    r = httpx.post(room.owner + "/owner/invitations", json={"participant": "Cafe\u0301", "capabilities": ["read"]},
                   headers=headers, timeout=30)
    assert r.status_code == 201 and r.json()["participant"] == "Caf\u00e9"


def test_a_write_that_changes_nothing_makes_no_version(room):
    writer = room.join("writer-noop", "read,write")
    head = writer.get("/workspace/room").json()["head_version"]
    text = writer.get("/workspace/document", params={"region": '{"lines": [1, 1]}'}).json()["text"]
    r = writer.request("PUT", "/workspace/document", json={"expected_version": head, "text": text,
                                                           "region": {"lines": [1, 1]}})
    assert r.status_code == 200, r.text
    assert r.json()["number"] == head
    assert writer.get("/workspace/room").json()["head_version"] == head


def _write(client, text="x\n"):
    head = client.get("/workspace/room").json()["head_version"]
    return client.request("PUT", "/workspace/document",
                          json={"expected_version": head, "text": text, "region": {"lines": [1, 1]}})


def test_a_file_made_non_utf8_while_running_is_moved_aside_and_rewritten(tmp_path):
    r = start_room(tmp_path, SAMPLE)
    try:
        writer = r.join("w", "read,write,observe")
        r.document.write_bytes(b"bad \xff\xfe bytes\n")
        first = _write(writer, "# Release plan, edited\n")
        assert first.status_code == 200, first.text
        deadline = time.monotonic() + 10
        head = writer.get("/workspace/document").json()["text"]
        while r.document.read_bytes() != head.encode() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert r.document.read_bytes() == head.encode()
        aside = list(tmp_path.glob("doc.md.rejected-*"))
        assert len(aside) == 1 and aside[0].read_bytes() == b"bad \xff\xfe bytes\n"
        events = writer.get("/workspace/history", params={"limit": 200}).json()["events"]
        rejected = [e for e in events if e["type"] == "document.external_edit_rejected"]
        assert rejected and rejected[-1]["payload"]["saved_as"] == str(aside[0])
    finally:
        r.stop()


def test_a_file_deleted_while_running_is_written_back(tmp_path):
    r = start_room(tmp_path, SAMPLE)
    try:
        writer = r.join("w", "read,write")
        r.document.unlink()
        assert _write(writer).status_code == 200
        head = writer.get("/workspace/document").json()["text"].encode()
        deadline = time.monotonic() + 10
        # the old head is written back at once; the file then follows the new head
        while time.monotonic() < deadline and (not r.document.exists() or r.document.read_bytes() != head):
            time.sleep(0.05)
        assert r.document.read_bytes() == head
    finally:
        r.stop()


def test_serve_restores_a_missing_or_non_utf8_file_it_knows(tmp_path):
    r = start_room(tmp_path, SAMPLE)
    writer = r.join("w", "read,write")
    assert _write(writer, "# Kept\n").status_code == 200
    head = writer.get("/workspace/document").json()["text"]
    r.stop()
    for damage in ("missing", "binary"):
        if damage == "missing":
            r.document.unlink()
        else:
            r.document.write_bytes(b"\xff\xfe")
        again = start_room(tmp_path, None)
        try:
            assert r.document.read_bytes() == head.encode()
        finally:
            again.stop()
    assert len(list(tmp_path.glob("doc.md.rejected-*"))) == 1


@pytest.mark.parametrize("args", [("--port", "-1"), ("--port", "70000"), ("--owner-port", "99999"),
                                  ("--host", "10.1.2.3")])
def test_serve_refuses_bad_ports_and_hosts_in_one_line(tmp_path, args):
    doc = tmp_path / "doc.md"
    doc.write_text("# x\n")
    base = {"--port": "0", "--owner-port": "0"}
    base.update({args[0]: args[1]})
    done = ce("serve", str(doc), *[x for kv in base.items() for x in kv], timeout=30)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("ce serve: ")


def test_ce_refuses_a_path_with_cr_lf(tmp_path, room):
    token = room.invite("crlf", "read")
    session = tmp_path / "s.json"
    assert ce("join", token, "--session-file", str(session)).returncode == 0
    done = ce("call", "GET", "/workspace/room\r\nX-Injected: 1", "--session-file", str(session))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert json.loads(done.stderr)["error"] == "invalid_request"


def test_a_loopback_token_naming_another_host_is_not_dialled(room):
    token = room.invite("elsewhere", "read")
    payload = json.loads(base64.urlsafe_b64decode(token.split("/")[-1] + "=="))
    payload["transport"]["address"] = "10.255.255.1"
    raw = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
    forged = "commonroom://join/" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    done = ce("join", forged, "--session-file", "/dev/null", "--json", timeout=30)
    assert done.returncode != 0
    assert json.loads(done.stderr)["error"] == "transport_unavailable"


def test_a_directory_put_in_the_file_s_place_is_moved_aside(tmp_path):
    r = start_room(tmp_path, SAMPLE)
    try:
        writer = r.join("w", "read,write")
        r.document.unlink()
        r.document.mkdir()
        (r.document / "notes.txt").write_text("keep me")
        assert _write(writer, "# After the directory\n").status_code == 200
        head = writer.get("/workspace/document").json()["text"].encode()
        assert r.wait_for_file(head) == head
        aside = list(tmp_path.glob("doc.md.rejected-*"))
        assert len(aside) == 1 and (aside[0] / "notes.txt").read_text() == "keep me"
    finally:
        r.stop()
