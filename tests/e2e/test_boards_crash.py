"""A SIGKILL in the middle of concurrent todo completions.

A real room (``ce serve``) with one coordinator board. Each cycle the
coordinator posts :data:`TODOS` todos; :data:`COMPLETERS` worker sessions
race over them, each reading the assignment and completing every todo with
its own key and answer (two go forward through the todos, two backward,
so pairs race on one todo at once), then retrying the exact same request (an uncertain
outcome's retry). The whole room (arbiter and worker) is SIGKILLed at a
random moment of the burst and served again. Then, for every todo:

- every completion the room acknowledged (a 200) is there, exactly once:
  one ``answer`` reply, the todo ``resolved`` by it; all acknowledgements
  of one todo name the same answer (one winner);
- no todo is reopened: resolved before the kill means resolved after;
- the exact retry of every acknowledged completion, sent after the
  restart, answers the original completion (``replayed: true``, the same
  answer id) and creates nothing.

Figures are printed (``pytest -s``). Seed: ``COMMONROOM_CRASH_SEED``.
"""

from __future__ import annotations

import os
import random
import sqlite3
import threading
import time
from dataclasses import dataclass, field

import httpx

from tests.conftest import SAMPLE
from tests.e2e.test_editing_crash import kill, restart
from tests.roomproc import Client, Room, start_room

CYCLES = 4
TODOS = 24
COMPLETERS = 4
CAPS = "read,message"


@dataclass
class Tally:
    attempts: int = 0
    acked: int = 0
    replays_acked: int = 0
    stale: int = 0
    unknown: int = 0
    #: (todo id, request body) → the answer id the room acknowledged
    acks: dict[tuple[str, str], str] = field(default_factory=dict)
    bodies: dict[tuple[str, str], dict] = field(default_factory=dict)
    unexpected: list[str] = field(default_factory=list)
    #: completions cut off by the kill (outcome unknown), retried exactly after the restart
    cut: list[tuple[str, dict]] = field(default_factory=list)
    retried: dict[str, int] = field(default_factory=dict)


class Completer(threading.Thread):
    """Completes every todo of ``todos`` (in its own order) with its own key, then retries exactly."""

    def __init__(self, room: Room, token: str, name: str, board: str, todos: list[str], tally: Tally,
                 lock: threading.Lock):
        super().__init__(daemon=True)
        self.http = httpx.Client(base_url=room.ingress, headers={"Authorization": f"Bearer {token}"}, timeout=10)
        self.name_, self.board, self.tally, self.lock = name, board, tally, lock
        self.todos = todos

    def run(self) -> None:
        base = f"/workspace/boards/{self.board}/messages"
        body: dict | None = None
        try:
            for todo in self.todos:
                body = None
                r = self.http.get(f"{base}/{todo}/assignment")
                if r.status_code != 200:
                    self._note(f"assignment {r.status_code} {r.text[:200]}")
                    continue
                if not r.json()["completable"]:
                    continue
                body = {"answer": f"{self.name_} did {todo}", "completion_key": f"{self.name_}-{todo}",
                        "expected_assignment_fence": r.json()["assignment_fence"], "tags": [self.name_]}
                for attempt in range(2):  # the completion, then its exact retry
                    with self.lock:
                        self.tally.attempts += 1
                    r = self.http.post(f"{base}/{todo}/complete", json=body)
                    self._record(todo, body, r, attempt)
        except httpx.HTTPError:
            with self.lock:
                self.tally.unknown += 1  # the room died under this request: its outcome is unknown
                if body is not None:
                    self.tally.cut.append((todo, body))
        finally:
            self.http.close()

    def _record(self, todo: str, body: dict, r: httpx.Response, attempt: int) -> None:
        with self.lock:
            if r.status_code == 200:
                result = r.json()
                answer = result["answer"]["message_id"]
                key = (todo, body["completion_key"])
                if self.tally.acks.setdefault(key, answer) != answer:
                    self.tally.unexpected.append(f"{key}: two answers")
                if result["replayed"] != (attempt == 1):
                    self.tally.unexpected.append(f"{key}: replayed={result['replayed']} on attempt {attempt}")
                self.tally.bodies[key] = body
                self.tally.acked += attempt == 0
                self.tally.replays_acked += attempt == 1
            elif r.status_code == 409 and r.json()["error"] == "assignment_stale":
                self.tally.stale += 1
                if r.json()["details"]["fresh_assignment_fence"] is not None:
                    self.tally.unexpected.append("a fresh fence for a resolved todo")
            else:
                self.tally.unexpected.append(f"{r.status_code} {r.text[:200]}")

    def _note(self, what: str) -> None:
        with self.lock:
            self.tally.unexpected.append(what)


def messages(client: httpx.Client, board: str, **filters: str) -> list[dict]:
    out: list[dict] = []
    cursor = None
    while True:
        params = {**filters, "limit": "200", **({"cursor": cursor} if cursor else {})}
        r = client.get(f"/workspace/boards/{board}/messages", params=params)
        assert r.status_code == 200, r.text
        out += r.json()["messages"]
        cursor = r.json()["next_cursor"]
        if cursor is None:
            return out


