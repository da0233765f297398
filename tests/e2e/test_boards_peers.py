"""Peers in a real room through MCP: peer_awareness after
meaningful activity of another session of the same participant (once per
observer and peer), post_peer_message piggybacked once (requires_ack=false)
or until ACKed (true), and a foreign participant's peer id revealing nothing."""

from __future__ import annotations

import sqlite3

from tests.mcp_wire import META, Mcp

CAPS = "read,observe,message"


def call(mcp: Mcp, name: str, arguments: dict, acks: list | None = None):
    meta = dict(META)
    if acks is not None:
        meta["ack_session_message_ids"] = acks
    return mcp.result("tools/call", {"name": name, "arguments": arguments}, meta=meta)


def peer_messages(result: dict) -> list[dict]:
    return result["_meta"].get("commonroom/peer_messages", [])


def test_peer_awareness_messages_and_acks(room):
    w1, w2 = room.join("worker", CAPS), room.join("worker", CAPS)
    c = room.join("coordinator", CAPS)
    m1, m2, mc = Mcp(room.ingress, w1.token), Mcp(room.ingress, w2.token), Mcp(room.ingress, c.token)
    try:
        assert "commonroom/peer_awareness" not in call(m1, "document_read", {})["_meta"]  # no activity yet
        # W2 does something meaningful (a write); W1 learns of it once
        call(m2, "post_session_message", {"session_id": w2.session["id"], "kind": "progress", "body": "on it"})
        aware = call(m1, "document_read", {})["_meta"]["commonroom/peer_awareness"]
        assert len(aware) == 1 and aware[0]["peer_id"].startswith("peer_")
        p2 = aware[0]["peer_id"]
        assert "commonroom/peer_awareness" not in call(m1, "document_read", {})["_meta"]  # deduplicated
        assert "commonroom/peer_awareness" not in call(mc, "document_read", {})["_meta"]  # another participant
        # requires_ack=false: once
        sent = call(m1, "post_peer_message", {"peer_id": p2, "kind": "question", "body": "which branch?"})
        assert not sent["isError"] and sent["structuredContent"]["peer_id"] == p2
        first = peer_messages(call(m2, "document_read", {}))
        assert [m["body"] for m in first] == ["which branch?"] and first[0]["from_peer_id"].startswith("peer_")
        p1 = first[0]["from_peer_id"]
        assert peer_messages(call(m2, "document_read", {})) == []
        # requires_ack=true: until ACKed; an echo suppresses it and records the ACK
        urgent = call(m2, "post_peer_message", {"peer_id": p1, "kind": "risk", "body": "do not push",
                                                "requires_ack": True})["structuredContent"]
        assert [m["message_id"] for m in peer_messages(call(m1, "document_read", {}))] == [urgent["message_id"]]
        assert [m["message_id"] for m in peer_messages(call(m1, "document_read", {}))] == [urgent["message_id"]]
        assert peer_messages(call(m1, "document_read", {}, acks=[urgent["message_id"]])) == []
        assert peer_messages(call(m1, "document_read", {})) == []
        # a foreign participant's peer id, an unknown one and one's own: the same refusal, nothing revealed
        for who, peer in ((mc, p2), (mc, "peer_0000"), (m1, "peer_nope")):
            refused = call(who, "post_peer_message", {"peer_id": peer, "kind": "note", "body": "x"})
            assert refused["isError"] and refused["structuredContent"]["error"] == "peer_not_found"
            assert refused["structuredContent"]["details"] == {"peer_id": peer}
        assert peer_messages(call(m2, "document_read", {})) == []  # nothing reached W2 from the refusals
    finally:
        for m in (m1, m2, mc):
            m.close()
    con = sqlite3.connect(str(room.document.with_name(room.document.name + ".commonroom.db")))
    try:
        rows = con.execute("SELECT body, requires_ack, projection_count, first_acked_at IS NOT NULL "
                           "FROM peer_message ORDER BY created_at").fetchall()
        audit = con.execute("SELECT outcome FROM board_audit WHERE operation = 'post_peer_message'").fetchall()
    finally:
        con.close()
    assert rows == [("which branch?", 0, 1, 0), ("do not push", 1, 2, 1)]
    assert [a[0] for a in audit] == ["ok", "ok", "peer_not_found", "peer_not_found", "peer_not_found"]
