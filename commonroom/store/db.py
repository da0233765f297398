"""Opening the sidecar and the one write path (DESIGN.md; STYLE.md habit 4).

``Store.write(fn)`` is the only way state changes: it opens ``BEGIN
IMMEDIATE``, calls ``fn(ctx)``, appends the events ``fn`` emitted through
``ctx.emit`` in the same transaction, trims the ring to :data:`RING_SIZE`
rows, commits, and only then hands the committed events to the live hub
(``publish``), which never blocks the commit.
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar

import peewee as pw

from . import faults
from .models import ACK_AUDIT_TEMPLATES, DUPLICATE_KEY_SEPARATOR, HANDOFF_TEMPLATES, Models, participant_key

T = TypeVar("T")

#: The schema version this code writes; stored in Meta so later code can migrate.
#: 1: the first sidecar. 2: participants are identified by ``name_key``
#: (NFKC, case-folded; unique) and invitations carry ``participant_key``
#: (:meth:`Store._upgrade`). 3: handoffs, their tasks and their own event
#: lists (tables ``handoff``, ``task``, ``handoff_event``). 4: boards
#: (tables ``board`` and ``board_message``, Meta ``board_token_secret``).
#: 5: ACK state, the board audit log and peers (tables ``board_ack``, ``board_audit``,
#: ``peer_message``, ``peer_seen``; the index ``event_session``;
#: the partial index ``board_message_ack`` over open ``requires_ack`` messages).
#: 6: indexes only, so that no query of the write path or of a list scans the
#: whole history: ``lease_open`` (partial, over open leases), ``proposal_created``,
#: ``handoff_created`` (list order). 7: indexes only: ``task_status_created`` and
#: ``task_status_updated``, so the task TTL sweep reads only the tasks that are due.
#: 8: the lease indexes no query reads are dropped (``lease_session_id``,
#: ``lease_expires_at``; every lease read goes through ``lease_open`` or the
#: primary key), so an acquire changes two b-trees fewer.
#: 9: indexes only, for the two board summaries (one session's facts without a whole-table scan):
#: ``version_session``, ``proposal_session``, ``handoff_owner_session``, the partial
#: ``handoff_event_accepted`` (accept events by session) and ``board_message_author``
#: (messages with an ``author_session_id``).
#: 10: ``version.packed``, a checkpoint's text compressed (zlib); checkpoints stored as
#: text (``version.content``) before it are read as they are (docs/decisions.md).
SCHEMA_VERSION = 10
#: Indexes older sidecars have that no query reads (dropped by schema 8: each cost every
#: lease write a b-tree update).
UNREAD_INDEXES = ("lease_session_id", "lease_expires_at")
#: Field classes whose ``db_value`` of a ``str`` is that ``str`` (``Store.insert`` skips the call).
_PLAIN_TEXT = (pw.TextField, pw.CharField)
#: Events kept in the ring (seed protocol.txt, Persistence).
RING_SIZE = 2000

#: ``page_size`` first: it takes effect only on a new, empty file (an existing sidecar keeps
#: the size it was created with; in WAL mode SQLite cannot change it). A commit appends
#: every page it changed to the WAL and fsyncs it, so the page is the unit a write pays
#: for: a lease write changes ~7-10 pages, 40 KB at 4 KB a page, 10 KB at 1 KB, and
#: the fsync of the smaller append is the faster (docs/performance.md, *Small pages*).
PRAGMAS = {
    "page_size": 1024,
    "journal_mode": "wal",
    "synchronous": "full",
    "foreign_keys": 1,
    "busy_timeout": 10000,
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
                 *, migrate: bool = True):
        """Open (creating if needed) the SQLite file at ``path``.

        ``clock`` stamps events (``stamp() -> str``); ``migrate`` creates
        the tables; an older sidecar is upgraded either way (:meth:`_migrate`;
        ``RuntimeError`` when the file is newer than this code);
        ``peewee.OperationalError`` when the file cannot be opened.
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
        self.db.connect(reuse_if_open=True)
        self._migrate(create=migrate)
        #: Disk faults (:mod:`commonroom.store.faults`): the files this store has open,
        #: the fault that stopped its writes (None: none), and what to do when one starts.
        self.watch = faults.FileWatch(self.path)
        self.fault: str | None = None
        self.on_fault: Callable[[str], None] | None = None

    def _migrate(self, create: bool = True) -> None:
        """Bring the sidecar to :data:`SCHEMA_VERSION` in one transaction.

        An older sidecar is upgraded in place (:meth:`_upgrade`; history is
        kept); with ``create`` missing tables are created and a new file is
        stamped. ``create=False`` (a read-only open) still upgrades an older
        sidecar: this code cannot read the old layout. ``RuntimeError`` when
        the file is newer than this code.
        """
        Meta = self.models.Meta
        if not create and self._stored_version() in (None, SCHEMA_VERSION):
            return  # a read-only open of a current sidecar takes no write lock
        with self.db.atomic("IMMEDIATE"):
            version = self._stored_version()
            if version is not None and version > SCHEMA_VERSION:
                raise RuntimeError(
                    f"{self.path} has schema version {version}; this commonroom knows "
                    f"{SCHEMA_VERSION}. Upgrade commonroom."
                )
            if version is not None and version < SCHEMA_VERSION:
                self._upgrade(version)
            if create:
                self.db.create_tables(self.models.all, safe=True)
                self._ack_index()
                self._history_indexes()
                self._summary_indexes()
                if version is None:
                    Meta.create(key="schema_version", value=str(SCHEMA_VERSION))
                    self._board_secret()

    def _stored_version(self) -> int | None:
        """The sidecar's ``schema_version`` (None: a new file)."""
        if not self.db.table_exists("meta"):
            return None
        row = self.db.execute_sql('SELECT "value" FROM "meta" WHERE "key" = ?', ("schema_version",)).fetchone()
        return None if row is None else int(row[0])

    def _columns(self, table: str) -> set[str]:
        return {row[1] for row in self.db.execute_sql(f'PRAGMA table_info("{table}")').fetchall()}

    def _upgrade(self, version: int) -> None:
        """Upgrade a sidecar of ``version`` to :data:`SCHEMA_VERSION` (inside the transaction).

        1 → 2: ``participant.name_key`` and ``invitation.participant_key``
        are added and filled with :func:`~commonroom.store.models.participant_key`
        of the names; ``name_key`` gets its unique index. If two participants
        already share a key (``Ana`` and ``ana`` joined before keys existed),
        both are kept with their sessions and history: the earliest
        (``created_at``, then insertion order) takes the key and so every new invitation
        for the name; each later one is keyed ``<key>\\x1f<id>``, which no
        invitation can produce. Each step is skipped when already done.

        5 → 6 and 6 → 7: the indexes of :meth:`_history_indexes`; nothing else changes.
        7 → 8: the :data:`UNREAD_INDEXES` are dropped; nothing else changes.
        8 → 9: the indexes of :meth:`_summary_indexes`; nothing else changes.
        9 → 10: the column ``version.packed`` (compressed checkpoints) is
        added; every stored version is kept as it is (text checkpoints are
        read as text).

        4 → 5: ``board_ack``, ``board_audit``, ``peer_message``, ``peer_seen``
        and the partial index ``board_message_ack``; nothing else changes.

        2 → 3: the handoff tables (``handoff``, ``task``, ``handoff_event``)
        and their indexes are created; nothing else changes, so every
        version, event, participant and session is kept.
        """
        if version < 2:
            if self.db.table_exists("participant"):
                if "name_key" not in self._columns("participant"):
                    self.db.execute_sql('ALTER TABLE "participant" ADD COLUMN "name_key" TEXT NOT NULL DEFAULT \'\'')
                taken: set[str] = set()
                rows = self.db.execute_sql(
                    'SELECT "id", "name" FROM "participant" ORDER BY "created_at", rowid').fetchall()
                for participant_id, name in rows:
                    key = participant_key(name)
                    if key in taken:
                        key = f"{key}{DUPLICATE_KEY_SEPARATOR}{participant_id}"
                    taken.add(key)
                    self.db.execute_sql('UPDATE "participant" SET "name_key" = ? WHERE "id" = ?',
                                        (key, participant_id))
                self.db.execute_sql(
                    'CREATE UNIQUE INDEX IF NOT EXISTS "participant_name_key" ON "participant" ("name_key")')
            if self.db.table_exists("invitation"):
                if "participant_key" not in self._columns("invitation"):
                    self.db.execute_sql(
                        'ALTER TABLE "invitation" ADD COLUMN "participant_key" TEXT NOT NULL DEFAULT \'\'')
                for invitation_id, name in self.db.execute_sql(
                        'SELECT "id", "participant_name" FROM "invitation"').fetchall():
                    self.db.execute_sql('UPDATE "invitation" SET "participant_key" = ? WHERE "id" = ?',
                                        (participant_key(name), invitation_id))
                self.db.execute_sql('CREATE INDEX IF NOT EXISTS "invitation_participant_key" '
                                    'ON "invitation" ("participant_key")')
        if version < 3:
            names = {t.__name__ for t in HANDOFF_TEMPLATES}
            self.db.create_tables([m for m in self.models.all if m.__name__ in names], safe=True)
        if version < 4:
            # 2 or 3 → 4 (boards): new tables only, so it applies the same after the
            # handoffs step (3) or straight from 2; every part is IF NOT EXISTS / OR IGNORE.
            self.db.create_tables([self.models.Board, self.models.BoardMessage], safe=True)
            self._board_secret()
        if version < 5:
            # 4 → 5 (ACK and audit): new tables and an index only; IF NOT EXISTS throughout.
            names = {t.__name__ for t in ACK_AUDIT_TEMPLATES}
            self.db.create_tables([m for m in self.models.all if m.__name__ in names], safe=True)
            self._ack_index()
        if version < 7:  # 5 → 6 and 6 → 7: indexes only (IF NOT EXISTS)
            self._history_indexes()
        if version < 8:  # 7 → 8: indexes only (IF EXISTS)
            for index in UNREAD_INDEXES:
                self.db.execute_sql(f'DROP INDEX IF EXISTS "{index}"')
        if version < 9:  # 8 → 9: indexes only (IF NOT EXISTS)
            self._summary_indexes()
        if version < 10 and self.db.table_exists("version") and "packed" not in self._columns("version"):
            # 9 → 10: one nullable column; the text checkpoints stay as they are and are read as such
            self.db.execute_sql('ALTER TABLE "version" ADD COLUMN "packed" BLOB')
        self.db.execute_sql('INSERT OR REPLACE INTO "meta" ("key", "value") VALUES (?, ?)',
                            ("schema_version", str(SCHEMA_VERSION)))

    def _ack_index(self) -> None:
        """The indexes every tool call's piggyback probes use (schema 5).

        ``board_message_ack``: a session's open ``requires_ack`` messages;
        ``event_session``: a session's recent events in the ring
        (``peer_awareness``).
        """
        self.db.execute_sql('CREATE INDEX IF NOT EXISTS "board_message_ack" ON "board_message" '
                            '("board_session_id", "seq") WHERE "requires_ack" = 1 AND "status" = \'open\'')
        self.db.execute_sql('CREATE INDEX IF NOT EXISTS "event_session" ON "event" ("session_id", "created_at")')

    def _history_indexes(self) -> None:
        """Indexes that keep the write path and the lists off whole-history scans (schema 6).

        ``lease_open``: the open leases every commit moves and every lease
        change checks (without it each write scanned every lease ever
        taken, growing by two rows per acquire/release); ``proposal_created``
        and ``handoff_created``: the lists' order (``created_at``, ``id``),
        so a page reads ``limit`` rows instead of sorting the table.
        ``task_status_created`` and ``task_status_updated`` (schema 7): the
        task TTL sweep's two reads (active tasks created, terminal tasks last
        updated, before a horizon), which loaded every task of the last 24 h
        once a minute before.
        """
        self.db.execute_sql('CREATE INDEX IF NOT EXISTS "lease_open" ON "lease" ("expires_at") '
                            'WHERE "released_at" IS NULL AND "expired_at" IS NULL')
        self.db.execute_sql('CREATE INDEX IF NOT EXISTS "proposal_created" ON "proposal" ("created_at", "id")')
        self.db.execute_sql('CREATE INDEX IF NOT EXISTS "handoff_created" ON "handoff" ("created_at", "id")')
        self.db.execute_sql('CREATE INDEX IF NOT EXISTS "task_status_created" ON "task" ("status", "created_at")')
        self.db.execute_sql('CREATE INDEX IF NOT EXISTS "task_status_updated" ON "task" ("status", "last_updated_at")')

    def _summary_indexes(self) -> None:
        """The indexes the two board summaries read one session's facts through (schema 9).

        ``session_handoff_summary`` counts and pages a session's versions
        (``version_session``), proposals (``proposal_session``), the
        handoffs it created (``handoff_owner_session``) or accepted
        (``handoff_event_accepted``, partial) and the messages recorded
        under it (``board_message_author``, partial: only messages with an
        ``author_session_id`` pay for it). Without them each summary scanned
        every version, proposal and message of the room.
        """
        for statement in (
                'CREATE INDEX IF NOT EXISTS "version_session" ON "version" ("session_id", "number")',
                'CREATE INDEX IF NOT EXISTS "proposal_session" ON "proposal" ("session_id", "created_at")',
                'CREATE INDEX IF NOT EXISTS "handoff_owner_session" ON "handoff" ("owner_session_id")',
                'CREATE INDEX IF NOT EXISTS "handoff_event_accepted" ON "handoff_event" ("session_id") '
                'WHERE "type" = \'handoff.accepted\'',
                'CREATE INDEX IF NOT EXISTS "board_message_author" ON "board_message" ("author_session_id", '
                '"created_at") WHERE "author_session_id" IS NOT NULL'):
            self.db.execute_sql(statement)

    def _board_secret(self) -> None:
        """Mint the key that signs board observation tokens, once (inside the transaction)."""
        self.db.execute_sql('INSERT OR IGNORE INTO "meta" ("key", "value") VALUES (?, ?)',
                            ("board_token_secret", secrets.token_hex(32)))

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
        """``VACUUM`` the sidecar, then truncate its WAL (issue 37; ``Engine.sidecar_compact``).

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

    def close(self) -> None:
        """Close the connection (rescuing the sidecar first if it was deleted under the store)."""
        if not self.db.is_closed():
            with self._lock:
                faults.rescue_if_moved(self)
            self.db.close()
