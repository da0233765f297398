"""Bringing a sidecar to the schema this code writes (:data:`SCHEMA_VERSION`), in one transaction.

:func:`migrate` runs when a :class:`~commonroom.store.db.Store` opens: a new
file gets every table and index and is stamped; an older one is upgraded in
place (:func:`upgrade`, history kept); a newer one is refused.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import peewee as pw

from ..errors import InvalidRequest
from .models import ACK_AUDIT_TEMPLATES, DUPLICATE_KEY_SEPARATOR, HANDOFF_TEMPLATES, Models, participant_key

__all__ = ["SCHEMA_VERSION", "UNREAD_INDEXES", "migrate", "older_sidecar", "stored_version", "upgrade"]

#: The schema version this code writes; stored in Meta so later code can migrate.
#: 1: the first sidecar. 2: participants are identified by ``name_key``
#: (NFKC, case-folded; unique) and invitations carry ``participant_key``
#: (:func:`upgrade`). 3: handoffs, their tasks and their own event
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


def migrate(db: pw.SqliteDatabase, models: Models, path: Path, create: bool = True,
            upgrade_older: bool = True) -> int | None:
    """Bring the sidecar to :data:`SCHEMA_VERSION` in one transaction; the version it was upgraded from (None: none).

    An older sidecar is upgraded in place (:func:`upgrade`; history is
    kept) only with ``upgrade_older`` (the room's writer, or ``ce sidecar
    compact``; never a reader: a room of the older release may be running
    on it); without it, ``InvalidRequest`` says that the room upgrades it.
    With ``create`` missing tables are created and a new file is stamped;
    ``create=False`` (a read-only open) writes nothing to a current
    sidecar. ``RuntimeError`` when the file is newer than this code.
    """
    Meta = models.Meta
    if not create or not upgrade_older:
        found = stored_version(db)
        if found is not None and found < SCHEMA_VERSION and not upgrade_older:
            raise older_sidecar(path, found)
        if not create and found in (None, SCHEMA_VERSION):
            return None  # a read-only open of a current sidecar takes no write lock
    with db.atomic("IMMEDIATE"):
        version = stored_version(db)
        if version is not None and version > SCHEMA_VERSION:
            raise RuntimeError(
                f"{path} has schema version {version}; this commonroom knows "
                f"{SCHEMA_VERSION}. Upgrade commonroom."
            )
        if version is not None and version < SCHEMA_VERSION:
            upgrade(db, models, version)
        if create:
            db.create_tables(models.all, safe=True)
            _ack_index(db)
            _history_indexes(db)
            _summary_indexes(db)
            if version is None:
                Meta.create(key="schema_version", value=str(SCHEMA_VERSION))
                _board_secret(db)
    return version if version is not None and version < SCHEMA_VERSION else None


def older_sidecar(path: Path, version: int) -> InvalidRequest:
    """The answer of a reader (or an offline write) to a sidecar of an older schema: left as it is."""
    document = path.name.removesuffix(".commonroom.db")
    return InvalidRequest(
        f"{path} has schema version {version}, older than this commonroom's {SCHEMA_VERSION}; it is left as "
        f"it is (a room of the older commonroom may be serving it). The room upgrades it when it starts "
        f"(ce serve {document}), or ce sidecar compact {document} does now, with no room running",
        details={"sidecar": str(path), "schema_version": version, "current": SCHEMA_VERSION})

def stored_version(db: pw.SqliteDatabase) -> int | None:
    """The sidecar's ``schema_version`` (None: a new file)."""
    if not db.table_exists("meta"):
        return None
    row = db.execute_sql('SELECT "value" FROM "meta" WHERE "key" = ?', ("schema_version",)).fetchone()
    return None if row is None else int(row[0])

def _columns(db: pw.SqliteDatabase, table: str) -> set[str]:
    return {row[1] for row in db.execute_sql(f'PRAGMA table_info("{table}")').fetchall()}

