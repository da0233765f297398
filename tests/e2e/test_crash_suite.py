"""The crash suite over every kind of write (docs/hardening.md).

Each trial runs five writers at once against a real room: direct writes,
proposals with their approvals, lease churn (acquire, release), handoffs
carried to completion (create with an ``idempotency_key``, accept,
complete) and board todos completed with a ``completion_key``. At a random
instant the room's whole process group gets SIGKILL. The room is started
again and then:

- ``PRAGMA integrity_check`` is ok, ``foreign_key_check`` empty, no
  orphan rows (a task without its handoff, an answer without its todo, a
  resolved todo without its answer);
- the file equals the head; versions are 1..head, each once;
- every acknowledged write is there exactly once with what was
  acknowledged (a version's content hash, a lease's release, a handoff's
  status, a completion's answer);
- the call each writer had in flight is retried as is: a handoff create
  with the same key, a completion with the same key and fence, a handoff
  completion with the same result. Each returns the original result (or
  does the work once, if it never committed), and nothing is doubled.

CI runs 20 trials; ``COMMONROOM_RELEASE=1`` runs 200 (``COMMONROOM_CRASH_TRIALS``
overrides both; ``COMMONROOM_CRASH_SEED`` picks the kill instants) and
prints the figures.
"""

from __future__ import annotations

import os
import random
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import httpx

from tests.conftest import SAMPLE
from tests.e2e.test_editing_crash import integrity, kill, restart, sha, sidecar, versions
from tests.roomproc import Room, start_room

RELEASE = os.environ.get("COMMONROOM_RELEASE") == "1"
TRIALS = int(os.environ.get("COMMONROOM_CRASH_TRIALS", "200" if RELEASE else "20"))


@dataclass
class Ledger:
    """What the writers were told (acknowledged) and what they had in flight when the room died."""

    versions: dict[int, str] = field(default_factory=dict)             # number -> content hash
    leases: dict[str, str] = field(default_factory=dict)               # lease id -> "active" | "released"
    handoffs: dict[str, tuple[str, str]] = field(default_factory=dict)  # idempotency key -> (handoff id, status)
    completions: dict[str, str] = field(default_factory=dict)          # todo id -> answer id
    in_flight: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class Writer(threading.Thread):
    """One kind of write in a loop until the room dies; ``step`` does one round."""

    def __init__(self, name: str, step: Callable[["Writer"], None], ledger: Ledger, clients: dict[str, httpx.Client],
                 board: str):
        super().__init__(daemon=True, name=name)
        self.step, self.ledger, self.clients, self.board, self.round = step, ledger, clients, board, 0
        self.pending: tuple[str, dict[str, Any]] | None = None

    def run(self) -> None:
        try:
            while True:
                self.round += 1
                self.step(self)
        except httpx.HTTPError:
            if self.pending is not None:
                with self.ledger.lock:
                    self.ledger.in_flight.append(self.pending)
        except Exception as exc:  # an answer no writer should get
            self.ledger.unexpected.append(f"{self.name}: {exc!r}")

    def call(self, who: str, method: str, path: str, body: Any = None, *, ok: tuple[int, ...] = (200, 201),
             refusals: tuple[str, ...] = (), retry: tuple[str, dict[str, Any]] | None = None) -> Any:
        """One request; its JSON on success, None on a documented refusal (anything else is unexpected)."""
        self.pending = retry
        r = self.clients[who].request(method, path, json=body)
        self.pending = None
        data = r.json()
        if r.status_code in ok:
            return data
        if data.get("error") in refusals:
            return None
        raise AssertionError(f"{method} {path}: {r.status_code} {data}")


def write_step(w: Writer) -> None:
    head = w.call("w", "GET", "/workspace/document")
    done = w.call("w", "PUT", "/workspace/document", {"expected_version": head["version"],
                                                     "text": head["text"] + f"write {w.round}\n"},
                  refusals=("stale_version",))
    if done is not None:
        with w.ledger.lock:
            w.ledger.versions[done["number"]] = done["content_hash"]


def approve_step(w: Writer) -> None:
    head = w.call("w", "GET", "/workspace/document")
    n = head["text"].count("\n")
    proposal = w.call("w", "POST", "/workspace/proposals", {
        "base_version": head["version"], "region": {"lines": [n + 1, n]}, "text": f"proposal {w.round}\n"},
        refusals=("stale_version",))
    if proposal is None:
        return
    done = w.call("w", "POST", f"/workspace/proposals/{proposal['id']}/approve",
                  refusals=("proposal_conflict", "stale_version"))
    if done is not None:
        with w.ledger.lock:
            w.ledger.versions[done["version"]["number"]] = done["version"]["content_hash"]


