"""Soak: one room under 1,000 mixed streams, 20 writers and a churn of sessions.

One real room (``ce serve``: gunicorn, one asgi worker, a real sidecar)
for 3 minutes (``COMMONROOM_RELEASE=1``: 30; ``COMMONROOM_SOAK_SECONDS``
overrides both) holds:

- 1,000 streams in five client processes (:mod:`tests.soak_streams`: raw
  sockets on one selector each): 400 ``/workspace/observe`` (from a known
  ``since_event_id``), 200 ``GET /mcp`` and 200 ``subscriptions/listen``
  (both on the document resource) and 200 board long-polls
  (``observe_session_messages`` with ``wait_seconds``, in a loop), spread
  over sessions so no bearer comes near 600 requests a minute;
- 20 writers, each its own session: direct writes, proposals approved,
  lease churn (acquire, renew, release), board todos completed with a
  completion key plus one notice poster on the watched board, handoffs
  carried to approval;
- a churn thread joining a session every two seconds, opening an observe
  stream and a listen stream with it and revoking it;
- a prober timing ordinary reads (document, room status) five times a
  second.

The worker's RSS is sampled every 10 s; the slope after the first minute
(least squares) must stay under :data:`SLOPE_BOUND_KB_PER_MIN`. Every
minute the p99 of the prober's reads and of the writers' requests is
printed. At the end, after a fence write, nothing may be lost: every
observe stream has every event id from its cursor to the room's last, in
order (or ended with an explicit ``resync``, then the ids up to it); every
MCP stream is still open and was told of the fence; every waiter saw every
notice; every revoked session's streams ended within 2 s of the
revocation (the listen with its final result); no stream ended otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import httpx
import pytest

from tests.bench.fanout import pct, rss_kb, worker_pid
from tests.mcp_wire import Mcp
from tests.roomproc import ROOT, Room, start_room
from tests.soak_streams import DOCUMENT_URI
from tests.ssekit import Collector, open_stream

pytestmark = pytest.mark.slow

RELEASE = os.environ.get("COMMONROOM_RELEASE") == "1"
SECONDS = float(os.environ.get("COMMONROOM_SOAK_SECONDS", "1800" if RELEASE else "180"))
STREAMS = {"observe": 400, "mcp_get": 200, "listen": 200, "board": 200}
PER_PROCESS = 200
#: Streams per session (each opens once: far under 600 a minute) and waiters per session
#: (a notice every 4 s plus a timeout every 25 s: about 17 waits a minute each, 340 a session).
SSE_PER_SESSION, WAITERS_PER_SESSION = 50, 20
WRITERS = {"write": 5, "proposal": 4, "lease": 4, "board": 3, "notice": 1, "handoff": 3}
PAUSE = 2.5          # seconds between two steps of one writer
NOTICE_EVERY = 4.0   # seconds between two notices on the watched board
WARMUP = 300.0 if RELEASE else 60.0  # seconds before the memory slope is fitted
#: The bound on the worker's RSS growth after warm-up. What legitimately grows for a while:
#: SQLite's page cache, one per connection (a connection per thread, 2 MB each by default),
#: filling as the sidecar grows (versions, handoffs, board messages), and Python's arenas
#: settling. What it must catch: a subscriber kept per churned session (about 25 KB each,
#: docs/live.md; 30 sessions a minute x 2 streams = 1.5 MB/min) or every event kept (about
#: 1 KB x 20 a second = 1.2 MB/min). The 3-minute runs measured 0.2-0.65 MB/min.
SLOPE_BOUND_KB_PER_MIN = 1024.0


class Figures:
    """Timings and counts shared by the threads (appends are atomic under the GIL)."""

    def __init__(self) -> None:
        self.reads: list[tuple[float, float]] = []     # (monotonic, ms)
        self.writes: list[tuple[float, float]] = []
        self.steps: dict[str, int] = {}
        self.refused: dict[str, int] = {}
        self.unexpected: list[str] = []
        self.notices: list[str] = []
        self.joins = self.revocations = 0
        self.revoke_ms: list[float] = []
        self.churn_failures: list[str] = []
        self.stop = threading.Event()


class Writer(threading.Thread):
    """One writer: ``step(self)`` every :data:`PAUSE` seconds until stopped."""

    def __init__(self, kind: str, index: int, step: Callable[["Writer"], None], room: Room, caps: str,
                 figures: Figures, board: str = "") -> None:
        super().__init__(daemon=True, name=f"{kind}{index}")
        self.kind, self.step, self.figures, self.board, self.round = kind, step, figures, board, 0
        session = room.join(f"soak-{kind}{index}", caps)
        self.session = session.session
        self.client = httpx.Client(base_url=room.ingress, timeout=30,
                                   headers={"Authorization": f"Bearer {session.token}"})
        self.peer: httpx.Client | None = None
        self.peer_name = ""
        if kind == "handoff":
            self.peer_name = f"soak-hw{index}"
            peer = room.join(self.peer_name, "read,handoff")
            self.peer = httpx.Client(base_url=room.ingress, timeout=30,
                                     headers={"Authorization": f"Bearer {peer.token}"})

    def run(self) -> None:
        pause = NOTICE_EVERY if self.kind == "notice" else PAUSE
        while not self.figures.stop.wait(pause * (0.5 if self.round == 0 else 1)):
            self.round += 1
            try:
                self.step(self)
                self.figures.steps[self.kind] = self.figures.steps.get(self.kind, 0) + 1
            except Exception as exc:  # an answer no writer should get
                self.figures.unexpected.append(f"{self.name}: {exc!r}")

    def call(self, method: str, path: str, body: Any = None, *, ok: tuple[int, ...] = (200, 201),
             refusals: tuple[str, ...] = (), peer: bool = False) -> Any:
        """One request, timed; its JSON on success, None on a documented refusal."""
        client = self.peer if peer and self.peer is not None else self.client
        t0 = time.perf_counter()
        r = client.request(method, path, json=body)
        self.figures.writes.append((time.monotonic(), (time.perf_counter() - t0) * 1000))
        data = r.json()
        if r.status_code in ok:
            return data
        if data.get("error") in refusals:
            self.figures.refused[data["error"]] = self.figures.refused.get(data["error"], 0) + 1
            return None
        raise AssertionError(f"{method} {path}: {r.status_code} {data}")


BASE_TEXT = "# Soak\n\nA room under load.\n\n"


def write_step(w: Writer) -> None:
    """A whole-document write of constant size (the document does not grow)."""
    head = w.call("GET", "/workspace/document")
    w.call("PUT", "/workspace/document", {"expected_version": head["version"],
                                          "text": BASE_TEXT + f"{w.name} round {w.round:08d}\n"},
           refusals=("stale_version", "lease_conflict"))


def proposal_step(w: Writer) -> None:
    """Propose a new last line, approve it (another writer may have moved the head)."""
    head = w.call("GET", "/workspace/document")
    n = head["text"].count("\n")
    proposal = w.call("POST", "/workspace/proposals", {
        "base_version": head["version"], "region": {"lines": [n, n]}, "text": f"{w.name} proposal {w.round:08d}\n"},
        refusals=("stale_version",))
    if proposal is not None:
        w.call("POST", f"/workspace/proposals/{proposal['id']}/approve",
               refusals=("proposal_conflict", "stale_version", "lease_conflict"))


def lease_step(w: Writer) -> None:
    """Acquire, renew, release a one-line lease."""
    lease = w.call("POST", "/workspace/leases", {"region": {"lines": [1, 1]}, "ttl_seconds": 60},
                   refusals=("lease_conflict",))
    if lease is not None:
        w.call("POST", f"/workspace/leases/{lease['id']}/renew", {"ttl_seconds": 60})
        w.call("DELETE", f"/workspace/leases/{lease['id']}")


def board_step(w: Writer) -> None:
    """Post a todo on the writer's own board, read its assignment, complete it with a key."""
    board = w.session["id"]
    todo = w.call("POST", f"/workspace/boards/{board}/messages", {"kind": "todo", "body": f"todo {w.round}"})
    base = f"/workspace/boards/{board}/messages/{todo['message_id']}"
    fence = w.call("GET", base + "/assignment")["assignment_fence"]
    w.call("POST", base + "/complete", {"answer": f"done {w.round}", "completion_key": f"{w.name}-{w.round}",
                                        "expected_assignment_fence": fence})


