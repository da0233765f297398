"""Room timers through a real room: a lapsed lease is announced when it lapses.

A 1 s lease is acquired and nothing else is written; an observer on
``/workspace/observe`` sees ``lease.expired`` (once) within about two
seconds of the lease's ``expires_at``, from the lease-expiry sweep that
the ASGI lifespan started (``commonroom.timers``). The sweep itself, on
an injected clock, is tested in ``tests/engine/test_timers.py``.
"""

from __future__ import annotations

import time

from commonroom.clock import parse_rfc3339
from tests.roomproc import start_room
from tests.ssekit import open_stream

TEXT = "# Plan\n\n## Goals\n\n- ship\n\n## Open questions\n\n1. none\n"


def test_a_lapsed_lease_is_announced_without_another_write(tmp_path):
    room = start_room(tmp_path / "room", text=TEXT)
    try:
        holder = room.join("holder", "read,lease")
        watcher = room.join("watcher", "read,observe")
        stream = open_stream(("127.0.0.1", room.state["ingress"]["port"]), token=watcher.token)
        try:
            assert stream.status == 200
            assert stream.next().retry == 5000
            r = holder.post("/workspace/leases", {"region": {"heading": ["Goals"]}, "ttl_seconds": 1})
            assert r.status_code == 201, r.text
            lease = r.json()
            (acquired,) = stream.events(1)
            assert acquired.event == "lease.acquired"
            frame = stream.events(1, timeout=5)[0]
            seen = time.time()
            assert frame.event == "lease.expired", frame
            event = frame.json()
            assert event["payload"]["lease_id"] == lease["id"]
            assert event["payload"]["session_id"] == holder.session["id"]
            lapsed = parse_rfc3339(lease["expires_at"]).timestamp()
            assert seen - lapsed < 2.0, f"announced {seen - lapsed:.2f} s after expires_at"
            assert parse_rfc3339(event["time"]).timestamp() >= lapsed
            # once: nothing more follows while nothing else happens (a heartbeat at most)
            try:
                later = stream.events(1, timeout=2.5)
            except TimeoutError:
                later = []
            assert later == [], later
        finally:
            stream.close()
        assert holder.get("/workspace/leases").json()["leases"] == []
    finally:
        room.stop()
