"""A region write in a real room: rebased when its region is untouched, refused when it changed.

Over HTTP and ``ce write`` (the MCP tool: ``tests/e2e/test_mcp_tools.py``):
a participant who holds a lease and writes their own region as of an older
version commits, rebased onto the head, when nobody touched that region
since (the answer's ``rebased_from``); a region that did change is
``stale_version`` with the diff of what changed there; a whole-document
write on an older version is still ``stale_version``. A write that changes
nothing commits nothing and says so (``committed: false``; ``ce write``
prints ``doc.md: no change; head stays vN``).
"""

from __future__ import annotations

import json

import pytest

from commonroom.errors import EXIT_CODES
from commonroom.schemas import errors_of
from tests.roomproc import ce

ALL = "read,propose,approve,lease,write"
GOALS = {"heading": ["Goals"]}
QUESTIONS = {"heading": ["Open questions"]}


@pytest.fixture(scope="module")
def writers(shared_room, tmp_path_factory):
    files = tmp_path_factory.mktemp("sessions")
    out = {}
    for name in ("wa", "wb"):
        session_file = files / f"{name}.json"
        joined = ce("join", shared_room.invite(name, ALL), "--session-file", str(session_file))
        assert joined.returncode == 0, joined.stderr
        out[name] = (shared_room.join(name, ALL), str(session_file))
    return out


def _put(client, expected, text, region=None):
    body = {"expected_version": expected, "text": text, **({"region": region} if region is not None else {})}
    return client.request("PUT", "/workspace/document", json=body)


def _head(client) -> tuple[int, str]:
    doc = client.get("/workspace/document").json()
    return doc["version"], doc["text"]


def test_a_leased_region_write_rebases_over_changes_elsewhere(writers):
    wa, wb = writers["wa"][0], writers["wb"][0]
    base, text = _head(wa)
    lease = wa.post("/workspace/leases", {"region": GOALS})
    assert lease.status_code == 201, lease.text
    try:
        other = _put(wb, base, "A line changed by wb.\n", {"lines": [3, 3]})  # elsewhere
        assert other.status_code == 200, other.text
        mine = _put(wa, base, "## Goals\n\n- Ship it, rebased.\n\n", GOALS)
        assert mine.status_code == 200, mine.text
        answer = mine.json()
        assert errors_of("editing#VersionInfo", answer) == []
        assert answer["rebased_from"] == base and answer["committed"] is True
        assert answer["number"] == base + 2 and answer["source"] == "write"
        now = _head(wa)[1]
        assert "A line changed by wb." in now and "- Ship it, rebased." in now
        assert "Ship the room foundation" not in now
    finally:
        wa.request("DELETE", f"/workspace/leases/{lease.json()['id']}")


def test_a_region_that_changed_is_stale_with_its_diff(writers):
    wa, wb = writers["wa"][0], writers["wb"][0]
    base, _ = _head(wa)
    assert _put(wb, base, "## Open questions\n\n1. Changed by wb.\n", QUESTIONS).status_code == 200
    stale = _put(wa, base, "## Open questions\n\n1. Changed by wa.\n", QUESTIONS)
    assert stale.status_code == 409 and stale.json()["error"] == "stale_version", stale.text
    body = stale.json()
    assert body["expected_version"] == base and body["current_version"] == base + 1
    assert "+1. Changed by wb." in body["diff"]
    whole = _put(wa, base, _head(wa)[1])  # a whole-document write on an older version: still compare-and-swap
    assert whole.status_code == 409 and whole.json()["error"] == "stale_version"


def test_a_write_that_changes_nothing_says_so(writers):
    wa, session_file = writers["wa"]
    head, text = _head(wa)
    line3 = text.splitlines(keepends=True)[2]
    same = _put(wa, head, line3, {"lines": [3, 3]})
    assert same.status_code == 200 and same.json()["committed"] is False and same.json()["number"] == head
    assert _head(wa)[0] == head
    printed = ce("write", "--expected", str(head), "--lines", "3-3", "--text", line3, "--session-file", session_file)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.strip() == f"doc.md: no change; head stays v{head}"  # an outcome names the room
    assert _head(wa)[0] == head


def test_ce_write_says_it_rebased(writers):
    wa, session_file = writers["wa"]
    wb = writers["wb"][0]
    base, _ = _head(wa)
    assert _put(wb, base, "Line 3 by wb again.\n", {"lines": [3, 3]}).status_code == 200
    done = ce("write", "--expected", str(base), "--heading", "Goals", "--text", "## Goals\n\n- From ce.\n\n",
              "--summary", "goals from ce", "--session-file", session_file)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith(f"(rebased from v{base})") and f"v{base + 2} committed" in done.stdout
    stale = ce("write", "--expected", str(base), "--lines", "3-3", "--text", "mine\n", "--session-file", session_file,
               "--json")
    assert stale.returncode == EXIT_CODES["stale_version"]
    assert json.loads(stale.stderr)["error"] == "stale_version"
