"""Benchmark: write transactions per second over HTTP, group commit on and off, against bare SQLite.

Run::

    .venv/bin/python -m tests.bench.writes [--seconds 5] [--clients 1,16] [--ab DIR]

Each client holds its own session and keep-alive connection and, as fast
as it can, acquires a lease on its own line (``POST /workspace/leases``)
and releases it (``DELETE /workspace/leases/{id}``): two write
transactions, each with its event. One client runs on a blocking socket
(it waits on every answer, so its own cost is on the measured path);
several run on asyncio in one process. Measured with group commit on (the
default) and off (``COMMONROOM_GROUP_COMMIT=0``), one room each, and the
bare fsync'd SQLite transaction rate (``tests.bench.commit.Bare``) in the
same run, in turns over three rounds (medians reported), and the stack's
ceiling for a write (:mod:`tests.bench.bare_writes`: gunicorn, Falcon, a
writer thread with group commit and one fsync'd ``INSERT`` per request, no
room), so that what the room adds is seen apart from what the stack costs.
Targets: 1 client ≥ 0.15× bare; 16 clients ≥ 0.3× bare in total.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bench.commit import Bare  # noqa: E402
from tests.bench.load import KeepAlive, _head, request_bytes  # noqa: E402
from tests.roomproc import ce_command, start_room  # noqa: E402

TEXT = "".join(f"line {i}\n" for i in range(1, 101))


async def _answer(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    status, headers = _head((await reader.readuntil(b"\r\n\r\n"))[:-4])
    size = int(headers.get("content-length", "0"))
    return status, (await reader.readexactly(size) if size else b"")


class _Pair:
    """One client's two writes: acquire a lease on ``line``, then release it (the requests and their checks)."""

    def __init__(self, token: str, line: int, host: str = "127.0.0.1"):
        self.auth = {"Authorization": f"Bearer {token}"}
        self.host = host
        self.acquire = request_bytes("POST", "/workspace/leases", self.auth,
                                     json.dumps({"region": {"lines": [line, line]}, "ttl_seconds": 60}).encode(),
                                     host)

    def release(self, status: int, body: bytes | bytearray) -> bytes:
        """The release of the lease the acquire answered (``RuntimeError`` unless it answered 201)."""
        if status != 201:
            raise RuntimeError(f"acquire answered {status}: {bytes(body[:200])!r}")
        return request_bytes("DELETE", f"/workspace/leases/{json.loads(body)['id']}", self.auth, host=self.host)

    @staticmethod
    def released(status: int, body: bytes | bytearray) -> None:
        """``RuntimeError`` unless the release answered 200."""
        if status != 200:
            raise RuntimeError(f"release answered {status}: {bytes(body[:200])!r}")


