"""The files beside a document, and finding the running room.

For ``notes.md``::

    notes.md.commonroom.db      the sidecar (SQLite)
    notes.md.commonroom.lock    the writer lock (flock) held by the running room
    notes.md.commonroom.json    where the running room listens (no secrets)
    notes.md.commonroom.owner   the owner token, mode 0600 (the operator's key)

All of them are private to the user (0600) whatever the umask:
``ce serve`` runs under :data:`PRIVATE_UMASK` and makes the existing ones
private at start (:meth:`RoomFiles.make_private`).

``ce`` sends the owner token only to a room it has verified
(:meth:`RoomFiles.verified_owner`): the state and owner-token files are
this user's own regular files that nobody else can write (the token file
nobody else can read), the state's pid holds the writer lock, and the
owner port it names is a listener on 127.0.0.1 held open by that pid.
"""

from __future__ import annotations

import fcntl
from contextlib import contextmanager
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from .errors import InvalidRequest



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
        from .store import sidecar_path  # not at import: ce's light commands never load peewee

        return sidecar_path(self.document)

    def require_room(self) -> Path:
        """The sidecar; ``InvalidRequest`` ("has no room yet") when the document has none."""
        sidecar = self.sidecar
        if not sidecar.exists():
            raise InvalidRequest(f"{self.document.name} has no room yet (no {sidecar.name})",
                                 details={"file": str(self.document)})
        return sidecar

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
        ``flock`` on ``<file>.commonroom.lock`` (created 0600 if missing);
        keep the fd open while writing and give it to :meth:`release_lock`.
        Raises ``OSError`` when the lock file cannot be opened.
        """
        fd = os.open(self.lock, os.O_RDWR | os.O_CREAT, 0o600)
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

    def private_paths(self) -> list[Path]:
        """Every file the room keeps beside the document (some may not exist)."""
        wal = [self.sidecar.with_name(self.sidecar.name + suffix) for suffix in ("-wal", "-shm", "-journal")]
        return [self.sidecar, *wal, self.lock, self.state, self.owner_token, self.socket]

    def make_private(self) -> None:
        """chmod 0600 every existing room file (``OSError`` if one cannot be)."""
        for path in self.private_paths():
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(st.st_mode):
                raise PermissionError(f"{path} is a symbolic link; the room keeps its own files")
            if st.st_mode & 0o077:
                os.chmod(path, 0o600)

    def verified_owner(self) -> tuple[dict[str, Any], str] | None:
        """``(state, owner_token)`` of the room holding the writer lock, verified.

        None when no room is announced (no state file, or its pid is gone).
        Raises :class:`RoomNotVerified` (nothing is sent anywhere) when:

        - the state file or the owner-token file is not a regular file owned
          by this user, or others can write the state file, or others can read
          or write the token file (checked on the opened file, symlinks refused);
        - the state does not name its owner port as ``http://127.0.0.1:PORT``;
        - the pid it names does not hold the writer lock (``/proc/locks``);
        - nothing listens on 127.0.0.1:PORT, or the listening socket is not
          one of that pid's open files (``/proc/net/tcp``, ``/proc/PID/fd``).

        The last two checks need Linux's ``/proc``; elsewhere the file checks
        and the loopback address are what is verified.
        """
        try:
            text = _read_own_file(self.state, secret=False)
        except FileNotFoundError:
            return None
        try:
            state = json.loads(text)
        except ValueError:
            raise RoomNotVerified(f"its state file {self.state} is not JSON") from None
        if not isinstance(state, dict):
            raise RoomNotVerified(f"its state file {self.state} is not a room's state")
        pid = state.get("pid")
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or not _alive(pid):
            return None
        port = state.get("owner_port")
        if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
            raise RoomNotVerified(f"its state file {self.state} names no owner port")
        if state.get("owner_url") != f"http://127.0.0.1:{port}":
            raise RoomNotVerified(f"its state file names the owner address {state.get('owner_url')!r}, "
                                  f"not the loopback address http://127.0.0.1:{port} the room listens on")
        holders = lock_holders(self.lock)
        if holders is not None and pid not in holders:
            raise RoomNotVerified(f"pid {pid} named by its state file does not hold the writer lock {self.lock}")
        listening = listens_on_loopback(pid, port)
        if listening is False:
            raise RoomNotVerified(f"127.0.0.1:{port} is not a listener of pid {pid}, the room holding the lock")
        try:
            token = _read_own_file(self.owner_token, secret=True).strip()
        except FileNotFoundError:
            raise RoomNotVerified(f"its owner token {self.owner_token} is missing") from None
        if not token:
            raise RoomNotVerified(f"its owner token {self.owner_token} is empty")
        return state, token

    def read_owner_token(self) -> str | None:
        """The owner token, if this user can read the file."""
        try:
            return self.owner_token.read_text("utf-8").strip() or None
        except OSError:
            return None


class RoomNotVerified(Exception):
    """The announced room failed a check: its owner token must not be sent."""


def _read_own_file(path: Path, *, secret: bool) -> str:
    """The text of ``path``, a regular file of this user others cannot write (or, if
    ``secret``, read). ``FileNotFoundError`` when absent; :class:`RoomNotVerified` otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise RoomNotVerified(f"{path} cannot be opened by this user ({exc.strerror or exc}; "
                              "a symbolic link is refused)") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise RoomNotVerified(f"{path} is not a regular file")
        if st.st_uid != os.geteuid():
            raise RoomNotVerified(f"{path} belongs to uid {st.st_uid}, not to this user (uid {os.geteuid()})")
        mode = stat.S_IMODE(st.st_mode)
        if mode & (0o077 if secret else 0o022):
            who = "others can read or write it" if secret else "others can write it"
            raise RoomNotVerified(f"{path} has mode {mode:04o}: {who}")
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
            if sum(map(len, chunks)) > 1 << 20:
                raise RoomNotVerified(f"{path} is too large to be a room file")
    finally:
        os.close(fd)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError:
        raise RoomNotVerified(f"{path} is not UTF-8") from None


