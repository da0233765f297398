"""Benchmark: read a random old version of the 963 KB changelog after 1,000 versions, over HTTP.

Run::

    .venv/bin/python -m tests.bench.old_versions [--versions 1000] [--reads 400]

The largest corpus document (``angular-cli-CHANGELOG.md``) gets ``--versions``
one-line direct writes on the engine (in process, before the room starts),
then a real room (``ce serve``) serves it and one keep-alive client reads
``GET /workspace/versions/{n}`` for ``n`` drawn uniformly from every version
(identity encoding, bearer and rate limit on the path). Printed: p50, p99
and max latency in ms, cold (first read of each version) and warm (the
same draws again), both ``--settle`` seconds after the room started (its
checkpoints' lines are made ready by a background thread at startup:
``Engine.warm_checkpoints``), and restart (the same draws at once after a
restart of the room, while that warm-up runs). Target: p99 ≤ 5 ms.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bench.load import KeepAlive, percentiles, request_bytes  # noqa: E402
from tests.roomproc import CORPUS, start_room  # noqa: E402

SOURCE = "angular-cli-CHANGELOG.md"
#: Seconds the cold reads wait for the room's checkpoint warm-up (about 0.25 s of CPU, 0.45 s here).
SETTLE = 2.0


def build(folder: Path, versions: int) -> Path:
    """The document with ``versions`` versions in its sidecar (one line changed each)."""
    from commonroom import regions
    from commonroom.engine import OPERATOR, Engine

    doc = folder / SOURCE
    shutil.copyfile(CORPUS / SOURCE, doc)
    engine = Engine.open(doc)
    lines = len(regions.lines_of(doc.read_text("utf-8")))
    for i in range(versions - 1):
        k = 1 + (i * 7919) % lines
        engine.write(OPERATOR, engine.head().number, f"edited line {k}, edit {i}\n", {"lines": [k, k]})
    engine.close()
    return doc


def read_all(room: Any, token: str, draws: list[int], phases: tuple[str, ...]) -> dict[str, Any]:
    """``GET /workspace/versions/{n}`` for each of ``draws``, once per phase: ``{phase: percentiles}``."""
    out: dict[str, Any] = {}
    http = KeepAlive(room.ingress)
    headers = {"Authorization": f"Bearer {token}", "Accept-Encoding": "identity"}
    try:
        for name in phases:
            samples = []
            for n in draws:
                raw = request_bytes("GET", f"/workspace/versions/{n}", headers)
                start = time.perf_counter()
                status, _, body = http.call(raw)
                samples.append(time.perf_counter() - start)
                assert status == 200 and f'"number":{n},'.encode() in body[:200], body[:200]
            out[name] = percentiles(samples)
    finally:
        http.close()
    return out


def measure(versions: int = 1000, reads: int = 400, seed: int = 13, settle: float = SETTLE) -> dict[str, Any]:
    """Build, serve, read; returns ``{"cold": {...}, "warm": {...}, "restart": {...}, "versions": n}``.

    ``cold`` and ``warm`` read after ``settle`` seconds (the checkpoint
    warm-up done); ``restart`` reads the same draws again at once after the
    room is restarted (its answer cache empty, its warm-up running).
    """
    os.environ.setdefault("COMMONROOM_RATE_LIMIT", "100000000")
    folder = Path(tempfile.mkdtemp(prefix="cr-old-versions-"))
    try:
        doc = build(folder, versions)
        draws = [random.Random(seed + i).randint(1, versions) for i in range(reads)]
        out: dict[str, Any] = {"versions": versions}
        for phases, wait in ((("cold", "warm"), settle), (("restart",), 0.0)):
            room = start_room(folder, name=doc.name)
            try:
                reader = room.join("reader", "read")
                time.sleep(wait)
                out.update(read_all(room, reader.token, draws, phases))
            finally:
                room.stop()
        return out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    """Command line: print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", type=int, default=1000)
    parser.add_argument("--reads", type=int, default=400)
    parser.add_argument("--settle", type=float, default=SETTLE,
                        help="seconds between the room's start and the cold reads")
    args = parser.parse_args()
    result = measure(args.versions, args.reads, settle=args.settle)
    for name in ("cold", "warm", "restart"):
        f = result[name]
        print(f"{name}: p50 {f['p50']:.1f} ms, p99 {f['p99']:.1f} ms, max {f['max']:.1f} ms "
              f"({args.reads} reads of {result['versions']} versions)")


if __name__ == "__main__":
    main()