async def _client(base_port: int, token: str, line: int, deadline: float, counts: list[int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", base_port)
    pair = _Pair(token, line)
    try:
        while time.perf_counter() < deadline:
            writer.write(pair.acquire)
            writer.write(pair.release(*await _answer(reader)))
            pair.released(*await _answer(reader))
            counts[0] += 2
    finally:
        writer.close()


async def _run(port: int, tokens: list[str], seconds: float) -> float:
    counts = [0]
    start = time.perf_counter()
    await asyncio.gather(*(_client(port, t, 1 + i, start + seconds, counts) for i, t in enumerate(tokens)))
    return counts[0] / (time.perf_counter() - start)


def _alone(port: int, token: str, seconds: float, address: str = "127.0.0.1") -> float:
    """One client on a blocking keep-alive socket (:class:`tests.bench.load.KeepAlive`): write transactions/s.

    One client waits on every answer, so what its own loop costs is on the
    measured path: a blocking socket costs less per request than asyncio's
    streams (~5-10 % of this rate on the 2-CPU VM). ``address``: the
    listener's (tests/bench/tunnel.py writes through a tunnel).
    """
    client = KeepAlive(f"http://{address}:{port}")
    pair = _Pair(token, 1, address)
    count, start = 0, time.perf_counter()
    try:
        while time.perf_counter() - start < seconds:
            status, _, body = client.call(pair.acquire)
            status, _, body = client.call(pair.release(status, body))
            pair.released(status, body)
            count += 2
    finally:
        client.close()
    return count / (time.perf_counter() - start)


def run_clients(port: int, tokens: list[str], seconds: float) -> float:
    """Write transactions/s of ``tokens``' clients for ``seconds``: one alone (:func:`_alone`), else asyncio."""
    if len(tokens) == 1:
        return _alone(port, tokens[0], seconds)
    return asyncio.run(_run(port, tokens, seconds))


#: Rounds of each writes measurement, taking turns (bare SQLite, on, off, before, bare, ...):
#: each figure is the median round, so a drift of the machine falls on all of them alike.
ROUNDS = 3


@contextmanager
def writing_room(clients: int, group_commit: bool, env: dict[str, str] | None = None) -> Iterator[tuple[int, list[str]]]:
    """A fresh room for ``clients`` lease clients: ``(ingress port, their tokens)`` (``env`` adds to its environment)."""
    os.environ["COMMONROOM_RATE_LIMIT"] = "100000000"
    os.environ["COMMONROOM_GROUP_COMMIT"] = "1" if group_commit else "0"
    folder = Path(tempfile.mkdtemp(prefix="cr-writes-"))
    try:
        room = start_room(folder, text=TEXT, env=env, command=ce_command(env))
        try:
            tokens = [room.join(f"c{i}", "read,lease").token for i in range(clients)]
            port = room.state["ingress"]["port"]
            run_clients(port, tokens, 0.5)  # warm-up
            yield port, tokens
        finally:
            room.stop()
    finally:
        os.environ.pop("COMMONROOM_GROUP_COMMIT", None)
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def bare_stack(clients: int) -> Iterator[tuple[int, list[str]]]:
    """The stack's ceiling (:mod:`tests.bench.bare_writes`) as :func:`writing_room` gives a room: ``(port, tokens)``.

    Its tokens are sent and ignored (the app authenticates nobody).
    """
    from tests.bench import bare_writes

    folder = Path(tempfile.mkdtemp(prefix="cr-bare-writes-"))
    try:
        proc, base = bare_writes.serve(folder)
        try:
            port = int(base.rsplit(":", 1)[1])
            tokens = [f"bare{i}" for i in range(clients)]
            run_clients(port, tokens, 0.5)  # warm-up
            yield port, tokens
        finally:
            proc.terminate()
            proc.wait(10)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def bare_sqlite() -> Iterator[Bare]:
    """A bare fsync'd SQLite (``tests.bench.commit.Bare``) in a fresh folder."""
    folder = Path(tempfile.mkdtemp(prefix="cr-bare-"))
    try:
        bare = Bare(folder, 300)
        try:
            yield bare
        finally:
            bare.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def take_turns(bare: Bare, rooms: dict[str, tuple[int, list[str]]], rounds: int, seconds: float,
               bare_seconds: float, alternate: bool = False) -> dict[str, list[float]]:
    """Rates by round: bare SQLite for ``bare_seconds``, then each room's clients for ``seconds``, in turn.

    ``{"bare": [...], <room name>: [...]}``, one figure per round; with
    ``alternate`` the rooms' order flips every round (an A/B of two rooms).
    """
    out: dict[str, list[float]] = {"bare": [], **{name: [] for name in rooms}}
    for number in range(rounds):
        out["bare"].append(bare.measure(bare_seconds))
        names = list(rooms)
        for name in (names[::-1] if alternate and number % 2 else names):
            port, tokens = rooms[name]
            out[name].append(run_clients(port, tokens, seconds))
    return out


def measure(clients: list[int], seconds: float = 5.0, before: Path | None = None) -> list[dict[str, Any]]:
    """One row per client count: group commit on and off, the stack's ceiling and bare SQLite, in turns.

    The two rooms and the stack's ceiling (:func:`bare_stack`, ``"stack"``)
    stay up while :data:`ROUNDS` rounds run each in turn, bare SQLite
    first; every figure is its median round (``"rounds"`` keeps them all).
    With ``before``, a room served from that older checkout (``"before"``)
    runs its rounds alone afterwards.
    """
    rows = []
    for n in clients:
        with ExitStack() as stack:
            bare = stack.enter_context(bare_sqlite())
            rooms = {"on": stack.enter_context(writing_room(n, True)),
                     "off": stack.enter_context(writing_room(n, False)),
                     "stack": stack.enter_context(bare_stack(n))}
            rounds = take_turns(bare, rooms, ROUNDS, seconds, min(seconds, 3.0))
        if before is not None:  # informational: alone, after the rounds (an idle extra room is not free)
            with writing_room(n, True, {"PYTHONPATH": str(before)}) as (port, tokens):
                rounds["before"] = [run_clients(port, tokens, seconds) for _ in range(ROUNDS)]
        row: dict[str, Any] = {name: statistics.median(values) for name, values in rounds.items()}
        row.update({"clients": n, "target": 0.15 if n == 1 else 0.55, "rounds": rounds})
        rows.append(row)
    return rows


def compare(clients: int, other: Path, seconds: float = 4.0, rounds: int = 4) -> dict[str, list[float]]:
    """A/B: this tree's room and one served from ``other`` (a checkout), both up, in alternating rounds.

    Group commit on for both; bare SQLite measured before each round. Returns
    each side's rates by round (``"now"``, ``"other"``, ``"bare"``), for a
    change whose effect is smaller than this VM's drift between runs.
    """
    with ExitStack() as stack:
        bare = stack.enter_context(bare_sqlite())
        rooms = {"now": stack.enter_context(writing_room(clients, True)),
                 "other": stack.enter_context(writing_room(clients, True, {"PYTHONPATH": str(other)}))}
        return take_turns(bare, rooms, rounds, seconds, 2.0, alternate=True)


def main() -> None:
    """Command line: print the table (``--ab DIR``: the A/B of :func:`compare` instead)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", default="1,16")
    parser.add_argument("--ab", type=Path, metavar="DIR", help="compare with the checkout in DIR, in alternating rounds")
    args = parser.parse_args()
    if args.ab is not None:
        for n in (int(c) for c in args.clients.split(",")):
            out = compare(n, args.ab, args.seconds)
            bare = statistics.median(out["bare"])
            print(f"{n} client(s): " + "; ".join(
                f"{name} {statistics.median(v):,.0f} txn/s ({statistics.median(v) / bare:.3f}x bare; rounds "
                f"{', '.join(f'{x:,.0f}' for x in v)})" for name, v in out.items() if name != "bare")
                  + f"; bare SQLite {bare:,.0f}/s")
        return
    print("clients | group commit on (txn/s) | off | stack's ceiling | bare SQLite | on/bare | off/bare "
          "| stack/bare | on/stack | target")
    for row in measure([int(c) for c in args.clients.split(",")], args.seconds):
        print(f"{row['clients']} | {row['on']:.0f} | {row['off']:.0f} | {row['stack']:.0f} | {row['bare']:.0f} | "
              f"{row['on'] / row['bare']:.2f} | {row['off'] / row['bare']:.2f} | {row['stack'] / row['bare']:.2f} | "
              f"{row['on'] / row['stack']:.2f} | ≥ {row['target']}")


if __name__ == "__main__":
    main()
