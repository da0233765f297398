"""The room process: ``ce serve FILE`` (DESIGN.md, Processes and ports).

One gunicorn arbiter with exactly one ``asgi`` worker (the single writer)
serving :class:`commonroom.http.Edge` on two listeners that this module
binds itself (so port 0 works and the chosen ports are known before the
fork): the owner port on 127.0.0.1 and the session ingress (and, with
``--transport NAME``, the extra session ingress a transport plugin names:
the same app, rules and limits as the loopback ingress; see
:mod:`commonroom.transport`). The arbiter holds
an exclusive ``flock`` on ``<file>.commonroom.lock``; a second room on the
same file fails at once, naming the first.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import resource
import socket
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

import peewee as pw

from . import tokens
from .affinity import cpu_choice
from .clock import Clock
from .roomfiles import PRIVATE_UMASK, RoomFiles, private_umask, room_on_port, write_private
from .listenwatch import bind_to_device
from .program import running_ce
from .roomapp import RoomApplication, WorkerConfig, build_app
from .worker import LISTEN_BACKLOG, ConnectionLimits

log = logging.getLogger("commonroom.server")


class ServeError(Exception):
    """A one-line reason ``ce serve`` cannot start (exit status in ``code``)."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


#: The ports of a room started for the first time without ``--port`` / ``--owner-port``.
DEFAULT_PORT, DEFAULT_OWNER_PORT = 7711, 7710


@dataclass
class ServeOptions:
    """``ce serve`` options. Ports 0 pick free ports."""

    document: Path
    host: str = "127.0.0.1"
    #: None (not given): the port this room listened on last time, else :data:`DEFAULT_PORT`;
    #: 0: that port, else a free one; N: exactly N
    port: int | None = None
    #: the same for the owner port (:data:`DEFAULT_OWNER_PORT`)
    owner_port: int | None = None
    socket: bool = False
    transport: str | None = None  # a plugin's extra session ingress (ce serve --transport NAME)
    address: str | None = None  # its address (--address), None: the plugin finds one
    transport_port: int | None = None  # its port (--transport-port), None: the same number as ``port``
    allow_hosts: tuple[str, ...] = ()  # extra Host names of both session listeners (--allow-host NAME)
    graceful_timeout: int = 5
    log_level: str = "warning"
    limits: ConnectionLimits | None = None  # None: ConnectionLimits.from_env()


def check_document(document: Path) -> None:
    """Raise ``ServeError`` unless ``document`` is a UTF-8 file in a writable folder.

    A document the room already knows (its sidecar exists) may be missing or
    not UTF-8: the room writes its head back on start (the bad bytes are
    moved aside first, see ``Engine.reconcile_file``).
    """
    from .store import sidecar_path

    known = sidecar_path(document).exists()
    if not document.exists() and not document.is_symlink():
        if known and os.access(document.parent, os.W_OK | os.X_OK):
            return
        raise ServeError(f"{document}: no such file")
    if document.is_dir():
        raise ServeError(f"{document}: is a directory, not a markdown file")
    if not document.is_file():
        raise ServeError(f"{document}: not a regular file")
    try:
        document.read_bytes().decode("utf-8")
    except PermissionError:
        raise ServeError(f"{document}: permission denied") from None
    except UnicodeDecodeError as exc:
        if not known:
            raise ServeError(f"{document}: not UTF-8 (byte {exc.start}); commonroom serves UTF-8 markdown") from None
    folder = document.parent
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ServeError(f"{folder}: folder is not writable (the sidecar lives beside the file)")


def acquire_lock(files: RoomFiles) -> int:
    """Take the exclusive writer lock; return its fd (kept open while serving).

    The lock is :meth:`RoomFiles.try_lock` (the one ``ce invite`` and
    ``ce revoke`` take offline). Raises ``ServeError`` (code 3) naming the
    running room when it is held.
    """
    fd = files.try_lock()
    if fd is None:
        state = files.read_state() or {}
        where = state.get("owner_url") or "unknown address"
        pid = state.get("pid", "?")
        raise ServeError(
            f"a room is already running for {files.document} (pid {pid}, owner {where})", code=3
        )
    return fd


