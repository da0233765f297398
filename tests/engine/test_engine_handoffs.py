"""Handoffs and tasks in-process, on the injected clock.

The lifecycle, who may do what, idempotent creation, the limits (nothing
stored past one), the handoff's own event list, the TTL sweep, and a
sidecar of schema version 2 opening with its history kept.
"""

from __future__ import annotations

import sqlite3

import pytest

from commonroom.engine import OPERATOR, Engine
from commonroom.engine.handoff_base import MAX_ACTIVE_TASKS
from commonroom.errors import (HandoffConflict, HandoffNotFound, IdempotencyMismatch, InvalidRequest,
                               LimitExceeded, PermissionDenied)
from commonroom.store import db as store_db
from tests.fakeclock import join, open_engine
from tests.mcp_schema import check

TEXT = "# Plan\n\n## Goals\n\n- ship\n"
WORKER = ["read", "handoff"]



@pytest.fixture
def people(engine):
    owner, _ = join(engine, "owner", ["read", "handoff"])
    worker, _ = join(engine, "worker", WORKER)
    boss, _ = join(engine, "boss", ["read", "approve"])
    stranger, _ = join(engine, "stranger", ["read", "handoff"])
    return owner, worker, boss, stranger


def counts(engine):
    m = engine.store.models
    return m.Handoff.select().count(), m.Task.select().count(), m.HandoffEvent.select().count()


def test_the_whole_lifecycle_and_its_events(engine, people, clock):
    owner, worker, boss, _ = people
    created = engine.create_handoff(owner, "Write the intro", "short", [{"uri": "file:///x.md"}])
    handoff, task = created["handoff"], created["task"]
    assert handoff["status"] == "open" and handoff["owner"] == "owner" and handoff["assignee"] is None
    assert handoff["artifacts"] == [{"uri": "file:///x.md"}] and handoff["task_id"] == task["taskId"]
    assert task["status"] == "working" and task["ttlMs"] == 86_400_000 and task["pollIntervalMs"] == 5000
    assert task["operation"] == "handoff.execute" and task["schemaVersion"] == 1
    assert task["correlationId"] == handoff["id"] and task["createdAt"] == task["lastUpdatedAt"]

    clock.advance(1)
    accepted = engine.accept_handoff(worker, handoff["id"])
    assert accepted["handoff"]["status"] == "accepted" and accepted["handoff"]["assignee"] == "worker"
    assert accepted["task"]["status"] == "working" and accepted["task"]["assignee"] == "worker"
    assert accepted["task"]["lastUpdatedAt"] > task["createdAt"]

    asked = engine.request_handoff_input(worker, handoff["id"], "Which tone?")
    assert asked["task"]["status"] == "input_required" and asked["handoff"]["status"] == "accepted"
    (key, request), = asked["task"]["inputRequests"].items()
    assert key == "input_1" and request["method"] == "elicitation/create"
    assert request["params"]["message"] == "Which tone?"

    updated = engine.task_update(owner, task["taskId"], {key: {"action": "accept", "content": {"answer": "dry"}}})
    assert updated["status"] == "working" and "inputRequests" not in updated
    assert engine.task_get(worker, task["taskId"])["inputResponses"][key]["content"] == {"answer": "dry"}

    done = engine.complete_handoff(worker, handoff["id"], "It was a dark night.")
    assert done["handoff"]["status"] == "result_ready" and done["handoff"]["result"] == "It was a dark night."
    assert done["task"]["status"] == "completed"
    result = done["task"]["result"]
    assert result["content"] == [{"type": "text", "text": "It was a dark night."}] and result["isError"] is False
    # handoff_create's finished tool result: the pair as of the completion, the task without its result
    assert result["structuredContent"]["handoff"] == done["handoff"]
    assert {k: v for k, v in done["task"].items() if k != "result"} == result["structuredContent"]["task"]

    approved = engine.approve_handoff(boss, handoff["id"])
    assert approved["status"] == "approved" and approved["decided_by"] == "boss"
    assert engine.task_get(boss, task["taskId"]) == done["task"]  # approval does not rewrite the task

    types = [e["type"] for e in engine.handoff_events(owner, handoff["id"])["events"]]
    assert types == ["handoff.created", "handoff.accepted", "handoff.input_requested", "handoff.input_received",
                     "handoff.completed", "handoff.approved"]
    ring = [e for e in engine.history(OPERATOR, limit=200)["events"] if e["type"].startswith("handoff.")]
    assert ring == engine.handoff_events(owner, handoff["id"])["events"]
    assert ring[-1]["payload"] == {"handoff_id": handoff["id"], "task_id": task["taskId"], "status": "approved",
                                   "task_status": "completed", "by": "boss"}


