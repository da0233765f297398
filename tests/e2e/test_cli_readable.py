"""``ce`` for people: readable output by default, ``--json`` for the schema'd answer.

A real room (tests/roomproc.py), the installed ``ce`` in subprocesses
(stdout is a pipe, so: no colour, exact bytes). Every command's readable
output and its ``--json`` output (validated against the answer schema);
``ce read > copy.md`` reproduces every corpus document byte for byte;
errors are one line on stderr; on a terminal (a pty) diffs are coloured
and ``NO_COLOR`` turns colour off.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from commonroom import regions
from commonroom.errors import EXIT_CODES
from commonroom.schemas import errors_of
from tests.conftest import SAMPLE
from tests.roomproc import Room, ce, ce_path, corpus_files, start_room

ANSI = re.compile(r"\x1b\[")
#: A whole SGR sequence (a style), as the terminal view writes them.
SGR = re.compile(r"\x1b\[[0-9;]*m")
#: A foreground colour in an SGR sequence (30-37, 90-97, 38;…).
COLOUR = re.compile(r"\x1b\[(?:\d+;)*(?:3[0-8]|9[0-7])[;m]")
SAMPLE_TEXT = SAMPLE.read_text("utf-8")
GOALS = "## Goals\n\n- Ship it.\n\n"


def plain(done: subprocess.CompletedProcess) -> str:
    """stdout of a successful ``ce`` run, checked to carry no escape codes (it is a pipe)."""
    assert done.returncode == 0, (done.args, done.stdout, done.stderr)
    assert not ANSI.search(done.stdout) and not ANSI.search(done.stderr), done.stdout
    return done.stdout


def as_json(*args: str, schema: str | None = None) -> Any:
    """``ce args --json``: the answer, valid against ``schema``."""
    body = json.loads(plain(ce(*args, "--json")))
    if schema:
        assert errors_of(schema, body) == [], body
    return body


def one_line(done: subprocess.CompletedProcess, code: str, hint: bool = True) -> str:
    """A refused command: its status, nothing on stdout, its last stderr line naming the code (and, with
    ``hint``, what to do next; an invalid_request's message says what to fix, so it has none)."""
    assert done.returncode == EXIT_CODES[code], (done.returncode, done.stdout, done.stderr)
    assert done.stdout == "" and not ANSI.search(done.stderr)
    last = done.stderr.rstrip("\n").split("\n")[-1]
    assert last.startswith(f"ce: {code}: ") and (" — next: " in last) == hint, done.stderr
    return done.stderr


def join(room: Room, folder: Path, name: str, caps: str) -> str:
    path = folder / f"{name}.json"
    out = plain(ce("join", room.invite(name, caps), "--session-file", str(path)))
    assert re.fullmatch(rf"joined {re.escape(room.document.name)} as {name} \({caps.replace(',', ', ')}\): "
                        rf"session s_[0-9a-f]{{24}} saved in {re.escape(str(path))}\n", out), out
    return str(path)


@pytest.mark.parametrize("source", corpus_files(), ids=[p.name for p in corpus_files()])
def test_read_into_a_file_is_the_document_byte_for_byte(tmp_path: Path, source: Path):
    room = start_room(tmp_path, source, name=source.name)
    try:
        session = join(room, tmp_path, "reader", "read")
        copy = tmp_path / "copy.md"
        with copy.open("wb") as out:  # as `ce read > copy.md`
            done = subprocess.run([ce_path(), "read", "--session-file", session], stdout=out,
                                  stderr=subprocess.PIPE, timeout=120)
        assert done.returncode == 0, done.stderr
        assert copy.read_bytes() == source.read_bytes()
        forced = subprocess.run([ce_path(), "read", "--session-file", session], capture_output=True, timeout=120,
                                env={**os.environ, "FORCE_COLOR": "1"})
        assert forced.stdout == source.read_bytes()  # a pipe, even when colour is forced
        # on a terminal: the document's own lines, every word kept in its order, nothing padded
        shown = on_a_terminal("read", "--session-file", session)
        # a control character shows as its control picture (a backspace as ␈): the terminal does not act on it
        text = re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", lambda m: chr(0x2400 + ord(m.group())),
                      source.read_bytes().decode("utf-8"))
        unstyled = SGR.sub("", shown)
        assert not ANSI.search(unstyled) and unstyled.split() == text.split()
        # line for line as written (the terminal ends each line CRLF): no padding, no line dropped
        assert unstyled.split("\r\n") == re.split(r"\r\n|\r|\n", text.rstrip("\r\n") + "\n")
        assert as_json("read", "--session-file", session, schema="room#Document")["version"] == 1
    finally:
        room.stop()


