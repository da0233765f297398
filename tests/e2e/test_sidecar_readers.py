"""The sidecar as the room found it: a reader (``ce versions``, ``ce sidecar size``) leaves a sidecar of an
older schema as it is and says the room upgrades it; ``ce sidecar compact`` upgrades it and says so; and
the room gives its WAL back once a long-lived reader goes away."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from commonroom.store.db import WAL_LIMIT
from commonroom.store.migrations import SCHEMA_VERSION
from tests.e2e.test_sidecar_ops import old_layout
from tests.roomproc import ROOT, ce, ce_command, start_room

#: The last commit whose sidecar schema is 9: a release older than this one, as a user may still run it.
SCHEMA_9_RELEASE = "e869764"


def schema_of(sidecar: Path) -> str:
    con = sqlite3.connect(sidecar)
    try:
        return con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    finally:
        con.close()


def test_readers_leave_an_older_sidecar_as_it_is_and_compact_upgrades_it(tmp_path: Path):
    doc, texts = old_layout(tmp_path)
    sidecar = tmp_path / "doc.md.commonroom.db"
    assert schema_of(sidecar) == "9"
    for command in (("versions", str(doc)), ("sidecar", "size", str(doc)), ("status", str(doc))):
        done = ce(*command)
        assert done.returncode != 0 and "invalid_request" in done.stderr, (command, done.stderr)
        assert "schema version 9, older than this commonroom's" in done.stderr
        assert "ce serve doc.md" in done.stderr and "ce sidecar compact doc.md" in done.stderr
        assert schema_of(sidecar) == "9", command
    invited = ce("invite", str(doc), "--participant", "ann", "--cap", "read")  # offline: not the room's writer
    assert invited.returncode != 0 and "left as it is" in invited.stderr and schema_of(sidecar) == "9"

    compact = ce("sidecar", "compact", str(doc), "--json")
    assert compact.returncode == 0, compact.stderr
    assert f"upgraded the sidecar from schema 9 to {SCHEMA_VERSION} first" in compact.stderr
    assert schema_of(sidecar) == str(SCHEMA_VERSION) and json.loads(compact.stdout)["vacuumed"] is True
    versions = ce("versions", str(doc), "--json")
    assert versions.returncode == 0 and json.loads(versions.stdout)["versions"][0]["number"] == len(texts)
    again = ce("sidecar", "compact", str(doc))  # current now: nothing to upgrade, nothing said
    assert again.returncode == 0 and "upgraded" not in again.stderr


def test_the_wal_is_given_back_after_a_long_lived_reader_goes_away(tmp_path: Path):
    room = start_room(tmp_path, text="# WAL\n\nline\n")
    wal = tmp_path / "doc.md.commonroom.db-wal"
    try:
        writer = room.join("w", "read,write")
        reader = sqlite3.connect(tmp_path / "doc.md.commonroom.db")
        reader.execute("BEGIN")
        reader.execute("SELECT COUNT(*) FROM version").fetchone()  # holds its snapshot: nothing after it is checkpointed
        head = 1
        while wal.stat().st_size <= 2 * WAL_LIMIT:
            noise = os.urandom(40_000).hex()  # that no compression shrinks
            body = {"expected_version": head, "text": f"{head} {noise}\n", "region": {"lines": [3, 3]}}
            done = writer.request("PUT", "/workspace/document", json=body)
            assert done.status_code == 200, done.text
            head += 1
            assert head < 200, "the WAL does not grow"
        time.sleep(6)  # a run of the room's WAL timer while the reader still holds it
        held = wal.stat().st_size
        assert held > 2 * WAL_LIMIT
        reader.rollback()
        reader.close()

        deadline = time.monotonic() + 20
        while wal.stat().st_size > 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert wal.stat().st_size == 0, (held, wal.stat().st_size)
        size = json.loads(ce("sidecar", "size", str(room.document), "--json").stdout)
        assert size["wal_bytes"] < WAL_LIMIT
        check = room.join("r", "read").get(f"/workspace/versions/{head}")
        assert check.status_code == 200 and f"\n{head - 1} " in check.json()["text"]
    finally:
        room.stop()


def older_release(folder: Path) -> Path:
    """The checkout of :data:`SCHEMA_9_RELEASE` in ``folder`` (from this clone's history), else a skip."""
    archive = folder / "older.tar"
    made = subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), SCHEMA_9_RELEASE],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"no git history here for the older release: {made.stderr.strip()}")
    with tarfile.open(archive) as tar:
        tar.extractall(folder / "older", filter="data")
    return folder / "older"


def test_this_ce_beside_a_running_room_of_an_older_release_changes_nothing(tmp_path: Path):
    env = {"PYTHONPATH": str(older_release(tmp_path))}
    room = start_room(tmp_path / "room", text="# Old\n\nline\n", env=env, command=ce_command(env))
    sidecar = room.document.with_name("doc.md.commonroom.db")
    try:
        assert schema_of(sidecar) == "9"
        for command in (("versions",), ("sidecar", "size"), ("status",), ("sidecar", "compact")):
            done = ce(*command, str(room.document))
            assert "Traceback" not in done.stderr, (command, done.stderr)
            assert schema_of(sidecar) == "9", command
        compact = ce("sidecar", "compact", str(room.document))  # the older room compacts: its answer is older too
        assert compact.returncode == 0 and compact.stdout.startswith("compacted: "), compact
    finally:
        assert room.stop() == 0
    again = start_room(tmp_path / "room", env=env, command=ce_command(env))  # the older release starts again
    again.stop()
    assert schema_of(sidecar) == "9"
