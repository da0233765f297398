"""Group commit in the writer thread (operations/runner.py, Store.batch).

Writes queued while the writer is busy run together in one transaction,
each in its own savepoint: each is its own version and event, a failing
one leaves the others, and answers come after the commit. A blocker write
holds the writer while the others queue, so the batch is deterministic.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time

from commonroom.engine import OPERATOR
from commonroom.errors import StaleVersion
from commonroom.operations.runner import Runner

TEXT = "".join(f"line {i}\n" for i in range(1, 21))


def test_queued_writes_commit_together_and_one_failure_stays_alone(engine):
    runner = Runner(engine)
    published: list[dict] = []
    engine.store.publish = published.extend
    release = threading.Event()

    def blocker() -> None:
        release.wait(10)

    def write(expected: int, k: int, text: str):
        return engine.write(OPERATOR, expected, text, {"lines": [k, k]})

    async def scenario():
        first = asyncio.ensure_future(runner.write(blocker))
        await asyncio.sleep(0.05)  # the writer now holds the blocker; the rest queue behind it
        head = engine.head().number
        calls = [asyncio.ensure_future(runner.write(write, head, 1, "one\n")),
                 asyncio.ensure_future(runner.write(write, head, 2, "stale\n")),  # head moved: refused
                 asyncio.ensure_future(runner.write(write, head + 1, 3, "three\n"))]
        await asyncio.sleep(0.05)
        release.set()
        await first
        return head, await asyncio.gather(*calls, return_exceptions=True)

    head, (one, stale, three) = asyncio.run(scenario())
    runner.close()
    assert isinstance(stale, StaleVersion)
    assert one["number"] == head + 1 and three["number"] == head + 2
    assert engine.head().number == head + 2
    assert engine.head().text.splitlines()[:3] == ["one", "line 2", "three"]
    assert engine.version_text(head + 1).splitlines()[:3] == ["one", "line 2", "line 3"]
    committed = [e for e in published if e["type"] == "version.committed"]
    assert [e["payload"]["version"] for e in committed] == [head + 1, head + 2]


def test_a_batched_write_that_fails_after_writing_leaves_nothing_and_the_ring_is_trimmed_once(engine, monkeypatch):
    from commonroom.store import db as store_db

    monkeypatch.setattr(store_db, "RING_SIZE", 5)
    store = engine.store
    published: list[dict] = []
    store.publish = published.extend

    def note(text: str, fail: bool = False):
        def fn(ctx):
            ctx.emit("test.note", {"text": text})
            if fail:
                raise RuntimeError("after its event")
            return text
        return fn

    before = store.last_event_id()
    with store.batch():
        for i in range(8):
            try:
                store.write(note(f"n{i}", fail=i == 3))
            except RuntimeError:
                pass
    rows = store.db.execute_sql('SELECT "id", "payload" FROM "event" ORDER BY "id"').fetchall()
    # seven events committed (the failed write's rolled back with its savepoint, its id reused),
    # the ring trimmed to its newest five
    assert [row[0] for row in rows] == list(range(before + 3, before + 8)) and before + 7 == store.last_event_id()
    assert [json.loads(payload)["text"] for _, payload in rows] == ["n2", "n4", "n5", "n6", "n7"]
    assert [e["payload"]["text"] for e in published] == [f"n{i}" for i in range(8) if i != 3]


def test_a_write_nested_in_a_batched_write_rolls_back_alone(engine):
    """Every batched write's savepoint has one name (``Store._savepoint``): SQLite's
    ``ROLLBACK TO`` / ``RELEASE`` of a name act on the newest savepoint so named, so a write
    nested in another one that fails takes back only its own part."""
    store = engine.store

    def meta(key: str, value: str):
        def fn(ctx):
            store.set_meta(key, value)
        return fn

    def outer(ctx):
        store.set_meta("outer_before", "1")
        try:
            def failing(ctx):
                store.set_meta("inner", "1")
                raise RuntimeError("inner fails")
            store.write(failing)
        except RuntimeError:
            pass
        store.write(meta("inner_ok", "1"))
        store.set_meta("outer_after", "1")

    def refused(ctx):
        store.set_meta("refused", "1")
        raise RuntimeError("the whole write fails")

    with store.batch():
        store.write(outer)
        try:
            store.write(refused)
        except RuntimeError:
            pass
        store.write(meta("last", "1"))
    kept = {key: store.meta(key) for key in ("outer_before", "inner", "inner_ok", "outer_after", "refused", "last")}
    assert kept == {"outer_before": "1", "inner": None, "inner_ok": "1", "outer_after": "1",
                    "refused": None, "last": "1"}


def test_a_write_whose_caller_loop_closed_does_not_stop_the_writer(engine):
    """The writer outlives a caller's event loop: a write that finishes after its loop
    closed is dropped, and the next caller's writes still run (before, the failed
    hand-over left the queue marked as draining and every later write waited forever)."""
    runner = Runner(engine)
    release = threading.Event()

    def blocker() -> str:
        release.wait(10)
        return "late"

    async def abandon():
        asyncio.ensure_future(runner.write(blocker))
        await asyncio.sleep(0.05)  # the writer holds the blocker now

    asyncio.run(abandon())  # the loop closes with the blocker still running
    release.set()

    async def later():
        return await asyncio.wait_for(runner.write(lambda: "next"), 5)

    try:
        assert asyncio.run(later()) == "next"
    finally:
        runner.close()


def test_the_writer_thread_starts_on_the_first_write_and_close_stops_it(engine):
    runner = Runner(engine)
    runner.close()  # nothing ran: no writer thread was started
    assert runner._thread is None
    runner = Runner(engine)
    assert asyncio.run(runner.write(lambda: 7)) == 7
    thread = runner._thread
    assert thread is not None and thread.is_alive() and thread.name == "commonroom-writer"
    runner.close()
    assert not thread.is_alive()
    started = time.monotonic()
    runner.close()  # a second close returns at once (it used to wait 30 s for a thread that was gone)
    assert time.monotonic() - started < 1
    try:
        asyncio.run(runner.write(lambda: 8))
    except RuntimeError as exc:
        assert "closed" in str(exc)
    else:
        raise AssertionError("a write after close ran")


def test_an_audit_after_close_is_dropped_and_never_waits(engine):
    runner = Runner(engine)
    asyncio.run(runner.write(lambda: 0))
    runner.close()

    async def audits():  # two audited reads ending while the room stops
        for _ in range(2):
            await asyncio.wait_for(runner._audit(None, "list_session_messages", "ok", {}, None), 3)

    asyncio.run(audits())  # the second used to wait forever on the first's unsubmitted flush


def test_a_write_raising_stopiteration_is_answered_with_an_error(engine):
    runner = Runner(engine)

    def broken():
        raise StopIteration

    async def calls():
        first = asyncio.ensure_future(asyncio.wait_for(runner.write(broken), 5))
        second = asyncio.ensure_future(asyncio.wait_for(runner.write(lambda: "after"), 5))
        return await asyncio.gather(first, second, return_exceptions=True)

    try:
        error, after = asyncio.run(calls())
    finally:
        runner.close()
    assert isinstance(error, RuntimeError) and isinstance(error.__cause__, StopIteration)
    assert after == "after"


def test_an_interpreter_that_exits_without_close_finishes_the_queued_write(tmp_path):
    marker = tmp_path / "written"
    script = f"""
import asyncio, time
from commonroom.operations.runner import Runner

class Engine:  # no store: each write runs alone
    pass

runner = Runner(Engine())

def slow():
    time.sleep(0.5)
    open({str(marker)!r}, "w").write("written")

async def main():
    try:
        await asyncio.wait_for(runner.write(slow), 0.1)  # the caller gives up; the write is under way
    except asyncio.TimeoutError:
        pass

asyncio.run(main())
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert marker.read_text() == "written"


def test_a_failure_of_the_writer_itself_reaches_its_callers_and_the_writer_goes_on(engine):
    runner = Runner(engine)
    stats = runner.stats
    runner.stats = {}  # the writer's own bookkeeping fails (a KeyError), not the write

    async def calls():
        try:
            await asyncio.wait_for(runner.write(lambda: "lost"), 5)
        except KeyError:
            pass
        else:
            raise AssertionError("the failure did not reach the caller")
        runner.stats = stats
        return await asyncio.wait_for(runner.write(lambda: "next"), 5)

    try:
        assert asyncio.run(calls()) == "next"
    finally:
        runner.close()
