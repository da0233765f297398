"""The editing commands of ``ce``: local reads of the sidecar and
participant commands over the stored session, with each error's own exit status.

The real thing runs the installed ``ce`` in a subprocess; most participant
commands run in-process through Typer's ``CliRunner`` (same code, same real
room over HTTP, much faster).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from typer.testing import CliRunner

from commonroom import conventions, regions
from commonroom.cli.main import app
from commonroom.errors import EXIT_CODES
from commonroom.merge import unified_diff
from commonroom.schemas import errors_of
from tests.conftest import SAMPLE
from tests.roomproc import Room, ce, start_room

ALL = "read,propose,approve,lease,write"
SAMPLE_TEXT = SAMPLE.read_text("utf-8")
GOALS_TEXT = "## Goals\n\n- one file, many hands\n\n"


def run(*args: str, input: str | None = None, real: bool = False) -> tuple[int, str, str]:
    """``(exit status, stdout, stderr)`` of ``ce args`` (``real``: the installed ``ce`` in a subprocess)."""
    if real:
        p = ce(*args, input=input)
        return p.returncode, p.stdout, p.stderr
    result = CliRunner().invoke(app, list(args), input=input)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def ok_json(args: tuple[str, ...], schema: str | None = None, **kw: Any) -> Any:
    """Run ``ce args --json``: it must succeed with a JSON answer (valid against ``schema``)."""
    code, out, errout = run(*args, "--json", **kw)
    assert code == 0, (args, out, errout)
    body = json.loads(out)
    if schema:
        assert errors_of(schema, body) == [], body
    return body


def fails(args: tuple[str, ...], error: str, **kw: Any) -> dict[str, Any]:
    """Run ``ce args --json``: it must exit with ``error``'s status and print its envelope on stderr."""
    code, out, errout = run(*args, "--json", **kw)
    body = json.loads(errout)
    assert body["error"] == error, (args, body)
    assert code == EXIT_CODES[error], (args, code, body)
    assert errors_of("error", body) == [], body
    return body


def join(room: Room, folder: Path, name: str, caps: str, real: bool = False) -> str:
    """``ce join`` into a session file; returns its path."""
    path = folder / f"{name}.session.json"
    code, out, errout = run("join", room.invite(name, caps), "--session-file", str(path), "--json", real=real)
    assert code == 0, errout
    assert json.loads(out)["session"]["participant"]["name"] == name
    return str(path)


def test_exit_statuses_are_distinct():
    assert len(set(EXIT_CODES.values())) == len(EXIT_CODES)
    assert all(code not in (0, 1, 2) for code in EXIT_CODES.values())


def test_local_reads_work_whether_or_not_the_room_runs(tmp_path):
    room = start_room(tmp_path, SAMPLE)
    doc = str(room.document)
    try:
        alice = room.join("alice", ALL)
        v2 = SAMPLE_TEXT + "\nAppendix.\n"
        r = alice.request("PUT", "/workspace/document", json={"expected_version": 1, "text": v2, "summary": "appendix"})
        assert r.status_code == 200, r.text
        r = alice.post("/workspace/proposals", {"base_version": 2, "region": {"heading": ["Goals"]},
                                                "text": GOALS_TEXT, "summary": "goals"})
        assert r.status_code == 201, r.text
        pid = r.json()["id"]

        running = {
            "versions": ok_json(("versions", doc), "editing#VersionsPage", real=True),
            "proposals": ok_json(("proposals", doc), "editing#ProposalsPage", real=True),
            "open": ok_json(("proposals", doc, "--status", "open"), "editing#ProposalsPage"),
            "diff": run("diff", doc, "1", "2", real=True),
        }
        assert [v["number"] for v in running["versions"]["versions"]] == [2, 1]
        assert running["versions"]["versions"][0]["summary"] == "appendix"
        assert [p["id"] for p in running["proposals"]["proposals"]] == [pid]
        assert [p["id"] for p in running["open"]["proposals"]] == [pid]
        assert running["diff"] == (0, unified_diff(SAMPLE_TEXT, v2, "v1", "v2"), "")
        page = ok_json(("versions", doc, "--limit", "1"), "editing#VersionsPage")
        assert [v["number"] for v in page["versions"]] == [2] and page["next_cursor"]
        assert run("diff", doc, "1")[1] == running["diff"][1]  # B defaults to the head
        assert ok_json(("proposals", doc, "--status", "approved"), "editing#ProposalsPage")["proposals"] == []
    finally:
        room.stop()

    # The room is stopped: the same answers from the sidecar.
    assert ok_json(("versions", doc), real=True) == running["versions"]
    assert ok_json(("proposals", doc), real=True) == running["proposals"]
    assert run("diff", doc, "1", "2", real=True) == running["diff"]

    # Error exits of the local reads.
    fails(("diff", doc, "1", "99"), "version_not_found", real=True)
    fails(("versions", doc, "--limit", "0"), "invalid_request")
    fails(("versions", doc, "--limit", "201"), "invalid_request")
    # every local list command checks --limit against its operation's input schema: one wording
    refusals = [fails((command, doc, "--limit", "0"), "invalid_request")
                for command in ("versions", "proposals", "sessions", "participants", "leases")]
    assert {r["message"] for r in refusals} == {"parameter limit is invalid: 0 is less than the minimum of 1"}
    assert {r["details"]["parameter"] for r in refusals} == {"limit"}  # the words of GET ...?limit=0
    fails(("proposals", doc, "--status", "maybe"), "invalid_request")
    fails(("versions", str(tmp_path / "nope.md")), "invalid_request")
    bare = tmp_path / "bare.md"
    bare.write_text("# no room here\n")
    fails(("proposals", str(bare)), "invalid_request", real=True)
    assert not (tmp_path / "bare.md.commonroom.db").exists()  # reads never create a sidecar


