"""A colleague with a session file and nothing else, tried as one would: what ``ce`` prints names commands that
colleague (or the local operator) can run, as they reached the room (docs/operator.md, *One addressing rule*).

One room for the module (tests/roomproc.py); the colleagues run the installed ``ce`` in a folder without the
room's FILE, with their session files and an empty config home (so no default session helps them).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from commonroom.errors import EXIT_CODES
from tests.conftest import SAMPLE
from tests.roomproc import Room, ce, ce_path, start_room


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The room, and a remote folder holding erin's (handoff owner), frank's (assignee) and gina's (proposes
    and writes) session files."""
    room = start_room(tmp_path_factory.mktemp("room"), SAMPLE)
    remote = tmp_path_factory.mktemp("remote")
    env = {"XDG_CONFIG_HOME": str(remote / "config"), "HOME": str(remote), "COMMONROOM_SESSION": ""}
    for name, caps in (("erin", "read,observe,handoff,message"), ("frank", "read,observe,handoff,lease"),
                       ("gina", "read,observe,propose,write,approve,lease,message")):
        done = ce("join", room.invite(name, caps), "--session-file", str(remote / f"{name}.json"), env=env)
        assert done.returncode == 0, done.stderr
    yield room, remote, env
    room.stop()


def ok(remote: Path, env: dict[str, str], *args: str) -> str:
    """``ce ARGS`` run in the remote folder (session files named relative to it): its stdout, checked to succeed."""
    done = subprocess.run([ce_path(), *args], capture_output=True, text=True, timeout=60, cwd=remote,
                          env={**os.environ, **env})
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def asked_task(world: tuple[Room, Path, dict[str, str]]) -> str:
    """A task whose assignee (frank) asked its owner (erin) a question: its id."""
    room, remote, env = world
    erin, frank = ("--session-file", "erin.json"), ("--session-file", "frank.json")
    made = json.loads(ok(remote, env, "handoff", "create", "--summary", "Check Goals", "--assignee", "frank",
                         *erin, "--json"))
    handoff = made["handoff"]["id"]
    ok(remote, env, "handoff", "accept", handoff, *frank)
    ok(remote, env, "handoff", "request-input", handoff, "--message", "Which goal first?", *frank)
    return made["task"]["taskId"]


def test_a_task_s_answer_hint_is_a_command_the_reader_can_run(world):
    room, remote, env = world
    task = asked_task(world)
    # erin reads her task with her session file: the hint answers as erin (not as a default session)
    shown = ok(remote, env, "task", "show", task[:12], "--session-file", "erin.json")
    assert "Which goal first?" in shown
    hint = f"(ce task answer {task[:13]}… ANSWER --key input_1 --session-file erin.json)"
    assert hint in " ".join(shown.split()), shown  # (the detail column wraps it at 80 columns)
    # the local operator reads it with FILE: ce task answer takes no FILE, so no command is named
    owner = ce("task", "show", str(room.document), task, "--participant", "erin")
    assert owner.returncode == 0, owner.stderr
    assert "Which goal first?" in owner.stdout and "ce task answer" not in owner.stdout, owner.stdout


def conflicting(world: tuple[Room, Path, dict[str, str]], where: list[str], ours: str, theirs: str) -> str:
    """gina proposes ``ours`` for ``where`` on the head, then writes ``theirs`` there: ``ce proposal show``."""
    room, remote, env = world
    gina = ("--session-file", "gina.json")
    proposal = ok(remote, env, "propose", "--base", "head", *where, "--text", ours, "-q", *gina).strip()
    ok(remote, env, "write", "--expected", "head", *where, "--text", theirs, *gina)
    return ok(remote, env, "proposal", "show", proposal, *gina)


def test_a_conflict_says_where_as_a_line_or_an_insertion_point(world):
    # one line both changed: "at line 15", not "lines 15–15"
    shown = conflicting(world, ["--lines", "15-15"], "Storage is SQLite.\n", "Storage is files.\n")
    assert re.search(r"^conflict at line 15 of v\d+:$", shown, re.M), shown
    # both added a line at the same place: where it goes in, not "lines 25–24"
    questions = "## Open questions\n\n1. Who approves proposals on weekends?\n2. How long should invitations last?\n"
    shown = conflicting(world, ["--heading", "Open questions"], questions + "3. Who reads?\n",
                        questions + "3. Who writes?\n")
    assert re.search(r"^conflict before line 25 of v\d+:$", shown, re.M), shown
    assert "  3. Who reads?" in shown and "  3. Who writes?" in shown


