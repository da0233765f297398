"""The files beside a document, and finding the running room.

For ``notes.md``::

    notes.md.commonroom.db      the sidecar (SQLite)
    notes.md.commonroom.lock    the writer lock (flock) held by the running room
    notes.md.commonroom.json    where the running room listens (no secrets)
    notes.md.commonroom.owner   the owner token, mode 0600 (the operator's key)
"""

from __future__ import annotations

import fcntl
from contextlib import contextmanager
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from .store import sidecar_path


@dataclass(frozen=True)
class RoomFiles:
    """Paths of one document's room files."""

    document: Path

    @classmethod
    def of(cls, document: Path | str) -> "RoomFiles":
        """Files for ``document`` (resolved to an absolute path)."""
        return cls(Path(document).expanduser().resolve())

    @property
    def sidecar(self) -> Path:
        return sidecar_path(self.document)

    def _beside(self, suffix: str) -> Path:
        return self.document.with_name(self.document.name + suffix)

    @property
    def lock(self) -> Path:
        return self._beside(".commonroom.lock")

    @property
    def state(self) -> Path:
        return self._beside(".commonroom.json")

    @property
    def owner_token(self) -> Path:
        return self._beside(".commonroom.owner")

    @property
    def socket(self) -> Path:
        return self._beside(".commonroom.sock")

    def read_state(self) -> dict[str, Any] | None:
        """The running room's state, or None if absent, unreadable or stale."""
        try:
            state = json.loads(self.state.read_text("utf-8"))
        except (OSError, ValueError):
            return None
        pid = state.get("pid")
        if not isinstance(pid, int) or not _alive(pid):
            return None
        return state

    def try_lock(self) -> int | None:
        """Take the exclusive writer lock without waiting: its fd, or None when held.

        The one lock of a document: ``ce serve`` holds it for the life of the
        room, and ``ce invite`` / ``ce revoke`` hold it while they write the
        sidecar offline, so there is never a second writer. An exclusive
        ``flock`` on ``<file>.commonroom.lock`` (created 0644 if missing);
        keep the fd open while writing and give it to :meth:`release_lock`.
        Raises ``OSError`` when the lock file cannot be opened.
        """
        fd = os.open(self.lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        return fd

    @staticmethod
    def release_lock(fd: int) -> None:
        """Release a lock taken by :meth:`try_lock` (closing its fd)."""
        os.close(fd)

    def read_owner_token(self) -> str | None:
        """The owner token, if this user can read the file."""
        try:
            return self.owner_token.read_text("utf-8").strip() or None
        except OSError:
            return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable only by this user (0600), atomically."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, text.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


#: The umask ``ce serve`` (and an offline ``ce invite`` / ``ce revoke``) runs
#: under: every file the room creates beside the document is 0600 (0700 for
#: a folder) whatever the user's umask. SQLite gives ``-wal`` and ``-shm``
#: the sidecar's own mode.
PRIVATE_UMASK = 0o077


@contextmanager
def private_umask() -> Iterator[None]:
    """Run the block under :data:`PRIVATE_UMASK` (the process umask; restored after)."""
    old = os.umask(PRIVATE_UMASK)
    try:
        yield
    finally:
        os.umask(old)