def test_every_command_readable_and_json(tmp_path: Path):
    room = start_room(tmp_path, SAMPLE)
    doc = str(room.document)
    try:
        alice = join(room, tmp_path, "alice", "read,observe,propose")
        bob = join(room, tmp_path, "bob", "read,observe,lease,approve,write,handoff,message")
        A, B = ("--session-file", alice), ("--session-file", bob)
        joined = as_json("join", room.invite("carol", "read"), "--session-file", str(tmp_path / "c.json"))
        assert errors_of("common#Session", joined["session"]) == [] and joined["file_name"] == "doc.md"

        # read: the markdown itself; a region's text
        assert plain(ce("read", *A)) == SAMPLE_TEXT
        span = regions.resolve(SAMPLE_TEXT, {"heading": ["Goals"]})
        assert plain(ce("read", "--heading", "Goals", *A)) == "".join(regions.lines_of(SAMPLE_TEXT)[span.start - 1:span.end])
        assert as_json("read", "--lines", "1-2", *A, schema="room#Document")["lines"] == [1, 2]

        # propose: one line with the full id; approve and write: one line each
        line = plain(ce("propose", "--base", "1", "--heading", "Goals", "--text", GOALS, "--summary", "shorter goals", *A))
        found = re.fullmatch(r'doc.md: proposal (pr_[0-9a-f]+) open on "(?:.+ › )?Goals" \(lines \d+–\d+\), base v1\n',
                             line)  # a one-line outcome names the room first
        assert found, line
        proposal = found.group(1)
        table = plain(ce("proposals", doc))
        assert "status" in table and "alice" in table and proposal[:11] in table and "shorter goals" in table
        page = as_json("proposals", doc, schema="editing#ProposalsPage")
        assert [p["id"] for p in page["proposals"]] == [proposal]
        assert plain(ce("approve", proposal, *B)) == (f"doc.md: v2 committed by alice: shorter goals "
                                                      f"(proposal {proposal} approved by bob)\n")
        other = as_json("propose", "--base", "2", "--lines", "1-1", "--text", "# Plan\n", *A, schema="editing#Proposal")
        as_json("approve", other["id"], *B, schema="editing#ApproveResult")
        assert plain(ce("write", "--expected", "3", "--lines", "1-1", "--text", "# Release plan\n",
                        "--summary", "title back", *B)) == "doc.md: v4 committed by bob: title back\n"
        as_json("write", "--expected", "4", "--lines", "1-1", "--text", "# Release plan!\n", *B,
                schema="editing#VersionInfo")

        # stale_version: the diff and the next command, one line with the code
        err = one_line(ce("write", "--expected", "2", "--text", "x\n", *B), "stale_version")
        assert "--- v2" in err and "+++ v5" in err and err.rstrip().endswith("rerun with --expected 5")
        err = one_line(ce("propose", "--base", "1", "--heading", "Goals", "--text", "## Goals\n\n- other\n\n", *A),
                       "stale_version")
        assert err.rstrip().endswith("rerun with --base 5")
        envelope = json.loads(ce("write", "--expected", "2", "--text", "x\n", *B, "--json").stderr)
        assert errors_of("error", envelope) == [] and envelope["current_version"] == 5

        # versions: a table, paged with the next-cursor hint; diff: the unified diff
        table = plain(ce("versions", doc))
        assert re.search(r"^v5\s+bob\s+(just now|\d+s ago)\s+write\s+", table, re.M), table
        first = plain(ce("versions", doc, "--limit", "2"))
        cursor = re.search(r"^more: run again with --cursor (\S+)$", first, re.M).group(1)
        assert "v3" in plain(ce("versions", doc, "--limit", "2", "--cursor", cursor))
        page = as_json("versions", doc, schema="editing#VersionsPage")
        assert [v["number"] for v in page["versions"]] == [5, 4, 3, 2, 1] and "T" in page["versions"][0]["created_at"]
        diff = plain(ce("diff", doc, "1", "2"))
        assert diff.startswith("--- v1\n+++ v2\n") and "+- Ship it." in diff
        assert as_json("diff", doc, "1", "2", schema="editing#Diff")["diff"] == diff

        # leases, participants, handoffs, board: tables and their pages
        assert re.fullmatch(r"doc.md: lease l_[0-9a-f]+ active on lines 2–3 for bob, expires in \dm\n",
                            plain(ce("lease", "acquire", "--lines", "2-3", *B)))
        for args in (("leases", doc), ("lease", "list", *B)):
            assert re.search(r"^l_[0-9a-f]{8}…\s+active\s+bob\s+lines 2–3\s", plain(ce(*args)), re.M)
            assert len(as_json(*args, schema="editing#LeasesPage")["leases"]) == 1
        table = plain(ce("participants", doc))
        assert all(name in table for name in ("alice", "bob", "carol")) and "joined" in table
        assert len(as_json("participants", doc, schema="room#ParticipantsPage")["participants"]) == 3
        made = plain(ce("handoff-create", "--summary", "check the goals", *B))
        assert made.startswith("doc.md: handoff ho_") and " open: check the goals (owner bob, assignee -)\n" in made
        assert re.search(r"^ho_[0-9a-f]{8}…\s+open\s+bob\s+-\s+", plain(ce("handoffs", doc)), re.M)
        handoff_id = made.split()[2]
        assert re.search(r"^\d+\s+created\s+(just now|\d+s ago)\s+bob\s+handoff open; task working",
                         plain(ce("handoff-events", doc, handoff_id)), re.M)
        as_json("handoff-events", doc, handoff_id, schema="handoffs#HandoffEventsPage")
        as_json("handoffs", doc, schema="handoffs#HandoffsPage")
        assert plain(ce("board", "post", "-", "note", "hello board", *B)).startswith("doc.md: note msg_")
        assert re.search(r"^msg_[0-9a-f]{8}…\s+note\s+open\s+normal\s+bob\s+", plain(ce("board", "list", "-", *B)), re.M)
        as_json("board", "list", "-", *B, schema="boards#MessagesPage")

        # status: from the owner port while the room runs
        status = plain(ce("status", doc))
        assert status.startswith(f"{room.document}: running (pid ") and "owner port" in status
        assert "head v5 · 3 participants" in status and "l_" in status
        shown = as_json("status", doc)
        assert shown["running"] is True and shown["owner_port"] == room.state["owner_port"]
        assert errors_of("room#RoomStatus", shown["room"]) == [] and errors_of("editing#LeasesPage", shown["leases"]) == []

        # observe: readable lines, --json the raw events
        lines = observe(alice, "--since", "0")
        assert any(re.match(r"^\d\d:\d\d:\d\d  bob committed v\d+ \(", x) for x in lines), lines  # names, no ids
        events = [json.loads(x) for x in observe(alice, "--since", "0", "--json")]
        assert events and all(errors_of("events#Event", e) == [] for e in events)

        # errors: one line, the code, what next; the exit status is the catalogue's
        one_line(ce("approve", "pr_nope", *B), "proposal_not_found")
        one_line(ce("read", "--heading", "Nowhere", *A), "invalid_region")
        one_line(ce("versions", doc, "--limit", "0"), "invalid_request", hint=False)
    finally:
        room.stop()

    # status from the sidecar when the room is down
    status = plain(ce("status", doc))
    assert status.startswith(f"{room.document}: not running") and "head v5" in status
    assert as_json("status", doc)["running"] is False


