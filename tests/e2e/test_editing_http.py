"""Editing over HTTP against a real room: regions, leases, versions,
proposals, direct writes, and the error envelope with its recovery fields.

Every success body is checked against its schema (``schema/editing.json``,
``schema/room.json``) and every error body against ``schema/error.json``.
"""

from __future__ import annotations

import hashlib
import json
import signal
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest

from commonroom import conventions, regions
from commonroom.clock import parse_rfc3339
from commonroom.errors import STATUS
from commonroom.merge import unified_diff
from commonroom.schemas import errors_of
from commonroom.vocabulary import LEASE_TTL_DEFAULT, LEASE_TTL_MAX
from tests.conftest import SAMPLE
from tests.roomproc import Client, Room, corpus_files, start_room

ALL = "read,propose,approve,lease,write"
GOALS = {"heading": ["Goals"]}
OPEN_QUESTIONS = {"heading": ["Open questions"]}
SAMPLE_TEXT = SAMPLE.read_text("utf-8")


# -- helpers ------------------------------------------------------------------------


def ok(resp: httpx.Response, schema: str, status: int = 200) -> Any:
    """The JSON body of a success with ``status``, valid against ``schema``."""
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert errors_of(schema, body) == [], (schema, body)
    return body


def err(resp: httpx.Response, code: str, status: int | None = None) -> dict[str, Any]:
    """The error envelope of ``code`` (its seed status), valid against ``error.json``."""
    assert resp.status_code == (status or STATUS[code]), resp.text
    body = resp.json()
    assert body["error"] == code, body
    assert errors_of("error", body) == [], body
    return body


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def read(client: Client, region: Any = None) -> dict[str, Any]:
    params = {"region": json.dumps(region)} if region is not None else None
    return ok(client.get("/workspace/document", params=params), "room#Document")


def propose(client: Client, base: int, region: Any, text: str, summary: str = "") -> httpx.Response:
    return client.post("/workspace/proposals",
                       {"base_version": base, "region": region, "text": text, "summary": summary})


def write(client: Client, expected: int, text: str, region: Any = None, summary: str = "") -> httpx.Response:
    body: dict[str, Any] = {"expected_version": expected, "text": text, "summary": summary}
    if region is not None:
        body["region"] = region
    return client.request("PUT", "/workspace/document", json=body)


def lease(client: Client, region: Any, ttl: int | None = None) -> httpx.Response:
    body: dict[str, Any] = {"region": region}
    if ttl is not None:
        body["ttl_seconds"] = ttl
    return client.post("/workspace/leases", body)


def events(room: Room) -> list[tuple[str, dict[str, Any]]]:
    """``(type, payload)`` of every event in the sidecar's ring, oldest first."""
    con = sqlite3.connect(f"file:{room.document}.commonroom.db?mode=ro", uri=True)
    try:
        return [(t, json.loads(p)) for t, p in con.execute("SELECT type, payload FROM event ORDER BY id")]
    finally:
        con.close()


def section(text: str, region: Any) -> str:
    span = regions.resolve(text, region)
    return "".join(regions.lines_of(text)[span.start - 1: span.end])


def replaced(text: str, region: Any, new: str) -> str:
    return conventions.replace_span(text, regions.resolve(text, region), new)


# -- rooms -------------------------------------------------------------------------------

_stopping: list[Room] = []


@pytest.fixture(scope="module", autouse=True)
def _reap_rooms():
    """Rooms are stopped (SIGTERM) without waiting; the module waits for all at its end."""
    yield
    while _stopping:
        _stopping.pop().stop()


@pytest.fixture
def room(tmp_path: Path):
    """A fresh room on a copy of examples/sample.md (shadows the shared fixture: faster teardown)."""
    r = start_room(tmp_path, SAMPLE)
    yield r
    if r.proc.poll() is None:
        r.proc.send_signal(signal.SIGTERM)
    _stopping.append(r)


# -- regions over corpus documents -------------------------------------------------


@pytest.fixture(scope="module", params=[p.name for p in corpus_files()] + ["sample.md"])
def doc_room(request, tmp_path_factory):
    source = SAMPLE if request.param == "sample.md" else next(p for p in corpus_files() if p.name == request.param)
    room = start_room(tmp_path_factory.mktemp("regions"), source, name=source.name)
    room.source_text = source.read_bytes().decode("utf-8")
    room.reader = room.join("reader", "read")
    yield room
    room.proc.send_signal(signal.SIGTERM)
    _stopping.append(room)


