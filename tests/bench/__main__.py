"""Every benchmark side by side with its anchor, in one run: ``python -m tests.bench``.

Run::

    .venv/bin/python -m tests.bench [--seconds 5] [--quick] [--before DIR] [--only reads,writes,...]
                                    [--fanout-levels 1000,10000] [--no-write-docs]

Workloads (each with its anchor measured in the same run):

- ``reads``: ``GET /workspace/document`` of the ~101 KB zh-Hans corpus
  document, 16 connections, against a bare Falcon ASGI app on gunicorn
  ``-k asgi -w 1`` answering the same bytes pre-encoded (``resp.data``;
  :mod:`tests.bench.bare_app`). Load from ``wrk`` when installed, else the
  asyncio generator of :mod:`tests.bench.load` (the table says which).
  ``--before DIR`` also measures the room served from an older checkout
  (``git archive <commit> | tar -x -C DIR``) in the same run.
- ``mcp``: ``tools/call`` read-document, ours vs the official ``mcp`` SDK
  server and vs the bare Falcon app answering our answer's bytes
  (:mod:`tests.bench.mcp_calls`; ``wrk`` when installed).
- ``writes``: write transactions/s over HTTP, 1 and 16 clients, group
  commit on and off, vs bare fsync'd SQLite and vs the stack's ceiling
  for a write (:mod:`tests.bench.bare_writes`) (:mod:`tests.bench.writes`);
  with ``--before DIR`` also served from the older checkout.
- ``versions``: a random old version of the 963 KB changelog after 1,000
  versions, p99 over HTTP (:mod:`tests.bench.old_versions`).
- ``long``: a long-lived room, 10,000 one-line versions of the 963 KB
  changelog (:mod:`tests.bench.long_history`): sidecar bytes per version,
  ``ce serve`` to its first answer, worker RSS, old versions' p99 first,
  again and after a restart; beside it today's code (``--before DIR``) and
  git's packs (``git fast-import``) for the disk.
- ``startup``: the installed ``ce``'s ``ce --help`` and ``ce read`` vs ``python -c pass``
  (hyperfine when installed); ``ce serve`` to its first answer and back
  down, vs the bare app's gunicorn to its first connection.
- ``fanout``: observers of ``/workspace/observe`` (:mod:`tests.bench.fanout`,
  which also runs the bare SSE hub anchor).
- ``tunnel``: reads and lease writes through a userspace WireGuard tunnel
  between two network namespaces (the ``tailcat`` transport) against the
  same room over loopback, in turns (:mod:`tests.bench.tunnel`; needs root,
  else the row says why; the ratio is informational).
- ``summaries``: ``session_discussion_summary`` on a board of 2,000 retained
  messages and ``session_handoff_summary`` of a session with 1,000 versions,
  p99 over HTTP, vs one page of the same board's messages
  (:mod:`tests.bench.summaries`). Alone: ``--only summaries --no-write-docs``.
- ``web``: the participant page in headless Chromium on the 963 KB
  changelog with 1,000 versions: the first screen from an invitation
  link, and a new version shown after its write answered
  (:mod:`tests.bench.web_page`; informational, no anchor).

Prints one table (workload, ours, anchor, ratio, target) and writes it to
``docs/performance.md`` with the machine it ran on.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[2]
SHARED_CORPUS = Path("/work/shared/corpus")
ZH_DOC = "system-design-primer-README-zh-Hans.md"
if not os.environ.get("COMMONROOM_CORPUS") and (SHARED_CORPUS / ZH_DOC).exists():
    os.environ["COMMONROOM_CORPUS"] = str(SHARED_CORPUS)
sys.path.insert(0, str(ROOT))

from tests.bench import bare_app, load  # noqa: E402
from tests.roomproc import CORPUS, ce_command, ce_path, start_room  # noqa: E402

Row = dict[str, Any]


def read_doc() -> Path:
    """The reads' document: the zh-Hans corpus document, else the largest one under 200 KB."""
    if (CORPUS / ZH_DOC).exists():
        return CORPUS / ZH_DOC
    small = [p for p in CORPUS.glob("*.md") if p.stat().st_size < 200_000]
    return max(small, key=lambda p: p.stat().st_size)


#: Rounds of each reads measurement, taking turns (ours, anchor, before, ours, ...): the median of each
#: is reported, so a drift of the machine during the run falls on all of them alike.
READ_ROUNDS = 5


