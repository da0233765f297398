"""Every list is paged: 1..200 items, default 50, a cursor.

With more than 200 live leases in a real room, ``GET /workspace/leases``,
the MCP ``leases_list`` tool, the ``commonroom://workspace/leases`` resource
(and its ``?cursor={cursor}`` next-page template) and ``ce lease list`` each
answer one page and a ``next_cursor`` that walks the whole list once, in the
same order. The table itself is checked too: every operation that answers a
list takes ``limit`` and ``cursor`` and answers ``next_cursor``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest
from typer.testing import CliRunner

from commonroom.cli.main import app
from commonroom.operations.table import OPERATIONS
from commonroom.schemas import errors_of, load_all
from tests.conftest import SAMPLE
from tests.mcp_wire import Mcp, rpc_error
from tests.roomproc import start_room

LEASES = 206
WS = "commonroom://workspace/"


@pytest.fixture(scope="module")
def leased(tmp_path_factory):
    """A room where alice holds 206 live leases; yields (room, alice, session file, lease ids in order)."""
    folder = tmp_path_factory.mktemp("paged")
    room = start_room(folder, SAMPLE)
    try:
        alice = room.join("alice", "read,lease")
        ids = []
        for i in range(LEASES):
            r = alice.post("/workspace/leases", {"region": {"lines": [1 + i % 5, 1 + i % 5]}, "ttl_seconds": 3600})
            assert r.status_code == 201, r.text
            ids.append(r.json()["id"])
        session_file = folder / "alice.session.json"
        result = CliRunner().invoke(app, ["join", room.invite("alice", "read,lease"),
                                          "--session-file", str(session_file)])
        assert result.exit_code == 0, result.output
        yield room, alice, session_file, ids
    finally:
        room.stop()


def walk(first: Callable[[int, str | None], dict[str, Any]], limit: int) -> tuple[list[str], list[int]]:
    """Follow ``next_cursor`` from the first page; the ids and each page's size."""
    ids: list[str] = []
    sizes: list[int] = []
    cursor = None
    for _ in range(LEASES + 2):
        page = first(limit, cursor)
        assert errors_of("editing#LeasesPage", page) == [], page
        ids += [lease["id"] for lease in page["leases"]]
        sizes.append(len(page["leases"]))
        cursor = page["next_cursor"]
        if cursor is None:
            return ids, sizes
    raise AssertionError("next_cursor never ended")


def test_http_leases_are_paged(leased):
    room, _, _, ids = leased
    alice = room.join("reader", "read")  # a fresh bearer: 600 requests a minute each

    def page(limit: int | None, cursor: str | None) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if limit is not None:
            params["limit"] = limit
        if cursor is not None:
            params["cursor"] = cursor
        r = alice.get("/workspace/leases", params=params)
        assert r.status_code == 200, r.text
        return r.json()

    one = page(1, None)
    assert [x["id"] for x in one["leases"]] == ids[:1] and one["next_cursor"]
    assert len(page(None, None)["leases"]) == 50  # the default
    assert walk(page, 200) == (ids, [200, 6])
    assert walk(page, 1)[0] == ids
    assert walk(page, 50)[1] == [50, 50, 50, 50, 6]
    # The owner port pages the same list.
    operator = room.operator()
    r = operator.get("/workspace/leases", params={"limit": 3})
    assert r.status_code == 200 and [x["id"] for x in r.json()["leases"]] == ids[:3]
    for bad in ("0", "201", "-1", "x", "1.5", "１"):
        r = alice.get("/workspace/leases", params={"limit": bad})
        assert r.status_code == 400 and r.json()["error"] == "invalid_request", (bad, r.text)
    for bad in ("garbage!", "bm90IGpzb24", "WzFd"):  # not base64, not JSON, the wrong shape
        r = alice.get("/workspace/leases", params={"cursor": bad})
        assert r.status_code == 400 and r.json()["error"] == "invalid_request", (bad, r.text)


