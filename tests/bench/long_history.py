"""Benchmark: a long-lived room, 10,000 one-line versions of the 963 KB changelog.

Run::

    .venv/bin/python -m tests.bench.long_history [--versions 10000] [--reads 400] [--before DIR]

The history is written in process through the engine (``Engine.write``, a
line region per version, as ``PUT /workspace/document`` does), in a child
Python that imports only ``commonroom`` (from this checkout, or from
``--before``'s, so each code writes its own sidecar layout); the set-up
turns ``PRAGMA synchronous`` off on its own connection (fsyncs only: the
bytes written are the same). Then, measured from outside:

- **disk**: the sidecar's bytes (``.commonroom.db`` plus ``-wal``) with the
  room stopped, per version;
- **start**: ``ce serve`` to its first answer (``tests.roomproc.start_room``:
  the state file, then ``GET /workspace/room`` answering), and the worker's
  RSS (``VmRSS``) right then and after the reads;
- **old versions**: ``GET /workspace/versions/{n}`` over HTTP for ``n`` drawn
  uniformly from every version (one keep-alive client, identity encoding,
  bearer and rate limit on the path): p50/p99 of the first reads, of the
  same draws again, and of the same draws at once after a restart.

Targets: ≤ 2 KB a version; p99 ≤ 5 ms first and after a
restart; start ≤ 1 s; RSS within docs/performance.md's bound.

Anchors: the same figures for an older checkout (``--before DIR``, as
``python -m tests.bench --before``), and the issue's anchor for the disk,
git: the same edits committed with ``git fast-import`` (a packfile with
deltas, as ``git gc`` keeps history), bytes of ``.git`` per version, on
:data:`GIT_VERSIONS` versions (10,000 1 MB texts through ``fast-import``
cost minutes of CPU on a shared machine; the cost per version is flat).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bench.fanout import rss_kb, worker_pid  # noqa: E402
from tests.bench.old_versions import read_all  # noqa: E402
from tests.roomproc import CORPUS, ce_command, start_room  # noqa: E402

SOURCE = "angular-cli-CHANGELOG.md"

#: The set-up, run by a child Python (argv: document, versions): only ``commonroom`` is imported, so an
#: older checkout on ``PYTHONPATH`` writes the history in its own layout.
BUILD = """
import sys
from pathlib import Path
from commonroom import regions
from commonroom.engine import OPERATOR, Engine
doc, versions = Path(sys.argv[1]), int(sys.argv[2])
engine = Engine.open(doc, background_file=True)  # the file follows the head in the background, coalesced
engine.store.db.execute_sql("PRAGMA synchronous = OFF")
lines = len(regions.lines_of(doc.read_text("utf-8")))
for i in range(versions - 1):
    k = 1 + (i * 7919) % lines
    engine.write(OPERATOR, engine.head().number, f"edited line {k}, edit {i}\\n", {"lines": [k, k]})
engine.close()
"""


#: Versions the git anchor commits (its bytes per version do not depend on the count past a few hundred).
GIT_VERSIONS = 1000


def git_anchor(folder: Path, versions: int = GIT_VERSIONS) -> dict[str, Any]:
    """The same one-line edits as :data:`BUILD`, committed by ``git fast-import``: ``{versions, git_bytes}``."""
    from commonroom import regions

    repo = folder / "git"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    text = (CORPUS / SOURCE).read_text("utf-8")
    lines = regions.lines_of(text)
    count = len(lines)
    proc = subprocess.Popen(["git", "-C", str(repo), "fast-import", "--quiet"], stdin=subprocess.PIPE)
    assert proc.stdin is not None
    for i in range(versions):
        if i:
            k = 1 + ((i - 1) * 7919) % count
            lines[k - 1] = f"edited line {k}, edit {i - 1}\n"
        data = "".join(lines).encode("utf-8")
        proc.stdin.write(b"commit refs/heads/main\ncommitter bench <bench@localhost> %d +0000\ndata 1\nv\n"
                         b"M 100644 inline %s\ndata %d\n" % (1_000_000 + i, SOURCE.encode(), len(data)))
        proc.stdin.write(data + b"\n")
    proc.stdin.close()
    assert proc.wait(600) == 0
    subprocess.run(["git", "-C", str(repo), "gc", "-q", "--prune=now"], check=True, timeout=600)
    return {"versions": versions, "git_bytes": sum(p.stat().st_size for p in (repo / ".git").rglob("*") if p.is_file())}


def build(folder: Path, versions: int, code: Path = ROOT) -> Path:
    """The changelog in ``folder`` with ``versions`` versions in its sidecar, written by the checkout ``code``."""
    folder.mkdir(parents=True, exist_ok=True)
    doc = folder / SOURCE
    shutil.copyfile(CORPUS / SOURCE, doc)
    subprocess.run([sys.executable, "-P", "-c", BUILD, str(doc), str(versions)], check=True, timeout=3600,
                   env={**os.environ, "PYTHONPATH": str(code)})
    return doc


def sidecar_bytes(doc: Path) -> int:
    """The sidecar's bytes on disk: the database and its WAL (the room stopped)."""
    base = doc.with_name(doc.name + ".commonroom.db")
    return sum(p.stat().st_size for p in (base, base.with_name(base.name + "-wal")) if p.exists())