def notice_step(w: Writer) -> None:
    """A note on the watched board (every waiter is owed it)."""
    note = w.call("POST", f"/workspace/boards/{w.board}/messages", {"kind": "note", "body": f"notice {w.round}"})
    w.figures.notices.append(note["message_id"])


def handoff_step(w: Writer) -> None:
    """A handoff from create (idempotency key) to approval; the peer session does the work."""
    key = f"{w.name}-{w.round}"
    made = w.call("POST", "/workspace/handoffs", {"summary": f"soak {key}", "assignee": w.peer_name,
                                                  "idempotency_key": key})
    handoff = made["handoff"]["id"]
    w.call("POST", f"/workspace/handoffs/{handoff}/accept", peer=True)
    w.call("POST", f"/workspace/handoffs/{handoff}/complete", {"result": f"result {key}"}, peer=True)
    w.call("POST", f"/workspace/handoffs/{handoff}/approve")


STEPS: dict[str, tuple[Callable[[Writer], None], str]] = {
    "write": (write_step, "read,write"), "proposal": (proposal_step, "read,propose,approve"),
    "lease": (lease_step, "read,lease"), "board": (board_step, "read,message"),
    "notice": (notice_step, "read,message"), "handoff": (handoff_step, "read,handoff,approve"),
}


