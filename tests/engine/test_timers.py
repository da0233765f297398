"""Room timers (``commonroom.timers``) and the lease-expiry sweep, on an injected clock.

The scheduler's due times and the sweeps' notion of "lapsed" both come
from the engine's clock, so a ``FakeClock`` drives them without sleeping
(``Scheduler.run_due``). One test runs the real loop with the room's
writer thread (``Runner.write``). The end-to-end check through a real
room is ``tests/e2e/test_live_timers.py``.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from commonroom.engine import OPERATOR
from commonroom.operations.runner import Runner
from commonroom.room import room_timers
from commonroom.timers import Scheduler
from tests.fakeclock import FakeClock, join

TEXT = "# Plan\n\n## Goals\n\n- ship\n\n## Open questions\n\n1. none\n"
GOALS = {"heading": ["Goals"]}



def expired(engine):
    return [e["payload"]["lease_id"] for e in engine.history(OPERATOR, limit=200)["events"]
            if e["type"] == "lease.expired"]


# ---------------------------------------------------------------- the scheduler


def test_every_runs_first_at_start_then_once_per_interval(clock):
    scheduler = Scheduler(clock=clock)
    calls: list[str] = []
    scheduler.every(5, "a", lambda: calls.append("a"))
    scheduler.every(2, "b", lambda: calls.append("b"))

    async def scenario():
        assert await scheduler.run_due() == ["a", "b"]
        assert await scheduler.run_due() == []  # nothing is due again at the same moment
        clock.advance(2)
        assert await scheduler.run_due() == ["b"]
        clock.advance(3)
        assert await scheduler.run_due() == ["a", "b"]

    asyncio.run(scenario())
    assert calls == ["a", "b", "b", "a", "b"]
    assert scheduler.runs == {"a": 2, "b": 3}


def test_registration_errors(clock):
    scheduler = Scheduler(clock=clock)
    scheduler.every(1, "a", lambda: None)
    with pytest.raises(ValueError):
        scheduler.every(1, "a", lambda: None)
    with pytest.raises(ValueError):
        scheduler.every(0, "b", lambda: None)


def test_a_failing_sweep_is_counted_and_runs_again_at_its_next_time(clock):
    scheduler = Scheduler(clock=clock)
    outcomes = iter([RuntimeError("boom"), None])

    def sweep():
        outcome = next(outcomes)
        if outcome is not None:
            raise outcome

    scheduler.every(1, "flaky", sweep)

    async def scenario():
        await scheduler.run_due()
        assert scheduler.failures["flaky"] == 1 and scheduler.runs["flaky"] == 0
        assert await scheduler.run_due() == []
        clock.advance(1)
        await scheduler.run_due()

    asyncio.run(scenario())
    assert scheduler.failures["flaky"] == 1 and scheduler.runs["flaky"] == 1


def test_stop_without_start_is_harmless(clock):
    asyncio.run(Scheduler(clock=clock).stop())


# ---------------------------------------------------------------- lease expiry


def test_the_sweep_marks_a_lapsed_lease_once_and_is_idempotent(engine, clock):
    alice, _ = join(engine, "alice")
    lease = engine.acquire_lease(alice, GOALS, ttl_seconds=30)
    clock.advance(29.999999)
    assert engine.expire_leases() == 0
    assert expired(engine) == []
    clock.advance(0.000001)  # exactly expires_at
    assert engine.expire_leases() == 1
    assert engine.expire_leases() == 0
    clock.advance(3600)
    assert engine.expire_leases() == 0
    # the write path that used to mark it finds nothing left to mark
    bob, _ = join(engine, "bob")
    engine.acquire_lease(bob, GOALS, ttl_seconds=30)
    assert expired(engine) == [lease["id"]]
    event = [e for e in engine.history(OPERATOR, limit=200)["events"] if e["type"] == "lease.expired"][0]
    assert event["payload"] == {"lease_id": lease["id"], "session_id": alice.session_id}


def test_a_write_that_expired_the_lease_first_leaves_the_sweep_nothing(engine, clock):
    alice, _ = join(engine, "alice")
    bob, _ = join(engine, "bob")
    lease = engine.acquire_lease(alice, GOALS, ttl_seconds=10)
    clock.advance(10)
    engine.acquire_lease(bob, GOALS, ttl_seconds=10)  # the lazy path marks alice's lease
    assert expired(engine) == [lease["id"]]
    assert engine.expire_leases() == 0
    assert expired(engine) == [lease["id"]]


def test_the_sweep_writes_nothing_when_no_lease_has_lapsed(engine, clock, monkeypatch):
    alice, _ = join(engine, "alice")
    engine.acquire_lease(alice, GOALS, ttl_seconds=30)
    writes = []
    original = engine.store.write
    monkeypatch.setattr(engine.store, "write", lambda fn: (writes.append(fn), original(fn))[1])
    for _ in range(5):
        clock.advance(5)
        assert engine.expire_leases() == 0
    assert writes == []
    clock.advance(5)
    assert engine.expire_leases() == 1
    assert len(writes) == 1


def test_a_lease_whose_session_was_revoked_is_expired_by_the_sweep(engine, clock):
    alice, _ = join(engine, "alice")
    lease = engine.acquire_lease(alice, GOALS, ttl_seconds=300)
    engine.revoke(session_id=alice.session_id)
    assert engine.expire_leases() == 1
    assert expired(engine) == [lease["id"]]


def test_the_room_scheduler_expires_leases_on_the_writer_thread(engine, clock):
    """The real loop, the room's sweeps registered as in ``build_room``, the fake clock moved by hand."""
    alice, _ = join(engine, "alice")
    lease = engine.acquire_lease(alice, GOALS, ttl_seconds=1)
    runner = Runner(engine)
    threads: list[str] = []
    sweep = engine.expire_leases

    def recording() -> int:
        threads.append(threading.current_thread().name)
        return sweep()

    engine.expire_leases = recording  # type: ignore[method-assign]
    scheduler = room_timers(engine, runner)
    scheduler.max_sleep = 0.02

    async def scenario():
        await scheduler.start()
        try:
            await asyncio.sleep(0.1)
            assert expired(engine) == []
            clock.advance(1)
            for _ in range(200):
                if expired(engine):
                    break
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.1)  # later runs find nothing more
        finally:
            await scheduler.stop()
        assert not scheduler.running

    try:
        asyncio.run(scenario())
    finally:
        runner.close()
    assert expired(engine) == [lease["id"]]
    assert threads and all(name.startswith("commonroom-writer") for name in threads)
    assert scheduler.failures["lease-expiry"] == 0