def test_reject_and_cancel(engine, people):
    owner, worker, boss, stranger = people
    first = engine.create_handoff(owner, "one")["handoff"]["id"]
    engine.accept_handoff(worker, first)
    engine.complete_handoff(worker, first, "r")
    rejected = engine.reject_handoff(boss, first, "not good")
    assert rejected["status"] == "rejected" and rejected["reason"] == "not good"

    second = engine.create_handoff(owner, "two")
    with pytest.raises(PermissionDenied):
        engine.cancel_handoff(stranger, second["handoff"]["id"])
    cancelled = engine.cancel_handoff(owner, second["handoff"]["id"], "changed my mind")
    assert cancelled["status"] == "cancelled"
    assert engine.task_get(owner, second["task"]["taskId"])["status"] == "cancelled"

    third = engine.create_handoff(owner, "three")
    engine.accept_handoff(worker, third["handoff"]["id"])
    assert engine.cancel_handoff(boss, third["handoff"]["id"])["status"] == "cancelled"  # approve may cancel


@pytest.mark.parametrize("action", ["accept", "complete", "request_input", "approve", "reject", "cancel"])
def test_every_illegal_transition_is_handoff_conflict(engine, people, action):
    owner, worker, boss, _ = people
    calls = {
        "accept": lambda h: engine.accept_handoff(worker, h),
        "complete": lambda h: engine.complete_handoff(worker, h, "other result"),
        "request_input": lambda h: engine.request_handoff_input(worker, h, "q"),
        "approve": lambda h: engine.approve_handoff(boss, h),
        "reject": lambda h: engine.reject_handoff(boss, h),
        "cancel": lambda h: engine.cancel_handoff(owner, h),
    }
    legal = {"accept": {"open"}, "complete": {"accepted"}, "request_input": {"accepted"},
             "approve": {"result_ready"}, "reject": {"result_ready"}, "cancel": {"open", "accepted"}}
    for state in ("open", "accepted", "result_ready", "approved", "rejected", "cancelled"):
        h = engine.create_handoff(owner, f"to {state}")["handoff"]["id"]
        if state != "open" and state != "cancelled":
            engine.accept_handoff(worker, h)
        if state in ("result_ready", "approved", "rejected"):
            engine.complete_handoff(worker, h, "result")
        if state == "approved":
            engine.approve_handoff(boss, h)
        if state == "rejected":
            engine.reject_handoff(boss, h)
        if state == "cancelled":
            engine.cancel_handoff(owner, h)
        before = counts(engine)
        if state in legal[action]:
            calls[action](h)
        else:
            with pytest.raises(HandoffConflict) as refused:
                calls[action](h)
            assert refused.value.details["status"] == state
            assert counts(engine) == before


def test_who_may_do_what(engine, people):
    owner, worker, boss, stranger = people
    reader, _ = join(engine, "reader", ["read"])
    with pytest.raises(PermissionDenied):
        engine.create_handoff(reader, "x")
    h = engine.create_handoff(owner, "x")["handoff"]["id"]
    with pytest.raises(PermissionDenied):
        engine.accept_handoff(reader, h)
    engine.accept_handoff(worker, h)
    for other in (owner, stranger, boss, OPERATOR):
        with pytest.raises(PermissionDenied):
            engine.complete_handoff(other, h, "r")
        with pytest.raises(PermissionDenied):
            engine.request_handoff_input(other, h, "q")
    engine.complete_handoff(worker, h, "r")
    with pytest.raises(PermissionDenied):
        engine.approve_handoff(owner, h)
    assert engine.handoff(reader, h)["status"] == "result_ready"  # read is enough to read


def test_a_named_assignee_alone_may_accept(engine, people):
    owner, worker, _, stranger = people
    created = engine.create_handoff(owner, "for worker", assignee="WORKER")
    assert created["handoff"]["assignee"] == "worker" and created["task"]["assignee"] == "worker"
    with pytest.raises(PermissionDenied):
        engine.accept_handoff(stranger, created["handoff"]["id"])
    assert engine.accept_handoff(worker, created["handoff"]["id"])["handoff"]["status"] == "accepted"
    with pytest.raises(InvalidRequest):
        engine.create_handoff(owner, "nobody", assignee="nobody")


