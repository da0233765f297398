"""One writer, always: ``ce invite`` / ``ce revoke`` and the lock.

- with a room running they go through its owner port;
- with no room they write the sidecar themselves, holding the same writer
  lock ``ce serve`` takes (so a room cannot start mid-write, and a second
  offline command waits its turn);
- when the lock is held but the room holding it cannot be reached they fail
  with ``transport_unavailable`` (exit 23) and write nothing.
"""

from __future__ import annotations

import hashlib
import json
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from commonroom.cli.common import operator_write
from commonroom.errors import EXIT_CODES, TransportUnavailable
from commonroom.roomfiles import RoomFiles
from tests.conftest import SAMPLE
from tests.roomproc import ce, start_room

UNREACHABLE = EXIT_CODES["transport_unavailable"]

#: Takes the writer lock exactly as ``ce serve`` does, then holds it until stdin closes.
HOLD_LOCK = (
    "import sys\n"
    "from commonroom.roomfiles import RoomFiles\n"
    "from commonroom.server import acquire_lock\n"
    "fd = acquire_lock(RoomFiles.of(sys.argv[1]))\n"
    "print('locked', flush=True)\n"
    "sys.stdin.read()\n"
)


def sidecar_bytes(document: Path) -> dict[str, str]:
    """sha256 of the sidecar and its WAL (what a write would change)."""
    files = RoomFiles.of(document)
    out = {}
    for path in (files.sidecar, files.sidecar.with_name(files.sidecar.name + "-wal")):
        out[path.name] = hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "-"
    return out


def rows(document: Path, sql: str) -> list[tuple]:
    uri = f"file:{RoomFiles.of(document).sidecar}?mode=ro"
    with sqlite3.connect(uri, uri=True) as db:
        return db.execute(sql).fetchall()


def dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def hold_lock(document: Path) -> subprocess.Popen:
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(document)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    return holder


def unreachable(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == UNREACHABLE, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == "" and "Traceback" not in done.stderr
    body = json.loads(done.stderr)
    assert body["error"] == "transport_unavailable"
    assert "nothing was changed" in body["message"]
    return body


def test_a_room_that_cannot_be_reached_gets_no_second_writer(tmp_path):
    room = start_room(tmp_path, SAMPLE)
    try:
        existing = room.invite("existing", "read")
        member = room.join("member", "read")
        state_file = RoomFiles.of(room.document).state
        real_state = state_file.read_text()
        # the room keeps running and holding the lock; its state file now names a dead owner port
        port = dead_port()
        state_file.write_text(json.dumps({**json.loads(real_state), "owner_port": port,
                                          "owner_url": f"http://127.0.0.1:{port}"}))
        before = sidecar_bytes(room.document)

        body = unreachable(ce("invite", str(room.document), "--participant", "intruder", "--cap", "read", "--json"))
        assert body["details"]["pid"] == room.proc.pid
        assert body["details"]["owner_url"] == f"http://127.0.0.1:{port}"
        unreachable(ce("revoke", str(room.document), "--invitation", existing, "--json"))
        unreachable(ce("revoke", str(room.document), "--session", member.session["id"], "--json"))

        assert sidecar_bytes(room.document) == before
        assert rows(room.document, "SELECT participant_name, revoked_at FROM invitation ORDER BY created_at") == [
            ("existing", None), ("member", None)]
        assert rows(room.document, "SELECT revoked_at FROM session") == [(None,)]
        # the room itself never noticed: the session works, the invitation can still be redeemed
        assert member.get("/workspace/session").status_code == 200
        joined = httpx.post(room.ingress + "/workspace/join", json={"invitation": existing}, timeout=30)
        assert joined.status_code == 201, joined.text

        # with the real state back, the same command goes through the room
        state_file.write_text(real_state)
        done = ce("invite", str(room.document), "--participant", "welcome", "--cap", "read")
        assert done.returncode == 0, done.stderr
        assert ("welcome",) in rows(room.document, "SELECT participant_name FROM invitation")
    finally:
        room.stop()


def served_once(folder: Path) -> Path:
    """A document whose room ran once (so it has an ingress to invite to) and stopped."""
    room = start_room(folder, SAMPLE)
    assert room.stop() == 0
    return room.document


def test_offline_commands_hold_the_writer_lock_and_wait_for_it(tmp_path):
    document = served_once(tmp_path)
    # no room: ce invite writes the sidecar itself, and lets the lock go afterwards
    done = ce("invite", str(document), "--participant", "first", "--cap", "read")
    assert done.returncode == 0, done.stderr
    files = RoomFiles.of(document)
    fd = files.try_lock()
    assert fd is not None, "ce invite left the lock held"
    files.release_lock(fd)

    # while the offline write runs, the lock is held: `ce serve` could not start
    seen: list[object] = []

    def offline(engine):
        seen.append(files.try_lock())
        return engine.invite("second", ["read"])

    result = operator_write(document, "invitation_create", {}, offline=offline)
    assert seen == [None] and result["participant"] == "second"

    # a second writer holding the lock (taken as ce serve takes it): wait, then write
    holder = hold_lock(document)
    threading.Timer(0.6, holder.stdin.close).start()
    started = time.monotonic()
    result = operator_write(document, "invitation_create", {},
                            offline=lambda engine: engine.invite("third", ["read"]), wait=30)
    assert time.monotonic() - started >= 0.5
    assert result["participant"] == "third"
    holder.wait(10)


def test_a_lock_held_by_no_reachable_room_fails_and_writes_nothing(tmp_path):
    document = served_once(tmp_path)
    assert ce("invite", str(document), "--participant", "first", "--cap", "read").returncode == 0
    before = sidecar_bytes(document)
    holder = hold_lock(document)
    called: list[bool] = []
    try:
        with pytest.raises(TransportUnavailable) as refused:
            operator_write(document, "invitation_create", {},
                           offline=lambda engine: called.append(True), wait=0.3)
        assert "nothing was changed" in refused.value.message
        assert refused.value.details["lock"] == str(RoomFiles.of(document).lock)
        assert called == []
        assert sidecar_bytes(document) == before
    finally:
        holder.stdin.close()
        holder.wait(10)
    assert rows(document, "SELECT participant_name FROM invitation") == [("first",)]
