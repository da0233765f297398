"""Which requests the room's front door answers, derived from the operation table (commonroom/front/routes.py)."""

from __future__ import annotations

from dataclasses import replace

from commonroom.front import front_routes
from commonroom.front.reads import CachedRead
from commonroom.front.toolcalls import CachedToolCall
from commonroom.front.writes import DirectWrite
from commonroom.http.answers import AnswerCache
from commonroom.operations import INGRESS, OPERATIONS, OWNER, Table


def kinds(routes) -> dict[tuple[str, str], type]:
    return {(method, path): type(door) for path, doors in routes.items() for method, door in doors.items()}


def test_the_doors_are_the_tables_cached_reads_writes_and_cached_tools():
    got = kinds(front_routes(OPERATIONS, INGRESS, None, None, AnswerCache(), {"/mcp": None}))
    writes = {(op.http.method, op.http.path) for op in OPERATIONS.http(INGRESS)
              if not op.read_only and not op.streams and not op.http.public and op.http.cache is None}
    assert {key for key, kind in got.items() if kind is DirectWrite} == writes
    assert {key for key, kind in got.items() if kind is CachedRead} == {("GET", "/workspace/document"),
                                                                      ("GET", "/workspace/document/rendered"),
                                                                      ("GET", "/workspace/document/outline")}
    assert {key for key, kind in got.items() if kind is CachedToolCall} == {("POST", "/mcp")}
    assert ("POST", "/workspace/join") not in got, "a public operation is the app's"
    assert ("GET", "/workspace/observe") not in got, "a stream is the app's"
    door = front_routes(OPERATIONS, INGRESS, None, None, AnswerCache(), {"/mcp": None})["/mcp"]["POST"]
    assert set(door.ops) == {"document_read"}


def test_a_declaration_is_all_it_takes():
    table = Table([replace(op, mcp=replace(op.mcp, cache="head")) if op.name == "versions_list" else op
                   for op in OPERATIONS])
    door = front_routes(table, INGRESS, None, None, AnswerCache(), {"/mcp": None})["/mcp"]["POST"]
    assert set(door.ops) == {"document_read", "versions_list"}
    assert kinds(front_routes(table, INGRESS, None, None, AnswerCache())).get(("POST", "/mcp")) is None, \
        "no MCP routes, no tool door"
    owner = kinds(front_routes(table, OWNER, None, None, AnswerCache()))
    assert all((method, path) in {(op.http.method, op.http.path) for op in table.http(OWNER)}
               for method, path in owner)
