"""``completion/complete`` through a real room: heading paths, version numbers, proposal ids.

Every answer validates against the official schema (``CompleteResult``);
params that do not match ``mcp#CompleteParams`` are -32602 before the
method runs; an unknown prompt or template is -32602; an argument without
a source answers no values.
"""

from __future__ import annotations

import pytest

from commonroom.mcp.resources import VERSION_TEMPLATE
from tests.mcp_schema import check
from tests.mcp_wire import Mcp, rpc_error
from tests.roomproc import start_room

TEXT = ("# Plan\n\nintro\n\n## Goals\n\n- ship\n\n### Stretch goals\n\n- more\n\n"
        "## Open questions\n\n1. none\n")


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    r = start_room(tmp_path_factory.mktemp("completions"), text=TEXT)
    yield r
    r.stop()


@pytest.fixture(scope="module")
def writer(room):
    client = room.join("writer", "read,propose,write")
    # versions 2 and 3, and two proposals (one withdrawn)
    for n in (2, 3):
        r = client.request("PUT", "/workspace/document", json={
            "expected_version": n - 1, "text": f"- v{n}\n", "region": {"lines": [7, 7]}})
        assert r.status_code in (200, 201), r.text
    ids = []
    for summary in ("first", "second"):
        r = client.post("/workspace/proposals", {"base_version": 3, "summary": summary, "text": "- p\n",
                                                 "region": {"heading": ["Open questions"]}})
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])
    r = client.post(f"/workspace/proposals/{ids[0]}/withdraw", {})
    assert r.status_code == 200, r.text
    return client, ids


@pytest.fixture(scope="module")
def mcp(room, writer):
    reader = room.join("completer", "read")
    caller = Mcp(room.ingress, reader.token)
    yield caller
    caller.close()


def complete(mcp, ref, name, value="", context=None):
    params = {"ref": ref, "argument": {"name": name, "value": value}}
    if context is not None:
        params["context"] = {"arguments": context}
    response = mcp.post("completion/complete", params)
    check("CompleteResultResponse", response.json())
    result = response.json()["result"]
    check("CompleteResult", result)
    assert result["resultType"] == "complete"
    return result["completion"]


def prompt(name):
    return {"type": "ref/prompt", "name": name}


def test_heading_paths_of_the_head(mcp):
    got = complete(mcp, prompt("draft_section"), "heading")
    assert got["values"] == ["Plan", "Plan > Goals", "Plan > Goals > Stretch goals", "Plan > Open questions"]
    assert got["total"] == 4 and got["hasMore"] is False
    # prefix matches first, then the rest that contain the value (case-insensitive)
    assert complete(mcp, prompt("draft_section"), "heading", "plan > g")["values"] == [
        "Plan > Goals", "Plan > Goals > Stretch goals"]
    assert complete(mcp, prompt("draft_section"), "heading", "GOALS")["values"] == [
        "Plan > Goals", "Plan > Goals > Stretch goals"]
    assert complete(mcp, prompt("draft_section"), "heading", "nothing like it")["values"] == []


def test_version_numbers_for_the_prompt_and_the_template(mcp):
    assert complete(mcp, prompt("summarize_changes"), "since_version")["values"] == ["3", "2", "1"]
    assert complete(mcp, prompt("summarize_changes"), "since_version", "2")["values"] == ["2"]
    template = {"type": "ref/resource", "uri": VERSION_TEMPLATE}
    assert complete(mcp, template, "number")["values"] == ["3", "2", "1"]


def test_proposal_ids_open_first(mcp, writer):
    _, (withdrawn, open_one) = writer
    got = complete(mcp, prompt("review_proposal"), "proposal_id")
    assert got["values"] == [open_one, withdrawn]
    assert complete(mcp, prompt("review_proposal"), "proposal_id", open_one[:-1])["values"][0] == open_one


def test_undeclared_or_sourceless_arguments_answer_nothing(mcp):
    assert complete(mcp, prompt("draft_section"), "instructions") == {"values": [], "total": 0, "hasMore": False}
    assert complete(mcp, prompt("draft_section"), "proposal_id")["values"] == []


@pytest.mark.parametrize("params", [
    {"ref": {"type": "ref/prompt", "name": "no_such_prompt"}, "argument": {"name": "x", "value": ""}},
    {"ref": {"type": "ref/resource", "uri": "commonroom://workspace/nothing/{x}"},
     "argument": {"name": "x", "value": ""}},
    {"ref": {"type": "ref/prompt", "name": "draft_section"}},
    {"ref": {"type": "ref/prompt"}, "argument": {"name": "heading", "value": ""}},
    {"ref": {"type": "ref/other", "name": "x"}, "argument": {"name": "heading", "value": ""}},
    {"ref": {"type": "ref/prompt", "name": "draft_section"}, "argument": {"name": "heading", "value": 3}},
    {"ref": {"type": "ref/prompt", "name": "draft_section"}, "argument": {"name": "heading", "value": ""},
     "context": {"arguments": {"a": 1}}},
])
def test_bad_params_are_invalid_params(mcp, params):
    response = mcp.post("completion/complete", params)
    assert response.status_code == 200
    assert rpc_error(response)["code"] == -32602


def test_a_session_without_read_is_refused(room):
    client = room.join("observer-only", "observe")
    caller = Mcp(room.ingress, client.token)
    try:
        error = rpc_error(caller.post("completion/complete", {"ref": prompt("draft_section"),
                                                              "argument": {"name": "heading", "value": ""}}))
        assert error["data"]["error"] == "permission_denied"
    finally:
        caller.close()
