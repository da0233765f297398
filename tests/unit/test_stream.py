"""The stream primitive (commonroom.live.stream) against a real Hub: every ending cleans up.

The hub and the primitive are the unit here; the ring and sessions are a
small in-memory stand-in with the engine's four lookups. After each ending
the hub has no subscriber and ``Streams`` no open stream or key.
"""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from commonroom.live.hub import Hub
from commonroom.live.stream import CANCELLED, LIVE_CACHE_SECONDS, Encoder, Streams


def ev(i: int, type: str = "invitation.created", **payload) -> dict:
    return {"id": i, "type": type, "time": "t", "actor": {"participant_id": None, "session_id": None},
            "payload": payload}


class Clock:
    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.timezone.utc)


class Ring:
    """The engine's ring lookups over a list; ``dead`` sessions are not live."""

    def __init__(self, count: int = 0, oldest: int = 1):
        self.events = [ev(i) for i in range(oldest, oldest + count)]
        self.last = oldest + count - 1 if count else 0
        self.clock = Clock()
        self.dead: set[str] = set()
        self.reads = 0

    def add(self, count: int) -> list[dict]:
        new = [ev(self.last + 1 + i) for i in range(count)]
        self.events += new
        self.last += count
        return new

    def events_after(self, event_id: int, limit: int = 200) -> list[dict]:
        self.reads += 1
        return [e for e in self.events if e["id"] > event_id][:limit]

    def cursor_lost(self, after: int) -> bool:
        if after > self.last:
            return True
        if after == self.last:
            return False
        return not self.events or self.events[0]["id"] > after + 1

    def last_event_id(self) -> int:
        return self.last

    def session_live(self, session_id: str) -> bool:
        return session_id not in self.dead


class Recorder(Encoder):
    """Frames as readable text: ``open``, ``ids 1,2``, ``end lagged 9``."""

    def __init__(self, fail_on: int | None = None):
        self.fail_on = fail_on

    def open(self) -> bytes:
        return b"open\n\n"

    def events(self, events):
        if self.fail_on is not None and any(e["id"] == self.fail_on for e in events):
            raise RuntimeError("encoder failed")
        return ("ids " + ",".join(str(e["id"]) for e in events) + "\n\n").encode()

    def heartbeat(self):
        return b"hb\n\n"

    def end(self, reason, last_event_id):
        return f"end {reason} {last_event_id}\n\n".encode()


def text(frame) -> str:
    return frame.data.decode().strip()


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 10))


def setup(count: int = 0, *, queue_size: int = 1024, heartbeat: float = 15.0, oldest: int = 1):
    hub = Hub(queue_size=queue_size)
    ring = Ring(count, oldest)
    streams = Streams(hub, ring, heartbeat_seconds=heartbeat)
    return hub, ring, streams


def assert_clean(hub: Hub, streams: Streams) -> None:
    assert hub.subscribers == 0
    assert streams.count == 0
    assert not streams._keys


async def drain(frames, limit: int = 100) -> list[str]:
    out = []
    async for frame in frames:
        out.append(text(frame))
        if len(out) >= limit:
            break
    return out


def test_replay_then_live_without_gap_or_duplicate():
    async def main():
        hub, ring, streams = setup(5)
        stream = streams.open(Recorder(), after=2)
        frames = stream.frames()
        # Commits racing the replay: already in the ring and also published.
        hub.publish(ring.add(2))  # 6, 7
        assert [text(await frames.__anext__()) for _ in range(2)] == ["open", "ids 3,4,5,6,7"]
        hub.publish(ring.add(1))  # 8
        assert text(await frames.__anext__()) == "ids 8"
        stream.close()
        assert await drain(frames) == []
        assert stream.reason == "disconnected"
        assert_clean(hub, streams)

    run(main())


def test_client_gone_mid_replay_stops_reading_the_ring_and_cleans_up():
    async def main():
        hub, ring, streams = setup(450)  # three replay pages
        stream = streams.open(Recorder(), after=0)
        frames = stream.frames()
        assert text(await frames.__anext__()) == "open"
        first = text(await frames.__anext__())
        assert first.startswith("ids 1,") and first.endswith(",200")
        reads = ring.reads
        stream.close()  # what the disconnect hook does
        assert await drain(frames) == []
        assert ring.reads == reads, "no more pages read after the client went away"
        assert_clean(hub, streams)

    run(main())


def test_abandoned_generator_mid_replay_cleans_up_on_aclose():
    async def main():
        hub, ring, streams = setup(450)
        stream = streams.open(Recorder(), after=0)
        frames = stream.frames()
        await frames.__anext__()
        await frames.__anext__()
        await frames.aclose()  # Falcon stops iterating; the loop finalises the generator
        assert_clean(hub, streams)

    run(main())


