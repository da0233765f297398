"""Being told at once when the document's file changes: Linux inotify, through the C library (ctypes).

The room stats its file on a timer anyway (``Engine.watch_file``, every
:data:`commonroom.room.FILE_WATCH_SECONDS`); where inotify is available a
:class:`FileWatch` thread calls ``on_change`` as soon as something happens
to the file (written, replaced, moved, deleted, attributes changed), so the
timer's check runs at once rather than at its next turn. Two watches:
the file itself, for what is written into it (in place), and its folder,
for names only (created, renamed, deleted): an editor that saves by
renaming a new file over it (as the room itself does) replaces the inode
the file's watch follows, and the folder's event names the new one, which
is then watched in its turn. The folder's watch takes no writes: the
sidecar's WAL beside the document is written on every commit, and a
folder watch for writes would wake this thread on each.

```python
watch = FileWatch.start(Path("doc.md"), on_change)   # None where inotify is unavailable
watch.stop()                                          # the thread ends within a moment
```

``on_change`` runs on the watch's thread and must only hand the news on
(the room passes ``loop.call_soon_threadsafe(scheduler.poke, ...)``).
Changes that come together (a save is several events) make one call, at
most every :data:`QUIET_SECONDS`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import select
import struct
import threading
from pathlib import Path
from typing import Callable

log = logging.getLogger("commonroom.filewatch")

# <sys/inotify.h>
IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x002, 0x004, 0x008
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x040, 0x080, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_Q_OVERFLOW = 0x400, 0x800, 0x4000
IN_NONBLOCK, IN_CLOEXEC = 0o4000, 0o2000000
#: The file's own watch: what is done to its inode.
_FILE_MASK = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF
#: The folder's watch: names only (never a write into a file of the folder).
_FOLDER_MASK = IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of name
#: Events closer together than this make one call of ``on_change`` (seconds).
QUIET_SECONDS = 0.02


def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        libc.inotify_init1  # noqa: B018 (present?)
        libc.inotify_add_watch  # noqa: B018
    except (OSError, AttributeError, TypeError):
        return None
    return libc


class FileWatch:
    """One thread reading inotify events of a file and of its folder (see the module docstring)."""

    def __init__(self, fd: int, libc: ctypes.CDLL, path: Path, folder_wd: int, on_change: Callable[[], object]):
        self._fd = fd
        self._libc = libc
        self._path = os.fsencode(path)
        self._name = os.fsencode(path.name)
        self._folder_wd = folder_wd
        self._file_wd = -1
        self._watch_file()
        #: Reads of inotify events so far (a write elsewhere in the folder makes none).
        self.reads = 0
        self._on_change = on_change
        self._wake_r, self._wake_w = os.pipe()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="commonroom-filewatch", daemon=True)

    @classmethod
    def start(cls, path: Path, on_change: Callable[[], object]) -> "FileWatch | None":
        """Watch ``path``'s folder for changes to ``path``; None where inotify cannot be had
        (not Linux, no C library, out of watches): then the room's timer alone notices changes."""
        libc = _libc()
        if libc is None:
            return None
        fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            log.info("inotify unavailable (%s); the file is checked on the room's timer", os.strerror(ctypes.get_errno()))
            return None
        folder_wd = libc.inotify_add_watch(fd, os.fsencode(path.parent), _FOLDER_MASK)
        if folder_wd < 0:
            log.info("cannot watch %s (%s); the file is checked on the room's timer", path.parent,
                     os.strerror(ctypes.get_errno()))
            os.close(fd)
            return None
        watch = cls(fd, libc, path, folder_wd, on_change)
        watch._thread.start()
        return watch

    def _watch_file(self) -> None:
        """Watch the inode the file's name points at now (none while there is no file); the watch of the
        inode it pointed at before is removed (a backup the editor renamed it to wakes nobody)."""
        old, self._file_wd = self._file_wd, self._libc.inotify_add_watch(self._fd, self._path, _FILE_MASK)
        if old >= 0 and old != self._file_wd:
            self._libc.inotify_rm_watch(self._fd, old)  # gone already when that inode was deleted: no matter

    def _relevant(self, data: bytes) -> bool:
        """True when ``data`` (inotify events) tells of the file; a new file under its name is watched."""
        relevant = renamed = False
        offset = 0
        while offset + _EVENT.size <= len(data):
            wd, mask, _, size = _EVENT.unpack_from(data, offset)
            name = data[offset + _EVENT.size:offset + _EVENT.size + size].rstrip(b"\0")
            offset += _EVENT.size + size
            if wd == self._folder_wd and name == self._name:
                relevant = True
                renamed = renamed or bool(mask & (IN_CREATE | IN_MOVED_TO))
            elif mask & IN_Q_OVERFLOW:  # events were lost, a rename among them perhaps: watch the name's inode
                relevant = renamed = True
            elif (wd == self._file_wd and wd >= 0) or mask & (IN_DELETE_SELF | IN_MOVE_SELF):
                relevant = True
        if renamed or relevant and self._file_wd < 0:
            self._watch_file()
        return relevant

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        try:
            while not self._stopped:
                ready = poller.poll(None)
                if self._stopped or any(fd == self._wake_r for fd, _ in ready):
                    return
                changed = False
                while True:  # drain what has come, and what comes within QUIET_SECONDS
                    try:
                        data = os.read(self._fd, 65536)
                        self.reads += 1
                        changed = self._relevant(data) or changed
                    except BlockingIOError:
                        if not poller.poll(QUIET_SECONDS * 1000):
                            break
                        if self._stopped:
                            return
                if changed:
                    try:
                        self._on_change()
                    except Exception:  # the news could not be handed on (the loop is closing)
                        log.debug("file watch: on_change failed", exc_info=True)
        finally:
            os.close(self._fd)

    def stop(self) -> None:
        """End the thread (idempotent)."""
        if self._stopped:
            return
        self._stopped = True
        os.write(self._wake_w, b"x")
        self._thread.join(2)
        os.close(self._wake_r)
        os.close(self._wake_w)
