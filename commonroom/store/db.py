"""Opening the sidecar and the one write path (DESIGN.md; STYLE.md habit 4).

``Store.write(fn)`` is the only way state changes: it opens ``BEGIN
IMMEDIATE``, calls ``fn(ctx)``, appends the events ``fn`` emitted through
``ctx.emit`` in the same transaction, trims the ring to :data:`RING_SIZE`
rows, commits, and only then hands the committed events to the live hub
(``publish``), which never blocks the commit.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar

import peewee as pw

from . import faults, migrations
from .migrations import SCHEMA_VERSION  # noqa: F401 - the store package's name for it
from .models import Models

T = TypeVar("T")

#: Field classes whose ``db_value`` of a ``str`` is that ``str`` (``Store.insert`` skips the call).
_PLAIN_TEXT = (pw.TextField, pw.CharField)
#: Events kept in the ring (seed protocol.txt, Persistence).
RING_SIZE = 2000

#: ``page_size`` first: it takes effect only on a new, empty file (an existing sidecar keeps
#: the size it was created with; in WAL mode SQLite cannot change it). A commit appends
#: every page it changed to the WAL and fsyncs it, so the page is the unit a write pays
#: for: a lease write changes ~7-10 pages, 40 KB at 4 KB a page, 10 KB at 1 KB, and
#: the fsync of the smaller append is the faster (docs/performance.md, *Small pages*).
#: The WAL's size the room gives back past (bytes): ``journal_size_limit`` truncates the WAL
#: to it whenever a checkpoint starts it over, and :meth:`Store.give_back_wal` truncates a
#: WAL grown past it (a long-lived reader kept it from being checkpointed) once no reader
#: holds it. Twice what the automatic checkpoint lets it reach (1,000 pages of 1 KiB and
#: their frame headers), so a busy room never truncates and regrows it.
WAL_LIMIT = 2 << 20

PRAGMAS = {
    "page_size": 1024,
    "journal_mode": "wal",
    "synchronous": "full",
    "foreign_keys": 1,
    "busy_timeout": 10000,
    "journal_size_limit": WAL_LIMIT,
}


def sidecar_path(document: Path) -> Path:
    """``<file>.commonroom.db`` beside the document."""
    return document.with_name(document.name + ".commonroom.db")


@dataclass
class WriteContext:
    """Handed to a write function: ``emit`` appends an event in the transaction."""

    store: "Store"
    events: list[dict[str, Any]] = field(default_factory=list)
    after_commit: list[Callable[[], None]] = field(default_factory=list)
    #: run as soon as this write's own part is done (its savepoint released, in a
    #: batch; before ``after_commit`` otherwise): stage state the next write of the
    #: same batch must see (:meth:`Store.stage`), never anything durable
    on_release: list[Callable[[], None]] = field(default_factory=list)
    #: what this write's caller is told instead of the commit's own error when the
    #: commit that carries it fails after the write returned (a group commit,
    #: :meth:`Batch.lost`); None: that error as it is
    on_commit_failure: Callable[[BaseException], BaseException] | None = None

    def emit(
        self,
        type: str,
        payload: dict[str, Any],
        *,
        participant_id: str | None = None,
        session_id: str | None = None,
        time: str | None = None,
    ) -> dict[str, Any]:
        """Insert one event row (same transaction); returns its wire dict.

        ``time``: the event's RFC 3339 stamp when the write has read the
        clock already (one reading for the whole write); else now.
        """
        created_at = time if time is not None else self.store.clock.stamp()
        event_id = self.store.insert(
            self.store.models.Event,
            type=type,
            created_at=created_at,
            participant_id=participant_id,
            session_id=session_id,
            payload=payload,
        )
        event = event_wire(event_id, type, created_at, participant_id, session_id, payload)
        self.events.append(event)
        return event


@dataclass
class Batch:
    """The writes of one group commit (:meth:`Store.batch`): its thread, the writes done, staged state."""

    thread: int
    done: list[WriteContext] = field(default_factory=list)
    staged: dict[str, Any] = field(default_factory=dict)
    #: The id of the newest event its writes appended (the ring is trimmed to it once, before the commit).
    newest_event: int | None = None

    def lost(self, start: int, end: int, exc: BaseException) -> BaseException:
        """What the caller of the writes ``done[start:end]`` is told when the batch's commit failed with ``exc``.

        The first of those writes' ``on_commit_failure`` decides (a board
        completion answers ``completion_persistence_uncertain``); else ``exc``.
        """
        for ctx in self.done[start:end]:
            if ctx.on_commit_failure is not None:
                told = ctx.on_commit_failure(exc)
                told.__cause__ = exc
                return told
        return exc


def event_wire(event_id: int, type: str, time: str, participant_id: str | None,
               session_id: str | None, payload: dict[str, Any]) -> dict[str, Any]:
    """The wire form of an event (schema ``events.json#/$defs/Event``)."""
    return {
        "id": event_id,
        "type": type,
        "time": time,
        "actor": {"participant_id": participant_id, "session_id": session_id},
        "payload": payload,
    }


def event_dict(row: Any) -> dict[str, Any]:
    """The wire form of an event row."""
    return event_wire(row.id, row.type, row.created_at, row.participant_id, row.session_id, row.payload)


class Store:
    """The sidecar database of one room.

    ``publish`` (events → None) is called after each commit with the events it
    appended; the room process points it at the live hub. Each of
    ``watchers`` (events → None) is called first, on the writer thread, before
    the write is acknowledged (the engine's session cache listens there). ``models`` holds
    this store's own model classes (:class:`~commonroom.store.models.Models`,
    bound to ``db`` and to nothing else), so two stores in one process are
    independent. Reads may use ``store.models`` directly; writes go through
    :meth:`write` only.
    """

    def __init__(self, path: Path, clock: Any, publish: Callable[[list[dict]], None] | None = None,
                 *, migrate: bool = True, upgrade: bool = True):
        """Open (creating if needed) the SQLite file at ``path``.

        ``clock`` stamps events (``stamp() -> str``); ``migrate`` creates
        the tables; ``upgrade`` upgrades an older sidecar (else it is
        ``InvalidRequest``, the file left as it is; :func:`~commonroom.store.migrations.migrate`;
        ``RuntimeError`` when the file is newer than this code);
        ``StorageUnavailable`` when the disk will not let it be opened (full: SQLite
        cannot make its ``-shm`` and ``-wal``), else ``peewee.OperationalError``.
        ``upgraded_from``: the schema version it was upgraded from (None: none).
        """
        self.path = Path(path)
        self.clock = clock
        self.publish = publish
        self.watchers: list[Callable[[list[dict]], None]] = []
        self.db = pw.SqliteDatabase(str(self.path), pragmas=PRAGMAS, check_same_thread=False)
        self.models = Models(self.db)
        self._lock = threading.RLock()
        #: (model, columns) → (its INSERT, each column's db_value, whether each is plain text)
        self._insert_plans: dict[tuple, tuple[str, tuple[Callable[[Any], Any], ...], tuple[bool, ...]]] = {}
        self._batch: Batch | None = None
        try:
            self.db.connect(reuse_if_open=True)
            self.upgraded_from = migrations.migrate(self.db, self.models, self.path, create=migrate,
                                                    upgrade_older=upgrade)
        except pw.OperationalError as exc:
            self.db.close()
            raise faults.unopenable(self.path, exc) from None
        #: Disk faults (:mod:`commonroom.store.faults`): the files this store has open,
        #: the fault that stopped its writes (None: none), and what to do when one starts.
        self.watch = faults.FileWatch(self.path)
        self.fault: str | None = None
        self.on_fault: Callable[[str], None] | None = None

    def meta(self, key: str, default: str | None = None) -> str | None:
        """A Meta value (or ``default``)."""
        Meta = self.models.Meta
        row = Meta.get_or_none(Meta.key == key)
        return default if row is None else row.value

    def set_meta(self, key: str, value: str) -> None:
        """Set a Meta value; call inside :meth:`write`."""
        self.models.Meta.insert(key=key, value=value).on_conflict_replace().execute()

    def write(self, fn: Callable[[WriteContext], T]) -> T:
        """Run ``fn`` in one ``BEGIN IMMEDIATE`` transaction; publish after commit.

        After the commit, ``ctx.after_commit`` hooks run in order (the file
        on disk follows the head there), then the events are published.

        Exceptions from ``fn`` roll everything back (events included) and
        propagate unchanged, except a commit the disk refused, which is
        ``StorageUnavailable`` (:mod:`commonroom.store.faults`; also when the
        sidecar's files were deleted or replaced under the store).
        """
        with self._lock:
            ctx = WriteContext(self)
            batch = self._batch
            if batch is not None and batch.thread == threading.get_ident():
                # a savepoint inside the batch's transaction (the files were checked as it began;
                # disk faults surface at its commit; the event ring is trimmed once, before it)
                result = self._savepoint(fn, ctx)
                if ctx.events:
                    batch.newest_event = ctx.events[-1]["id"]
                for hook in ctx.on_release:
                    hook()
                batch.done.append(ctx)
                return result
            faults.check(self)
            with faults.refusing(self):
                with self.db.atomic("IMMEDIATE"):
                    result = fn(ctx)
                    if ctx.events:
                        self._trim(ctx.events[-1]["id"])
            for hook in ctx.on_release:
                hook()
            self._finish(ctx)
            return result

    def _finish(self, ctx: WriteContext) -> None:
        """After the commit: the watchers, ``ctx``'s hooks in order, then its events to the hub."""
        if ctx.events:
            for watcher in self.watchers:
                watcher(ctx.events)
        for hook in ctx.after_commit:
            hook()
        if ctx.events and self.publish is not None:
            self.publish(ctx.events)

    @contextmanager
    def batch(self) -> Iterator[Batch]:
        """Group commit: every :meth:`write` on this thread inside shares one transaction; yields the :class:`Batch`.

        Each write runs in its own savepoint (a write that raises rolls back
        alone and its exception reaches its caller; the others stay). The
        transaction commits when the block ends; only then do the writes'
        ``after_commit`` hooks run and their events get published, write by
        write in order. If the commit fails, every write of the batch is
        lost together and the exception propagates from here (what each
        write's caller is told instead: :meth:`Batch.lost`). State staged
        with :meth:`stage` is visible to this thread only, until the block ends.
        """
        with self._lock:
            batch = Batch(threading.get_ident())
            self._batch = batch
            try:
                faults.check(self)
                with faults.refusing(self):
                    with self.db.atomic("IMMEDIATE"):
                        yield batch
                        if batch.newest_event is not None:
                            self._trim(batch.newest_event)
            finally:
                self._batch = None
            for ctx in batch.done:
                self._finish(ctx)

    def stage(self, key: str, value: Any) -> None:
        """Inside :meth:`batch`: ``value`` is what :meth:`staged` answers for ``key`` until it ends."""
        batch = self._batch
        if batch is not None and batch.thread == threading.get_ident():
            batch.staged[key] = value

    def staged(self, key: str) -> Any:
        """The value staged for ``key`` by an earlier write of the running batch (this thread only), or None."""
        batch = self._batch
        if batch is None or batch.thread != threading.get_ident():
            return None
        return batch.staged.get(key)

    def _savepoint(self, fn: Callable[[WriteContext], T], ctx: WriteContext) -> T:
        """``fn(ctx)`` in a savepoint on this thread's transaction: released when it returns, rolled back to if it raises.

        Every batched write's savepoint has the same name: SQLite keeps
        savepoints as a stack, and ``RELEASE`` / ``ROLLBACK TO`` a name act
        on the newest savepoint of that name, so a write nested in another
        pairs with its own. A fresh name per write (as before, and as
        peewee's ``atomic()`` does) made two new statements per write for
        SQLite to prepare (~7 µs each) and pushed the write path's own
        statements out of the connection's statement cache. A plain call,
        not a context manager: the generator one cost every write ~3 µs.
        """
        execute = self.db.execute_sql
        execute('SAVEPOINT "write"')
        try:
            result = fn(ctx)
        except BaseException:
            execute('ROLLBACK TO SAVEPOINT "write"')
            execute('RELEASE SAVEPOINT "write"')
            raise
        execute('RELEASE SAVEPOINT "write"')
        return result

    def _trim(self, newest: int) -> None:
        self.db.execute_sql('DELETE FROM "event" WHERE "id" <= ?', (newest - RING_SIZE,))

    def insert(self, model: type[pw.Model], **values: Any) -> Any:
        """``INSERT`` one row of ``model`` (inside :meth:`write`); returns the rowid.

        Same columns and conversions as ``model.create`` (each field's
        ``db_value``) without building the query each time: the statement is
        cached per model and column set. Used on the commit path.
        """
        key = (model, tuple(values))
        plan = self._insert_plans.get(key)
        if plan is None:
            fields = [model._meta.fields[name] for name in values]
            columns = ", ".join(f'"{f.column_name}"' for f in fields)
            marks = ", ".join("?" for _ in fields)
            plan = self._insert_plans[key] = (
                f'INSERT INTO "{model._meta.table_name}" ({columns}) VALUES ({marks})',
                tuple(f.db_value for f in fields),
                # a plain text column stores a str as it is (its db_value is the identity then)
                tuple(type(f) in _PLAIN_TEXT for f in fields))
        sql, converters, plain = plan
        params = [value if text and type(value) is str else convert(value)
                  for value, convert, text in zip(values.values(), converters, plain)]
        return self.db.execute_sql(sql, params).lastrowid

    def update(self, model: type[pw.Model], key: Any, **values: Any) -> None:
        """``UPDATE`` the row of ``model`` whose primary key is ``key`` (inside :meth:`write`)."""
        fields = model._meta.fields
        sets = ", ".join(f'"{fields[name].column_name}" = ?' for name in values)
        params = [fields[name].db_value(value) for name, value in values.items()]
        pk = model._meta.primary_key
        assert isinstance(pk, pw.Field), f"{model.__name__} has a primary key"
        self.db.execute_sql(
            f'UPDATE "{model._meta.table_name}" SET {sets} WHERE "{pk.column_name}" = ?', [*params, pk.db_value(key)]
        )

    def last_event_id(self) -> int:
        """The newest event id ever appended (0 when none); survives trimming."""
        cursor = self.db.execute_sql("SELECT seq FROM sqlite_sequence WHERE name = 'event'")
        row = cursor.fetchone()
        return int(row[0]) if row else 0

    def vacuum(self) -> None:
        """``VACUUM`` the sidecar, then truncate its WAL (``Engine.sidecar_compact``).

        Runs on this store's connection outside any transaction (call it from
        the writer, after a commit: an ``after_commit`` hook); readers on
        other connections go on meanwhile (WAL). The WAL is truncated only if
        no reader holds it at that moment (else it is left for the next
        checkpoint).
        """
        with self._lock:
            faults.check(self)
            self.db.execute_sql("VACUUM")
            self.db.execute_sql("PRAGMA wal_checkpoint(TRUNCATE)")

    def give_back_wal(self) -> bool:
        """Truncate the WAL when it has grown past :data:`WAL_LIMIT` and no reader holds it: True when it did.

        A reader that keeps a snapshot open (a long ``ce`` read, a backup)
        keeps every frame after it in the WAL; once it is gone, a
        ``wal_checkpoint(TRUNCATE)`` copies them into the sidecar and
        truncates the WAL to nothing. Run on the writer thread (a room
        timer): one ``stat`` when the WAL is small; the checkpoint does not
        wait (``busy_timeout`` 0 meanwhile) for a reader still there, it
        copies what it can and the next run tries again.
        """
        wal = self.path.with_name(self.path.name + "-wal")
        try:
            if os.stat(wal).st_size <= WAL_LIMIT:
                return False
        except FileNotFoundError:
            return False
        with self._lock:
            if self.fault is not None or self._batch is not None or self.db.in_transaction():
                return False
            self.db.execute_sql("PRAGMA busy_timeout = 0")
            try:
                busy = self.db.execute_sql("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            finally:
                self.db.execute_sql(f"PRAGMA busy_timeout = {PRAGMAS['busy_timeout']}")
        return not busy

    def close(self) -> None:
        """Close the connection (rescuing the sidecar first if it was deleted under the store)."""
        if not self.db.is_closed():
            with self._lock:
                faults.rescue_if_moved(self)
            self.db.close()
