"""A participant with a session file alone, through a real room: ``ce sessions``, the rough edges of the
tryout, and errors that stay one line (docs/operator.md, *Sessions and Revoke*, *One addressing rule*).

One room for the module (its tests each join participants of their own, so each stands alone and in any
order), served with the conformance fixture tools so that a tool's task can ask for input; the remote side
runs the installed ``ce`` with an empty config home of its own (no FILE, no other room's session).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from commonroom.protocol import META_CAPABILITIES, TASKS_EXTENSION
from tests.conftest import SAMPLE
from tests.mcp_wire import META, Mcp
from tests.roomproc import Room, ce, ce_path, plugin_env, start_room

#: The ``_meta`` of an MCP call that declares the tasks extension (a task-running tool then answers a task).
EXT = {**META, META_CAPABILITIES: {"extensions": {TASKS_EXTENSION: {}}}}


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    r = start_room(tmp_path_factory.mktemp("room"), SAMPLE, env=plugin_env("tests.conformance.mcp.fixtures:register"))
    yield r
    r.stop()


@pytest.fixture
def remote(tmp_path) -> dict[str, str]:
    """The environment of a colleague's machine: a config home of its own, no COMMONROOM_SESSION."""
    return {"XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path), "COMMONROOM_SESSION": ""}


def join(room: Room, env: dict[str, str], name: str, caps: str, path: Path | None = None, **extra: Any) -> list[str]:
    """``ce join`` a fresh invitation, into ``path`` or the default place: the arguments naming that session."""
    where = ["--session-file", str(path)] if path is not None else []
    done = ce("join", room.invite(name, caps, **extra), *where, env=env)
    assert done.returncode == 0, done.stderr
    return where


def session_of(env: dict[str, str], where: list[str]) -> dict[str, Any]:
    """The stored session ``where`` names (the default one when empty)."""
    if where:
        return json.loads(Path(where[1]).read_text())
    [path] = (Path(env["XDG_CONFIG_HOME"]) / "commonroom" / "sessions").glob("*.json")
    return json.loads(path.read_text())


def one_line(done: subprocess.CompletedProcess, code: str) -> str:
    """The refusal of a command: nothing on stdout, exactly one line on stderr naming ``code``, no traceback."""
    assert done.returncode != 0 and done.stdout == "", (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"ce: {code}: "), done.stderr
    return done.stderr


def test_a_participant_lists_the_live_sessions(room, remote, tmp_path):
    alice = join(room, remote, "alice-s", "read,message")  # the default session: no --session-file
    bob = join(room, remote, "bob-s", "read,observe", tmp_path / "bob.json")
    alice_id, bob_id = session_of(remote, alice)["session_id"], session_of(remote, bob)["session_id"]
    shown = ce("sessions", env=remote)
    assert shown.returncode == 0, shown.stderr
    assert re.search(rf"{alice_id}\s+alice-s\s+read, message\s+in 30d", shown.stdout), shown.stdout
    assert re.search(rf"{bob_id}\s+bob-s\s+read, observe\s+in 30d", shown.stdout), shown.stdout
    page = json.loads(ce("sessions", *bob, "--json", env=remote).stdout)
    assert "token" not in json.dumps(page) and "crs_" not in json.dumps(page)
    owners = json.loads(ce("sessions", str(room.document), "--json").stdout)  # the owner's FILE form: the same
    assert [s["session"]["id"] for s in page["sessions"]] == [s["session"]["id"] for s in owners["sessions"]]
    # a start of another's id as ce sessions prints it addresses that session's board
    posted = ce("board", "post", bob_id[2:10] + "…", "note", "the sessions list works", *alice, "--json", env=remote)
    assert posted.returncode == 0, posted.stderr
    assert json.loads(posted.stdout)["session_id"] == bob_id
    # the route needs read, as every read does
    blind = room.join("blind-s", "message")
    assert blind.get("/workspace/sessions").json()["error"] == "permission_denied"
    assert room.join("sees-s", "read").get("/workspace/sessions", params={"limit": 0}).json()["error"] == \
        "invalid_request"


def test_a_version_diff_without_a_difference_says_so(room, remote, tmp_path):
    reader = join(room, remote, "differ", "read", tmp_path / "differ.json")
    done = ce("version", "diff", "1", "1", *reader, env=remote)
    assert done.returncode == 0 and done.stdout == "", done  # piped: the empty diff
    assert done.stderr == f"{room.document.name}: no difference between v1 and v1\n"
    wrong = ce("version", "diff", "nine", *reader, env=remote)  # no such version, and no FILE of that name here
    assert "is neither a version" in one_line(wrong, "invalid_request")


def test_board_ack_takes_a_board_and_acknowledges_peer_messages(room, remote, tmp_path):
    worker = join(room, remote, "acker", "read,message", tmp_path / "w1.json")
    window = join(room, remote, "acker", "read,message", tmp_path / "w2.json")  # another window of the same one
    worker_id = session_of(remote, worker)["session_id"]
    other = room.join("poster", "read,message")
    posted = other.post(f"/workspace/boards/{worker_id}/messages", {"kind": "question", "body": "Seen?",
                                                                    "requires_ack": True}).json()
    acked = ce("board", "ack", "-", posted["message_id"][:12], *worker, env=remote)
    assert acked.returncode == 0, acked.stderr
    assert re.search(r"question msg_\w+ \(normal, open, acked just now\) by poster: Seen\?", acked.stdout), acked.stdout
    foreign = ce("board", "ack", other.session["id"], posted["message_id"], *worker, env=remote)
    assert "only the session a message is addressed to acknowledges it" in one_line(foreign, "invalid_request")
    # a peer message asking for an ACK, acknowledged by its id as ce board peers prints it
    assert ce("board", "post", "-", "note", "on it", *worker, env=remote).returncode == 0  # active: a peer to see
    peers = json.loads(ce("board", "peers", *window, "--json", env=remote).stdout)["peers"]
    assert len(peers) == 1, peers
    sent = ce("board", "peer-post", peers[0]["peer_id"], "question", "Lunch?", "--requires-ack", *window, "--json",
              env=remote)
    assert sent.returncode == 0, sent.stderr
    message_id = json.loads(sent.stdout)["message_id"]
    done = ce("board", "ack", message_id[:10] + "…", *worker, env=remote)
    assert done.returncode == 0, done.stderr
    assert re.search(r"question pmsg_\w+ from peer_\w+ \(normal, acked just now\): Lunch\?", done.stdout), done.stdout
    kept = json.loads(ce("board", "peers", *worker, "--json", env=remote).stdout)["messages"]
    assert [m["first_acked_at"] is not None for m in kept if m["message_id"] == message_id] == [True]
    gone = ce("board", "ack", "pmsg_0000", *worker, env=remote)
    assert "next: list the peer messages kept for you with ce board peers" in one_line(gone, "message_not_found")


def test_hints_never_spell_out_the_default_session_file(room, remote, tmp_path):
    config = remote["XDG_CONFIG_HOME"]
    nobody = ce("proposal", "list", env=remote)  # nothing stored yet
    line = one_line(nobody, "invalid_request")
    assert "join the room first with ce join TOKEN" in line and config not in line
    join(room, remote, "hinted", "read,message")
    missing = one_line(ce("proposal", "show", "pr_00000000", env=remote), "proposal_not_found")
    assert missing.endswith("next: list the proposals with ce proposal list\n") and config not in missing
    board = one_line(ce("board", "list", "s_000000…", env=remote), "not_found")
    assert board.endswith("next: list the live sessions (each one's board) with ce sessions\n"), board
    named = join(room, remote, "hinted-too", "read", tmp_path / "named.json")  # a file given: hints repeat it
    again = one_line(ce("proposal", "show", "pr_00000000", *named, env=remote), "proposal_not_found")
    assert again.endswith(f"ce proposal list --session-file {named[1]}\n"), again
    session = session_of(remote, [])["session_id"]
    assert ce("revoke", str(room.document), "--session", session).returncode == 0
    revoked = one_line(ce("sessions", env=remote), "unauthorized")
    assert revoked.endswith("next: join again with a fresh invitation (ce join TOKEN)\n"), revoked


def _observed(room: Room, where: list[str], env: dict[str, str], act: Any) -> str:
    """``ce observe``'s lines while ``act()`` runs (it starts once the observer is connected)."""
    observer = subprocess.Popen([ce_path(), "observe", *where], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env={**os.environ, **env})
    try:
        time.sleep(1.5)  # connected: what follows is live
        act()
        time.sleep(2.5)
    finally:
        observer.terminate()
        out, _ = observer.communicate(timeout=10)
    return out


def test_observe_quotes_questions_answers_and_results(room, remote, tmp_path):
    owner = join(room, remote, "asker", "read,observe,handoff", tmp_path / "owner.json")
    token = session_of(remote, owner)["token"]
    worker = room.join("doer", "read,handoff")
    caller = Mcp(room.ingress, token)

    def act() -> None:
        made = ce("handoff", "create", "--summary", "tidy the intro", "--assignee", "doer", "-q", *owner, env=remote)
        handoff = made.stdout.strip()
        assert worker.post(f"/workspace/handoffs/{handoff}/accept", {}).status_code == 200
        assert worker.post(f"/workspace/handoffs/{handoff}/request-input",
                           {"message": "Keep the second paragraph?"}).status_code == 200
        time.sleep(1)  # the observer reads the question while it is asked
        task = json.loads(ce("handoff", "show", handoff, *owner, "--json", env=remote).stdout)["task_id"]
        assert ce("task", "answer", task, "yes, keep it", *owner, env=remote).returncode == 0
        done = worker.post(f"/workspace/handoffs/{handoff}/complete", {"result": "tidied, 2 lines shorter"})
        assert done.status_code == 200, done.text
        started = caller.result("tools/call", {"name": "confirm_delete", "arguments": {"filename": "old.md"}},
                                meta=EXT)
        assert started["resultType"] == "task", started
        time.sleep(1)
        caller.result("tasks/cancel", {"taskId": started["taskId"]}, meta=EXT)

    try:
        out = _observed(room, owner, remote, act)
    finally:
        caller.close()
    assert "doer asked asker about the handoff “tidy the intro”: “Keep the second paragraph?”" in out, out
    assert "asker answered the question about the handoff “tidy the intro”: “yes, keep it”" in out, out
    assert "doer completed the handoff “tidy the intro”: “tidied, 2 lines shorter”" in out, out
    assert "the confirm_delete task asks for input: “Delete old.md?”" in out, out


def test_a_change_with_an_empty_standard_input_is_refused(room, remote, tmp_path):
    writer = join(room, remote, "writer-e", "read,write,propose", tmp_path / "writer.json")
    head = json.loads(ce("read", *writer, "--json", env=remote).stdout)["version"]
    for args in (("write", "--expected", "head"), ("propose", "--base", "head")):
        done = subprocess.run([ce_path(), *args, "--lines", "1-1", *writer], input="", capture_output=True,
                              text=True, timeout=60, env={**os.environ, **remote})
        assert "--text '' empties the region" in one_line(done, "invalid_request")
    assert json.loads(ce("read", *writer, "--json", env=remote).stdout)["version"] == head  # nothing written
    assert ce("write", "--expected", "head", "--lines", "1-1", "--text", "", *writer, env=remote).returncode == 0


def test_a_remote_participants_errors_are_one_line(room, remote, tmp_path):
    me = join(room, remote, "oops", "read,message,propose,handoff", tmp_path / "oops.json")
    for args, code in ((("proposal", "show", "pr_1234…"), "proposal_not_found"),
                       (("proposal", "show", "…"), "invalid_request"),
                       (("handoff", "show", "ho_ffff…"), "handoff_not_found"),
                       (("task", "answer", "task_abc…", "yes"), "handoff_not_found"),
                       (("version", "show", "v999"), "version_not_found"),
                       (("board", "list", "…"), "invalid_request"),
                       (("board", "complete", "-", "msg_ffff…", "done"), "message_not_found"),
                       (("board", "ack", "msg_ffff…"), "message_not_found"),
                       (("board", "peer-post", "peer_ffff", "note", "hi"), "peer_not_found"),
                       (("sessions", "--cursor", "abc"), "invalid_request"),
                       (("read", "--heading", "No such heading"), "invalid_region"),
                       (("handoff", "show", "ho_a/b"), "invalid_request"),  # no id holds a / (nothing sent)
                       (("board", "assignment", "-", "msg_a/../x"), "invalid_request")):
        one_line(ce(*args, *me, env=remote), code)
    # a session file that is not one (hand-edited), an expired session, a stopped room: one line each
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"token": "crs_x", "transport": {}}))
    assert "transport names no type" in one_line(ce("sessions", "--session-file", str(odd), env=remote),
                                                 "invalid_request")
    expired = join(room, remote, "brief", "read,message", tmp_path / "brief.json", session_ttl_seconds=1)
    time.sleep(1.5)
    for args in (("sessions",), ("board", "ack", "msg_1"), ("board", "post", "-", "note", "hi")):
        one_line(ce(*args, *expired, env=remote), "session_expired")
    gone = start_room(tmp_path / "gone", SAMPLE)
    left = join(gone, remote, "left", "read,message", tmp_path / "left.json")
    gone.stop()
    for args in (("sessions",), ("board", "post", "s_1234…", "note", "hi"), ("proposal", "show", "pr_1…"),
                 ("version", "diff", "1", "1")):
        line = one_line(ce(*args, *left, env=remote), "transport_unavailable")
        assert "the room may be stopped" in line, line
