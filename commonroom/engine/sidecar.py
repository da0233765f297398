"""The sidecar as the operator sees it: its size by part, and compaction.

- :meth:`SidecarMixin.sidecar_report` (``GET /owner/sidecar``, ``ce sidecar
  size``): the file and its WAL, the pages each part takes (``versions``:
  the version table and its indexes less the stored checkpoints;
  ``checkpoints``: the whole texts stored; ``events``: the event ring;
  ``boards``: boards, their messages, ACKs, audit log and peer messages;
  ``other``: participants, sessions, invitations, leases, proposals,
  handoffs and tasks) and the free pages. Counted with SQLite's ``dbstat``
  table when the SQLite build has it, else estimated from the stored values.
- :meth:`SidecarMixin.sidecar_compact` (``POST /owner/sidecar/compact``,
  ``ce sidecar compact``): one write on the room's one writer (through the
  owner port when the room runs, else offline under the writer lock) that
  first rewrites checkpoints stored before schema 10 (whole texts every 64
  versions) as this code stores them (compressed, spaced by bytes: the
  others become hunks), then, once that is committed, runs ``VACUUM`` and
  truncates the WAL. Every version reads back the same; no event is
  appended (nothing a participant sees changes).
"""

from __future__ import annotations

import json
import logging
import os
import time
from typing import Any

import peewee as pw

from commonroom.generated.types.owner import SidecarCompaction, SidecarParts, SidecarReport

from .. import regions
from ..store import WriteContext
from ..store.models import stored_json
from .base import EngineBase
from .checkpoints import pack, unpack

log = logging.getLogger("commonroom.engine")

#: The tables of each reported part (their indexes count with them); the rest is ``other``.
PART_TABLES = {
    "versions": ("version",),
    "events": ("event",),
    "boards": ("board", "board_message", "board_ack", "board_audit", "peer_message", "peer_seen"),
}
#: Rows the compaction reads at a time.
_PAGE_ROWS = 256