def test_task_visibility_owner_assignee_or_approve(engine, people):
    owner, worker, boss, stranger = people
    created = engine.create_handoff(owner, "x")
    task_id = created["task"]["taskId"]
    assert engine.task_get(owner, task_id)["taskId"] == task_id
    assert engine.task_get(boss, task_id)["taskId"] == task_id
    for refused in (lambda: engine.task_get(worker, task_id), lambda: engine.task_get(stranger, task_id),
                    lambda: engine.task_get(owner, "task_unknown"), lambda: engine.task_cancel(stranger, task_id)):
        with pytest.raises(HandoffNotFound) as nf:
            refused()
        assert nf.value.details == {"task_id": task_id} or nf.value.details == {"task_id": "task_unknown"}
    engine.accept_handoff(worker, created["handoff"]["id"])
    assert engine.task_get(worker, task_id)["assignee"] == "worker"
    # the operator reads as a participant (ce task --participant)
    assert engine.task_get(OPERATOR, task_id, participant="Owner")["taskId"] == task_id
    with pytest.raises(HandoffNotFound):
        engine.task_get(OPERATOR, task_id, participant="stranger")
    with pytest.raises(HandoffNotFound):
        engine.task_get(OPERATOR, task_id, participant="no such one")
    with pytest.raises(HandoffNotFound):
        engine.task_get(stranger, task_id, participant="owner")  # a session speaks only for itself


def test_task_cancel_keeps_a_terminal_status_and_cancels_the_handoff(engine, people):
    owner, worker, _, _ = people
    done = engine.create_handoff(owner, "done")
    engine.accept_handoff(worker, done["handoff"]["id"])
    completed = engine.complete_handoff(worker, done["handoff"]["id"], "r")["task"]
    assert engine.task_cancel(owner, completed["taskId"]) == completed
    live = engine.create_handoff(owner, "live")
    engine.accept_handoff(worker, live["handoff"]["id"])
    with pytest.raises(PermissionDenied) as refused:  # the assignee sees the task but may not cancel it
        engine.task_cancel(worker, live["task"]["taskId"])
    assert refused.value.details == {"required": "owner or approve", "task_id": live["task"]["taskId"]}
    assert engine.task_get(worker, live["task"]["taskId"])["status"] == "working"
    assert engine.task_cancel(owner, live["task"]["taskId"])["status"] == "cancelled"
    assert engine.handoff(owner, live["handoff"]["id"])["status"] == "cancelled"
    with pytest.raises(HandoffConflict):  # a late completion of a cancelled task
        engine.complete_handoff(worker, live["handoff"]["id"], "late")


def test_task_update_edges(engine, people):
    owner, worker, _, _ = people
    created = engine.create_handoff(owner, "x")
    h, task_id = created["handoff"]["id"], created["task"]["taskId"]
    engine.accept_handoff(worker, h)
    before = engine.handoff_events(owner, h)["events"]
    # nothing outstanding to answer (a working task, unknown keys): acknowledged, nothing changes or is emitted
    assert engine.task_update(owner, task_id, {"input_1": {}}) == engine.task_get(owner, task_id)
    assert engine.task_get(owner, task_id)["status"] == "working"
    engine.request_handoff_input(worker, h, "a?")
    engine.request_handoff_input(worker, h, "b?")
    waiting = engine.task_get(owner, task_id)
    assert engine.task_update(owner, task_id, {"nope": {}}) == waiting  # never restarts the work
    assert len(engine.handoff_events(owner, h)["events"]) == len(before) + 2  # the two requests only
    with pytest.raises(InvalidRequest):  # malformed in itself: still 400
        engine.task_update(owner, task_id, ["input_1"])  # type: ignore[arg-type]
    partial = engine.task_update(owner, task_id, {"input_1": {"action": "accept"}, "nope": 1})
    assert partial["status"] == "input_required" and list(partial["inputRequests"]) == ["input_2"]
    assert engine.task_update(owner, task_id, {"input_2": {"action": "decline"}})["status"] == "working"
    again = engine.request_handoff_input(worker, h, "c?")["task"]
    assert list(again["inputRequests"]) == ["input_3"]  # keys are never reused


