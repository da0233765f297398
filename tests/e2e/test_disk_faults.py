"""Disk faults under a running room (docs/hardening.md).

Each fault hits a real room process mid-work. The writer gets the
documented error (``storage_unavailable`` 503 with ``details.reason``;
a board completion the seed's ``completion_persistence_uncertain``), the
room's log says what happened, nothing is half-written (the head, the
event ring and the file are as before the refused write; ``PRAGMA
integrity_check`` is ok), and once the fault is gone the room serves again
and an exact retry of the refused calls succeeds exactly once.

- **full disk**: a 4 MiB tmpfs filled to the last byte (when this process
  may mount), and ``RLIMIT_FSIZE`` lowered on the room's worker with
  ``prlimit`` (always: no privilege needed);
- **read-only folder**: ``chattr +i`` on the folder and its files (root
  ignores permission bits, not the immutable flag); without root,
  ``chmod a-w`` on the folder, which the sidecar's open files do not
  notice: the document cannot follow the head until it is writable again;
- **sidecar or ``-wal`` deleted**: the room rescues what it holds into the
  sidecar's path, refuses the write, restarts its worker on the rescue and
  serves again with every acknowledged write;
- **the document replaced by a directory**: moved aside, the head written
  back (``document.external_edit_rejected``).
"""

from __future__ import annotations

import base64
import contextlib
import os
import random
import re
import resource
import sqlite3
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

import pytest

from commonroom.errors import EXIT_CODES
from tests.e2e.test_editing_cli import run
from tests.mcp_wire import Mcp
from tests.roomproc import Client, Room, plugin_env, start_room
from tests.writer_hold import HOLD, MARKER

TEXT = "# Plan\n\n## Design\n\nfirst\n"
ROOT = os.geteuid() == 0


def big_text(tag: str) -> str:
    """A document large enough that its commit must grow the sidecar (about 700 KB, and ~500 KB still
    once compressed: checkpoints are stored with zlib since schema 9, so its lines are random)."""
    rnd = random.Random(tag)
    return "# Plan\n\n" + "".join(f"{tag} line {i} " + base64.b64encode(rnd.randbytes(39)).decode() + "\n"
                                  for i in range(10_000))


def worker_pid(room: Room) -> int:
    """The pid of the room's one gunicorn worker (the process that writes)."""
    out = subprocess.run(["pgrep", "-P", str(room.proc.pid)], capture_output=True, text=True).stdout.split()
    assert len(out) == 1, out
    return int(out[0])


def can_mount(where: Path) -> bool:
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)], capture_output=True)
    return done.returncode == 0


def log_of(path: Path) -> str:
    return path.read_text(errors="replace")


def head(client: Client) -> dict[str, Any]:
    r = client.get("/workspace/document")
    assert r.status_code == 200, r.text
    return r.json()


def put(client: Client, expected: int, text: str) -> Any:
    return client.request("PUT", "/workspace/document", json={"expected_version": expected, "text": text})


def integrity(room: Room) -> str:
    con = sqlite3.connect(str(room.document.with_name(room.document.name + ".commonroom.db")))
    try:
        return con.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        con.close()


def eventually(call: Any, ok: Any, timeout: float = 20.0) -> Any:
    """``call()`` until ``ok(answer)`` or the deadline; the last answer."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            answer = call()
            if ok(answer) or time.monotonic() > deadline:
                return answer
        except Exception:  # the worker is restarting: the connection was refused
            if time.monotonic() > deadline:
                raise
        time.sleep(0.2)


class Todo:
    """A todo on the writer's board and a completion ready to send."""

    def __init__(self, client: Client):
        self.client = client
        board = client.session["id"]
        posted = client.post(f"/workspace/boards/{board}/messages", {"kind": "todo", "body": "check"})
        assert posted.status_code == 201, posted.text
        self.base = f"/workspace/boards/{board}/messages/{posted.json()['message_id']}"
        fence = client.get(self.base + "/assignment").json()["assignment_fence"]
        self.body = {"answer": "checked", "completion_key": "ck-disk", "expected_assignment_fence": fence}

    def complete(self) -> Any:
        return self.client.post(self.base + "/complete", self.body)

    def answers(self) -> int:
        board = self.client.session["id"]
        todo_id = self.base.rsplit("/", 1)[1]
        page = self.client.get(f"/workspace/boards/{board}/messages", params={"reply_to": todo_id}).json()
        return len(page["messages"])


