"""The file on disk follows the head (DESIGN.md, *Versions*).

:func:`write_atomic` replaces the file: write a temp file beside it, fsync,
rename over the file, fsync the folder. :func:`file_state` is the cheap
fingerprint (size, mtime_ns, inode) used to notice edits made outside the
room between commits.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any, Literal

from ..errors import StorageUnavailable

FileStat = tuple[int, int, int]

log = logging.getLogger("commonroom.engine")

#: How often the follower tries again to write a file it could not write (seconds): the file
#: reaches the head within this long of the disk having room again.
RETRY_SECONDS = 0.25
#: Free bytes a new version needs on the file's disk beyond its own size before it is
#: committed (the sidecar's pages of it, the temporary file's last block).
DISK_MARGIN = 64 * 1024
#: A disk with this many bytes free beyond a version's needs is not looked at again for
#: :data:`ROOMY_SECONDS` (a ``statvfs`` costs a few µs on every write otherwise).
ROOMY, ROOMY_SECONDS = 16 << 20, 0.5
#: Root may use the blocks a file system keeps back for it (``f_bfree``); others ``f_bavail``.
_ROOT = os.geteuid() == 0


def file_state(path: Path) -> FileStat | None:
    """``(size, mtime_ns, inode)`` of ``path``, or None if it is gone."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def open_for_writing(path: Path) -> bool:
    """True when a process this one may look at has ``path`` open for writing (Linux ``/proc``).

    An editor saving in place truncates the file, then writes: between the
    two the file is empty and open for writing, and writing the head back
    then (a new file renamed over it) would leave the editor writing into a
    file no longer there. False where ``/proc`` cannot tell (not Linux), so
    the room writes the head back as before. Looks only at processes'
    descriptors naming the file's path; costs a few ms, and runs only for a
    file found empty.
    """
    try:
        target = os.path.realpath(path)
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return False
    for pid in pids:
        folder = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(folder)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"{folder}/{fd}") != target:
                    continue
                with open(f"/proc/{pid}/fdinfo/{fd}", encoding="ascii") as info:
                    flags = next(int(line.split()[1], 8) for line in info if line.startswith("flags:"))
            except (OSError, ValueError, StopIteration, IndexError):
                continue
            if flags & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR):
                return True
    return False


class FileChanged(Exception):
    """The file is no longer in the state a write expected: edited outside the room meanwhile."""


