"""Eight clients propose and approve against the same base at once.

A real room serves ``gunicorn-dirty.md``. Each round, eight threads read the
head, wait on a barrier until all have, then at once propose an insertion
right after the heading line of their section (with that head as
``base_version``) and approve it. Sections:

- clients 0 and 1 share one section, 2 and 3 another: their insertions land
  on the same point, so only one of each pair can win a given base;
- client 4 edits a parent section and client 5 a subsection inside it: the
  regions overlap but the lines do not, so both always merge;
- client 7 leases its section; client 6 edits a subsection of it and is
  refused with ``lease_conflict`` on every approval.

Afterwards every accepted change is in the head, every refused one got
``stale_version``, ``proposal_conflict`` or ``lease_conflict``, and the
version chain 1..head has no gap, each text hashing to its ``content_hash``.
"""

from __future__ import annotations

import hashlib
import signal
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from commonroom import regions
from commonroom.engine import Engine
from commonroom.schemas import errors_of
from tests.roomproc import corpus_files, start_room

CLIENTS = 8
ROUNDS = 3
SECTIONS = {
    0: ["Per-App Worker Allocation", "Worker Distribution"],
    1: ["Per-App Worker Allocation", "Worker Distribution"],
    2: ["Streaming", "Streaming Protocol"],
    3: ["Streaming", "Streaming Protocol"],
    4: ["Stash (Shared State via Message Passing)"],
    5: ["Stash (Shared State via Message Passing)", "Basic Usage"],
    6: ["Signal Handling", "Signal Reference"],
    7: ["Signal Handling"],
}
REFUSALS = {"stale_version", "proposal_conflict", "lease_conflict"}


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def marker(client: int, rnd: int) -> str:
    return f"<!-- client {client} round {rnd} -->\n"


@pytest.fixture
def room(tmp_path: Path):
    source = next(p for p in corpus_files() if p.name == "gunicorn-dirty.md")
    r = start_room(tmp_path, source, name=source.name)
    yield r
    r.stop()