# ------------------------------------------------------------- full disk


@contextlib.contextmanager
def full_tmpfs(volume: Path) -> Iterator[Any]:
    """A filler file takes every free byte of the tmpfs until the block exits."""
    filler = volume / "filler"
    with open(filler, "wb", buffering=0) as f:
        with contextlib.suppress(OSError):
            while True:
                f.write(b"\0" * 4096)
    try:
        yield None
    finally:
        filler.unlink()


@contextlib.contextmanager
def fsize_limit(room: Room) -> Iterator[Any]:
    """``RLIMIT_FSIZE`` of the worker just above its files' sizes until the block exits."""
    pid = worker_pid(room)
    sizes = [p.stat().st_size for p in room.document.parent.iterdir() if p.is_file()]
    previous = resource.prlimit(pid, resource.RLIMIT_FSIZE)
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (max(sizes) + 64 * 1024, previous[1]))
    try:
        yield None
    finally:
        resource.prlimit(pid, resource.RLIMIT_FSIZE, previous)


@pytest.fixture(params=["tmpfs", "fsize"])
def full_disk(request, tmp_path: Path):
    """``(room, log, fault, kind)``: a room and a context manager that fills its disk."""
    volume = tmp_path / "volume"
    mounted = False
    if request.param == "tmpfs":
        if not can_mount(volume):
            pytest.skip("mounting a tmpfs is not allowed here (the fsize variant runs instead)")
        mounted = True
    log = tmp_path / "serve.log"
    room = start_room(volume, text=TEXT, log_file=log)
    try:
        yield (room, log, (lambda: full_tmpfs(volume)) if mounted else (lambda: fsize_limit(room)), request.param)
    finally:
        room.stop()
        if mounted:
            subprocess.run(["umount", "-l", str(volume)], capture_output=True)


def test_a_full_disk_refuses_the_commit_and_the_room_serves_again(full_disk):
    room, log, fault, kind = full_disk
    writer = room.join("writer", "read,write,message")
    session_file = room.document.parent.parent / "ce-writer.json"
    joined = run("join", room.invite("ce-writer", "read,write"), "--session-file", str(session_file))
    assert joined[0] == 0, joined
    todo = Todo(writer)
    before = head(writer)
    events = writer.get("/workspace/history", params={"limit": 1}).json()
    with fault():
        refused = put(writer, before["version"], big_text("a"))
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"] == "storage_unavailable"
        # ENOSPC is SQLITE_FULL; past RLIMIT_FSIZE write() fails with EFBIG, which SQLite calls an I/O error
        assert refused.json()["details"]["reason"] in (("disk_full",) if kind == "tmpfs" else ("disk_full", "io_error"))
        assert head(writer) == before  # nothing half-written
        assert writer.get("/workspace/history", params={"limit": 1}).json() == events
        mcp = Mcp(room.ingress, writer.token)
        try:  # over MCP: the same error object, as an isError tool result
            tool = mcp.call_tool("document_write", {"expected_version": before["version"], "text": big_text("m")})
        finally:
            mcp.close()
        assert tool["isError"] is True and tool["structuredContent"]["error"] == "storage_unavailable"
        # through ce: its exit status and the code on stderr (the session joined before the fault)
        text_file = room.document.parent.parent / "ce-text.md"
        text_file.write_text(big_text("c"))
        code, _, err = run("write", "--expected", str(before["version"]), "--text-file", str(text_file),
                           "--session-file", str(session_file))
        assert code == EXIT_CODES["storage_unavailable"] and "storage_unavailable" in err, (code, err)
        uncertain = todo.complete()
        assert uncertain.status_code in (200, 503), uncertain.text  # small enough to fit, or not
        if uncertain.status_code == 503:
            assert uncertain.json()["error"] == "completion_persistence_uncertain"
            assert uncertain.json()["details"]["recovery_kind"] == "retry_same"
            assert todo.answers() == 0
    assert "a commit failed (" in log_of(log) and "nothing of it was written" in log_of(log)
    assert room.document.read_text() == before["text"]
    done = put(writer, before["version"], big_text("a"))  # the same write, once the fault is gone
    assert done.status_code == 200, done.text
    assert done.json()["number"] == before["version"] + 1
    first, again = todo.complete(), todo.complete()
    assert first.status_code == again.status_code == 200, (first.text, again.text)
    assert first.json()["answer"] == again.json()["answer"] and todo.answers() == 1
    assert room.wait_for_file(big_text("a").encode()) == big_text("a").encode()
    assert room.stop() == 0 and integrity(room) == "ok"