@contextmanager
def _reading_room(folder: Path, doc: Path, env: dict[str, str] | None = None) -> Iterator[tuple[str, dict, bytes]]:
    """A room serving ``doc`` (no rate limit): ``(base URL, reader headers, the answer's bytes)``."""
    saved = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    os.environ["COMMONROOM_RATE_LIMIT"] = str(10**9)
    try:
        room = start_room(folder, doc, name=doc.name, command=ce_command(env))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    try:
        token = room.join("bench-reader", "read").token
        headers = {"Authorization": f"Bearer {token}"}
        probe = load.KeepAlive(room.ingress)
        status, _, body = probe.call(load.request_bytes("GET", "/workspace/document", headers))
        probe.close()
        assert status == 200, body[:200]
        yield room.ingress, headers, bytes(body)
    finally:
        room.stop()


def _median_load(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The round with the median rate (its p99 and tool with it)."""
    return sorted(results, key=lambda r: r["rps"])[len(results) // 2]


def _rounds(results: list[dict[str, Any]]) -> str:
    return ", ".join(f"{r['rps']:,.0f}" for r in results)


def reads(seconds: float, before: Path | None) -> list[Row]:
    """``GET /workspace/document`` vs the bare app with the same bytes (and an older checkout).

    Ours, the anchor, the anchor under glibc ``malloc`` (the room's
    allocator) and an older checkout (``before``) are up at once and
    measured in turns, :data:`READ_ROUNDS` rounds of ``seconds`` each; each
    figure is the median round, so the machine's drift falls on all alike.
    """
    doc = read_doc()
    with tempfile.TemporaryDirectory(prefix="cr-bench-reads-") as tmp, ExitStack() as stack:
        base, headers, body = stack.enter_context(_reading_room(Path(tmp) / "ours", doc))
        answer = Path(tmp) / "answer.json"
        answer.write_bytes(body)
        proc, bare_base = bare_app.serve(answer)
        stack.callback(lambda: (proc.terminate(), proc.wait(10)))
        # the same bare app under the allocator the room runs on (glibc malloc: docs/performance.md)
        malloc_proc, malloc_base = bare_app.serve(answer, env={"PYTHONMALLOC": "malloc"})
        stack.callback(lambda: (malloc_proc.terminate(), malloc_proc.wait(10)))
        targets = {"ours": (base, headers), "anchor": (bare_base, {}), "malloc": (malloc_base, {})}
        if before is not None:
            old_base, old_headers, _ = stack.enter_context(
                _reading_room(Path(tmp) / "before", doc, {"PYTHONPATH": str(before)}))
            targets["before"] = (old_base, old_headers)
        results: dict[str, list[dict[str, Any]]] = {name: [] for name in targets}
        for _ in range(READ_ROUNDS):
            for name, (url, hdrs) in targets.items():
                results[name].append(load.http_load(url, "/workspace/document", hdrs, 16, seconds))
        ours, anchor = _median_load(results["ours"]), _median_load(results["anchor"])
        rows = [{"workload": f"GET /workspace/document, {doc.name} ({len(body) // 1024} KB answer), 16 conns",
                 "ours": f"{ours['rps']:,.0f} req/s (p99 {ours['p99']:.1f} ms; rounds {_rounds(results['ours'])})",
                 "anchor": f"bare Falcon, same bytes: {anchor['rps']:,.0f} req/s (rounds {_rounds(results['anchor'])})",
                 "ratio": ours["rps"] / max(anchor["rps"], 1e-9), "target": "≥ 0.8×", "tool": ours["tool"]}]
        under_malloc = _median_load(results["malloc"])
        rows.append({"workload": "  the bare app under glibc malloc (the room's allocator, `PYTHONMALLOC=malloc`)",
                     "ours": f"{under_malloc['rps']:,.0f} req/s (rounds {_rounds(results['malloc'])})",
                     "anchor": f"bare Falcon: {anchor['rps']:,.0f} req/s",
                     "ratio": under_malloc["rps"] / max(anchor["rps"], 1e-9), "target": "—",
                     "tool": under_malloc["tool"]})
        if before is not None:
            old = _median_load(results["before"])
            rows.append({"workload": f"  the same, served by {before.name} (before)",
                         "ours": f"{old['rps']:,.0f} req/s (p99 {old['p99']:.1f} ms; rounds {_rounds(results['before'])})",
                         "anchor": f"bare Falcon: {anchor['rps']:,.0f} req/s",
                         "ratio": old["rps"] / max(anchor["rps"], 1e-9), "target": "—", "tool": old["tool"]})
        return rows


def mcp(seconds: float) -> list[Row]:
    """``tools/call`` read-document: ours vs the official SDK (tests/bench/mcp_calls.py)."""
    doc = read_doc()
    out = subprocess.run([sys.executable, "-m", "tests.bench.mcp_calls", "--seconds", str(seconds),
                          "--rounds", "2", "--doc", doc.name], cwd=ROOT, capture_output=True, text=True,
                         timeout=600, env={**os.environ, "COMMONROOM_CORPUS": str(doc.parent)}).stdout
    figures = {name: float(m) for name, m in re.findall(r"^(commonroom|official SDK|bare app)\s+(\d+)", out, re.M)}
    ours, theirs, bare = (figures.get(name, 0.0) for name in ("commonroom", "official SDK", "bare app"))
    used = re.search(r"^load: (\w+)", out, re.M)
    tool = f"{used.group(1) if used else '?'} (mcp_calls.py)"
    workload = f"MCP tools/call document_read, {doc.name}, 16 conns"
    return [{"workload": workload, "ours": f"{ours:,.0f} calls/s", "anchor": f"official mcp SDK server: {theirs:,.0f} calls/s",
             "ratio": ours / max(theirs, 1e-9), "target": "≥ 4×", "tool": tool},
            {"workload": "  the same, against the stack's ceiling", "ours": f"{ours:,.0f} calls/s",
             "anchor": f"bare Falcon, same answer bytes: {bare:,.0f} calls/s",
             "ratio": ours / max(bare, 1e-9), "target": "≥ 0.6×", "tool": tool}]


def writes(seconds: float, before: Path | None) -> list[Row]:
    """Write transactions/s, group commit on and off, vs bare fsync'd SQLite (tests/bench/writes.py)."""
    from tests.bench import writes as bench

    rows = []
    for r in bench.measure([1, 16], seconds, before):
        tool = ("blocking socket" if r["clients"] == 1 else "asyncio") + " (writes.py)"
        rows.append({"workload": f"lease acquire+release, {r['clients']} client(s), HTTP, write txn/s",
                     "ours": f"{r['on']:,.0f} (group commit off: {r['off']:,.0f}; "
                             f"rounds {', '.join(f'{v:,.0f}' for v in r['rounds']['on'])})",
                     "anchor": f"bare fsync'd SQLite txn: {r['bare']:,.0f}/s "
                               f"(rounds {', '.join(f'{v:,.0f}' for v in r['rounds']['bare'])})",
                     "ratio": r["on"] / max(r["bare"], 1e-9), "target": f"≥ {r['target']}×",
                     "tool": tool})
        rows.append({"workload": "  the same, against the stack's ceiling", "ours": f"{r['on']:,.0f}",
                     "anchor": f"bare Falcon + writer thread, one fsync'd INSERT a request: {r['stack']:,.0f}/s "
                               f"({r['stack'] / max(r['bare'], 1e-9):.2f}× bare SQLite)",
                     "ratio": r["on"] / max(r["stack"], 1e-9), "target": "—", "tool": tool})
        if "before" in r:
            rows.append({"workload": f"  the same, served by {before.name} (before)",
                         "ours": f"{r['before']:,.0f}", "anchor": f"bare fsync'd SQLite txn: {r['bare']:,.0f}/s",
                         "ratio": r["before"] / max(r["bare"], 1e-9), "target": "—",
                         "tool": tool})
    return rows


def versions(quick: bool) -> list[Row]:
    """A random old version of the 963 KB changelog after 1,000 versions (tests/bench/old_versions.py)."""
    from tests.bench import old_versions

    count = 300 if quick else 1000
    r = old_versions.measure(count, 200 if quick else 400)
    return [{"workload": f"GET /workspace/versions/{{random n}}, 963 KB changelog, {count} versions",
             "ours": f"first reads p50 {r['cold']['p50']:.1f} ms, p99 {r['cold']['p99']:.1f} ms; "
                     f"again p50 {r['warm']['p50']:.1f} ms, p99 {r['warm']['p99']:.1f} ms; "
                     f"right after a restart p50 {r['restart']['p50']:.1f} ms, p99 {r['restart']['p99']:.1f} ms",
             "anchor": "—", "ratio": None, "target": "p99 ≤ 5 ms", "tool": "keep-alive socket"}]


def long_history(quick: bool, before: Path | None) -> list[Row]:
    """10,000 versions of the 963 KB changelog: disk, start, RSS, old versions (tests/bench/long_history.py)."""
    from tests.bench import long_history as bench

    count = 2000 if quick else 10_000
    r = bench.run(count, 200 if quick else 400, before)

    def figures(m: dict[str, Any]) -> str:
        per = m["sidecar_bytes"] / m["versions"]
        return (f"{per:,.0f} B a version ({m['sidecar_bytes'] / 2**20:.1f} MB); start {max(m['start_s']):.2f} s "
                f"(a one-version room: {max(m['empty_start_s']):.2f} s); "
                f"RSS {max(m['rss_start_kb']) / 1024:.0f} MB at start, {max(m['rss_after_kb']) / 1024:.0f} MB after; "
                f"p99 first {m['cold']['p99']:.1f} ms, again {m['warm']['p99']:.1f} ms, "
                f"after a restart {m['restart']['p99']:.1f} ms")

    ours, git = r["ours"], r["git"]
    git_per = git["git_bytes"] / git["versions"]
    rows: list[Row] = [{
        "workload": f"long-lived room: {count:,} one-line versions of the 963 KB changelog",
        "ours": figures(ours),
        "anchor": f"git fast-import + gc, same edits ({git['versions']:,} versions): {git_per:,.0f} B a version",
        "ratio": ours["sidecar_bytes"] / ours["versions"] / max(git_per, 1e-9),
        "target": "≤ 2 KB a version; p99 ≤ 5 ms; start ≤ 1 s", "tool": "keep-alive socket (long_history.py)"}]
    if "before" in r:
        old = r["before"]
        rows.append({"workload": f"  the same, written and served by {before.name if before else '?'} (before)",
                     "ours": figures(old), "anchor": f"ours: {ours['sidecar_bytes'] / ours['versions']:,.0f} B a version",
                     "ratio": old["sidecar_bytes"] / old["versions"] / max(git_per, 1e-9), "target": "—",
                     "tool": "keep-alive socket (long_history.py)"})
    return rows


def startup() -> list[Row]:
    """``ce --help`` and ``ce read`` (against a real room) start-up times, vs ``python -c pass``."""
    python = sys.executable
    # as installed: pip compiles the bytecode, and an editable install under
    # PYTHONDONTWRITEBYTECODE would otherwise recompile every changed module at each start
    subprocess.run([python, "-m", "compileall", "-q", str(ROOT / "commonroom")], capture_output=True, timeout=300)
    ce = [ce_path()]  # the installed console script, as people run it (commonroom.cli.entry:main)
    with tempfile.TemporaryDirectory(prefix="cr-bench-startup-") as tmp:
        room = start_room(Path(tmp), text="# Startup\n\nbody\n")
        try:
            session = Path(tmp) / "session.json"
            subprocess.run([*ce, "join", room.invite("reader", "read"), "--session-file", str(session)],
                           capture_output=True, check=True, timeout=60)
            commands = {"ce --help": [*ce, "--help"], "ce read": [*ce, "read", "--raw", "--session-file", str(session)],
                        "python -c pass": [python, "-c", "pass"]}
            if shutil.which("hyperfine"):
                export = Path(tmp) / "h.json"
                subprocess.run(["hyperfine", "-N", "-w", "3", "-r", "20", "--export-json", str(export),
                                *(" ".join(_quote(a) for a in cmd) for cmd in commands.values())],
                               capture_output=True, timeout=300, check=True)
                means = [r["mean"] * 1000 for r in json.loads(export.read_text())["results"]]
                tool = "hyperfine"
            else:
                means = [_mean_ms(cmd) for cmd in commands.values()]
                tool = "subprocess timing"
        finally:
            room.stop()
    rows: list[Row] = [{"workload": f"{name}, start to exit", "ours": f"{ms:.0f} ms",
                        "anchor": f"python -c pass: {means[-1]:.0f} ms", "ratio": ms / max(means[-1], 1e-9),
                        "target": "≤ 150 ms", "tool": tool} for name, ms in zip(commands, means[:-1])]
    return rows + [room_start()]


#: Room starts (and bare app starts) timed by :func:`room_start`, in turns.
STARTS = 6


def room_start() -> Row:
    """``ce serve`` to its first answer and SIGTERM to exit, vs the bare app's gunicorn to its first connection.

    Medians of :data:`STARTS` starts each, in turns. The room's start is
    what ``tests.roomproc.start_room`` waits for (the state file, then
    ``GET /workspace/room`` answering 401); the anchor is gunicorn ``-k
    asgi -w 1`` serving :mod:`tests.bench.bare_app` until its port accepts.
    """
    starts, stops, bare = [], [], []
    with tempfile.TemporaryDirectory(prefix="cr-bench-start-") as tmp:
        body = Path(tmp) / "body.json"
        body.write_text("{}")
        for number in range(STARTS):
            began = time.perf_counter()
            room = start_room(Path(tmp) / f"room{number}", text="# Start\n\nbody\n")
            starts.append(time.perf_counter() - began)
            began = time.perf_counter()
            room.stop()
            stops.append(time.perf_counter() - began)
            began = time.perf_counter()
            proc, _ = bare_app.serve(body)
            bare.append(time.perf_counter() - began)
            proc.terminate()
            proc.wait(10)
    median = statistics.median
    return {"workload": "ce serve: start to first answer; SIGTERM to exit", "ours":
            f"{median(starts) * 1000:.0f} ms; stop {median(stops) * 1000:.0f} ms",
            "anchor": f"bare Falcon on gunicorn, start to first connection: {median(bare) * 1000:.0f} ms",
            "ratio": median(starts) / max(median(bare), 1e-9), "target": "—", "tool": "subprocess timing"}


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\"'\"'") + "'" if any(c in arg for c in " ;'\"") else arg


