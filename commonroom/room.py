"""The composition root: one room's parts wired inside the worker.

:func:`build_room` makes the engine (fed to the live hub by its one write
path, ``publish=hub.publish``), the :class:`~commonroom.operations.runner.Runner`
(reads on the loop, writes on the one writer thread), and both Falcon
apps with their routes derived from the operation table: the owner port
(operator routes, ``/workspace/observe``, the console: ``commonroom.http.console``) and the session ingress
(session routes, ``/workspace/observe``, ``/mcp``). Each app is wrapped in
:class:`commonroom.live.guard.StreamGuard` (bounded writes for event
streams); the ingress has the room's front door outside that
(:mod:`commonroom.front`: cached reads, direct writes and cached tool calls
answered before Falcon). Each listener's stack is under its edge
(:class:`commonroom.http.edge.Listener`: the Host and path rules, the
route, the bearer, the capability and, on the ingress, one count per
bearer, ``commonroom.limits``: each once, before anything answers).
SIGTERM ends the streams at once (``commonroom.live.stopping``). The room
timers (``commonroom.timers``: one :class:`~commonroom.timers.Scheduler`,
its sweeps on the writer thread) and the checkpoint warmer (old versions'
lines kept ready: ``Engine.warm_checkpoints``) start with the ASGI lifespan,
which waits for that warm-up (at most :data:`STARTUP_WARM_SECONDS`) before
the worker serves, so old versions read fast from the first request;
the shutdown hooks stop the timers, then close the hub, the writer thread,
then the engine (which stops the warmer).

Nothing here is HTTP- or MCP-specific: ``http/`` and ``mcp/`` never
import each other; this module imports both.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any, Callable

from .engine import Engine
from .engine.checkpoints import PAUSE_SECONDS
from .errors import Unauthorized
from .http.app import CheckedRouter, create_app
from .http.console import ConsoleGate, console_routes, console_unauthorized
from .http.edge import Listener
from .http.participant import participant_routes
from .http.rules import HostNames
from .front import FrontDoor, front_routes
from .http.operations import room_answers
from .limits import RateLimiter
from .live.guard import StreamGuard
from .live.hub import Hub
from .live.sse import LiveSettings, ObserveResource
from .live.stream import Streams
from .live.stopping import end_streams_on_sigterm
from .mcp import mcp_routes
from .operations import INGRESS, OPERATIONS, OWNER, Table
from .operations.runner import Runner
from .memory import Trimmer
from .filewatch import FileWatch
from .timers import Scheduler

#: How often the lease-expiry sweep runs (seconds): a lapsed lease's
#: ``lease.expired`` is emitted within about this long of its ``expires_at``.
LEASE_SWEEP_SECONDS = 1.0
#: How often the room looks at its file (one ``stat``; ``Engine.watch_file``): an edit made
#: outside the room becomes a version, and a deleted or emptied file is written back, within a
#: second. Where inotify is available (:mod:`commonroom.filewatch`) a change makes the look at once.
FILE_WATCH_SECONDS = 0.25
#: How often the task TTL sweep runs (tasks live 24 h; a minute late is fine).
TASK_SWEEP_SECONDS = 60.0
#: How often board and peer retention runs (``Engine.sweep_board_retention``): peer
#: messages live 24 h, so a minute late is fine; count bounds also hold at every post.
BOARD_SWEEP_SECONDS = 60.0
#: How often the room looks at its WAL's size and gives back one grown past its
#: limit (``Store.give_back_wal``: one ``stat`` when there is nothing to do).
WAL_SWEEP_SECONDS = 5.0
#: Longest the worker waits at startup for old versions' checkpoints to be
#: warmed before it serves (a 1 MB document's 1,000 versions take ~0.5 s);
#: past it the warm-up goes on in the background while the room serves.
STARTUP_WARM_SECONDS = 5.0


class Hooks(list):
    """The lifespan hooks of a room: the list itself runs at shutdown, in order;
    ``startup`` at startup (``commonroom.http.lifespan.Lifespan``)."""

    def __init__(self, shutdown: list[Callable], startup: list[Callable], scheduler: Scheduler):
        super().__init__(shutdown)
        self.startup = list(startup)
        self.scheduler = scheduler


def room_timers(engine: Engine, runner: Runner) -> Scheduler:
    """The room's scheduler with its sweeps registered (each runs on the writer thread)."""
    scheduler = Scheduler(runner.write, clock=engine.clock)
    scheduler.every(LEASE_SWEEP_SECONDS, "lease-expiry", engine.expire_leases)
    scheduler.every(TASK_SWEEP_SECONDS, "task-ttl", engine.sweep_tasks)
    scheduler.every(FILE_WATCH_SECONDS, "file-watch", engine.watch_file)
    scheduler.every(BOARD_SWEEP_SECONDS, "board-retention", engine.sweep_board_retention)
    scheduler.every(WAL_SWEEP_SECONDS, "wal-give-back", engine.store.give_back_wal)
    return scheduler


