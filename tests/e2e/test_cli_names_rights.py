"""Names and rights on ``ce``, exactly: a name is a name before it is the start of an id, and who acts is recorded.

A real room; participants joined over HTTP, one of them named like the
start of another's id. ``ce task-cancel --participant`` and ``ce
handoff-create --assignee`` resolve that text to the participant so named,
never to the one whose id starts so; a cancel by the operator acting as a
participant is recorded as that participant's (the task's status message,
the handoff's ``decided_by``, the event); the help of ``task-cancel`` and
``task-answer`` says who may.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import SAMPLE
from tests.roomproc import Room, ce, start_room


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    r = start_room(tmp_path_factory.mktemp("names"), SAMPLE)
    yield r
    r.stop()


def lookalike(room: Room, role: str, namesake_caps: str) -> tuple[Any, Any]:
    """``(target, namesake)``: a participant, and one whose name is the start of the target's id."""
    target = room.join(role, "read,handoff")
    namesake = room.join(target.session["participant"]["id"][:6], namesake_caps)
    assert namesake.session["participant"]["name"] == target.session["participant"]["id"][:6]
    return target, namesake


def test_task_cancel_as_a_name_that_starts_another_id_is_that_participant(room, tmp_path):
    owner, namesake = lookalike(room, "owner", "read")
    created = owner.post("/workspace/handoffs", {"summary": "rewrite the intro"})
    assert created.status_code == 201, created.text
    task_id, handoff_id = created.json()["task"]["taskId"], created.json()["handoff"]["id"]
    name = namesake.session["participant"]["name"]
    # the namesake may not see the owner's task: refused as the namesake, not cancelled as the owner
    refused = ce("task-cancel", str(room.document), task_id, "--participant", name)
    assert refused.returncode != 0 and "handoff_not_found" in refused.stderr, refused
    operator = room.operator()
    assert operator.get(f"/workspace/handoffs/{handoff_id}").json()["status"] == "open"
    # the owner, by name: cancelled, and recorded as the owner's act (not "operator")
    owner_name = owner.session["participant"]["name"]
    done = ce("task-cancel", str(room.document), task_id, "--participant", owner_name, "--json")
    assert done.returncode == 0, done.stderr
    task = json.loads(done.stdout)
    assert task["status"] == "cancelled" and task["statusMessage"] == f"cancelled by {owner_name}", task
    handoff = operator.get(f"/workspace/handoffs/{handoff_id}").json()
    assert handoff["status"] == "cancelled" and handoff["decided_by"] == owner_name, handoff
    events = operator.get(f"/workspace/handoffs/{handoff_id}/events").json()["events"]
    cancelled = [e for e in events if e["type"] == "handoff.cancelled"]
    assert cancelled and cancelled[-1]["payload"]["by"] == owner_name, cancelled


def test_handoff_create_assignee_named_like_an_id_start_is_that_participant(room, tmp_path):
    target, namesake = lookalike(room, "target", "read,handoff")
    creator = tmp_path / "creator.json"
    joined = ce("join", room.invite("creator", "read,handoff"), "--session-file", str(creator))
    assert joined.returncode == 0, joined.stderr
    name = namesake.session["participant"]["name"]
    made = ce("handoff-create", "--summary", "check the numbers", "--assignee", name,
              "--session-file", str(creator), "--json")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["handoff"]["assignee"] == name
    # an id's start that is nobody's name still names the participant whose id it starts
    by_id = ce("handoff-create", "--summary", "and the totals", "--assignee",
               target.session["participant"]["id"][:10] + "…", "--session-file", str(creator), "--json")
    assert by_id.returncode == 0, by_id.stderr
    assert json.loads(by_id.stdout)["handoff"]["assignee"] == target.session["participant"]["name"]


@pytest.mark.parametrize(("command", "words"), [
    ("task-cancel", ("owner", "approve", "assignee", "may not cancel")),
    ("task-answer", ("owner", "assignee", "approve")),
])
def test_the_help_says_who_may(command, words):
    shown = ce(command, "--help")
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert "Who may:" in text and all(word in text for word in words), text