def test_eight_clients_propose_and_approve_at_once(room):
    clients = [room.join(f"agent-{i}", "read,propose,approve,lease") for i in range(CLIENTS)]
    lease = clients[7].post("/workspace/leases", {"region": {"heading": SECTIONS[7]}, "ttl_seconds": 600})
    assert lease.status_code == 201, lease.text
    lease_id = lease.json()["id"]

    barrier = threading.Barrier(CLIENTS)
    accepted: dict[str, dict[str, Any]] = {}  # marker -> {version, proposal}
    refused: dict[str, dict[str, Any]] = {}  # marker -> error body
    bases: Counter[int] = Counter()
    problems: list[str] = []
    lock = threading.Lock()

    def run(i: int) -> None:
        c = clients[i]
        http = httpx.Client(base_url=room.ingress, headers={"Authorization": f"Bearer {c.token}"}, timeout=60)
        try:
            for rnd in range(ROUNDS):
                barrier.wait(timeout=60)  # the previous round is over: everyone reads the same head
                doc = http.get("/workspace/document").json()
                base, text = doc["version"], doc["text"]
                barrier.wait(timeout=60)  # everyone has read: now all propose against that base at once
                span = regions.resolve(text, {"heading": SECTIONS[i]})
                lines = regions.lines_of(text)[span.start - 1: span.end]
                mark = marker(i, rnd)
                new = lines[0] + mark + "".join(lines[1:])
                r = http.post("/workspace/proposals", json={"base_version": base, "region": {"heading": SECTIONS[i]},
                                                            "text": new, "summary": mark.strip()})
                with lock:
                    bases[base] += 1
                if r.status_code == 201:
                    body = r.json()
                    if errors_of("editing#Proposal", body):
                        problems.append(f"bad proposal body {body}")
                    r = http.post(f"/workspace/proposals/{body['id']}/approve")
                    if r.status_code == 200:
                        result = r.json()
                        if errors_of("editing#ApproveResult", result):
                            problems.append(f"bad approve body {result}")
                        with lock:
                            accepted[mark] = {"version": result["version"]["number"], "proposal": body["id"]}
                        continue
                body = r.json()
                if errors_of("error", body):
                    problems.append(f"bad error body {body}")
                with lock:
                    refused[mark] = body
        except Exception as exc:  # noqa: BLE001 - reported below
            import traceback

            seen = locals().get("doc")
            where = (f" at version {seen.get('version')} ({len(seen.get('text', ''))} chars)"
                     if isinstance(seen, dict) else "")
            problems.append(f"client {i}: {exc!r}{where}\n{traceback.format_exc()}")
            barrier.abort()
        finally:
            http.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert problems == []
    assert len(accepted) + len(refused) == CLIENTS * ROUNDS
    # Each round really is eight proposals against one base.
    assert len(bases) == ROUNDS and all(count == CLIENTS for count in bases.values()), bases

    # Every refusal is one of the three editing conflicts; the lease refusals are client 6's.
    codes = Counter(body["error"] for body in refused.values())
    assert set(codes) <= REFUSALS, codes
    for mark, body in refused.items():
        if body["error"] == "lease_conflict":
            assert body["lease_id"] == lease_id and "client 6 " in mark
        if body["error"] == "proposal_conflict":
            assert body["proposal_id"] and body["details"]["hunks"]
        if body["error"] == "stale_version":
            assert body["current_version"] > body["base_version"] and body["diff"] and body["changes"]
    assert all(marker(6, rnd) in refused for rnd in range(ROUNDS))
    # Overlapping regions with disjoint lines, and the lease holder, always merge.
    for i in (4, 5, 7):
        assert all(marker(i, rnd) in accepted for rnd in range(ROUNDS)), (i, refused)
    # At most one of each same-point pair wins a given base, but every round someone wins.
    for a, b in ((0, 1), (2, 3)):
        assert all(marker(a, rnd) in accepted or marker(b, rnd) in accepted for rnd in range(ROUNDS))
    assert codes["stale_version"] + codes["proposal_conflict"] >= 1

    # The head holds every accepted change and none of the refused ones.
    op = room.operator()
    head = op.get("/workspace/document").json()
    for mark in accepted:
        assert head["text"].count(mark) == 1, mark
    for mark in refused:
        assert mark not in head["text"], mark
    assert head["version"] == 1 + len(accepted)
    assert sorted(a["version"] for a in accepted.values()) == list(range(2, head["version"] + 1))

    # The chain: versions 1..head, each text hashing to its content_hash, made by the accepted proposals.
    infos: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = op.get("/workspace/versions", params={"limit": 7, **({"cursor": cursor} if cursor else {})}).json()
        infos += page["versions"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert [v["number"] for v in infos] == list(range(head["version"], 0, -1))
    by_proposal = {a["proposal"]: a["version"] for a in accepted.values()}
    texts: dict[int, str] = {}
    for info in infos:
        full = op.get(f"/workspace/versions/{info['number']}").json()
        assert full["content_hash"] == info["content_hash"] == sha(full["text"])
        texts[info["number"]] = full["text"]
        if info["number"] > 1:
            assert info["source"] == "proposal" and by_proposal[info["proposal_id"]] == info["number"]
    # Each version adds exactly its own marker to the one before.
    for n in range(2, head["version"] + 1):
        before, after = texts[n - 1], texts[n]
        added = [m for m in accepted if m in after and m not in before]
        assert len(added) == 1 and accepted[added[0]]["version"] == n
    assert room.wait_for_file(head["text"].encode("utf-8")) == head["text"].encode("utf-8")
    assert head["content_hash"] == sha(head["text"])

    # A fresh reader of the sidecar (no caches) reconstructs every version the same.
    room.stop(signal.SIGTERM)
    engine = Engine.open(room.document, readonly=True)
    try:
        for n, text in texts.items():
            assert engine.version_text(n) == text
    finally:
        engine.close()
