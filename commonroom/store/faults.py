"""Disk faults under a running room: what the sidecar's write path does about them.

Two kinds (docs/hardening.md, *Disk faults*):

- **A commit the disk refuses** (full disk, a read-only file system, an
  I/O error): SQLite rolls the transaction back; :func:`classify` names
  the reason and the writer gets ``storage_unavailable`` (503) with
  ``details.reason``. Nothing was committed; the next write tries again,
  so the room serves again as soon as the fault is gone.
- **The sidecar or its ``-wal`` deleted or replaced** while the room holds
  them open: SQLite would keep committing into files nobody can open
  again, and every acknowledged write since would be gone at the next
  start. :class:`FileWatch` notices before the next commit (the paths no
  longer name the open files), :func:`rescue` writes what the room holds
  (its consistent view, WAL included) back to the sidecar's path with
  ``VACUUM INTO`` and moves whatever stood there aside, and the writer gets
  ``storage_unavailable`` with reason ``sidecar_replaced``; the room then
  restarts its worker on the rescued sidecar (``Store.on_fault``).
"""

from __future__ import annotations

import datetime as _dt
import errno
import logging
import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import peewee as pw

from ..errors import StorageUnavailable

log = logging.getLogger("commonroom.store")

#: Exceptions a commit raises when the disk refuses it.
DISK_ERRORS = (pw.OperationalError, pw.DatabaseError, pw.InterfaceError, sqlite3.DatabaseError, OSError)
_REASONS = (
    ("full", "disk_full"), ("file too large", "disk_full"), ("no space", "disk_full"),
    ("readonly", "read_only"), ("read-only", "read_only"), ("read only", "read_only"),
)


def classify(exc: BaseException | None) -> str | None:
    """The ``details.reason`` of a storage failure, or None when ``exc`` is no disk fault.

    Looks down the exception's context too: when SQLite rolled a failed
    commit back by itself, peewee's own ``ROLLBACK`` fails next ("no
    transaction is active") and hides the disk's error.
    """
    seen = 0
    while exc is not None and seen < 8:
        reason = _reason(exc)
        if reason is not None:
            return reason
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def _reason(exc: BaseException) -> str | None:
    if not isinstance(exc, DISK_ERRORS):
        return None
    if isinstance(exc, OSError) and not isinstance(exc, sqlite3.Error):
        return {errno.ENOSPC: "disk_full", errno.EFBIG: "disk_full", errno.EDQUOT: "disk_full",
                errno.EROFS: "read_only", errno.EIO: "io_error"}.get(exc.errno or 0)
    text = str(exc).lower()
    for needle, reason in _REASONS:
        if needle in text:
            return reason
    if "disk i/o" in text or "unable to open" in text or "no such file" in text:
        return "io_error"
    return None


def refusal(path: Path, reason: str, cause: BaseException | str) -> StorageUnavailable:
    """The writer's error (and the room's log line) for a commit refused with ``reason``."""
    log.error("%s: a commit failed (%s): %s; nothing of it was written", path, reason, cause)
    return StorageUnavailable(f"the room could not write its sidecar ({reason.replace('_', ' ')}); "
                              "nothing was written, try again later", details={"reason": reason})


def unopenable(path: Path, exc: pw.OperationalError) -> Exception:
    """What opening the sidecar at ``path`` raises when SQLite refused: ``StorageUnavailable`` for a disk
    fault (a full disk leaves no room for its ``-shm`` and ``-wal``), else ``exc`` itself."""
    reason = classify(exc)
    if reason is None:
        return exc
    return StorageUnavailable(f"cannot open the sidecar {path.name} ({reason.replace('_', ' ')}: {exc}); "
                              "SQLite needs a little room beside it for its -shm and -wal files",
                              details={"reason": reason})