def observe(session: str, *args: str, seconds: float = 3.0) -> list[str]:
    """The lines ``ce observe`` printed in ``seconds`` (then it is stopped)."""
    proc = subprocess.Popen([ce_path(), "observe", "--session-file", session, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(seconds)
    proc.terminate()
    out, _ = proc.communicate(10)
    assert not ANSI.search(out)
    return out.splitlines()


def on_a_terminal(*args: str, env: dict[str, str] | None = None) -> str:
    """What ``ce args`` writes when stdout is a terminal (a pty)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([ce_path(), *args], stdout=follower, stderr=subprocess.PIPE,
                            env={**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", **(env or {})})
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    assert proc.wait(60) == 0
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


def test_a_terminal_gets_colour_unless_no_color(tmp_path: Path):
    room = start_room(tmp_path, SAMPLE)
    doc = str(room.document)
    try:
        writer = room.join("w", "read,write")
        r = writer.request("PUT", "/workspace/document", json={"expected_version": 1, "text": SAMPLE_TEXT + "\nMore.\n"})
        assert r.status_code == 200, r.text
        rendered = on_a_terminal("read", "--session-file", join(room, tmp_path, "r", "read"))
        # the markdown as written, its heading lines highlighted with their markers kept
        assert re.search(r"\x1b\[[0-9;]*m# Release plan\x1b\[0m", rendered), rendered
        assert "More." in rendered
        bare = on_a_terminal("read", "--session-file", join(room, tmp_path, "r2", "read"), env={"NO_COLOR": "1"})
        assert not ANSI.search(bare) and bare.replace("\r\n", "\n") == SAMPLE_TEXT + "\nMore.\n"
    finally:
        room.stop()
    coloured = on_a_terminal("diff", doc, "1", "2")
    assert COLOUR.search(coloured) and "+More." in coloured, coloured
    no_color = on_a_terminal("diff", doc, "1", "2", env={"NO_COLOR": "1"})
    assert not COLOUR.search(no_color) and "+More." in no_color, no_color


def test_version_and_completion():
    version = plain(ce("--version"))
    assert re.fullmatch(r"ce \S+\n", version)
    helped = plain(ce("--help"))
    assert "--install-completion" in helped and "--show-completion" in helped
    # typed in bash: Typer finds the shell among the command's parents (the suite may run without a shell
    # above it); the second command keeps bash from replacing itself with ce
    script = subprocess.run(["bash", "-c", '"$0" --show-completion; exit $?', ce_path()], capture_output=True,
                            text=True, timeout=60)
    assert script.returncode == 0 and "complete" in script.stdout, script.stderr


def test_every_data_command_takes_json():
    import typer

    from commonroom.cli.main import app

    def walk(group, prefix=()):
        for name, command in group.commands.items():
            if hasattr(command, "commands"):
                yield from walk(command, (*prefix, name))
            else:
                yield " ".join((*prefix, name)), command

    without = [name for name, command in walk(typer.main.get_command(app))
               if name not in ("serve", "mcp") and "--json" not in {o for p in command.params for o in p.opts}]
    assert without == []


def test_no_colour_without_a_terminal_even_when_forced_off(tmp_path: Path):
    """Piped output has no escape codes (Rich detects the pipe): checked on an error and the help."""
    done = ce("versions", str(tmp_path / "nope.md"))
    one_line(done, "invalid_request", hint=False)
    assert not ANSI.search(ce("versions", "--help").stdout)
