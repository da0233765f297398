"""Benchmark: reads and lease writes through a WireGuard tunnel (tailcat) against the same over loopback.

Run::

    .venv/bin/python -m tests.bench.tunnel [--seconds 3] [--rounds 2]
    .venv/bin/python -m tests.bench --only tunnel

One room in the ``room`` namespace of :class:`tests.overlay.Overlay`
(userspace ``wireguard-go`` between two network namespaces joined by a
veth pair), served with ``--transport tailcat``. The same client program
(this module with ``--client``) runs in turns, ``--rounds`` times each: in
the room's namespace on a loopback invitation, and in the peer namespace
on a tailcat one (its join dials the hint through the plugin). Each run
measures ``GET /workspace/document`` with 16 keep-alive connections
(:func:`tests.bench.load.asyncio_load`) and lease acquire+release writes
from one blocking client (:func:`tests.bench.writes._alone`). Medians are
reported; the ratio (tunnel / loopback) is informational: it is what the
overlay costs on this machine (here: userspace WireGuard on the same CPUs
as the room), not a target. Where network namespaces cannot be made the
row says why instead.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bench import load  # noqa: E402
from tests.roomproc import CORPUS, ce_path  # noqa: E402

DOC = CORPUS / "system-design-primer-README-zh-Hans.md"
TEXT = "".join(f"line {i}\n" for i in range(1, 101))


def client(token: str, seconds: float) -> dict[str, Any]:
    """Join with ``token`` (dialled through its transport), then measure reads and lease writes."""
    from commonroom import client as byte_client
    from commonroom import invitation
    from tests.bench.writes import _alone

    hint = invitation.decode(token)["transport"]
    joined = byte_client.call_json(hint, "POST", "/workspace/join", body={"invitation": token, "client": "bench"})
    auth = {"Authorization": f"Bearer {joined['token']}"}
    address, port = hint["address"], int(hint["port"])
    reads = load.asyncio_load(f"http://{address}:{port}",
                              load.request_bytes("GET", "/workspace/document", auth, host=address), 16, seconds)
    assert set(reads["statuses"]) == {200}, reads["statuses"]
    return {"reads": reads["rps"], "read_p99": reads["p99"], "writes": _alone(port, joined["token"], seconds, address)}


def measure(seconds: float = 3.0, rounds: int = 2, doc: Path = DOC) -> list[dict[str, Any]]:
    """The two rows (reads, writes): tunnel vs loopback, same room, same run, in turns."""
    from tests.overlay import Overlay, cannot_make_namespaces, ensure_wireguard, serve_tailcat

    reason = cannot_make_namespaces()
    if reason:
        return [{"workload": "reads and lease writes through a WireGuard tunnel (tailcat)", "ours": f"not run: {reason}",
                 "anchor": "—", "ratio": None, "target": "informational", "tool": "tunnel.py"}]
    ensure_wireguard()
    with tempfile.TemporaryDirectory(prefix="cr-bench-tunnel-") as tmp:
        overlay = Overlay(keys=Path(tmp) / "keys")
        try:
            overlay.up()
            document = Path(tmp) / "doc.md"
            document.write_bytes(doc.read_bytes() if doc.exists() else TEXT.encode())
            room = serve_tailcat(overlay, document, env={"COMMONROOM_RATE_LIMIT": str(10**9)})
            try:
                results: dict[str, list[dict[str, Any]]] = {"loopback": [], "tunnel": []}
                for _ in range(rounds):
                    for kind in results:
                        results[kind].append(_run_client(overlay, document, kind, seconds))
            finally:
                room.stop()
        finally:
            overlay.down()
    median = {kind: {key: statistics.median(r[key] for r in runs) for key in runs[0]} for kind, runs in results.items()}
    tunnel, loopback = median["tunnel"], median["loopback"]
    size = doc.stat().st_size if doc.exists() else len(TEXT)
    tool = "asyncio / blocking socket (tunnel.py)"
    return [
        {"workload": f"GET /workspace/document ({size // 1024} KB), 16 conns, through a userspace WireGuard "
                     "tunnel (tailcat)",
         "ours": f"{tunnel['reads']:,.0f} req/s (p99 {tunnel['read_p99']:.1f} ms)",
         "anchor": f"the same room over loopback: {loopback['reads']:,.0f} req/s (p99 {loopback['read_p99']:.1f} ms)",
         "ratio": tunnel["reads"] / max(loopback["reads"], 1e-9), "target": "informational", "tool": tool},
        {"workload": "  lease acquire+release, 1 client, through the tunnel, write txn/s",
         "ours": f"{tunnel['writes']:,.0f}", "anchor": f"the same room over loopback: {loopback['writes']:,.0f}",
         "ratio": tunnel["writes"] / max(loopback["writes"], 1e-9), "target": "informational", "tool": tool},
    ]


def _run_client(overlay: Any, document: Path, kind: str, seconds: float) -> dict[str, Any]:
    """One :func:`client` run: on the room's machine over loopback, or on the peer's through the tunnel."""
    invite = [ce_path(), "invite", str(document), "-p", f"bench-{kind}", "--cap", "read,lease"]
    if kind == "tunnel":
        invite += ["--transport", "tailcat"]
    token = subprocess.run(overlay.room(*invite), capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    where = overlay.room if kind == "loopback" else overlay.peer
    done = subprocess.run(where(sys.executable, "-m", "tests.bench.tunnel", "--client", token,
                                "--seconds", str(seconds)), capture_output=True, text=True, cwd=ROOT,
                          timeout=seconds * 4 + 120)
    if done.returncode != 0:
        raise RuntimeError(f"the {kind} client failed: {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def main() -> None:
    """Command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--client", help=argparse.SUPPRESS)  # the measuring side, run in a namespace
    args = parser.parse_args()
    if args.client:
        print(json.dumps(client(args.client, args.seconds)))
        return
    for row in measure(args.seconds, args.rounds):
        ratio = "—" if row["ratio"] is None else f"{row['ratio']:.2f}×"
        print(f"{row['workload']}: {row['ours']} vs {row['anchor']} ({ratio})")


if __name__ == "__main__":
    main()
