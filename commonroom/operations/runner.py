"""Running operations: reads on the event loop, every write on the one writer thread.

The room is the single writer of its sidecar. :class:`Runner` keeps one
thread for every state change, so the event loop never waits on SQLite's
``BEGIN IMMEDIATE`` or on fsync: streams, heartbeats and reads keep
flowing while a commit syncs. Read-only operations are served from the
engine's caches on the loop itself (a thread hop would cost more than
they do). Events a write emits are handed to the hub from the writer
thread (``Hub.publish`` defers to the loop), and the write's answer
reaches the loop after them, so a caller that observes sees its own
event no later than its answer.
"""

from __future__ import annotations

import asyncio
import atexit
import inspect
import logging
import queue
import threading
from concurrent.futures import Future
from typing import Any

from ..engine.board_acks import AUDITED
from ..errors import CommonroomError
from .spec import Operation

log = logging.getLogger("commonroom.operations")

#: Most writes one group commit takes from the queue.
MAX_BATCH = 64


def integral(value: Any) -> Any:
    """``value`` with every integral float (``782.0``) made an ``int``, recursively.

    JSON Schema counts ``782.0`` as an integer, and no input property of
    the table is a non-integer number, so an input that passed its schema
    carries integers only; this hands them to the engine as ``int``.
    """
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [integral(v) for v in value]
    return value


def _outcome(fn: Any, args: tuple) -> tuple[bool, Any]:
    """``(True, fn(*args))``, or ``(False, the exception it raised)``.

    A ``StopIteration`` is handed over as the ``RuntimeError`` it causes
    (an asyncio future refuses to hold one, and the answers after it in
    the same hand-over would be lost).
    """
    try:
        return True, fn(*args)
    except StopIteration as exc:
        error = RuntimeError("a write raised StopIteration")
        error.__cause__ = exc
        return False, error
    except BaseException as exc:  # handed to the caller's future
        return False, exc


def _settle(answers: list[tuple[asyncio.Future, bool, Any]]) -> None:
    """On the callers' loop: resolve each future unless its caller gave up."""
    for future, ok, value in answers:
        if future.done():
            continue
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)