def lock_holders(lock: Path) -> set[int] | None:
    """Pids holding a ``flock`` on ``lock`` (Linux ``/proc/locks``); None where unknown."""
    try:
        inode = os.stat(lock).st_ino
    except OSError:
        return set()
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    holders: set[int] = set()
    for line in lines:
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 22167 fe:00:2146786 0 EOF" ("->" marks a waiter)
        if len(fields) < 6 or fields[1] != "FLOCK" or "->" in fields:
            continue
        try:
            if int(fields[5].rsplit(":", 1)[1]) == inode:
                holders.add(int(fields[4]))
        except (ValueError, IndexError):
            continue
    return holders


def listens_on_loopback(pid: int, port: int) -> bool | None:
    """Whether ``pid`` holds the socket listening on 127.0.0.1:``port`` (Linux ``/proc``).

    None where ``/proc`` cannot tell (another system).
    """
    try:
        with open("/proc/net/tcp", encoding="ascii") as f:
            table = f.read().splitlines()[1:]
    except OSError:
        return None
    wanted = f"0100007F:{port:04X}" if socket_little_endian() else f"7F000001:{port:04X}"
    inodes = set()
    for line in table:
        fields = line.split()
        if len(fields) > 9 and fields[1] == wanted and fields[3] == "0A":  # LISTEN
            inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return False
    try:
        names = sorted(os.listdir(f"/proc/{pid}/fd"), key=lambda n: int(n) if n.isdigit() else 0)
    except OSError:
        return None if not os.path.isdir("/proc/self/fd") else False
    for name in names:
        try:
            if os.readlink(f"/proc/{pid}/fd/{name}") in inodes:
                return True
        except OSError:
            continue
    return False


def port_holders(port: int) -> set[int]:
    """Pids of this user's processes holding a socket listening on TCP ``port`` (any address; Linux ``/proc``).

    Empty where ``/proc`` cannot tell or the holder is another user's process.
    """
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[1].endswith(f":{port:04X}") and fields[3] == "0A":  # LISTEN
                inodes.add(f"socket:[{fields[9]}]")
    pids: set[int] = set()
    if not inodes:
        return pids
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            names = os.listdir(f"/proc/{entry}/fd")
        except OSError:  # another user's process, or gone
            continue
        for name in names:
            try:
                if os.readlink(f"/proc/{entry}/fd/{name}") in inodes:
                    pids.add(int(entry))
                    break
            except OSError:
                continue
    return pids


def room_on_port(port: int) -> tuple[Path | None, int] | None:
    """Who holds TCP ``port``: ``(document, pid)`` of the room (``ce serve``) listening on it, ``(None, pid)`` for
    another process of this user, None when ``/proc`` cannot tell.

    The room is the ``ce serve FILE`` whose state file beside ``FILE`` names
    one of the holding pids (its arbiter; the worker holds the same socket).
    """
    holders = port_holders(port)
    for pid in sorted(holders):
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace").split("\0")
            cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
        except OSError:
            continue
        if "serve" not in args:
            continue
        rest = args[args.index("serve") + 1:]
        files = [a for a in rest if a and not a.startswith("-")]
        if not files:
            continue
        state = RoomFiles.of(cwd / files[0]).read_state()
        if state and state.get("pid") in holders:
            return Path(state.get("document") or cwd / files[0]), int(state["pid"])
    return (None, min(holders)) if holders else None


def running_rooms() -> list[tuple[RoomFiles, dict[str, Any]]]:
    """``(files, state)`` of every room running on this machine whose files this user can read (Linux ``/proc``).

    A room is found by its writer lock: each process holding a ``flock``
    (``/proc/locks``) on a ``<file>.commonroom.lock`` among its open files,
    whose state file beside ``<file>`` names that process. Empty where
    ``/proc`` cannot tell.
    """
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    pids = set()
    for line in lines:
        fields = line.split()
        if len(fields) > 4 and fields[1] == "FLOCK" and "->" not in fields and fields[4].isdigit():
            pids.add(int(fields[4]))
    suffix = ".commonroom.lock"
    found = []
    for pid in sorted(pids):
        try:
            names = os.listdir(f"/proc/{pid}/fd")
        except OSError:  # another user's process, or gone
            continue
        for name in names:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{name}")
            except OSError:
                continue
            if target.endswith(suffix):
                files = RoomFiles(Path(target[: -len(suffix)]))
                state = files.read_state()
                if state is not None and state.get("pid") == pid:
                    found.append((files, state))
                break
    return found


def find_room(workspace_id: str) -> dict[str, Any] | None:
    """The state of the room running on this machine for ``workspace_id``, or None.

    One of :func:`running_rooms` whose state names this workspace and whose
    session ingress port is a listener of the room's own process (so a
    bearer is only ever sent to that room).
    """
    for _, state in running_rooms():
        if state.get("workspace_id") != workspace_id:
            continue
        port = (state.get("ingress") or {}).get("port")
        if isinstance(port, int) and state["pid"] in port_holders(port):
            return state
    return None


def socket_little_endian() -> bool:
    """``/proc/net/tcp`` prints addresses in host byte order."""
    import sys

    return sys.byteorder == "little"


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
