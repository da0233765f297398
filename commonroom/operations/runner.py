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
import inspect
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..engine.board_acks import AUDITED
from ..errors import CommonroomError
from .spec import Operation

log = logging.getLogger("commonroom.operations")


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


class Runner:
    """Runs :class:`Operation` calls for one engine (see the module docstring)."""

    def __init__(self, engine: Any):
        self.engine = engine
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="commonroom-writer")
        #: Audit rows waiting for their write, and that write (group commit: the calls
        #: that finish while the writer is busy share one transaction).
        self._audit_lock = threading.Lock()
        self._audit_batch: list[tuple] | None = None
        self._audit_future: Any = None

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
                self._audit_batch = batch
                self._audit_future = asyncio.get_running_loop().run_in_executor(self._writer, self._flush_audit, batch)
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
        """Run ``fn(*args)`` on the writer thread and await its result."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._writer, fn, *args)

    def close(self) -> None:
        """Finish queued writes, close the writer thread's connection, stop the thread."""
        try:
            self._writer.submit(self._close_connection).result(timeout=30)
        except Exception:  # shutting down: the engine closes its own connection next
            pass
        self._writer.shutdown(wait=True)

    def _close_connection(self) -> None:
        db = getattr(getattr(self.engine, "store", None), "db", None)
        if db is not None and not db.is_closed():
            db.close()
