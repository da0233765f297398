"""No secret leaks anywhere after a whole session's worth of work.

A real room is driven through invitations (made, redeemed, redeemed
again, revoked, expired), joins over HTTP, handoffs with idempotency keys
(retried, mismatched) through HTTP and MCP with the tasks extension,
board todos completed with completion keys (retried, mismatched, and
refused for a malformed request that carries a key), peer messages,
leases, proposals, direct writes, a revoked session, and every read that
replays what happened (history, observe replay, handoff events, boards).
Every answer is recorded (status, headers, body). Then:

- a session bearer appears only in the join answer that issued it, an
  invitation token only in the invitation answer that issued it; an
  invitation's secret (plain), the owner token and every completion key
  appear in no answer at all;
- the sidecar (``.db``, ``-wal``, ``-shm``) while running, every text and
  blob of every table once the room stopped (the WAL checkpointed), the
  state and lock files and the room's captured stdout/stderr hold none of
  them, while the positive control finds the digests the room keeps.

The console is part of the run: a login code from ``ce console`` (its
stdout is where it belongs, no recorded answer may hold it) and one from
``POST /owner/console/codes`` (that answer only), each redeemed at
``/console/login?code=`` for a console cookie (only that login's
``Set-Cookie`` may hold it), a used code refused, the console page and
the owner routes it calls read with the cookie. Neither codes nor cookies
may appear in the sidecar, the state files or the logs (the access log
included: the code travels in a query string).
"""

from __future__ import annotations

import hashlib
import json
import secrets as _secrets
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from commonroom import invitation, tokens as room_tokens
from commonroom.engine.board_base import completion_identity
from commonroom.protocol import META_CAPABILITIES, TASKS_EXTENSION
from tests.mcp_wire import META, Mcp
from tests.roomproc import Room, ce, start_room

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sample.md"
ALL = ["read", "observe", "propose", "lease", "write", "approve", "handoff", "message"]
EXT = {**META, META_CAPABILITIES: {"extensions": {TASKS_EXTENSION: {}}}}


@dataclass
class Answer:
    """One recorded answer: what was asked, and every byte of status line, headers and body."""

    request: str
    data: bytes


@dataclass
class Run:
    """Everything the run issued, and every answer it got."""

    room: Room
    answers: list[Answer] = field(default_factory=list)
    tokens: dict[str, str] = field(default_factory=dict)      # invitation tokens
    bearers: dict[str, str] = field(default_factory=dict)     # session bearers
    keys: list[str] = field(default_factory=list)             # completion keys
    sessions: dict[str, str] = field(default_factory=dict)    # name -> session id
    codes: dict[str, str] = field(default_factory=dict)       # console login codes: "ce" | "http" -> code
    cookies: dict[str, str] = field(default_factory=dict)     # console cookies, by the code that got them
    owner_token: str = ""
    running: dict[str, bytes] = field(default_factory=dict)   # the room's files, read while it ran

    def record(self, response: httpx.Response) -> None:
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            return  # a stream: its reader records what it read
        response.read()
        head = f"{response.status_code}\n" + "".join(f"{k}: {v}\n" for k, v in response.headers.items())
        self.answers.append(Answer(f"{response.request.method} {response.request.url}",
                                   head.encode() + response.content))

    def secrets(self) -> dict[str, str]:
        """label → secret, for every secret the run handed out."""
        out = {f"token {k}": t for k, t in self.tokens.items()}
        out.update({f"secret {k}": invitation.decode(t)["secret"] for k, t in self.tokens.items()})
        out.update({f"bearer {k}": b for k, b in self.bearers.items()})
        out.update({f"completion key {i}": k for i, k in enumerate(self.keys)})
        out.update({f"login code {k}": c for k, c in self.codes.items()})
        out.update({f"console cookie {k}": c for k, c in self.cookies.items()})
        out["owner token"] = self.owner_token
        return out


def forms(secret: str) -> list[bytes]:
    """The byte forms a leaked secret could take."""
    return [secret.encode(), json.dumps(secret).encode(), secret.encode("utf-16-le"),
            httpx.QueryParams({"x": secret}).get("x", "").encode()]