def _mean_ms(cmd: list[str], runs: int = 10) -> float:
    start = time.perf_counter()
    for _ in range(runs):
        subprocess.run(cmd, capture_output=True, check=True)
    return (time.perf_counter() - start) / runs * 1000


def summaries(quick: bool) -> list[Row]:
    """Both board summaries, p99 over HTTP, vs a page of the board's messages (tests/bench/summaries.py)."""
    from tests.bench import summaries as bench

    r = bench.measure(100 if quick else 300)
    anchor = r["list"]
    rows = []
    for name, workload in (("discussion", "GET /workspace/boards/{C}/summary, 2,000 retained messages"),
                           ("handoff", "GET /workspace/sessions/{W}/summary, 1,000 versions, 1,100 messages")):
        f = r[name]
        rows.append({"workload": workload,
                     "ours": f"p50 {f['p50']:.1f} ms, p99 {f['p99']:.1f} ms ({r['sizes'][name]:,} B)",
                     "anchor": f"a page of 50 messages: p50 {anchor['p50']:.1f} ms, p99 {anchor['p99']:.1f} ms",
                     "ratio": f["p99"] / max(anchor["p99"], 1e-9), "target": "p99 ≤ 20 ms",
                     "tool": "keep-alive socket (summaries.py)"})
    return rows


