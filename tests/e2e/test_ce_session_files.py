"""Sessions that never misfire: ``ce join`` stores one session file per room, a join that replaces a live
session says so, a command without ``--session-file`` never guesses between rooms, ``ce join`` prints the
session id, one-line outcomes name the room, and a board post records the caller's own session unless told
otherwise (docs/operator.md, *Session files: one per room*).

Two real rooms; ``ce`` runs with its own empty config home.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import SAMPLE
from tests.roomproc import ce, start_room


@pytest.fixture(scope="module")
def rooms(tmp_path_factory):
    first = start_room(tmp_path_factory.mktemp("first"), SAMPLE, name="plan.md")
    second = start_room(tmp_path_factory.mktemp("second"), SAMPLE, name="notes.md")
    yield first, second
    first.stop()
    second.stop()


def test_one_session_file_per_room_and_no_guessing(rooms, tmp_path: Path):
    first, second = rooms
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "COMMONROOM_SESSION": ""}
    joined = ce("join", first.invite("ana", "read,propose"), env=env)
    assert joined.returncode == 0 and joined.stderr == "", joined.stderr
    found = re.fullmatch(r"joined plan\.md as ana \(read, propose\): session (s_[0-9a-f]{24}) saved in (\S+)\n",
                         joined.stdout)
    assert found, joined.stdout
    first_file = Path(found.group(2))
    assert first_file.parent == tmp_path / "config" / "commonroom" / "sessions" and first_file.stat().st_mode & 0o077 == 0
    # the one stored session is the default
    assert ce("read", env=env).stdout.encode("utf-8") == first.document.read_bytes()
    # a second room's join goes to its own file: the first room's session stays
    again = ce("join", second.invite("ben", "read,propose"), env=env)
    assert again.returncode == 0 and again.stderr == "", again.stderr
    second_file = Path(again.stdout.split(" saved in ")[1].strip())
    assert second_file != first_file and json.loads(first_file.read_text())["session_id"] == found.group(1)
    # two rooms stored: a command without --session-file names them and acts on neither
    refused = ce("read", "--json", env=env)
    envelope = json.loads(refused.stderr)
    assert refused.returncode == 25 and envelope["error"] == "invalid_request"
    assert "plan.md as ana" in envelope["message"] and "notes.md as ben" in envelope["message"]
    assert sorted(envelope["details"]["session_files"]) == sorted([str(first_file), str(second_file)])
    # each works named, and a one-line outcome names the room first
    made = ce("propose", "--base", "head", "--lines", "1-1", "--text", "# Plan\n", "--session-file", str(second_file),
              env=env)
    assert made.returncode == 0 and made.stdout.startswith("notes.md: proposal pr_"), made.stdout
    # joining the same room again replaces its session there, and says so
    replaced = ce("join", first.invite("ana", "read"), env=env)
    assert replaced.returncode == 0 and f"replaced ana's live session {found.group(1)} of this room in {first_file}" \
        in replaced.stderr, replaced.stderr
    # an explicit file holding another room's live session: replaced, and said so naming that room
    elsewhere = ce("join", first.invite("cy", "read"), "--session-file", str(second_file), env=env)
    assert elsewhere.returncode == 0 and "replaced ben's live session" in elsewhere.stderr \
        and "of room notes.md" in elsewhere.stderr, elsewhere.stderr


def test_a_board_post_records_the_callers_own_session(rooms, tmp_path: Path):
    first, _ = rooms
    path = tmp_path / "dee.json"
    assert ce("join", first.invite("dee", "read,message"), "--session-file", str(path)).returncode == 0
    own = json.loads(path.read_text())["session_id"]
    args = ("--session-file", str(path), "--json")
    by_default = json.loads(ce("board", "post", "-", "note", "one", *args).stdout)
    with_dash = json.loads(ce("board", "post", "-", "note", "two", "--recording-session", "-", *args).stdout)
    declined = json.loads(ce("board", "post", "-", "note", "three", "--recording-session", "none", *args).stdout)
    assert by_default["author_session_id"] == own and with_dash["author_session_id"] == own
    assert declined["author_session_id"] is None
