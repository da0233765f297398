"""``ce sidecar size`` and ``ce sidecar compact``: with the room running (compaction through
the owner port, on the room's one writer) and with it stopped (offline, under the writer lock); every
version reads back over HTTP the same afterwards."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from tests.engine.test_long_history import TEXT, make_old_layout, random_history
from tests.fakeclock import open_engine
from tests.roomproc import ce, start_room


def old_layout(folder: Path) -> tuple[Path, dict[int, str]]:
    """A document whose sidecar is as schemas 8 and 9 wrote it (a text checkpoint every 8 versions)."""
    engine = open_engine(folder, TEXT)
    texts = random_history(engine, 160, seed=11)
    make_old_layout(engine, texts, every=8)
    return folder / "doc.md", texts


def sidecar(*args: str) -> dict:
    done = ce("sidecar", *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_size_and_compact_with_the_room_running_then_stopped(tmp_path):
    doc, texts = old_layout(tmp_path)
    room = start_room(tmp_path, name=doc.name)
    try:
        report = sidecar("size", str(doc))
        assert report["versions"] == len(texts) and report["text_checkpoints"] == report["checkpoints"] >= 20
        assert set(report["parts"]) == {"versions", "checkpoints", "events", "boards", "other"}
        people = ce("sidecar", "size", str(doc))
        assert people.returncode == 0 and "checkpoints" in people.stdout and "versions" in people.stdout
        assert httpx.get(room.owner + "/owner/sidecar", timeout=10).status_code == 401  # the owner token only
        assert room.operator().get("/owner/sidecar").json()["versions"] == len(texts)

        done = sidecar("compact", str(doc))  # through the owner port: the room holds the writer lock
        assert done["repacked"] > 0 and done["vacuumed"] and done["after"]["text_checkpoints"] == 0
        assert done["after"]["parts"]["checkpoints"] < done["before"]["parts"]["checkpoints"]
        reader = room.join("reader", "read")
        for n, text in texts.items():
            answer = reader.get(f"/workspace/versions/{n}")
            assert answer.status_code == 200 and answer.json()["text"] == text, n
        writer = room.join("writer", "read,write")
        head = len(texts)
        wrote = writer.request("PUT", "/workspace/document",
                               json={"expected_version": head, "text": "after compaction\n", "region": {"lines": [1, 1]}})
        assert wrote.status_code == 200, wrote.text
        texts[head + 1] = reader.get(f"/workspace/versions/{head + 1}").json()["text"]
        assert texts[head + 1].startswith("after compaction\n")
    finally:
        room.stop()
    again = sidecar("compact", str(doc))  # offline, under the writer lock
    assert again["repacked"] == 0 and again["after"]["versions"] == len(texts)
    room = start_room(tmp_path, name=doc.name)
    try:
        reader = room.join("reader2", "read")
        for n in list(texts)[::9] + [len(texts)]:
            assert reader.get(f"/workspace/versions/{n}").json()["text"] == texts[n], n
    finally:
        room.stop()
