"""The file on disk follows the head (DESIGN.md, *Versions*).

:func:`write_atomic` replaces the file: write a temp file beside it, fsync,
rename over the file, fsync the folder. :func:`file_state` is the cheap
fingerprint (size, mtime_ns, inode) used to notice edits made outside the
room between commits.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

FileStat = tuple[int, int, int]

log = logging.getLogger("commonroom.engine")


def file_state(path: Path) -> FileStat | None:
    """``(size, mtime_ns, inode)`` of ``path``, or None if it is gone."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def write_atomic(path: Path, text: str) -> FileStat | None:
    """Replace ``path`` with ``text`` (UTF-8 bytes, line endings untouched).

    Keeps the file's permission bits. Returns the new :func:`file_state`.
    Raises ``OSError`` when the folder is not writable.
    """
    data = text.encode("utf-8")
    tmp = path.with_name(f".{path.name}.commonroom-tmp")
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o644
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.fchmod(fd, mode)  # exactly the file's mode, whatever the process umask (ce serve's is 077)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return file_state(path)


class FileFollower:
    """Keeps the file on disk at the head, off the request path.

    The sidecar commit (fsync'd) is the commit point; the file follows it:
    :meth:`submit` hands over each committed head, a background thread
    writes the newest one with :func:`write_atomic` (several commits that
    land during one write are coalesced into the next write: the file
    always moves forward, to whole versions only). :meth:`flush` waits until
    the newest submitted head is on disk (``ce serve`` calls it at
    shutdown; a crash in between is repaired from the sidecar on the next
    start). With ``background=False`` (the CLI, tests) each submit writes at
    once.

    :meth:`ours` tells whether a file fingerprint or content hash is one the
    follower wrote or is about to write, so the outside-edit check never
    mistakes the follower's own work for an outside edit.
    """

    def __init__(self, path: Path, *, background: bool = True):
        import threading

        self.path = path
        self.background = background
        self._cond = threading.Condition()
        self._pending: tuple[int, str, str] | None = None
        self._written_number = 0
        self._on_disk = 0
        self._submitted_number = 0
        self._recent: dict[str, int] = {}
        self.stat: FileStat | None = file_state(path)
        self._closed = False
        self.diverged = False
        self._thread = None
        if background:
            self._thread = threading.Thread(target=self._run, name="commonroom-file", daemon=True)
            self._thread.start()

    def submit(self, number: int, text: str, digest: str) -> None:
        """The head is now ``number`` (text, ``sha256:`` digest): make the file follow."""
        with self._cond:
            self._recent[digest] = number
            if len(self._recent) > 64:
                oldest = min(self._recent, key=self._recent.__getitem__)
                del self._recent[oldest]
            self._submitted_number = max(self._submitted_number, number)
            if not self.background:
                if file_state(self.path) != self.stat:
                    self.diverged = True
                    return
                self.stat = write_atomic(self.path, text)
                self._written_number = self._on_disk = number
                return
            if self._pending is None or self._pending[0] < number:
                self._pending = (number, text, digest)
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._closed:
                    self._cond.wait()
                if self._pending is None:  # closed, and nothing left to write
                    return
                number, text, _ = self._pending
                self._pending = None
            try:
                if file_state(self.path) != self.stat:
                    # Edited outside the room since our last write: never
                    # overwrite it. The engine records it (sync_external) and
                    # then adopts it, and the next head is written.
                    with self._cond:
                        self.diverged = True
                        self._written_number = max(self._written_number, number)
                        self._cond.notify_all()
                    continue
                stat = write_atomic(self.path, text)
            except OSError as exc:
                # the file cannot follow now (disk full, a directory in its
                # place): say so and go on; the sidecar holds the version and
                # the next commit, or the next start, writes the file again
                log.error("cannot write %s (version %d): %s", self.path, number, exc)
                with self._cond:
                    self._written_number = max(self._written_number, number)
                    self._cond.notify_all()
                continue
            with self._cond:
                self.stat = stat
                self._on_disk = number
                self._written_number = max(self._written_number, number)
                self._cond.notify_all()

    def flush(self, timeout: float | None = 30.0) -> bool:
        """Wait until the newest submitted head is on disk; False on timeout."""
        with self._cond:
            return self._cond.wait_for(
                lambda: self._written_number >= self._submitted_number or self._closed, timeout
            )

    def adopt(self, number: int) -> None:
        """The file as it is now holds version ``number`` (an outside edit recorded)."""
        with self._cond:
            self.stat = file_state(self.path)
            self._written_number = max(self._written_number, number)
            self._on_disk = number
            self.diverged = False

    @property
    def on_disk(self) -> int:
        """The version the file holds as far as the follower knows (0: unknown)."""
        with self._cond:
            return self._on_disk

    def busy(self) -> bool:
        """True while a submitted head is not yet on disk."""
        with self._cond:
            return self._written_number < self._submitted_number

    def ours(self, digest: str) -> bool:
        """True if ``digest`` is a recent head this follower wrote or will write."""
        with self._cond:
            return digest in self._recent

    def close(self) -> None:
        """Flush, then stop the thread."""
        self.flush()
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(10)
