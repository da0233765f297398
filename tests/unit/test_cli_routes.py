"""``ce`` calls an operation by name: the request :func:`commonroom.cli.routes.request` builds is the one
the room's HTTP adapter reads back as the same input object (every operation of the table)."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import pytest

from commonroom.cli.routes import request, routes
from commonroom.errors import InvalidRequest
from commonroom.http.operations import Binding
from commonroom.operations import OPERATIONS, Operation
from tests.authz import EXTRA
from tests.parity import SAMPLES

HTTP = [op for op in OPERATIONS if op.http is not None]


def _values(op: Operation) -> dict[str, Any]:
    """Every input property of ``op`` that has a sample (optional ones too), as a command would pass them."""
    samples = {**SAMPLES, **EXTRA, "cursor": "c1", "since_event_id": 3, "client": "ce", "requested_schema": {},
               "constraints": "c", "artifacts": [], "assignee": "bob", "idempotency_key": "k", "priority": "low",
               "tags": ["t"], "reply_to": "msg_x", "requires_ack": True, "recording_session_id": "s_x",
               "expected_assignment_fence": "f", "transport": "loopback", "expires_in_seconds": 60,
               "session_ttl_seconds": 60, "invitation": "commonroom://join/e30", "session": "s_x"}
    binding = Binding(op)
    return {prop: samples[prop] for prop in binding.properties if prop in samples}


def _read_back(op: Operation, method: str, target: str, body: Any) -> dict[str, Any]:
    """The input object the HTTP adapter reads from ``method target`` with ``body``."""
    assert op.http is not None
    binding = Binding(op)
    split = urlsplit(target)
    pattern = "^" + re.sub(r"\\\{([A-Za-z0-9_]+)\\\}", r"(?P<\1>[^/]+)", re.escape(op.http.path)) + "$"
    match = re.match(pattern, split.path)
    assert match, f"{op.name}: {split.path} is not {op.http.path}"
    values: dict[str, Any] = dict(body or {})
    for wire, raw in match.groupdict().items():
        values[op.http.prop(wire)] = binding.parameter(wire, unquote(raw))
    for wire, raw in parse_qsl(split.query, keep_blank_values=True):
        values[op.http.prop(wire)] = binding.parameter(wire, raw)
    return values


def test_every_operation_with_a_route_is_stored():
    assert list(routes()) == [op.name for op in HTTP]


@pytest.mark.parametrize("op", HTTP, ids=lambda op: op.name)
def test_the_request_reads_back_as_the_input(op):
    values = _values(op)
    method, target, body = request(op.name, values)
    assert method == op.http.method
    assert (body is not None) == op.http.has_body
    assert _read_back(op, method, target, body) == values


def test_none_is_left_out_of_a_query_and_kept_in_a_body():
    assert request("leases_list", {"limit": 5, "cursor": None}) == ("GET", "/workspace/leases?limit=5", None)
    assert request("lease_acquire", {"region": None}) == ("POST", "/workspace/leases", {"region": None})
    method, target, _ = request("document_read", {"region": {"heading": ["A b"]}})
    assert json.loads(dict(parse_qsl(urlsplit(target).query))["region"]) == {"heading": ["A b"]}
    assert request("proposal_get", {"proposal_id": "pr 1?"})[1] == "/workspace/proposals/pr%201%3F"
    for odd in ("pr/1", "pr\\1"):  # no id holds a separator: refused before anything is sent
        with pytest.raises(InvalidRequest, match="no id holds"):
            request("proposal_get", {"proposal_id": odd})
