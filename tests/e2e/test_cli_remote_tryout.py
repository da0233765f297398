"""A colleague with a session file and nothing else, tried as one would: what ``ce`` prints names commands that
colleague (or the local operator) can run, as they reached the room (docs/operator.md, *One addressing rule*).

One room for the module (tests/roomproc.py); the colleagues run the installed ``ce`` in a folder without the
room's FILE, with their session files and an empty config home (so no default session helps them).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import SAMPLE
from tests.roomproc import Room, ce, ce_path, start_room


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The room, and a remote folder holding erin's (handoff owner) and frank's (assignee) session files."""
    room = start_room(tmp_path_factory.mktemp("room"), SAMPLE)
    remote = tmp_path_factory.mktemp("remote")
    env = {"XDG_CONFIG_HOME": str(remote / "config"), "HOME": str(remote), "COMMONROOM_SESSION": ""}
    for name, caps in (("erin", "read,observe,handoff"), ("frank", "read,observe,handoff")):
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