def test_participant_commands_over_the_stored_session(tmp_path):
    room = start_room(tmp_path, SAMPLE)
    try:
        alice = join(room, tmp_path, "alice", ALL, real=True)
        bob = join(room, tmp_path, "bob", "read,propose,lease")
        carol = join(room, tmp_path, "carol", "read")
        A, B, C = ("--session-file", alice), ("--session-file", bob), ("--session-file", carol)

        # Read, by heading and by lines.
        got = ok_json(("read", "--heading", "Design", "--heading", "Storage", *C), "room#Document")
        span = regions.resolve(SAMPLE_TEXT, {"heading": ["Design", "Storage"]})
        assert got["lines"] == [span.start, span.end]
        assert run("read", "--lines", "1-3", "--raw", *C) == (0, "".join(regions.lines_of(SAMPLE_TEXT)[:3]), "")
        fails(("read", "--heading", "Nowhere", *C), "invalid_region")
        fails(("read", "--lines", "three", *C), "invalid_request")
        fails(("read", "--lines", "1-999", *C), "invalid_region")

        # Leases.
        lease = ok_json(("lease", "acquire", "--heading", "Goals", "--ttl", "60", *A), "editing#Lease")
        assert lease["status"] == "active"
        body = fails(("lease", "acquire", "--heading", "Goals", *B), "lease_conflict")
        assert body["lease_id"] == lease["id"] and body["region"] == lease["region"]
        fails(("lease", "acquire", "--lines", "1-2", *C), "permission_denied")
        fails(("lease", "acquire", "--lines", "1-2", "--ttl", "3601", *B), "invalid_request")
        fails(("lease", "release", lease["id"], *B), "not_found")
        listed = ok_json(("lease", "list", *C), "editing#LeasesPage")
        assert [x["id"] for x in listed["leases"]] == [lease["id"]]
        renewed = ok_json(("lease", "renew", lease["id"], "--ttl", "600", *A), "editing#Lease")
        assert renewed["expires_at"] > lease["expires_at"]
        assert ok_json(("lease", "release", lease["id"], *A), "editing#Lease")["status"] == "released"
        gone = fails(("lease", "release", lease["id"], *A), "lease_conflict")  # no longer active: 409
        assert gone["lease_id"] == lease["id"] and gone["details"]["status"] == "released"
        assert ok_json(("lease", "list", *A), "editing#LeasesPage")["leases"] == []

        # Propose (text from --text, --text-file, stdin) and approve.
        p1 = ok_json(("propose", "--base", "1", "--heading", "Goals", "--text", GOALS_TEXT, "--summary", "goals", *B),
                     "editing#Proposal", real=True)
        assert p1["status"] == "open" and p1["author"] == "bob"
        fails(("approve", p1["id"], *B), "permission_denied", real=True)
        result = ok_json(("approve", p1["id"], *A), "editing#ApproveResult", real=True)
        assert result["version"]["number"] == 2 and result["proposal"]["decided_by"] == "alice"
        head = conventions.replace_span(SAMPLE_TEXT, regions.resolve(SAMPLE_TEXT, {"heading": ["Goals"]}), GOALS_TEXT)
        assert room.document.read_text("utf-8") == head

        qfile = tmp_path / "questions.md"
        qfile.write_text("## Open questions\n\nNone left.\n")
        p2 = ok_json(("propose", "--base", "1", "--heading", "Open questions", "--text-file", str(qfile), *B),
                     "editing#Proposal")
        assert p2["rebased_from"] == 1 and p2["base_version"] == 2  # clean rebase
        p3 = ok_json(("propose", "--base", "2", "--lines", "3-4", *B), "editing#Proposal", input="Intro.\n")
        assert p3["text"] == "Intro.\n" and p3["lines"] == [3, 4]

        # A conflicting proposal on an old base: stale_version with its recovery fields.
        body = fails(("propose", "--base", "1", "--heading", "Goals", "--text", "## Goals\n\n- other\n\n", *B),
                     "stale_version")
        assert body["base_version"] == 1 and body["current_version"] == 2
        assert body["diff"] and body["changes"][0]["author"] == "bob" and body["changes"][0]["summary"] == "goals"

        # Two proposals on the same lines at the same base: the second one conflicts on approval.
        p4 = ok_json(("propose", "--base", "2", "--heading", "Goals", "--text", "## Goals\n\n- four\n\n", *B),
                     "editing#Proposal")
        p5 = ok_json(("propose", "--base", "2", "--heading", "Goals", "--text", "## Goals\n\n- five\n\n", *A),
                     "editing#Proposal")
        ok_json(("approve", p4["id"], *A), "editing#ApproveResult")
        body = fails(("approve", p5["id"], *A), "proposal_conflict")
        assert body["proposal_id"] == p5["id"] and body["details"]["hunks"]

        # Reject, withdraw, not found.
        rejected = ok_json(("reject", p2["id"], "--reason", "keep them", *A), "editing#Proposal", real=True)
        assert rejected["status"] == "rejected" and rejected["reason"] == "keep them"
        fails(("reject", p3["id"], *B), "permission_denied")
        fails(("withdraw", p3["id"], *A), "permission_denied")  # only the author withdraws
        assert ok_json(("withdraw", p3["id"], *B), "editing#Proposal")["status"] == "withdrawn"
        fails(("approve", "pr_nope", *A), "proposal_not_found", real=True)
        fails(("reject", "pr_nope", *A), "proposal_not_found")
        decided = fails(("approve", p2["id"], *A), "proposal_conflict")  # decided already: 409, its id and status
        assert decided["proposal_id"] == p2["id"] and decided["details"]["status"] == "rejected"

        # Direct write.
        fails(("write", "--expected", "1", "--text", "x\n", *A), "stale_version")
        fails(("write", "--expected", "3", "--text", "x\n", *B), "permission_denied")
        version = ok_json(("write", "--expected", "3", "--heading", "Goals", "--text", "## Goals\n\nDone.\n\n",
                           "--summary", "done", *A), "editing#VersionInfo")
        assert version["number"] == 4 and version["source"] == "write"

        # A revoked session is unauthorized; no session file at all is invalid_request.
        r = httpx.post(room.owner + "/owner/revoke", json={"session": json.loads(Path(carol).read_text())["session_id"]},
                       headers={"Authorization": f"Bearer {room.owner_token}"})
        assert r.status_code == 200, r.text
        fails(("read", *C), "unauthorized")
        fails(("read", "--session-file", str(tmp_path / "none.json")), "invalid_request")

        # The local operator reads see all of it, with the room running.
        page = ok_json(("versions", str(room.document)), "editing#VersionsPage", real=True)
        assert [v["number"] for v in page["versions"]] == [4, 3, 2, 1]
        statuses = {p["id"]: p["status"] for p in ok_json(("proposals", str(room.document)))["proposals"]}
        assert statuses == {p1["id"]: "approved", p2["id"]: "rejected", p3["id"]: "withdrawn",
                            p4["id"]: "approved", p5["id"]: "open"}
    finally:
        room.stop()


def test_cli_sees_a_room_that_is_not_running_as_unavailable(tmp_path):
    room = start_room(tmp_path, SAMPLE)
    session = join(room, tmp_path, "dora", ALL)
    room.stop()
    fails(("read", "--session-file", session), "transport_unavailable", real=True)
    fails(("propose", "--base", "1", "--text", "x\n", "--session-file", session), "transport_unavailable")