def prober(room: Room, figures: Figures) -> None:
    """Ordinary reads, timed: the document and the room status, five a second in turn."""
    reader = room.join("soak-prober", "read")
    paths = ["/workspace/document", "/workspace/room"]
    with httpx.Client(base_url=room.ingress, timeout=30, headers={"Authorization": f"Bearer {reader.token}"}) as c:
        i = 0
        while not figures.stop.wait(0.2):
            i += 1
            t0 = time.perf_counter()
            r = c.get(paths[i % 2])
            figures.reads.append((time.monotonic(), (time.perf_counter() - t0) * 1000))
            if r.status_code != 200:
                figures.unexpected.append(f"prober: {r.status_code} {r.text[:200]}")


def churn(room: Room, figures: Figures) -> None:
    """Every 2 s: join, open an observe and a listen stream, revoke; both must end within 2 s."""
    owner = room.operator()
    i = 0
    while not figures.stop.wait(2.0):
        i += 1
        try:
            session = room.join(f"soak-churn{i % 8}", "read,observe")
            figures.joins += 1
            address = ("127.0.0.1", room.state["ingress"]["port"])
            observe = open_stream(address, "/workspace/observe", token=session.token)
            caller = Mcp(room.ingress, session.token)
            params = {"notifications": {"resourceSubscriptions": [DOCUMENT_URI]}}
            listen = open_stream(address, "/mcp", method="POST", headers=caller.headers("subscriptions/listen", params),
                                 body=json.dumps(caller.body("subscriptions/listen", params, id=f"churn-{i}")).encode())
            caller.close()
            assert observe.status == listen.status == 200, (observe.body_text, listen.body_text)
            readers = [Collector(observe, timeout=30), Collector(listen, timeout=30)]
            for reader in readers:
                reader.start()
            time.sleep(0.5)
            t0 = time.perf_counter()
            r = owner.post("/owner/revoke", {"session": session.session["id"]})
            assert r.status_code == 200, r.text
            figures.revocations += 1
            for reader in readers:
                reader.join(5)
            figures.revoke_ms.append((time.perf_counter() - t0) * 1000)
            assert all(reader.ended and reader.error is None for reader in readers), [r.error for r in readers]
            assert figures.revoke_ms[-1] < 2000, figures.revoke_ms[-1]
            final = [f.json() for f in readers[1].frames if f.event == "message"][-1]
            assert final.get("result", {}).get("resultType") == "complete", final
            observe.close()
            listen.close()
        except Exception as exc:
            figures.churn_failures.append(f"churn {i}: {exc!r}")