class SidecarMixin(EngineBase):
    """``sidecar_report`` and ``sidecar_compact`` (the operator's; owner port or offline)."""

    def sidecar_report(self) -> SidecarReport:
        """The sidecar's size by part: ``owner.json#/$defs/SidecarReport`` (bytes; counts of rows)."""
        db = self.store.db
        path = self.store.path
        page_size = db.execute_sql("PRAGMA page_size").fetchone()[0]
        free = db.execute_sql("PRAGMA freelist_count").fetchone()[0] * page_size
        tables, exact = _table_bytes(db)
        checkpoints, text_checkpoints, stored = db.execute_sql(
            'SELECT COUNT(*), COUNT("content"), COALESCE(SUM(LENGTH("packed")), 0) '
            '+ COALESCE(SUM(LENGTH(CAST("content" AS BLOB))), 0) FROM "version" '
            'WHERE "content" IS NOT NULL OR "packed" IS NOT NULL').fetchone()
        parts: SidecarParts = {"versions": 0, "checkpoints": stored, "events": 0, "boards": 0, "other": 0}
        for table, size in tables.items():
            part = next((name for name, names in PART_TABLES.items() if table in names), "other")
            parts[part] += size  # type: ignore[literal-required]
        parts["versions"] = max(0, parts["versions"] - stored)
        wal = path.with_name(path.name + "-wal")
        return {
            "file_bytes": _size(path),
            "wal_bytes": _size(wal),
            "page_size": page_size,
            "free_bytes": free,
            "parts": parts,
            "versions": db.execute_sql('SELECT COUNT(*) FROM "version"').fetchone()[0],
            "checkpoints": checkpoints,
            "text_checkpoints": text_checkpoints,
            "events": db.execute_sql('SELECT COUNT(*) FROM "event"').fetchone()[0],
            "exact": exact,
        }

    def sidecar_compact(self) -> SidecarCompaction:
        """Repack old checkpoints, then ``VACUUM``: ``owner.json#/$defs/SidecarCompaction``.

        One write (the room's writer thread, or offline under the writer
        lock): checkpoints stored as text (before schema 10) are compressed,
        or become hunks where this code would not have stored them whole
        (:func:`~commonroom.engine.versions.checkpoint_due`); then, after
        the commit and outside any transaction, ``VACUUM`` and a truncating
        WAL checkpoint. Answers the report before and after, the
        checkpoints rewritten, whether ``VACUUM`` ran (false when it failed,
        e.g. on a full disk: logged; the repack stays committed) and the
        seconds it took.
        """
        started = time.monotonic()
        result: dict[str, Any] = {"before": self.sidecar_report(), "repacked": 0}

        def repack(ctx: WriteContext) -> dict[str, Any]:
            result["repacked"] = self._repack()

            def vacuum() -> None:  # an after-commit hook: it must not raise (the batch's other hooks follow)
                self._chain_at = None
                self._segments().reset()  # which versions are checkpoints changed
                try:
                    self.store.vacuum()
                    result["vacuumed"] = True
                except Exception as exc:  # the repack is committed; the file keeps its free pages
                    if isinstance(exc, pw.OperationalError):  # SQLite's own refusal (a full disk): its words say why
                        log.error("VACUUM of %s failed: %s", self.store.path, exc)
                    else:
                        log.exception("VACUUM of %s failed", self.store.path)
                    result["vacuumed"] = False
                result["after"] = self.sidecar_report()
                result["seconds"] = round(time.monotonic() - started, 3)

            ctx.after_commit.append(vacuum)
            return result

        self.store.write(repack)
        return result  # type: ignore[return-value]  # filled in by the hook, after the commit

    def _repack(self) -> int:
        """Rewrite the text checkpoints as this code stores them (inside the write); how many were rewritten."""
        from .versions import checkpoint_due, hunk

        db = self.store.db
        lines: list[str] | None = None
        hunks = size = repacked = 0
        after = 0
        while True:
            rows = db.execute_sql('SELECT "number", "content", "packed", "delta" FROM "version" WHERE "number" > ? '
                                  'ORDER BY "number" LIMIT ?', (after, _PAGE_ROWS)).fetchall()
            if not rows:
                return repacked
            for number, content, packed, raw in rows:
                after = number
                if content is None and packed is None:  # a hunk
                    delta = json.loads(raw)
                    assert lines is not None, "the first version is a checkpoint"
                    lines[delta["start"] - 1 : delta["end"]] = delta["lines"]
                    hunks, size = hunks + 1, size + len(raw)
                    continue
                text = content if content is not None else unpack(packed)
                new_lines = regions.lines_of(text)
                if lines is not None:
                    delta = hunk(lines, new_lines)
                    stored = stored_json(delta)
                    if not checkpoint_due(hunks + 1, size + len(stored), sum(map(len, delta["lines"])), len(text)):
                        db.execute_sql('UPDATE "version" SET "content" = NULL, "packed" = NULL, "delta" = ? '
                                       'WHERE "number" = ?', (stored, number))
                        lines, hunks, size, repacked = new_lines, hunks + 1, size + len(stored), repacked + 1
                        continue
                if content is not None:
                    packed = pack(text)
                    if packed is not None:
                        db.execute_sql('UPDATE "version" SET "content" = NULL, "packed" = ? WHERE "number" = ?',
                                       (packed, number))
                        repacked += 1
                lines, hunks, size = new_lines, 0, 0


def _table_bytes(db: pw.SqliteDatabase) -> tuple[dict[str, int], bool]:
    """``({table: bytes}, exact)``: the pages each table takes with its indexes (``dbstat``: exact),
    else the bytes of its stored values (an SQLite built without ``SQLITE_ENABLE_DBSTAT_VTAB``)."""
    owners = {name: table for name, table in db.execute_sql(
        "SELECT name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index')").fetchall()}
    out: dict[str, int] = {}
    try:
        rows = db.execute_sql("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall()
        exact = True
    except pw.OperationalError:
        exact, rows = False, []
        for table in {t for t in owners.values() if not t.startswith("sqlite_")}:
            columns = [r[1] for r in db.execute_sql(f'PRAGMA table_info("{table}")').fetchall()]
            total = " + ".join(f'COALESCE(LENGTH(CAST("{c}" AS BLOB)), 0)' for c in columns) or "0"
            rows.append((table, db.execute_sql(f'SELECT COALESCE(SUM({total}), 0) FROM "{table}"').fetchone()[0]))
    for name, size in rows:
        table = owners.get(name, name)
        out[table] = out.get(table, 0) + int(size)
    return out, exact


def _size(path: os.PathLike[str]) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0
