"""SIGKILL during a burst of completions.

A real room process; the assignee's MCP clients send ``handoff_complete``
from several threads at once, two competing results for every accepted
handoff (so a handoff could only end with two results if the room let
both through). Mid-burst the room's worker (the single writer) is killed
with SIGKILL; the gunicorn arbiter starts a new worker on the same sidecar
and the burst goes on against it. Two such rounds, then a full restart of the
room (SIGTERM, ``ce serve`` again), then:

- every completion acknowledged to a client (a non-error tool result) is
  there: the handoff is ``result_ready`` with that text, its task
  ``completed`` (``lost`` stays 0);
- no handoff has two results: at most one acknowledged text per handoff and
  at most one ``handoff.completed`` event in its own event list; a
  completion whose answer was lost in the crash either committed (one
  result) or left the handoff ``accepted``;
- a task survives the restart: ``tasks/get`` answers for a completed task
  and for one still ``working``.

The figures (acknowledged, found, lost, refused, unanswered) are printed.
"""

from __future__ import annotations

import os
import queue
import random
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from commonroom.protocol import META_CAPABILITIES, TASKS_EXTENSION
from tests.mcp_schema import check
from tests.mcp_wire import META, Mcp
from tests.roomproc import Client, Room, plugin_env, start_room

ROUNDS = 2
HANDOFFS = 24  # the room holds at most 32 active tasks
THREADS = 6
KILL_AFTER = 8  # acknowledged completions before the SIGKILL of each round
EXT = {**META, META_CAPABILITIES: {"extensions": {TASKS_EXTENSION: {}}}}


@dataclass
class Outcomes:
    """What the clients were told, per handoff."""

    acked: dict[str, list[str]] = field(default_factory=dict)
    refused: int = 0
    unanswered: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ack(self, handoff_id: str, text: str) -> None:
        with self.lock:
            self.acked.setdefault(handoff_id, []).append(text)

    @property
    def acknowledged(self) -> int:
        return sum(len(texts) for texts in self.acked.values())


def worker_pid(room: Room) -> int:
    """The room's one gunicorn worker (the arbiter's child)."""
    pid = room.proc.pid
    children = open(f"/proc/{pid}/task/{pid}/children").read().split()
    assert len(children) == 1, children
    return int(children[0])