def test_observe_names_a_proposal_made_before_it_started(world):
    room, remote, env = world
    gina = ("--session-file", "gina.json")
    first = ok(remote, env, "propose", "--base", "head", "--lines", "3-3", "--text", "An intro.\n",
               "--summary", "intro A", "-q", *gina).strip()
    second = ok(remote, env, "propose", "--base", "head", "--lines", "4-4", "--text", "A lease.\n",
                "--summary", "intro B", "-q", *gina).strip()
    observer = subprocess.Popen([ce_path(), "observe", *gina], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, cwd=remote, env={**os.environ, **env})
    try:
        time.sleep(1.5)  # connected: what follows is live, the proposals' own events are not replayed
        ok(remote, env, "proposal", "withdraw", first, *gina)
        ok(remote, env, "proposal", "reject", second, "--reason", "not now", *gina)
        time.sleep(2)
    finally:
        observer.terminate()
        out, err = observer.communicate(timeout=10)
    assert "gina withdrew the proposal “intro A”" in out, (out, err)
    assert "gina rejected the proposal “intro B”: “not now”" in out, (out, err)


def test_a_heading_that_matches_none_says_which_headings_there_are(world):
    room, remote, env = world
    gina = ("--session-file", "gina.json")
    done = subprocess.run([ce_path(), "read", "--heading", "goals", *gina], capture_output=True, text=True,
                          timeout=60, cwd=remote, env={**os.environ, **env})
    assert done.returncode == 21 and done.stdout == "", done
    # the title as given, not a Python list; the one it missed by case alone
    assert done.stderr.startswith('ce: invalid_region: no heading "goals" (titles match exactly): did you mean '
                                  '"Release plan › Goals"?'), done.stderr
    done = subprocess.run([ce_path(), "read", "--heading", "Release plan", "--heading", "Nope", *gina],
                          capture_output=True, text=True, timeout=60, cwd=remote, env={**os.environ, **env})
    assert done.returncode == 21, done
    assert done.stderr.startswith('ce: invalid_region: no heading "Release plan › Nope"; the headings: Release plan, '
                                  'Goals, Design, Storage, Transport, Open questions'), done.stderr
    # for a client that is not ce: every heading's path in details
    answer = json.loads(subprocess.run([ce_path(), "read", "--heading", "Nope", *gina, "--json"], capture_output=True,
                                       text=True, timeout=60, cwd=remote, env={**os.environ, **env}).stderr)
    assert answer["details"]["headings"][:2] == [["Release plan"], ["Release plan", "Goals"]], answer


def test_board_observe_says_baseline_and_no_changes_not_no_messages(world):
    room, remote, env = world
    erin = ("--session-file", "erin.json")
    ok(remote, env, "board", "post", "-", "note", "kept on the board", *erin)
    baseline = ok(remote, env, "board", "observe", "-", *erin)
    assert "no messages" not in baseline, baseline  # the board holds one: a baseline reads none
    assert baseline.startswith("baseline: nothing read; the board's changes after it come with --token "
                               "(ce board list reads what the board holds)\nnext: --token bo1."), baseline
    token = baseline.split("next: --token ")[1].split()[0]
    quiet = ok(remote, env, "board", "observe", "-", "--token", token, *erin)
    assert quiet.startswith("no changes since that token\nnext: --token "), quiet
    ok(remote, env, "board", "post", "-", "note", "a change", *erin)
    changed = ok(remote, env, "board", "observe", "-", "--token", token, *erin)
    assert "a change" in changed and "kept on the board" not in changed, changed


def test_releasing_another_s_lease_says_whose_list_to_read(world):
    room, remote, env = world
    lease = ok(remote, env, "lease", "acquire", "--lines", "1-1", "-q", "--session-file", "gina.json").strip()
    done = subprocess.run([ce_path(), "lease", "release", lease, "--session-file", "frank.json"], capture_output=True,
                          text=True, timeout=60, cwd=remote, env={**os.environ, **env})
    assert done.returncode == 26 and done.stdout == "", done
    assert done.stderr == ("ce: not_found: no such lease held by this session — next: ce lease list --session-file "
                           "frank.json shows each live lease and who holds it; only the holder's session renews or "
                           "releases it\n"), done.stderr
    ok(remote, env, "lease", "release", lease, "--session-file", "gina.json")