def test_sigkill_during_concurrent_completions(tmp_path, monkeypatch):
    monkeypatch.setenv("COMMONROOM_RATE_LIMIT", "100000")
    rng = random.Random(int(os.environ.get("COMMONROOM_CRASH_SEED", "11")))
    started = time.monotonic()
    room = start_room(tmp_path, SAMPLE)
    coordinator = room.join("coordinator", CAPS)
    workers = [room.join(f"worker{i}", CAPS) for i in range(COMPLETERS)]
    board = coordinator.session["id"]
    tally = Tally()
    resolved_before: set[str] = set()
    all_todos: list[str] = []
    try:
        for cycle in range(CYCLES):
            todos = []
            for i in range(TODOS):
                r = coordinator.post(f"/workspace/boards/{board}/messages",
                                     {"kind": "todo", "body": f"cycle {cycle} todo {i}"})
                assert r.status_code == 201, r.text
                todos.append(r.json()["message_id"])
            all_todos += todos
            lock = threading.Lock()
            # even completers go forward, odd ones backward: pairs race on the same todo at once
            threads = [Completer(room, w.token, f"w{n}", board, todos[::-1] if n % 2 else todos, tally, lock)
                       for n, w in enumerate(workers)]
            for thread in threads:
                thread.start()
            time.sleep(rng.uniform(0.1, 0.6))
            kill(room)
            for thread in threads:
                thread.join(15)
                assert not thread.is_alive()
            con = sqlite3.connect(room.document.with_name(room.document.name + ".commonroom.db"))
            try:
                assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            finally:
                con.close()
            room = restart(room)
            coordinator = Client(room, coordinator.token, coordinator.session)

            with httpx.Client(base_url=room.owner, headers={"Authorization": f"Bearer {room.owner_token}"},
                              timeout=10) as op:
                by_id = {m["message_id"]: m for m in messages(op, board)}
                answers: dict[str, list[dict]] = {}
                for m in by_id.values():
                    if m["kind"] == "answer":
                        answers.setdefault(m["reply_to"], []).append(m)
                for todo in all_todos:
                    replies = answers.get(todo, [])
                    assert len(replies) <= 1, (todo, replies)  # one answer per todo, ever
                    acked = {a for (t, _), a in tally.acks.items() if t == todo}
                    assert len(acked) <= 1, (todo, acked)  # one winner
                    if todo in resolved_before:
                        assert by_id[todo]["status"] == "resolved", todo  # never reopened
                    if acked:
                        assert by_id[todo]["status"] == "resolved"
                        assert [r["message_id"] for r in replies] == list(acked)
                        assert by_id[todo]["resolved_by_message_id"] in acked
                    elif by_id[todo]["status"] == "resolved":
                        assert replies and by_id[todo]["resolved_by_message_id"] == replies[0]["message_id"]
                    if by_id[todo]["status"] == "resolved":
                        resolved_before.add(todo)
                    else:
                        assert not replies
            # a completion cut off by the kill is retried exactly: it replays if it had committed
            cut, tally.cut = tally.cut, []
            for todo, body in cut:
                worker = workers[int(body["completion_key"][1:].split("-", 1)[0])]
                r = Client(room, worker.token, worker.session).post(
                    f"/workspace/boards/{board}/messages/{todo}/complete", body)
                if r.status_code == 200:
                    outcome = "replayed" if r.json()["replayed"] else "completed now"
                    answer = r.json()["answer"]["message_id"]
                    if r.json()["replayed"]:
                        assert by_id[todo]["resolved_by_message_id"] == answer  # it had committed
                    tally.acks[(todo, body["completion_key"])] = answer
                    tally.bodies[(todo, body["completion_key"])] = body
                    resolved_before.add(todo)
                else:
                    assert r.status_code == 409 and r.json()["error"] == "assignment_stale", r.text
                    outcome = "stale"
                tally.retried[outcome] = tally.retried.get(outcome, 0) + 1
            # every acknowledged completion replays after the restart, creating nothing
            for n, worker in enumerate(workers):
                client = httpx.Client(base_url=room.ingress, headers={"Authorization": f"Bearer {worker.token}"},
                                      timeout=10)
                with client:
                    for (todo, key), answer in tally.acks.items():
                        if not key.startswith(f"w{n}-"):
                            continue
                        r = client.post(f"/workspace/boards/{board}/messages/{todo}/complete",
                                        json=tally.bodies[(todo, key)])
                        assert r.status_code == 200, r.text
                        assert r.json()["replayed"] is True and r.json()["answer"]["message_id"] == answer
            with httpx.Client(base_url=room.owner, headers={"Authorization": f"Bearer {room.owner_token}"},
                              timeout=10) as op:
                assert len(messages(op, board, kind="answer")) == len(resolved_before)
    finally:
        room.stop()
    assert tally.unexpected == []
    assert tally.acked > 0 and tally.stale > 0
    print(f"\nboard crash trial: {CYCLES} SIGKILLs, {len(all_todos)} todos, {COMPLETERS} completers; "
          f"{tally.attempts} completion requests: {tally.acked} acknowledged completions, "
          f"{tally.replays_acked} acknowledged exact retries, {tally.stale} assignment_stale, "
          f"{tally.unknown} requests cut off by the kill (completions among them retried exactly after the restart: {tally.retried}); {len(resolved_before)} todos resolved after the restarts "
          f"(replayed = committed before the kill, never acknowledged); every acknowledged completion present once and "
          f"replayed after restart; {time.monotonic() - started:.1f} s")
