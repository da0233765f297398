"""Being told at once when the document's file changes: Linux inotify, through the C library (ctypes).

The room stats its file on a timer anyway (``Engine.watch_file``, every
:data:`commonroom.room.FILE_WATCH_SECONDS`); where inotify is available a
:class:`FileWatch` thread calls ``on_change`` as soon as something happens
to the file (written, replaced, moved, deleted, attributes changed), so the
timer's check runs at once rather than at its next turn. The folder is
watched, not the file: an editor that saves by renaming a new file over it
(as the room itself does) replaces the inode a file watch would follow.

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
_MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
         | IN_DELETE_SELF | IN_MOVE_SELF)
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
    """One thread reading inotify events of a file's folder (see the module docstring)."""

    def __init__(self, fd: int, name: bytes, on_change: Callable[[], object]):
        self._fd = fd
        self._name = name
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
        if libc.inotify_add_watch(fd, os.fsencode(path.parent), _MASK) < 0:
            log.info("cannot watch %s (%s); the file is checked on the room's timer", path.parent,
                     os.strerror(ctypes.get_errno()))
            os.close(fd)
            return None
        watch = cls(fd, os.fsencode(path.name), on_change)
        watch._thread.start()
        return watch

    def _relevant(self, data: bytes) -> bool:
        offset = 0
        while offset + _EVENT.size <= len(data):
            _, mask, _, size = _EVENT.unpack_from(data, offset)
            name = data[offset + _EVENT.size:offset + _EVENT.size + size].rstrip(b"\0")
            offset += _EVENT.size + size
            if name == self._name or mask & (IN_Q_OVERFLOW | IN_DELETE_SELF | IN_MOVE_SELF):
                return True
        return False

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
                        changed = self._relevant(os.read(self._fd, 65536)) or changed
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
