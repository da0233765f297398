"""The files beside a document, and finding the running room.

For ``notes.md``::

    notes.md.commonroom.db      the sidecar (SQLite)
    notes.md.commonroom.lock    the writer lock (flock) held by the running room
    notes.md.commonroom.json    where the running room listens (no secrets)
    notes.md.commonroom.owner   the owner token, mode 0600 (the operator's key)
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
