"""Room timers: one scheduler in the room process that runs idempotent sweeps.

DESIGN.md, *Room timers*: the task TTL sweep, lease expiry and board
retention run here, not at the next write. :func:`commonroom.room.build_room`
makes one :class:`Scheduler`; the ASGI lifespan starts it (startup) and
stops it (shutdown, before the writer thread closes).

```python
scheduler = Scheduler(runner.write, clock=engine.clock)
scheduler.every(1.0, "lease-expiry", engine.expire_leases)   # a sync callable
await scheduler.start()        # lifespan startup: one asyncio task on the loop
scheduler.poke("lease-expiry")  # due now (on the loop; call_soon_threadsafe from a thread)
await scheduler.run_due()      # tests: run every sweep that is due now, once
await scheduler.stop()         # lifespan shutdown: a running sweep finishes first
scheduler.runs["lease-expiry"], scheduler.failures["lease-expiry"]
```

- **Where a sweep runs.** Every sweep is a plain callable run by ``run``
  (the room passes :meth:`commonroom.operations.runner.Runner.write`), so
  it runs on the room's one writer thread, serialized with every other
  write; the event loop only waits for it. A sweep must therefore be
  cheap when there is nothing to do (one indexed read) and write with
  ``store.write`` only when something is due.
- **When.** Due times come from the injected clock (``commonroom.clock``;
  ``tests/fakeclock.py`` moves it by hand): a sweep is due ``seconds``
  after its previous run *finished* (never two runs of one sweep at once),
  and the first run is due at start. The loop sleeps until the next due
  time, at most :data:`MAX_SLEEP` seconds at a time, so a clock that jumps
  (a test's ``offset``, a fake clock) is noticed.
- **Idempotent.** A sweep may run late, twice in a row, or after the write
  path already did its work: it acts on what the store says is due at the
  clock's ``now()`` and nothing else.
- **Failures** are logged and counted; the sweep runs again at its next
  due time. ``stop()`` cancels the loop; a sweep already handed to the
  writer thread completes there (the runner finishes queued writes before
  it closes).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import logging
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from .clock import Clock

log = logging.getLogger("commonroom.timers")

#: The longest the loop sleeps before looking at the clock again (seconds).
MAX_SLEEP = 1.0

Sweep = Callable[[], Any]
RunOn = Callable[..., Awaitable[Any]]


async def _inline(fn: Callable[..., Any], *args: Any) -> Any:
    """Run ``fn`` right here (tests without a writer thread)."""
    return fn(*args)


@dataclass
class Timer:
    """One registered sweep."""

    name: str
    seconds: float
    sweep: Sweep
    due: dt.datetime


class Scheduler:
    """Runs registered sweeps at their intervals (see the module docstring)."""

    def __init__(self, run: RunOn | None = None, *, clock: Clock | None = None,
                 max_sleep: float = MAX_SLEEP):
        self.run = run or _inline
        self.clock = clock or Clock()
        self.max_sleep = max_sleep
        self.timers: dict[str, Timer] = {}
        self.runs: dict[str, int] = {}
        self.failures: dict[str, int] = {}
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None

    def every(self, seconds: float, name: str, sweep: Sweep) -> Timer:
        """Run ``sweep()`` every ``seconds`` (> 0) on the writer thread; the first run at start.

        ``ValueError`` for a duplicate ``name`` or a non-positive interval.
        """
        if name in self.timers:
            raise ValueError(f"timer {name!r} is registered already")
        if not seconds > 0:
            raise ValueError(f"timer {name!r}: seconds must be positive")
        timer = Timer(name, float(seconds), sweep, self.clock.now())
        self.timers[name] = timer
        self.runs[name] = 0
        self.failures[name] = 0
        if self._wake is not None:
            self._wake.set()
        return timer

    def poke(self, name: str) -> None:
        """Make sweep ``name`` due now (something it looks at has changed); on the loop's thread.

        From another thread: ``loop.call_soon_threadsafe(scheduler.poke, name)``.
        Unknown names are ignored.
        """
        timer = self.timers.get(name)
        if timer is None:
            return
        timer.due = min(timer.due, self.clock.now())
        if self._wake is not None:
            self._wake.set()

    @property
    def running(self) -> bool:
        """True between :meth:`start` and :meth:`stop`."""
        return self._task is not None and not self._task.done()

    async def start(self) -> None:
        """Start the loop on the running event loop (lifespan startup); idempotent."""
        if self.running:
            return
        self._wake = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="commonroom-timers")

    async def stop(self) -> None:
        """Stop the loop (lifespan shutdown); idempotent, and harmless if never started."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass

    async def run_due(self) -> list[str]:
        """Run, once each and in registration order, every sweep due at ``clock.now()``; their names."""
        ran = []
        for timer in list(self.timers.values()):
            if timer.due <= self.clock.now():
                await self._run_one(timer)
                ran.append(timer.name)
        return ran

    async def _run_one(self, timer: Timer) -> None:
        try:
            result = await self.run(timer.sweep)
            if inspect.isawaitable(result):  # an async sweep handed to an inline runner
                await result
            self.runs[timer.name] += 1
        except asyncio.CancelledError:
            raise
        except Exception:
            self.failures[timer.name] += 1
            log.exception("room timer %s failed", timer.name)
        timer.due = self.clock.now() + dt.timedelta(seconds=timer.seconds)

    def _seconds_to_next(self) -> float:
        if not self.timers:
            return self.max_sleep
        now = self.clock.now()
        nearest = min(t.due for t in self.timers.values())
        return max(0.0, min(self.max_sleep, (nearest - now).total_seconds()))

    async def _loop(self) -> None:
        assert self._wake is not None
        while True:
            await self.run_due()
            delay = self._seconds_to_next()
            if delay > 0:
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), delay)
                except asyncio.TimeoutError:
                    pass