def leaks(data: bytes, secrets: dict[str, str]) -> list[str]:
    return [label for label, secret in secrets.items() if any(form in data for form in forms(secret))]


class Driver:
    """Calls on the room that record every answer in ``run``."""

    def __init__(self, run: Run):
        self.run = run
        self.http = httpx.Client(timeout=30, event_hooks={"response": [run.record]})

    def call(self, who: str | None, method: str, path: str, body: Any = None, *, owner: bool = False,
             params: dict[str, Any] | None = None) -> httpx.Response:
        room = self.run.room
        token = room.owner_token if owner else (self.run.bearers[who] if who else None)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return self.http.request(method, (room.owner if owner else room.ingress) + path, json=body,
                                 params=params, headers=headers)

    def invite(self, name: str, caps: list[str], **extra: Any) -> str:
        r = self.call(None, "POST", "/owner/invitations", {"participant": name, "capabilities": caps, **extra},
                      owner=True)
        assert r.status_code == 201, r.text
        self.run.tokens[name] = r.json()["token"]
        return self.run.tokens[name]

    def join(self, name: str, token_of: str | None = None) -> None:
        r = self.call(None, "POST", "/workspace/join", {"invitation": self.run.tokens[token_of or name]})
        assert r.status_code == 201, r.text
        self.run.bearers[name] = r.json()["token"]
        self.run.sessions[name] = r.json()["session"]["id"]

    def mcp(self, who: str) -> Mcp:
        return Mcp(self.run.room.ingress, self.run.bearers[who], client=self.http)

    def key(self) -> str:
        self.run.keys.append("ck-" + _secrets.token_urlsafe(18))
        return self.run.keys[-1]


