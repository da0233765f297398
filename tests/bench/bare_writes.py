"""The anchor for HTTP writes at the stack's ceiling: a bare Falcon app committing one row per request.

Served by gunicorn ``-k asgi -w 1`` like the room (:func:`serve`). It
answers the writes bench's two requests (:mod:`tests.bench.writes`):
``POST /workspace/leases`` (``201``, ``{"id": ...}``) and ``DELETE
/workspace/leases/{id}`` (``200``), each one ``INSERT`` of the request in
a fsync'd SQLite (WAL, ``synchronous=FULL``, as the room's sidecar) on one
writer thread with group commit, as the room's writer does: whatever
arrived while a commit synced goes into the next transaction. No
authentication, no validation, no engine: what gunicorn, Falcon, a thread
hop and SQLite cost for a write, so what is left of the room's figure is
its own. The database is the file named by ``BARE_WRITES_DB``.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import sqlite3
import threading
from pathlib import Path
from typing import Any

import falcon
import falcon.asgi

#: Most requests committed in one transaction (the room's ``MAX_BATCH``).
MAX_BATCH = 64
_jobs: queue.SimpleQueue = queue.SimpleQueue()


def _connect(path: str) -> sqlite3.Connection:
    con = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    con.execute("PRAGMA journal_mode=wal")
    con.execute("PRAGMA synchronous=full")
    con.execute("CREATE TABLE IF NOT EXISTS row (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
    return con


def _settle(answers: list[tuple[asyncio.Future, int]]) -> None:
    for future, row_id in answers:
        if not future.done():
            future.set_result(row_id)


def _writer(con: sqlite3.Connection) -> None:
    """Take every request queued by now (up to :data:`MAX_BATCH`), commit them together, answer each."""
    while True:
        batch = [_jobs.get()]
        while len(batch) < MAX_BATCH:
            try:
                batch.append(_jobs.get_nowait())
            except queue.Empty:
                break
        con.execute("BEGIN IMMEDIATE")
        ids = [con.execute("INSERT INTO row (body) VALUES (?)", (body,)).lastrowid for body, _, _ in batch]
        con.execute("COMMIT")
        by_loop: dict[Any, list[tuple[asyncio.Future, int]]] = {}
        for (_, loop, future), row_id in zip(batch, ids):
            by_loop.setdefault(loop, []).append((future, row_id))
        for loop, answers in by_loop.items():
            loop.call_soon_threadsafe(_settle, answers)


async def _commit(body: str) -> int:
    """The rowid of ``body``, once the transaction holding it is synced."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()
    _jobs.put((body, loop, future))
    return await future


class Leases:
    """``POST /workspace/leases``: one row; answers its id."""

    async def on_post(self, req: falcon.asgi.Request, resp: falcon.asgi.Response) -> None:  # noqa: D102
        row_id = await _commit(json.dumps(await req.get_media()))
        resp.status = falcon.HTTP_201
        resp.media = {"id": f"l_{row_id}", "status": "active"}


class Lease:
    """``DELETE /workspace/leases/{lease_id}``: one row."""

    async def on_delete(self, req: falcon.asgi.Request, resp: falcon.asgi.Response, lease_id: str) -> None:  # noqa: D102
        await _commit(lease_id)
        resp.media = {"id": lease_id, "status": "released"}


app = falcon.asgi.App()
app.add_route("/workspace/leases", Leases())
app.add_route("/workspace/leases/{lease_id}", Lease())
if os.environ.get("BARE_WRITES_DB"):
    threading.Thread(target=_writer, args=(_connect(os.environ["BARE_WRITES_DB"]),), daemon=True).start()


def serve(folder: Path) -> tuple[Any, str]:
    """Start the app on gunicorn ``-k asgi -w 1`` with its database in ``folder``: the process and its base URL."""
    from tests.bench.bare_app import serve as serve_app

    return serve_app(folder / "none", module="tests.bench.bare_writes:app",
                     env={"BARE_WRITES_DB": str(folder / "bare-writes.db")})