def test_mcp_tool_and_resource_are_paged(leased):
    room, _, _, ids = leased
    alice = room.join("reader", "read")
    mcp = Mcp(room.ingress, alice.token)
    try:
        def tool(limit: int, cursor: str | None) -> dict[str, Any]:
            arguments: dict[str, Any] = {"limit": limit}
            if cursor is not None:
                arguments["cursor"] = cursor
            result = mcp.call_tool("leases_list", arguments)
            assert result["isError"] is False, result
            return result["structuredContent"]

        assert walk(tool, 1)[0] == ids
        assert walk(tool, 200) == (ids, [200, 6])
        refused = mcp.call_tool("leases_list", {"limit": 201})
        assert refused["isError"] is True
        refused = mcp.call_tool("leases_list", {"cursor": "garbage!"})
        assert refused["isError"] is True and refused["structuredContent"]["error"] == "invalid_request"

        def resource(limit: int, cursor: str | None) -> dict[str, Any]:
            uri = WS + "leases" + (f"?cursor={cursor}" if cursor else "")
            [content] = mcp.result("resources/read", {"uri": uri})["contents"]
            assert content["uri"] == uri and content["mimeType"] == "application/json"
            return json.loads(content["text"])

        assert walk(resource, 200) == (ids, [200, 6])
        error = rpc_error(mcp.post("resources/read", {"uri": WS + "leases?cursor=garbage!"}))
        assert error["code"] == -32602, error
        templates = [t["uriTemplate"] for t in mcp.result("resources/templates/list")["resourceTemplates"]]
        assert WS + "leases?cursor={cursor}" in templates
        # The other list resources follow their cursor the same way.
        for name, key in (("participants", "participants"), ("proposals", "proposals")):
            [content] = mcp.result("resources/read", {"uri": WS + name})["contents"]
            first = json.loads(content["text"])
            assert key in first and "next_cursor" in first
    finally:
        mcp.close()


def test_ce_lease_list_is_paged(leased):
    _, _, session_file, ids = leased

    def page(limit: int, cursor: str | None) -> dict[str, Any]:
        args = ["lease", "list", "--limit", str(limit), "--session-file", str(session_file), "--json"]
        if cursor is not None:
            args += ["--cursor", cursor]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    assert walk(page, 200) == (ids, [200, 6])
    assert len(page(50, None)["leases"]) == 50
    result = CliRunner().invoke(app, ["lease", "list", "--limit", "201", "--session-file", str(session_file), "--json"])
    assert result.exit_code != 0 and json.loads(result.stderr)["error"] == "invalid_request"




#: Answers that hold records but are not cursor-paged lists (and why).
BOUNDED = {"proposal_review": "the hunks where one proposal's change overlaps the head's: bounded by the document",
           "get_session_assignment": "the todo and at most 200 direct replies; assignment_too_large beyond (DESIGN.md)",
           "observe_session_messages": "paged by its observation token: at most 100 messages and has_more (the seed)",
           "list_session_peers": "the caller's own peers active in the last 10 minutes and at most the 200 peer "
                                 "messages retained for it (the per-recipient bound, docs/boards.md)",
           "document_render": "the headings of the one document it renders, bounded by the document's size",
           "document_outline": "the headings of the one document, bounded by the document's size",
           "workspace_status": "its transports are the room's listeners, one per transport plugin it serves "
                               "(the operator's view)"}


def test_every_list_in_the_table_is_paged():
    """An operation whose answer holds an array of records takes limit and cursor and answers next_cursor."""
    schemas = load_all()

    def resolve(ref: str) -> dict[str, Any]:
        file, _, name = ref.partition("#")
        return schemas[file + ".json"]["$defs"][name]

    lists = []
    for op in OPERATIONS:
        answer = resolve(op.answer)
        arrays = [k for k, v in answer.get("properties", {}).items()
                  if v.get("type") == "array" and "$ref" in v.get("items", {})]  # records, not a line span
        if not arrays or op.name in BOUNDED:
            continue
        lists.append(op.name)
        inputs = resolve(op.input).get("properties", {})
        assert {"limit", "cursor"} <= set(inputs), op.name
        assert "next_cursor" in answer["required"], op.name
        assert {"limit", "cursor"} <= {a if isinstance(a, str) else a.name for a in op.args}, op.name
    assert {"leases_list", "versions_list", "proposals_list", "participants_list", "workspace_history"} <= set(lists)
