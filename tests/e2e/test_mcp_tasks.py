"""The MCP tasks extension through a real room.

``handoff_create`` answering ``resultType: "task"``, ``tasks/get``,
``tasks/update``, ``tasks/cancel``: every answer validated against the
official tasks schema; -32021 without the declaration; -32602 ``unknown
task`` for unknown and foreign ids alike; ``tasks/result`` and
``tasks/list`` not served.
"""

from __future__ import annotations

from typing import Any

import pytest

from commonroom.protocol import META_CAPABILITIES, NAME_HEADER, TASKS_EXTENSION
from tests.mcp_schema import check
from tests.mcp_wire import META, Mcp, rpc_error

EXT = {**META, META_CAPABILITIES: {"extensions": {TASKS_EXTENSION: {}}}}
ROLES = {"owner": "read,handoff", "worker": "read,handoff", "boss": "read,approve", "stranger": "read,handoff"}


@pytest.fixture(scope="module")
def people(shared_room):
    out = {}
    for role, caps in ROLES.items():
        client = shared_room.join(f"tk-{role}", caps)
        out[role] = Mcp(shared_room.ingress, client.token)
    yield out
    for mcp in out.values():
        mcp.close()


def _tool(mcp: Mcp, name: str, arguments: dict[str, Any], meta: Any = "auto") -> dict[str, Any]:
    result = mcp.result("tools/call", {"name": name, "arguments": arguments}, meta=meta)
    return result


def _get(mcp: Mcp, task_id: str) -> dict[str, Any]:
    return check("tasks:GetTaskResult", mcp.result("tasks/get", {"taskId": task_id}, meta=EXT))


def _create(mcp: Mcp, summary: str, **extra: Any) -> dict[str, Any]:
    result = _tool(mcp, "handoff_create", {"summary": summary, **extra}, meta=EXT)
    return check("tasks:CreateTaskResult", result)


def test_create_answers_a_task_only_when_declared(people):
    owner = people["owner"]
    plain = check("CallToolResult", _tool(owner, "handoff_create", {"summary": "plain"}))
    assert plain["resultType"] == "complete" and not plain["isError"]
    assert plain["structuredContent"]["task"]["status"] == "working"
    task = _create(owner, "as a task")
    assert task["resultType"] == "task" and task["status"] == "working"
    assert task["ttlMs"] == 86_400_000 and task["pollIntervalMs"] == 5_000 and task["handoffId"]
    got = _get(owner, task["taskId"])
    assert got["resultType"] == "complete" and got["taskId"] == task["taskId"] and got["status"] == "working"


def test_tasks_methods_need_the_declaration(people):
    task = _create(people["owner"], "needs the extension")
    for method, params in (("tasks/get", {"taskId": task["taskId"]}), ("tasks/cancel", {"taskId": task["taskId"]}),
                           ("tasks/update", {"taskId": task["taskId"], "inputResponses": {}})):
        response = people["owner"].post(method, params)
        assert response.status_code == 400, (method, response.text)
        error = rpc_error(response)
        assert error["code"] == -32021
        assert error["data"]["requiredCapabilities"] == {"extensions": {TASKS_EXTENSION: {}}}
    assert _get(people["owner"], task["taskId"])["status"] == "working"  # the cancel did nothing


def test_unknown_and_foreign_tasks_are_the_same_unknown_task(people):
    task = _create(people["owner"], "private")
    answers = []
    for who, task_id in (("stranger", task["taskId"]), ("owner", "task_nope")):
        for method, params in (("tasks/get", {}), ("tasks/cancel", {}), ("tasks/update", {"inputResponses": {}})):
            response = people[who].post(method, {"taskId": task_id, **params}, meta=EXT)
            assert response.status_code == 200
            error = rpc_error(response)
            assert (error["code"], error["message"]) == (-32602, "unknown task"), (who, method, error)
            answers.append(error["data"])
    assert answers[0] == {"taskId": task["taskId"]}
    assert _get(people["owner"], task["taskId"])["status"] == "working"  # the stranger's cancel did nothing
    assert _get(people["boss"], task["taskId"])["status"] == "working"  # approve sees every task


