"""HTTP/MCP parity cases derived from the operation table.

For every operation with both an HTTP route and an MCP tool,
:func:`http_request` turns one input object into the HTTP request the
route expects (path, query or body, by the declaration), so a test can
send the same input through both adapters and compare the answers.
Sample values come by property name (:data:`SAMPLES`); an operation with
a required property no sample names fails loudly, so a new operation is
covered as soon as it is declared.
"""

from __future__ import annotations

import json
from typing import Any

from commonroom.bundle import bundle
from commonroom.operations import Operation, Table

#: A sample value for each input property name the table uses.
SAMPLES: dict[str, Any] = {
    "number": 1, "from_version": 1, "to_version": 1, "limit": 5, "region": {"lines": [1, 1]},
    "base_version": 1, "expected_version": 1, "text": "x\n", "summary": "parity", "ttl_seconds": 60,
    "lease_id": "lease_parity", "proposal_id": "pr_parity", "reason": "parity", "status": "open",
    "handoff_id": "ho_parity", "message": "parity?", "result": "parity",
    "session_id": "s_parity", "message_id": "msg_parity", "kind": "note", "body": "parity", "answer": "parity",
    "completion_key": "parity", "peer_id": "peer_parity", "after_observation_token": "bo1.parity.parity", "wait_seconds": 0,
}


def both(table: Table) -> list[Operation]:
    """Operations served over HTTP and MCP alike."""
    return [op for op in table if op.http is not None and op.mcp is not None]


def sample_input(op: Operation, *, optional: bool = True) -> dict[str, Any]:
    """An input object for ``op`` from :data:`SAMPLES` (``KeyError`` names a missing sample)."""
    schema = bundle(op.input)
    required = set(schema.get("required", []))
    out: dict[str, Any] = {}
    for prop in schema.get("properties", {}):
        if prop in required or (optional and prop in SAMPLES and prop not in ("cursor",)):
            if prop not in SAMPLES:
                raise KeyError(f"{op.name}: no parity sample for input property {prop!r}")
            out[prop] = SAMPLES[prop]
    return out


def http_request(op: Operation, values: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """``(method, path, httpx kwargs)`` carrying ``values`` as ``op``'s route expects."""
    http = op.http
    assert http is not None
    path = http.path
    rest = dict(values)
    for wire in http.path_params():
        path = path.replace("{" + wire + "}", str(rest.pop(http.prop(wire))))
    if http.has_body:
        return http.method, path, {"json": rest}
    params = {http.wire(k): (json.dumps(v) if isinstance(v, (dict, list)) else str(v)) for k, v in rest.items()}
    return http.method, path, {"params": params}
