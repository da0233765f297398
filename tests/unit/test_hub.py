"""The live hub: bounded queues, lag → RESYNC, end_session, close, threads."""

from __future__ import annotations

import asyncio
import threading

import pytest

from commonroom.live.hub import CLOSED, HEARTBEAT, RESYNC, Hub


def ev(i: int, type: str = "invitation.created", **payload) -> dict:
    return {"id": i, "type": type, "time": "t", "actor": {"participant_id": None, "session_id": None},
            "payload": payload}


def run(coro):
    return asyncio.run(coro)


def test_events_arrive_in_order_for_every_subscriber():
    async def main():
        hub = Hub()
        subs = [hub.subscribe() for _ in range(3)]
        hub.publish([ev(1), ev(2)])
        hub.publish([ev(3)])
        for sub in subs:
            assert [(await sub.get())["id"] for _ in range(3)] == [1, 2, 3]
        assert hub.subscribers == 3
        assert hub.published == 3

    run(main())


def test_get_waits_then_wakes_on_publish():
    async def main():
        hub = Hub()
        sub = hub.subscribe()
        task = asyncio.create_task(sub.get())
        await asyncio.sleep(0.01)
        assert not task.done()
        hub.publish([ev(7)])
        assert (await asyncio.wait_for(task, 1))["id"] == 7

    run(main())


def test_timeout_gives_heartbeat_and_stays_live():
    async def main():
        hub = Hub()
        sub = hub.subscribe()
        assert await sub.get(timeout=0.01) is HEARTBEAT
        assert await sub.get(timeout=0) is HEARTBEAT
        assert sub.get_nowait() is HEARTBEAT
        hub.publish([ev(1)])
        assert (await sub.get(timeout=0.01))["id"] == 1

    run(main())


def test_full_queue_lags_and_drops_only_that_subscriber():
    async def main():
        hub = Hub(queue_size=4)
        slow = hub.subscribe()
        fast = hub.subscribe()
        for i in range(1, 5):
            hub.publish([ev(i)])
            assert (await fast.get())["id"] == i
        assert hub.subscribers == 2
        hub.publish([ev(5)])  # slow already holds 4: overflow
        assert hub.subscribers == 1
        assert hub.lagged == 1
        assert await slow.get() is RESYNC
        assert await slow.get() is RESYNC  # sticky
        assert slow.ended
        assert (await fast.get())["id"] == 5
        hub.publish([ev(6)])
        assert await slow.get(timeout=0) is RESYNC
        assert (await fast.get())["id"] == 6

    run(main())


def test_overflow_inside_one_batch_lags():
    async def main():
        hub = Hub(queue_size=3)
        sub = hub.subscribe()
        hub.publish([ev(i) for i in range(1, 5)])
        assert await sub.get() is RESYNC

    run(main())


def test_waiting_lagger_is_woken_with_resync():
    async def main():
        hub = Hub(queue_size=1)
        sub = hub.subscribe()
        hub.publish([ev(1), ev(2)])
        assert await asyncio.wait_for(sub.get(), 1) is RESYNC

    run(main())


def test_accept_filters_and_failing_filter_counts_as_no():
    async def main():
        hub = Hub()
        only_leases = hub.subscribe(accept=lambda e: e["type"].startswith("lease."))

        def broken(event):
            raise RuntimeError("boom")

        bad = hub.subscribe(accept=broken)
        hub.publish([ev(1), ev(2, "lease.acquired", lease_id="l1"), ev(3)])
        assert (await only_leases.get())["id"] == 2
        assert await only_leases.get(timeout=0) is HEARTBEAT
        assert await bad.get(timeout=0) is HEARTBEAT
        assert hub.subscribers == 2

    run(main())


def test_end_session_closes_only_that_session():
    async def main():
        hub = Hub()
        a1 = hub.subscribe(session_id="s_a")
        a2 = hub.subscribe(session_id="s_a")
        b = hub.subscribe(session_id="s_b")
        op = hub.subscribe()
        waiting = asyncio.create_task(a1.get())
        await asyncio.sleep(0)
        hub.publish([ev(1)])
        hub.end_session("s_a")
        assert await waiting is CLOSED  # ending preempts what was still queued
        assert await a1.get() is CLOSED
        assert await a2.get() is CLOSED  # queued event discarded
        assert (await b.get())["id"] == 1
        assert (await op.get())["id"] == 1
        assert hub.subscribers == 2

    run(main())


def test_session_revoked_event_ends_that_sessions_streams():
    async def main():
        hub = Hub()
        victim = hub.subscribe(session_id="s_x")
        other = hub.subscribe(session_id="s_y")
        waiting = asyncio.create_task(victim.get(timeout=30))
        await asyncio.sleep(0)
        hub.publish([ev(9, "session.revoked", session_id="s_x")])
        # The waiter wakes with the event or CLOSED; after that, always CLOSED.
        first = await asyncio.wait_for(waiting, 1)
        assert first is CLOSED or first["id"] == 9
        assert await victim.get() is CLOSED
        assert (await other.get())["type"] == "session.revoked"
        assert hub.subscribers == 1

    run(main())