def test_a_completion_in_a_group_commit_the_disk_refuses_is_uncertain(tmp_path: Path):
    """The writer is held while a big write and a completion queue; their one commit meets a full disk."""
    log = tmp_path / "serve.log"
    room = start_room(tmp_path / "room", text=TEXT, log_file=log, env=plugin_env("tests.writer_hold:register"))
    try:
        writer = room.join("writer", "read,write,message")
        todo, other = Todo(writer), Todo(writer)
        other.body["expected_assignment_fence"] = "af1." + "0" * 64  # well-formed, not this todo's
        before = head(writer)
        board = writer.session["id"]
        with ThreadPoolExecutor(4) as pool:
            held = pool.submit(writer.post, f"/workspace/boards/{board}/messages", {"kind": "note", "body": MARKER})
            time.sleep(HOLD / 4)  # the writer holds now; what follows queues behind it: one group commit
            with fsize_limit(room):
                big = pool.submit(put, writer, before["version"], big_text("g"))
                time.sleep(0.1)
                completion, wrong = pool.submit(todo.complete), pool.submit(other.complete)
                refused, uncertain, stale = big.result(), completion.result(), wrong.result()
            assert held.result().status_code == 201, held.text
        assert re.search(r"a group commit of \d+ writes failed", log_of(log))  # together, not one by one
        assert refused.status_code == 503 and refused.json()["error"] == "storage_unavailable", refused.text
        assert uncertain.status_code == 503, uncertain.text
        assert uncertain.json()["error"] == "completion_persistence_uncertain"
        details = uncertain.json()["details"]
        assert (details["failure_kind"], details["retry_same_completion"], details["recovery_kind"]) == (
            "outcome_unknown", True, "retry_same")
        # a write of the batch that failed on its own (nothing of it to lose) keeps its own answer
        assert stale.status_code == 409 and stale.json()["error"] == "assignment_stale", stale.text
        assert head(writer) == before and todo.answers() == 0  # nothing of the batch was written
        first, again = todo.complete(), todo.complete()  # the exact retry, once the disk has room
        assert first.status_code == again.status_code == 200, (first.text, again.text)
        assert again.json()["replayed"] is True and todo.answers() == 1
        assert room.stop() == 0 and integrity(room) == "ok"
    finally:
        room.stop()


# --------------------------------------------------- a room in a folder


@pytest.fixture
def served(tmp_path: Path):
    """``(room, log, writer)``: a room in ``tmp_path/room`` logging to ``tmp_path/serve.log``."""
    log = tmp_path / "serve.log"
    room = start_room(tmp_path / "room", text=TEXT, log_file=log)
    try:
        yield room, log, room.join("writer", "read,write")
    finally:
        room.stop()


# ------------------------------------------------------- read-only folder


def _read_only(folder: Path, on: bool) -> None:
    paths = [folder, *(p for p in folder.iterdir() if p.is_file())]
    if ROOT:
        subprocess.run(["chattr", "+i" if on else "-i", *map(str, paths)], check=True, capture_output=True)
    else:
        folder.chmod(0o555 if on else 0o755)


