"""Group commit in the writer thread (operations/runner.py, Store.batch).

Writes queued while the writer is busy run together in one transaction,
each in its own savepoint: each is its own version and event, a failing
one leaves the others, and answers come after the commit. A blocker write
holds the writer while the others queue, so the batch is deterministic.
"""

from __future__ import annotations

import asyncio
import json
import threading

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
    before = {t.name for t in threading.enumerate()}
    runner = Runner(engine)
    runner.close()  # nothing ran: no writer thread was started, none is left
    assert {t.name for t in threading.enumerate()} == before
    runner = Runner(engine)
    assert asyncio.run(runner.write(lambda: 7)) == 7
    assert any(t.name == "commonroom-writer" for t in threading.enumerate())
    runner.close()
    assert not any(t.name == "commonroom-writer" for t in threading.enumerate())
    try:
        asyncio.run(runner.write(lambda: 8))
    except RuntimeError as exc:
        assert "closed" in str(exc)
    else:
        raise AssertionError("a write after close ran")


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
