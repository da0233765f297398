"""ACK piggyback in a real room through MCP: open
``requires_ack`` messages addressed to the caller's session ride in the
result ``_meta`` of any tool call until the request echoes their ids in
``params._meta.ack_session_message_ids``; an echo suppresses the message for
that response only and records the first ACK time; ACK resolves nothing."""

from __future__ import annotations

import sqlite3

import jsonschema

from tests.mcp_wire import META, Mcp

CAPS = "read,observe,message"
KEY = "commonroom/session_messages"


def call(mcp: Mcp, name: str, arguments: dict, acks: list | None = None, **meta):
    extra = {**META, **meta}
    if acks is not None:
        extra["ack_session_message_ids"] = acks
    return mcp.result("tools/call", {"name": name, "arguments": arguments}, meta=extra)


def shown(result: dict) -> list[str]:
    return [m["message_id"] for m in result["_meta"].get(KEY, {}).get("messages", [])]


def test_ack_piggyback_through_mcp(room):
    coordinator = room.join("coordinator", CAPS)
    worker = room.join("worker", CAPS)
    w_id = worker.session["id"]
    c, w = Mcp(room.ingress, coordinator.token), Mcp(room.ingress, worker.token)
    try:
        tools = {t["name"]: t for t in w.result("tools/list")["tools"]}
        # the coordinator posts on W's board: one ACK-required note, one plain note
        urgent = call(c, "post_session_message", {"session_id": w_id, "kind": "guidance", "body": "stop X",
                                                  "requires_ack": True})["structuredContent"]
        plain = call(c, "post_session_message", {"session_id": w_id, "kind": "note", "body": "fyi"})
        assert shown(plain) == []  # addressed to W, not to the coordinator
        # any tool call of W carries it, and structuredContent still matches the outputSchema
        read = call(w, "document_read", {})
        assert shown(read) == [urgent["message_id"]]
        entry = read["_meta"][KEY]
        assert entry["omitted"] == 0 and entry["messages"][0]["body"] == "stop X"
        jsonschema.validate(read["structuredContent"], tools["document_read"]["outputSchema"])
        assert read["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "commonroom"
        again = call(w, "list_session_messages", {"session_id": w_id})
        assert shown(again) == [urgent["message_id"]]  # showing is not an ACK
        # an echo suppresses it for this response only; the tool runs normally
        acked = call(w, "list_session_messages", {"session_id": w_id}, acks=[urgent["message_id"], "msg_unknown", 7])
        assert shown(acked) == [] and not acked["isError"]
        assert len(acked["structuredContent"]["messages"]) == 2
        later = call(w, "document_read", {})
        assert shown(later) == [urgent["message_id"]]
        # an error result carries it too; ACK resolved nothing and advanced nothing
        error = call(w, "get_session_assignment", {"session_id": w_id, "message_id": "msg_nope"})
        assert error["isError"] and shown(error) == [urgent["message_id"]]
        status = call(w, "list_session_messages", {"session_id": w_id, "message_id": urgent["message_id"]})
        assert status["structuredContent"]["messages"][0]["status"] == "open"
        # the coordinator's ACK of W's message records nothing (not addressed to it)
        call(c, "document_read", {}, acks=[urgent["message_id"]])
        # the first ACK time is kept, once
        call(w, "document_read", {}, acks=[urgent["message_id"]])
    finally:
        c.close()
        w.close()
    con = sqlite3.connect(str(room.document.with_name(room.document.name + ".commonroom.db")))
    try:
        rows = con.execute("SELECT session_id, message_id FROM board_ack").fetchall()
        audit = con.execute("SELECT operation, outcome, details FROM board_audit ORDER BY id").fetchall()
    finally:
        con.close()
    assert rows == [(w_id, urgent["message_id"])]
    # every board tool call is audited, metadata only
    assert [a[:2] for a in audit][:2] == [("post_session_message", "ok")] * 2
    assert ("get_session_assignment", "message_not_found") in [a[:2] for a in audit]
    assert not any("stop X" in a[2] or "fyi" in a[2] for a in audit)


def test_recording_session_id_in_meta(room):
    worker = room.join("worker", CAPS)
    w_id = worker.session["id"]
    w = Mcp(room.ingress, worker.token)
    try:
        posted = call(w, "post_session_message", {"session_id": w_id, "kind": "note", "body": "x"},
                      recording_session_id=w_id)
        assert not posted["isError"] and posted["structuredContent"]["author_session_id"] == w_id
        foreign = call(w, "post_session_message", {"session_id": w_id, "kind": "note", "body": "x"},
                       recording_session_id="s_nobody")
        assert foreign["isError"] and foreign["structuredContent"]["error"] == "permission_denied"
    finally:
        w.close()