def test_a_read_only_folder_refuses_or_delays_and_the_room_serves_again(served):
    room, log, writer = served
    folder = room.document.parent
    try:
        before = head(writer)
        _read_only(folder, True)
        try:
            answer = put(writer, before["version"], TEXT + "ro\n")
            if ROOT:  # the sidecar's own files refuse the write
                assert answer.status_code == 503, answer.text
                assert answer.json()["error"] == "storage_unavailable"
                assert answer.json()["details"]["reason"] in ("read_only", "io_error")
                assert head(writer) == before
                assert "a commit failed" in log_of(log)
            else:  # durable in the sidecar; the document cannot follow yet
                assert answer.status_code == 200, answer.text
            assert room.document.read_text() == before["text"]
        finally:
            _read_only(folder, False)
        done = eventually(lambda: put(writer, head(writer)["version"], TEXT + "rw\n"), lambda r: r.status_code == 200)
        assert done.status_code == 200, done.text
        assert room.wait_for_file((TEXT + "rw\n").encode()) == (TEXT + "rw\n").encode()
        assert room.stop() == 0 and integrity(room) == "ok"
    finally:
        if ROOT:
            subprocess.run(["chattr", "-R", "-i", str(folder)], capture_output=True)


# --------------------------------------------- sidecar or WAL deleted


@pytest.mark.parametrize("victim", ["-wal", ""])
def test_a_deleted_sidecar_file_is_rescued_and_nothing_acknowledged_is_lost(served, victim: str):
    room, log, writer = served
    acknowledged = []
    for i in range(3):
        r = put(writer, head(writer)["version"], TEXT + f"ack {i}\n")
        assert r.status_code == 200, r.text
        acknowledged.append(r.json()["number"])
    sidecar = room.document.with_name(room.document.name + ".commonroom.db" + victim)
    sidecar.unlink()
    refused = put(writer, acknowledged[-1], TEXT + "after\n")
    if refused.status_code != 200:  # a room timer may have met the fault first: then it restarted already
        assert refused.status_code == 503, refused.text
        assert refused.json()["details"] == {"reason": "sidecar_replaced"}
    assert "deleted or replaced under the running room; rescued every committed write" in log_of(log)
    done = eventually(lambda: put(writer, head(writer)["version"], TEXT + "served again\n"),
                      lambda r: r.status_code == 200)
    assert done.status_code == 200, done.text
    versions = [v["number"] for v in writer.get("/workspace/versions", params={"limit": 200}).json()["versions"]]
    assert sorted(versions) == sorted(set(versions)) and set(acknowledged) <= set(versions)
    assert done.json()["number"] == max(versions)
    assert room.wait_for_file((TEXT + "served again\n").encode()) == (TEXT + "served again\n").encode()
    assert room.stop() == 0 and integrity(room) == "ok"
    reopened = start_room(room.document.parent, log_file=log)  # and a plain restart still has everything
    try:
        again = reopened.join("again", "read")
        assert head(again)["version"] == done.json()["number"]
    finally:
        reopened.stop()


@pytest.mark.parametrize("victim", ["-wal", ""])
def test_a_room_stopped_after_its_sidecar_was_deleted_keeps_every_write(served, victim: str):
    """No write comes after the deletion: the room rescues the sidecar as it stops."""
    room, log, writer = served
    done = put(writer, head(writer)["version"], TEXT + "kept\n")
    assert done.status_code == 200, done.text
    room.document.with_name(room.document.name + ".commonroom.db" + victim).unlink()
    assert room.stop() == 0 and integrity(room) == "ok"
    assert "rescued every committed write" in log_of(log)
    reopened = start_room(room.document.parent, log_file=log)
    try:
        assert head(reopened.join("again", "read"))["version"] == done.json()["number"]
    finally:
        reopened.stop()


# ----------------------------------------- document replaced by a directory


def test_a_directory_in_place_of_the_document_is_moved_aside(served):
    room, log, writer = served
    folder = room.document.parent
    before = head(writer)
    room.document.unlink()
    room.document.mkdir()
    (room.document / "inside.txt").write_text("keep me")
    done = put(writer, before["version"], TEXT + "after the swap\n")
    assert done.status_code == 200, done.text  # the sidecar is the truth: the write is durable
    expected = (TEXT + "after the swap\n").encode()
    assert room.wait_for_file(expected) == expected
    aside = [p for p in folder.iterdir() if p.name.startswith("doc.md.rejected-")]
    assert len(aside) == 1 and (aside[0] / "inside.txt").read_text() == "keep me"
    assert "was not a readable file (Is a directory)" in log_of(log)
    history = writer.get("/workspace/history", params={"limit": 200}).json()["events"]
    assert "document.external_edit_rejected" in {e["type"] for e in history}
    assert room.stop() == 0 and integrity(room) == "ok"