def test_stream_never_iterated_is_cleaned_by_close():
    async def main():
        hub, ring, streams = setup()
        stream = streams.open(Recorder(), key="k")
        assert hub.subscribers == 1 and streams.count == 1 and streams.get("k") is stream
        stream.close()  # the request-end hook when Falcon failed before iterating
        stream.close()  # idempotent
        assert_clean(hub, streams)

    run(main())


def test_revoked_session_ends_its_stream():
    async def main():
        hub, ring, streams = setup()
        mine = streams.open(Recorder(), session_id="s1")
        other = streams.open(Recorder(), session_id="s2")
        frames = mine.frames()
        assert text(await frames.__anext__()) == "open"
        hub.publish([ev(1, "session.revoked", session_id="s1")])
        assert await drain(frames) == ["end revoked None"]
        assert mine.reason == "revoked" and other.reason is None
        other.close()
        assert_clean(hub, streams)

    run(main())


def test_lagging_subscriber_ends_with_the_lag_frame():
    async def main():
        hub, ring, streams = setup(queue_size=4)
        stream = streams.open(Recorder())
        frames = stream.frames()
        await frames.__anext__()
        hub.publish(ring.add(10))  # overflows the queue of 4: dropped at once
        assert hub.subscribers == 0 and hub.lagged == 1
        assert await drain(frames) == ["end lagged 10"]
        assert_clean(hub, streams)

    run(main())


def test_shutdown_ends_every_stream_and_later_ones():
    async def main():
        hub, ring, streams = setup()
        stream = streams.open(Recorder(), session_id="s")
        frames = stream.frames()
        await frames.__anext__()
        waiting = asyncio.ensure_future(drain(frames))
        await asyncio.sleep(0.01)
        await hub.close()
        assert await waiting == ["end shutdown None"]
        late = streams.open(Recorder())
        assert await drain(late.frames()) == ["open", "end shutdown None"]
        assert_clean(hub, streams)

    run(main())


def test_end_by_key_sends_the_final_frame_and_frees_the_key():
    async def main():
        hub, ring, streams = setup()
        key = ("mcp", "s1", 7)
        stream = streams.open(Recorder(), session_id="s1", key=key)
        with pytest.raises(ValueError):
            streams.open(Recorder(), key=key)
        frames = stream.frames()
        await frames.__anext__()
        waiting = asyncio.ensure_future(drain(frames))
        await asyncio.sleep(0.01)
        assert streams.end(key) is True
        assert await waiting == [f"end {CANCELLED} None"]
        assert streams.end(key) is False and streams.get(key) is None
        assert_clean(hub, streams)
        again = streams.open(Recorder(), key=key)  # the key is free again
        again.close()
        assert_clean(hub, streams)

    run(main())


def test_end_by_key_during_replay():
    async def main():
        hub, ring, streams = setup(450)
        stream = streams.open(Recorder(), after=0, key="k")
        frames = stream.frames()
        await frames.__anext__()
        await frames.__anext__()
        streams.end("k")
        assert await drain(frames) == ["end cancelled None"]
        assert_clean(hub, streams)

    run(main())


def test_expired_session_ends_at_a_heartbeat_check():
    async def main():
        hub, ring, streams = setup(heartbeat=0.05)
        stream = streams.open(Recorder(), session_id="s")
        frames = stream.frames()
        await frames.__anext__()
        assert text(await frames.__anext__()) == "hb"
        ring.dead.add("s")
        await asyncio.sleep(LIVE_CACHE_SECONDS)
        assert (await drain(frames))[-1] == "end expired None"
        assert_clean(hub, streams)

    run(main())


def test_expires_at_deadline_ends_the_stream():
    async def main():
        hub, ring, streams = setup(heartbeat=30)
        soon = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=0.1)).isoformat()
        stream = streams.open(Recorder(), session_id="s", expires_at=soon)
        frames = stream.frames()
        await frames.__anext__()
        ring.dead.add("s")
        assert await asyncio.wait_for(drain(frames), 2) == ["end expired None"]
        assert_clean(hub, streams)

    run(main())


def test_cursor_beyond_the_ring_ends_with_cursor_lost():
    async def main():
        hub, ring, streams = setup(5, oldest=10)  # ids 10..14; 1..9 trimmed
        stream = streams.open(Recorder(), after=3)
        assert await drain(stream.frames()) == ["open", "end cursor_lost 14"]
        assert_clean(hub, streams)

    run(main())


