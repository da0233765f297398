"""The file is the artifact, even on a full disk (a 4 MiB tmpfs): a version the room acknowledged reaches
the file, or the write is refused (503 ``storage_unavailable``) with nothing committed. A file that cannot
be written after the commit is tried again until it is, and ``/workspace/room`` and ``ce status`` say
"the file is behind" meanwhile; no new version is taken until it has caught up. ``ce sidecar compact``
exits non-zero when its ``VACUUM`` failed."""

from __future__ import annotations

import base64
import contextlib
import os
import random
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest

from commonroom.engine.filesync import DISK_MARGIN
from commonroom.errors import EXIT_CODES
from tests.e2e.test_disk_faults import can_mount, full_tmpfs, head, integrity, put
from tests.roomproc import ce, start_room

TEXT = "# Plan\n\nfirst\n"


def noise(tag: str, lines: int) -> str:
    """Lines no compression shrinks much (the sidecar stores a whole new text compressed)."""
    rnd = random.Random(tag)
    return "# Plan\n\n" + "".join(f"{tag} {i} " + base64.b64encode(rnd.randbytes(45)).decode() + "\n"
                                  for i in range(lines))


@contextlib.contextmanager
def leaving_free(volume: Path, free: int) -> Iterator[Path]:
    """A filler takes all of the tmpfs but ``free`` bytes; yields the filler (delete it to give the space back)."""
    with full_tmpfs(volume):
        pass  # to learn how much the volume holds: filled, measured, freed
    filler = volume / "filler"
    disk = os.statvfs(volume)
    size = disk.f_bavail * disk.f_frsize - free
    with open(filler, "wb", buffering=0) as f:
        f.write(b"\0" * max(0, size))
    yield filler
    filler.unlink(missing_ok=True)


@pytest.fixture
def volume(tmp_path: Path):
    where = tmp_path / "volume"
    if not can_mount(where):
        pytest.skip("mounting a tmpfs is not allowed here")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_every_acknowledged_version_reaches_the_file_on_a_full_disk(volume: Path, tmp_path: Path):
    log = tmp_path / "serve.log"
    room = start_room(volume, text=TEXT, log_file=log)
    try:
        writer = room.join("writer", "read,write")
        before = head(writer)

        with full_tmpfs(volume):  # no room at all: refused before anything is committed
            refused = put(writer, before["version"], noise("a", 50))
            assert refused.status_code == 503 and refused.json()["error"] == "storage_unavailable", refused.text
            assert refused.json()["details"]["reason"] == "disk_full"
            assert head(writer) == before and room.document.read_text() == TEXT
            compact = ce("sidecar", "compact", str(room.document))  # VACUUM needs the sidecar's size free
            assert compact.returncode == EXIT_CODES["storage_unavailable"], (compact.returncode, compact.stderr)
            assert "was not compacted" in compact.stderr

        big = noise("b", 3000)  # ~200 KB: its commit fits; the file's temporary copy then does not
        with leaving_free(volume, len(big) + DISK_MARGIN + 16 * 1024) as filler:
            done = put(writer, before["version"], big)
            assert done.status_code == 200, done.text
            version = before["version"] + 1
            assert room.document.read_text() == TEXT
            deadline = time.monotonic() + 10
            while "file_behind" not in writer.get("/workspace/room").json() and time.monotonic() < deadline:
                time.sleep(0.05)
            behind = writer.get("/workspace/room").json()["file_behind"]
            assert behind["message"] == f"the file is behind: on disk v{before['version']}, head v{version}"
            assert (behind["on_disk"], behind["head"]) == (before["version"], version)
            status = ce("status", str(room.document))
            assert f"the file is behind: on disk v{before['version']}, head v{version}" in status.stdout, status
            assert room.operator().get("/workspace/room").json()["file_behind"] == behind

            held = put(writer, version, TEXT + "more\n")  # no new version while the file is behind
            assert held.status_code == 503 and held.json()["details"]["reason"] == "file_behind", held.text
            assert head(writer)["version"] == version
            assert not [p for p in volume.iterdir() if "commonroom-tmp" in p.name]  # no half-written copy left
            filler.unlink()
            back = time.monotonic()
            assert room.wait_for_file(big.encode(), timeout=10) == big.encode()
            caught_up = time.monotonic() - back
        assert caught_up < 5, caught_up  # tried every 0.25 s
        assert "file_behind" not in writer.get("/workspace/room").json()
        assert put(writer, version, TEXT + "after\n").status_code == 200
        assert room.wait_for_file((TEXT + "after\n").encode()) == (TEXT + "after\n").encode()
        text = log.read_text()
        assert "the file is behind" in text and "wrote " in text and "again" in text
        assert room.stop() == 0 and integrity(room) == "ok"
    finally:
        room.stop()


def test_an_offline_compact_on_a_full_disk_says_why_in_one_line_and_exits_non_zero(volume: Path):
    room = start_room(volume, text=TEXT)
    try:
        writer = room.join("writer", "read,write")
        assert put(writer, head(writer)["version"], noise("c", 400)).status_code == 200
    finally:
        assert room.stop() == 0
    with full_tmpfs(volume):  # no room for VACUUM's copy, nor for SQLite's -shm: one line says so, no traceback
        compact = ce("sidecar", "compact", str(room.document))
        versions = ce("versions", str(room.document))
        served = ce("serve", str(room.document), "--port", "0", "--owner-port", "0")
    for done in (compact, versions, served):
        assert done.returncode == EXIT_CODES["storage_unavailable"], (done.returncode, done.stderr)
        assert "Traceback" not in done.stderr and "disk" in done.stderr, done.stderr
    assert not compact.stdout.startswith("compacted:"), compact.stdout
    assert integrity(room) == "ok"


def test_a_room_stopped_while_its_file_is_behind_says_so_and_the_next_start_writes_it(volume: Path, tmp_path: Path):
    log = tmp_path / "serve.log"
    room = start_room(volume, text=TEXT, log_file=log)
    try:
        writer = room.join("writer", "read,write")
        big = noise("s", 3000)
        with leaving_free(volume, len(big) + DISK_MARGIN + 16 * 1024):
            assert put(writer, head(writer)["version"], big).status_code == 200
            deadline = time.monotonic() + 10
            while "file_behind" not in writer.get("/workspace/room").json() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert room.stop() == 0
            assert room.document.read_text() == TEXT
        assert "the room stops with the file behind: on disk v1, head v2" in log.read_text(), log.read_text()
    finally:
        room.stop()
    again = start_room(volume)
    try:
        assert room.document.read_text() == big
    finally:
        again.stop()
