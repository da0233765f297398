"""Benchmark: proposals created and approved per second, against the disk's limit.

Run::

    /tmp/venv/bin/python tests/bench/commit.py [--seconds 1.5] [--rounds 5] [--skip-http] [--profile small|large]

Two documents: the first 10 KB (whole lines) of ``gunicorn-dirty.md`` and the
largest corpus document, ``angular-cli-CHANGELOG.md`` (~960 KB). For each,
one proposer after another creates a proposal (``{"lines": [k, k]}``, one
line replaced, ``base_version`` = the head) and approves it, as fast as it
can, measured two ways:

- **in-process**: the engine directly (``Engine.open``; the actor comes from
  invite / join / authenticate), no HTTP;
- **HTTP**: a real room (``ce serve``: gunicorn, one asgi worker, Falcon),
  one keep-alive client sending ``POST /workspace/proposals`` then
  ``POST .../approve``.

Line regions on purpose: a heading region makes the engine parse the
document's headings (markdown-it, ~0.45 s for the 1 MB changelog; cached per
text, so every new head pays it again).

Side by side: **bare** fsync'd SQLite transactions on the same disk (the
physical limit): plain ``sqlite3``, WAL, ``synchronous=FULL``, one
``INSERT`` of a row the size of a proposal per transaction.

Printed: a table of rates and the ratios. Targets: the small
document at least half the bare rate; the large one no worse than a fifth
of the small one's rate.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.roomproc import CORPUS, start_room  # noqa: E402

SMALL_SOURCE = "gunicorn-dirty.md"
LARGE_SOURCE = "angular-cli-CHANGELOG.md"
SMALL_BYTES = 10 * 1024


def small_text() -> str:
    """The first whole lines of the small source, up to 10 KB."""
    out, size = [], 0
    for line in (CORPUS / SMALL_SOURCE).read_text("utf-8").splitlines(keepends=True):
        if size + len(line.encode()) > SMALL_BYTES:
            break
        out.append(line)
        size += len(line.encode())
    return "".join(out)


def edit(i: int, line_count: int) -> tuple[dict[str, Any], str]:
    """The i-th edit: replace one line spread over the document."""
    k = 1 + (i * 7919) % line_count
    return {"lines": [k, k]}, f"edited line {k}, edit {i}\n"


# -- the three contenders -----------------------------------------------------------
#
# Each is set up once per document and then measured in short rounds, taking
# turns (bare, in-process, HTTP, bare, ...), so that load from anything else
# on the machine falls on all three alike; the figure is the median round.


class Bare:
    """Single-INSERT transactions on plain sqlite3 (WAL, synchronous=FULL): the physical limit."""

    def __init__(self, folder: Path, row_bytes: int):
        path = folder / "bare.db"
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
        self.con = sqlite3.connect(path, isolation_level=None)
        self.con.execute("PRAGMA journal_mode=wal")
        self.con.execute("PRAGMA synchronous=full")
        self.con.execute("CREATE TABLE row (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        self.body = "x" * row_bytes

    def measure(self, seconds: float) -> float:
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            self.con.execute("BEGIN IMMEDIATE")
            self.con.execute("INSERT INTO row (body) VALUES (?)", (self.body,))
            self.con.execute("COMMIT")
            n += 1
        return n / (time.perf_counter() - start)

    def close(self) -> None:
        self.con.close()


class InProcess:
    """Proposals created and approved on the engine itself (file following in the background, as in the room)."""

    def __init__(self, folder: Path, text: str):
        from commonroom import regions
        from commonroom.engine import Engine

        doc = folder / "inproc.md"
        for p in folder.glob("inproc.md*"):
            p.unlink()
        doc.write_text(text, "utf-8")
        self.doc = doc
        self.engine = Engine.open(doc, background_file=True)
        self.engine.set_ingress({"host": "127.0.0.1", "port": 9})  # invitations need a transport hint; never dialled
        token = self.engine.invite("bench", ["read", "propose", "approve"])["token"]
        self.actor = self.engine.authenticate(self.engine.join(token)["token"])
        self.lines = len(regions.lines_of(text))
        self.i = 0
        self.row = len(json.dumps(self.one()))  # the size of a proposal, for the bare rows
        for _ in range(4):  # warm-up
            self.one()

    def one(self) -> dict[str, Any]:
        self.i += 1
        region, new = edit(self.i, self.lines)
        p = self.engine.create_proposal(self.actor, self.engine.head().number, region, new, f"edit {self.i}")
        self.engine.approve_proposal(self.actor, p["id"])
        return p

    def measure(self, seconds: float) -> float:
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            self.one()
            n += 1
        return n / (time.perf_counter() - start)

    def close(self) -> None:
        self.engine.follower.flush()
        assert self.doc.read_text("utf-8") == self.engine.head().text
        self.engine.close()


class OverHttp:
    """Proposals created and approved through a real room, one keep-alive client."""

    def __init__(self, folder: Path, text: str):
        import httpx
        from commonroom import regions

        room_dir = folder / "room"
        shutil.rmtree(room_dir, ignore_errors=True)
        room_dir.mkdir()
        (room_dir / "doc.md").write_text(text, "utf-8")
        self.room = start_room(room_dir, name="doc.md")
        c = self.room.join("bench", "read,propose,approve")
        self.lines = len(regions.lines_of(text))
        self.http = httpx.Client(base_url=self.room.ingress, headers={"Authorization": f"Bearer {c.token}"},
                                 timeout=60)
        self.head = self.http.get("/workspace/document").json()["version"]
        self.i = 0
        for _ in range(5):
            self.one()

    def one(self) -> None:
        self.i += 1
        region, new = edit(self.i, self.lines)
        r = self.http.post("/workspace/proposals", json={"base_version": self.head, "region": region, "text": new,
                                                         "summary": f"edit {self.i}"})
        assert r.status_code == 201, r.text
        r = self.http.post(f"/workspace/proposals/{r.json()['id']}/approve")
        assert r.status_code == 200, r.text
        self.head = r.json()["version"]["number"]

    def measure(self, seconds: float) -> float:
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            self.one()
            n += 1
        return n / (time.perf_counter() - start)

    def close(self) -> None:
        self.http.close()
        self.room.stop()


def profiled(inproc: InProcess, seconds: float) -> None:
    """cProfile ``seconds`` of the in-process loop; print the top of it."""
    import cProfile
    import pstats

    prof = cProfile.Profile()
    prof.runcall(inproc.measure, seconds)
    pstats.Stats(prof).sort_stats("cumulative").print_stats(35)


# -- main ---------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.5, help="length of one measuring round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per figure (the median is printed)")
    parser.add_argument("--skip-http", action="store_true", help="only in-process and bare")
    parser.add_argument("--profile", choices=["small", "large"], help="cProfile the in-process loop on one document")
    parser.add_argument("--dir", type=Path, default=None, help="where to put the files (default: a temp dir)")
    args = parser.parse_args()
    os.environ.setdefault("COMMONROOM_RATE_LIMIT", "1000000")  # the bench is not a rate-limit test

    folder = Path(tempfile.mkdtemp(prefix="commit-bench-", dir=args.dir))
    docs = {"small": small_text(), "large": (CORPUS / LARGE_SOURCE).read_text("utf-8")}
    rows: dict[str, dict[str, Any]] = {}
    try:
        for name, text in docs.items():
            inproc = InProcess(folder, text)
            if args.profile == name:
                profiled(inproc, args.seconds * 2)
            bare = Bare(folder, inproc.row)
            http = None if args.skip_http else OverHttp(folder, text)
            runs: dict[str, list[float]] = {"bare": [], "inproc": [], "http": []}
            try:
                for _ in range(args.rounds):
                    runs["bare"].append(bare.measure(args.seconds))
                    runs["inproc"].append(inproc.measure(args.seconds))
                    if http is not None:
                        runs["http"].append(http.measure(args.seconds))
            finally:
                inproc.close()
                bare.close()
                if http is not None:
                    http.close()
            rows[name] = {"bytes": len(text.encode()), "row": inproc.row,
                          **{k: statistics.median(v) if v else None for k, v in runs.items()}, "runs": runs}
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    def fmt(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    def ratio(a: float | None, b: float | None) -> str:
        return "-" if a is None or b is None else f"{a / b:.2f}"

    print()
    print(f"{'document':<34} {'bytes':>8} {'row B':>6} {'bare tx/s':>10} {'in-proc p/s':>12} "
          f"{'HTTP p/s':>9} {'in-proc/bare':>13} {'HTTP/bare':>10}")
    labels = {"small": f"{SMALL_SOURCE} (first 10 KB)", "large": LARGE_SOURCE}
    for name, r in rows.items():
        print(f"{labels[name]:<34} {r['bytes']:>8} {r['row']:>6} {fmt(r['bare']):>10} {fmt(r['inproc']):>12} "
              f"{fmt(r['http']):>9} {ratio(r['inproc'], r['bare']):>13} {ratio(r['http'], r['bare']):>10}")
    s, l = rows["small"], rows["large"]
    print()
    print(f"small vs bare  (target >= 0.50): in-process {ratio(s['inproc'], s['bare'])}, "
          f"HTTP {ratio(s['http'], s['bare'])}")
    print(f"large vs small (target >= 0.20): in-process {ratio(l['inproc'], s['inproc'])}, "
          f"HTTP {ratio(l['http'], s['http'])}")
    print("p/s = proposals created and approved per second (two transactions each: create, approve);")
    print(f"median of {args.rounds} rounds of {args.seconds:g} s, taken in turns. Rounds:")
    for name, r in rows.items():
        print(f"  {name}: " + "; ".join(f"{k} " + " ".join(f"{x:.0f}" for x in v) for k, v in r["runs"].items() if v))


if __name__ == "__main__":
    main()