def test_an_encoder_error_propagates_and_still_cleans_up():
    async def main():
        hub, ring, streams = setup(3)
        stream = streams.open(Recorder(fail_on=2), after=0)
        with pytest.raises(RuntimeError):
            await drain(stream.frames())
        assert_clean(hub, streams)
        live = streams.open(Recorder(fail_on=9))
        frames = live.frames()
        await frames.__anext__()
        hub.publish([ev(9)])
        with pytest.raises(RuntimeError):
            await frames.__anext__()
        assert_clean(hub, streams)

    run(main())


def test_cancelled_task_cleans_up():
    async def main():
        hub, ring, streams = setup()
        stream = streams.open(Recorder())
        task = asyncio.ensure_future(drain(stream.frames()))
        await asyncio.sleep(0.01)
        task.cancel()  # a stalled reader cut off by StreamGuard
        with pytest.raises(asyncio.CancelledError):
            await task
        assert_clean(hub, streams)

    run(main())


def test_accept_filters_replay_and_live_alike():
    async def main():
        hub, ring, streams = setup(4)
        even = lambda e: e["id"] % 2 == 0  # noqa: E731
        stream = streams.open(Recorder(), after=0, accept=even)
        frames = stream.frames()
        assert [text(await frames.__anext__()) for _ in range(2)] == ["open", "ids 2,4"]
        hub.publish(ring.add(3))  # 5, 6, 7
        assert text(await frames.__anext__()) == "ids 6"
        stream.close()
        assert_clean(hub, streams)

    run(main())


def test_heartbeat_after_the_idle_interval():
    async def main():
        hub, ring, streams = setup(heartbeat=0.05)
        stream = streams.open(Recorder())
        frames = stream.frames()
        await frames.__anext__()
        assert text(await frames.__anext__()) == "hb"
        hub.publish(ring.add(1))
        assert text(await frames.__anext__()) == "ids 1"
        stream.close()
        assert_clean(hub, streams)

    run(main())


def test_heartbeat_seconds_must_be_positive():
    with pytest.raises(ValueError):
        Streams(Hub(), Ring(), heartbeat_seconds=0)


# -- wait_next: the board long-poll ---------------------------------------------

def test_wait_next_answers_from_the_ring_at_once():
    async def main():
        hub, ring, streams = setup(5)
        got = await streams.wait_next(3, 5.0)
        assert [e["id"] for e in got.events] == [4, 5] and got.reason == "events" and got.last_event_id == 5
        assert hub.subscribers == 0

    run(main())


def test_wait_next_skips_unaccepted_pages_then_waits_for_a_live_event():
    async def main():
        hub, ring, streams = setup(450)
        wants = lambda e: e["type"] == "lease.acquired"  # noqa: E731
        task = asyncio.ensure_future(streams.wait_next(0, 5.0, accept=wants))
        await asyncio.sleep(0.01)
        assert hub.subscribers == 1
        hub.publish([ev(451), ev(452, "lease.acquired")])
        got = await task
        assert [e["id"] for e in got.events] == [452] and got.last_event_id == 452
        assert hub.subscribers == 0

    run(main())


def test_wait_next_times_out_empty():
    async def main():
        hub, ring, streams = setup(2)
        loop = asyncio.get_running_loop()
        start = loop.time()
        got = await streams.wait_next(2, 0.1)
        assert got.events == [] and got.reason == "timeout" and got.last_event_id == 2
        assert 0.09 <= loop.time() - start < 1.0
        assert hub.subscribers == 0

    run(main())


@pytest.mark.parametrize("ending, reason", [("revoke", "revoked"), ("shutdown", "shutdown"), ("lag", "lagged")])
def test_wait_next_endings(ending, reason):
    async def main():
        hub, ring, streams = setup(queue_size=2)
        task = asyncio.ensure_future(streams.wait_next(0, 5.0, session_id="s",
                                                       accept=lambda e: e["type"] == "nothing"))
        await asyncio.sleep(0.01)
        if ending == "revoke":
            hub.end_session("s")
        elif ending == "shutdown":
            await hub.close()
        else:
            streams_sub = next(iter(hub._subs))
            streams_sub.accept = None
            hub.publish([ev(1), ev(2), ev(3)])
        got = await task
        assert got.events == [] and got.reason == reason
        assert hub.subscribers == 0

    run(main())


def test_wait_next_cancelled_unsubscribes_and_cursor_lost():
    async def main():
        hub, ring, streams = setup(3, oldest=10)
        assert (await streams.wait_next(2, 1.0)).reason == "cursor_lost"
        task = asyncio.ensure_future(streams.wait_next(12, 5.0))
        await asyncio.sleep(0.01)
        assert hub.subscribers == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert hub.subscribers == 0

    run(main())
