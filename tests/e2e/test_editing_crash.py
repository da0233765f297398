"""Crashes and the file on disk.

- SIGKILL the whole room (arbiter and worker) in the middle of a stream of
  commits, twenty times over: after each restart the file equals the head,
  ``PRAGMA integrity_check`` is ok, and every version acknowledged to the
  client (a 2xx carrying its number) is there with the content it sent.
- An edit made to the file while the room is stopped becomes a version by
  the operator (``source: external``) with a ``document.external_edit``
  event on the next start.
- A crash between the commit and the rename (the file is one version
  behind) is repaired from the sidecar, making no new version.
- An edit made while the room runs is recorded before the next commit:
  never overwritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from commonroom import conventions, regions
from commonroom.engine import Engine
from commonroom.schemas import errors_of
from tests.conftest import SAMPLE
from tests.roomproc import Client, Room, start_room

KILLS = 20
ALL = "read,propose,approve,lease,write"


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def sidecar(room: Room) -> Path:
    return room.document.with_name(room.document.name + ".commonroom.db")


def kill(room: Room) -> None:
    """SIGKILL the room's whole process group: the arbiter and its worker at once."""
    try:
        os.killpg(room.proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    room.proc.wait(10)


def restart(room: Room) -> Room:
    """Serve the same document again (the stale state file of a killed room is removed first)."""
    room.document.with_name(room.document.name + ".commonroom.json").unlink(missing_ok=True)
    return start_room(room.document.parent, name=room.document.name)


def integrity(room: Room) -> str:
    con = sqlite3.connect(sidecar(room))
    try:
        return con.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        con.close()


def events(room: Room) -> list[tuple[str, dict[str, Any]]]:
    con = sqlite3.connect(f"file:{sidecar(room)}?mode=ro", uri=True)
    try:
        return [(t, json.loads(p)) for t, p in con.execute("SELECT type, payload FROM event ORDER BY id")]
    finally:
        con.close()


def versions(client) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = client.get("/workspace/versions", params={"limit": 200, **({"cursor": cursor} if cursor else {})})
        assert page.status_code == 200, page.text
        out += page.json()["versions"]
        cursor = page.json()["next_cursor"]
        if cursor is None:
            return out


class Stream(threading.Thread):
    """One writer committing as fast as it can: direct writes and proposals+approvals in turn.

    The only writer, so it knows every resulting text. ``acked`` maps each
    version number a 2xx told it about to the text that version must hold.
    """

    def __init__(self, room: Room, token: str, head: int, text: str, serial: int):
        super().__init__(daemon=True)
        self.http = httpx.Client(base_url=room.ingress, headers={"Authorization": f"Bearer {token}"}, timeout=10)
        self.head, self.text, self.serial = head, text, serial
        self.acked: dict[int, str] = {}
        self.started = threading.Event()
        self.unexpected: list[str] = []

    def run(self) -> None:
        self.started.set()
        try:
            while True:
                self.serial += 1
                if self.serial % 2:
                    new = self.text + f"write {self.serial}\n"
                    r = self.http.put("/workspace/document", json={"expected_version": self.head, "text": new,
                                                                  "summary": f"w{self.serial}"})
                    self._check(r, 200, "editing#VersionInfo")
                    number = r.json()["number"]
                else:
                    n = len(regions.lines_of(self.text))
                    region = {"lines": [n + 1, n]}  # append
                    r = self.http.post("/workspace/proposals", json={
                        "base_version": self.head, "region": region, "text": f"proposal {self.serial}\n",
                        "summary": f"p{self.serial}"})
                    self._check(r, 201, "editing#Proposal")
                    new = conventions.replace_span(self.text, regions.resolve(self.text, region), f"proposal {self.serial}\n")
                    r = self.http.post(f"/workspace/proposals/{r.json()['id']}/approve")
                    self._check(r, 200, "editing#ApproveResult")
                    number = r.json()["version"]["number"]
                if number != self.head + 1:
                    self.unexpected.append(f"version {number} after {self.head}")
                    return
                self.acked[number] = new
                self.head, self.text = number, new
        except (httpx.HTTPError, _Unexpected):
            pass  # the room died under us
        finally:
            self.http.close()

    def _check(self, r: httpx.Response, status: int, schema: str) -> None:
        try:
            body = r.json()
        except ValueError:
            body = None
        if r.status_code != status or body is None or errors_of(schema, body):
            self.unexpected.append(r.text)
            raise _Unexpected(r.text)


class _Unexpected(Exception):
    pass


def test_sigkill_in_the_middle_of_commits(tmp_path, monkeypatch):
    monkeypatch.setenv("COMMONROOM_RATE_LIMIT", "100000")
    rng = random.Random(int(os.environ.get("COMMONROOM_CRASH_SEED", "3")))
    room = start_room(tmp_path, SAMPLE)
    writer = room.join("writer", ALL)
    acked: dict[int, str] = {1: SAMPLE.read_text("utf-8")}
    head, text, serial = 1, acked[1], 0
    repaired_or_clean = 0
    try:
        for _ in range(KILLS):
            stream = Stream(room, writer.token, head, text, serial)
            stream.start()
            stream.started.wait(5)
            time.sleep(rng.uniform(0.05, 0.3))
            kill(room)
            stream.join(15)
            assert not stream.is_alive()
            assert stream.unexpected == []
            acked.update(stream.acked)
            serial = stream.serial

            assert integrity(room) == "ok"
            room = restart(room)
            op = room.operator()
            doc = op.get("/workspace/document").json()
            # The file is the head; the head is at least the last acknowledged version.
            assert room.document.read_bytes().decode("utf-8") == doc["text"]
            assert doc["content_hash"] == sha(doc["text"])
            assert doc["version"] >= max(acked)
            infos = versions(op)
            assert [v["number"] for v in infos] == list(range(doc["version"], 0, -1))
            assert all(v["source"] != "external" for v in infos)  # a torn rename is repaired, not "edited"
            if doc["version"] > max(acked):
                # Committed but never acknowledged (killed before the answer): it is the next commit.
                assert doc["version"] == max(acked) + 1
                repaired_or_clean += 1
            # Every acknowledged version is there with the content sent (by hash here; the texts
            # themselves are read back at the end).
            hashes = {v["number"]: v["content_hash"] for v in infos}
            for number in stream.acked:
                assert hashes[number] == sha(acked[number]), number
            # Carry on from the head the room has now.
            head, text = doc["version"], doc["text"]
            acked[head] = text
    finally:
        room.stop()
    assert len(acked) > KILLS, "the stream should commit something before most kills"
    # Every acknowledged version, read back by a fresh engine (no caches, deltas replayed).
    engine = Engine.open(room.document, readonly=True)
    try:
        for number, want in acked.items():
            assert engine.version_text(number) == want, number
    finally:
        engine.close()


def _write(client, expected: int, text: str, summary: str = "") -> dict[str, Any]:
    r = client.request("PUT", "/workspace/document", json={"expected_version": expected, "text": text,
                                                           "summary": summary})
    assert r.status_code == 200, r.text
    return r.json()


def test_edit_while_stopped_becomes_an_external_version(tmp_path):
    room = start_room(tmp_path, SAMPLE)
    bob = room.join("bob", ALL)
    v2 = _write(bob, 1, SAMPLE.read_text("utf-8") + "\nby bob\n")
    room.stop()
    outside = room.document.read_text("utf-8").replace("Release plan", "Release plan (edited in vim)")
    room.document.write_text(outside, "utf-8")

    room = restart(room)
    try:
        op = room.operator()
        doc = op.get("/workspace/document").json()
        assert doc["version"] == v2["number"] + 1 and doc["text"] == outside
        v3 = op.get(f"/workspace/versions/{doc['version']}").json()
        assert errors_of("editing#VersionInfo", v3) == []
        assert v3["source"] == "external" and v3["author"] is None and v3["session_id"] is None
        assert v3["text"] == outside and v3["content_hash"] == sha(outside)
        assert room.document.read_text("utf-8") == outside
        external = [p for t, p in events(room) if t == "document.external_edit"]
        assert len(external) == 1
        assert external[0]["version"] == 3 and external[0]["content_hash"] == sha(outside)
        # The old session still works and sees the outside edit as the head.
        bob = Client(room, bob.token, bob.session)
        r = bob.request("PUT", "/workspace/document", json={"expected_version": 2, "text": "x\n"})
        assert r.status_code == 409 and r.json()["current_version"] == 3
    finally:
        room.stop()


def test_crash_between_commit_and_rename_is_repaired(tmp_path):
    room = start_room(tmp_path, SAMPLE)
    v1 = SAMPLE.read_text("utf-8")
    bob = room.join("bob", ALL)
    v2_text = v1.replace("## Goals", "## Goals (repaired)")
    _write(bob, 1, v2_text)
    kill(room)
    # The sidecar has version 2 but the rename never happened: the file still holds version 1.
    room.document.write_text(v1, "utf-8")

    room = restart(room)
    try:
        op = room.operator()
        doc = op.get("/workspace/document").json()
        assert doc["version"] == 2 and doc["text"] == v2_text
        assert room.document.read_text("utf-8") == v2_text
        assert [v["number"] for v in versions(op)] == [2, 1]
        assert not [t for t, _ in events(room) if t == "document.external_edit"]
    finally:
        room.stop()


def test_missing_file_is_restored_from_the_sidecar(tmp_path):
    # ``ce serve`` refuses a missing file, so this is the engine's start-up path directly.
    room = start_room(tmp_path, SAMPLE)
    bob = room.join("bob", ALL)
    text = SAMPLE.read_text("utf-8") + "tail\n"
    _write(bob, 1, text)
    room.stop()
    room.document.unlink()
    engine = Engine.open(room.document)
    try:
        assert engine.head().number == 2
        assert room.document.read_text("utf-8") == text
    finally:
        engine.close()


def test_edit_while_running_is_recorded_before_the_next_commit(tmp_path):
    room = start_room(tmp_path, SAMPLE)
    try:
        bob = room.join("bob", ALL)
        v1 = SAMPLE.read_text("utf-8")
        _write(bob, 1, v1 + "\nby bob\n", "bob")
        # Someone edits the file in an editor while the room runs.
        time.sleep(0.02)
        outside = room.document.read_text("utf-8").replace("## Design", "## Design (outside)")
        room.document.write_text(outside, "utf-8")

        # A direct write at version 2 is refused: the outside edit became version 3 first.
        r = bob.request("PUT", "/workspace/document", json={"expected_version": 2, "text": "clobber\n"})
        assert r.status_code == 409, r.text
        body = r.json()
        assert body["error"] == "stale_version" and body["current_version"] == 3
        assert "+## Design (outside)\n" in body["diff"]
        v3 = bob.get("/workspace/versions/3").json()
        assert v3["source"] == "external" and v3["text"] == outside
        assert room.wait_for_file(outside.encode("utf-8")) == outside.encode("utf-8")

        # Another outside edit, then a proposal on an older base over a disjoint region: it rebases
        # onto the outside edit, and both survive the approval.
        time.sleep(0.02)
        outside2 = outside.replace("## Open questions", "## Open questions (outside)")
        room.document.write_text(outside2, "utf-8")
        r = bob.post("/workspace/proposals", {"base_version": 3, "region": {"heading": ["Goals"]},
                                              "text": "## Goals\n\n- from a proposal\n\n", "summary": "goals"})
        assert r.status_code == 201, r.text
        p = r.json()
        assert p["base_version"] == 4 and p["rebased_from"] == 3
        r = bob.post(f"/workspace/proposals/{p['id']}/approve")
        assert r.status_code == 200, r.text
        head = bob.get("/workspace/document").json()
        assert head["version"] == 5
        for piece in ("## Design (outside)", "## Open questions (outside)", "- from a proposal", "by bob"):
            assert piece in head["text"], piece
        assert room.wait_for_file(head["text"].encode("utf-8")) == head["text"].encode("utf-8")
        kinds = [p["version"] for t, p in events(room) if t == "document.external_edit"]
        assert kinds == [3, 4]

        # An outside edit right before an approval is not overwritten either.
        r = bob.post("/workspace/proposals", {"base_version": 5, "region": {"heading": ["Goals"]},
                                              "text": "## Goals\n\n- again\n\n", "summary": "again"})
        assert r.status_code == 201, r.text
        time.sleep(0.02)
        outside3 = head["text"] + "\nappended outside\n"
        room.document.write_text(outside3, "utf-8")
        r = bob.post(f"/workspace/proposals/{r.json()['id']}/approve")
        assert r.status_code == 200, r.text
        final = bob.get("/workspace/document").json()
        assert final["version"] == 7 and "appended outside" in final["text"] and "- again" in final["text"]
        assert bob.get("/workspace/versions/6").json()["source"] == "external"
    finally:
        room.stop()