def identity(path: Path) -> tuple[int, int] | None:
    """``(device, inode)`` of the file at ``path`` (None when there is none)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class FileWatch:
    """Whether ``path`` and ``path-wal`` still name the files the store has open.

    SQLite deletes the ``-wal`` only when the last connection to the file
    closes; the store's own connection stays open until :meth:`Store.close`,
    so a ``-wal`` with another inode (or none) means someone else removed it.
    """

    def __init__(self, path: Path):
        self.path = path
        self.wal = path.with_name(path.name + "-wal")
        self.sidecar_id = identity(path)
        self.wal_id: tuple[int, int] | None = None

    def changed(self) -> str | None:
        """What no longer matches (a sentence), or None."""
        if identity(self.path) != self.sidecar_id:
            return f"{self.path} was deleted or replaced under the running room"
        if self.wal_id is not None and identity(self.wal) != self.wal_id:
            return f"{self.wal} was deleted or replaced under the running room"
        return None

    def committed(self) -> None:
        """After a commit: remember the ``-wal`` SQLite keeps open from now on."""
        if self.wal_id is None:
            self.wal_id = identity(self.wal)


def rescue(db: pw.SqliteDatabase, path: Path) -> str:
    """Write the connection's view of the sidecar back to ``path``; where the old files went.

    ``VACUUM INTO`` copies the consistent state (the open database and WAL,
    deleted or not) into a new file beside ``path``; whatever now stands at
    ``path`` (a stale copy, a stranger's file) is moved aside to
    ``<name>.replaced-<time>``, a stale ``-wal``/``-shm`` removed (they
    would be replayed onto the rescued file), and the rescue renamed into
    place and synced.
    """
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    rescued = path.with_name(path.name + ".rescue")
    rescued.unlink(missing_ok=True)
    db.execute_sql("VACUUM INTO ?", (str(rescued),))
    _fsync(rescued)
    aside = "nothing"
    if os.path.lexists(path):
        target = path.with_name(f"{path.name}.replaced-{stamp}")
        os.rename(path, target)
        aside = str(target)
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    os.rename(rescued, path)
    _fsync(path.parent)
    return aside


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def rescue_if_moved(store: Any) -> str | None:
    """If the sidecar's files moved: rescue them (once) and log it; what moved, or None.

    Called before a commit (:func:`check`) and when the store closes, so a
    room stopped after its sidecar was deleted keeps what it committed.
    """
    if store.fault is not None:
        return store.fault
    what = store.watch.changed()
    if what is None:
        return None
    store.fault = what
    try:
        aside = rescue(store.db, store.path)
        log.error("%s; rescued every committed write into %s (what stood there is now %s)", what, store.path, aside)
    except Exception as exc:  # the rescue itself failed: say so, the operator restores by hand
        log.error("%s; the rescue failed (%s): stop the room and restore the sidecar", what, exc)
    return what


def check(store: Any) -> None:
    """Before a commit: ``StorageUnavailable`` when the sidecar's files moved (after rescuing them).

    Runs under the store's write lock. The first time it sees the fault it
    rescues the sidecar and calls ``store.on_fault(reason)`` (the room
    restarts its worker on the rescued file); every write after is refused.
    """
    fresh = store.fault is None
    what = rescue_if_moved(store)
    if what is None:
        return
    if fresh and store.on_fault is not None:
        log.error("restarting the room's worker on the rescued sidecar")
        store.on_fault(what)
    raise StorageUnavailable("the room's sidecar was deleted or replaced under it; the room is restarting "
                             "on a rescued copy: try again shortly", details={"reason": "sidecar_replaced"})


@contextmanager
def refusing(store: Any) -> Iterator[None]:
    """Around a commit: a refusal of the disk becomes ``StorageUnavailable``; a commit is remembered.

    An exception :func:`classify` names (full disk, read-only, I/O error)
    is raised again as ``storage_unavailable`` with ``details.reason`` and
    a log line; any other propagates unchanged. After a commit,
    ``store.watch.committed()`` notes the ``-wal`` SQLite now keeps open.
    """
    try:
        yield
    except DISK_ERRORS as exc:
        reason = classify(exc)
        if reason is None:
            raise
        raise refusal(store.path, reason, exc) from exc
    store.watch.committed()
