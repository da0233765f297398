"""Local security of the files beside the document.

- every file the room creates beside the document is 0600 whatever the
  umask (sidecar, -wal, -shm, lock, state, owner token), and files an older
  run left readable are made private at start; the document keeps its mode;
- ``ce`` sends the owner token only to the room holding the writer lock:
  a state file naming another listener, a state file others can write, or
  a pid that does not hold the lock is refused (exit 23) and a fake
  listener receives nothing;
- ``ce invitation decode`` says when an invitation has expired.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
import time
from pathlib import Path

import pytest

from commonroom.errors import EXIT_CODES
from commonroom.roomfiles import RoomFiles
from tests.conftest import SAMPLE
from tests.roomproc import ce, start_room

UNREACHABLE = EXIT_CODES["transport_unavailable"]


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def room_files(document: Path) -> list[Path]:
    files = RoomFiles.of(document)
    return [p for p in files.private_paths() if p.exists()]


def start_under_umask(folder: Path, umask: int, **kwargs):
    old = os.umask(umask)
    try:
        return start_room(folder, SAMPLE, **kwargs)
    finally:
        os.umask(old)


def test_room_files_are_private_under_a_permissive_umask(tmp_path):
    room = start_under_umask(tmp_path, 0o000)
    try:
        os.chmod(room.document, 0o644)
        writer = room.join("writer", "read,write")
        head = writer.get("/workspace/document").json()
        r = writer.request("PUT", "/workspace/document",
                           json={"expected_version": head["version"], "text": head["text"] + "\nmore\n"})
        assert r.status_code == 200, r.text
        room.wait_for_file((head["text"] + "\nmore\n").encode())
        files = RoomFiles.of(room.document)
        names = {p.name for p in room_files(room.document)}
        assert {files.sidecar.name, files.sidecar.name + "-wal", files.sidecar.name + "-shm", files.lock.name,
                files.state.name, files.owner_token.name} <= names
        assert {p.name: mode(p) for p in room_files(room.document)} == {n: 0o600 for n in names}
        assert mode(room.document) == 0o644  # the document keeps its own mode
        # nothing else appeared beside the document readable by others
        for path in tmp_path.iterdir():
            if path.name.startswith(room.document.name + ".commonroom"):
                assert mode(path) & 0o077 == 0, path
    finally:
        room.stop()


def test_files_an_older_run_left_readable_are_made_private_at_start(tmp_path):
    room = start_under_umask(tmp_path, 0o022)
    room = room.restart(between=lambda: [os.chmod(p, 0o644) for p in room_files(room.document)])
    try:
        assert {p.name: mode(p) for p in room_files(room.document)} == {
            p.name: 0o600 for p in room_files(room.document)}
    finally:
        room.stop()


def test_offline_ce_invite_creates_private_files(tmp_path):
    room = start_under_umask(tmp_path, 0o022)
    assert room.stop() == 0
    for path in room_files(room.document):
        os.chmod(path, 0o644)
    old = os.umask(0)
    try:
        done = ce("invite", str(room.document), "--participant", "offline", "--cap", "read")
    finally:
        os.umask(old)
    assert done.returncode == 0, done.stderr
    assert {p.name: mode(p) for p in room_files(room.document)} == {
        p.name: 0o600 for p in room_files(room.document)}


class FakeListener:
    """A local listener that records every byte it is sent."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.received = b""
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            self.connections += 1
            conn.settimeout(1)
            try:
                while data := conn.recv(65536):
                    self.received += data
            except OSError:
                pass
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


def refused(done, reason: str) -> dict:
    assert done.returncode == UNREACHABLE, (done.returncode, done.stdout, done.stderr)
    body = json.loads(done.stderr)
    assert body["error"] == "transport_unavailable" and "nothing was changed" in body["message"]
    assert reason in body["details"]["reason"], body
    return body


@pytest.fixture
def secured(tmp_path):
    room = start_room(tmp_path, SAMPLE)
    fake = FakeListener()
    files = RoomFiles.of(room.document)
    real = files.state.read_text()
    yield room, fake, files, real
    fake.close()
    room.stop()