def test_the_room_runs_the_task_ttl_sweep_every_minute(engine, clock):
    """``room_timers`` registers ``task-ttl`` (60 s): a task past its TTL fails at the next due run."""
    alice, _ = join(engine, "alice", ["read", "handoff"])
    made = engine.create_handoff(alice, "expire me")
    runner = Runner(engine)
    scheduler = room_timers(engine, runner)
    assert scheduler.timers["task-ttl"].seconds == 60

    async def scenario():
        await scheduler.run_due()
        assert engine.task_get(alice, made["task"]["taskId"])["status"] == "working"
        clock.advance(made["task"]["ttlMs"] / 1000 + 1)
        assert "task-ttl" in await scheduler.run_due()

    try:
        asyncio.run(scenario())
    finally:
        runner.close()
    Task = engine.store.models.Task
    assert Task.get(Task.id == made["task"]["taskId"]).status == "failed"
    assert scheduler.failures["task-ttl"] == 0


def test_poke_makes_a_sweep_due_now(clock):
    scheduler = Scheduler(clock=clock)
    calls: list[str] = []
    scheduler.every(60, "watch", lambda: calls.append("watch"))
    asyncio.run(scheduler.run_due())
    assert calls == ["watch"] and asyncio.run(scheduler.run_due()) == []
    scheduler.poke("watch")
    scheduler.poke("no such sweep")  # ignored
    assert asyncio.run(scheduler.run_due()) == ["watch"] and calls == ["watch", "watch"]


def test_file_watch_tells_at_once_of_a_change_to_the_file_only(tmp_path):
    """inotify through the C library: a write, a replacement, a write into the file that replaced it and a
    deletion of the file each tell; writes into another file of the folder (the sidecar's WAL) do not even
    wake the watch."""
    import os
    import time

    from commonroom.filewatch import FileWatch

    doc = tmp_path / "doc.md"
    doc.write_text("a")
    told = threading.Event()
    watch = FileWatch.start(doc, told.set)
    if watch is None:
        pytest.skip("no inotify here: the room's timer alone notices changes")
    try:
        (tmp_path / "other.md").write_text("x")
        with open(tmp_path / "doc.md.commonroom.db-wal", "ab") as wal:  # written, never closed, as SQLite does
            for _ in range(10):  # apart, so that no two writes' events could merge into one
                wal.write(b"frame")
                wal.flush()
                time.sleep(0.03)
        assert not told.wait(0.3)
        assert watch.reads <= 2  # the two creations; none for the writes
        def append() -> None:
            with doc.open("a") as f:
                f.write("c")

        for change in (lambda: doc.write_text("b"), lambda: os.replace(tmp_path / "other.md", doc), append):
            told.clear()
            change()
            assert told.wait(5), change
            time.sleep(0.05)
        # an editor's save keeping a backup: the file renamed away, a new one under the name
        os.rename(doc, tmp_path / "doc.md~")
        doc.write_text("d")
        assert told.wait(5)
        time.sleep(0.1)
        told.clear()
        reads = watch.reads
        (tmp_path / "doc.md~").write_text("the backup, written")  # its inode is no longer watched
        assert not told.wait(0.3) and watch.reads == reads
        append()  # the new file's inode is
        assert told.wait(5)
        told.clear()
        doc.unlink()
        assert told.wait(5)
    finally:
        watch.stop()