def wait_answering(room: Room, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(room.ingress + "/workspace/room", timeout=2).status_code == 401:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise AssertionError("the room did not answer again after the worker was killed")


def prepare(owner: Client, worker: Client, round_no: int) -> list[str]:
    """``HANDOFFS`` handoffs from the owner, accepted by the worker."""
    ids = []
    for i in range(HANDOFFS):
        made = owner.post("/workspace/handoffs", {"summary": f"round {round_no} item {i}", "assignee": "crash-worker"})
        assert made.status_code == 201, made.text
        handoff_id = made.json()["handoff"]["id"]
        accepted = worker.post(f"/workspace/handoffs/{handoff_id}/accept")
        assert accepted.status_code == 200, accepted.text
        ids.append(handoff_id)
    return ids


def burst(room: Room, token: str, jobs: list[tuple[str, str]], out: Outcomes, killed: list[float]) -> None:
    """Send every completion from ``THREADS`` threads; SIGKILL the worker once ``KILL_AFTER`` are acknowledged."""
    work: queue.Queue[tuple[str, str]] = queue.Queue()
    for job in jobs:
        work.put(job)

    def send() -> None:
        mcp = Mcp(room.ingress, token, timeout=20)
        try:
            while True:
                try:
                    handoff_id, text = work.get_nowait()
                except queue.Empty:
                    return
                try:
                    response = mcp.post("tools/call", {"name": "handoff_complete",
                                                       "arguments": {"handoff_id": handoff_id, "result": text}})
                    result = response.json()["result"] if response.status_code == 200 else None
                except (httpx.HTTPError, ValueError, KeyError):
                    result = None
                if result is None:
                    with out.lock:
                        out.unanswered += 1
                elif result["isError"]:
                    assert result["structuredContent"]["error"] == "handoff_conflict", result
                    with out.lock:
                        out.refused += 1
                else:
                    assert result["structuredContent"]["handoff"]["result"] == text, result
                    out.ack(handoff_id, text)
        finally:
            mcp.close()

    threads = [threading.Thread(target=send, daemon=True) for _ in range(THREADS)]
    before = out.acknowledged
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 20
    while out.acknowledged - before < KILL_AFTER and time.monotonic() < deadline:
        time.sleep(0.002)
    os.kill(worker_pid(room), signal.SIGKILL)
    killed.append(out.acknowledged - before)
    for thread in threads:
        thread.join(60)
    wait_answering(room)


def verify(reader: httpx.Client, ids: list[str], out: Outcomes) -> tuple[int, int]:
    """(found, lost) of the acknowledged completions; asserts no handoff has two results."""
    found = lost = 0
    for handoff_id in ids:
        texts = out.acked.get(handoff_id, [])
        assert len(texts) <= 1, f"two completions of {handoff_id} were acknowledged: {texts}"
        handoff = reader.get(f"/workspace/handoffs/{handoff_id}").json()
        events = reader.get(f"/workspace/handoffs/{handoff_id}/events", params={"limit": 200}).json()["events"]
        completed = [e for e in events if e["type"] == "handoff.completed"]
        assert len(completed) <= 1, f"{handoff_id} completed twice: {completed}"
        task = reader.get("/workspace/task", params={"task_id": handoff["task_id"]}).json()
        if handoff["status"] == "result_ready":
            assert len(completed) == 1 and task["status"] == "completed"
            assert handoff["result"] in (f"{handoff_id} by A", f"{handoff_id} by B")
            assert task["result"]["content"][0]["text"] == handoff["result"]
        else:
            assert handoff["status"] in ("accepted", "cancelled") and not completed and handoff["result"] is None
        if texts:
            if handoff["status"] == "result_ready" and handoff["result"] == texts[0]:
                found += 1
            else:
                lost += 1
    return found, lost


def tasks_get(room: Room, token: str, task_id: str) -> dict[str, Any]:
    mcp = Mcp(room.ingress, token)
    try:
        return check("tasks:GetTaskResult", mcp.result("tasks/get", {"taskId": task_id}, meta=EXT))
    finally:
        mcp.close()


def test_sigkill_during_a_burst_of_completions(tmp_path):
    room = start_room(tmp_path / "room", text="# Crash trial\n\nSome text.\n")
    out, killed, rounds = Outcomes(), [], []
    started = time.monotonic()
    try:
        owner = room.join("crash-owner", "read,handoff,approve")
        worker = room.join("crash-worker", "read,handoff")
        for round_no in range(ROUNDS):
            ids = prepare(owner, worker, round_no)
            jobs = [(h, f"{h} by {who}") for h in ids for who in "AB"]
            random.Random(round_no).shuffle(jobs)
            burst(room, worker.token, jobs, out, killed)
            left = owner.get("/workspace/handoffs", params={"status": "accepted", "limit": 200}).json()["handoffs"]
            for handoff in left:  # free the active-task cap for the next round
                assert owner.post(f"/workspace/handoffs/{handoff['id']}/cancel").status_code == 200
            rounds.append(ids)
        waiting = prepare(owner, worker, ROUNDS)[:1]  # one task still working across the restart

        room = room.restart()
        everything = [h for ids in rounds for h in ids]
        with httpx.Client(base_url=room.ingress, headers={"Authorization": f"Bearer {owner.token}"},
                          timeout=30) as reader:
            found, lost = verify(reader, everything, out)
        done = next(h for h in everything if out.acked.get(h))
        done_task = owner.get(f"/workspace/handoffs/{done}").json()["task_id"]
        assert tasks_get(room, owner.token, done_task)["status"] == "completed"
        working_task = owner.get(f"/workspace/handoffs/{waiting[0]}").json()["task_id"]
        assert tasks_get(room, worker.token, working_task)["status"] == "working"
    finally:
        room.stop()
    print(f"\ncrash trial: {ROUNDS} SIGKILLs of the worker mid-burst ({len(everything) * 2} completions "
          f"from {THREADS} threads; killed after {killed} acks); acknowledged {out.acknowledged}, "
          f"found {found}, lost {lost}, refused {out.refused}, unanswered {out.unanswered}; "
          f"{time.monotonic() - started:.1f} s")
    assert lost == 0 and found == out.acknowledged
    assert out.acknowledged >= ROUNDS * KILL_AFTER


def test_a_tool_task_interrupted_by_a_restart_fails(tmp_path):
    """A task-running tool's run dies with the room process; the next one fails its task before serving."""
    room = start_room(tmp_path / "room", text="# Tool\n", env=plugin_env("tests.conformance.mcp.fixtures:register"))
    try:
        me = room.join("tool-user", "read")
        mcp = Mcp(room.ingress, me.token)
        created = mcp.result("tools/call", {"name": "slow_compute", "arguments": {"seconds": 600}}, meta=EXT)
        mcp.close()
        os.kill(worker_pid(room), signal.SIGKILL)  # the arbiter starts a new worker
        wait_answering(room)
        task = tasks_get(room, me.token, created["taskId"])
        assert task["status"] == "failed" and task["error"]["message"] == "interrupted: the room restarted"
    finally:
        room.stop()