def test_cancelling_a_finished_task_says_nothing_was_cancelled(world):
    room, remote, env = world
    erin, frank = ("--session-file", "erin.json"), ("--session-file", "frank.json")
    made = json.loads(ok(remote, env, "handoff", "create", "--summary", "Count the goals", "--assignee", "frank",
                         *erin, "--json"))
    ok(remote, env, "handoff", "accept", made["handoff"]["id"], *frank)
    ok(remote, env, "handoff", "complete", made["handoff"]["id"], "--result", "Two.", *frank)
    task = made["task"]["taskId"]
    done = subprocess.run([ce_path(), "task", "cancel", task, *erin], capture_output=True, text=True, timeout=60,
                          cwd=remote, env={**os.environ, **env})
    assert done.returncode == 0 and f"task {task} · completed" in done.stdout, done
    assert done.stderr == "ce task cancel: the task was completed already: nothing was cancelled\n", done.stderr
    # a task it does cancel says nothing more
    other = json.loads(ok(remote, env, "handoff", "create", "--summary", "Count the risks", *erin, "--json"))
    done = subprocess.run([ce_path(), "task", "cancel", other["task"]["taskId"], *erin], capture_output=True,
                          text=True, timeout=60, cwd=remote, env={**os.environ, **env})
    assert done.returncode == 0 and "· cancelled" in done.stdout and done.stderr == "", done


def test_the_owner_s_invite_and_revoke_lines_name_the_room_and_say_times_for_people(world):
    room, remote, env = world
    done = ce("invite", str(room.document), "--participant", "hal", "--cap", "read", "--expires", "2h")
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"invitation inv_[0-9a-f]+ for hal \(read\), good until (\w{3} \d+ )?\d\d:\d\d \(in 2h\)\n",
                        done.stderr), done.stderr
    joined = ce("join", done.stdout.strip(), "--session-file", str(remote / "hal.json"), env=env)
    assert joined.returncode == 0, joined.stderr
    session = json.loads((remote / "hal.json").read_text())["session_id"]
    revoked = ce("revoke", str(room.document), "--session", session)
    assert revoked.returncode == 0, revoked.stderr
    assert revoked.stdout == f"{room.document.name}: session {session} revoked\n", revoked.stdout
    again = ce("revoke", str(room.document), "--session", session)
    assert again.stdout == f"{room.document.name}: session {session} was already revoked\n", again.stdout


def test_a_session_s_work_summary_says_leases_where_and_no_empty_counts(world):
    room, remote, env = world
    gina = ("--session-file", "gina.json")
    leases = [ok(remote, env, "lease", "acquire", *where, "--ttl", "600", "-q", *gina).strip()
              for where in (("--heading", "Transport"), ("--lines", "2-2"))]
    try:
        summary = ok(remote, env, "board", "summary", "handoff", "-", *gina)
    finally:
        for lease in leases:
            ok(remote, env, "lease", "release", lease, *gina)
    assert "'heading'" not in summary and "{" not in summary, summary  # no Python dict
    assert '"Release plan › Design › Transport"' in summary and "line 2" in summary, summary
    assert "(none)" not in summary, summary  # "proposals: 0", or "proposals (1 open): 1"


def test_a_colleague_reads_an_invitation_before_joining(world):
    room, remote, env = world
    token = room.invite("ida", "read,observe")
    done = subprocess.run([ce_path(), "invitation", "decode", token], capture_output=True, text=True, timeout=60,
                          cwd=remote, env={**os.environ, **env})
    assert done.returncode == 0 and done.stderr == "", done
    shown = done.stdout
    assert "[" not in shown and "{" not in shown, shown  # no JSON in a view for people
    assert re.search(r"^grants +read, observe$", shown, re.M), shown
    assert re.search(r"^good until +(\w{3} \d+ )?\d\d:\d\d \(in \d+[hd]\)$", shown, re.M), shown
    port = room.state["ingress"]["port"]
    assert re.search(rf"^reaches +127\.0\.0\.1:{port} \(loopback, private, not encrypted\)$", shown, re.M), shown
    assert token.split("/")[-1][:40] not in shown and "cri_" in shown  # the secret stays masked