def test_read_regions_by_heading_and_lines(doc_room):
    text = doc_room.source_text
    lines = regions.lines_of(text)
    n = len(lines)
    c = doc_room.reader
    whole = read(c)
    assert whole["text"] == text and whole["version"] == 1 and whole["content_hash"] == sha(text)
    found = regions.headings(text)
    paths = [h.path for h in found]
    titles = [h.title for h in found]
    unique = [h for h in found if paths.count(h.path) == 1]
    # A handful spread over the document, by full path, and by last title when that is unique.
    for h in unique[:: max(1, len(unique) // 6)][:8]:
        got = read(c, {"heading": list(h.path)})
        assert got["text"] == "".join(lines[h.line - 1: h.end_line])
        assert got["lines"] == [h.line, h.end_line]
        assert got["region"] == {"heading": list(h.path)}
        assert got["content_hash"] == sha(text) and got["version"] == 1
        if titles.count(h.title) == 1:
            assert read(c, {"heading": [h.title]})["lines"] == [h.line, h.end_line]
    mid = max(1, n // 2)
    for start, end in [(1, 1), (1, min(n, 10)), (mid, min(n, mid + 5)), (n, n)]:
        got = read(c, {"lines": [start, end]})
        assert got["text"] == "".join(lines[start - 1: end])
        assert got["lines"] == [start, end] and got["region"] == {"lines": [start, end]}
    bad = err(c.get("/workspace/document", params={"region": json.dumps({"lines": [n, n + 1]})}), "invalid_region")
    assert bad["region"] == {"lines": [n, n + 1]} and bad["details"]["line_count"] == n
    missing = {"heading": ["No such heading, surely"]}
    bad = err(c.get("/workspace/document", params={"region": json.dumps(missing)}), "invalid_region")
    assert bad["region"] == missing
    # A title used by several sections (changelogs) is ambiguous: invalid_region listing the candidates.
    dup = next((t for t in titles if titles.count(t) > 1), None)
    if dup is not None:
        bad = err(c.get("/workspace/document", params={"region": json.dumps({"heading": [dup]})}),
                  "invalid_region")
        assert bad["details"]["count"] == titles.count(dup)
        assert all(cand[-1] == dup for cand in bad["details"]["candidates"])
    # "# ..." lines that the parser says are not headings (code fences, comments) do not resolve.
    starts = {h.line for h in found}
    fake = [ln.lstrip("#").strip() for i, ln in enumerate(lines, 1)
            if ln.startswith("# ") and i not in starts and ln.lstrip("#").strip() not in titles]
    for title in fake[:3]:
        bad = err(c.get("/workspace/document", params={"region": json.dumps({"heading": [title]})}),
                  "invalid_region")
        assert bad["details"]["reason"] == "no_match"


def test_crlf_document_keeps_its_line_endings(tmp_path):
    source = next(p for p in corpus_files() if p.name == "vscode-powershell-preview_to_stable_changelog.md")
    text = source.read_bytes().decode("utf-8")
    assert "\r\n" in text
    r = start_room(tmp_path, source, name=source.name)
    try:
        alice = r.join("alice", ALL)
        found = [h for h in regions.headings(text) if [x.path for x in regions.headings(text)].count(h.path) == 1]
        first, last = found[1], found[-1]
        got = read(alice, {"heading": list(first.path)})
        assert got["text"].endswith("\r\n") and "\n" not in got["text"].replace("\r\n", "")
        # A replacement without a final newline gets the document's CRLF.
        p = ok(propose(alice, 1, {"lines": [first.line + 1, first.line + 1]}, "one line, no newline"),
               "editing#Proposal", 201)
        ok(alice.post(f"/workspace/proposals/{p['id']}/approve"), "editing#ApproveResult")
        v2 = conventions.replace_span(text, regions.Span(first.line + 1, first.line + 1), "one line, no newline")
        assert "one line, no newline\r\n" in v2
        # An edit at the old base elsewhere rebases cleanly over it.
        q = ok(propose(alice, 1, {"heading": list(last.path)}, f"{'#' * last.level} {last.title}\r\n\r\nGone.\r\n"),
               "editing#Proposal", 201)
        assert q["rebased_from"] == 1
        ok(alice.post(f"/workspace/proposals/{q['id']}/approve"), "editing#ApproveResult")
        head = read(alice)
        want = conventions.replace_span(v2, regions.resolve(v2, {"heading": list(last.path)}),
                                    f"{'#' * last.level} {last.title}\r\n\r\nGone.\r\n")
        assert head["text"] == want and head["content_hash"] == sha(want)
        assert r.wait_for_file(want.encode("utf-8")) == want.encode("utf-8")
        assert want.count("\n") == want.count("\r\n")  # still CRLF throughout
    finally:
        r.proc.send_signal(signal.SIGTERM)
        _stopping.append(r)


def test_region_not_json_is_invalid_request(room):
    c = room.join("alice", "read")
    err(c.get("/workspace/document", params={"region": "{nope"}), "invalid_request")


# -- leases ------------------------------------------------------------------------------


def test_lease_acquire_renew_list_release(room):
    alice = room.join("alice", ALL)
    got = ok(lease(alice, GOALS), "editing#Lease", 201)
    assert got["status"] == "active" and got["participant"] == "alice"
    assert got["session_id"] == alice.session["id"]
    assert got["region"] == {"heading": ["Release plan", "Goals"]}
    assert got["lines"] == [regions.resolve(SAMPLE_TEXT, GOALS).start, regions.resolve(SAMPLE_TEXT, GOALS).end]
    ttl = (parse_rfc3339(got["expires_at"]) - parse_rfc3339(got["acquired_at"])).total_seconds()
    assert abs(ttl - LEASE_TTL_DEFAULT) < 2, ttl  # default TTL

    listed = ok(alice.get("/workspace/leases"), "editing#LeasesPage")
    assert [x["id"] for x in listed["leases"]] == [got["id"]]

    renewed = ok(alice.post(f"/workspace/leases/{got['id']}/renew", {"ttl_seconds": LEASE_TTL_MAX}), "editing#Lease")
    ttl = (parse_rfc3339(renewed["expires_at"]) - parse_rfc3339(got["acquired_at"])).total_seconds()
    assert LEASE_TTL_MAX - 1 < ttl < LEASE_TTL_MAX + 10
    err(alice.post(f"/workspace/leases/{got['id']}/renew", {"ttl_seconds": LEASE_TTL_MAX + 1}), "invalid_request")
    err(alice.post(f"/workspace/leases/{got['id']}/renew", {"ttl_seconds": 0}), "invalid_request")
    renewed = ok(alice.post(f"/workspace/leases/{got['id']}/renew", {}), "editing#Lease")
    ttl = (parse_rfc3339(renewed["expires_at"]) - parse_rfc3339(got["acquired_at"])).total_seconds()
    assert LEASE_TTL_DEFAULT - 1 < ttl < LEASE_TTL_DEFAULT + 10  # renewing without a TTL renews for the default

    # TTL at most the maximum (schema editing#TtlSeconds) on acquire too; the maximum itself is fine.
    err(lease(alice, OPEN_QUESTIONS, LEASE_TTL_MAX + 1), "invalid_request")
    long = ok(lease(alice, OPEN_QUESTIONS, LEASE_TTL_MAX), "editing#Lease", 201)

    released = ok(alice.request("DELETE", f"/workspace/leases/{got['id']}"), "editing#Lease")
    assert released["status"] == "released"
    listed = ok(alice.get("/workspace/leases"), "editing#LeasesPage")
    assert [x["id"] for x in listed["leases"]] == [long["id"]]
    # Released is not live: renewing or releasing again is refused.
    for refused in (alice.request("DELETE", f"/workspace/leases/{got['id']}"),
                    alice.post(f"/workspace/leases/{got['id']}/renew", {})):
        body = err(refused, "lease_conflict")  # 409: the lease moved on, read it again
        assert body["lease_id"] == got["id"] and body["details"]["status"] == "released"
    # Another session cannot touch alice's lease.
    bob = room.join("bob", ALL)
    err(bob.request("DELETE", f"/workspace/leases/{long['id']}"), "not_found")
    err(bob.post(f"/workspace/leases/{long['id']}/renew", {}), "not_found")
    kinds = [t for t, _ in events(room)]
    assert kinds.count("lease.acquired") == 2 and "lease.renewed" in kinds and "lease.released" in kinds


def test_lease_conflict_carries_lease_id_and_region(room):
    alice, bob = room.join("alice", ALL), room.join("bob", ALL)
    mine = ok(lease(alice, GOALS), "editing#Lease", 201)
    goals = regions.resolve(SAMPLE_TEXT, GOALS)
    for region in (GOALS, {"lines": [goals.start + 1, goals.start + 1]}, {"lines": [1, goals.start]}, None,
                   {"document": True}):
        body = err(lease(bob, region), "lease_conflict")
        assert body["lease_id"] == mine["id"]
        assert body["region"] == mine["region"]
        assert body["details"]["session_id"] == alice.session["id"]
    # Disjoint regions lease fine; the same session may lease overlapping regions of its own.
    ok(lease(bob, OPEN_QUESTIONS), "editing#Lease", 201)
    ok(lease(alice, {"lines": [goals.start, goals.start]}), "editing#Lease", 201)
    assert len(ok(bob.get("/workspace/leases"), "editing#LeasesPage")["leases"]) == 3


def test_lease_dies_with_its_session(room):
    alice, bob = room.join("alice", ALL), room.join("bob", ALL)
    mine = ok(lease(alice, GOALS), "editing#Lease", 201)
    err(lease(bob, GOALS), "lease_conflict")
    op = room.operator()
    revoked = ok(op.post("/owner/revoke", {"session": alice.session["id"]}), "owner#RevokeResult")
    assert revoked["revoked"] is True
    err(alice.get("/workspace/leases"), "unauthorized")
    assert ok(bob.get("/workspace/leases"), "editing#LeasesPage")["leases"] == []
    theirs = ok(lease(bob, GOALS), "editing#Lease", 201)
    assert theirs["id"] != mine["id"]
    expired = [p for t, p in events(room) if t == "lease.expired"]
    assert [p["lease_id"] for p in expired] == [mine["id"]]


def test_commit_and_approval_touching_a_leased_region_are_refused(room):
    alice = room.join("alice", ALL)
    bob = room.join("bob", "read,propose,write")
    carol = room.join("carol", "read,approve")
    mine = ok(lease(alice, GOALS), "editing#Lease", 201)

    # Direct write over the leased section.
    body = err(write(bob, 1, "## Goals\n\n- bob was here\n\n", GOALS), "lease_conflict")
    assert body["lease_id"] == mine["id"] and body["region"] == mine["region"]
    # A whole-document write that changes a line inside the lease.
    body = err(write(bob, 1, SAMPLE_TEXT.replace("Ship the room", "Ship the ROOM")), "lease_conflict")
    assert body["lease_id"] == mine["id"]
    # Disjoint: fine.
    v2 = ok(write(bob, 1, "## Open questions\n\n1. None.\n", OPEN_QUESTIONS, "answer"), "editing#VersionInfo")
    assert v2["number"] == 2

    # A proposal can be made over a leased region, but not approved by someone else.
    p = ok(propose(bob, 2, GOALS, "## Goals\n\n- proposed by bob\n\n", "bob's goals"), "editing#Proposal", 201)
    body = err(carol.post(f"/workspace/proposals/{p['id']}/approve"), "lease_conflict")
    assert body["lease_id"] == mine["id"] and body["region"] == mine["region"]
    assert ok(carol.get(f"/workspace/proposals/{p['id']}"), "editing#Proposal")["status"] == "open"
    assert read(carol)["version"] == 2
    # Once alice releases, the approval goes through.
    ok(alice.request("DELETE", f"/workspace/leases/{mine['id']}"), "editing#Lease")
    result = ok(carol.post(f"/workspace/proposals/{p['id']}/approve"), "editing#ApproveResult")
    assert result["version"]["number"] == 3
    assert "- proposed by bob" in read(carol)["text"]


def test_a_heading_lease_follows_its_section(room):
    alice = room.join("alice", ALL)
    bob = room.join("bob", "read,write")
    mine = ok(lease(alice, OPEN_QUESTIONS), "editing#Lease", 201)
    before = regions.resolve(SAMPLE_TEXT, OPEN_QUESTIONS)
    assert mine["lines"] == [before.start, before.end]
    # Bob inserts three lines near the top: allowed (far from the lease), and the section moves down.
    v2 = ok(write(bob, 1, "A\nB\nC\n", {"lines": [2, 1]}), "editing#VersionInfo")
    listed = ok(alice.get("/workspace/leases"), "editing#LeasesPage")["leases"]
    assert listed[0]["lines"] == [before.start + 3, before.end + 3] and listed[0]["version"] == v2["number"]
    # The section's new lines are still protected; its old lines now hold other text.
    body = err(write(bob, 2, "## Open questions\n\nNone.\n", OPEN_QUESTIONS), "lease_conflict")
    assert body["lease_id"] == mine["id"]
    ok(write(bob, 2, "Moved.\n", {"lines": [before.start, before.start]}), "editing#VersionInfo")


def test_lease_holder_may_approve_a_change_in_its_own_lease(room):
    alice = room.join("alice", ALL)
    bob = room.join("bob", "read,propose")
    ok(lease(alice, GOALS), "editing#Lease", 201)
    p = ok(propose(bob, 1, GOALS, "## Goals\n\n- agreed\n\n"), "editing#Proposal", 201)
    ok(alice.post(f"/workspace/proposals/{p['id']}/approve"), "editing#ApproveResult")
    # The author's own lease does not block its own write either.
    head = read(alice)["version"]
    ok(write(alice, head, "## Goals\n\n- agreed, twice\n\n", GOALS), "editing#VersionInfo")


# -- versions --------------------------------------------------------------------------------


def test_versions_list_get_diff_and_provenance(room):
    bob = room.join("bob", ALL)
    texts = {1: SAMPLE_TEXT}
    text = SAMPLE_TEXT
    for i in range(2, 6):
        text = text.replace("\n## Open questions", f"\nLine {i}.\n\n## Open questions", 1)
        info = ok(write(bob, i - 1, text, summary=f"write {i}"), "editing#VersionInfo")
        assert info["number"] == i
        texts[i] = text
    p = ok(propose(bob, 5, GOALS, "## Goals\n\n- by proposal\n\n", "goals by proposal"), "editing#Proposal", 201)
    approved = ok(bob.post(f"/workspace/proposals/{p['id']}/approve"), "editing#ApproveResult")
    texts[6] = replaced(texts[5], GOALS, "## Goals\n\n- by proposal\n\n")
    assert approved["version"]["number"] == 6

    # Paging, limit 1: every version exactly once, newest first.
    seen: list[int] = []
    cursor = None
    for _ in range(10):
        params = {"limit": 1, **({"cursor": cursor} if cursor else {})}
        page = ok(bob.get("/workspace/versions", params=params), "editing#VersionsPage")
        seen += [v["number"] for v in page["versions"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [6, 5, 4, 3, 2, 1]
    page = ok(bob.get("/workspace/versions", params={"limit": 4}), "editing#VersionsPage")
    assert [v["number"] for v in page["versions"]] == [6, 5, 4, 3] and page["next_cursor"]
    page = ok(bob.get("/workspace/versions", params={"limit": 4, "cursor": page["next_cursor"]}),
              "editing#VersionsPage")
    assert [v["number"] for v in page["versions"]] == [2, 1] and page["next_cursor"] is None
    assert len(ok(bob.get("/workspace/versions", params={"limit": 200}), "editing#VersionsPage")["versions"]) == 6
    for bad in (0, 201, -1, "x", "1.5"):
        body = err(bob.get("/workspace/versions", params={"limit": bad}), "invalid_request")
        assert body["details"]["parameter"] == "limit"
        if bad == 0:  # the words ce versions --limit 0 prints too (test_editing_cli.py)
            assert body["message"] == "parameter limit is invalid: 0 is less than the minimum of 1"
    err(bob.get("/workspace/versions", params={"cursor": "garbage!"}), "invalid_request")

    # Each version: author, session, time, summary, content hash, source and what made it.
    for n, want in texts.items():
        v = ok(bob.get(f"/workspace/versions/{n}"), "editing#VersionInfo")
        assert v["number"] == n and v["text"] == want and v["content_hash"] == sha(want)
        assert parse_rfc3339(v["created_at"])
        if n == 1:
            assert v["source"] == "initial" and v["author"] is None and v["session_id"] is None
        elif n < 6:
            assert v["source"] == "write" and v["proposal_id"] is None
            assert v["author"] == "bob" and v["session_id"] == bob.session["id"]
            assert v["summary"] == f"write {n}"
        else:
            assert v["source"] == "proposal" and v["proposal_id"] == p["id"]
            assert v["author"] == "bob" and v["summary"] == "goals by proposal"
    body = err(bob.get("/workspace/versions/99"), "version_not_found")
    assert body["current_version"] == 6
    err(bob.get("/workspace/versions/0"), "version_not_found")
    err(bob.get("/workspace/versions/abc"), "invalid_request")

    d = ok(bob.get("/workspace/diff", params={"from": 1, "to": 3}), "editing#Diff")
    assert d == {"from_version": 1, "to_version": 3, "diff": unified_diff(texts[1], texts[3], "v1", "v3")}
    assert "+Line 2." in d["diff"] and "+Line 3." in d["diff"]
    d = ok(bob.get("/workspace/diff", params={"from": 4}), "editing#Diff")
    assert d["to_version"] == 6 and d["diff"] == unified_diff(texts[4], texts[6], "v4", "v6")
    assert ok(bob.get("/workspace/diff", params={"from": 2, "to": 2}), "editing#Diff")["diff"] == ""
    err(bob.get("/workspace/diff", params={"from": 1, "to": 99}), "version_not_found")
    err(bob.get("/workspace/diff", params={"from": "x"}), "invalid_request")

    # The file on disk is the head; each commit appended its events.
    assert room.document.read_text("utf-8") == texts[6]
    committed = [p["version"] for t, p in events(room) if t == "version.committed"]
    assert committed == [1, 2, 3, 4, 5, 6]


# -- proposals -----------------------------------------------------------------------------------


def test_proposal_lifecycle(room):
    alice = room.join("alice", ALL)
    bob = room.join("bob", "read,propose")
    new_goals = "## Goals\n\n- one room, one file\n\n"
    p1 = ok(propose(bob, 1, GOALS, new_goals, "tighter goals"), "editing#Proposal", 201)
    assert p1["status"] == "open" and p1["author"] == "bob" and p1["base_version"] == 1
    assert p1["rebased_from"] is None and p1["committed_version"] is None
    assert p1["region"] == {"heading": ["Release plan", "Goals"]}
    assert p1["session_id"] == bob.session["id"] and p1["text"] == new_goals
    p2 = ok(propose(bob, 1, OPEN_QUESTIONS, "## Open questions\n\nNone.\n", "no questions"), "editing#Proposal", 201)
    p3 = ok(propose(bob, 1, {"lines": [3, 4]}, "Short intro.\n", "intro"), "editing#Proposal", 201)

    assert ok(bob.get(f"/workspace/proposals/{p1['id']}"), "editing#Proposal") == p1
    listed = ok(bob.get("/workspace/proposals"), "editing#ProposalsPage")
    assert [p["id"] for p in listed["proposals"]] == [p1["id"], p2["id"], p3["id"]]
    # Paging.
    ids, cursor = [], None
    for _ in range(5):
        page = ok(bob.get("/workspace/proposals", params={"limit": 1, **({"cursor": cursor} if cursor else {})}),
                  "editing#ProposalsPage")
        ids += [p["id"] for p in page["proposals"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert ids == [p1["id"], p2["id"], p3["id"]]
    err(bob.get("/workspace/proposals", params={"limit": 201}), "invalid_request")
    err(bob.get("/workspace/proposals", params={"status": "maybe"}), "invalid_request")

    approved = ok(alice.post(f"/workspace/proposals/{p1['id']}/approve"), "editing#ApproveResult")
    assert approved["proposal"]["status"] == "approved" and approved["proposal"]["committed_version"] == 2
    assert approved["proposal"]["decided_by"] == "alice"
    assert approved["version"]["number"] == 2 and approved["version"]["proposal_id"] == p1["id"]
    assert approved["version"]["author"] == "bob"
    rejected = ok(alice.post(f"/workspace/proposals/{p2['id']}/reject", {"reason": "keep the questions"}),
                  "editing#Proposal")
    assert rejected["status"] == "rejected" and rejected["reason"] == "keep the questions"
    assert rejected["decided_by"] == "alice"
    # Only the author withdraws.
    err(alice.post(f"/workspace/proposals/{p3['id']}/withdraw"), "permission_denied")
    withdrawn = ok(bob.post(f"/workspace/proposals/{p3['id']}/withdraw"), "editing#Proposal")
    assert withdrawn["status"] == "withdrawn"

    by_status = {s: [p["id"] for p in ok(bob.get("/workspace/proposals", params={"status": s}),
                                         "editing#ProposalsPage")["proposals"]]
                 for s in ("open", "approved", "rejected", "withdrawn")}
    assert by_status == {"open": [], "approved": [p1["id"]], "rejected": [p2["id"]], "withdrawn": [p3["id"]]}
    # Decided proposals stay decided.
    for pid in (p1["id"], p2["id"], p3["id"]):
        for refused in (alice.post(f"/workspace/proposals/{pid}/approve"),
                        alice.post(f"/workspace/proposals/{pid}/reject", {}),
                        bob.post(f"/workspace/proposals/{pid}/withdraw")):  # bob wrote them
            body = err(refused, "proposal_conflict")  # 409 with the record's id and status
            assert body["proposal_id"] == pid and body["details"]["status"] != "open"
    doc = read(bob)
    assert doc["version"] == 2 and doc["text"] == replaced(SAMPLE_TEXT, GOALS, new_goals)
    assert room.document.read_text("utf-8") == doc["text"]
    kinds = [t for t, _ in events(room)]
    for kind in ("proposal.created", "proposal.approved", "proposal.rejected", "proposal.withdrawn",
                 "version.committed"):
        assert kind in kinds, kind
    assert kinds.count("proposal.created") == 3

    # The operator (owner port) sees and decides proposals too.
    op = room.operator()
    assert len(ok(op.get("/workspace/proposals"), "editing#ProposalsPage")["proposals"]) == 3


def test_proposal_not_found(room):
    alice = room.join("alice", ALL)
    for method, path, body in (("GET", "/workspace/proposals/pr_nope", None),
                               ("POST", "/workspace/proposals/pr_nope/approve", {}),
                               ("POST", "/workspace/proposals/pr_nope/reject", {"reason": "x"}),
                               ("POST", "/workspace/proposals/pr_nope/withdraw", {})):
        got = err(alice.request(method, path, json=body), "proposal_not_found")
        assert got["proposal_id"] == "pr_nope"


def test_proposal_on_unknown_version_or_bad_region(room):
    alice = room.join("alice", ALL)
    err(propose(alice, 9, GOALS, "x\n"), "version_not_found")
    body = err(propose(alice, 1, {"heading": ["Nowhere"]}, "x\n"), "invalid_region")
    assert body["region"] == {"heading": ["Nowhere"]}
    err(propose(alice, 1, {"lines": [1]}, "x\n"), "invalid_request")  # schema: two items
    err(alice.post("/workspace/proposals", {"region": GOALS, "text": "x"}), "invalid_request")  # no base


def test_stale_version_on_create_when_the_change_conflicts(room):
    alice, bob = room.join("alice", ALL), room.join("bob", ALL)
    p = ok(propose(alice, 1, GOALS, "## Goals\n\n- alice's goals\n\n", "alice rewrites goals"),
           "editing#Proposal", 201)
    ok(alice.post(f"/workspace/proposals/{p['id']}/approve"), "editing#ApproveResult")
    body = err(propose(bob, 1, GOALS, "## Goals\n\n- bob's goals\n\n", "bob rewrites goals"), "stale_version")
    assert body["base_version"] == 1 and body["current_version"] == 2
    assert body["diff"].startswith("--- v1\n+++ v2\n")
    assert "-- Ship the room foundation: invitations, sessions, reads.\n" in body["diff"]
    assert "+- alice's goals\n" in body["diff"]
    assert [(c["version"], c["author"], c["summary"]) for c in body["changes"]] == [(2, "alice", "alice rewrites goals")]
    assert body["details"]["conflicts"]
    # Nothing was stored.
    assert len(ok(bob.get("/workspace/proposals"), "editing#ProposalsPage")["proposals"]) == 1

    # The diff is over the region: a change elsewhere in between is in `changes`, not in `diff`.
    v2 = read(alice)["text"]
    ok(write(alice, 2, v2.replace("2. How long should invitations last?", "2. A day."), summary="elsewhere"),
       "editing#VersionInfo")
    body = err(propose(bob, 1, GOALS, "## Goals\n\n- bob again\n\n"), "stale_version")
    assert body["current_version"] == 3 and [c["summary"] for c in body["changes"]] == ["alice rewrites goals",
                                                                                         "elsewhere"]
    assert "+- alice's goals\n" in body["diff"] and "A day." not in body["diff"]


def test_clean_rebase_on_create_proceeds(room):
    alice, bob = room.join("alice", ALL), room.join("bob", ALL)
    p = ok(propose(alice, 1, GOALS, "## Goals\n\n- alice's goals\n\n", "alice"), "editing#Proposal", 201)
    ok(alice.post(f"/workspace/proposals/{p['id']}/approve"), "editing#ApproveResult")
    q = ok(propose(bob, 1, OPEN_QUESTIONS, "## Open questions\n\n1. Nobody approves on weekends.\n", "bob"),
           "editing#Proposal", 201)
    assert q["rebased_from"] == 1 and q["base_version"] == 2
    result = ok(alice.post(f"/workspace/proposals/{q['id']}/approve"), "editing#ApproveResult")
    assert result["version"]["number"] == 3
    head = read(bob)["text"]
    assert "- alice's goals\n" in head and "1. Nobody approves on weekends.\n" in head
    assert "Ship the room foundation" not in head and "Who approves proposals on weekends?" not in head


def test_proposal_conflict_on_approve(room):
    alice, bob = room.join("alice", ALL), room.join("bob", ALL)
    pa = ok(propose(alice, 1, GOALS, "## Goals\n\n- alice's goals\n\n", "alice"), "editing#Proposal", 201)
    pb = ok(propose(bob, 1, GOALS, "## Goals\n\n- bob's goals\n\n", "bob"), "editing#Proposal", 201)
    pc = ok(propose(bob, 1, OPEN_QUESTIONS, "## Open questions\n\nNone.\n", "bob q"), "editing#Proposal", 201)
    ok(alice.post(f"/workspace/proposals/{pa['id']}/approve"), "editing#ApproveResult")
    body = err(alice.post(f"/workspace/proposals/{pb['id']}/approve"), "proposal_conflict")
    assert body["proposal_id"] == pb["id"]
    hunks = body["details"]["hunks"]
    assert hunks and any("bob's goals" in h["ours"] and "alice's goals" in h["theirs"] for h in hunks)
    assert ok(bob.get(f"/workspace/proposals/{pb['id']}"), "editing#Proposal")["status"] == "open"
    # A proposal made at the same base on a disjoint region still merges on approval.
    result = ok(alice.post(f"/workspace/proposals/{pc['id']}/approve"), "editing#ApproveResult")
    assert result["version"]["number"] == 3
    head = read(alice)["text"]
    assert "alice's goals" in head and "None.\n" in head and "bob's goals" not in head
    assert room.document.read_text("utf-8") == head


def test_direct_write_stale_version(room):
    bob = room.join("bob", ALL)
    v2 = ok(write(bob, 1, SAMPLE_TEXT + "\nAppendix.\n", summary="appendix"), "editing#VersionInfo")
    assert v2["number"] == 2 and v2["source"] == "write"
    body = err(write(bob, 1, "everything replaced\n"), "stale_version")
    assert body["expected_version"] == 1 and body["current_version"] == 2
    assert body["diff"] == unified_diff(SAMPLE_TEXT, SAMPLE_TEXT + "\nAppendix.\n", "v1", "v2")
    assert [c["summary"] for c in body["changes"]] == ["appendix"]
    body = err(write(bob, 7, "x\n"), "stale_version")
    assert body["expected_version"] == 7 and body["current_version"] == 2
    # A region write at the head works, and its version records it.
    v3 = ok(write(bob, 2, "## Goals\n\n- shorter\n\n", GOALS, "goals"), "editing#VersionInfo")
    assert v3["number"] == 3 and v3["summary"] == "goals" and v3["session_id"] == bob.session["id"]
    assert read(bob)["text"] == replaced(SAMPLE_TEXT + "\nAppendix.\n", GOALS, "## Goals\n\n- shorter\n\n")
    err(write(bob, 3, "x", {"heading": ["Nope"]}), "invalid_region")
    err(bob.request("PUT", "/workspace/document", json={"text": "x"}), "invalid_request")


# -- capabilities ----------------------------------------------------------------------------------


def test_permission_denied_for_each_capability(room):
    alice = room.join("alice", ALL)
    p = ok(propose(alice, 1, GOALS, "## Goals\n\n- x\n\n"), "editing#Proposal", 201)
    lease_id = ok(lease(alice, OPEN_QUESTIONS), "editing#Lease", 201)["id"]
    everything = set(ALL.split(","))
    calls = {
        "propose": lambda c: propose(c, 1, GOALS, "## Goals\n\n- y\n\n"),
        "approve": lambda c: c.post(f"/workspace/proposals/{p['id']}/approve"),
        "lease": lambda c: lease(c, {"lines": [1, 1]}),
        "write": lambda c: write(c, 1, "z\n"),
        "read": lambda c: c.get("/workspace/versions"),
    }
    for cap, call in calls.items():
        c = room.join(f"no-{cap}", ",".join(sorted(everything - {cap})))
        body = err(call(c), "permission_denied")
        assert body["details"]["required"] == cap, body
    no_approve = room.join("no-approve-2", "read,propose")
    assert err(no_approve.post(f"/workspace/proposals/{p['id']}/reject", {}), "permission_denied")["details"]["required"] == "approve"
    no_lease = room.join("no-lease-2", "read")
    assert err(no_lease.post(f"/workspace/leases/{lease_id}/renew", {}), "permission_denied")["details"]["required"] == "lease"
    assert err(no_lease.request("DELETE", f"/workspace/leases/{lease_id}"), "permission_denied")["details"]["required"] == "lease"
    blind = room.join("blind", "propose")
    for path in ("/workspace/document", "/workspace/proposals", f"/workspace/proposals/{p['id']}",
                 "/workspace/versions/1", "/workspace/diff?from=1"):
        assert err(blind.get(path), "permission_denied")["details"]["required"] == "read"
    # Nothing changed.
    assert read(alice)["version"] == 1
    assert ok(alice.get(f"/workspace/proposals/{p['id']}"), "editing#Proposal")["status"] == "open"