def remembered_ports(files: RoomFiles) -> dict[str, Any]:
    """Where the room listened when it last ran: ``{"owner_port": N, "port": N, "transports": {name: N}}``.

    Read from the sidecar's Meta (``owner_port``, ``ingress``: what
    ``ce serve`` records at each start, :meth:`Engine.set_ingress`); parts
    it does not know are left out; ``{}`` for a new document or a sidecar
    that cannot be read (then the room starts as on a first run).
    """
    import sqlite3

    if not files.sidecar.exists():
        return {}
    try:
        con = sqlite3.connect(files.sidecar.as_uri() + "?mode=ro", uri=True, timeout=2)
        try:
            rows = dict(con.execute("SELECT key, value FROM meta WHERE key IN ('ingress', 'owner_port')").fetchall())
        finally:
            con.close()
        ingress = json.loads(rows.get("ingress") or "{}")
    except (sqlite3.Error, ValueError):
        return {}
    found: dict[str, Any] = {}
    if str(rows.get("owner_port", "")).isdigit():
        found["owner_port"] = int(rows["owner_port"])
    if isinstance(ingress, dict):
        if _a_port(ingress.get("port")):
            found["port"] = ingress["port"]
        transports = ingress.get("transports")
        if isinstance(transports, dict):
            found["transports"] = {name: t["port"] for name, t in transports.items()
                                   if isinstance(t, dict) and _a_port(t.get("port"))}
    return found


def _a_port(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 65536


def port_choices(given: int | None, remembered: int | None, default: int) -> list[int]:
    """The ports to try in order for one listener (0: a free one).

    ``given`` N > 0 is exactly N; 0 is the remembered port, else a free one;
    None (no option) is the remembered port, else ``default``. A remembered
    port that is taken gives way to a free one (:func:`_listen_first`).
    """
    if given:
        return [given]
    if remembered:
        return [remembered, 0]
    return [0] if given == 0 else [default]


def _listen_first(host: str, ports: list[int], device: str | None = None) -> tuple[socket.socket, int | None]:
    """A listener on the first of ``ports`` free on ``host``: ``(socket, the taken port it gave way from)``.

    Only a port in use moves on to the next; any other failure, and the
    last port's, is ``ServeError``.
    """
    for index, port in enumerate(ports):
        try:
            return _listen(host, port, device, quiet=index + 1 < len(ports)), (ports[0] if index else None)
        except _Taken:
            continue
    raise AssertionError("the last port raises ServeError")


class _Taken(Exception):
    """A port in use, where another port may be tried."""


def _listen(host: str, port: int, device: str | None = None, quiet: bool = False) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if device is not None:
        try:
            bind_to_device(sock, device)
        except OSError:
            sock.close()
            raise
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if quiet and exc.errno == errno.EADDRINUSE:
            raise _Taken() from None
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}{_port_taken(port, exc)}") from None
    sock.listen(LISTEN_BACKLOG)
    sock.set_inheritable(True)
    return sock


def _port_taken(port: int, exc: OSError) -> str:
    """For a port in use: who holds it (the room on FILE, or a pid) and how to choose other ports."""
    if exc.errno != errno.EADDRINUSE:
        return ""
    holder = room_on_port(port)
    if holder is None:
        who = ""
    elif holder[0] is not None:
        who = f" (the room on {holder[0]} holds it, pid {holder[1]})"
    else:
        who = f" (process {holder[1]} holds it)"
    return (f"{who}; choose other ports with --port N --owner-port N, or let the system pick free ones "
            "with --port 0 --owner-port 0")


def _listen_unix(path: Path) -> socket.socket:
    if path.exists():
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    os.chmod(path, 0o600)
    sock.listen(LISTEN_BACKLOG)
    sock.set_inheritable(True)
    return sock