def serve(doc: Path, env: dict[str, str] | None) -> tuple[Any, float, int]:
    """``(room, seconds from ce serve to its first answer, worker RSS in KB then)``."""
    began = time.perf_counter()
    room = start_room(doc.parent, name=doc.name, command=ce_command(env), env=env)
    started = time.perf_counter() - began
    return room, started, rss_kb(worker_pid(room.proc.pid))


def empty_start(folder: Path, env: dict[str, str] | None, starts: int = 2) -> list[float]:
    """Seconds from ``ce serve`` to the first answer for a one-version room, as a yardstick of the machine."""
    out = []
    for i in range(starts):
        began = time.perf_counter()
        room = start_room(folder / str(i), text="# Empty\n", command=ce_command(env), env=env)
        out.append(time.perf_counter() - began)
        room.stop()
    return out


def measure(versions: int = 10_000, reads: int = 400, seed: int = 37, code: Path = ROOT) -> dict[str, Any]:
    """Build with ``code``, then serve it with ``code``: the figures of the module docstring."""
    os.environ.setdefault("COMMONROOM_RATE_LIMIT", "100000000")
    env = None if code == ROOT else {"PYTHONPATH": str(code)}
    folder = Path(tempfile.mkdtemp(prefix="cr-long-history-"))
    try:
        began = time.perf_counter()
        doc = build(folder, versions, code)
        out: dict[str, Any] = {"versions": versions, "build_s": time.perf_counter() - began,
                               "document_bytes": doc.stat().st_size, "sidecar_bytes": sidecar_bytes(doc)}
        draws = [random.Random(seed + i).randint(1, versions) for i in range(reads)]
        for phases in (("cold", "warm"), ("restart",)):
            room, started, rss = serve(doc, env)
            try:
                out.setdefault("start_s", []).append(started)
                out.setdefault("rss_start_kb", []).append(rss)
                reader = room.join("reader", "read")
                out.update(read_all(room, reader.token, draws, phases))
                out.setdefault("rss_after_kb", []).append(rss_kb(worker_pid(room.proc.pid)))
            finally:
                room.stop()
        out["sidecar_bytes_after"] = sidecar_bytes(doc)
        out["empty_start_s"] = empty_start(folder / "empty", env)
        return out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    """Command line: print the figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", type=int, default=10_000)
    parser.add_argument("--reads", type=int, default=400)
    parser.add_argument("--before", type=Path)
    args = parser.parse_args()
    print(json.dumps(run(args.versions, args.reads, args.before), indent=1))


def run(versions: int, reads: int, before: Path | None, git_versions: int = GIT_VERSIONS) -> dict[str, Any]:
    """``{"ours": measure(), "before": measure(code=before) or absent, "git": git_anchor()}``."""
    result = {"ours": measure(versions, reads)}
    if before is not None:
        result["before"] = measure(versions, reads, code=before.resolve())
    with tempfile.TemporaryDirectory(prefix="cr-long-history-git-") as tmp:
        result["git"] = git_anchor(Path(tmp), min(versions, git_versions))
    return result


if __name__ == "__main__":
    main()
