"""Benchmark: one ``GET /workspace/document`` through the room's ASGI stack in process, against bare Falcon.

Run::

    .venv/bin/python -m tests.bench.read_path [--rounds 7] [--requests 20000]

No gunicorn and no socket: the session ingress as the room builds it
(``build_room``: the edge, the front door, Falcon's routes under them, the
worker's ``BodyGuard``) answers a reader's cached read of the reads
document (:func:`tests.bench.__main__.read_doc`), and the bare app of the
``reads`` row (:mod:`tests.bench.bare_app`) answers the same bytes, each
driven by a hand-made ``receive``/``send``. Printed: the thread's CPU time
per request, the lowest of ``--rounds`` rounds of each (the rounds take
turns), and their ratio: what the room's own checks and answer cost over
the framework's, apart from gunicorn and the kernel.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ["COMMONROOM_RATE_LIMIT"] = str(10**9)

from tests.bench.__main__ import read_doc  # noqa: E402
from tests.ingress import http_scope  # noqa: E402

HOST = (b"host", b"127.0.0.1:8000")


def scope(headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    """The ASGI scope gunicorn makes for ``GET /workspace/document`` with ``headers``."""
    return http_scope("GET", "/workspace/document", headers)


async def _receive() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


async def per_request(app: Any, headers: list[tuple[bytes, bytes]], requests: int) -> float:
    """Microseconds of this thread's CPU per request of ``app`` (after the first answered 200)."""
    sent: list[dict[str, Any]] = []

    async def keep(message: dict[str, Any]) -> None:
        sent.append(message)

    async def drop(message: dict[str, Any]) -> None:
        pass

    for _ in range(2):  # the room's first read fills its answer cache
        await app(scope(headers), _receive, keep)
    assert sent[-2]["status"] == 200, sent[-2]
    started = time.thread_time()
    for _ in range(requests):
        await app(scope(headers), _receive, drop)
    return (time.thread_time() - started) / requests * 1e6


async def answer(app: Any, headers: list[tuple[bytes, bytes]]) -> bytes:
    """The body ``app`` answers (200 asserted)."""
    sent: list[dict[str, Any]] = []

    async def keep(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope(headers), _receive, keep)
    assert sent[0]["status"] == 200, sent[0]
    return b"".join(m.get("body", b"") for m in sent[1:])


def main() -> None:
    """Command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=20000)
    args = parser.parse_args()
    from commonroom import tokens
    from commonroom.bodyguard import BodyGuard
    from commonroom.room import build_room

    folder = Path(tempfile.mkdtemp(prefix="cr-bench-read-path-"))
    doc = folder / "doc.md"
    shutil.copyfile(read_doc(), doc)
    engine, _owner, ingress, _hooks = build_room(doc, tokens.digest("owner-token"))
    try:
        engine.set_ingress({"host": "127.0.0.1", "port": 8000})
        ingress.app = BodyGuard(ingress.app, 30)
        token = engine.join(engine.invite("reader", ["read"])["token"])["token"]
        from tests.bench import bare_app

        room_headers = [HOST, (b"user-agent", b"bench"), (b"authorization", f"Bearer {token}".encode())]
        bare_headers = [HOST, (b"user-agent", b"bench")]
        bare_app.BODY = asyncio.run(answer(ingress, room_headers))  # the same bytes
        ours: list[float] = []
        bare: list[float] = []
        for _ in range(args.rounds):
            ours.append(asyncio.run(per_request(ingress, room_headers, args.requests)))
            bare.append(asyncio.run(per_request(bare_app.app, bare_headers, args.requests)))
        print(f"room's ingress stack  {min(ours):6.2f} µs CPU a read (rounds {', '.join(f'{x:.2f}' for x in ours)})")
        print(f"bare Falcon app       {min(bare):6.2f} µs CPU a read (rounds {', '.join(f'{x:.2f}' for x in bare)})")
        print(f"ratio (bare / room)   {min(bare) / min(ours):.2f}×")
    finally:
        engine.close()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