def test_the_whole_flow_through_tasks_methods(people):
    owner, worker, boss = people["owner"], people["worker"], people["boss"]
    task = _create(owner, "write the intro", assignee="tk-worker")
    task_id, handoff_id = task["taskId"], task["handoffId"]
    assert not _tool(worker, "handoff_accept", {"handoff_id": handoff_id})["isError"]
    asked = _tool(worker, "handoff_request_input", {"handoff_id": handoff_id, "message": "Formal or casual?"})
    assert not asked["isError"], asked
    waiting = _get(owner, task_id)
    assert waiting["status"] == "input_required" and list(waiting["inputRequests"]) == ["input_1"]
    assert _get(worker, task_id)["status"] == "input_required"

    # nothing matching: the extension's ack, and nothing changes (never back to working)
    before = _get(owner, task_id)
    nothing = owner.result("tasks/update", {"taskId": task_id, "inputResponses": {"input_9": {}}}, meta=EXT)
    assert check("tasks:UpdateTaskResult", nothing)["resultType"] == "complete"
    assert _get(owner, task_id) == before

    answer = {"input_1": {"action": "accept", "content": {"answer": "casual"}}}
    check("tasks:InputResponses", answer)
    updated = owner.result("tasks/update", {"taskId": task_id, "inputResponses": answer}, meta=EXT)
    check("tasks:UpdateTaskResult", updated)
    assert updated["resultType"] == "complete"
    again = _get(owner, task_id)
    assert again["status"] == "working" and "inputRequests" not in again
    assert again["inputResponses"] == answer
    late = owner.result("tasks/update", {"taskId": task_id, "inputResponses": answer}, meta=EXT)
    assert late["resultType"] == "complete" and _get(owner, task_id) == again  # answered already: ack, no change

    done = _tool(worker, "handoff_complete", {"handoff_id": handoff_id, "result": "Hi all."})
    assert not done["isError"], done
    completed = _get(owner, task_id)
    assert completed["status"] == "completed"
    check("CallToolResult", completed["result"])  # as the room sends it: resultType included
    cancelled = owner.result("tasks/cancel", {"taskId": task_id}, meta=EXT)
    check("tasks:CancelTaskResult", cancelled)
    assert _get(owner, task_id)["status"] == "completed"  # terminal stays as it was
    approved = _tool(boss, "handoff_approve", {"handoff_id": handoff_id})
    assert approved["structuredContent"]["status"] == "approved"


def test_cancel_cancels_the_task_and_its_handoff(people):
    owner = people["owner"]
    task = _create(owner, "to be withdrawn")
    check("tasks:CancelTaskResult", owner.result("tasks/cancel", {"taskId": task["taskId"]}, meta=EXT))
    assert _get(owner, task["taskId"])["status"] == "cancelled"
    handoff = _tool(owner, "handoff_get", {"handoff_id": task["handoffId"]})["structuredContent"]
    assert handoff["status"] == "cancelled"


def test_mcp_name_must_match_when_sent_and_may_be_absent(people):
    owner = people["owner"]
    task = _create(owner, "named")
    absent = owner.post("tasks/get", {"taskId": task["taskId"]}, meta=EXT, headers={NAME_HEADER: None})
    assert absent.status_code == 200 and "result" in absent.json()
    wrong = owner.post("tasks/get", {"taskId": task["taskId"]}, meta=EXT, headers={NAME_HEADER: "task_other"})
    assert wrong.status_code == 400 and rpc_error(wrong)["code"] == -32020


@pytest.mark.parametrize("method", ["tasks/result", "tasks/list"])
def test_result_and_list_are_not_served(people, method):
    response = people["owner"].post(method, {"taskId": "task_x"}, meta=EXT)
    assert response.status_code == 404 and rpc_error(response)["code"] == -32601


def test_discover_advertises_the_extension_and_handoff_ids_complete(people):
    discovered = people["owner"].result("server/discover", {})
    assert TASKS_EXTENSION in discovered["capabilities"]["extensions"]


def test_a_retried_create_answers_the_task_without_its_details(people):
    owner, worker = people["owner"], people["worker"]
    first = _create(owner, "retry me", idempotency_key="retry-1")
    _tool(worker, "handoff_accept", {"handoff_id": first["handoffId"]})
    _tool(worker, "handoff_complete", {"handoff_id": first["handoffId"], "result": "r"})
    again = _create(owner, "retry me", idempotency_key="retry-1")
    assert again["taskId"] == first["taskId"] and again["status"] == "completed"
    assert not {"result", "error", "inputRequests", "inputResponses"} & set(again)
    assert _get(owner, first["taskId"])["result"]["content"][0]["text"] == "r"
