"""The published OpenAPI documents: valid OpenAPI 3.1, one per listener, derived from the operation table."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from openapi_spec_validator import validate

from commonroom.http.openapi import build, component_name
from commonroom.operations import INGRESS, OPERATIONS, OWNER

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "#/components/schemas/"


def _refs(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


@pytest.fixture(scope="module", params=[INGRESS, OWNER])
def document(request):
    return request.param, build(OPERATIONS, request.param)


def test_each_document_is_valid_openapi_3_1(document):
    _, doc = document
    validate(doc)
    assert doc["openapi"] == "3.1.0"


def test_every_ref_names_one_component_directly(document):
    _, doc = document
    refs = set(_refs(doc))
    assert PREFIX + "Proposal" in refs or PREFIX + "Diff" in refs
    for ref in refs:
        assert ref.startswith(PREFIX) and "/" not in ref[len(PREFIX):], ref
        assert isinstance(doc["components"]["schemas"][ref[len(PREFIX):]], dict), ref


def test_each_listener_lists_only_its_operations(document):
    listener, doc = document
    ids = {op["operationId"] for item in doc["paths"].values() for op in item.values()}
    for op in OPERATIONS:
        assert op.http is not None
        assert (op.name in ids) == (listener in op.http.listeners), (listener, op.name)
    assert ("/mcp" in doc["paths"]) == (listener == INGRESS)
    assert ("/owner/invitations" in doc["paths"]) == (listener == OWNER)


def test_every_operation_is_described_from_its_declaration(document):
    listener, doc = document
    for op in OPERATIONS.http(listener):
        entry = doc["paths"][op.http.path][op.http.method.lower()]
        assert entry["operationId"] == op.name and entry["tags"] == [op.tag] and entry["summary"] == op.summary
        assert entry["security"] == ([] if op.http.public else [{"bearer": []}])
        media = "text/event-stream" if op.streams else "application/json"
        success = entry["responses"][str(op.http.status)]["content"][media]["schema"]
        assert success == {"$ref": PREFIX + component_name(op.answer)}
        for status, codes in op.error_statuses(listener).items():
            assert str(status) in entry["responses"], (op.name, status)
            for code in codes:
                assert code in entry["responses"][str(status)]["description"]
        if listener == INGRESS and not op.http.public:
            assert "Retry-After" in entry["responses"]["429"]["headers"]


def test_parameters_are_typed_with_their_bounds():
    doc = build(OPERATIONS, INGRESS)
    params = {p["name"]: p for p in doc["paths"]["/workspace/versions"]["get"]["parameters"]}
    limit = doc["components"]["schemas"]["Limit"]
    assert params["limit"]["schema"] == {"$ref": PREFIX + "Limit"}
    assert limit["type"] == "integer" and (limit["minimum"], limit["maximum"]) == (1, 200)
    number = doc["paths"]["/workspace/versions/{number}"]["get"]["parameters"][0]
    assert number["in"] == "path" and number["schema"]["type"] == "integer"
    region = {p["name"]: p for p in doc["paths"]["/workspace/document"]["get"]["parameters"]}["region"]
    assert "application/json" in region["content"]
    diff = {p["name"]: p for p in doc["paths"]["/workspace/diff"]["get"]["parameters"]}
    assert diff["from"]["required"] is True and diff["to"]["required"] is False


def test_bodies_with_path_parameters_are_derived_components():
    doc = build(OPERATIONS, INGRESS)
    renew = doc["paths"]["/workspace/leases/{lease_id}/renew"]["post"]
    body = renew["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": PREFIX + "LeaseRenewBody"}
    assert set(doc["components"]["schemas"]["LeaseRenewBody"]["properties"]) == {"ttl_seconds"}
    create = doc["paths"]["/workspace/proposals"]["post"]["requestBody"]
    assert create["required"] is True
    assert create["content"]["application/json"]["schema"] == {"$ref": PREFIX + "ProposalRequest"}


def test_the_room_serves_each_listeners_document_and_the_schema_files(tmp_path):
    from tests.roomproc import start_room

    room = start_room(tmp_path, ROOT / "examples" / "sample.md")
    try:
        r = httpx.get(room.ingress + "/openapi.json", timeout=30)
        assert r.status_code == 200 and r.json() == build(OPERATIONS, INGRESS)
        r = httpx.get(room.owner + "/openapi.json", timeout=30)
        assert r.status_code == 200 and r.json() == build(OPERATIONS, OWNER)
        listing = httpx.get(room.ingress + "/schema", timeout=30).json()["schemas"]
        assert "editing.json" in listing
        r = httpx.get(room.ingress + "/schema/editing.json", timeout=30)
        assert r.status_code == 200 and "Proposal" in r.json()["$defs"]
        r = httpx.get(room.ingress + "/schema/nope", timeout=30)
        assert r.status_code == 404 and r.json()["error"] == "not_found"
    finally:
        room.stop()