def spawn_streams(room: Room, tmp: Path, board: str, after: str) -> list[tuple[subprocess.Popen, Path, dict]]:
    """The client processes holding the 1,000 streams (:mod:`tests.soak_streams`), each ready."""
    operator = room.operator()
    since = operator.get("/workspace/room").json()["last_event_id"]
    procs = []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    for kind, total in STREAMS.items():
        per_session = WAITERS_PER_SESSION if kind == "board" else SSE_PER_SESSION
        caps = "read" if kind == "board" else "read,observe"
        for start in range(0, total, PER_PROCESS):
            count = min(PER_PROCESS, total - start)
            tokens = []
            for s in range((count + per_session - 1) // per_session):
                client = room.join(f"soak-{kind}{start // PER_PROCESS}-{s}", caps)
                if kind == "mcp_get":
                    mcp = Mcp(room.ingress, client.token)
                    mcp.result("resources/subscribe", {"uri": DOCUMENT_URI})
                    mcp.close()
                tokens.append(client.token)
            out = tmp / f"{kind}{start}.json"
            spec = {"kind": kind, "index": start, "port": room.state["ingress"]["port"], "tokens": tokens,
                    "count": count, "out": str(out), "since": since, "board": board, "after": after, "wait": 25}
            proc = subprocess.Popen([sys.executable, "-m", "tests.soak_streams", json.dumps(spec)], cwd=ROOT,
                                    env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            procs.append((proc, out, spec))
    for proc, _, spec in procs:
        line = proc.stdout.readline().strip()  # type: ignore[union-attr]
        assert line == "ready", (spec["kind"], line, proc.wait(5))
    return procs


def slope_kb_per_min(samples: list[tuple[float, int]]) -> float:
    """Least-squares slope of (seconds, KB) samples, in KB a minute."""
    n = len(samples)
    mx = sum(t for t, _ in samples) / n
    my = sum(v for _, v in samples) / n
    var = sum((t - mx) ** 2 for t, _ in samples)
    return 60 * sum((t - mx) * (v - my) for t, v in samples) / var if var else 0.0


def floor_samples(samples: list[tuple[float, int]], window: float = 40.0) -> list[tuple[float, int]]:
    """The smallest RSS sample of each ``window`` seconds, at the window's middle: the memory the
    worker keeps once the allocator gave back what it could (it trims every 20 s, commonroom/memory.py)."""
    windows: dict[int, list[int]] = {}
    for t, kb in samples:
        windows.setdefault(int(t // window), []).append(kb)
    return [((k + 0.5) * window, min(v)) for k, v in sorted(windows.items())]


def minute_line(figures: Figures, since: float, until: float, rss: int, label: str, room: Room) -> str:
    """p99 of reads and writes between ``since`` and ``until`` (monotonic), the worker's RSS, the sidecar's size."""
    sidecar = sum(p.stat().st_size for p in room.document.parent.glob(room.document.name + ".commonroom.db*"))
    reads = [ms for t, ms in figures.reads if since <= t < until]
    writes = [ms for t, ms in figures.writes if since <= t < until]
    return (f"soak {label}: reads n={len(reads)} p50={pct(reads, 50):.1f} p99={pct(reads, 99):.1f} ms; "
            f"writer requests n={len(writes)} p50={pct(writes, 50):.1f} p99={pct(writes, 99):.1f} ms; "
            f"worker RSS {rss / 1024:.1f} MB; sidecar {sidecar / 2**20:.1f} MB")


def check_streams(records: list[dict[str, Any]], since: int, last_id: int, fence_at: float,
                  notices: list[str]) -> dict[str, Any]:
    """What each stream was owed, against what it got; the figures (``lost`` must be 0)."""
    out: dict[str, Any] = {"observe_events": 0, "lost": 0, "resyncs": 0, "ended": 0, "mcp_updates": 0,
                           "waits": 0, "board_errors": 0, "problems": []}
    expected = list(range(since + 1, last_id + 1))
    for i, r in enumerate(records):
        if r["kind"] == "observe":
            out["observe_events"] += len(r["ids"])
            if r["resync"] is not None:  # explicit: the ids up to it, in order, then the ending
                out["resyncs"] += 1
                if r["ids"] != expected[:len(r["ids"])]:
                    out["lost"] += len(set(expected) - set(r["ids"]))
                    out["problems"].append(f"observe {i}: gap before resync {r['resync']}")
            elif r["ids"] != expected:
                out["lost"] += len(set(expected) - set(r["ids"]))
                out["problems"].append(f"observe {i}: {len(r['ids'])} ids, {len(expected)} owed")
        elif r["kind"] in ("mcp_get", "listen"):
            out["mcp_updates"] += r["updates"]
            if r["last_update"] < fence_at:
                out["lost"] += 1
                out["problems"].append(f"{r['kind']} {i}: not told of the fence write ({r['updates']} updates)")
        else:
            out["waits"] += r["waits"]
            out["board_errors"] += len(r["errors"])
            missing = set(notices) - set(r["messages"])
            out["lost"] += len(missing)
            if missing or r["errors"]:
                out["problems"].append(f"waiter {i}: {len(missing)} notices missing, errors {r['errors'][:2]}")
        if r["ended"] is not None and r["resync"] is None:
            out["ended"] += 1
            out["problems"].append(f"{r['kind']} {i}: ended without a resync")
    return out


def test_soak(tmp_path):
    room = start_room(tmp_path, text=BASE_TEXT + "start\n")
    figures = Figures()
    procs: list[tuple[subprocess.Popen, Path, dict]] = []
    try:
        wpid = worker_pid(room.proc.pid)
        writers: list[Writer] = []
        notice = Writer("notice", 0, notice_step, room, STEPS["notice"][1], figures)
        notice.board = notice.session["id"]
        baseline = notice.client.get(f"/workspace/boards/{notice.board}/observe").json()["observation_token"]
        for kind, count in WRITERS.items():
            if kind != "notice":
                writers += [Writer(kind, i, STEPS[kind][0], room, STEPS[kind][1], figures) for i in range(count)]
        writers.append(notice)
        procs = spawn_streams(room, tmp_path, notice.board, baseline)
        since = procs[0][2]["since"]
        threads = [*writers, threading.Thread(target=prober, args=(room, figures), daemon=True),
                   threading.Thread(target=churn, args=(room, figures), daemon=True)]
        start = time.monotonic()
        for thread in threads:
            thread.start()
        print(f"\nsoak: {sum(STREAMS.values())} streams {STREAMS}, {len(writers)} writers {WRITERS}, "
              f"{SECONDS:g} s, worker pid {wpid}", flush=True)
        samples: list[tuple[float, int]] = []
        minute = start
        while (now := time.monotonic()) - start < SECONDS:
            time.sleep(min(10.0, max(0.0, SECONDS - (now - start))))
            now = time.monotonic()
            samples.append((now - start, rss_kb(wpid)))
            if now - minute >= 60 or now - start >= SECONDS:
                print(minute_line(figures, minute, now, samples[-1][1], f"minute {(now - start) / 60:.1f}", room), flush=True)
                minute = now
            assert room.proc.poll() is None, "the room died"
        figures.stop.set()
        for thread in threads:
            thread.join(60)
        operator = room.operator()
        head = operator.get("/workspace/document").json()
        fence_at = time.time()
        fence = operator.request("PUT", "/workspace/document", json={"expected_version": head["version"],
                                                                     "text": BASE_TEXT + "fence\n"})
        assert fence.status_code == 200, fence.text
        time.sleep(3.0)  # every stream takes the fence in; the waiters answer the last notice
        last_id = operator.get("/workspace/room").json()["last_event_id"]
        records: list[dict[str, Any]] = []
        for proc, out, _ in procs:
            proc.stdin.write("stop\n")  # type: ignore[union-attr]
            proc.stdin.flush()  # type: ignore[union-attr]
            assert proc.stdout.readline().strip() == "done"  # type: ignore[union-attr]
            proc.wait(30)
            records += json.loads(out.read_text())
        result = check_streams(records, since, last_id, fence_at, figures.notices)
        after = [(t, kb) for t, kb in samples if t >= WARMUP]
        slope = slope_kb_per_min(after) if len(after) >= 3 else float("nan")
        floor = floor_samples(after)
        floor_slope = slope_kb_per_min(floor) if len(floor) >= 3 else float("nan")
        commits = head["version"]
        print(f"soak: events {since + 1}..{last_id} ({last_id - since}), versions {commits}, "
              f"writer steps {figures.steps}, refusals {figures.refused}, notices {len(figures.notices)}")
        print(f"soak: joins {figures.joins}, revocations {figures.revocations}, streams ended by revocation "
              f"p99 {pct(figures.revoke_ms, 99):.0f} ms max {max(figures.revoke_ms, default=0):.0f} ms")
        print(f"soak: streams {len(records)}: observe events delivered {result['observe_events']}, MCP updates "
              f"{result['mcp_updates']}, board waits {result['waits']}, resyncs {result['resyncs']}, "
              f"ended early {result['ended']}, lost {result['lost']}")
        print(f"soak: worker RSS {samples[0][1] / 1024:.1f} -> {samples[-1][1] / 1024:.1f} MB, slope after "
              f"{WARMUP:g} s {slope:.0f} KB/min (bound {SLOPE_BOUND_KB_PER_MIN:g}), of each 40 s window's "
              f"lowest sample {floor_slope:.0f} KB/min ({' '.join(f'{kb / 1024:.1f}' for _, kb in floor)} MB); "
              f"{minute_line(figures, start, time.monotonic(), samples[-1][1], 'whole run', room)}")
        assert figures.unexpected == [], figures.unexpected[:5]
        assert figures.churn_failures == [], figures.churn_failures[:5]
        assert result["problems"] == [] and result["lost"] == 0, result["problems"][:10]
        assert len(records) == sum(STREAMS.values())
        assert all(figures.steps.get(kind) for kind in WRITERS), figures.steps
        assert figures.revocations >= SECONDS / 4, figures.revocations
        # a run shorter than the warm-up plus 30 s (COMMONROOM_SOAK_SECONDS) fits no slope
        assert slope < SLOPE_BOUND_KB_PER_MIN or (len(after) < 3 and SECONDS < WARMUP + 30), (slope, samples)
        assert operator.get("/workspace/room").status_code == 200 and room.proc.poll() is None
    finally:
        figures.stop.set()
        for proc, _, _ in procs:
            if proc.poll() is None:
                proc.kill()
        room.stop()