def rewrite_state(files: RoomFiles, real: str, **changes) -> None:
    files.state.write_text(json.dumps({**json.loads(real), **changes}))


def test_a_state_file_naming_another_listener_gets_no_owner_token(secured):
    room, fake, files, real = secured
    rewrite_state(files, real, owner_port=fake.port, owner_url=f"http://127.0.0.1:{fake.port}")
    assert mode(files.state) == 0o600  # private, written by this user: only the listener check can tell
    refused(ce("invite", str(room.document), "--participant", "intruder", "--cap", "read", "--json"),
            f"127.0.0.1:{fake.port} is not a listener of pid {room.proc.pid}")
    refused(ce("revoke", str(room.document), "--session", "s_000000000000000000000000", "--json"), "not a listener")
    # a non-loopback owner address is refused before anything is dialled
    rewrite_state(files, real, owner_url=f"http://192.0.2.1:{json.loads(real)['owner_port']}")
    refused(ce("invite", str(room.document), "--participant", "intruder", "--cap", "read", "--json"), "loopback")
    time.sleep(0.3)
    assert fake.connections == 0 and fake.received == b""
    assert room.owner_token.encode() not in fake.received and b"cro_" not in fake.received
    files.state.write_text(real)
    done = ce("invite", str(room.document), "--participant", "welcome", "--cap", "read")
    assert done.returncode == 0, done.stderr


def test_a_state_file_others_can_write_is_refused(secured):
    room, fake, files, real = secured
    for bits in (0o666, 0o620, 0o602):
        os.chmod(files.state, bits)
        refused(ce("invite", str(room.document), "--participant", "intruder", "--cap", "read", "--json"),
                f"mode {bits:04o}: others can write it")
    os.chmod(files.state, 0o600)
    os.chmod(files.owner_token, 0o640)
    refused(ce("invite", str(room.document), "--participant", "intruder", "--cap", "read", "--json"),
            "others can read or write it")
    os.chmod(files.owner_token, 0o600)
    # a symbolic link is not the room's file either
    moved = files.state.with_name("elsewhere.json")
    files.state.rename(moved)
    files.state.symlink_to(moved)
    refused(ce("invite", str(room.document), "--participant", "intruder", "--cap", "read", "--json"), "symbolic link")
    files.state.unlink()
    moved.rename(files.state)
    assert fake.received == b""
    assert ce("invite", str(room.document), "--participant", "ok", "--cap", "read").returncode == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the state file to another user")
def test_a_state_file_of_another_user_is_refused(secured):
    room, fake, files, real = secured
    os.chown(files.state, 65534, -1)
    try:
        refused(ce("invite", str(room.document), "--participant", "intruder", "--cap", "read", "--json"),
                "not to this user")
    finally:
        os.chown(files.state, 0, -1)


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="the lock holder is read from /proc/locks")
def test_a_pid_that_does_not_hold_the_lock_is_refused(secured):
    """The state names this test's own pid, which really holds the fake listener: still refused,
    since the writer lock is the room's."""
    room, fake, files, real = secured
    rewrite_state(files, real, pid=os.getpid(), owner_port=fake.port, owner_url=f"http://127.0.0.1:{fake.port}")
    refused(ce("invite", str(room.document), "--participant", "intruder", "--cap", "read", "--json"),
            f"pid {os.getpid()} named by its state file does not hold the writer lock")
    assert fake.connections == 0 and fake.received == b""


def test_invitation_decode_says_when_it_has_expired(tmp_path):
    room = start_room(tmp_path, SAMPLE)
    try:
        short = room.invite("brief", "read", expires_in_seconds=1)
        fresh = room.invite("fresh", "read")
    finally:
        room.stop()
    time.sleep(1.2)
    done = ce("invitation", "decode", short, "--json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["expired"] is True
    assert "expired" in done.stderr and shown["expires_at"] in done.stderr
    done = ce("invitation", "decode", fresh, "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["expired"] is False and done.stderr == ""