def lease_step(w: Writer) -> None:
    lease = w.call("w", "POST", "/workspace/leases", {"region": {"lines": [1, 1]}, "ttl_seconds": 300},
                   refusals=("lease_conflict",))
    if lease is None:
        return
    w.ledger.leases[lease["id"]] = "active"
    w.call("w", "DELETE", f"/workspace/leases/{lease['id']}")
    w.ledger.leases[lease["id"]] = "released"


def handoff_step(w: Writer) -> None:
    key = f"{w.name}-{time.monotonic_ns()}"
    create = {"summary": f"crash work {key}", "assignee": "crash-worker", "idempotency_key": key}
    made = w.call("owner", "POST", "/workspace/handoffs", create, retry=("handoff_create", create))
    handoff = made["handoff"]["id"]
    w.ledger.handoffs[key] = (handoff, "open")
    w.call("worker", "POST", f"/workspace/handoffs/{handoff}/accept")
    w.ledger.handoffs[key] = (handoff, "accepted")
    result = {"handoff_id": handoff, "result": f"result {key}"}
    w.call("worker", "POST", f"/workspace/handoffs/{handoff}/complete", {"result": result["result"]},
           retry=("handoff_complete", result))
    w.ledger.handoffs[key] = (handoff, "result_ready")


def board_step(w: Writer) -> None:
    board = w.board
    todo = w.call("owner", "POST", f"/workspace/boards/{board}/messages", {"kind": "todo", "body": f"todo {w.round}"})
    base = f"/workspace/boards/{board}/messages/{todo['message_id']}"
    fence = w.call("worker", "GET", base + "/assignment")["assignment_fence"]
    body = {"answer": f"done {w.round}", "completion_key": f"ck-{time.monotonic_ns()}",
            "expected_assignment_fence": fence}
    done = w.call("worker", "POST", base + "/complete", body, retry=("complete", {"path": base, **body}))
    w.ledger.completions[todo["message_id"]] = done["answer"]["message_id"]


STEPS = {"write": write_step, "approve": approve_step, "lease": lease_step, "handoff": handoff_step,
         "board": board_step}


def clients(room: Room, bearers: dict[str, str]) -> dict[str, httpx.Client]:
    """One HTTP client per bearer, on the ingress."""
    return {who: httpx.Client(base_url=room.ingress, headers={"Authorization": f"Bearer {token}"}, timeout=10)
            for who, token in bearers.items()}


def retry_in_flight(owner: httpx.Client, worker: httpx.Client, ledger: Ledger) -> int:
    """Send each in-flight call again, as it was; check it answers the original result, once."""
    retried = 0
    for kind, body in ledger.in_flight:
        retried += 1
        if kind == "handoff_create":
            r = owner.post("/workspace/handoffs", json=body)
            assert r.status_code == 201, r.text
            again = owner.post("/workspace/handoffs", json=body)
            assert again.json()["handoff"]["id"] == r.json()["handoff"]["id"]
            ledger.handoffs[body["idempotency_key"]] = (r.json()["handoff"]["id"], "open")  # once: check_sidecar
        elif kind == "handoff_complete":
            r = worker.post(f"/workspace/handoffs/{body['handoff_id']}/complete", json={"result": body["result"]})
            assert r.status_code == 200, r.text  # the original completion, or this one (never a second result)
            assert r.json()["handoff"]["result"] == body["result"]
        else:
            path = body.pop("path")
            first = worker.post(path + "/complete", json=body)
            again = worker.post(path + "/complete", json=body)
            assert first.status_code == again.status_code == 200, (first.text, again.text)
            assert first.json()["answer"]["message_id"] == again.json()["answer"]["message_id"] and again.json()["replayed"]
            ledger.completions[path.rsplit("/", 1)[1]] = first.json()["answer"]["message_id"]  # one answer
    ledger.in_flight.clear()
    return retried


def finish_handoffs(worker: httpx.Client, ledger: Ledger) -> None:
    """Carry every handoff a kill left open or accepted to ``result_ready`` (at most 32 tasks may be active)."""
    for key, (handoff, status) in list(ledger.handoffs.items()):
        if status == "result_ready":
            continue
        stored = worker.get(f"/workspace/handoffs/{handoff}").json()["status"]
        if stored == "open":
            assert worker.post(f"/workspace/handoffs/{handoff}/accept").status_code == 200
        if stored in ("open", "accepted"):
            r = worker.post(f"/workspace/handoffs/{handoff}/complete", json={"result": f"result {key}"})
            assert r.status_code == 200, r.text
        ledger.handoffs[key] = (handoff, "result_ready")


