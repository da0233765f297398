"""The file on disk follows the head (DESIGN.md, *Versions*).

:func:`write_atomic` replaces the file: write a temp file beside it, fsync,
rename over the file, fsync the folder. :func:`file_state` is the cheap
fingerprint (size, mtime_ns, inode) used to notice edits made outside the
room between commits.
"""

from __future__ import annotations

import os
from pathlib import Path

FileStat = tuple[int, int, int]


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
