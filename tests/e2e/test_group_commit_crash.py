"""Group commit survives SIGKILL: no acknowledged write is lost.

Concurrent writers (direct writes, proposals, lease changes), each on its
own keep-alive connection, so the writer thread batches them (the writes
that arrive while a transaction syncs share the next one). The whole room
is SIGKILLed at a random instant, twenty times: after each restart
``PRAGMA integrity_check`` is ok and every write answered 2xx is in the
sidecar (its version with the content hash it answered, its proposal, its
lease). Pattern of tests/e2e/test_editing_crash.py.
"""

from __future__ import annotations

import os
import random
import sqlite3
import threading
import time

import httpx

from tests.conftest import SAMPLE
from tests.e2e.test_editing_crash import integrity, kill, restart, sidecar
from tests.roomproc import start_room

KILLS = 20
ALL = "read,propose,lease,write"


class Writer(threading.Thread):
    """One client writing as fast as it can until the room dies; records what was acknowledged."""

    def __init__(self, base: str, token: str, kind: str, line: int):
        super().__init__(daemon=True)
        self.base, self.token, self.kind, self.line = base, token, kind, line
        self.versions: dict[int, str] = {}
        self.proposals: list[str] = []
        self.leases: list[str] = []
        self.started = threading.Event()

    def run(self) -> None:
        try:
            with httpx.Client(base_url=self.base, timeout=10,
                              headers={"Authorization": f"Bearer {self.token}"}) as http:
                n = 0
                while True:
                    n += 1
                    self.started.set()
                    self.one(http, n)
        except (httpx.HTTPError, OSError):
            return  # the room died

    def one(self, http: httpx.Client, n: int) -> None:
        region = {"lines": [self.line, self.line]}
        if self.kind == "write":
            head = http.get("/workspace/document").json()["version"]
            r = http.put("/workspace/document", json={"expected_version": head, "region": region,
                                                       "text": f"write {n}\n"})
            if r.status_code == 200:
                self.versions[r.json()["number"]] = r.json()["content_hash"]
        elif self.kind == "propose":
            head = http.get("/workspace/document").json()["version"]
            r = http.post("/workspace/proposals", json={"base_version": head, "region": region,
                                                        "text": f"proposal {n}\n"})
            if r.status_code == 201:
                self.proposals.append(r.json()["id"])
        else:
            r = http.post("/workspace/leases", json={"region": region})
            if r.status_code == 201:
                lease = r.json()["id"]
                self.leases.append(lease)
                http.delete(f"/workspace/leases/{lease}")


def test_sigkill_during_concurrent_batched_writes(tmp_path, monkeypatch):
    monkeypatch.setenv("COMMONROOM_RATE_LIMIT", "1000000")
    rng = random.Random(int(os.environ.get("COMMONROOM_CRASH_SEED", "13")))
    room = start_room(tmp_path, SAMPLE)
    tokens = [room.join(f"w{i}", ALL).token for i in range(6)]
    kinds = ["write", "propose", "propose", "lease", "lease", "lease"]
    acked_versions: dict[int, str] = {}
    acked = {"proposal": set(), "lease": set()}
    try:
        for _ in range(KILLS):
            writers = [Writer(room.ingress, token, kind, 1 + i) for i, (token, kind) in enumerate(zip(tokens, kinds))]
            for w in writers:
                w.start()
            for w in writers:
                w.started.wait(5)
            time.sleep(rng.uniform(0.05, 0.4))
            kill(room)
            for w in writers:
                w.join(15)
                assert not w.is_alive()
                acked_versions.update(w.versions)
                acked["proposal"].update(w.proposals)
                acked["lease"].update(w.leases)
            assert integrity(room) == "ok"
            con = sqlite3.connect(f"file:{sidecar(room)}?mode=ro", uri=True)
            try:
                hashes = dict(con.execute("SELECT number, content_hash FROM version"))
                proposals = {row[0] for row in con.execute("SELECT id FROM proposal")}
                leases = {row[0] for row in con.execute("SELECT id FROM lease")}
            finally:
                con.close()
            lost = {n: h for n, h in acked_versions.items() if hashes.get(n) != h}
            assert lost == {}, f"acknowledged versions lost: {lost}"
            assert acked["proposal"] - proposals == set()
            assert acked["lease"] - leases == set()
            room = restart(room)
    finally:
        room.stop()
    assert acked_versions and acked["proposal"] and acked["lease"]