def stream_resources(engine: Engine, hub: Hub, settings: LiveSettings, streams: Streams) -> dict[str, Any]:
    """The resource of each streaming operation of the table, by operation name."""
    return {"workspace_observe": ObserveResource(engine, hub, settings, streams)}


def restart_worker(why: str) -> None:
    """The sidecar was rescued after a disk fault: end this worker (gracefully) so the
    arbiter starts a fresh one on the rescued file (:mod:`commonroom.store.faults`)."""
    os.kill(os.getpid(), signal.SIGTERM)


def build_room(document: Path, owner_token_hash: str, *, table: Table = OPERATIONS,
               names: HostNames | None = None) -> tuple[Engine, Listener, Listener, Hooks]:
    """``(engine, owner, ingress, hooks)`` for ``document``.

    ``owner`` and ``ingress`` are the two listeners' edges
    (:class:`~commonroom.http.edge.Listener`: the one check of each request,
    over the stack that answers it); ``names`` the Host names they answer to
    (:class:`~commonroom.http.rules.HostNames`; None: the loopback names).
    ``table`` is the operation table both apps and the MCP tools are
    derived from (tests pass their own). ``hooks`` is the list of shutdown
    hooks, with ``hooks.startup`` (the timers start) and ``hooks.scheduler``.
    """
    settings = LiveSettings.from_env()
    hub = Hub(queue_size=settings.queue_size)
    engine = Engine.open(document, publish=hub.publish, background_file=True)
    engine.store.on_fault = restart_worker
    # group commit (operations/runner.py) is on unless COMMONROOM_GROUP_COMMIT=0 (benchmarks compare both)
    runner = Runner(engine, group_commit=os.environ.get("COMMONROOM_GROUP_COMMIT", "1") != "0")
    scheduler = room_timers(engine, runner)
    streams = Streams(hub, engine, heartbeat_seconds=settings.heartbeat_seconds)
    engine.board_streams = streams  # board long-polls wait on the hub (live/longpoll.py)
    resources = stream_resources(engine, hub, settings, streams)
    answers = room_answers(runner)
    owner_router, ingress_router = CheckedRouter(), CheckedRouter()
    owner_app = create_app(engine, OWNER, runner=runner, table=table, streams=resources,
                           extra_routes=console_routes(engine, runner), router=owner_router)
    owner_app.add_error_handler(Unauthorized, console_unauthorized(engine))  # a browser's /console gets a page, not JSON
    limiter = RateLimiter()
    mcp = mcp_routes(engine, hub, heartbeat_seconds=settings.heartbeat_seconds, runner=runner, table=table,
                     streams=streams)
    ingress_app = create_app(engine, INGRESS, extra_routes={**mcp, **participant_routes()}, runner=runner, table=table,
                             streams=resources, router=ingress_router)
    end_streams_on_sigterm(hub.close_nowait)

    trimmer = Trimmer()  # freed heap back to the system (commonroom/memory.py)

    async def warm_old_versions() -> None:
        """Start the checkpoint warmer; serve once it is done, or after STARTUP_WARM_SECONDS.

        Nothing is served until then, so it warms without pausing between chunks
        (the pauses cost a loaded machine most of a second); then with them.
        """
        warmer = engine.warm_checkpoints(pause=0.0)
        await asyncio.to_thread(warmer.wait, STARTUP_WARM_SECONDS)
        warmer.pause = PAUSE_SECONDS

    watching: list[FileWatch] = []

    async def watch_file() -> None:
        """Have inotify (where available) make the file-watch sweep due at once on a change."""
        loop = asyncio.get_running_loop()
        watch = FileWatch.start(engine.document_path,
                                lambda: loop.call_soon_threadsafe(scheduler.poke, "file-watch"))
        if watch is not None:
            watching.append(watch)

    async def stop_watching() -> None:
        for watch in watching:
            watch.stop()

    async def fail_interrupted() -> None:  # no tool run survives a restart (docs/handoffs.md)
        await runner.write(engine.fail_interrupted_tool_tasks)

    # plain writes, and the hot cached reads, HTTP and MCP, are answered before the guard and Falcon
    # when all they need is known (commonroom/front/, derived from the table); none of them streams.
    # A cached read at the head needs only the checked headers: the edge sends it at once.
    front = FrontDoor(StreamGuard(ingress_app, settings.write_timeout_seconds),
                      front_routes(table, INGRESS, engine, runner, answers, mcp))
    return (
        engine,
        Listener(OWNER, StreamGuard(owner_app, settings.write_timeout_seconds), owner_router, table,
                 owner_token_hash=owner_token_hash, console=ConsoleGate(engine), names=names),
        Listener(INGRESS, front, ingress_router, table, engine=engine, limiter=limiter, names=names, front=front),
        Hooks([stop_watching, scheduler.stop, hub.close, runner.close, engine.close, trimmer.stop],
              [fail_interrupted, scheduler.start, watch_file, warm_old_versions, trimmer.start], scheduler),
    )
