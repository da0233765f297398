"""Edits made to the file by hand, in a real room: noticed at once, recorded as their real hunks.

- An edit made in an editor becomes an ``external`` version within about a
  second, with no commit needed: ``ce versions`` and ``ce read`` show it.
- A deleted file, or one truncated to nothing, is written back from the
  head, and the ``document.external_edit_rejected`` event says so.
- The room's own writes are never taken for hand edits.
- Two hand edits far apart (lines 1 and 129 of a long document) move the
  leases between them by the lines inserted, never make them grow to
  cover the text between, and an approval in an untouched, unleased
  section is not refused.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.roomproc import Client, Room, ce, start_room

#: The room notices within a second; the tests allow more on a loaded machine.
NOTICED = 5.0
ALL = "read,propose,approve,lease,write"


def _long_document() -> str:
    out = []
    for section in range(1, 11):
        out.append(f"## Section {section}\n")
        out.append("\n")
        out += [f"Text {section}.{i} of the plan.\n" for i in range(1, 11)]
        out.append("\n")
        out += ["- a point\n", "- another\n", "\n"]
    return "# Design\n\n" + "".join(out)  # 162 lines


TEXT = _long_document()


@pytest.fixture(scope="module")
def hand_room(tmp_path_factory):
    room = start_room(tmp_path_factory.mktemp("hand"), text=TEXT)
    yield room
    room.stop()


@pytest.fixture(scope="module")
def people(hand_room: Room) -> dict[str, Client]:
    return {name: hand_room.join(name, ALL) for name in ("ann", "ben", "cal")}


def _history(room: Room) -> list[dict[str, Any]]:
    out, cursor = [], None
    while True:
        page = room.operator().get("/workspace/history", params={"limit": 200, **({"cursor": cursor} if cursor else {})})
        assert page.status_code == 200, page.text
        out += page.json()["events"]
        cursor = page.json().get("next_cursor")
        if not cursor or not page.json()["events"]:
            return out


def _head(client: Client) -> dict[str, Any]:
    return client.get("/workspace/versions", params={"limit": 1}).json()["versions"][0]


def _until(check, timeout: float = NOTICED):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.02)


def _room_writes(client: Client, head: int, texts: list[str]) -> None:
    """The room writes each of ``texts`` over line 3 in turn (``PUT /workspace/document``), from version ``head``."""
    for i, text in enumerate(texts):
        r = client.request("PUT", "/workspace/document",
                           json={"expected_version": head + i, "text": text, "region": {"lines": [3, 3]}})
        assert r.status_code == 200, r.text


def _edit_in_place(path: Path, text: str) -> None:
    """As an editor that saves in place does: truncate, then write."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def test_a_hand_edit_becomes_a_version_with_no_commit(hand_room, people):
    ann = people["ann"]
    before = _head(ann)
    text = ann.get("/workspace/document").json()["text"]
    edited = text.replace("Text 3.4 of the plan.", "Text 3.4, edited by hand.")
    started = time.monotonic()
    _edit_in_place(hand_room.document, edited)
    head = _until(lambda: (h := _head(ann))["number"] > before["number"] and h)
    took = time.monotonic() - started
    assert head and head["source"] == "external", head
    assert ann.get("/workspace/document").json()["text"] == edited
    event = [e for e in _history(hand_room) if e["type"] == "document.external_edit"][-1]
    line = edited.splitlines().index("Text 3.4, edited by hand.") + 1
    assert event["payload"]["version"] == head["number"] and event["payload"]["hunks"] == [[line, line]]
    listed = ce("versions", str(hand_room.document), "--json")
    assert json.loads(listed.stdout)["versions"][0]["source"] == "external"
    print(f"noticed in {took:.2f} s")


@pytest.mark.parametrize("how", ["missing", "empty"])
def test_a_deleted_or_emptied_file_is_written_back(hand_room, people, how):
    ann = people["ann"]
    head = _head(ann)
    text = ann.get("/workspace/document").json()["text"]
    if how == "missing":
        hand_room.document.unlink()
    else:
        hand_room.document.write_bytes(b"")
    assert hand_room.wait_for_file(text.encode("utf-8"), NOTICED) == text.encode("utf-8")
    assert _head(ann)["number"] == head["number"]  # no version: the head is what the file holds again
    event = _until(lambda: [e for e in _history(hand_room) if e["type"] == "document.external_edit_rejected"
                            and e["payload"]["reason"] == how])
    assert event and event[-1]["payload"]["written_back"] is True
    assert event[-1]["payload"]["head_version"] == head["number"]