def test_close_ends_everything_and_later_subscriptions():
    async def main():
        hub = Hub()
        subs = [hub.subscribe(session_id=f"s{i}") for i in range(5)]
        waiters = [asyncio.create_task(s.get()) for s in subs]
        await asyncio.sleep(0)
        await hub.close()
        assert [await w for w in waiters] == [CLOSED] * 5
        assert hub.subscribers == 0
        late = hub.subscribe()
        assert await late.get() is CLOSED
        hub.publish([ev(1)])  # harmless after close
        assert hub.closed

    run(main())


def test_subscription_close_unsubscribes():
    async def main():
        hub = Hub()
        sub = hub.subscribe(session_id="s")
        sub.close()
        sub.close()  # idempotent
        assert hub.subscribers == 0
        hub.publish([ev(1)])
        assert await sub.get() is CLOSED

    run(main())


def test_cancelled_get_leaves_subscription_usable():
    async def main():
        hub = Hub()
        sub = hub.subscribe()
        task = asyncio.create_task(sub.get())
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        hub.publish([ev(1)])
        assert (await sub.get())["id"] == 1

    run(main())


def test_publish_from_another_thread_is_handed_to_the_loop():
    async def main():
        hub = Hub()
        sub = hub.subscribe()
        seen_threads: list[int] = []
        original = hub._deliver

        def spy(events):
            seen_threads.append(threading.get_ident())
            original(events)

        hub._deliver = spy
        worker = threading.Thread(target=hub.publish, args=([ev(1), ev(2)],))
        worker.start()
        worker.join()
        assert [(await asyncio.wait_for(sub.get(), 1))["id"] for _ in range(2)] == [1, 2]
        assert seen_threads == [threading.get_ident()]

    run(main())


def test_commits_published_off_the_loop_in_a_burst_share_one_wake_up_in_order():
    async def main():
        hub = Hub()
        sub = hub.subscribe()
        loop = asyncio.get_running_loop()
        handed: list[object] = []
        original = loop.call_soon_threadsafe

        def spy(callback, *args):
            handed.append(callback)
            return original(callback, *args)

        loop.call_soon_threadsafe = spy  # type: ignore[method-assign]

        def writer() -> None:  # a group commit's writes, published one by one from the writer thread
            for i in range(1, 6):
                hub.publish([ev(i)])

        worker = threading.Thread(target=writer)
        worker.start()
        worker.join()
        hub.publish([ev(6)])  # on the loop, before the delivery ran: after the five, not before
        assert [(await asyncio.wait_for(sub.get(), 1))["id"] for _ in range(6)] == [1, 2, 3, 4, 5, 6]
        assert len(handed) == 1  # one wake-up of the loop for the five
        worker = threading.Thread(target=hub.publish, args=([ev(7)],))
        worker.start()
        worker.join()
        assert (await asyncio.wait_for(sub.get(), 1))["id"] == 7
        assert len(handed) == 2  # the next burst schedules its own

    run(main())


def test_publish_never_waits_for_readers():
    async def main():
        hub = Hub(queue_size=16)
        subs = [hub.subscribe() for _ in range(200)]
        for i in range(1, 1001):
            hub.publish([ev(i)])  # nobody reads: everyone lags, publish still returns
        assert hub.subscribers == 0
        assert hub.lagged == 200
        assert all(s.get_nowait() is RESYNC for s in subs)

    run(main())


def test_queue_size_must_be_positive():
    with pytest.raises(ValueError):
        Hub(queue_size=0)


def test_long_timeouts_share_one_ticker_and_still_fire():
    async def main():
        hub = Hub()
        subs = [hub.subscribe() for _ in range(50)]
        started = asyncio.get_running_loop().time()
        results = await asyncio.gather(*(s.get(timeout=1.0) for s in subs))
        elapsed = asyncio.get_running_loop().time() - started
        assert results == [HEARTBEAT] * 50
        assert 1.0 <= elapsed < 1.6
        assert hub._deadlines == {} and hub._ticker is None
        waiting = asyncio.create_task(subs[0].get(timeout=30))
        await asyncio.sleep(0)
        hub.publish([ev(1)])
        assert (await asyncio.wait_for(waiting, 1))["id"] == 1
        assert hub._deadlines == {}

    run(main())


def test_take_after_skips_seen_ids_stops_at_the_limit_and_says_what_ended_it():
    async def main():
        hub = Hub()
        sub = hub.subscribe()
        hub.publish([ev(i) for i in (1, 2, 3, 4, 5, 6)])
        first = await sub.get()
        events, last, ended = sub.take_after(first, 2, 3)  # 1 and 2 seen already
        assert ([e["id"] for e in events], last, ended["id"]) == ([3, 4, 5], 5, 5)
        events, last, ended = sub.take_after(await sub.get(), last, 3)
        assert ([e["id"] for e in events], last, ended) == ([6], 6, HEARTBEAT)  # the queue ran dry
        hub.publish([ev(7)])
        sub.close()
        events, last, ended = sub.take_after(ev(6), 6, 3)
        assert (events, last, ended) == ([], 6, CLOSED)

    run(main())
