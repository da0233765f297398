"""One ``ce`` for every participant, anywhere: a session file alone does every read and change, the owner's
FILE form reads too, commands are grouped (the old names hidden aliases), and a proposal is reviewed before
it is approved (docs/operator.md, *One addressing rule*, *Command groups*, *Review before approve*).

One real room for each test (each stands alone, in any order); the "remote" participant runs the installed ``ce`` (or Typer's runner, the
same code) in a folder without the room's FILE, with nothing but its session file and an empty config home.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from commonroom.cli.main import ALIASES, SECTIONS, app
from tests.conftest import SAMPLE
from tests.roomproc import ce, start_room

GOALS = "## Goals\n\n- Ship it.\n\n"


@pytest.fixture
def world(tmp_path_factory):
    """The room (bob: the owner's helper with approve; alice proposes) and a remote folder with alice's and
    bob's session files only."""
    room = start_room(tmp_path_factory.mktemp("room"), SAMPLE)
    remote = tmp_path_factory.mktemp("remote")
    env = {"XDG_CONFIG_HOME": str(remote / "config"), "HOME": str(remote), "COMMONROOM_SESSION": ""}
    for name, caps in (("alice", "read,observe,propose,handoff"), ("bob", "read,observe,lease,approve,write,handoff")):
        done = ce("join", room.invite(name, caps), "--session-file", str(remote / f"{name}.json"), env=env)
        assert done.returncode == 0, done.stderr
    yield room, remote, env
    room.stop()


def run(remote: Path, env: dict[str, str], *args: str) -> tuple[int, str, str]:
    """``ce ARGS`` in-process (Typer's runner) from the remote folder: ``(status, stdout, stderr)``."""
    before = os.getcwd()
    os.chdir(remote)
    try:
        result = CliRunner().invoke(app, list(args), env=env)
    finally:
        os.chdir(before)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def ok(remote: Path, env: dict[str, str], *args: str) -> str:
    code, out, err = run(remote, env, *args)
    assert code == 0, (args, out, err)
    return out


def as_json(remote: Path, env: dict[str, str], *args: str) -> Any:
    return json.loads(ok(remote, env, *args, "--json"))


def test_a_session_file_alone_reads_and_changes_everything(world):
    room, remote, env = world
    assert sorted(p.name for p in remote.iterdir() if p.suffix == ".md") == []  # no FILE here
    alice, bob = ("--session-file", str(remote / "alice.json")), ("--session-file", str(remote / "bob.json"))
    head = as_json(remote, env, "version", "list", *alice)["versions"][0]["number"]
    # the changes: a proposal on the head (--base head), reviewed, approved; a direct write (--expected head)
    proposal = ok(remote, env, "propose", "--base", "head", "--heading", "Goals", "--text", GOALS,
                  "--summary", "shorter goals", "-q", *alice).strip()
    shown = ok(remote, env, "proposal", "show", proposal[:10], *bob)
    assert f"proposal {proposal} by alice: shorter goals" in shown and f"base v{head}, head v{head}" in shown
    assert "applies at the head" in shown and "+- Ship it." in shown
    approved = ok(remote, env, "proposal", "approve", proposal, *bob)
    assert f"v{head + 1} committed by alice: shorter goals" in approved
    written = ok(remote, env, "write", "--expected", "head", "--lines", "1-1", "--text", "# Release plan!\n",
                 "--summary", "louder", *bob)
    assert f"v{head + 2} committed by bob: louder" in written
    # every read a participant needs, readable, from the session
    document = ok(remote, env, "read", *alice).encode("utf-8")
    assert room.wait_for_file(document) == document  # piped: the exact bytes
    assert ok(remote, env, "read", "--version", str(head), *alice).encode("utf-8") == SAMPLE.read_bytes()
    assert ok(remote, env, "version", "show", "head", *alice).encode("utf-8") == document
    assert "louder" in ok(remote, env, "version", "list", *alice)
    assert "+# Release plan!" in ok(remote, env, "version", "diff", f"v{head + 1}", *alice)
    assert re.search(r"pr_[0-9a-f]{8}…\s+approved\s+alice", ok(remote, env, "proposal", "list", *alice))
    assert "no live leases" in ok(remote, env, "lease", "list", *alice)
    assert re.search(r"alice .*\n.*bob", ok(remote, env, "participants", *alice))
    status = ok(remote, env, "status", *alice)
    assert f"head v{head + 2}" in status and "running" in status
    # handoffs and tasks, each side as itself
    handoff = ok(remote, env, "handoff", "create", "--summary", "check the goals", "--assignee", "alice", "-q",
                 *bob).strip()
    ok(remote, env, "handoff", "accept", handoff[:9], *alice)
    ok(remote, env, "handoff", "request-input", handoff, "--message", "which goals?", *alice)
    assert re.search(r"ho_[0-9a-f]{8}…\s+accepted\s+bob\s+alice", ok(remote, env, "handoff", "list", *alice))
    detail = ok(remote, env, "handoff", "show", handoff, *bob)
    assert "which goals?" in detail
    assert "input_requested" in ok(remote, env, "handoff", "events", handoff, *alice)
    task = as_json(remote, env, "handoff", "show", handoff, *bob)["task_id"]
    assert "ce task answer task_" in ok(remote, env, "task", "show", task[:12], *bob)
    assert "· working" in ok(remote, env, "task", "answer", task, "the first two", *bob)
    assert "· cancelled" in ok(remote, env, "task", "cancel", task, *bob)


def test_the_owner_reads_with_file(world):
    room, remote, env = world
    doc = str(room.document)
    ok(remote, env, "write", "--expected", "head", "--lines", "1-1", "--text", "# Release plan!\n", "--summary", "louder",
       "--session-file", str(remote / "bob.json"))  # v2: a diff to show
    done = ce("read", doc)
    assert done.returncode == 0 and done.stdout.encode("utf-8") == room.document.read_bytes()
    assert ce("version", "show", doc, "1").stdout.encode("utf-8") == SAMPLE.read_bytes()
    assert "initial document" in ce("version", "list", doc).stdout
    for args in (("proposal", "list", doc), ("participants", doc), ("lease", "list", doc), ("handoff", "list", doc),
                 ("status", doc), ("version", "diff", doc, "1")):
        done = ce(*args)
        assert done.returncode == 0 and done.stdout.strip(), (args, done.stderr)


def test_review_before_approve_says_what_still_applies(world):
    room, remote, env = world
    alice, bob = ("--session-file", str(remote / "alice.json")), ("--session-file", str(remote / "bob.json"))
    head = as_json(remote, env, "version", "list", *alice)["versions"][0]["number"]
    clashing = ok(remote, env, "propose", "--base", str(head), "--lines", "3-3", "--text", "Mine.\n",
                  "--summary", "mine", "-q", *alice).strip()
    elsewhere = ok(remote, env, "propose", "--base", str(head), "--heading", "Open questions", "--text",
                   "## Open questions\n\nNone.\n", "--summary", "none", "-q", *alice).strip()
    ok(remote, env, "write", "--expected", str(head), "--lines", "3-3", "--text", "Theirs.\n", *bob)
    listed = ok(remote, env, "proposal", "list", "--status", "open", *bob)
    assert re.search(rf"{clashing[:11]}…\s+conflicts", listed) and re.search(rf"{elsewhere[:11]}…\s+open", listed)
    shown = ok(remote, env, "proposal", "show", clashing, *bob)
    assert f"conflicts with the head v{head + 1}" in shown and "propose again on" in shown
    assert "+Mine." in shown and "Theirs." in shown  # its change against its base, then the conflicting hunk
    review = as_json(remote, env, "proposal", "show", elsewhere, *bob)
    assert review["applies"] is True and review["head_version"] == head + 1
    assert review["head_diff"].startswith(f"--- v{head + 1}\n") and "+None." in review["head_diff"]
    assert "change against the head" in ok(remote, env, "proposal", "show", elsewhere, *bob)
    rebased = ok(remote, env, "propose", "--base", str(head), "--heading", "Design", "--text", "## Design\n\nSmall.\n\n",
                 "--summary", "design", *alice)
    assert f"base v{head + 1} (rebased from v{head})" in rebased
    # the approve of a conflicting proposal is refused; the other one commits
    assert run(remote, env, "proposal", "approve", clashing, *bob)[0] != 0
    assert "committed by alice: none" in ok(remote, env, "approve", elsewhere, *bob)  # the alias


def test_help_says_what_each_command_needs_and_hides_the_aliases():
    done = ce("--help")
    owner, participant = done.stdout.split("Owner commands")[1].split("Participant commands")
    assert "serve" in owner and "invite" in owner and "proposal " in participant and "handoff " in participant
    rows = {line.split()[0] for line in done.stdout.splitlines() if re.match(r"  [a-z]", line)}
    assert not rows & set(ALIASES)
    assert ce("proposal", "--help").stdout.count("approve") >= 1


def test_the_old_names_still_run(world):
    room, remote, env = world
    doc = str(room.document)
    bob = ("--session-file", str(remote / "bob.json"))
    ok(remote, env, "write", "--expected", "head", "--lines", "1-1", "--text", "# Release plan!\n", "--summary", "louder", *bob)
    ok(remote, env, "handoff", "create", "--summary", "check the goals", "--assignee", "alice", "-q", *bob)
    handoff = as_json(remote, env, "handoff", "list", doc)["handoffs"][0]["id"]
    assert ce("handoff", doc, handoff, "--json").stdout == ce("handoff", "show", doc, handoff, "--json").stdout
    assert ce("handoffs", doc, "--json").stdout == ce("handoff", "list", doc, "--json").stdout
    assert ce("versions", doc, "--json").stdout == ce("version", "list", doc, "--json").stdout
    assert ce("diff", doc, "1", "2").stdout == ce("version", "diff", doc, "1", "2").stdout
    task = as_json(remote, env, "handoff", "show", doc, handoff)["task_id"]
    assert ce("task", doc, task, "--participant", "bob", "--json").stdout == \
        ce("task", "show", doc, task, "--participant", "bob", "--json").stdout


def test_version_0_is_no_version_not_the_head(world):
    """``head`` is spelled out; a literal 0 names no version: read, diffed, based on or expected, it is refused
    and nothing is printed or written (it never stands for the head)."""
    room, remote, env = world
    bob = ("--session-file", str(remote / "bob.json"))
    before = as_json(remote, env, "version", "list", *bob)["versions"][0]["number"]
    for args in (("version", "show", "0"), ("version", "show", "v0"), ("read", "--version", "0"),
                 ("version", "diff", "0", str(before)),
                 ("propose", "--base", "0", "--lines", "1-1", "--text", "# Zero\n", "--summary", "zero"),
                 ("write", "--expected", "0", "--lines", "1-1", "--text", "# Zero\n", "--summary", "zero")):
        code, out, err = run(remote, env, *args, *bob)
        assert code != 0 and out == "" and err.count("\n") == 1, (args, code, out, err)
    assert as_json(remote, env, "version", "list", *bob)["versions"][0]["number"] == before
    assert not any(p["summary"] == "zero" for p in as_json(remote, env, "proposal", "list", *bob)["proposals"])


#: The owner's commands, as ``ce --help`` heads them (``ce sessions`` is a participant's too: not among them).
OWNER_COMMANDS = next(names for title, names in SECTIONS.items() if title.startswith("Owner commands"))


def test_participant_help_names_only_commands_a_participant_can_run():
    """Every ``ce …`` a participant command's help names is a command (not a group or a half of one), and an
    owner command is named only in its FILE form (the owner's, on the room's machine): a colleague elsewhere
    has no FILE, so a help that sends them to ``ce sessions`` sends them nowhere."""
    import typer

    from commonroom.cli.main import ALIASES as hidden

    root = typer.main.get_group(app)

    def leaves(group: Any, path: list[str]):
        context = type(group).context_class(group)
        for name in group.list_commands(context):
            sub = group.get_command(context, name)
            if name in hidden or getattr(sub, "hidden", False) or (not path and name in OWNER_COMMANDS):
                continue
            yield from leaves(sub, [*path, name]) if hasattr(sub, "list_commands") else [[*path, name]]

    def resolves(words: list[str]) -> bool:
        node = root
        for word in words:
            if not hasattr(node, "list_commands"):
                return True
            found = node.get_command(type(node).context_class(node), word)
            if found is None:
                return False
            node = found
        return not hasattr(node, "list_commands")

    wrong = []
    for path in leaves(root, []):
        text = " ".join(CliRunner().invoke(app, [*path, "--help"], terminal_width=1000).stdout.split())
        for match in re.finditer(r"\bce ((?:[a-z][a-z-]* ?)+)", text):
            words = match.group(1).split()
            if words[0] in OWNER_COMMANDS and text[match.end(): match.end() + 4] != "FILE":
                wrong.append((path, match.group(0)))
            elif root.get_command(type(root).context_class(root), words[0]) and not resolves(words):
                wrong.append((path, match.group(0)))
    assert wrong == []


def test_a_released_lease_says_released_not_when_it_expires(world):
    room, remote, env = world
    bob = ("--session-file", str(remote / "bob.json"))
    lease = ok(remote, env, "lease", "acquire", "--lines", "1-1", "--ttl", "600", "-q", *bob).strip()
    released = ok(remote, env, "lease", "release", lease[:10] + "…", *bob)
    assert f"lease {lease} released" in released and "expires" not in released, released


def test_an_empty_id_is_refused_as_an_id_not_as_a_path(world):
    room, remote, env = world
    bob = ("--session-file", str(remote / "bob.json"))
    for args in (("proposal", "show", ""), ("handoff", "show", ""), ("task", "show", ""), ("lease", "release", ""),
                 ("proposal", "approve", "…")):
        code, out, err = run(remote, env, *args, *bob)
        assert code != 0 and out == "" and err.count("\n") == 1 and "//" not in err and " id" in err, (args, err)