def drive(d: Driver) -> None:
    """One whole session's worth of work, refusals included."""
    for name, caps in (("alice", ALL), ("bob", ALL), ("carol", ["read", "observe"])):
        d.invite(name, caps)
        d.join(name)
    r = d.call(None, "POST", "/owner/invitations", {"participant": "alice", "capabilities": ALL}, owner=True)
    d.run.tokens["alice-peer"] = r.json()["token"]
    d.join("alice-peer")
    assert d.call(None, "POST", "/workspace/join", {"invitation": d.run.tokens["alice"]}).status_code == 403
    d.invite("never", ["read"])
    assert d.call(None, "POST", "/owner/revoke", {"invitation": d.run.tokens["never"]}, owner=True).status_code == 200
    assert d.call(None, "POST", "/workspace/join", {"invitation": d.run.tokens["never"]}).status_code == 403
    d.invite("late", ["read"], expires_in_seconds=1)

    # handoffs with idempotency keys, over HTTP and MCP (tasks extension)
    body = {"summary": "write the intro", "assignee": "bob", "idempotency_key": "idem-1"}
    first = d.call("alice", "POST", "/workspace/handoffs", body)
    assert first.status_code == 201, first.text
    assert d.call("alice", "POST", "/workspace/handoffs", body).json() == first.json()
    assert d.call("alice", "POST", "/workspace/handoffs", {**body, "summary": "other"}).status_code == 409
    handoff = first.json()["handoff"]["id"]
    assert d.call("bob", "POST", f"/workspace/handoffs/{handoff}/accept").status_code == 200
    assert d.call("bob", "POST", f"/workspace/handoffs/{handoff}/complete", {"result": "done"}).status_code == 200
    assert d.call("alice", "POST", f"/workspace/handoffs/{handoff}/approve").status_code == 200
    mcp = d.mcp("alice")
    created = mcp.post("tools/call", {"name": "handoff_create", "arguments": {"summary": "via mcp",
                                                                             "idempotency_key": "idem-2"}}, meta=EXT)
    task = created.json()["result"]["taskId"]
    assert mcp.post("tasks/get", {"taskId": task}, meta=EXT).status_code == 200

    # board todos completed with completion keys: retried, mismatched, malformed
    board = d.run.sessions["alice"]
    for via_mcp in (False, True):
        todo = d.call("alice", "POST", f"/workspace/boards/{board}/messages", {"kind": "todo", "body": "check"})
        todo_id = todo.json()["message_id"]
        base = f"/workspace/boards/{board}/messages/{todo_id}"
        fence = d.call("bob", "GET", base + "/assignment").json()["assignment_fence"]
        key = d.key()
        done = {"answer": "checked", "completion_key": key, "expected_assignment_fence": fence}
        bad = d.call("bob", "POST", base + "/complete", {**done, "tags": "not a list", "priority": 7})
        assert bad.status_code == 400, bad.text
        if via_mcp:
            tool = d.mcp("bob")
            args = {"session_id": board, "message_id": todo_id, **done}
            assert tool.call_tool("complete_session_message", {**args, "tags": 3})["isError"] is True
            assert tool.call_tool("complete_session_message", args)["isError"] is False
            assert tool.call_tool("complete_session_message", args)["isError"] is False
        else:
            assert d.call("bob", "POST", base + "/complete", done).status_code == 200
            assert d.call("bob", "POST", base + "/complete", done).status_code == 200
        assert d.call("bob", "POST", base + "/complete", {**done, "answer": "else"}).status_code == 409
    # a peer message, a lease, a proposal approved, a direct write
    peer_board = d.run.sessions["alice-peer"]
    assert d.call("alice-peer", "POST", f"/workspace/boards/{peer_board}/messages",
                  {"kind": "progress", "body": "on it"}).status_code == 201
    aware = d.mcp("alice").call_tool("document_read", {})["_meta"]["commonroom/peer_awareness"]
    assert aware
    for peer in aware:
        d.call("alice", "POST", f"/workspace/peers/{peer['peer_id']}/messages", {"kind": "note", "body": "hi"})
    assert d.call("bob", "POST", "/workspace/leases", {"region": {"lines": [1, 1]}}).status_code == 201
    head = d.call("alice", "GET", "/workspace/document").json()["version"]
    proposal = d.call("alice", "POST", "/workspace/proposals", {"base_version": head, "region": {"lines": [3, 3]},
                                                               "text": "changed\n", "summary": "s"})
    assert d.call("bob", "POST", f"/workspace/proposals/{proposal.json()['id']}/approve").status_code == 200
    head = d.call("alice", "GET", "/workspace/document").json()["version"]
    assert d.call("alice", "PUT", "/workspace/document", {"expected_version": head, "region": {"lines": [5, 5]}, "text": "new\n"}).status_code == 200
    # the expired invitation, a revoked session
    time.sleep(1.2)
    assert d.call(None, "POST", "/workspace/join", {"invitation": d.run.tokens["late"]}).status_code == 403
    assert d.call(None, "POST", "/owner/revoke", {"session": d.run.sessions["carol"]}, owner=True).status_code == 200
    assert d.call("carol", "GET", "/workspace/room").status_code == 401
    # every read that replays what happened
    for path in ("/workspace/history?limit=200", "/workspace/participants", "/workspace/handoffs",
                 f"/workspace/handoffs/{handoff}/events", f"/workspace/boards/{board}/messages?limit=200",
                 "/workspace/session", "/workspace/versions", "/openapi.json"):
        assert d.call("alice", "GET", path).status_code == 200, path
    assert d.call(None, "GET", "/workspace/history?limit=200", owner=True).status_code == 200
    replay = b""
    deadline = time.monotonic() + 3
    try:
        with d.http.stream("GET", d.run.room.ingress + "/workspace/observe?since_event_id=0",
                           headers={"Authorization": f"Bearer {d.run.bearers['bob']}"},
                           timeout=httpx.Timeout(30, read=1)) as stream:
            for chunk in stream.iter_raw():
                replay += chunk
                if time.monotonic() > deadline:
                    break
    except httpx.ReadTimeout:
        pass  # the replay is over: the stream waits for new events
    assert replay.count(b"id: ") > 30, replay[:500]
    d.run.answers.append(Answer("GET /workspace/observe (replay)", replay))
    console(d)


