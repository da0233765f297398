"""The published OpenAPI document: valid OpenAPI 3.1, complete, and every $ref resolves."""

from __future__ import annotations

import shutil
from pathlib import Path

from openapi_spec_validator import validate

from commonroom import schemas
from commonroom.http.openapi import build
from commonroom.http.routes import ingress_routes, owner_routes

ROOT = Path(__file__).resolve().parents[2]


def _resolve(document: dict, ref: str):
    assert ref.startswith("#/"), ref
    node = document
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


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


def test_the_document_is_valid_openapi_3_1():
    document = build()
    validate(document)
    assert document["openapi"] == "3.1.0"


def test_every_ref_resolves_into_the_components():
    document = build()
    refs = set(_refs(document))
    assert any(r.endswith("/$defs/Proposal") for r in refs)
    for ref in refs:
        assert isinstance(_resolve(document, ref), dict), ref


def test_every_route_and_method_is_described_with_schemas_that_exist():
    document = build()
    for table in (ingress_routes(None), owner_routes(None)):
        for path, endpoint in table.items():
            for verb, method in endpoint.methods.items():
                operation = document["paths"][path][verb.lower()]
                assert operation["summary"], (verb, path)
                assert method.answer, f"{verb} {path} names no answer schema"
                for name in filter(None, (method.answer, method.schema)):
                    schemas.validator(name)  # KeyError if the schema does not exist
                assert operation["security"] == ([] if endpoint.public else [{"bearer": []}])


def test_the_room_serves_it_and_the_schema_files(tmp_path):
    from tests.roomproc import start_room

    import httpx

    room = start_room(tmp_path, ROOT / "examples" / "sample.md")
    try:
        for base in (room.ingress, room.owner):
            r = httpx.get(base + "/openapi.json", timeout=30)
            assert r.status_code == 200 and r.json() == build()
        listing = httpx.get(room.ingress + "/schema", timeout=30).json()["schemas"]
        assert "editing.json" in listing
        r = httpx.get(room.ingress + "/schema/editing.json", timeout=30)
        assert r.status_code == 200 and "Proposal" in r.json()["$defs"]
        r = httpx.get(room.ingress + "/schema/nope", timeout=30)
        assert r.status_code == 404 and r.json()["error"] == "not_found"
    finally:
        room.stop()
