"""Messages that say what to do: ``ce``'s errors and sentences for people, through a real room.

One room for the module (tests/roomproc.py), the installed ``ce`` in
subprocesses (stdout and stderr are pipes: no colour). A lease conflict
names who holds the lines and until when; a proposal that no longer applies
says so, prints its conflicting hunks and says what to do; a decided one
says it was decided. Output that cannot be written (``> /dev/full``) is
one line, and Ctrl-C of a room says ``room stopped`` and nothing else.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import SAMPLE
from tests.roomproc import Room, ce, ce_path, start_room


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    r = start_room(tmp_path_factory.mktemp("messages"), SAMPLE)
    yield r
    r.stop()


def join(room: Room, folder: Path, name: str, caps: str) -> list[str]:
    """``ce join`` a fresh invitation: the ``--session-file`` arguments of that session."""
    path = folder / f"{name}.json"
    done = ce("join", room.invite(name, caps), "--session-file", str(path))
    assert done.returncode == 0, done.stderr
    return ["--session-file", str(path)]


def refused(done, code: str) -> str:
    """The last stderr line of a refused command (nothing on stdout), checked to name ``code``."""
    assert done.returncode != 0 and done.stdout == "", (done.stdout, done.stderr)
    last = done.stderr.rstrip("\n").split("\n")[-1]
    assert last.startswith(f"ce: {code}: "), done.stderr
    return last


def test_a_lease_conflict_names_the_holder_and_until_when(room, tmp_path):
    agent = join(room, tmp_path, "agent-a", "read,lease")
    other = join(room, tmp_path, "agent-b", "read,lease")
    held = ce("lease", "acquire", "--heading", "Design", "--ttl", "1800", *agent, "--json")
    assert held.returncode == 0, held.stderr
    lines = json.loads(held.stdout)["lines"]
    last = refused(ce("lease", "acquire", "--lines", f"{lines[0]}-{lines[0]}", *other), "lease_conflict")
    assert re.search(rf"agent-a holds lines {lines[0]}–{lines[1]} until \d\d:\d\d \(in 30m\) — next: ", last), last
    # the room's own message says it too, for a client that is not ce
    body = json.loads(ce("lease", "acquire", "--lines", f"{lines[0]}-{lines[0]}", *other, "--json").stderr)
    assert body["message"].startswith(f"agent-a holds lines {lines[0]}-{lines[1]} until ")
    assert body["details"]["participant"] == "agent-a" and body["details"]["lines"] == lines
    release = ce("lease", "release", json.loads(held.stdout)["id"], *agent)
    assert release.returncode == 0, release.stderr


def test_a_proposal_that_no_longer_applies_says_so_and_what_to_do(room, tmp_path):
    editor = join(room, tmp_path, "editor", "read,write,approve")
    author = join(room, tmp_path, "author", "read,propose")
    head = json.loads(ce("read", *editor, "--json").stdout)["version"]
    proposed = ce("propose", "--base", str(head), "--heading", "Open questions",
                  "--text", "## Open questions\n\n1. Nobody approves on weekends.\n", *author, "--json")
    assert proposed.returncode == 0, proposed.stderr
    proposal = json.loads(proposed.stdout)["id"]
    wrote = ce("write", "--expected", str(head), "--heading", "Open questions",
               "--text", "## Open questions\n\n1. The operator approves on weekends.\n", *editor)
    assert wrote.returncode == 0, wrote.stderr
    approve = ce("approve", proposal, *editor)
    last = refused(approve, "proposal_conflict")
    assert "is still open but no longer applies" in last and "already" not in last, last
    assert f"reject it (ce proposal reject {proposal[:11]}… --session-file {editor[1]}), or propose the change " \
           f"again on v{head + 1} (ce propose --base {head + 1} --session-file {editor[1]})" in last, last
    # the conflicting hunks, as merge markers, before that line
    assert f"<<<<<<< proposal {proposal}" in approve.stderr and "1. Nobody approves on weekends." in approve.stderr
    assert f">>>>>>> head v{head + 1}" in approve.stderr and "1. The operator approves" in approve.stderr
    rejected = ce("reject", proposal, *editor)
    assert rejected.returncode == 0, rejected.stderr
    again = refused(ce("approve", proposal, *editor), "proposal_conflict")
    assert "is rejected already" in again and "decided already" in again, again


@pytest.mark.parametrize("args", [("versions", "{doc}"), ("versions", "{doc}", "--json"), ("read", "{session}"),
                                  ("lease", "list", "{session}"), ("--help",), ("--version",),
                                  ("observe", "--since", "0", "{session}"),
                                  ("observe", "--since", "0", "{session}", "--json")])
def test_output_that_cannot_be_written_is_one_line(room, tmp_path, args):
    session = join(room, tmp_path, "full", "read,observe")
    argv = []
    for arg in args:
        argv += session if arg == "{session}" else [str(room.document) if arg == "{doc}" else arg]
    with open("/dev/full", "w") as full:  # as `ce versions > /dev/full`
        done = subprocess.run([ce_path(), *argv], stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == "ce: cannot write to standard output: No space left on device; nothing more was printed\n"


@pytest.mark.parametrize("after", [0.0, 0.1, 0.3, 1.0])
def test_ctrl_c_stops_a_room_with_one_line(tmp_path, after):
    document = tmp_path / "doc.md"
    document.write_bytes(SAMPLE.read_bytes())
    proc = subprocess.Popen([ce_path(), "serve", str(document), "--port", "0", "--owner-port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        banner = proc.stdout.readline()
        assert banner.startswith("commonroom serving"), (banner, proc.stderr.read() if proc.poll() else "")
        time.sleep(after)
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the whole foreground process group
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    assert out.endswith(f"room stopped: {document.resolve()}\n"), out
    assert err == "", err  # no "Worker (pid:…) was sent SIGQUIT!", no traceback
    assert proc.returncode in (0, 130)  # 130: stopped while still starting


#: Ids as the room mints them: none may show in ce observe's lines for people.
AN_ID = re.compile(r"\b(?:p|s|pr|l|ho|inv|m|w)_[0-9a-f]{6,}|\btask_[A-Za-z0-9_-]{20,}|#\d")


def test_every_event_type_has_a_sentence():
    from commonroom.cli.event_lines import SENTENCES
    from commonroom.schemafiles import load_all

    events = next(schema for name, schema in load_all().items() if name.startswith("events"))
    assert set(SENTENCES) == set(events["$defs"]["EventType"]["enum"])


def test_observe_prints_one_readable_sentence_per_event(room, tmp_path):
    watcher = join(room, tmp_path, "watcher", "read,observe,approve")
    watcher_id = json.loads(Path(watcher[1]).read_text())["session_id"]
    start = json.loads(ce("read", *watcher, "--json").stdout)["version"]
    observer = subprocess.Popen([ce_path(), "observe", *watcher], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
    try:
        time.sleep(1.5)  # connected: what follows is live
        owner, worker = room.join("olga", "read,handoff,message,lease,propose,write"), room.join("wim", "read,handoff")
        assert owner.post("/workspace/leases", {"region": {"lines": [1, 1]}, "ttl_seconds": 1800}).status_code == 201
        made = owner.post("/workspace/proposals", {"base_version": start, "region": {"lines": [3, 3]},
                                                   "text": "Shorter intro.\n", "summary": "a shorter intro"})
        assert made.status_code == 201, made.text
        posted = owner.post(f"/workspace/boards/{watcher_id}/messages",
                            {"kind": "question", "body": "Who signs off the release notes?"})
        assert posted.status_code == 201, posted.text
        handoff = owner.post("/workspace/handoffs", {"summary": "check the figures", "assignee": "wim"}).json()
        hid = handoff["handoff"]["id"]
        assert worker.post(f"/workspace/handoffs/{hid}/accept", {}).status_code == 200
        asked = worker.post(f"/workspace/handoffs/{hid}/request-input", {"message": "Which quarter, Q3 or Q4?"})
        assert asked.status_code == 200, asked.text
        time.sleep(3)
    finally:
        observer.terminate()
        out, err = observer.communicate(timeout=10)
    lines = out.splitlines()
    assert lines and all(re.match(r"^\d\d:\d\d:\d\d  \S", line) for line in lines), out
    assert not [line for line in lines if AN_ID.search(line)], out  # names, never ids
    text = "\n".join(lines)
    assert "olga joined the room" in text and "olga opened a session (" in text
    assert re.search(r"olga leased line 1 until \d\d:\d\d \(in 30m\)", text), text
    assert "olga proposed a change to line 3 of v" in text and "“a shorter intro”" in text
    assert "olga posted a question on your board: “Who signs off the release notes?”" in text
    assert "olga handed off “check the figures” to wim" in text and "wim accepted the handoff “check the figures”" in text
    assert "wim asked olga about the handoff “check the figures”: “Which quarter, Q3 or Q4?”" in text


def test_board_ack_and_complete_without_fence_or_key(room, tmp_path):
    worker = join(room, tmp_path, "worker-b", "read,message")
    board = json.loads(Path(worker[1]).read_text())["session_id"]
    coordinator = room.join("coordinator-b", "read,message")
    todo = coordinator.post(f"/workspace/boards/{board}/messages",
                            {"kind": "todo", "body": "Count the open questions.", "requires_ack": True})
    assert todo.status_code == 201, todo.text
    todo_id = todo.json()["message_id"]
    note = coordinator.post(f"/workspace/boards/{board}/messages", {"kind": "note", "body": "FYI"}).json()
    # ack, by the id as the tables print it
    acked = ce("board", "ack", todo_id[:10] + "…", *worker, "--json")
    assert acked.returncode == 0, acked.stderr
    assert json.loads(acked.stdout)["first_acked_at"] is not None
    listed = coordinator.get(f"/workspace/boards/{board}/messages", params={"message_id": todo_id}).json()
    assert listed["messages"][0]["first_acked_at"] == json.loads(acked.stdout)["first_acked_at"]
    refused(ce("board", "ack", note["message_id"], *worker), "invalid_request")  # it asks for no ACK
    # complete without --fence and --key: the assignment read, a key derived; the same command again replays it
    done = ce("board", "complete", "-", todo_id, "2 open questions", *worker, "--json")
    assert done.returncode == 0, done.stderr
    first = json.loads(done.stdout)
    assert first["replayed"] is False and first["todo"]["status"] == "resolved"
    again = ce("board", "complete", "-", todo_id, "2 open questions", *worker, "--json")
    assert again.returncode == 0, again.stderr
    second = json.loads(again.stdout)
    assert second["replayed"] is True and second["answer"]["message_id"] == first["answer"]["message_id"]


def test_ce_call_takes_an_id_as_ce_printed_it(room, tmp_path):
    author = join(room, tmp_path, "caller", "read,propose,message")
    made = json.loads(ce("propose", "--base", "1", "--lines", "1-1", "--text", "# Release plan\n", *author,
                         "--json").stdout)
    printed = made["id"][:11] + "…"  # as the tables print it
    got = ce("call", "GET", f"/workspace/proposals/{printed}", *author)
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["id"] == made["id"]
    own = json.loads(Path(author[1]).read_text())["session_id"]
    posted = ce("board", "post", "-", "note", "hello", *author, "--json")
    message = json.loads(posted.stdout)["message_id"]
    listed = ce("call", "GET", f"/workspace/boards/{own[:8]}…/messages?message_id={message}", *author)
    assert listed.returncode == 0 and json.loads(listed.stdout)["messages"][0]["message_id"] == message, listed.stderr
    missing = ce("call", "GET", "/workspace/proposals/pr_0000…", *author)
    assert missing.returncode == 25 and "Traceback" not in missing.stderr
    body = json.loads(missing.stderr)
    assert body["error"] == "invalid_request" and "\n" not in body["message"] and "names no proposal" in body["message"]


def test_a_ctrl_c_while_the_room_starts_its_interpreter_stops_it_with_one_line(tmp_path):
    """``ce serve`` re-executes itself (glibc malloc) at once; a Ctrl-C then lands in an interpreter that is
    still importing its standard library. Such a signal waits, blocked, until ``ce`` can stop cleanly: here it
    is blocked from the start and already pending, as it is when it comes during the re-execution."""
    document = tmp_path / "doc.md"
    document.write_bytes(SAMPLE.read_bytes())
    env = {k: v for k, v in os.environ.items() if k != "PYTHONMALLOC"}  # so that it re-executes
    proc = subprocess.Popen([ce_path(), "serve", str(document), "--port", "0", "--owner-port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=env, preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}))
    try:
        os.killpg(proc.pid, signal.SIGINT)  # pending in the blocked process from its first instruction
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    assert (proc.returncode, out, err) == (130, "room stopped\n", ""), (proc.returncode, out, err)
