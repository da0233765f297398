"""One participant per name, up to case and width, end to end.

``ce invite … --participant Ana``, then ``ana``, ``ANA`` and fullwidth
``ａｎａ`` on a real room, each joined with ``ce join``: one participant,
shown as Ana, holding four sessions.
"""

from __future__ import annotations

import json

from commonroom.schemas import errors_of
from tests.conftest import SAMPLE
from tests.roomproc import ce, start_room

SPELLINGS = ["Ana", "ana", "ANA", "ａｎａ"]


def test_ce_invite_and_join_equivalent_names_make_one_participant(tmp_path):
    room = start_room(tmp_path, SAMPLE)
    try:
        sessions = []
        for i, spelling in enumerate(SPELLINGS):
            invited = ce("invite", str(room.document), "--participant", spelling, "--cap", "read")
            assert invited.returncode == 0, invited.stderr
            assert " for Ana (read)" in invited.stderr  # the name it is shown by, whatever was typed
            session_file = tmp_path / f"s{i}.json"
            joined = ce("join", invited.stdout.strip(), "--session-file", str(session_file), "--json")
            assert joined.returncode == 0, joined.stderr
            body = json.loads(joined.stdout)
            assert body["session"]["participant"]["name"] == "Ana"
            sessions.append(body["session"])
        assert len({s["participant"]["id"] for s in sessions}) == 1
        assert len({s["id"] for s in sessions}) == 4

        operator = room.operator()
        page = operator.get("/workspace/participants").json()
        assert errors_of("room#ParticipantsPage", page) == [], page
        assert [(p["name"], p["sessions"]) for p in page["participants"]] == [("Ana", 4)]
        assert operator.get("/workspace/room").json()["participants"] == 1
        history = operator.get("/workspace/history", params={"limit": 200}).json()["events"]
        assert [e["payload"]["participant"]["name"] for e in history if e["type"] == "participant.joined"] == ["Ana"]
        assert [e["payload"]["participant"] for e in history if e["type"] == "session.opened"] == ["Ana"] * 4
    finally:
        room.stop()

    # The sidecar keeps it after a restart.
    room = start_room(tmp_path, name="doc.md")
    try:
        invited = ce("invite", str(room.document), "--participant", " ANA ", "--cap", "read")
        assert invited.returncode == 0 and " for Ana " in invited.stderr, invited.stderr
        assert [p["name"] for p in room.operator().get("/workspace/participants").json()["participants"]] == ["Ana"]
    finally:
        room.stop()