def test_a_slow_save_in_place_is_not_written_over(hand_room, people):
    """An editor that truncates the file and writes its text a moment later (a slow disk, a large
    file) keeps the file open for writing meanwhile: the room waits for it rather than writing
    the head back over the empty file, which would leave the editor writing into a file that is
    no longer there and lose the edit."""
    ann = people["ann"]
    before = _head(ann)
    text = ann.get("/workspace/document").json()["text"]
    edited = text.replace("Text 4.2 of the plan.", "Text 4.2, saved slowly.")
    with open(hand_room.document, "r+", encoding="utf-8") as f:
        f.truncate(0)
        f.flush()
        time.sleep(1.5)  # several looks of the room's file watch with the file empty and open
        f.write(edited)
    head = _until(lambda: (h := _head(ann))["number"] > before["number"] and h)
    assert head and head["source"] == "external", head
    assert ann.get("/workspace/document").json()["text"] == edited
    assert hand_room.document.read_text(encoding="utf-8") == edited


def test_hand_edits_racing_the_rooms_writes_are_never_written_over(tmp_path):
    """An editor saving every 10 ms while a participant writes through the room as fast as it
    can: the file and the head end equal, holding the editor's last save (the room's write of
    a version never replaces a save made while it was being written, nor is a save made while
    an outside edit was being recorded taken for the room's own)."""
    import threading

    room = start_room(tmp_path, text=TEXT * 2)
    try:
        ben = room.join("ben", ALL)
        stop = threading.Event()

        def write_through_the_room() -> None:
            i = 0
            while not stop.is_set():
                r = ben.request("PUT", "/workspace/document", json={
                    "expected_version": _head(ben)["number"], "text": f"Room write {i}.\n", "region": {"lines": [5, 5]}})
                assert r.status_code in (200, 409), r.text
                i += 1

        writer = threading.Thread(target=write_through_the_room)
        writer.start()
        path, saves = room.document, 200
        editor = (  # an editor in a process of its own, saving as one that renames its new file over the old
            "import os, sys, time\n"
            "path, tmp = sys.argv[1], sys.argv[1] + '.editor-tmp'\n"
            f"for k in range({saves}):\n"
            "    lines = open(path, encoding='utf-8').readlines()\n"
            "    lines[-1] = f'Saved by hand {k}.\\n'\n"
            "    open(tmp, 'w', encoding='utf-8').writelines(lines)\n"
            "    os.rename(tmp, path)\n"
            "    time.sleep(0.01)\n")
        try:
            subprocess.run([sys.executable, "-c", editor, str(path)], check=True, timeout=120)
        finally:
            stop.set()
            writer.join()
        last = f"Saved by hand {saves - 1}."
        settled = _until(lambda: ben.get("/workspace/document").json()["text"] == path.read_text(encoding="utf-8"))
        assert path.read_text(encoding="utf-8").splitlines()[-1] == last
        assert settled
    finally:
        room.stop()


def test_a_lease_whose_lines_were_deleted_by_hand_is_shown_as_an_insertion_point(hand_room, people):
    cal = people["cal"]
    lease = cal.post("/workspace/leases", {"region": {"lines": [150, 152]}, "ttl_seconds": 120}).json()
    try:
        lines = cal.get("/workspace/document").json()["text"].splitlines(keepends=True)
        del lines[149:152]
        hand_room.document.with_name(".edited").write_text("".join(lines), encoding="utf-8")
        hand_room.document.with_name(".edited").rename(hand_room.document)

        def moved() -> Any:
            mine = [x for x in cal.get("/workspace/leases", params={"limit": 200}).json()["leases"] if x["id"] == lease["id"]]
            return mine and mine[0]["lines"] == [150, 149] and mine[0]

        assert _until(moved)
        listed = ce("lease", "list", str(hand_room.document)).stdout
        row = next(line for line in listed.splitlines() if line.startswith(lease["id"][:8]))
        assert "before line 150" in row and "150–149" not in row, listed
    finally:
        cal.request("DELETE", f"/workspace/leases/{lease['id']}")


