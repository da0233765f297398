"""``ce board``: post, list, assignment, complete (and its exact retry), observe, with exit statuses."""

from __future__ import annotations

import json

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
    page = ok("board", "list", board, "--reply-to", todo["message_id"], *C, schema="boards#MessagesPage")
    assert [m["body"] for m in page["messages"]] == ["done: 1f2e3d4"]
    delta = ok("board", "observe", "-", "--token", base["observation_token"], *C)
    assert [m["kind"] for m in delta["messages"]] == ["answer", "todo"]  # the todo once, in its latest state