def web(quick: bool) -> list[Row]:
    """The participant page in Chromium: first screen and a new version (tests/bench/web_page.py)."""
    from tests.bench import web_page as bench

    r = bench.measure(200 if quick else 1000, 10 if quick else 30)
    f = r["new_version"]
    return [{"workload": f"participant page, 963 KB changelog ({r['lines']:,} lines), {r['versions']:,} versions",
             "ours": f"first screen {r['first_screen_ms']:.0f} ms; new version p50 {f['p50']:.0f} ms, "
                     f"p99 {f['p99']:.0f} ms ({r['commits']} commits)",
             "anchor": "— (informational)", "ratio": None,
             "target": "first screen ≤ 1 s, new version ≤ 200 ms", "tool": "Chromium + Playwright (web_page.py)"}]


def fanout(levels: str, seconds: float) -> list[Row]:
    """Observers of ``/workspace/observe`` (tests/bench/fanout.py --json, with its bare hub anchor)."""
    out = subprocess.run([sys.executable, "-m", "tests.bench.fanout", "--levels", levels, "--seconds",
                          str(seconds), "--json", "--bare"], cwd=ROOT, capture_output=True, text=True,
                         timeout=3600).stdout
    start = out.find("[")
    results = json.loads(out[start:out.rfind("]") + 1]) if start >= 0 else []
    rows = []
    for r in results:
        bare = r.get("bare") or {}
        rows.append({"workload": f"fan-out, {r['observers']:,} observers, 20 events/s",
                     "ours": f"p99 {r['p99_ms']:.0f} ms, {r['rss_per_subscriber_kb']:.1f} KB/sub, lost {r['lost']}, "
                             f"req p99 {r['probe_p99_ms']:.0f} ms",
                     "anchor": (f"bare SSE hub: p99 {bare['p99_ms']:.0f} ms, {bare['rss_per_subscriber_kb']:.1f} KB/sub"
                                if bare else "—"),
                     "ratio": (r["p99_ms"] / bare["p99_ms"]) if bare.get("p99_ms") else None,
                     "target": "p99 ≤ 1 s, ≤ 25 KB/sub, 0 lost", "tool": "fanout.py"})
    return rows