def test_observe_says_the_operator_revoked_a_session_not_its_holder(world):
    room, remote, env = world
    joined = ce("join", room.invite("jay", "read"), "--session-file", str(remote / "jay.json"), env=env)
    assert joined.returncode == 0, joined.stderr
    session = json.loads((remote / "jay.json").read_text())["session_id"]
    observer = subprocess.Popen([ce_path(), "observe", "--session-file", "gina.json"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=remote, env={**os.environ, **env})
    try:
        time.sleep(1.5)  # connected: what follows is live
        assert ce("revoke", str(room.document), "--session", session).returncode == 0
        time.sleep(2)
    finally:
        observer.terminate()
        out, err = observer.communicate(timeout=10)
    assert "the operator revoked jay's session" in out and "jay revoked" not in out, (out, err)


def test_a_backwards_line_range_and_an_insertion_point_are_said_as_they_are(world):
    room, remote, env = world
    gina = ("--session-file", "gina.json")
    done = subprocess.run([ce_path(), "read", "--lines", "5-3", *gina], capture_output=True, text=True, timeout=60,
                          cwd=remote, env={**os.environ, **env})
    assert done.returncode == 21, done
    assert done.stderr.startswith("ce: invalid_region: lines [5, 3] end before they start (an insertion point "
                                  "before line k is [k, k-1])"), done.stderr
    made = ok(remote, env, "propose", "--base", "head", "--lines", "2-1", "--text", "Inserted.\n", *gina)
    assert re.fullmatch(rf"{room.document.name}: proposal pr_[0-9a-f]+ open before line 2, base v\d+\n", made), made


def test_a_route_the_room_lacks_points_at_versions_not_at_ids(world):
    """A ``ce`` newer than its room (a colleague upgraded first) meets ``not_found`` for a route the room lacks:
    the hint says so, not "check the id". The room's own answer to a route it has not, through ce call."""
    from commonroom.cli.render import next_step

    room, remote, env = world
    done = subprocess.run([ce_path(), "call", "GET", "/workspace/no-such-route", "--session-file", "gina.json"],
                          capture_output=True, text=True, timeout=60, cwd=remote, env={**os.environ, **env})
    envelope = json.loads(done.stdout or done.stderr)
    assert envelope["error"] == "not_found", envelope
    hint = next_step(envelope)
    assert "check the id" not in hint and "ce --version" in hint and "commonroom version" in hint, hint
    assert next_step({"error": "not_found", "details": {}}) == "check the id (the list commands print them)"


def test_a_lease_on_the_whole_document_says_so(world):
    room, remote, env = world
    gina = ("--session-file", "gina.json")
    held = ok(remote, env, "lease", "acquire", "--ttl", "60", *gina)
    lease = re.search(r"lease (l_[0-9a-f]+)", held).group(1)
    try:
        assert re.search(r" active on the whole document \(lines 1–\d+\) for gina, ", held), held
    finally:
        released = ok(remote, env, "lease", "release", lease, *gina)
    assert " released on the whole document (lines 1–" in released, released


def test_a_refused_field_is_named_as_the_option_or_argument_that_gave_it(world):
    room, remote, env = world

    def refused(*args: str) -> str:
        done = subprocess.run([ce_path(), *args], capture_output=True, text=True, timeout=60, cwd=remote,
                              env={**os.environ, **env})
        assert done.returncode == EXIT_CODES["invalid_request"] and done.stdout == "", done
        return done.stderr

    said = refused("lease", "acquire", "--lines", "1-1", "--ttl", "99999", "--session-file", "gina.json")
    assert said.startswith("ce: invalid_request: --ttl: 99999 is greater than the maximum of 3600"), said
    said = refused("board", "post", "-", "bogus", "hello", "--session-file", "gina.json")
    assert said.startswith('ce: invalid_request: KIND: "bogus" is not one of: note, '), said
    said = refused("board", "post", "-", "note", "hello", "--priority", "whenever", "--session-file", "gina.json")
    assert said.startswith('ce: invalid_request: --priority: "whenever" is not one of: '), said
    # --json keeps the room's envelope as it is
    done = subprocess.run([ce_path(), "lease", "acquire", "--ttl", "99999", "--session-file", "gina.json", "--json"],
                          capture_output=True, text=True, timeout=60, cwd=remote, env={**os.environ, **env})
    assert json.loads(done.stderr)["details"]["pointer"] == "/ttl_seconds", done.stderr