def upgrade(db: pw.SqliteDatabase, models: Models, version: int) -> None:
    """Upgrade a sidecar of ``version`` to :data:`SCHEMA_VERSION` (inside the transaction).

    1 → 2: ``participant.name_key`` and ``invitation.participant_key``
    are added and filled with :func:`~commonroom.store.models.participant_key`
    of the names; ``name_key`` gets its unique index. If two participants
    already share a key (``Ana`` and ``ana`` joined before keys existed),
    both are kept with their sessions and history: the earliest
    (``created_at``, then insertion order) takes the key and so every new invitation
    for the name; each later one is keyed ``<key>\\x1f<id>``, which no
    invitation can produce. Each step is skipped when already done.

    5 → 6 and 6 → 7: the indexes of :func:`_history_indexes`; nothing else changes.
    7 → 8: the :data:`UNREAD_INDEXES` are dropped; nothing else changes.
    8 → 9: the indexes of :func:`_summary_indexes`; nothing else changes.
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
        if db.table_exists("participant"):
            if "name_key" not in _columns(db, "participant"):
                db.execute_sql('ALTER TABLE "participant" ADD COLUMN "name_key" TEXT NOT NULL DEFAULT \'\'')
            taken: set[str] = set()
            rows = db.execute_sql(
                'SELECT "id", "name" FROM "participant" ORDER BY "created_at", rowid').fetchall()
            for participant_id, name in rows:
                key = participant_key(name)
                if key in taken:
                    key = f"{key}{DUPLICATE_KEY_SEPARATOR}{participant_id}"
                taken.add(key)
                db.execute_sql('UPDATE "participant" SET "name_key" = ? WHERE "id" = ?',
                                    (key, participant_id))
            db.execute_sql(
                'CREATE UNIQUE INDEX IF NOT EXISTS "participant_name_key" ON "participant" ("name_key")')
        if db.table_exists("invitation"):
            if "participant_key" not in _columns(db, "invitation"):
                db.execute_sql(
                    'ALTER TABLE "invitation" ADD COLUMN "participant_key" TEXT NOT NULL DEFAULT \'\'')
            for invitation_id, name in db.execute_sql(
                    'SELECT "id", "participant_name" FROM "invitation"').fetchall():
                db.execute_sql('UPDATE "invitation" SET "participant_key" = ? WHERE "id" = ?',
                                    (participant_key(name), invitation_id))
            db.execute_sql('CREATE INDEX IF NOT EXISTS "invitation_participant_key" '
                                'ON "invitation" ("participant_key")')
    if version < 3:
        names = {t.__name__ for t in HANDOFF_TEMPLATES}
        db.create_tables([m for m in models.all if m.__name__ in names], safe=True)
    if version < 4:
        # 2 or 3 → 4 (boards): new tables only, so it applies the same after the
        # handoffs step (3) or straight from 2; every part is IF NOT EXISTS / OR IGNORE.
        db.create_tables([models.Board, models.BoardMessage], safe=True)
        _board_secret(db)
    if version < 5:
        # 4 → 5 (ACK and audit): new tables and an index only; IF NOT EXISTS throughout.
        names = {t.__name__ for t in ACK_AUDIT_TEMPLATES}
        db.create_tables([m for m in models.all if m.__name__ in names], safe=True)
        _ack_index(db)
    if version < 7:  # 5 → 6 and 6 → 7: indexes only (IF NOT EXISTS)
        _history_indexes(db)
    if version < 8:  # 7 → 8: indexes only (IF EXISTS)
        for index in UNREAD_INDEXES:
            db.execute_sql(f'DROP INDEX IF EXISTS "{index}"')
    if version < 9:  # 8 → 9: indexes only (IF NOT EXISTS)
        _summary_indexes(db)
    if version < 10 and db.table_exists("version") and "packed" not in _columns(db, "version"):
        # 9 → 10: one nullable column; the text checkpoints stay as they are and are read as such
        db.execute_sql('ALTER TABLE "version" ADD COLUMN "packed" BLOB')
    db.execute_sql('INSERT OR REPLACE INTO "meta" ("key", "value") VALUES (?, ?)',
                        ("schema_version", str(SCHEMA_VERSION)))

def _ack_index(db: pw.SqliteDatabase) -> None:
    """The indexes every tool call's piggyback probes use (schema 5).

    ``board_message_ack``: a session's open ``requires_ack`` messages;
    ``event_session``: a session's recent events in the ring
    (``peer_awareness``).
    """
    db.execute_sql('CREATE INDEX IF NOT EXISTS "board_message_ack" ON "board_message" '
                        '("board_session_id", "seq") WHERE "requires_ack" = 1 AND "status" = \'open\'')
    db.execute_sql('CREATE INDEX IF NOT EXISTS "event_session" ON "event" ("session_id", "created_at")')

def _history_indexes(db: pw.SqliteDatabase) -> None:
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
    db.execute_sql('CREATE INDEX IF NOT EXISTS "lease_open" ON "lease" ("expires_at") '
                        'WHERE "released_at" IS NULL AND "expired_at" IS NULL')
    db.execute_sql('CREATE INDEX IF NOT EXISTS "proposal_created" ON "proposal" ("created_at", "id")')
    db.execute_sql('CREATE INDEX IF NOT EXISTS "handoff_created" ON "handoff" ("created_at", "id")')
    db.execute_sql('CREATE INDEX IF NOT EXISTS "task_status_created" ON "task" ("status", "created_at")')
    db.execute_sql('CREATE INDEX IF NOT EXISTS "task_status_updated" ON "task" ("status", "last_updated_at")')

def _summary_indexes(db: pw.SqliteDatabase) -> None:
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
        db.execute_sql(statement)

def _board_secret(db: pw.SqliteDatabase) -> None:
    """Mint the key that signs board observation tokens, once (inside the transaction)."""
    db.execute_sql('INSERT OR IGNORE INTO "meta" ("key", "value") VALUES (?, ?)',
                        ("board_token_secret", secrets.token_hex(32)))
