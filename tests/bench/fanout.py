"""Benchmark: live fan-out of ``/workspace/observe`` at 10 to 10,000 observers.

Run::

    /tmp/venv/bin/python tests/bench/fanout.py [--levels 10,100,1000] [--seconds 15] [--rate 20]

For each level, on a fresh real room (``ce serve``: gunicorn, one asgi
worker, Falcon) serving ``examples/sample.md``:

1. N observers open ``GET /workspace/observe`` on the session ingress with
   session bearers (250 streams per session, under the 600 a minute
   limit). They run in separate client processes (plain sockets on one
   epoll selector; 500 streams each at most) that only note, for each
   ``id:`` line, the time it arrived.
2. A writer commits ``--rate`` changes a second (owner API invitations:
   one SQLite transaction and one event each) for ``--seconds``; meanwhile
   a prober sends ordinary requests (``GET /workspace/document`` with its
   own bearer, 5 a second) and times them.
3. Delivery latency per (observer, event) = arrival time − the event's
   ``time`` (stamped inside the commit's transaction, so it includes the
   commit itself). Printed: p50/p99/max, events lost (every observer must
   receive every event, in order), the worker's RSS before the observers
   connect and after the run (``/proc/<worker>/status`` ``VmRSS``) and RSS
   per subscriber, and the prober's p50/p99.

Targets: at 1,000 observers p99 delivery ≤ 100 ms, ≤ 50 KB RSS
per subscriber, ordinary requests still answered; at 10,000
(``--levels 10000``) p99 ≤ 1 s, ≤ 25 KB per subscriber, nothing lost.
``--bare`` runs the same level against a bare SSE hub on the same stack
(tests/bench/bare_hub.py) as the anchor.

Open files: the bench raises its soft ``RLIMIT_NOFILE`` to the hard limit
(the room it starts inherits it); 10,000 streams need about 10,100
descriptors in the room and as many across the observer processes. An
operator serving that many must allow it (``ulimit -n``, systemd
``LimitNOFILE=``, or the container's nofile limit), see docs/performance.md.

(``--observer`` is the internal mode of the client processes.)
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import selectors
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

PER_SESSION = 250
PER_PROCESS = 500


# -- client process ------------------------------------------------------------

def observer_process(args) -> None:
    """Open ``count`` streams, then note (id, arrival) per frame until stdin says stop.

    Plain non-blocking sockets on one epoll selector: the least client work
    per frame, so the figures are the room's and not the load generator's.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    tokens = args.tokens.split(",")
    selector = selectors.DefaultSelector()
    arrivals: list[list] = [[] for _ in range(args.count)]
    pending: list[bytes] = [b""] * args.count
    for i in range(args.count):
        sock = socket.create_connection(("127.0.0.1", args.port))
        sock.sendall((f"GET /workspace/observe HTTP/1.1\r\nHost: commonroom\r\nAccept: text/event-stream\r\n"
                      f"Authorization: Bearer {tokens[i % len(tokens)]}\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += sock.recv(4096)
        if b" 200 " not in head.split(b"\r\n", 1)[0]:
            raise SystemExit(f"observe refused: {head[:200]!r}")
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ, i)
    selector.register(sys.stdin, selectors.EVENT_READ, -1)
    print("ready", flush=True)
    running = True
    while running:
        for key, _ in selector.select(1.0):
            if key.data < 0:
                running = False
                break
            try:
                data = key.fileobj.recv(262144)
            except BlockingIOError:
                continue
            if not data:
                selector.unregister(key.fileobj)
                continue
            now = time.time()
            i = key.data
            *lines, pending[i] = (pending[i] + data).split(b"\n")
            for line in lines:
                if line.startswith(b"id: "):
                    arrivals[i].append((int(line[4:]), now))
    Path(args.out).write_text(json.dumps(arrivals))
    print("done", flush=True)


# -- parent ----------------------------------------------------------------------

def worker_pid(room_pid: int) -> int:
    for _ in range(100):
        try:
            children = Path(f"/proc/{room_pid}/task/{room_pid}/children").read_text().split()
        except OSError:
            children = []
        if children:
            return int(children[0])
        time.sleep(0.05)
    raise RuntimeError("no worker process")


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def stamp(text: str) -> float:
    return dt.datetime.fromisoformat(text).timestamp()


class Prober(threading.Thread):
    """Ordinary requests timed while a bench runs: ``GET /workspace/document`` 5 a second, its own bearer."""

    def __init__(self, base: str, token: str):
        super().__init__(daemon=True)
        self.base, self.token = base, token
        self.samples: list[tuple[float, float]] = []  # (time.monotonic() at the start, milliseconds)
        self.failures: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        import httpx

        with httpx.Client(base_url=self.base, headers={"Authorization": f"Bearer {self.token}"},
                          timeout=30) as client:
            while not self.stop.is_set():
                started, t0 = time.monotonic(), time.perf_counter()
                r = client.get("/workspace/document")
                self.samples.append((started, (time.perf_counter() - t0) * 1000))
                if r.status_code != 200:
                    self.failures.append(r.text[:200])
                self.stop.wait(0.2)

    def finish(self) -> list[float]:
        """Stop, and every request's milliseconds."""
        self.stop.set()
        self.join()
        return [ms for _, ms in self.samples]


class RoomTarget:
    """A fresh room serving examples/sample.md; events are owner API invitations."""

    def __init__(self, folder: Path, n: int):
        import httpx

        from tests.roomproc import start_room

        # the ingress holds 4,096 connections unless told otherwise (docs/operator.md)
        os.environ["COMMONROOM_MAX_CONNECTIONS"] = str(max(4096, n + 256))
        self.room = start_room(folder, ROOT / "examples" / "sample.md")
        self.pid = self.room.proc.pid
        self.ingress = self.room.ingress
        self.port = self.room.state["ingress"]["port"]
        self.tokens = [self.room.join(f"watcher{i}", "read,observe").token
                       for i in range((n + PER_SESSION - 1) // PER_SESSION)]
        self.probe_token = self.room.join("prober", "read").token
        self.owner = httpx.Client(base_url=self.room.owner, timeout=30,
                                  headers={"Authorization": f"Bearer {self.room.owner_token}"})

    def last_id(self) -> int:
        return self.owner.get("/workspace/room").json()["last_event_id"]

    def publish(self, i: int) -> None:
        r = self.owner.post("/owner/invitations", json={"participant": f"w{i}", "capabilities": ["read"]})
        assert r.status_code == 201, r.text

    def times(self) -> dict[int, float]:
        """Event id → its time, from the room's history."""
        times: dict[int, float] = {}
        cursor = None
        while True:
            params = {"limit": 200, **({"cursor": cursor} if cursor else {})}
            page = self.owner.get("/workspace/history", params=params).json()
            times.update({e["id"]: stamp(e["time"]) for e in page["events"]})
            cursor = page["next_cursor"]
            if not cursor:
                return times

    def stop(self) -> None:
        self.owner.close()
        self.room.stop()


class BareTarget:
    """The bare SSE hub (tests/bench/bare_hub.py) standing where the room stands."""

    def __init__(self, folder: Path, n: int):
        import httpx

        from tests.bench.bare_app import serve

        self.proc, self.ingress = serve(folder / "none", module="tests.bench.bare_hub:app")
        self.pid = self.proc.pid
        self.port = int(self.ingress.rsplit(":", 1)[1])
        self.tokens = ["bare"]
        self.probe_token = "bare"
        self.client = httpx.Client(base_url=self.ingress, timeout=30)
        self._times: dict[int, float] = {}

    def last_id(self) -> int:
        return max(self._times, default=0)

    def publish(self, i: int) -> None:
        r = self.client.post("/publish")
        assert r.status_code == 200, r.text
        self._times[r.json()["id"]] = r.json()["time"]

    def times(self) -> dict[int, float]:
        return dict(self._times)

    def stop(self) -> None:
        self.client.close()
        self.proc.terminate()
        self.proc.wait(10)


def run_level(n: int, seconds: float, rate: float, bare: bool = False) -> dict:
    """One level: ``n`` observers of a fresh room (or, with ``bare``, of the bare SSE hub)."""
    import httpx

    folder = Path(tempfile.mkdtemp(prefix=f"fanout{n}-"))
    target: Any = BareTarget(folder, n) if bare else RoomTarget(folder, n)
    try:
        wpid = worker_pid(target.pid)
        with httpx.Client(base_url=target.ingress, timeout=30) as warm:
            for _ in range(20):  # warm the worker up before measuring its size
                warm.get("/workspace/document", headers={"Authorization": f"Bearer {target.probe_token}"})
        time.sleep(0.5)
        rss_before = rss_kb(wpid)
        procs = []
        outs = []
        remaining = n
        index = 0
        while remaining:
            count = min(PER_PROCESS, remaining)
            out = folder / f"arrivals{index}.json"
            # streams of one process share its sessions; each session stays under 600/min
            tokens = target.tokens[(index * PER_PROCESS) // PER_SESSION:
                                   ((index * PER_PROCESS + count - 1) // PER_SESSION) + 1] or target.tokens
            procs.append(subprocess.Popen(
                [sys.executable, __file__, "--observer", "--port", str(target.port), "--tokens", ",".join(tokens),
                 "--count", str(count), "--out", str(out)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
            outs.append(out)
            remaining -= count
            index += 1
        for proc in procs:
            assert proc.stdout.readline().strip() == "ready"
        time.sleep(1.0)
        rss_connected = rss_kb(wpid)
        start_id = target.last_id()

        prober = Prober(target.ingress, target.probe_token)
        cpu0, wall0 = cpu_seconds(wpid), time.monotonic()
        prober.start()
        commit_ms: list[float] = []
        interval = 1.0 / rate
        next_at = time.perf_counter()
        for i in range(int(seconds * rate)):
            next_at += interval
            t0 = time.perf_counter()
            target.publish(i)
            commit_ms.append((time.perf_counter() - t0) * 1000)
            time.sleep(max(0.0, next_at - time.perf_counter()))
        worker_cpu = (cpu_seconds(wpid) - cpu0) / (time.monotonic() - wall0)
        time.sleep(1.0)  # let the last events arrive
        probe_ms = prober.finish()
        assert not prober.failures, prober.failures[:3]
        rss_after = rss_kb(wpid)
        end_id = target.last_id()
        for proc in procs:
            proc.stdin.write("stop\n")
            proc.stdin.flush()
            proc.stdout.readline()
            proc.wait(30)
        times = target.times()
        expected = list(range(start_id + 1, end_id + 1))
        latencies: list[float] = []
        lost = disordered = 0
        for out in outs:
            for arrivals in json.loads(out.read_text()):
                ids = [i for i, _ in arrivals if i > start_id]
                if ids != expected:
                    disordered += ids != sorted(ids)
                    lost += len(set(expected) - set(ids))
                latencies += [(t - times[i]) * 1000 for i, t in arrivals if i > start_id]
        return {
            "observers": n,
            "events": len(expected),
            "deliveries": len(latencies),
            "lost": lost,
            "out_of_order_streams": disordered,
            "p50_ms": pct(latencies, 50),
            "p99_ms": pct(latencies, 99),
            "max_ms": max(latencies) if latencies else float("nan"),
            "rss_before_kb": rss_before,
            "rss_connected_kb": rss_connected,
            "rss_after_kb": rss_after,
            "rss_per_subscriber_kb": (rss_after - rss_before) / n,
            "rss_per_subscriber_connected_kb": (rss_connected - rss_before) / n,
            "probe_n": len(probe_ms),
            "probe_p50_ms": pct(probe_ms, 50),
            "probe_p99_ms": pct(probe_ms, 99),
            "worker_cpu_percent": 100 * worker_cpu,
            "commit_p50_ms": pct(commit_ms, 50),
            "commit_p99_ms": pct(commit_ms, 99),
        }
    finally:
        target.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", default="10,100,1000")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--json", action="store_true", help="print the raw figures as JSON too")
    parser.add_argument("--bare", action="store_true",
                        help="also run the bare SSE hub anchor at each level (tests/bench/bare_hub.py)")
    parser.add_argument("--observer", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--tokens", help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.observer:
        observer_process(args)
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    print(f"fan-out: {args.rate:g} commits/s for {args.seconds:g} s per level; cpus={os.cpu_count()}")
    header = (f"{'observers':>9} {'events':>6} {'lost':>4} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} "
              f"{'RSS0 MB':>8} {'RSS MB':>7} {'KB/sub':>7} {'req p50':>8} {'req p99':>8} {'commit p99':>10} {'cpu %':>6}")
    print(header)
    results = []
    for level in (int(x) for x in args.levels.split(",")):
        r = run_level(level, args.seconds, args.rate)
        if args.bare:
            r["bare"] = run_level(level, args.seconds, args.rate, bare=True)
        results.append(r)
        print(f"{r['observers']:>9} {r['events']:>6} {r['lost']:>4} {r['p50_ms']:>7.1f} {r['p99_ms']:>7.1f} "
              f"{r['max_ms']:>7.1f} {r['rss_before_kb'] / 1024:>8.1f} {r['rss_after_kb'] / 1024:>7.1f} "
              f"{r['rss_per_subscriber_kb']:>7.1f} {r['probe_p50_ms']:>8.1f} {r['probe_p99_ms']:>8.1f} "
              f"{r['commit_p99_ms']:>10.1f} {r['worker_cpu_percent']:>6.0f}", flush=True)
    if args.json:
        print(json.dumps(results, indent=2))
    print("delivery = arrival − event time (stamped in the commit's transaction); "
          "req = GET /workspace/document at 5/s meanwhile; KB/sub = (RSS after − RSS before) / observers")


if __name__ == "__main__":
    main()