def test_a_search_and_replace_over_every_line_keeps_the_leases_on_their_lines(hand_room, people):
    """Every line changed one for one (a search-and-replace, line endings turned to CRLF): one hunk
    over the whole document, yet each lease keeps its own lines rather than growing to all of them."""
    cal = people["cal"]
    lease = cal.post("/workspace/leases", {"region": {"lines": [40, 50]}, "ttl_seconds": 120}).json()
    try:
        before = _head(cal)["number"]
        text = cal.get("/workspace/document").json()["text"]
        _edit_in_place(hand_room.document, text.replace("\n", "\r\n"))
        assert _until(lambda: _head(cal)["number"] > before)
        mine = [x for x in cal.get("/workspace/leases", params={"limit": 200}).json()["leases"] if x["id"] == lease["id"]]
        assert mine and mine[0]["lines"] == [40, 50], mine
        _edit_in_place(hand_room.document, text)  # LF again, for the module's other tests
        assert _until(lambda: cal.get("/workspace/document").json()["text"] == text)
    finally:
        cal.request("DELETE", f"/workspace/leases/{lease['id']}")


def test_an_undo_to_an_earlier_versions_text_is_a_hand_edit(hand_room, people):
    """Saving the text of a version the room wrote before (an editor's undo, a stale buffer saved)
    is an edit like any other: recorded, never taken for the room's own write and written over."""
    ben = people["ben"]
    start = _head(ben)["number"]
    _room_writes(ben, start, ["Changed by the room 0.\n"])
    earlier = ben.get("/workspace/document").json()["text"]
    _room_writes(ben, start + 1, ["Changed by the room 1.\n"])
    assert hand_room.wait_for_file(ben.get("/workspace/document").json()["text"].encode(), NOTICED)
    _edit_in_place(hand_room.document, earlier)
    head = _until(lambda: (h := _head(ben))["number"] > start + 2 and h)
    assert head and head["source"] == "external", head
    assert ben.get("/workspace/document").json()["text"] == earlier


def test_the_rooms_own_writes_are_not_hand_edits(hand_room, people):
    ben = people["ben"]
    start = _head(ben)["number"]
    _room_writes(ben, start, [f"Own write {i}.\n" for i in range(15)])
    time.sleep(1.0)  # several looks of the room's file watch
    versions = ben.get("/workspace/versions", params={"limit": 50}).json()["versions"]
    assert [v["source"] for v in versions if v["number"] > start] == ["write"] * 15


def test_two_hand_edits_far_apart_move_leases_and_grow_none(tmp_path):
    room = start_room(tmp_path, text=TEXT)
    try:
        ann, ben, cal = (room.join(name, ALL) for name in ("ann", "ben", "cal"))
        first = ann.post("/workspace/leases", {"region": {"lines": [14, 24]}}).json()
        second = ben.post("/workspace/leases", {"region": {"lines": [36, 46]}}).json()
        lines = TEXT.splitlines(keepends=True)
        lines[0] = "# Design, retitled\n"  # line 1 changed
        lines[128:128] = ["An added line.\n", "And another.\n"]  # two inserted before line 129
        _edit_in_place(room.document, "".join(lines))
        head = _until(lambda: (h := _head(cal))["source"] == "external" and h)
        assert head, "the hand edit was not noticed"
        leases = {item["id"]: item["lines"] for item in cal.get("/workspace/leases").json()["leases"]}
        assert leases == {first["id"]: [14, 24], second["id"]: [36, 46]}  # neither grew, nothing above moved
        event = [e for e in _history(room) if e["type"] == "document.external_edit"][-1]
        assert event["payload"]["hunks"] == [[1, 1], [129, 130]]
        # an approval in an untouched, unleased section between the edits
        proposal = cal.post("/workspace/proposals", {"base_version": head["number"], "region": {"lines": [60, 61]},
                                                     "text": "Changed by cal.\n"}).json()
        approved = cal.post(f"/workspace/proposals/{proposal['id']}/approve")
        assert approved.status_code == 200, approved.text
        # an edit above the leases moves them by the lines it inserts, as a commit does
        now = cal.get("/workspace/document").json()["text"]
        assert room.wait_for_file(now.encode("utf-8")) == now.encode("utf-8")  # the file has followed the approval
        lines = now.splitlines(keepends=True)
        lines[2:2] = ["Inserted above.\n"]
        _edit_in_place(room.document, "".join(lines))
        assert _until(lambda: {i["id"]: i["lines"] for i in cal.get("/workspace/leases").json()["leases"]}
                      == {first["id"]: [15, 25], second["id"]: [37, 47]})
    finally:
        room.stop()
