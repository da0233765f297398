"""The document's conventions through a real room.

The issue's example, one room per write path: a CRLF file
``## A\\r\\na\\r\\n## B\\r\\nb\\r\\n`` gets LF text through a proposal and its
approval, a direct write over HTTP (region and whole document) and the MCP
``document_write`` tool; the file stays CRLF byte for byte, and writing the
same lines in another style makes no version. On an LF document a
whole-document proposal in CRLF is one changed line, and rebases cleanly.
The property test over every corpus document and path is
tests/engine/test_conventions.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mcp_wire import Mcp
from tests.roomproc import start_room

ALL = "read,propose,approve,write"
CRLF_DOC = b"## A\r\na\r\n## B\r\nb\r\n"
WANT = b"## A\r\nnew\r\n## B\r\nb\r\n"


@pytest.fixture
def crlf_room(tmp_path: Path):
    room = start_room(tmp_path, text=CRLF_DOC.decode())
    assert room.document.read_bytes() == CRLF_DOC
    yield room
    room.stop()


def _version(client) -> int:
    r = client.get("/workspace/document")
    assert r.status_code == 200, r.text
    return r.json()["version"]


def test_proposal_approved_keeps_crlf(crlf_room):
    alice = crlf_room.join("alice", ALL)
    r = alice.post("/workspace/proposals", {"base_version": 1, "region": {"heading": ["A"]}, "text": "## A\nnew\n"})
    assert r.status_code == 201, r.text
    r = alice.post(f"/workspace/proposals/{r.json()['id']}/approve")
    assert r.status_code == 200, r.text
    assert r.json()["version"]["number"] == 2
    assert crlf_room.wait_for_file(WANT) == WANT
    assert alice.get("/workspace/document").json()["text"].encode() == WANT
    # the same document proposed again in LF, without its final newline: no change, no version
    r = alice.post("/workspace/proposals", {"base_version": 2, "region": None, "text": "## A\nnew\n## B\nb"})
    r = alice.post(f"/workspace/proposals/{r.json()['id']}/approve")
    assert r.status_code == 200 and r.json()["version"]["number"] == 2
    assert crlf_room.document.read_bytes() == WANT


def test_http_write_keeps_crlf(crlf_room):
    alice = crlf_room.join("alice", ALL)
    r = alice.request("PUT", "/workspace/document",
                      json={"expected_version": 1, "region": {"heading": ["A"]}, "text": "## A\nnew\n"})
    assert r.status_code == 200, r.text
    assert r.json()["number"] == 2
    assert crlf_room.wait_for_file(WANT) == WANT
    # the whole document in LF with a BOM: only line endings and a BOM differ, so nothing changes
    r = alice.request("PUT", "/workspace/document",
                      json={"expected_version": 2, "text": "\ufeff## A\nnew\n## B\nb\n"})
    assert r.status_code == 200, r.text
    assert r.json()["number"] == 2 and _version(alice) == 2
    # a whole-document write in LF that changes a line lands in CRLF
    r = alice.request("PUT", "/workspace/document", json={"expected_version": 2, "text": "## A\nnew\n## B\nB\n"})
    assert r.status_code == 200 and r.json()["number"] == 3
    want = b"## A\r\nnew\r\n## B\r\nB\r\n"
    assert crlf_room.wait_for_file(want) == want


def test_mcp_document_write_keeps_crlf(crlf_room):
    alice = crlf_room.join("alice", ALL)
    mcp = Mcp(crlf_room.ingress, alice.token)
    try:
        result = mcp.call_tool("document_write", {"expected_version": 1, "text": "## A\nnew\n## B\nb\n"})
        assert result["isError"] is False, result
        assert result["structuredContent"]["number"] == 2
        assert crlf_room.wait_for_file(WANT) == WANT
        result = mcp.call_tool("document_write", {"expected_version": 2, "region": {"heading": ["B"]},
                                                  "text": "## B\nb"})
        assert result["isError"] is False and result["structuredContent"]["number"] == 2
    finally:
        mcp.close()
    assert crlf_room.document.read_bytes() == WANT


def test_lf_document_crlf_whole_proposal_rebases_to_one_line(tmp_path: Path):
    lf = "".join(f"line {k}\n" for k in range(1, 9))
    room = start_room(tmp_path, text=lf)
    try:
        alice = room.join("alice", ALL)
        theirs = lf.replace("line 1\n", "line one\n")
        r = alice.request("PUT", "/workspace/document", json={"expected_version": 1, "text": theirs})
        assert r.status_code == 200 and r.json()["number"] == 2
        mine = lf.replace("line 8\n", "line eight\n").replace("\n", "\r\n")
        r = alice.post("/workspace/proposals", {"base_version": 1, "region": None, "text": mine})
        assert r.status_code == 201, r.text
        proposal = r.json()
        assert proposal["rebased_from"] == 1 and proposal["lines"] == [8, 8]
        assert proposal["text"] == "line eight\n"
        r = alice.post(f"/workspace/proposals/{proposal['id']}/approve")
        assert r.status_code == 200, r.text
        want = theirs.replace("line 8\n", "line eight\n").encode()
        assert room.wait_for_file(want) == want
    finally:
        room.stop()
