"""Property-based fuzzing of every MCP tool, handoffs and boards included.

The tools come from the operation table (every operation with an MCP
adapter) and their input schemas from the room's own ``tools/list``, so a
new tool is fuzzed as soon as it is declared. For each tool hypothesis
draws arguments of three sorts: valid by the schema with real ids of the
room mixed in (sessions, board messages and their fences, handoffs and
tasks, proposals, leases, peers, observation tokens, so the calls reach
the handlers and not only the validation), a valid object with one
property replaced by any JSON, and any JSON at all. The tasks methods of
the handoffs (``tasks/get``, ``tasks/update``, ``tasks/cancel``, with the
tasks extension) are fuzzed the same way.

Every answer must be: not a 5xx; a JSON-RPC response valid against the
official schema; a ``CallToolResult`` whose ``structuredContent``
validates against the tool's ``outputSchema`` when it is not an error,
and an error object carrying a known code when it is. Every tool must be
reached (answered beyond argument validation) at least once. The room is
still serving at the end and its sidecar passes ``integrity_check``.

CI: about 3,000 calls (``COMMONROOM_MCP_FUZZ_CALLS``); ``COMMONROOM_RELEASE=1``:
45,000. Per-tool counts are printed.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from commonroom.errors import STATUS
from commonroom.operations import OPERATIONS
from commonroom.protocol import META_CAPABILITIES, TASKS_EXTENSION
from tests.e2e.test_editing_crash import integrity
from tests.e2e.test_openapi_schemathesis import fuzz_room  # noqa: F401  (its fixture: one real room)
from tests.mcp_schema import check
from tests.mcp_wire import META, Mcp

RELEASE = os.environ.get("COMMONROOM_RELEASE") == "1"
CALLS = int(os.environ.get("COMMONROOM_MCP_FUZZ_CALLS", "45000" if RELEASE else "3000"))
ALL = ["read", "observe", "propose", "lease", "approve", "write", "handoff", "message"]
EXT = {**META, META_CAPABILITIES: {"extensions": {TASKS_EXTENSION: {}}}}
TASK_METHODS = ("tasks/get", "tasks/update", "tasks/cancel")
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(max_size=20), lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=8)
#: Long-poll waits stay short; out-of-range values are drawn too (refused at once).
WAITS = st.sampled_from([0, 1, -1, 31, "1", None])


def from_schema(schema: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values valid by ``schema`` (the subset of JSON Schema the table uses), sizes kept small."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return st.one_of([from_schema(s, depth) for s in schema[key]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([from_schema({**schema, "type": k}, depth) for k in kind])
    if kind == "string":
        low = schema.get("minLength", 0)
        return st.text(min_size=low, max_size=max(low, min(schema.get("maxLength", 40), 40)))
    if kind == "integer":
        return st.integers(schema.get("minimum", -(2**31)), schema.get("maximum", 2**31))
    if kind == "number":
        return st.floats(schema.get("minimum"), schema.get("maximum"), allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array" and depth < 3:
        items = from_schema(schema.get("items", {}), depth + 1)
        low = schema.get("minItems", 0)
        return st.lists(items, min_size=low, max_size=max(low, min(schema.get("maxItems", 3), 3)))
    if kind == "object" and depth < 3:
        return objects(schema, {}, depth + 1)
    return JSON


def objects(schema: dict[str, Any], real: dict[str, list[Any]], depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """Objects valid by ``schema``: every required property, some optional ones, real values mixed in."""
    props = schema.get("properties", {})
    required = set(schema.get("required", []))

    def value(name: str, prop: dict[str, Any]) -> st.SearchStrategy[Any]:
        if name == "wait_seconds":
            return WAITS
        drawn = from_schema(prop, depth)
        return st.one_of(st.sampled_from(real[name]), drawn) if real.get(name) else drawn

    return st.fixed_dictionaries({k: value(k, p) for k, p in props.items() if k in required},
                                 optional={k: value(k, p) for k, p in props.items() if k not in required})


def arguments(schema: dict[str, Any], real: dict[str, list[Any]]) -> st.SearchStrategy[Any]:
    """Valid (often with real ids), valid but one property bent, or anything."""
    valid = objects(schema, real)
    names = sorted(schema.get("properties", {})) or ["x"]
    bent = st.builds(lambda obj, name, junk: {**obj, name: junk}, valid, st.sampled_from(names), JSON)
    return st.one_of(valid, valid, valid, bent, JSON)


def reached(op_name: str, data: dict[str, Any]) -> bool:
    """The call got past argument validation: a success or an error of the domain."""
    result = data.get("result") or {}
    if not result.get("isError"):
        return "result" in data
    return (result.get("structuredContent") or {}).get("error") not in ("invalid_request", None)


TASK_RESULTS = {"tasks/get": "tasks:GetTaskResult", "tasks/update": "tasks:UpdateTaskResult",
                "tasks/cancel": "tasks:CancelTaskResult"}


def check_answer(name: str, status: int, data: Any, output: dict[str, Any] | None) -> str | None:
    """What is wrong with one answer to ``name`` (None: nothing)."""
    if status >= 500:
        return f"HTTP {status}"
    if not isinstance(data, dict):
        return f"not a JSON-RPC object: {data!r}"
    try:
        check("JSONRPCErrorResponse" if "error" in data else "JSONRPCResultResponse", data)
        if "result" in data and name in TASK_RESULTS:
            check(TASK_RESULTS[name], data["result"])
        elif "result" in data:
            check("CallToolResult", data["result"])
    except AssertionError as exc:
        return f"schema: {exc}"
    result = data.get("result")
    if isinstance(result, dict) and "isError" in result:
        content = result.get("structuredContent")
        if result["isError"]:
            if not isinstance(content, dict) or content.get("error") not in STATUS:
                return f"isError without a known error code: {content!r}"
        elif output is not None:
            problems = [e.message for e in Draft202012Validator(output).iter_errors(content)]
            if problems:
                return f"structuredContent breaks the outputSchema: {problems[:3]}"
    return None


def real_values(room: Any, me: Any, mcp: Mcp) -> dict[str, list[Any]]:
    """Ids the room knows, made through the tools themselves, by property name."""
    other = room.join("fuzz-peer", ALL)
    twin = room.join("fuzzer", ALL)  # another live session of the same participant: a peer
    board = me.session["id"]

    def tool(name: str, args: dict[str, Any]) -> dict[str, Any]:
        result = mcp.call_tool(name, args)
        assert not result["isError"], (name, result)
        return result["structuredContent"]

    todos = [tool("post_session_message", {"session_id": board, "kind": "todo", "body": f"todo {i}"})["message_id"]
             for i in range(3)]
    fences = [tool("get_session_assignment", {"session_id": board, "message_id": t})["assignment_fence"] for t in todos]
    handoffs = [tool("handoff_create", {"summary": f"fuzz {i}", "idempotency_key": f"fk{i}"})["handoff"]
                for i in range(3)]
    head = tool("document_read", {})["version"]
    proposal = tool("proposal_create", {"base_version": head, "region": {"lines": [1, 1]}, "text": "# Fuzzed\n"})
    lease = tool("lease_acquire", {"region": {"lines": [2, 2]}, "ttl_seconds": 600})
    token = tool("observe_session_messages", {"session_id": board})["observation_token"]
    # the twin does something meaningful, so the fuzzer sees it as a peer
    twin.post(f"/workspace/boards/{twin.session['id']}/messages", {"kind": "note", "body": "here"})
    peers = [p["peer_id"] for p in me.get("/workspace/peers").json()["peers"]]
    assert peers, "the fuzzer sees no peer"
    sessions = [board, other.session["id"], twin.session["id"]]
    return {
        "session_id": sessions, "message_id": todos, "expected_assignment_fence": fences,
        "handoff_id": [h["id"] for h in handoffs], "task_id": [h["task_id"] for h in handoffs],
        "proposal_id": [proposal["id"]], "lease_id": [lease["id"]], "after_observation_token": [token],
        "number": [1, head], "base_version": [head], "expected_version": [head], "from_version": [1],
        "to_version": [head], "completion_key": ["ck-1", "ck-2"], "assignee": ["fuzzer", "fuzz-peer"],
        "reply_to": todos, "taskId": [h["task_id"] for h in handoffs], "peer_id": peers,
    }


def test_every_tool_holds_under_fuzzing(fuzz_room):
    me = fuzz_room.join("fuzzer", ALL)
    mcp = Mcp(fuzz_room.ingress, me.token)
    tools = {t["name"]: t for t in mcp.result("tools/list", {})["tools"]}
    ops = [op for op in OPERATIONS if op.mcp is not None]
    assert {op.name for op in ops} <= set(tools), set(op.name for op in ops) - set(tools)
    real = real_values(fuzz_room, me, mcp)
    targets: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = [
        (op.name, tools[op.name]["inputSchema"], tools[op.name].get("outputSchema")) for op in ops]
    for method in TASK_METHODS:
        task_schema = {"type": "object", "properties": {"taskId": {"type": "string"}},
                       "required": ["taskId"], "additionalProperties": False}
        if method == "tasks/update":
            task_schema["properties"]["inputResponses"] = {"type": "object"}
            task_schema["required"].append("inputResponses")
        targets.append((method, task_schema, None))
    per = max(1, CALLS // len(targets))
    counts: dict[str, Counter] = {}
    failures: list[str] = []
    for name, schema, output in targets:
        tally = counts.setdefault(name, Counter())

        @settings(max_examples=per, deadline=None, database=None, derandomize=not RELEASE,
                  suppress_health_check=list(HealthCheck))
        @given(args=arguments(schema, real))
        def call(args: Any) -> None:
            if name in TASK_METHODS:
                response = mcp.post(name, args if isinstance(args, dict) else {"taskId": args}, meta=EXT)
            else:
                response = mcp.post("tools/call", {"name": name, "arguments": args})
            try:
                data = response.json()
            except ValueError:
                data = response.text
            tally["calls"] += 1
            problem = check_answer(name, response.status_code, data, output)
            if problem:
                failures.append(f"{name} {json.dumps(args)[:200]}: {problem}")
                tally["failures"] += 1
            elif isinstance(data, dict):
                if "error" in data:
                    tally["jsonrpc_error"] += 1
                elif data["result"].get("isError"):
                    tally["isError"] += 1
                else:
                    tally["ok"] += 1
                if name in TASK_METHODS:  # past validation: a result, or an error about the task itself
                    tally["reached"] += "result" in data or "pointer" not in (data["error"].get("data") or {})
                else:
                    tally["reached"] += reached(name, data)

        call()
    mcp.close()
    total = sum(c["calls"] for c in counts.values())
    print(f"\nMCP property: {total} calls over {len(targets)} tools and task methods ({per} drawn each)")
    for name, c in counts.items():
        print(f"  {name:28} calls {c['calls']:5}  ok {c['ok']:5}  isError {c['isError']:5}  "
              f"jsonrpc error {c['jsonrpc_error']:5}  reached {c['reached']:5}  failures {c['failures']}")
    assert failures == [], failures[:10]
    assert total >= CALLS * 0.9, total
    assert [n for n, c in counts.items() if not c["reached"]] == []
    succeeded = ("handoff_create", "handoff_get", "handoff_list", "handoff_events", "post_session_message",
                 "list_session_messages", "get_session_assignment", "observe_session_messages", "tasks/get")
    assert [n for n in succeeded if not counts[n]["ok"]] == []
    room = fuzz_room
    assert room.operator().get("/workspace/room").status_code == 200 and room.proc.poll() is None
    assert integrity(room) == "ok"
