"""Benchmark: proposals created and approved per second, against the disk's limit.

Run::

    /tmp/venv/bin/python tests/bench/commit.py [--seconds 5] [--skip-http] [--profile small|large]

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

Printed: a table of rates and the ratios. Targets (issue 3): the small
document at least half the bare rate; the large one no worse than a fifth
of the small one's rate.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

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


# -- bare SQLite ----------------------------------------------------------------


def bare_rate(folder: Path, row_bytes: int, seconds: float) -> float:
    """Committed single-INSERT transactions per second (WAL, synchronous=FULL)."""
    path = folder / "bare.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=wal")
    con.execute("PRAGMA synchronous=full")
    con.execute("CREATE TABLE row (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
    body = "x" * row_bytes
    n = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        con.execute("BEGIN IMMEDIATE")
        con.execute("INSERT INTO row (body) VALUES (?)", (body,))
        con.execute("COMMIT")
        n += 1
    elapsed = time.perf_counter() - start
    con.close()
    return n / elapsed


# -- in-process -------------------------------------------------------------------


def in_process(folder: Path, text: str, seconds: float, profile: bool = False) -> tuple[float, int]:
    """Proposals created and approved per second on the engine; and a proposal's row size."""
    from commonroom.engine import Engine
    from commonroom import regions

    doc = folder / "inproc.md"
    for p in folder.glob("inproc.md*"):
        p.unlink()
    doc.write_text(text, "utf-8")
    engine = Engine.open(doc)
    try:
        engine.set_ingress({"host": "127.0.0.1", "port": 9})  # invitations need a transport hint; never dialled
        token = engine.invite("bench", ["read", "propose", "approve"])["token"]
        actor = engine.authenticate(engine.join(token)["token"])
        lines = len(regions.lines_of(text))

        def one(i: int) -> dict[str, Any]:
            region, new = edit(i, lines)
            p = engine.create_proposal(actor, engine.head().number, region, new, f"edit {i}")
            engine.approve_proposal(actor, p["id"])
            return p

        row = len(json.dumps(one(0)))
        for i in range(1, 5):  # warm-up
            one(i)
        if profile:
            import cProfile
            import pstats

            prof = cProfile.Profile()
            prof.enable()
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            one(5 + n)
            n += 1
        elapsed = time.perf_counter() - start
        if profile:
            prof.disable()
            pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
        engine.follower.flush() if hasattr(engine, "follower") else None
        assert doc.read_text("utf-8") == engine.head().text
        return n / elapsed, row
    finally:
        engine.close()


# -- HTTP -------------------------------------------------------------------------------


def over_http(folder: Path, text: str, seconds: float) -> float:
    """Proposals created and approved per second through a real room, one keep-alive client."""
    import httpx
    from commonroom import regions

    room_dir = folder / "room"
    shutil.rmtree(room_dir, ignore_errors=True)
    room_dir.mkdir()
    (room_dir / "doc.md").write_text(text, "utf-8")
    room = start_room(room_dir, name="doc.md")
    try:
        c = room.join("bench", "read,propose,approve")
        lines = len(regions.lines_of(text))
        http = httpx.Client(base_url=room.ingress, headers={"Authorization": f"Bearer {c.token}"}, timeout=60)
        head = http.get("/workspace/document").json()["version"]

        def one(i: int) -> int:
            region, new = edit(i, lines)
            r = http.post("/workspace/proposals",
                          json={"base_version": head, "region": region, "text": new, "summary": f"edit {i}"})
            assert r.status_code == 201, r.text
            r = http.post(f"/workspace/proposals/{r.json()['id']}/approve")
            assert r.status_code == 200, r.text
            return r.json()["version"]["number"]

        for i in range(5):
            head = one(i)
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            head = one(5 + n)
            n += 1
        elapsed = time.perf_counter() - start
        http.close()
        return n / elapsed
    finally:
        room.stop()


# -- main ---------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="measuring time per figure")
    parser.add_argument("--skip-http", action="store_true", help="only in-process and bare")
    parser.add_argument("--profile", choices=["small", "large"], help="cProfile the in-process run of one document")
    parser.add_argument("--dir", type=Path, default=None, help="where to put the files (default: a temp dir)")
    args = parser.parse_args()
    os.environ.setdefault("COMMONROOM_RATE_LIMIT", "1000000")  # the bench is not a rate-limit test

    folder = Path(tempfile.mkdtemp(prefix="commit-bench-", dir=args.dir))
    docs = {"small": small_text(), "large": (CORPUS / LARGE_SOURCE).read_text("utf-8")}
    rows: dict[str, dict[str, float]] = {}
    try:
        for name, text in docs.items():
            rate, row = in_process(folder, text, args.seconds, profile=args.profile == name)
            rows[name] = {"bytes": len(text.encode()), "row": row, "inproc": rate,
                          "bare": bare_rate(folder, row, args.seconds)}
            if not args.skip_http:
                rows[name]["http"] = over_http(folder, text, args.seconds)
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    def fmt(value: float | None) -> str:
        return "-" if value is None else f"{value:8.1f}"

    print()
    print(f"{'document':<34} {'bytes':>9} {'row B':>6} {'bare tx/s':>10} {'in-proc p/s':>12} "
          f"{'HTTP p/s':>9} {'in-proc/bare':>13} {'HTTP/bare':>10}")
    labels = {"small": f"{SMALL_SOURCE} (first 10 KB)", "large": LARGE_SOURCE}
    for name, r in rows.items():
        http = r.get("http")
        print(f"{labels[name]:<34} {r['bytes']:>9} {r['row']:>6} {fmt(r['bare']):>10} {fmt(r['inproc']):>12} "
              f"{fmt(http):>9} {r['inproc'] / r['bare']:>13.2f} "
              f"{(http / r['bare'] if http else float('nan')):>10.2f}")
    s, l = rows["small"], rows["large"]
    print()
    print(f"small vs bare (target >= 0.50): in-process {s['inproc'] / s['bare']:.2f}"
          + (f", HTTP {s['http'] / s['bare']:.2f}" if "http" in s else ""))
    print(f"large vs small (target >= 0.20): in-process {l['inproc'] / s['inproc']:.2f}"
          + (f", HTTP {l['http'] / s['http']:.2f}" if "http" in s else ""))
    print("(one proposal = two transactions, create and approve, plus the file following the head)")


if __name__ == "__main__":
    main()
