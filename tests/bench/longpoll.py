"""Benchmark: 1,000 concurrent ``observe_session_messages`` waits in one real room.

Run::

    .venv/bin/python tests/bench/longpoll.py [--levels 10,100,1000] [--rounds 5] [--wait 30]

For each level N, on a fresh real room (``ce serve``: gunicorn, one asgi
worker) serving ``examples/sample.md``:

1. A coordinator session takes a baseline token of its board. N waiters
   (``read`` sessions, :data:`PER_SESSION` waits each so every bearer stays
   under the seed's 600 requests a minute) run in client processes (plain
   sockets on one epoll selector, :data:`PER_PROCESS` each), one kept-alive
   connection per wait.
2. Each round: every waiter sends ``GET /workspace/boards/{C}/observe?
   after_observation_token=…&wait_seconds=W`` with its current token; once
   all are sent the parent lets them sit idle for ``--idle`` seconds
   after a second to take them in (worker CPU measured meanwhile: a
   polling wait would show here), reads
   the worker's RSS, then posts one note on the board. Every wait must
   answer ``200`` with ``wait_outcome: updated`` carrying that note; the
   waiter keeps the returned token for the next round.
3. Wake-up latency per (waiter, round) = the answer's arrival − the note's
   ``created_at`` (stamped inside the post's transaction). Meanwhile a
   prober sends ordinary requests (``GET /workspace/document``, 5 a second,
   its own bearer) and times them.

Printed per level: waits opened and answered (``updated``), wrong answers,
wake-up p50/p99/max, the prober's p50/p99/max over the whole run and its
p99 while every wait sat open and idle,
worker CPU while N waits sat idle, worker RSS before the waits, with the
waits open, after, and per wait.

(``--waiter`` is the internal mode of the client processes.)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import selectors
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bench.fanout import Prober, cpu_seconds, pct, rss_kb, stamp, worker_pid  # noqa: E402

#: Waits per session (bearer): ``rounds`` requests each per minute stay under 600.
PER_SESSION = 100
PER_PROCESS = 500


# -- client process ----------------------------------------------------------------

def _request(board: str, token: str, after: str, wait: int) -> bytes:
    query = f"after_observation_token={quote(after, safe='')}&wait_seconds={wait}"
    return (f"GET /workspace/boards/{board}/observe?{query} HTTP/1.1\r\nHost: commonroom\r\n"
            f"Authorization: Bearer {token}\r\n\r\n").encode()


def _response(buffer: bytes) -> tuple[int, dict, bytes] | None:
    """``(status, body, rest)`` once ``buffer`` holds one whole response, else None."""
    head, sep, rest = buffer.partition(b"\r\n\r\n")
    if not sep:
        return None
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    if len(rest) < length:
        return None
    return int(head.split(b" ", 2)[1]), json.loads(rest[:length] or b"null"), rest[length:]


def waiter_process(args) -> None:
    """Hold ``count`` connections; per ``wait TOKEN`` line from stdin, one wait each; report answers."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    bearers = args.tokens.split(",")
    socks = [socket.create_connection(("127.0.0.1", args.port)) for _ in range(args.count)]
    print("connected", flush=True)
    after = [""] * args.count
    for line in sys.stdin:
        command, _, token = line.strip().partition(" ")
        if command != "wait":
            break
        selector = selectors.DefaultSelector()
        for i, sock in enumerate(socks):
            after[i] = after[i] or token
            sock.setblocking(True)
            sock.sendall(_request(args.board, bearers[i % len(bearers)], after[i], args.wait))
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ, i)
        print("sent", flush=True)
        buffers = [b""] * args.count
        answers: list = [None] * args.count
        left = args.count
        deadline = time.monotonic() + args.wait + 30
        while left and time.monotonic() < deadline:
            for key, _ in selector.select(1.0):
                i = key.data
                data = key.fileobj.recv(65536)
                now = time.time()
                if not data:
                    answers[i] = {"status": 0, "closed": True, "at": now}
                else:
                    buffers[i] += data
                    parsed = _response(buffers[i])
                    if parsed is None:
                        continue
                    status, body, buffers[i] = parsed
                    answers[i] = {"status": status, "at": now, "outcome": (body or {}).get("wait_outcome"),
                                  "ids": [m["message_id"] for m in (body or {}).get("messages", [])],
                                  "error": (body or {}).get("error")}
                    if status == 200:
                        after[i] = body["observation_token"]
                selector.unregister(key.fileobj)
                left -= 1
        selector.close()
        print("answers " + json.dumps(answers), flush=True)
    for sock in socks:
        sock.close()


