"""Benchmark: the two board summaries over HTTP, on a full board and a busy session.

Run alone::

    .venv/bin/python -m tests.bench.summaries [--reads 300]
    .venv/bin/python -m tests.bench --only summaries      # the same, as a row of the side-by-side table

Built in process before the room starts (:func:`build`): coordinator C and
worker W (sessions of two participants); W commits 1,000 versions (one-line
direct writes) and holds a lease; C's board receives 2,200 messages (todos,
questions, decisions, risks, notes, answers, 200 characters each, half of
them recorded under W), so retention keeps 2,000 of them plus the open todos
(``history_lost`` is true), and W completes 100 of the todos under its own
recording session. Then a real room (``ce serve``) serves it and one
keep-alive client reads, in turns, ``GET /workspace/boards/{C}/summary``
(``session_discussion_summary``), ``GET /workspace/sessions/{W}/summary``
(``session_handoff_summary``) and, as the same-run anchor, one page of 50
messages of the board (``GET /workspace/boards/{C}/messages?limit=50``);
bearer, rate limit, audit row (each board read records one) and identity
encoding on the path. Printed: p50, p99 and max in ms. Target:
p99 ≤ 20 ms for each summary.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bench.load import KeepAlive, percentiles, request_bytes  # noqa: E402
from tests.roomproc import start_room  # noqa: E402

VERSIONS = 1000
MESSAGES = 2200
COMPLETIONS = 100
KINDS = ("todo", "question", "decision", "risk", "note", "answer")


def build(folder: Path, versions: int = VERSIONS, messages: int = MESSAGES) -> tuple[Path, str, str]:
    """The document and sidecar described in the module docstring: ``(document, C's id, W's id)``."""
    from commonroom.engine import Engine

    doc = folder / "summaries.md"
    doc.write_text("# Summaries bench\n\n" + "".join(f"line {i}\n" for i in range(100)), "utf-8")
    engine = Engine.open(doc)
    engine.set_ingress({"host": "127.0.0.1", "port": 1})
    # only the build: commits are not fsync'd one by one (the room reopens the file afterwards, as it is)
    engine.store.db.execute_sql("PRAGMA synchronous = OFF")

    def session(name: str, caps: list[str]) -> Any:
        joined = engine.join(engine.invite(name, caps)["token"])
        return engine.authenticate(joined["token"])

    c = session("coordinator", ["read", "message"])
    w = session("worker", ["read", "message", "write", "lease"])
    try:
        for i in range(versions):
            k = 3 + i % 100
            engine.write(w, engine.head().number, f"line {k}, edit {i}\n", {"lines": [k, k]}, f"edit {i} of line {k}")
        engine.acquire_lease(w, {"lines": [1, 1]}, 3600)
        todos = []
        body = "x" * 190
        for i in range(messages):
            kind = KINDS[i % len(KINDS)]
            by = w if i % 2 else c
            posted = engine.post_session_message(by, c.session_id, kind, f"{kind} {i} {body}",
                                                 priority=("urgent", "normal", "low")[i % 3],
                                                 requires_ack=i % 5 == 0,
                                                 recording_session_id=by.session_id if by is w else None)
            if kind == "todo":
                todos.append(posted["message_id"])
        for i, todo in enumerate(todos[-COMPLETIONS:]):
            fence = engine.get_session_assignment(w, c.session_id, todo)["assignment_fence"]
            engine.complete_session_message(w, c.session_id, todo, f"done {i}", f"W-{i}", fence,
                                            recording_session_id=w.session_id)
        return doc, str(c.session_id), str(w.session_id)
    finally:
        engine.close()


def measure(reads: int = 300, versions: int = VERSIONS, messages: int = MESSAGES) -> dict[str, Any]:
    """Build, serve, read: ``{"discussion": {...}, "handoff": {...}, "list": {...}, "sizes": {...}}`` (ms, bytes)."""
    os.environ.setdefault("COMMONROOM_RATE_LIMIT", "100000000")
    folder = Path(tempfile.mkdtemp(prefix="cr-summaries-"))
    try:
        doc, c_id, w_id = build(folder, versions, messages)
        room = start_room(folder, name=doc.name)
        try:
            reader = room.join("reader", "read")
            headers = {"Authorization": f"Bearer {reader.token}", "Accept-Encoding": "identity"}
            paths = {"discussion": f"/workspace/boards/{c_id}/summary",
                     "handoff": f"/workspace/sessions/{w_id}/summary",
                     "list": f"/workspace/boards/{c_id}/messages?limit=50"}
            http = KeepAlive(room.ingress)
            samples: dict[str, list[float]] = {name: [] for name in paths}
            sizes: dict[str, int] = {}
            try:
                for round_ in range(reads + 10):  # in turns; the first 10 rounds warm up
                    for name, path in paths.items():
                        raw = request_bytes("GET", path, headers)
                        start = time.perf_counter()
                        status, _, body = http.call(raw)
                        elapsed = time.perf_counter() - start
                        assert status == 200, body[:300]
                        sizes[name] = len(body)
                        if round_ >= 10:
                            samples[name].append(elapsed)
            finally:
                http.close()
        finally:
            room.stop()
        return {**{name: percentiles(s) for name, s in samples.items()}, "sizes": sizes, "reads": reads}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    """Command line: print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=300)
    args = parser.parse_args()
    result = measure(args.reads)
    for name in ("discussion", "handoff", "list"):
        f = result[name]
        print(f"{name}: p50 {f['p50']:.1f} ms, p99 {f['p99']:.1f} ms, max {f['max']:.1f} ms "
              f"({args.reads} reads, {result['sizes'][name]:,} bytes)")


if __name__ == "__main__":
    main()