def tunnel(seconds: float) -> list[Row]:
    """Reads and lease writes through a WireGuard tunnel vs loopback, same room (tests/bench/tunnel.py)."""
    from tests.bench import tunnel as bench

    return bench.measure(seconds, doc=read_doc())


def machine() -> str:
    """One line describing the machine this ran on."""
    cpu = ""
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    load_avg = " ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"{platform.node()}: {os.cpu_count()} CPUs ({cpu or platform.processor()}), {platform.system()} "
            f"{platform.release()}, Python {platform.python_version()}; load average at the end {load_avg}")


def table(rows: list[Row]) -> str:
    """The markdown table of ``rows``."""
    lines = ["| workload | ours | anchor (same run) | ratio | target | load |", "|---|---|---|---|---|---|"]
    for r in rows:
        ratio = "—" if r["ratio"] is None else f"{r['ratio']:.2f}×"
        lines.append(f"| {r['workload']} | {r['ours']} | {r['anchor']} | {ratio} | {r['target']} | {r['tool']} |")
    return "\n".join(lines)


def write_docs(text: str, path: Path = ROOT / "docs" / "performance.md") -> None:
    """Replace the generated part of docs/performance.md (between its markers) with ``text``."""
    begin, end = "<!-- bench:begin -->", "<!-- bench:end -->"
    old = path.read_text("utf-8") if path.exists() else f"# Performance\n\n{begin}\n{end}\n"
    if begin not in old:
        old += f"\n{begin}\n{end}\n"
    head, _, rest = old.partition(begin)
    _, _, tail = rest.partition(end)
    path.write_text(f"{head}{begin}\n{text}\n{end}{tail}", "utf-8")