def test_a_second_completion_does_not_replace_the_result(engine, people):
    owner, worker, _, _ = people
    h = engine.create_handoff(owner, "x")["handoff"]["id"]
    engine.accept_handoff(worker, h)
    first = engine.complete_handoff(worker, h, "first")
    assert engine.complete_handoff(worker, h, "first") == first  # a retry answers alike
    with pytest.raises(HandoffConflict):
        engine.complete_handoff(worker, h, "second")
    assert engine.handoff(owner, h)["result"] == "first"
    assert engine.task_get(owner, first["task"]["taskId"])["result"]["content"][0]["text"] == "first"


def test_creation_is_idempotent_per_participant_and_key(engine, people):
    owner, worker, _, stranger = people
    first = engine.create_handoff(owner, "x", "c", idempotency_key="k1")
    before = counts(engine)
    assert all(engine.create_handoff(owner, "x", "c", idempotency_key="k1") == first for _ in range(10))
    assert counts(engine) == before
    with pytest.raises(IdempotencyMismatch) as mismatch:
        engine.create_handoff(owner, "y", "c", idempotency_key="k1")
    assert mismatch.value.details["handoff_id"] == first["handoff"]["id"] and mismatch.value.status == 409
    theirs = engine.create_handoff(stranger, "x", "c", idempotency_key="k1")  # keys of others never meet
    assert theirs["handoff"]["id"] != first["handoff"]["id"]
    engine.accept_handoff(worker, first["handoff"]["id"])
    replay = engine.create_handoff(owner, "x", "c", idempotency_key="k1")
    assert replay["handoff"]["status"] == "accepted"  # the original, as it is now


@pytest.mark.parametrize("kwargs,limit", [
    ({"summary": "s" * 2001}, "summary_chars"),
    ({"summary": "s", "constraints": "c" * 8001}, "constraints_chars"),
])
def test_size_limits_store_nothing(engine, people, kwargs, limit):
    owner = people[0]
    engine.create_handoff(owner, "s" * 2000, "c" * 8000)  # at the bounds: fine
    before = counts(engine)
    with pytest.raises(LimitExceeded) as refused:
        engine.create_handoff(owner, **kwargs)
    assert refused.value.details["limit"] == limit and refused.value.status == 429
    assert "retry_after_seconds" not in refused.value.to_dict()
    assert counts(engine) == before


def test_result_limit(engine, people):
    owner, worker, _, _ = people
    h = engine.create_handoff(owner, "x")["handoff"]["id"]
    engine.accept_handoff(worker, h)
    before = counts(engine)
    with pytest.raises(LimitExceeded) as refused:
        engine.complete_handoff(worker, h, "é" * (128 * 1024 + 1))  # 2 bytes each
    assert refused.value.details["limit"] == "result_bytes"
    assert counts(engine) == before and engine.handoff(owner, h)["status"] == "accepted"
    assert engine.complete_handoff(worker, h, "x" * 256 * 1024)["handoff"]["status"] == "result_ready"


def test_at_most_32_active_tasks(engine, people):
    owner, worker, _, _ = people
    ids = [engine.create_handoff(owner, f"n{i}", idempotency_key=f"k{i}")["handoff"]["id"]
           for i in range(MAX_ACTIVE_TASKS)]
    before = counts(engine)
    with pytest.raises(LimitExceeded) as refused:
        engine.create_handoff(owner, "one too many")
    assert refused.value.details["limit"] == "active_tasks" and counts(engine) == before
    assert engine.create_handoff(owner, "n0", idempotency_key="k0")["handoff"]["id"] == ids[0]  # retries still answer
    engine.accept_handoff(worker, ids[0])
    engine.complete_handoff(worker, ids[0], "done")  # a completed task frees a place
    assert engine.create_handoff(owner, "now fits")["task"]["status"] == "working"


def test_lists_are_paged(engine, people):
    owner = people[0]
    made = [engine.create_handoff(owner, f"n{i}")["handoff"]["id"] for i in range(5)]
    page = engine.handoffs(owner, limit=2)
    seen = [h["id"] for h in page["handoffs"]]
    while page["next_cursor"]:
        page = engine.handoffs(owner, limit=2, cursor=page["next_cursor"])
        seen += [h["id"] for h in page["handoffs"]]
    assert sorted(seen) == sorted(made) and len(seen) == 5
    assert engine.handoffs(owner, status="accepted")["handoffs"] == []
    for bad in ({"limit": 0}, {"limit": 201}, {"cursor": "garbage!"}, {"status": "nope"}):
        with pytest.raises(InvalidRequest):
            engine.handoffs(owner, **bad)
    with pytest.raises(HandoffNotFound):
        engine.handoff_events(owner, "ho_nope")