def write_atomic(path: Path, text: str, expect: FileStat | None | Literal[False] = False) -> FileStat | None:
    """Replace ``path`` with ``text`` (UTF-8 bytes, line endings untouched).

    Keeps the file's permission bits. Returns the new :func:`file_state`
    (of the file as written: an edit made right after the rename is a change
    from it). With ``expect`` (a :func:`file_state`, None for a missing file),
    the file is looked at again once the new text is on disk, just before the
    rename, and ``FileChanged`` is raised (nothing replaced) if it is no
    longer so: an editor's save made while the text was being written is
    never replaced. Raises ``OSError`` when the folder is not writable.
    """
    data = text.encode("utf-8")
    tmp = path.with_name(f".{path.name}.commonroom-tmp")
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o644
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        try:
            os.fchmod(fd, mode)  # exactly the file's mode, whatever the process umask (ce serve's is 077)
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
            st = os.fstat(fd)
        finally:
            os.close(fd)
        if expect is not False and file_state(path) != expect:
            os.unlink(tmp)
            raise FileChanged(str(path))
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)  # a half-written temporary file would hold the very space that is missing
        except OSError:
            pass
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return (st.st_size, st.st_mtime_ns, st.st_ino)


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

    A write that fails (a full disk, a read-only folder) is tried again
    every :data:`RETRY_SECONDS` until it succeeds (or the file is edited
    outside the room meanwhile); :meth:`behind` says so meanwhile, and
    :meth:`check_room` refuses new versions until the file has caught up.
    """

    def __init__(self, path: Path, *, background: bool = True):
        import threading

        self.path = path
        self.background = background
        self._cond = threading.Condition()
        self._pending: tuple[int, str] | None = None
        self._written_number = 0
        self._on_disk = 0
        self._submitted_number = 0
        self.stat: FileStat | None = file_state(path)
        self._closed = False
        self.diverged = False
        #: (what failed, when it started: seconds since the epoch) while the file cannot be written
        self._failure: tuple[str, float] | None = None
        self._roomy_until = 0.0  # monotonic time until which the disk is known to have ample room
        self._thread = None
        if background:
            self._thread = threading.Thread(target=self._run, name="commonroom-file", daemon=True)
            self._thread.start()

    def submit(self, number: int, text: str) -> None:
        """The head is now ``number`` (its text): make the file follow."""
        with self._cond:
            self._submitted_number = max(self._submitted_number, number)
            if not self.background:
                if file_state(self.path) != self.stat:
                    self.diverged = True
                    return
                self.stat = write_atomic(self.path, text)
                self._written_number = self._on_disk = number
                return
            if self._pending is None or self._pending[0] < number:
                self._pending = (number, text)
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._closed:
                    self._cond.wait()
                if self._pending is None:  # closed, and nothing left to write
                    return
                number, text = self._pending
                self._pending = None
            try:
                if file_state(self.path) != self.stat:
                    raise FileChanged(str(self.path))
                stat = write_atomic(self.path, text, expect=self.stat)
            except FileChanged:
                # Edited outside the room since our last write (or while the text was being
                # written): never overwrite it. The engine records it (sync_external) and then
                # adopts it, and the next head is written.
                with self._cond:
                    self.diverged = True
                    self._failure = None
                    self._written_number = max(self._written_number, number)
                    self._cond.notify_all()
                continue
            except OSError as exc:
                self._failed(number, text, exc)
                continue
            with self._cond:
                if self._failure is not None:
                    log.warning("wrote %s again: version %d (it was behind since %s)", self.path, number,
                                epoch_stamp(self._failure[1]))
                    self._failure = None
                self.stat = stat
                self._on_disk = number
                self._written_number = max(self._written_number, number)
                self._cond.notify_all()

    def _failed(self, number: int, text: str, exc: OSError) -> None:
        """The file could not take version ``number``: say so once, then try again every
        :data:`RETRY_SECONDS` (sooner when a newer head comes); closing gives up (the next
        start writes the file from the sidecar)."""
        with self._cond:
            self._roomy_until = 0.0
            if self._failure is None:
                self._failure = (exc.strerror or str(exc), time.time())
                log.error("cannot write %s (version %d): %s; the file is behind: on disk v%d, head v%d; "
                          "trying again every %g s", self.path, number, exc, self._on_disk, number, RETRY_SECONDS)
            if self._closed:
                self._written_number = max(self._written_number, self._submitted_number)
                self._cond.notify_all()
                return
            if self._pending is None:
                self._pending = (number, text)
            self._cond.wait(RETRY_SECONDS)

    def behind(self) -> dict[str, Any] | None:
        """While the file cannot be written: ``{"on_disk", "head", "since", "error"}`` (``since``: seconds since the
        epoch); None when it follows the head."""
        with self._cond:
            if self._failure is None:
                return None
            return {"on_disk": self._on_disk, "head": self._submitted_number, "since": self._failure[1],
                    "error": self._failure[0]}

    def check_room(self, size: int) -> None:
        """Before committing a version of ``size`` characters: ``StorageUnavailable`` when it could not reach the file.

        Refused while the file is behind (a write failed and is being
        tried again: ``details.reason`` ``file_behind``), and when the
        file's disk has fewer free bytes than ``size`` plus
        :data:`DISK_MARGIN` (``disk_full``; the bytes a process of root
        may use). Nothing is committed then, so every version the room
        acknowledges reaches the file.
        """
        behind = self.behind() if self._failure is not None else None  # no lock on the write path's usual way
        if behind is not None:
            raise StorageUnavailable(
                f"the file {self.path.name} is behind: on disk v{behind['on_disk']}, head v{behind['head']} "
                f"({behind['error']}); the room writes it as soon as the disk lets it, and takes new versions then. "
                "Nothing was committed; try again later",
                details={"reason": "file_behind", "on_disk": behind["on_disk"], "head": behind["head"]})
        now = time.monotonic()
        if now < self._roomy_until and size < ROOMY:
            return  # the disk had ample room a moment ago: no system call on every write
        try:
            disk = os.statvfs(self.path.parent)
        except OSError:
            return
        free = (disk.f_bfree if _ROOT else disk.f_bavail) * disk.f_frsize
        if free > size + DISK_MARGIN + ROOMY:
            self._roomy_until = now + ROOMY_SECONDS
        if free < size + DISK_MARGIN:
            log.error("%s: a commit failed (disk_full: %d bytes free, a version of %d characters); nothing of it "
                      "was written", self.path, free, size)
            raise StorageUnavailable(
                f"the disk of {self.path.name} has {free} bytes free, too few for this version of it; nothing was "
                "committed, try again once there is room", details={"reason": "disk_full", "free_bytes": free})

    def flush(self, timeout: float | None = 30.0) -> bool:
        """Wait until the newest submitted head is on disk; False on timeout."""
        with self._cond:
            return self._cond.wait_for(
                lambda: self._written_number >= self._submitted_number or self._closed, timeout
            )

    def adopt(self, number: int, stat: FileStat | None | Literal[False] = False) -> None:
        """The file holds version ``number`` (an outside edit recorded): as it was when it was read
        (``stat``, taken before reading it; a save made since is a change from it), else as it is now."""
        with self._cond:
            self.stat = file_state(self.path) if stat is False else stat
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

    def close(self) -> None:
        """Flush (a file that cannot be written is given a moment only), then stop the thread."""
        self.flush(2.0 if self.behind() is not None else 30.0)
        left = self.behind()
        if left is not None:  # said where the operator sees the room stop: the file is stale until the next start
            log.warning("the room stops with the file behind: on disk v%s, head v%s (%s); the next ce serve "
                        "writes the head to %s", left["on_disk"], left["head"], left["error"], self.path)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(10)


def epoch_stamp(seconds: float) -> str:
    """An epoch time as the room's RFC 3339 stamp (for the log and the room's status)."""
    import datetime as dt

    from ..clock import rfc3339

    return rfc3339(dt.datetime.fromtimestamp(seconds, dt.timezone.utc))
