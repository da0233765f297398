"""``ce``, second pass: ids as printed, the content people came for, hints, serve, output hygiene.

A real room (tests/roomproc.py) and the installed ``ce`` throughout; the
ACK is a real MCP tool call of the board's session; the terminal checks
run ``ce`` on a pseudo-terminal.
"""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import subprocess
import threading
from pathlib import Path

from commonroom.errors import EXIT_CODES
from tests.conftest import SAMPLE
from tests.mcp_wire import META, Mcp
from tests.roomproc import ce, ce_path, start_room
from tests.ssekit import wait_until

GOALS = "## Goals\n\n- Ship it.\n\n"


def ok(*args: str, env: dict[str, str] | None = None) -> str:
    done = ce(*args, env=env)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def fails(code: str, *args: str) -> str:
    done = ce(*args)
    assert done.returncode == EXIT_CODES[code], (args, done.stdout, done.stderr)
    return done.stderr


def narrow(text: str, columns: int = 100) -> None:
    """Every line fits ``columns`` and none ends with a space."""
    for line in text.splitlines():
        assert len(line) <= columns, line
        assert not line.endswith(" "), repr(line)


def on_terminal(*args: str, env: dict[str, str]) -> bytes:
    """What ``ce ARGS`` writes to a pseudo-terminal (stdout and stderr both)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([ce_path(), *args], stdin=subprocess.DEVNULL, stdout=follower, stderr=follower,
                            env={**{k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")},
                                 "TERM": "xterm-256color", "COLUMNS": "100", **env})
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: ce ended
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(30)
    os.close(leader)
    return b"".join(chunks)


def test_ids_as_printed_content_and_id_only(tmp_path: Path):
    room = start_room(tmp_path / "room", SAMPLE)
    doc = str(room.document)
    try:
        alice, bob = tmp_path / "alice.json", tmp_path / "bob.json"
        ok("join", room.invite("alice", "read,propose,approve,handoff,message"), "--session-file", str(alice))
        ok("join", room.invite("bob", "read,handoff,message"), "--session-file", str(bob))
        A, B = ("--session-file", str(alice)), ("--session-file", str(bob))

        # --id-only prints the new id alone, which the next command takes
        proposal = ok("propose", "--base", "v1", "--heading", "Goals", "--text", GOALS, *A, "-q").strip()
        assert re.fullmatch(r"pr_[0-9a-f]{24}", proposal)
        assert ok("approve", proposal, *A, "--id-only").strip() == "2"
        assert "+- Ship it." in ok("diff", doc, "v1", "v2")

        # participants as ce participants prints them, for --assignee and --participant; an ambiguous start
        table = ok("participants", doc)
        bob_short = re.search(r"(p_[0-9a-f]{8}…)\s+bob\b", table).group(1)
        handoff = ok("handoff-create", "--summary", "Check the goals against the roadmap", "--constraints",
                     "Keep it under 5 bullets", "--artifact", "https://example.com/roadmap", "--assignee", bob_short,
                     *A, "-q").strip()
        assert re.fullmatch(r"ho_[0-9a-f]{24}", handoff)
        stderr = fails("invalid_request", "task", doc, "task_", "--participant", "p_")
        assert len(stderr.strip().splitlines()) == 1 and "more than one participant id" in stderr
        assert "p_" in stderr.split("(", 1)[1]

        # the wrong participant is told nothing it cannot do; the assignee accepts and asks
        stderr = fails("permission_denied", "handoff-accept", handoff[:9], *A)
        assert "next:" not in stderr, stderr
        ok("handoff-accept", handoff[:9], *B)
        ok("handoff-request-input", handoff, "--message", "Which roadmap: 2026 or 2027?", *B)

        # ce handoff: the content, its task's status and the open question; the task id as printed
        shown = ok("handoff", doc, handoff[:10])
        narrow(shown)
        for text in ("Check the goals against the roadmap", "owner alice, assignee bob", "Keep it under 5 bullets",
                     "https://example.com/roadmap", "input_required, 1 question open",
                     "asked input_1  Which roadmap: 2026 or 2027?"):
            assert text in shown, (text, shown)
        task = re.search(r"task\s+(task_\S+) input_required", shown).group(1)
        assert ok("task", doc, task[:9], "--participant", bob_short).startswith(f"task {task} · input_required")

        # ce task-answer answers it (the one open request), ce task shows the answer
        answered = ok("task-answer", task[:12] + "…", "2027", *A)
        assert f"task {task} · working" in answered and "answered input_1  2027" in answered
        stderr = fails("invalid_request", "task-answer", task, "again", *A)
        assert "0 open input requests (it is working)" in stderr and "next:" not in stderr
        assert "answered input_1  2027" in ok("task", doc, task, "--participant", "alice")

        ok("handoff-complete", handoff, "--result", "Goals match the 2027 roadmap.\nTwo bullets dropped.", *B)
        shown = ok("handoff", doc, handoff)
        narrow(shown)
        assert "result_ready" in shown and "Goals match the 2027 roadmap.\n" in shown and "Two bullets dropped." in shown
        assert "answered input_1  2027" in shown and "completed" in shown
        events = ok("handoff-events", doc, handoff)
        narrow(events)
        assert "p_" not in events and "ho_" not in events and "task_" not in events
        assert re.search(r"created\s+(just now|\S+ ago)\s+alice", events) and re.search(r"input_requested .* bob", events)
        assert "input input_1" in events

        # boards: ce sessions prints whole ids, which the board commands take; the ACK state is listed
        sessions = ok("sessions", doc)
        narrow(sessions, 200)
        bob_session = re.search(r"(s_[0-9a-f]{24})\s+bob\b", sessions).group(1)
        message = ok("board", "post", bob_session, "guidance", "stop X", "--requires-ack", *A, "-q").strip()
        listed = ok("board", "list", bob_session, *A)
        narrow(listed, 200)
        assert re.search(rf"{message[:12]}…\s+guidance .*not acked\s+stop X", listed), listed
        token = json.loads(bob.read_text())["token"]
        Mcp(room.ingress, token).result("tools/call", {"name": "document_read", "arguments": {}},
                                        meta={**META, "ack_session_message_ids": [message]})
        listed = ok("board", "list", bob_session, *A)
        assert re.search(r"acked (just now|\d+s ago)\s+stop X", listed), listed
        assert "acked just now" in ok("board", "list", "-", "--message-id", message[:10], *B) or "acked" in listed
    finally:
        room.stop()


def test_hints_fit_the_error(tmp_path: Path):
    stderr = fails("invalid_request", "read", "--session-file", str(tmp_path / "nobody.json"))
    assert f"ce join TOKEN --session-file {tmp_path / 'nobody.json'}" in stderr and "next:" not in stderr
    stderr = fails("invalid_request", "versions", str(tmp_path / "nothere.md"))
    assert stderr.strip().endswith("nothere.md: no such file"), stderr


def test_serve_names_the_room_holding_the_port_and_prints_runnable_commands(tmp_path: Path):
    room = start_room(tmp_path / "first", SAMPLE)
    try:
        log = (tmp_path / "first" / "doc.md.serve.log").read_text()
        ce_abs = os.path.abspath(ce_path())
        assert f"invite someone:  {ce_abs} invite {room.document}" in log, log
        assert f"open the console: {ce_abs} console {room.document}" in log, log
        other = tmp_path / "other.md"
        other.write_text("# Other\n")
        done = subprocess.run([ce_path(), "serve", str(other), "--owner-port", str(room.state["owner_port"]),
                               "--port", "0"], capture_output=True, text=True, timeout=60)
        assert done.returncode != 0
        assert f"the room on {room.document} holds it, pid {room.proc.pid}" in done.stderr, done.stderr
        assert "--port 0 --owner-port 0" in done.stderr
    finally:
        room.stop()


def test_board_observe_follow_says_when_the_room_went_away_and_came_back(tmp_path: Path):
    room = start_room(tmp_path / "room", SAMPLE)
    follower = None
    try:
        session = tmp_path / "ann.json"
        ok("join", room.invite("ann", "read,message"), "--session-file", str(session))
        baseline = json.loads(ok("board", "observe", "-", "--session-file", str(session), "--json"))
        follower = subprocess.Popen([ce_path(), "board", "observe", "-", "--follow", "--wait", "2", "--token",
                                     baseline["observation_token"], "--session-file", str(session)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
        out: list[str] = []
        err: list[str] = []
        for stream, sink in ((follower.stdout, out), (follower.stderr, err)):
            threading.Thread(target=lambda s=stream, k=sink: [k.append(line) for line in s], daemon=True).start()
        ok("board", "post", "-", "note", "before the restart", "--session-file", str(session))
        assert wait_until(lambda: any("before the restart" in line for line in out), 15)
        room = room.restart(between=lambda: wait_until(lambda: any("the room went away at" in e for e in err), 15))
        assert any("the room went away at" in e for e in err), err
        assert wait_until(lambda: any("the room is back at" in e for e in err), 30), err
        ok("board", "post", "-", "note", "after the restart", "--session-file", str(session))
        assert wait_until(lambda: any("after the restart" in line for line in out), 15), (out, err)
        assert follower.poll() is None
        follower.send_signal(signal.SIGINT)  # Ctrl-C ends following with 0, as for ce observe
        assert follower.wait(10) == 0 and not any("Traceback" in e for e in err), err
    finally:
        if follower:
            follower.terminate()
            follower.wait(10)
        room.stop()


def test_no_color_means_no_escape_sequence_and_help_is_whole(tmp_path: Path):
    room = start_room(tmp_path / "room", SAMPLE)
    doc = str(room.document)
    try:
        coloured = on_terminal("status", doc, env={})
        assert b"\x1b[" in coloured  # a terminal without NO_COLOR gets styles: the check below can fail
        for args in (("status", doc), ("versions", doc), ("diff", doc, "1"), ("proposals", doc, "--status", "x")):
            plain = on_terminal(*args, env={"NO_COLOR": "1"})
            assert b"\x1b" not in plain, (args, plain)
        for line in on_terminal("status", doc, env={"NO_COLOR": "1"}).decode().splitlines():
            assert not line.endswith(" "), repr(line)
    finally:
        room.stop()
    top = ok("--help")
    assert "..." not in top.split("Owner commands")[1]  # no description cut off
    assert "Start the room on FILE: one process, two listeners, until Ctrl-C." in " ".join(top.split())
    assert "Tasks (the execution record of a handoff): show, answer, cancel." in " ".join(top.split())
    post = " ".join(ok("board", "post", "--help").split())
    for text in ("KIND", "The message's kind: note, proposal,", "BODY", "The message text",
                 "--requires-ack", "until it ACKs"):
        assert text in post, text
