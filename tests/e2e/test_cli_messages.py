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
    assert f"reject it (ce proposal reject {proposal[:11]}…), or propose the change again on v{head + 1} " \
           f"(ce propose --base {head + 1})" in last, last
    # the conflicting hunks, as merge markers, before that line
    assert f"<<<<<<< proposal {proposal}" in approve.stderr and "1. Nobody approves on weekends." in approve.stderr
    assert f">>>>>>> head v{head + 1}" in approve.stderr and "1. The operator approves" in approve.stderr
    rejected = ce("reject", proposal, *editor)
    assert rejected.returncode == 0, rejected.stderr
    again = refused(ce("approve", proposal, *editor), "proposal_conflict")
    assert "is rejected already" in again and "decided already" in again, again


@pytest.mark.parametrize("args", [("versions", "{doc}"), ("versions", "{doc}", "--json"), ("read", "{session}"),
                                  ("lease", "list", "{session}"), ("--help",), ("--version",)])
def test_output_that_cannot_be_written_is_one_line(room, tmp_path, args):
    session = join(room, tmp_path, "full", "read")
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