def console(d: Driver) -> None:
    """Console logins: a code from ``ce console`` and one over HTTP, each redeemed once for a cookie."""
    room = d.run.room
    shown = ce("console", str(room.document))
    assert shown.returncode == 0, shown.stderr
    d.run.codes["ce"] = shown.stdout.split("code=", 1)[1].split()[0]
    issued = d.call(None, "POST", "/owner/console/codes", {}, owner=True)
    assert issued.status_code == 201, issued.text
    d.run.codes["http"] = issued.json()["code"]
    browser = httpx.Client(timeout=30, follow_redirects=False, event_hooks={"response": [d.run.record]})
    try:
        for which, code in d.run.codes.items():
            login = browser.get(room.owner + "/console/login", params={"code": code})
            assert login.status_code == 303, login.text
            d.run.cookies[which] = next(v for k, v in browser.cookies.items() if k.startswith("commonroom_console"))
            assert browser.get(room.owner + "/console/login", params={"code": code}).status_code == 401  # used
            for path in ("/console", "/owner/sessions", "/workspace/room", "/workspace/history?limit=200"):
                assert browser.get(room.owner + path).status_code == 200, path
            browser.cookies.clear()
    finally:
        browser.close()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    room = start_room(tmp_path_factory.mktemp("whole"), SAMPLE)
    out = Run(room, owner_token=room.owner_token)
    driver = Driver(out)
    try:
        drive(driver)
        out.running = {p.name: p.read_bytes() for p in room_files(room)}  # the stopping test may run first
        yield out
    finally:
        driver.http.close()
        room.stop()


def room_files(room: Room) -> list[Path]:
    """The files beside the document except the owner-token file, and the captured log."""
    doc = room.document
    files = [p for p in doc.parent.iterdir() if p.name.startswith(doc.name + ".commonroom")
             and not p.name.endswith(".owner")]
    return files + [doc.with_name(doc.name + ".serve.log")]


def test_the_run_issued_every_kind_of_secret(run: Run):
    assert len(run.bearers) == 4 and len(run.tokens) >= 6 and len(run.keys) == 2
    assert len(run.codes) == 2 and len(run.cookies) == 2 and len(set(run.cookies.values())) == 2
    assert len(run.answers) > 50


def test_each_secret_appears_only_in_the_answer_that_issued_it(run: Run):
    secrets = run.secrets()
    found: dict[str, list[str]] = {}
    for answer in run.answers:
        for label in leaks(answer.data, secrets):
            found.setdefault(label, []).append(answer.request)
    for label, requests in found.items():
        if label.startswith("token "):
            assert requests == ["POST " + run.room.owner + "/owner/invitations"], (label, requests)
        elif label.startswith("bearer "):
            assert requests == ["POST " + run.room.ingress + "/workspace/join"], (label, requests)
        elif label == "login code http":
            assert requests == ["POST " + run.room.owner + "/owner/console/codes"], (label, requests)
        elif label.startswith("console cookie "):  # its login's Set-Cookie, nothing else
            assert len(requests) == 1 and requests[0].startswith(f"GET {run.room.owner}/console/login?code="), requests
        else:
            pytest.fail(f"{label} appeared in {requests}")
    # positive control: the scan finds the console secrets where they were issued
    assert {"login code http", "console cookie ce", "console cookie http"} <= set(found), sorted(found)


def test_room_files_and_logs_hold_no_secret_while_running(run: Run):
    secrets = run.secrets()
    assert any(name.endswith("-wal") for name in run.running)
    for name, data in run.running.items():
        assert leaks(data, secrets) == [], name


def test_after_stopping_no_table_and_no_file_holds_a_secret(run: Run):
    """Stops the room, so the WAL is checkpointed into the database (the running files were read before)."""
    assert run.room.stop() == 0
    secrets = run.secrets()
    db = run.room.document.with_name(run.room.document.name + ".commonroom.db")
    for path in room_files(run.room):
        assert leaks(path.read_bytes(), secrets) == [], path.name
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        values = []
        for table in tables:
            for row in con.execute(f'SELECT * FROM "{table}"'):
                values += [v if isinstance(v, bytes) else str(v).encode() for v in row if v is not None]
    finally:
        con.close()
    dump = b"\n".join(values)
    assert {"session", "invitation", "board_message", "handoff"} <= set(tables)
    assert leaks(dump, secrets) == []
    # positive control: the digests the room keeps are found by the same scan
    assert all(completion_identity(k).encode() in dump for k in run.keys)
    assert all(hashlib.sha256(b.encode()).hexdigest().encode() in dump for b in run.bearers.values())
    assert all(room_tokens.digest(c).encode() in dump for c in run.cookies.values())
