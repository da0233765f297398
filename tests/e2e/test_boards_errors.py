"""Every error code of the board seed, provoked through each adapter that can raise it.

One real room (``ce serve``); each case is one operation with arguments
that must fail with one catalogue code, sent over HTTP (the route the
operation table declares: the catalogue's status and ``error``), MCP
(``tools/call``: an ``isError`` result whose ``structuredContent.error``
is the code) and ``ce board …`` (the catalogue's exit status, the code on
stderr). ``assignment_history_lost`` comes from a board whose todo lost a
direct reply to retention (pruned by the retention sweep while the room
was stopped); ``completion_persistence_uncertain`` from a test-only fault
(``tests/board_faults.py``) that fails a commit after it happened, after
which the exact retry must reconcile through the same adapter.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from commonroom.engine import Engine, board_base
from commonroom.errors import EXIT_CODES, STATUS
from commonroom.operations import OPERATIONS
from tests.board_faults import MARKER
from tests.conftest import SAMPLE
from tests.e2e.test_editing_cli import run
from tests.mcp_wire import Mcp
from tests.roomproc import ROOT, Client, Room, start_room

CAPS = "read,observe,message"
ADAPTERS = ("http", "mcp", "ce")


class Caller:
    """One session, reachable through the three adapters."""

    def __init__(self, room: Room, session_file: Path):
        stored = json.loads(session_file.read_text())
        self.file = str(session_file)
        self.id = stored["session_id"]
        self.http = Client(room, stored["token"], {"id": self.id})
        self.mcp = Mcp(room.ingress, stored["token"])

    def call(self, adapter: str, operation: str, args: dict[str, Any], argv: tuple[str, ...]) -> tuple[str, Any]:
        """``(error code, details)`` of a call expected to fail; ``("", result)`` if it succeeded."""
        if adapter == "http":
            http = OPERATIONS[operation].http
            path, rest = http.path, dict(args)
            for name in http.path_params():
                path = path.replace("{" + name + "}", rest.pop(name))
            r = (self.http.request(http.method, path, params=rest) if http.method == "GET"
                 else self.http.request(http.method, path, json=rest))
            body = r.json()
            if r.status_code < 400:
                return "", body
            assert r.status_code == STATUS[body["error"]], (r.status_code, body)
            return body["error"], body.get("details")
        if adapter == "mcp":
            result = self.mcp.call_tool(operation, args)
            value = result["structuredContent"]
            return (value["error"], value.get("details")) if result["isError"] else ("", value)
        code, out, err = run(*argv, "--session-file", self.file, "--json")
        if code == 0:
            return "", json.loads(out)
        found = [c for c, exit_code in EXIT_CODES.items() if exit_code == code]
        assert found and found[0] in err, (code, err)
        return found[0], err


def _prune_offline(document: Path, board: str) -> None:
    """While the room is stopped: the retention sweep with a bound of 1 (the todo's reply goes)."""
    engine = Engine.open(document)
    saved = board_base.RETAIN_MESSAGES
    board_base.RETAIN_MESSAGES = 1
    try:
        assert engine.sweep_board_retention()["board_messages"] >= 1
    finally:
        board_base.RETAIN_MESSAGES = saved
        engine.close()


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """A room with the fault plugin, C (coordinator), W (worker), R (read only) and their todos."""
    folder = tmp_path_factory.mktemp("board-errors")
    mp = pytest.MonkeyPatch()
    mp.setenv("COMMONROOM_MCP_PLUGINS", "tests.board_faults:register")
    mp.setenv("COMMONROOM_RATE_LIMIT", "100000")
    mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    room = start_room(folder / "room", SAMPLE)
    files = {}
    for name, caps in (("coordinator", CAPS), ("worker", CAPS), ("reader", "read")):
        files[name] = folder / f"{name}.json"
        code, _, err = run("join", room.invite(name, caps), "--session-file", str(files[name]))
        assert code == 0, err
    c = Caller(room, files["coordinator"])
    board_id = c.id

    def post(kind: str, body: str, **extra: Any) -> dict:
        r = c.http.post(f"/workspace/boards/{board_id}/messages", {"kind": kind, "body": body, **extra})
        assert r.status_code == 201, r.text
        return r.json()

    lost = post("todo", "a todo whose reply retention pruned")
    post("guidance", "the reply", reply_to=lost["message_id"])
    post("note", "newer than the reply")
    room = room.restart(between=lambda: _prune_offline(room.document, board_id))
    c, w, reader = (Caller(room, files[n]) for n in ("coordinator", "worker", "reader"))
    large = post("todo", "a todo with too many replies")
    for i in range(board_base.SNAPSHOT_REPLIES + 1):
        post("note", f"reply {i}", reply_to=large["message_id"])
    stale = post("todo", "a todo that changes after it was read")
    stale_fence = w.http.get(f"/workspace/boards/{board_id}/messages/{stale['message_id']}/assignment").json()
    post("guidance", "scope changed", reply_to=stale["message_id"])
    done = post("todo", "a todo completed with key K")
    fence = w.http.get(f"/workspace/boards/{board_id}/messages/{done['message_id']}/assignment").json()
    r = w.http.post(f"/workspace/boards/{board_id}/messages/{done['message_id']}/complete",
                    {"answer": "done", "completion_key": "K", "expected_assignment_fence": fence["assignment_fence"]})
    assert r.status_code == 200, r.text
    uncertain = {adapter: post("todo", f"a todo completed through {adapter} while the disk fails")
                 for adapter in ADAPTERS}
    yield {"room": room, "c": c, "w": w, "reader": reader, "board": board_id, "lost": lost["message_id"],
           "large": large["message_id"], "stale": stale["message_id"], "stale_fence": stale_fence["assignment_fence"],
           "done": done["message_id"], "done_fence": fence["assignment_fence"],
           "uncertain": {a: m["message_id"] for a, m in uncertain.items()}}
    for caller in (c, w, reader):
        caller.mcp.close()
    room.stop()
    mp.undo()


def cases(b: dict) -> dict[str, tuple[str, str, dict[str, Any], tuple[str, ...]]]:
    """code → (who, operation, arguments, ce argv)."""
    board, big = b["board"], "x" * (board_base.BODY_BYTES + 1)
    return {
        "not_found": ("c", "list_session_messages", {"session_id": "s_no_such_session"},
                      ("board", "list", "s_no_such_session")),
        "message_not_found": ("w", "get_session_assignment", {"session_id": board, "message_id": "msg_nope"},
                              ("board", "assignment", board, "msg_nope")),
        "permission_denied": ("reader", "post_session_message", {"session_id": board, "kind": "note", "body": "x"},
                              ("board", "post", board, "note", "x")),
        "invalid_request": ("w", "complete_session_message",
                            {"session_id": board, "message_id": b["stale"], "answer": "a", "completion_key": "k",
                             "expected_assignment_fence": "af1.forged"},
                            ("board", "complete", board, b["stale"], "a", "--key", "k", "--fence", "af1.forged")),
        "limit_exceeded": ("c", "post_session_message", {"session_id": board, "kind": "note", "body": big},
                           ("board", "post", board, "note", big)),
        "assignment_history_lost": ("w", "get_session_assignment", {"session_id": board, "message_id": b["lost"]},
                                    ("board", "assignment", board, b["lost"])),
        "assignment_too_large": ("w", "get_session_assignment", {"session_id": board, "message_id": b["large"]},
                                 ("board", "assignment", board, b["large"])),
        "assignment_stale": ("w", "complete_session_message",
                             {"session_id": board, "message_id": b["stale"], "answer": "a", "completion_key": "k",
                              "expected_assignment_fence": b["stale_fence"]},
                             ("board", "complete", board, b["stale"], "a", "--key", "k", "--fence", b["stale_fence"])),
        "completion_mismatch": ("w", "complete_session_message",
                                {"session_id": board, "message_id": b["done"], "answer": "other", "completion_key": "K",
                                 "expected_assignment_fence": b["done_fence"]},
                                ("board", "complete", board, b["done"], "other", "--key", "K", "--fence",
                                 b["done_fence"])),
        "peer_not_found": ("w", "post_peer_message", {"peer_id": "peer_nope", "kind": "note", "body": "x"},
                           ("board", "peer-post", "peer_nope", "note", "x")),
    }


CODES = ["not_found", "message_not_found", "permission_denied", "invalid_request", "limit_exceeded",
         "assignment_history_lost", "assignment_too_large", "assignment_stale", "completion_mismatch",
         "peer_not_found"]


@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize("code", CODES)
def test_each_code_through_each_adapter(board, code, adapter):
    who, operation, args, argv = cases(board)[code]
    assert code in OPERATIONS[operation].errors or code == "permission_denied"
    got, details = board[who].call(adapter, operation, args, argv)
    assert got == code, (got, details)
    if code == "assignment_stale" and adapter != "ce":
        assert details["state_changed"] is False and details["fresh_assignment_fence"].startswith("af1.")
    if code == "limit_exceeded" and adapter != "ce":
        assert details["limit"] == "body_bytes"


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_persistence_uncertain_then_the_exact_retry_through_each_adapter(board, adapter):
    todo = board["uncertain"][adapter]
    w = board["w"]
    fence = w.http.get(f"/workspace/boards/{board['board']}/messages/{todo}/assignment").json()["assignment_fence"]
    answer = f"done {MARKER} via {adapter}"
    args = {"session_id": board["board"], "message_id": todo, "answer": answer, "completion_key": f"k-{adapter}",
            "expected_assignment_fence": fence}
    argv = ("board", "complete", board["board"], todo, answer, "--key", f"k-{adapter}", "--fence", fence)
    got, details = w.call(adapter, "complete_session_message", args, argv)
    assert got == "completion_persistence_uncertain"
    if adapter != "ce":
        assert (details["failure_kind"], details["retry_same_completion"], details["recovery_kind"]) == (
            "outcome_unknown", True, "retry_same")
    got, again = w.call(adapter, "complete_session_message", args, argv)  # the exact retry reconciles
    assert got == "" and again["replayed"] is True and again["answer"]["body"] == answer
    replies = w.http.get(f"/workspace/boards/{board['board']}/messages", params={"reply_to": todo}).json()
    assert [m["message_id"] for m in replies["messages"]] == [again["answer"]["message_id"]]  # exactly one