class Runner:
    """Runs :class:`Operation` calls for one engine (see the module docstring)."""

    def __init__(self, engine: Any, *, group_commit: bool = True):
        self.engine = engine
        #: Jobs for the writer thread, in arrival order: ``(fn, args, loop, future, alone)``
        #: (``alone``: never in a group commit; ``loop`` None: ``future`` is a
        #: ``concurrent.futures.Future``), or None to stop it.
        self._jobs: queue.SimpleQueue[tuple | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._closed = False
        #: Audit rows waiting for their write, and that write (group commit: the calls
        #: that finish while the writer is busy share one transaction).
        self._audit_lock = threading.Lock()
        self._audit_batch: list[tuple] | None = None
        self._audit_future: Any = None
        self.group_commit = group_commit
        #: Transactions run by the writer queue and the writes they carried (for benchmarks).
        self.stats = {"transactions": 0, "writes": 0}

    async def run(self, op: Operation, actor: Any, values: dict[str, Any]) -> Any:
        """The engine's answer to ``op`` with the validated input ``values``.

        Raises whatever the engine raises (``CommonroomError`` subclasses).
        """
        values = integral(values)
        if op.name in AUDITED and hasattr(self.engine, "record_board_audit"):
            try:
                result = await self._run(op, actor, values)
            except CommonroomError as exc:
                await self._audit(actor, op.name, exc.code, values, None)
                raise
            await self._audit(actor, op.name, "ok", values, result)
            return result
        return await self._run(op, actor, values)

    async def _audit(self, actor: Any, operation: str, outcome: str, values: dict[str, Any], result: Any) -> None:
        """One audit row (metadata only), committed with the others pending; a failure is logged, never the call's."""
        with self._audit_lock:
            if self._audit_batch is None:
                batch: list[tuple] = []
                loop = asyncio.get_running_loop()
                pending = loop.create_future()
                try:
                    self._submit((self._flush_audit, (batch,), loop, pending, True))
                except RuntimeError:  # the writer is closed (the room is stopping): no row, as any failure
                    log.warning("board audit of %s not recorded: the writer is closed", operation)
                    return
                self._audit_batch, self._audit_future = batch, pending
            self._audit_batch.append((actor, operation, outcome, values, result))
            future = self._audit_future
        try:
            await asyncio.shield(future)
        except Exception:
            log.exception("board audit of %s failed", operation)

    def _flush_audit(self, batch: list[tuple]) -> None:
        """On the writer thread: close ``batch`` to new rows, then write it in one transaction."""
        with self._audit_lock:
            if self._audit_batch is batch:
                self._audit_batch = None
        self.engine.record_board_audits(batch)

    async def _run(self, op: Operation, actor: Any, values: dict[str, Any]) -> Any:
        if op.read_only:
            result = op.bind(self.engine, actor, values)
            if inspect.isawaitable(result):  # a read that may wait (observe_session_messages)
                result = await result
            return result
        return await self.write(op.bind, self.engine, actor, values)

    async def write(self, fn: Any, *args: Any) -> Any:
        """Run ``fn(*args)`` on the writer thread and await its result.

        Group commit: writes that arrive while the writer is busy (a commit
        syncing) wait in a queue; the writer then runs all of them (up to
        :data:`MAX_BATCH`) in one transaction (:meth:`Store.batch`), each in
        its own savepoint, so each is still its own version and event, one
        failing leaves the others, and each caller gets its answer only
        after that transaction's fsync.
        """
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._submit((fn, args, loop, future, False))
        return await future

    def _submit(self, job: tuple) -> None:
        """Queue ``job`` for the writer thread (``RuntimeError`` once closed).

        The thread starts on the first job, and again should it have died
        (it does not, short of a bug: :meth:`_run_guarded`), so no job waits
        for a thread that is gone. It is a daemon that an ``atexit`` hook
        closes (:meth:`close`: queued writes finish first), as
        ``concurrent.futures`` does for its workers: an interpreter that
        exits without ``close()`` neither drops a queued write nor hangs.
        """
        with self._start_lock:  # so no job lands behind close()'s stop
            if self._closed:
                raise RuntimeError("the writer is closed")
            if self._thread is None or not self._thread.is_alive():
                thread = threading.Thread(target=self._serve, name="commonroom-writer", daemon=True)
                thread.start()
                if self._thread is None:
                    atexit.register(self._close_at_exit)
                self._thread = thread
            self._jobs.put(job)

    def _serve(self) -> None:
        """The writer thread: wait for a job, take every other one queued by then (up to
        :data:`MAX_BATCH`), run them in order, and again until told to stop.

        A blocking ``SimpleQueue.get`` is the whole hand-over: the loop's ``put``
        wakes this thread at once, and it releases the GIL while it waits (a
        ``ThreadPoolExecutor`` hop costs about twice as much a round trip).
        """
        jobs = self._jobs
        while True:
            first = jobs.get()
            if first is None:
                return
            batch = [first]
            stop = False
            while len(batch) < MAX_BATCH:
                try:
                    job = jobs.get_nowait()
                except queue.Empty:
                    break
                if job is None:
                    stop = True
                    break
                batch.append(job)
            start = 0
            for end, job in enumerate(batch):  # an ``alone`` job runs by itself, in its place
                if job[4]:
                    if start < end:
                        self._run_guarded(batch[start:end])
                    self._run_guarded([job])
                    start = end + 1
            if start < len(batch):
                self._run_guarded(batch[start:])
            del first, batch, job  # nothing of a finished batch is held while the writer waits
            if stop:
                return

    def _run_guarded(self, batch: list[tuple]) -> None:
        """:meth:`_run_batch`; should it fail itself, its callers get the error and the writer goes on."""
        try:
            self._run_batch(batch)
        except BaseException as exc:  # _run_batch answers every failure it knows; this is for its own bugs
            log.exception("the writer failed on a batch of %d writes", len(batch))
            self._answer(batch, [(False, exc)] * len(batch))

    def _run_batch(self, batch: list[tuple]) -> None:
        store = getattr(self.engine, "store", None)
        outcomes: list[tuple[bool, Any]] = []
        if not batch[0][4]:  # writes (an audit flush or the close is not counted)
            self.stats["writes"] += len(batch)
            self.stats["transactions"] += 1 if self.group_commit else len(batch)
        if len(batch) == 1 or store is None or not self.group_commit:
            for job in batch:
                outcomes.append(_outcome(job[0], job[1]))
        else:
            outcomes = self._group(store, batch)
        self._answer(batch, outcomes)

    @staticmethod
    def _answer(batch: list[tuple], outcomes: list[tuple[bool, Any]]) -> None:
        """Hand each job of ``batch`` its outcome (a future already done is left as it is)."""
        # one hand-over per loop for the whole batch (a wake-up of the loop is a syscall on each side)
        by_loop: dict[Any, list[tuple[asyncio.Future, bool, Any]]] = {}
        for (_, _, loop, future, _), (ok, value) in zip(batch, outcomes):
            if loop is None:  # a call from another thread (close): its future is a concurrent one
                if not future.done():
                    future.set_result(value) if ok else future.set_exception(value)
            else:
                by_loop.setdefault(loop, []).append((future, ok, value))
        for loop, answers in by_loop.items():
            try:
                loop.call_soon_threadsafe(_settle, answers)
            except RuntimeError:  # that loop is closed: nobody waits for these answers
                pass

    def _group(self, store: Any, batch: list[tuple]) -> list[tuple[bool, Any]]:
        """The outcomes of ``batch`` run in one transaction (:meth:`Store.batch`).

        When that transaction cannot commit, none of its writes happened: a
        write that failed on its own (its savepoint rolled back, nothing of it
        in the transaction) keeps its own error; every other one gets what
        its writes ask for (:meth:`Batch.lost`: a board completion's
        ``completion_persistence_uncertain``), else the commit's error. When
        the batch was refused before any write ran, each runs on its own
        instead and answers as it would alone.
        """
        outcomes: list[tuple[bool, Any]] = []
        spans: list[tuple[int, int]] = []
        group = None
        try:
            with store.batch() as group:
                for fn, args, *_ in batch:
                    start = len(group.done)
                    outcomes.append(_outcome(fn, args))
                    spans.append((start, len(group.done)))
        except BaseException as exc:  # the commit failed: none of the batch's writes happened
            log.exception("a group commit of %d writes failed", len(batch))
            if group is None or not outcomes:
                return [_outcome(fn, args) for fn, args, *_ in batch]
            lost: list[tuple[bool, Any]] = []
            for (ok, value), (start, end) in zip(outcomes, spans):
                alone = not ok and start == end
                lost.append((False, value if alone else group.lost(start, end, exc)))
            return lost
        return outcomes

    def close(self) -> None:
        """Finish queued writes, close the writer thread's connection, stop the thread (once; a second call returns)."""
        with self._start_lock:
            thread, closed, self._closed = self._thread, self._closed, True
        if closed or thread is None:
            return  # closed already, or no write ran: the writer has no connection of its own
        atexit.unregister(self._close_at_exit)
        done: Future = Future()
        self._jobs.put((self._close_connection, (), None, done, True))
        self._jobs.put(None)
        try:
            done.result(timeout=30)
        except Exception:  # shutting down: the engine closes its own connection next
            pass
        thread.join()

    def _close_at_exit(self) -> None:
        try:
            self.close()
        except Exception:  # pragma: no cover - exiting anyway
            log.exception("closing the writer at exit failed")

    def _close_connection(self) -> None:
        db = getattr(getattr(self.engine, "store", None), "db", None)
        if db is not None and not db.is_closed():
            db.close()