# -- parent ----------------------------------------------------------------------------

def run_level(n: int, rounds: int, wait: int, idle: float) -> dict:
    """One fresh room, ``n`` concurrent waits for ``rounds`` rounds; the figures."""
    from tests.roomproc import start_room

    folder = Path(tempfile.mkdtemp(prefix=f"longpoll{n}-"))
    room = start_room(folder, ROOT / "examples" / "sample.md")
    procs: list[subprocess.Popen] = []
    try:
        wpid = worker_pid(room.proc.pid)
        coordinator = room.join("coordinator", "read,message")
        board = coordinator.session["id"]
        bearers = [room.join(f"waiter{i}", "read").token for i in range((n + PER_SESSION - 1) // PER_SESSION)]
        prober_session = room.join("prober", "read")
        for _ in range(20):  # warm up before measuring the worker's size
            prober_session.get("/workspace/document")
            coordinator.get(f"/workspace/boards/{board}/observe")
        time.sleep(0.5)
        rss_before = rss_kb(wpid)
        baseline = coordinator.get(f"/workspace/boards/{board}/observe").json()["observation_token"]
        port = room.state["ingress"]["port"]
        start = 0
        while start < n:
            count = min(PER_PROCESS, n - start)
            mine = bearers[start // PER_SESSION: (start + count - 1) // PER_SESSION + 1]
            procs.append(subprocess.Popen(
                [sys.executable, __file__, "--waiter", "--port", str(port), "--board", board,
                 "--tokens", ",".join(mine), "--count", str(count), "--wait", str(wait)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
            start += count
        for proc in procs:
            assert proc.stdout.readline().strip() == "connected"

        prober = Prober(room.ingress, prober_session.token)
        prober.start()
        opened = answered = wrong = 0
        latencies: list[float] = []
        idle_cpu: list[float] = []
        rss_open: list[int] = []
        quiet: list[tuple[float, float]] = []  # the idle windows: every wait open, nothing arriving
        post_ms: list[float] = []
        errors: dict[str, int] = {}
        for round_ in range(rounds):
            for proc in procs:
                proc.stdin.write(f"wait {baseline}\n")
                proc.stdin.flush()
            for proc in procs:
                assert proc.stdout.readline().strip() == "sent"
            opened += n
            time.sleep(1.0)  # the room takes the requests in
            cpu0, wall0 = cpu_seconds(wpid), time.monotonic()
            time.sleep(idle)
            idle_cpu.append(100 * (cpu_seconds(wpid) - cpu0) / (time.monotonic() - wall0))
            quiet.append((wall0, time.monotonic()))
            rss_open.append(rss_kb(wpid))
            t0 = time.perf_counter()
            r = coordinator.post(f"/workspace/boards/{board}/messages", {"kind": "note", "body": f"round {round_}"})
            post_ms.append((time.perf_counter() - t0) * 1000)
            assert r.status_code == 201, r.text
            note = r.json()
            posted_at = stamp(note["created_at"])
            for proc in procs:
                line = proc.stdout.readline()
                assert line.startswith("answers "), line
                for answer in json.loads(line[len("answers "):]):
                    if answer is None:
                        errors["no answer"] = errors.get("no answer", 0) + 1
                        continue
                    if answer["status"] == 200 and answer["outcome"] == "updated" and answer["ids"] == [note["message_id"]]:
                        answered += 1
                        latencies.append((answer["at"] - posted_at) * 1000)
                    else:
                        wrong += 1
                        what = answer.get("error") or f"{answer['status']} {answer.get('outcome')}"
                        errors[what] = errors.get(what, 0) + 1
        all_ms = prober.finish()
        time.sleep(0.5)
        rss_after = rss_kb(wpid)
        idle_ms = [ms for at, ms in prober.samples if any(a <= at and at + ms / 1000 <= b for a, b in quiet)]
        return {
            "waits": n, "rounds": rounds, "opened": opened, "answered": answered, "wrong": wrong, "errors": errors,
            "wake_p50_ms": pct(latencies, 50), "wake_p99_ms": pct(latencies, 99),
            "wake_max_ms": max(latencies) if latencies else float("nan"),
            "probe_n": len(all_ms), "probe_failures": len(prober.failures),
            "probe_p50_ms": pct(all_ms, 50), "probe_p99_ms": pct(all_ms, 99),
            "probe_max_ms": max(all_ms) if all_ms else float("nan"),
            "probe_idle_p50_ms": pct(idle_ms, 50), "probe_idle_p99_ms": pct(idle_ms, 99),
            "idle_cpu_percent": max(idle_cpu), "post_p50_ms": pct(post_ms, 50),
            "rss_before_kb": rss_before, "rss_open_kb": max(rss_open), "rss_after_kb": rss_after,
            "rss_per_wait_kb": (max(rss_open) - rss_before) / n,
        }
    finally:
        for proc in procs:
            try:
                proc.stdin.write("stop\n")
                proc.stdin.close()
            except OSError:
                pass
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
        room.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", default="10,100,1000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--wait", type=int, default=30, help="wait_seconds of each wait (0-30)")
    parser.add_argument("--idle", type=float, default=2.0, help="seconds the waits sit idle before the post")
    parser.add_argument("--json", action="store_true", help="print the raw figures as JSON too")
    parser.add_argument("--waiter", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--board", help=argparse.SUPPRESS)
    parser.add_argument("--tokens", help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.waiter:
        waiter_process(args)
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    print(f"long-poll: {args.rounds} rounds of one post per level, wait_seconds={args.wait}, "
          f"idle {args.idle:g} s before each post; cpus={os.cpu_count()}")
    print(f"{'waits':>6} {'opened':>7} {'answered':>8} {'wrong':>5} {'wake p50':>9} {'wake p99':>9} {'wake max':>9} "
          f"{'req p50':>8} {'req p99':>8} {'req max':>8} {'idle p99':>8} {'idle cpu%':>9} {'RSS0 MB':>8} {'RSS MB':>7} "
          f"{'KB/wait':>8}")
    results = []
    for level in (int(x) for x in args.levels.split(",")):
        r = run_level(level, args.rounds, args.wait, args.idle)
        results.append(r)
        print(f"{r['waits']:>6} {r['opened']:>7} {r['answered']:>8} {r['wrong']:>5} {r['wake_p50_ms']:>9.1f} "
              f"{r['wake_p99_ms']:>9.1f} {r['wake_max_ms']:>9.1f} {r['probe_p50_ms']:>8.1f} {r['probe_p99_ms']:>8.1f} "
              f"{r['probe_max_ms']:>8.1f} {r['probe_idle_p99_ms']:>8.1f} {r['idle_cpu_percent']:>9.1f} {r['rss_before_kb'] / 1024:>8.1f} "
              f"{r['rss_open_kb'] / 1024:>7.1f} {r['rss_per_wait_kb']:>8.1f}"
              + (f"  errors {r['errors']}" if r["errors"] else ""), flush=True)
    if args.json:
        print(json.dumps(results, indent=2))
    print("wake = answer arrival − the note's created_at (stamped in the post's transaction); req = GET "
          "/workspace/document at 5/s meanwhile (idle: while every wait sat open, nothing arriving); idle cpu = worker "
          "CPU then (a polling wait would show here); "
          "KB/wait = (RSS with the waits open − RSS before) / waits")


if __name__ == "__main__":
    main()