def url(address: str, port: int) -> str:
    """``http://ADDRESS:PORT`` (an IPv6 address in brackets)."""
    return f"http://[{address}]:{port}" if ":" in address else f"http://{address}:{port}"


def raise_nofile() -> str | None:
    """Raise the soft open-files limit to the hard limit; a warning if we cannot."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else 1 << 20
    if soft >= target:
        return None
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError) as exc:
        return f"could not raise the open-files limit from {soft}: {exc}"
    return None


def serve(options: ServeOptions, out: TextIO = sys.stdout) -> int:
    """Run the room until SIGINT/SIGTERM; returns the exit status.

    Raises ``ServeError`` for a bad file, a held lock or a busy port.
    """
    for name, port in (("--port", options.port), ("--owner-port", options.owner_port)):
        if port is not None and not 0 <= port <= 65535:
            raise ServeError(f"{name} {port}: a port is 0 to 65535 (0 picks a free one)")
    from .transport import is_loopback

    if not is_loopback(options.host):
        raise ServeError(f"--host {options.host}: the loopback transport listens on loopback addresses "
                         "only (127.0.0.1, ::1, localhost); other machines reach a room through a "
                         "transport plugin")
    files = RoomFiles.of(options.document)
    with private_umask():  # SQLite may create the -wal and -shm it reads through: private, as every room file
        remembered = remembered_ports(files)
    extra = plugin_listener(options, remembered.get("transports", {}).get(options.transport or ""))
    from . import hostnames

    try:
        allow_hosts = hostnames.allowed(options.allow_hosts)
    except ValueError as exc:
        raise ServeError(str(exc)) from None
    if extra is not None:
        from .transport_hints import plugin

        allow_hosts = tuple(sorted({*allow_hosts, *hostnames.plugin_names(plugin(extra[0]))}))
    options = replace(options, allow_hosts=allow_hosts)
    try:
        limits = options.limits or ConnectionLimits.from_env()
        cpu_choice()  # COMMONROOM_CPU, checked before the fork (commonroom/affinity.py)
    except ValueError as exc:
        raise ServeError(str(exc)) from None
    check_document(files.document)
    # Everything the room creates beside the document is private (0600),
    # whatever the user's umask: the lock, the sidecar (SQLite gives -wal and
    # -shm the sidecar's mode), the state, the owner token, the socket. The
    # document keeps its own mode (filesync.write_atomic sets it explicitly).
    old_umask = os.umask(PRIVATE_UMASK)
    try:
        return _serve(options, files, limits, out, extra, remembered)
    finally:
        os.umask(old_umask)


def plugin_listener(options: ServeOptions, remembered: int | None = None) -> tuple[str, str, int, str] | None:
    """``(transport, address, port, interface)`` of the plugin's extra ingress, or None without ``--transport``.

    Its port: ``--transport-port``, else the ``--port`` number; when that
    is 0 or not given, the port this transport listened on last time
    (``remembered``) when there is one (a taken one gives way to a free
    one as the room binds it), else 0 or :data:`DEFAULT_PORT`.

    Asks the plugin (``listen``) and checks its answer
    (:func:`commonroom.transport.check_listener`) before anything starts;
    a refusal is ``ServeError`` with one line that begins
    ``transport_unavailable:`` (exit status that code's).
    """
    from .errors import EXIT_CODES, TransportUnavailable
    from .transport import check_listener
    from .transport_hints import BUILTIN, plugin

    if options.transport is None:
        if options.address is not None or options.transport_port is not None:
            raise ServeError("--address and --transport-port belong to a transport plugin: add --transport NAME")
        return None
    if options.transport in BUILTIN:
        raise ServeError(f"--transport {options.transport}: built in, not a plugin (the loopback ingress is "
                         "always open; --socket adds the local one)")
    port = options.port if options.transport_port is None else options.transport_port
    if not port:
        port = remembered or (0 if port == 0 else DEFAULT_PORT)
    if not 0 <= port <= 65535:
        raise ServeError(f"--transport-port {port}: a port is 0 to 65535 (0 picks a free one)")
    try:
        answer: tuple[Any, ...] = tuple(plugin(options.transport).listen(options.address, port))
        if len(answer) != 3 or not isinstance(answer[2], str) or not answer[2]:
            raise TransportUnavailable(f"the {options.transport} plugin's listen named no network interface; the "
                                       "room binds every plugin listener to one (docs/transport-plugins.md)",
                                       details={"transport": options.transport})
        address, port, interface = str(answer[0]), answer[1], answer[2]
        return options.transport, check_listener(options.transport, address, port), port, interface
    except TransportUnavailable as exc:
        raise ServeError(f"transport_unavailable: {exc}", code=EXIT_CODES["transport_unavailable"]) from None


def _serve(options: ServeOptions, files: RoomFiles, limits: ConnectionLimits, out: TextIO,
           extra: tuple[str, str, int, str] | None, remembered: dict[str, Any]) -> int:
    from .engine import Engine
    from .errors import EXIT_CODES, StorageUnavailable

    lock_fd = acquire_lock(files)
    arbiter_pid = os.getpid()
    listeners: list[socket.socket] = []
    try:
        moved: list[tuple[str, int, int]] = []  # (listener, the remembered port taken, the port instead)
        owner_sock, taken = _listen_first("127.0.0.1", port_choices(
            options.owner_port, remembered.get("owner_port"), DEFAULT_OWNER_PORT))
        listeners.append(owner_sock)
        if taken:
            moved.append(("owner port", taken, owner_sock.getsockname()[1]))
        ingress_sock, taken = _listen_first(options.host, port_choices(
            options.port, remembered.get("port"), DEFAULT_PORT))
        listeners.append(ingress_sock)
        if taken:
            moved.append(("session ingress", taken, ingress_sock.getsockname()[1]))
        owner_port = owner_sock.getsockname()[1]
        ingress: dict[str, Any] = {"host": options.host, "port": ingress_sock.getsockname()[1]}
        if options.allow_hosts:
            ingress["allowed_hosts"] = list(options.allow_hosts)
        if options.socket:
            listeners.append(_listen_unix(files.socket))
            ingress["socket"] = str(files.socket)
        if extra is not None:
            name, address, port, interface = extra
            given = options.transport_port if options.transport_port is not None else options.port
            try:
                extra_sock, taken = _listen_first(address, [port, 0] if not given and port else [port], interface)
            except OSError as exc:  # the interface is gone, or the system cannot bind to one
                raise ServeError(f"transport_unavailable: cannot bind the {name} listener to interface "
                                 f"{interface}: {exc.strerror or exc}",
                                 code=EXIT_CODES["transport_unavailable"]) from None
            listeners.append(extra_sock)
            if taken:
                moved.append((f"{name} ingress", taken, extra_sock.getsockname()[1]))
            if extra_sock.getsockname()[1] == owner_port:  # the room tells its listeners apart by port
                raise ServeError(f"--transport-port {owner_port}: the owner port's number; pick another")
            ingress["transports"] = {name: {"address": address, "port": extra_sock.getsockname()[1],
                                            "interface": interface}}

        try:
            files.make_private()  # files an older run or another umask left readable
        except OSError as exc:
            raise ServeError(f"cannot make the room's files private (0600): {exc}") from None
        try:
            engine = Engine.open(files.document)  # bootstrap before the fork
        except (pw.DatabaseError, RuntimeError) as exc:  # corrupt or newer sidecar
            raise ServeError(f"{files.sidecar}: cannot open the sidecar: {exc}") from None
        except StorageUnavailable as exc:  # no room on its disk for SQLite's -shm and -wal
            raise ServeError(f"storage_unavailable: {exc.message}", code=EXIT_CODES["storage_unavailable"]) from None
        engine.set_ingress(ingress, owner_port)
        workspace_id = engine.workspace_id
        engine.close()
        files.make_private()  # and the -wal / -shm the bootstrap may have left

        owner_token = tokens.new_secret(tokens.OWNER_PREFIX)
        write_private(files.owner_token, owner_token + "\n")
        state = {
            "pid": os.getpid(),
            "document": str(files.document),
            "sidecar": str(files.sidecar),
            "workspace_id": workspace_id,
            "owner_url": f"http://127.0.0.1:{owner_port}",
            "owner_port": owner_port,
            "ingress": ingress,
            "owner_token_file": str(files.owner_token),
            "started_at": Clock().stamp(),
        }
        write_private(files.state, json.dumps(state, indent=2) + "\n")
        warning = raise_nofile()
        if warning:
            print(f"warning: {warning}", file=sys.stderr)
        limits, warning = limits.fitted()
        if warning:
            print(f"warning: {warning}", file=sys.stderr)

        print(f"commonroom serving {files.document}", file=out)
        print(f"  owner port:      http://127.0.0.1:{owner_port}  (token in {files.owner_token})", file=out)
        print(f"  session ingress: http://{ingress['host']}:{ingress['port']}", file=out)
        if options.allow_hosts:
            print(f"  also answers to: {', '.join(options.allow_hosts)}  (Host names of the session listeners)",
                  file=out)
        if options.socket:
            print(f"  local socket:    {files.socket}", file=out)
        ce = running_ce()  # the commands as they run from any directory, ce on PATH or not
        for name, listener in ingress.get("transports", {}).items():
            print(f"  {name} ingress:{' ' * max(1, 8 - len(name))}{url(listener['address'], listener['port'])}"
                  f"  (interface {listener['interface']}: connections through it only)", file=out)
        # a room opened for other machines is invited to through its plugin listener
        through = "".join(f" --transport {name}" for name in list(ingress.get("transports", {}))[:1])
        print(f"  invite someone:  {ce} invite {files.document} --participant NAME --cap read,observe,propose"
              f"{through}", file=out)
        print(f"  open the console: {ce} console {files.document}", file=out)
        for listener, taken, port in moved:
            print(f"  note: the {listener} was on port {taken} when this room last ran; that port is taken, "
                  f"so it listens on {port} now. ce on this machine finds the room by its state file; "
                  "tell participants on other machines the new port", file=out)
        out.flush()

        config = WorkerConfig(
            document=files.document,
            owner_port=owner_port,
            owner_token_hash=tokens.digest(owner_token),
            limits=limits,
            plugin_listeners=tuple((listener["address"], listener["port"])
                                   for listener in ingress.get("transports", {}).values()),
            ingress_listener=(str(ingress_sock.getsockname()[0]), int(ingress_sock.getsockname()[1])),
            transports=tuple((name, listener["address"], listener["port"], listener["interface"])
                             for name, listener in ingress.get("transports", {}).items()),
            allow_hosts=options.allow_hosts,
        )
        app = RoomApplication(config, [s.fileno() for s in listeners], options)
        try:
            app.run()
        except SystemExit as exc:
            if os.getpid() != arbiter_pid:
                raise  # the forked worker leaving: cleanup is the arbiter's job
            stopped(out, files)
            return int(exc.code or 0)
        stopped(out, files)
        return 0
    finally:
        if os.getpid() == arbiter_pid:
            stale = [files.state, files.owner_token] + ([files.socket] if options.socket else [])
            for path in stale:
                try:
                    path.unlink()
                except OSError:
                    pass
            for sock in listeners:
                try:
                    sock.close()  # gunicorn may have closed the fd already
                except OSError:
                    pass
            os.close(lock_fd)


def stopped(out: TextIO, files: RoomFiles) -> None:
    """The last line of a room's run, after its worker is gone (Ctrl-C, SIGTERM): ``room stopped: FILE``."""
    try:
        print(f"room stopped: {files.document}", file=out, flush=True)
    except (OSError, ValueError):  # nobody reads the output any more
        pass
