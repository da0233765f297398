"""Benchmark: write transactions per second over HTTP, group commit on and off, against bare SQLite.

Run::

    .venv/bin/python -m tests.bench.writes [--seconds 5] [--clients 1,16]

Each client holds its own session and keep-alive connection and, as fast
as it can, acquires a lease on its own line (``POST /workspace/leases``)
and releases it (``DELETE /workspace/leases/{id}``): two write
transactions, each with its event. Measured with group commit on (the
default) and off (``COMMONROOM_GROUP_COMMIT=0``), one room each, and the
bare fsync'd SQLite transaction rate (``tests.bench.commit.Bare``) in the
same run. Targets (issue 13): 1 client ≥ 0.15× bare; 16 clients ≥ 0.3×
bare in total.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bench.commit import Bare  # noqa: E402
from tests.bench.load import _head, request_bytes  # noqa: E402
from tests.roomproc import start_room  # noqa: E402

TEXT = "".join(f"line {i}\n" for i in range(1, 101))


async def _answer(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    status, headers = _head((await reader.readuntil(b"\r\n\r\n"))[:-4])
    size = int(headers.get("content-length", "0"))
    return status, (await reader.readexactly(size) if size else b"")


async def _client(base_port: int, token: str, line: int, deadline: float, counts: list[int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", base_port)
    auth = {"Authorization": f"Bearer {token}"}
    acquire = request_bytes("POST", "/workspace/leases", auth,
                            json.dumps({"region": {"lines": [line, line]}, "ttl_seconds": 60}).encode())
    try:
        while time.perf_counter() < deadline:
            writer.write(acquire)
            status, body = await _answer(reader)
            if status != 201:
                raise RuntimeError(f"acquire answered {status}: {body[:200]!r}")
            lease = json.loads(body)["id"]
            writer.write(request_bytes("DELETE", f"/workspace/leases/{lease}", auth))
            status, body = await _answer(reader)
            if status != 200:
                raise RuntimeError(f"release answered {status}: {body[:200]!r}")
            counts[0] += 2
    finally:
        writer.close()


async def _run(port: int, tokens: list[str], seconds: float) -> float:
    counts = [0]
    start = time.perf_counter()
    await asyncio.gather(*(_client(port, t, 1 + i, start + seconds, counts) for i, t in enumerate(tokens)))
    return counts[0] / (time.perf_counter() - start)


def room_rate(clients: int, seconds: float, group_commit: bool, env: dict[str, str] | None = None) -> float:
    """Write transactions/s of ``clients`` lease clients on a fresh room (``env`` adds to the room's environment)."""
    os.environ["COMMONROOM_RATE_LIMIT"] = "100000000"
    os.environ["COMMONROOM_GROUP_COMMIT"] = "1" if group_commit else "0"
    folder = Path(tempfile.mkdtemp(prefix="cr-writes-"))
    try:
        room = start_room(folder, text=TEXT, env=env)
        try:
            tokens = [room.join(f"c{i}", "read,lease").token for i in range(clients)]
            port = room.state["ingress"]["port"]
            asyncio.run(_run(port, tokens, 0.5))  # warm-up
            return asyncio.run(_run(port, tokens, seconds))
        finally:
            room.stop()
    finally:
        os.environ.pop("COMMONROOM_GROUP_COMMIT", None)
        shutil.rmtree(folder, ignore_errors=True)


def bare_rate(seconds: float) -> float:
    """Bare fsync'd SQLite one-row transactions/s on the same disk."""
    folder = Path(tempfile.mkdtemp(prefix="cr-bare-"))
    try:
        bare = Bare(folder, 300)
        try:
            return bare.measure(seconds)
        finally:
            bare.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def measure(clients: list[int], seconds: float = 5.0, before: Path | None = None) -> list[dict[str, Any]]:
    """One row per client count: group commit on and off, bare SQLite measured just before.

    With ``before`` (an older checkout), the same clients also run against
    a room served from it (``"before"``, txn/s), in the same run.
    """
    rows = []
    for n in clients:
        bare = bare_rate(min(seconds, 3.0))
        on = room_rate(n, seconds, True)
        off = room_rate(n, seconds, False)
        row: dict[str, Any] = {"clients": n, "on": on, "off": off, "bare": bare,
                               "target": 0.15 if n == 1 else 0.3}
        if before is not None:
            row["before"] = room_rate(n, seconds, True, {"PYTHONPATH": str(before)})
        rows.append(row)
    return rows


def main() -> None:
    """Command line: print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", default="1,16")
    args = parser.parse_args()
    print("clients | group commit on (txn/s) | off | bare SQLite | on/bare | off/bare | target")
    for row in measure([int(c) for c in args.clients.split(",")], args.seconds):
        print(f"{row['clients']} | {row['on']:.0f} | {row['off']:.0f} | {row['bare']:.0f} | "
              f"{row['on'] / row['bare']:.2f} | {row['off'] / row['bare']:.2f} | ≥ {row['target']}")


if __name__ == "__main__":
    main()
