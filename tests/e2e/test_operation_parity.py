"""HTTP and MCP answer alike for every operation of the table.

Derived from the operation table (tests/parity.py): for each operation
served both ways, the same input gives the same answer (read-only
operations, compared whole), the same refusal for a session without the
capability (the whole error object), and the same error code for an
input that misses a required property.
"""

from __future__ import annotations

import pytest

from commonroom.bundle import bundle
from commonroom.operations import OPERATIONS
from tests.mcp_wire import Mcp
from tests.parity import both, http_request, sample_input

OPS = both(OPERATIONS)


@pytest.fixture(scope="module")
def callers(shared_room):
    full = shared_room.join("parity-full", "read,observe,propose,lease,approve,write,handoff,message")
    none = shared_room.join("parity-none", "observe")
    out = {"full": (full, Mcp(shared_room.ingress, full.token)), "none": (none, Mcp(shared_room.ingress, none.token))}
    yield out
    for _, mcp in out.values():
        mcp.close()


def _http(client, op, values):
    method, path, kwargs = http_request(op, values)
    return client.request(method, path, **kwargs)


def _mcp(mcp, op, values):
    result = mcp.call_tool(op.name, values)
    return result["isError"], result["structuredContent"]


def test_every_operation_served_both_ways_is_covered():
    assert {"document_read", "proposal_create", "lease_acquire"} <= {op.name for op in OPS}
    for op in OPS:
        sample_input(op)  # every required property has a sample


@pytest.mark.parametrize("op", [op for op in OPS if op.read_only], ids=lambda op: op.name)
def test_read_only_operations_answer_the_same(callers, op):
    client, mcp = callers["full"]
    values = sample_input(op, optional=False)
    if op.name in ("proposal_get", "proposal_review"):
        values["proposal_id"] = _a_proposal(client)
    r = _http(client, op, values)
    is_error, structured = _mcp(mcp, op, values)
    assert (r.status_code < 400) == (not is_error), (r.text, structured)
    assert r.json() == structured


@pytest.mark.parametrize("op", [op for op in OPS if op.capability], ids=lambda op: op.name)
def test_a_missing_capability_is_the_same_refusal(callers, op):
    client, mcp = callers["none"]
    values = sample_input(op)
    r = _http(client, op, values)
    is_error, structured = _mcp(mcp, op, values)
    assert r.status_code == 403 and is_error, (r.text, structured)
    assert r.json() == structured and structured["error"] == "permission_denied"


def _required_outside_path(op) -> list[str]:
    in_path = {op.http.prop(w) for w in op.http.path_params()}
    return [p for p in bundle(op.input).get("required", []) if p not in in_path]


@pytest.mark.parametrize("op", [op for op in OPS if _required_outside_path(op)], ids=lambda op: op.name)
def test_a_missing_required_property_is_invalid_request_both_ways(callers, op):
    client, mcp = callers["full"]
    values = sample_input(op)
    values.pop(_required_outside_path(op)[0])
    r = _http(client, op, values)
    is_error, structured = _mcp(mcp, op, values)
    assert r.status_code == 400 and is_error, (r.text, structured)
    assert r.json()["error"] == structured["error"] == "invalid_request"


def _a_proposal(client) -> str:
    r = client.post("/workspace/proposals", {"base_version": 1, "region": {"lines": [1, 1]},
                                             "text": "# Release plan\n", "summary": "parity"})
    assert r.status_code == 201, r.text
    return r.json()["id"]
