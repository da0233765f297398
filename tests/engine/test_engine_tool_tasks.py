"""Tasks of task-running tools in-process, on the injected clock (engine/tasks.py).

start → ask → tasks/update → finish, a tool error and a protocol error, a
cancel the run cannot undo, visibility, the 32-active cap shared with
handoffs, the TTL sweep, and one ``task.updated`` event per change.
"""

from __future__ import annotations

import pytest

from commonroom.engine import OPERATOR
from commonroom.engine.handoff_base import MAX_ACTIVE_TASKS
from commonroom.errors import HandoffNotFound, InvalidRequest, LimitExceeded
from tests.fakeclock import join

ELICIT = {"method": "elicitation/create", "params": {"mode": "form", "message": "sure?",
                                                     "requestedSchema": {"type": "object", "properties": {}}}}
RESULT = {"content": [{"type": "text", "text": "done"}], "isError": False}


@pytest.fixture
def people(engine):
    caller, _ = join(engine, "caller", ["read"])
    other, _ = join(engine, "other", ["read"])
    boss, _ = join(engine, "boss", ["read", "approve"])
    return caller, other, boss


def task_events(engine) -> list[tuple[str, str]]:
    return [(e["payload"]["task_id"], e["payload"]["task_status"])
            for e in engine.history(OPERATOR, limit=200)["events"] if e["type"] == "task.updated"]


def test_start_ask_answer_finish(engine, people, clock):
    caller, other, boss = people
    task = engine.start_tool_task(caller, "confirm_delete")
    task_id = task["taskId"]
    assert task["status"] == "working" and task["operation"] == "tool:confirm_delete"
    assert task["handoffId"] is None and task["owner"] == "caller" and task["correlationId"] == task_id
    assert engine.task_get(caller, task_id)["status"] == "working"
    assert engine.task_get(boss, task_id)["status"] == "working"  # approve sees every task
    with pytest.raises(HandoffNotFound):
        engine.task_get(other, task_id)

    clock.advance(1)
    asked = engine.ask_tool_task(task_id, {"a": ELICIT, "b": ELICIT}, "two questions")
    assert asked["status"] == "input_required" and set(asked["inputRequests"]) == {"a", "b"}
    assert asked["statusMessage"] == "two questions"
    assert engine.task_update(caller, task_id, {"zzz": {}}) == asked  # no key matches: acknowledged, unchanged
    partial = engine.task_update(caller, task_id, {"a": {"action": "accept"}})
    assert partial["status"] == "input_required" and list(partial["inputRequests"]) == ["b"]
    whole = engine.task_update(caller, task_id, {"b": {"action": "decline"}})
    assert whole["status"] == "working" and "inputRequests" not in whole
    assert engine.tool_task(task_id)["inputResponses"] == {"a": {"action": "accept"}, "b": {"action": "decline"}}
    with pytest.raises(InvalidRequest):
        engine.ask_tool_task(task_id, {"a": ELICIT})  # a key is never reused

    done = engine.finish_tool_task(task_id, result=RESULT)
    assert done["status"] == "completed" and done["result"] == {**RESULT, "resultType": "complete"}
    again = engine.finish_tool_task(task_id, error={"code": -32603, "message": "late"})
    assert again["status"] == "completed" and "error" not in again  # terminal: never left
    assert engine.task_cancel(caller, task_id)["status"] == "completed"
    assert task_events(engine) == [(task_id, s) for s in
                                   ("working", "input_required", "input_required", "working", "completed")]


def test_errors_and_cancel(engine, people):
    caller, other, _ = people
    failed = engine.start_tool_task(caller, "protocol_error_job")["taskId"]
    out = engine.finish_tool_task(failed, error={"code": -32603, "message": "broke"})
    assert out["status"] == "failed" and out["error"]["code"] == -32603 and "result" not in out
    tool_error = engine.start_tool_task(caller, "failing_job")["taskId"]
    out = engine.finish_tool_task(tool_error, result={**RESULT, "isError": True})
    assert out["status"] == "completed" and out["result"]["isError"] is True
    with pytest.raises(InvalidRequest):
        engine.finish_tool_task(tool_error)  # neither a result nor an error

    running = engine.start_tool_task(caller, "slow_compute")["taskId"]
    with pytest.raises(HandoffNotFound):
        engine.task_cancel(other, running)  # not theirs: it does not exist for them
    assert engine.task_cancel(caller, running)["status"] == "cancelled"
    assert engine.finish_tool_task(running, result=RESULT)["status"] == "cancelled"  # the late end changes nothing
    assert engine.ask_tool_task(running, {"x": ELICIT})["status"] == "cancelled"
    assert engine.tool_task("task_nope") is None
    with pytest.raises(HandoffNotFound):
        engine.ask_tool_task("task_nope", {"x": ELICIT})


def test_the_active_cap_is_shared_with_handoffs(engine, people):
    caller, _, _ = people
    owner, _ = join(engine, "owner", ["read", "handoff"])
    for i in range(MAX_ACTIVE_TASKS - 1):
        engine.start_tool_task(caller, "slow_compute")
    engine.create_handoff(owner, "the last one")
    with pytest.raises(LimitExceeded) as caught:
        engine.start_tool_task(caller, "slow_compute")
    assert caught.value.details["limit"] == "active_tasks"
    with pytest.raises(LimitExceeded):
        engine.create_handoff(owner, "one too many")


def test_the_sweep_expires_and_deletes_tool_tasks(engine, people, clock):
    caller, _, _ = people
    stuck = engine.start_tool_task(caller, "confirm_delete")["taskId"]
    engine.ask_tool_task(stuck, {"q": ELICIT})
    finished = engine.start_tool_task(caller, "slow_compute")["taskId"]
    engine.finish_tool_task(finished, result=RESULT)
    clock.advance(24 * 3600 - 1)
    assert engine.sweep_tasks() == {"expired": 0, "deleted": 0}  # active work inside its TTL is kept
    clock.advance(2)
    assert engine.sweep_tasks() == {"expired": 1, "deleted": 1}
    expired = engine.task_get(caller, stuck)
    assert expired["status"] == "failed" and expired["error"]["message"] == "task expired"
    assert task_events(engine)[-1] == (stuck, "failed")
    with pytest.raises(HandoffNotFound):
        engine.task_get(caller, finished)


def test_a_restart_fails_the_tool_tasks_it_interrupted(engine, people):
    caller, _, _ = people
    owner, _ = join(engine, "owner", ["read", "handoff"])
    running = engine.start_tool_task(caller, "slow_compute")["taskId"]
    waiting = engine.start_tool_task(caller, "confirm_delete")["taskId"]
    engine.ask_tool_task(waiting, {"q": ELICIT})
    done = engine.start_tool_task(caller, "slow_compute")["taskId"]
    engine.finish_tool_task(done, result=RESULT)
    handoff_task = engine.create_handoff(owner, "not a tool's")["task"]["taskId"]
    assert engine.fail_interrupted_tool_tasks() == 2
    for task_id in (running, waiting):
        task = engine.task_get(caller, task_id)
        assert task["status"] == "failed" and task["error"]["code"] == -32603 and "inputRequests" not in task
    assert engine.task_get(caller, done)["status"] == "completed"
    assert engine.task_get(owner, handoff_task)["status"] == "working"  # handoff tasks outlive the process
    assert engine.fail_interrupted_tool_tasks() == 0