def main() -> None:
    """Command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--quick", action="store_true", help="fewer versions, shorter fan-out")
    parser.add_argument("--before", type=Path, help="an older checkout to serve the reads from too")
    parser.add_argument("--only", default="reads,mcp,writes,versions,long,startup,fanout,tunnel,summaries,web")
    parser.add_argument("--fanout-levels", default="1000,10000")
    parser.add_argument("--no-write-docs", action="store_true")
    args = parser.parse_args()
    wanted = args.only.split(",")
    steps = {
        "reads": lambda: reads(args.seconds, args.before),
        "mcp": lambda: mcp(args.seconds),
        "writes": lambda: writes(args.seconds, args.before),
        "versions": lambda: versions(args.quick),
        "long": lambda: long_history(args.quick, args.before),
        "startup": startup,
        "fanout": lambda: fanout("1000" if args.quick else args.fanout_levels, 10 if args.quick else 15),
        "tunnel": lambda: tunnel(args.seconds),
        "summaries": lambda: summaries(args.quick),
        "web": lambda: web(args.quick),
    }
    rows: list[Row] = []
    for name, step in steps.items():
        if name in wanted:
            print(f"running {name} ...", file=sys.stderr, flush=True)
            rows += step()
    tools = sorted({r["tool"] for r in rows})
    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (f"Run {when} on {machine()}.\nHTTP load: {'wrk' if load.have_wrk() else 'the asyncio generator'} "
            f"({'wrk installed' if load.have_wrk() else 'wrk not installed'}); tools per row: {', '.join(tools)}.\n\n"
            + table(rows))
    print(text)
    if not args.no_write_docs:
        write_docs(text)


if __name__ == "__main__":
    main()