def check_sidecar(room: Room, ledger: Ledger) -> None:
    """Every acknowledged handoff, lease and completion is there once; no orphan rows."""
    con = sqlite3.connect(f"file:{sidecar(room)}?mode=ro", uri=True)
    try:
        assert con.execute("PRAGMA foreign_key_check").fetchall() == []
        assert con.execute("SELECT count(*) FROM task WHERE handoff_id NOT IN (SELECT id FROM handoff)").fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM board_message WHERE reply_to IS NOT NULL AND reply_to NOT IN "
                           "(SELECT id FROM board_message)").fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM board_message WHERE status = 'resolved' AND resolved_by_message_id "
                           "NOT IN (SELECT id FROM board_message)").fetchone()[0] == 0
        keys = dict(con.execute("SELECT idempotency_key, count(*) FROM handoff GROUP BY idempotency_key").fetchall())
        order = ["open", "accepted", "result_ready"]
        for key, (handoff, status) in ledger.handoffs.items():
            assert keys.get(key) == 1, key
            stored = con.execute("SELECT status FROM handoff WHERE id = ?", (handoff,)).fetchone()[0]
            assert order.index(stored) >= order.index(status), (handoff, stored, status)
        for lease, status in ledger.leases.items():
            released = con.execute("SELECT released_at FROM lease WHERE id = ?", (lease,)).fetchone()
            assert released is not None and (status == "active" or released[0] is not None), lease
        for todo, answer in ledger.completions.items():
            answers = con.execute("SELECT id FROM board_message WHERE reply_to = ?", (todo,)).fetchall()
            assert answers == [(answer,)], (todo, answers)
    finally:
        con.close()


def test_sigkill_during_every_kind_of_write(tmp_path, monkeypatch):
    monkeypatch.setenv("COMMONROOM_RATE_LIMIT", "1000000")
    rng = random.Random(int(os.environ.get("COMMONROOM_CRASH_SEED", "14")))
    room = start_room(tmp_path, SAMPLE)
    w = room.join("crash-writer", "read,write,lease,propose,approve")
    owner = room.join("crash-owner", "read,handoff,message")
    worker = room.join("crash-worker", "read,handoff,message")
    bearers = {"w": w.token, "owner": owner.token, "worker": worker.token}
    ledger = Ledger()
    figures = {"trials": 0, "acknowledged": 0, "retried": 0, "committed_unacknowledged": 0}
    try:
        for _ in range(TRIALS):
            pool = clients(room, bearers)
            writers = [Writer(name, step, ledger, pool, owner.session["id"]) for name, step in STEPS.items()]
            for writer in writers:
                writer.start()
            time.sleep(rng.uniform(0.1, 0.6))
            kill(room)
            for writer in writers:
                writer.join(20)
                assert not writer.is_alive(), writer.name
            for client in pool.values():
                client.close()
            assert ledger.unexpected == []
            assert integrity(room) == "ok"
            room = restart(room)
            op = room.operator()
            doc = op.get("/workspace/document").json()
            assert room.document.read_text("utf-8") == doc["text"] and doc["content_hash"] == sha(doc["text"])
            infos = versions(op)
            assert [v["number"] for v in infos] == list(range(doc["version"], 0, -1))
            hashes = {v["number"]: v["content_hash"] for v in infos}
            for number, digest in ledger.versions.items():
                assert hashes.get(number) == digest, number
            figures["committed_unacknowledged"] += doc["version"] - max(ledger.versions, default=doc["version"])
            check_sidecar(room, ledger)
            again = clients(room, bearers)
            figures["retried"] += retry_in_flight(again["owner"], again["worker"], ledger)
            finish_handoffs(again["worker"], ledger)
            for client in again.values():
                client.close()
            check_sidecar(room, ledger)
            figures["trials"] += 1
        figures["acknowledged"] = (len(ledger.versions) + len(ledger.leases) + len(ledger.handoffs)
                                   + len(ledger.completions))
    finally:
        room.stop()
    print(f"\ncrash suite: {figures} (versions {len(ledger.versions)}, leases {len(ledger.leases)}, "
          f"handoffs {len(ledger.handoffs)}, completions {len(ledger.completions)}), lost writes 0")
    assert figures["trials"] == TRIALS
    assert min(len(ledger.versions), len(ledger.leases), len(ledger.handoffs), len(ledger.completions)) > 0
