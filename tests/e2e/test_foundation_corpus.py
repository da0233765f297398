"""End to end on every corpus document: ``ce serve``, ``ce invite``, ``ce join``, ``ce call``.

For each ``tests/data/corpus/*.md`` a real room serves a copy in a temp
folder; the installed ``ce`` invites, joins (session file in the temp folder)
and calls ``GET /workspace/document``. The text that comes back must equal
the file byte for byte: CRLF line endings, a missing final newline and
non-ASCII text included. The same document over plain HTTP must agree, and
its ``content_hash`` must be the sha256 of the file's bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from commonroom import schemas
from tests.roomproc import Room, ce_path, corpus_files, start_room

DOCUMENTS = corpus_files()


@pytest.fixture(scope="module")
def stopping():
    """Rooms told to stop (SIGTERM) as each test ends; all must have exited 0 at the end.

    Stopping takes the worker about a second; waiting for that once, not
    once per document, keeps the module quick.
    """
    rooms: list[Room] = []
    yield rooms
    statuses = {room.document.name: room.stop() for room in rooms}
    assert statuses == {room.document.name: 0 for room in rooms}


def ce_bytes(*args: str) -> subprocess.CompletedProcess:
    """Run ``ce`` with byte output (no locale decoding, no newline translation)."""
    return subprocess.run([ce_path(), *args], capture_output=True, timeout=120,
                          env={**os.environ, "PYTHONIOENCODING": "utf-8"})


def test_the_corpus_is_present_and_exercises_the_hard_cases():
    assert DOCUMENTS, "no corpus documents found (set COMMONROOM_CORPUS)"
    data = [p.read_bytes() for p in DOCUMENTS]
    assert any(b"\r\n" in d for d in data), "a CRLF document"
    assert any(any(byte > 0x7F for byte in d) for d in data), "a non-ASCII document"
    assert any(len(d) > 500_000 for d in data), "a large document"


@pytest.mark.parametrize("source", DOCUMENTS, ids=[p.name for p in DOCUMENTS])
def test_serve_invite_join_read_byte_for_byte(tmp_path: Path, source: Path, stopping: list[Room]):
    expected = source.read_bytes()
    room = start_room(tmp_path, source, name=source.name)
    stopping.append(room)
    try:
        document = str(room.document)
        invited = ce_bytes("invite", document, "--participant", "reader", "--cap", "read")
        assert invited.returncode == 0, invited.stderr
        token = invited.stdout.decode().strip()

        session_file = tmp_path / "session.json"
        joined = ce_bytes("join", token, "--session-file", str(session_file), "--json")
        assert joined.returncode == 0, joined.stderr
        assert json.loads(joined.stdout)["file_name"] == source.name

        called = ce_bytes("call", "GET", "/workspace/document", "--session-file", str(session_file))
        assert called.returncode == 0, called.stderr
        body = json.loads(called.stdout.decode("utf-8"))
        assert body["text"].encode("utf-8") == expected
        assert body["version"] == 1
        assert body["content_hash"] == "sha256:" + hashlib.sha256(expected).hexdigest()
        assert schemas.errors_of("room#Document", body) == []

        bearer = json.loads(session_file.read_text())["token"]
        r = httpx.get(room.ingress + "/workspace/document", headers={"Authorization": f"Bearer {bearer}"},
                      timeout=60)
        assert r.status_code == 200
        assert r.json()["text"].encode("utf-8") == expected
        assert room.document.read_bytes() == expected, "serving never rewrites the file"
    finally:
        room.proc.send_signal(signal.SIGTERM)