def test_handoff_events_outlive_the_ring(engine, people, monkeypatch):
    owner, worker, _, _ = people
    monkeypatch.setattr(store_db, "RING_SIZE", 5)
    h = engine.create_handoff(owner, "x")["handoff"]["id"]
    for i in range(10):
        engine.create_handoff(owner, f"filler {i}")
    engine.accept_handoff(worker, h)
    events = engine.handoff_events(owner, h, limit=1)
    assert [e["type"] for e in events["events"]] == ["handoff.created"]
    rest = engine.handoff_events(owner, h, cursor=events["next_cursor"])
    assert [e["type"] for e in rest["events"]] == ["handoff.accepted"] and rest["next_cursor"] is None
    assert engine.history(OPERATOR, limit=200)["events"][0]["id"] > events["events"][0]["id"]


def test_the_ttl_sweep_fails_stale_tasks_and_deletes_old_terminal_ones(engine, people, clock):
    owner, worker, _, _ = people
    stale = engine.create_handoff(owner, "stale")
    engine.accept_handoff(worker, stale["handoff"]["id"])
    done = engine.create_handoff(owner, "done")
    engine.accept_handoff(worker, done["handoff"]["id"])
    clock.advance(3600)
    engine.complete_handoff(worker, done["handoff"]["id"], "kept")
    check("CallToolResult", engine.task_get(owner, done["task"]["taskId"])["result"])  # the core shape, resultType included
    clock.advance(24 * 3600 - 3600 - 1)
    assert engine.sweep_tasks() == {"expired": 0, "deleted": 0}  # inside the TTL nothing moves
    clock.advance(1)
    assert engine.sweep_tasks() == {"expired": 1, "deleted": 0}
    failed = engine.task_get(owner, stale["task"]["taskId"])
    assert failed["status"] == "failed" and failed["statusMessage"] == "task expired"
    assert failed["error"]["message"] == "task expired"
    assert engine.handoff(owner, stale["handoff"]["id"])["status"] == "cancelled"
    assert engine.sweep_tasks() == {"expired": 0, "deleted": 0}  # idempotent
    clock.advance(3600)
    assert engine.sweep_tasks() == {"expired": 0, "deleted": 1}
    with pytest.raises(HandoffNotFound):  # the row expired: no task result is served any more (tasks/get: -32602)
        engine.task_get(owner, done["task"]["taskId"])
    assert engine.handoff(owner, done["handoff"]["id"])["result"] == "kept"  # the handoff keeps the text


def test_tasks_survive_reopening(tmp_path, clock):
    engine = open_engine(tmp_path, TEXT, clock=clock)
    owner, _ = join(engine, "owner", ["read", "handoff"])
    created = engine.create_handoff(owner, "x")
    engine.close()
    again = Engine.open(tmp_path / "doc.md", clock=clock)
    try:
        assert again.task_get(OPERATOR, created["task"]["taskId"]) == created["task"]
    finally:
        again.close()


def test_a_version_2_sidecar_opens_keeps_its_history_and_gains_the_tables(tmp_path, clock):
    engine = open_engine(tmp_path, TEXT, clock=clock)
    owner, _ = join(engine, "owner", ["read", "write", "handoff"])
    engine.write(owner, 1, TEXT + "\nmore\n", summary="v2")
    path = engine.store.path
    engine.close()
    con = sqlite3.connect(path)
    with con:
        for table in ("handoff_event", "task", "handoff"):
            con.execute(f'DROP TABLE "{table}"')
        con.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    events = con.execute("SELECT id, type, payload FROM event ORDER BY id").fetchall()
    con.close()
    with pytest.raises(InvalidRequest, match="left as it is"):  # a reader never upgrades
        Engine.open(tmp_path / "doc.md", clock=clock, readonly=True)
    again = Engine.open(tmp_path / "doc.md", clock=clock)
    try:
        assert again.store.meta("schema_version") == str(store_db.SCHEMA_VERSION)
        assert again.handoffs(OPERATOR)["handoffs"] == []
        con = sqlite3.connect(path)
        assert con.execute("SELECT id, type, payload FROM event ORDER BY id").fetchall() == events
        con.close()
        assert again.version(OPERATOR, 2)["summary"] == "v2"
        assert again.create_handoff(OPERATOR, "after the upgrade")["handoff"]["owner"] == "operator"
    finally:
        again.close()
