"""``ce board``: post, list, assignment, complete (and its exact retry), observe, with exit statuses."""

from __future__ import annotations

import json
import sqlite3

from commonroom.errors import EXIT_CODES
from commonroom.schemas import errors_of
from tests.e2e.test_editing_cli import run


def test_ce_board_flow(room, tmp_path):
    files = {}
    for name in ("coordinator", "worker"):
        files[name] = str(tmp_path / f"{name}.json")
        code, out, err = run("join", room.invite(name, "read,observe,message"), "--session-file", files[name])
        assert code == 0, err
    C, W = ("--session-file", files["coordinator"]), ("--session-file", files["worker"])

    def ok(*args, schema=None):
        code, out, err = run(*args, "--json")
        assert code == 0, (args, out, err)
        body = json.loads(out)
        if schema:
            assert errors_of(schema, body) == [], body
        return body

    base = ok("board", "observe", "-", *C, schema="boards#Observation")
    todo = ok("board", "post", "-", "todo", "Implement X", "--tag", "impl", *C, schema="boards#Message")
    board = todo["session_id"]
    assignment = ok("board", "assignment", board, todo["message_id"], *W, schema="boards#Assignment")
    args = ("board", "complete", board, todo["message_id"], "done: 1f2e3d4", "--key", "W-1",
            "--fence", assignment["assignment_fence"], *W)
    done = ok(*args, schema="boards#Completion")
    assert ok(*args)["replayed"] is True and done["replayed"] is False
    code, out, _ = run("board", "complete", board, todo["message_id"], "other", "--key", "W-1",
                       "--fence", assignment["assignment_fence"], *W, "--json")
    assert code == EXIT_CODES["completion_mismatch"]
    code, _, err = run("board", "ack", "msg_nonesuch", *C)  # the hint lists the board it looked in, by its id
    assert code == EXIT_CODES["message_not_found"] and f"ce board list {board}" in err and "BOARD" not in err, err
    # another answer to the resolved todo: the hint reads the todo and its answer, never "complete it again"
    code, _, err = run("board", "complete", board, todo["message_id"], "late", "--key", "W-2", *W)
    assert code == EXIT_CODES["assignment_stale"] and err.count("\n") == 1, err
    assert "new fence" not in err and f"ce board assignment {board} {todo['message_id'][:12]}" in err, err
    page = ok("board", "list", board, "--reply-to", todo["message_id"], *C, schema="boards#MessagesPage")
    assert [m["body"] for m in page["messages"]] == ["done: 1f2e3d4"]
    delta = ok("board", "observe", "-", "--token", base["observation_token"], *C)
    assert [m["kind"] for m in delta["messages"]] == ["answer", "todo"]  # the todo once, in its latest state


def test_ce_board_peers_and_peer_post(room, tmp_path):
    files = {}
    for name, who in (("w1", "worker"), ("w2", "worker"), ("other", "someone")):
        files[name] = str(tmp_path / f"{name}.json")
        code, out, err = run("join", room.invite(who, "read,observe,message"), "--session-file", files[name])
        assert code == 0, err
    W1, W2, O = (("--session-file", files[n]) for n in ("w1", "w2", "other"))

    def ok(*args):
        code, out, err = run(*args, "--json")
        assert code == 0, (args, out, err)
        body = json.loads(out)
        return body

    assert ok("board", "peers", *W1) == {"peers": [], "messages": []}  # W2 has done nothing meaningful yet
    ok("board", "post", "-", "progress", "on it", *W2)  # meaningful activity of W2
    peers = ok("board", "peers", *W1)
    assert errors_of("boards#PeersView", peers) == [] and len(peers["peers"]) == 1
    assert ok("board", "peers", *W1)["peers"] == peers["peers"]  # an explicit read: not deduplicated
    assert ok("board", "peers", *O)["peers"] == []  # another participant sees no peer of W's
    p2 = peers["peers"][0]["peer_id"]
    sent = ok("board", "peer-post", p2, "question", "which branch?", "--tag", "q", "--requires-ack", *W1)
    assert errors_of("boards#PeerMessage", sent) == [] and sent["requires_ack"] is True
    inbox = ok("board", "peers", *W2)["messages"]
    assert [(m["body"], m["tags"], m["first_acked_at"]) for m in inbox] == [("which branch?", ["q"], None)]
    assert ok("board", "peers", *W2)["messages"] == inbox  # reading records nothing
    code, _, err = run("board", "peer-post", p2, "note", "hi", *O)  # a foreign participant's peer id
    assert code == EXIT_CODES["peer_not_found"] and "peer_not_found" in err
    code, _, err = run("board", "peer-post", p2, "note", "x" * (16 * 1024 + 1), *W1, "--json")
    assert code == EXIT_CODES["limit_exceeded"] and "body_bytes" in err
    con = sqlite3.connect(str(room.document.with_name(room.document.name + ".commonroom.db")))
    try:
        audit = con.execute("SELECT outcome, details FROM board_audit WHERE operation = 'list_session_peers' "
                            "ORDER BY id").fetchall()
    finally:
        con.close()
    assert len(audit) == 6 and all(outcome == "ok" for outcome, _ in audit)
    assert json.loads(audit[-1][1]) == {"peers": 0, "returned": 1}  # counts only, never a body
    # for people: a table of peers and one of the messages kept, whole peer ids (peer-post takes them), no JSON
    code, out, err = run("board", "peers", *W1)
    assert code == 0 and p2 in out and "[" not in out and "{" not in out, (out, err)
    code, out, err = run("board", "peers", *W2)
    assert code == 0 and "which branch?" in out and "question" in out and "not acked" in out, (out, err)
    code, out, err = run("board", "peers", *O)
    assert code == 0 and "no peer" in out and "[]" not in out, (out, err)
    code, out, err = run("board", "peer-post", p2, "note", "see you", *W1)
    assert code == 0 and "see you" in out and "{" not in out and "\n" not in out.rstrip("\n"), (out, err)
