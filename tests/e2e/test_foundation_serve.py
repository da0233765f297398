"""``ce serve``: the room process itself.

- a second ``ce serve`` on the same file fails at once, naming the running
  room, and the first keeps serving with its files untouched;
- a missing file, a directory, a non-UTF-8 file, a file in an unwritable
  folder, a busy port and a corrupt or newer sidecar are one line on stderr
  and a non-zero exit, never a traceback;
- SIGINT and SIGTERM stop the room cleanly: exit 0, the state and owner-token
  files removed, the ports closed, the lock released (a new room starts on
  the same file, and what was committed is still there);
- the sidecar is WAL, stores its schema version, and holds the file as
  version 1;
- ``--socket`` serves the ``local`` transport: invite, join and call over the
  Unix socket, which is 0600 and removed at shutdown.
"""

from __future__ import annotations

import fcntl
import json
import select
import os
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.roomproc import Room, ce, ce_path, start_room


def files_of(document: Path) -> dict[str, Path]:
    return {kind: document.with_name(document.name + f".commonroom.{kind}")
            for kind in ("db", "json", "owner", "lock")}


def assert_one_line_error(done: subprocess.CompletedProcess, *needles: str) -> None:
    assert done.returncode not in (0, None)
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("ce serve: ")
    for needle in needles:
        assert needle in lines[0], lines[0]


def serve_once(document: Path | str, *args: str, timeout: float = 20) -> subprocess.CompletedProcess:
    """``ce serve`` expected to exit on its own (it must not start)."""
    return ce("serve", str(document), "--port", "0", "--owner-port", "0", *args, timeout=timeout)


def refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        return True
    return False


# ------------------------------------------------------------ second serve


def test_second_serve_fails_fast_and_the_first_keeps_serving(shared_room: Room):
    room = shared_room
    reader = room.join("reader", "read")
    files = files_of(room.document)
    state_before = files["json"].read_bytes()
    owner_before = files["owner"].read_bytes()

    started = time.monotonic()
    done = serve_once(room.document)
    assert time.monotonic() - started < 10
    assert_one_line_error(done, "already running", str(room.document), str(room.proc.pid),
                          room.state["owner_url"])
    assert done.returncode == 3

    assert reader.get("/workspace/document").status_code == 200
    assert room.operator().get("/workspace/room").status_code == 200
    assert files["json"].read_bytes() == state_before
    assert files["owner"].read_bytes() == owner_before
    assert room.proc.poll() is None


def test_second_serve_by_another_path_is_refused_too(shared_room: Room, tmp_path: Path):
    room = shared_room
    link = tmp_path / "alias.md"
    link.symlink_to(room.document)
    relative = subprocess.run([ce_path(), "serve", room.document.name, "--port", "0", "--owner-port", "0"],
                              cwd=room.document.parent, capture_output=True, text=True, timeout=20)
    assert_one_line_error(relative, "already running")
    assert_one_line_error(serve_once(link), "already running")
    assert room.join("still", "read").get("/workspace/room").status_code == 200


def test_busy_port_is_one_line(shared_room: Room, tmp_path: Path):
    other = tmp_path / "doc.md"
    other.write_text("# other\n")
    busy = str(shared_room.state["ingress"]["port"])
    done = ce("serve", str(other), "--port", busy, "--owner-port", "0", timeout=20)
    assert_one_line_error(done, "cannot listen", busy)
    assert not files_of(other)["json"].exists() and not files_of(other)["owner"].exists()
    fd = os.open(files_of(other)["lock"], os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released: nobody holds it
    finally:
        os.close(fd)
    assert shared_room.join("after-busy", "read").get("/workspace/room").status_code == 200


# ------------------------------------------------------- files it refuses


def _leftovers(folder: Path, keep: set[str]) -> set[str]:
    return {p.name for p in folder.iterdir()} - keep


def test_missing_file(tmp_path: Path):
    assert_one_line_error(serve_once(tmp_path / "absent.md"), "absent.md", "no such file")
    assert _leftovers(tmp_path, set()) == set()


def test_directory(tmp_path: Path):
    folder = tmp_path / "notes.md"
    folder.mkdir()
    assert_one_line_error(serve_once(folder), "is a directory")
    assert _leftovers(tmp_path, {"notes.md"}) == set()


@pytest.mark.parametrize("data", [b"\xff\xfe# title\n", b"# caf\xe9\n", b"ok\n\xc3("], ids=["bom16", "latin1", "cut"])
def test_non_utf8_file(tmp_path: Path, data: bytes):
    document = tmp_path / "doc.md"
    document.write_bytes(data)
    assert_one_line_error(serve_once(document), "not UTF-8")
    assert _leftovers(tmp_path, {"doc.md"}) == set(), "no sidecar for a file we refuse"
    assert document.read_bytes() == data


def _read_only_folder_runner(folder: Path):
    """How to run ``ce serve`` so that ``folder`` is really unwritable, or None.

    Not root: chmod 0555 is enough. Root ignores modes, so the folder is bind
    mounted read-only inside a private mount namespace (``unshare``); where
    that is not permitted the case cannot be made real here.
    """
    if os.geteuid() != 0:
        folder.chmod(0o555)
        return lambda *args: subprocess.run([ce_path(), *args], capture_output=True, text=True, timeout=20)
    unshare = shutil.which("unshare")
    if unshare is None:
        return None
    script = 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" && shift && exec "$@"'
    probe = subprocess.run([unshare, "--mount", "sh", "-c", script, "sh", str(folder), "true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return None
    return lambda *args: subprocess.run([unshare, "--mount", "sh", "-c", script, "sh", str(folder),
                                         ce_path(), *args], capture_output=True, text=True, timeout=20)


def test_unwritable_folder(tmp_path: Path):
    folder = tmp_path / "locked"
    folder.mkdir()
    document = folder / "doc.md"
    document.write_text("# locked\n")
    run = _read_only_folder_runner(folder)
    if run is None:
        pytest.skip("running as root without a way to make a read-only folder (no unshare/mount)")
    try:
        done = run("serve", str(document), "--port", "0", "--owner-port", "0")
    finally:
        folder.chmod(0o755)
    assert_one_line_error(done, "not writable", str(folder))
    assert _leftovers(folder, {"doc.md"}) == set()


def test_corrupt_sidecar(tmp_path: Path):
    document = tmp_path / "doc.md"
    document.write_text("# kept\n")
    files_of(document)["db"].write_bytes(b"this is not an SQLite database" * 100)
    assert_one_line_error(serve_once(document), "cannot open the sidecar", "doc.md.commonroom.db")
    assert document.read_text() == "# kept\n"
    assert not files_of(document)["json"].exists() and not files_of(document)["owner"].exists()


def test_sidecar_from_a_newer_commonroom(tmp_path: Path):
    document = tmp_path / "doc.md"
    document.write_text("# kept\n")
    con = sqlite3.connect(files_of(document)["db"])
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    con.execute("INSERT INTO meta VALUES ('schema_version', '999')")
    con.commit()
    con.close()
    assert_one_line_error(serve_once(document), "schema version 999", "Upgrade commonroom")


def test_unknown_option_is_a_usage_error(tmp_path: Path):
    done = ce("serve", str(tmp_path / "x.md"), "--no-such-option")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr


# ---------------------------------------------------------------- signals


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_shuts_down_cleanly(tmp_path: Path, sig: int):
    room = start_room(tmp_path, text="# Signals\n\nhello\n")
    files = files_of(room.document)
    reader = room.join("stayer", "read")
    old_owner_token = room.owner_token
    ports = [room.state["owner_port"], room.state["ingress"]["port"]]
    assert files["json"].exists() and files["owner"].exists()

    started = time.monotonic()
    status = room.stop(sig)
    assert status == 0, (tmp_path / "doc.md.serve.log").read_text()
    assert time.monotonic() - started < 10
    assert not files["json"].exists(), "state file removed"
    assert not files["owner"].exists(), "owner token file removed"
    assert all(refused(port) for port in ports), "no listener left behind"
    log = (tmp_path / "doc.md.serve.log").read_text()
    assert "Traceback" not in log and "ERROR" not in log, log

    # The lock is free and the ports are closed: the same file serves again on
    # the very same (fixed) ports.
    again = start_room(tmp_path, args=("--port", str(ports[1]), "--owner-port", str(ports[0])))
    try:
        assert again.state["pid"] != room.proc.pid
        assert again.state["owner_port"] == ports[0] and again.state["ingress"]["port"] == ports[1]
        assert again.owner_token != old_owner_token
        r = httpx.get(again.ingress + "/workspace/document",
                      headers={"Authorization": f"Bearer {reader.token}"}, timeout=30)
        assert r.status_code == 200, "the session survived the restart"
        assert r.json()["text"] == "# Signals\n\nhello\n"
        r = httpx.get(again.owner + "/workspace/room",
                      headers={"Authorization": f"Bearer {old_owner_token}"}, timeout=30)
        assert r.status_code == 401, "a new room has a new owner token"
    finally:
        assert again.stop() == 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_starts_the_shutdown_at_once(tmp_path: Path, sig: int):
    """gasgi's serving loop looks at a stop signal only after its once-a-second heartbeat sleep;
    the worker cancels that sleep (``RoomWorker.handle_exit_signal``, ``handle_quit_signal``:
    the arbiter passes SIGINT on as SIGQUIT), so an idle room stops in well under a second
    whatever the heartbeat's phase. Three stops a third of a second apart in that phase:
    before, at least one of them waited >0.66 s for the heartbeat alone (1.2-1.5 s in all);
    now each takes ~0.2 s."""
    for offset in (0.0, 0.33, 0.66):
        room = start_room(tmp_path / f"at{offset}", text="# Signals\n\nhello\n")
        time.sleep(offset)
        started = time.monotonic()
        assert room.stop(sig) == 0
        took = time.monotonic() - started
        assert took < 1.0, f"{took:.2f} s to stop, signal {sig} {offset} s after the room served"


def test_a_graceful_stop_closes_idle_connections_and_answers_the_request_in_flight(tmp_path: Path):
    """SIGTERM with four connections open: one kept alive between requests is closed at once; one
    with a request in flight (its head sent, half its body) gets its answer; a new one that sends
    its head right after the signal is answered too (a client does not retry on a new connection);
    one that sent half a head and nothing more is closed after the grace for heads. The room exits
    well under gunicorn's keep-alive timeout (5 s: every such stop took that long before
    ``RoomWorker._shutdown`` closed idle connections)."""
    room = start_room(tmp_path, text="# Stop\n\none\ntwo\n")
    client = room.join("leaser", "read,lease")
    port = room.state["ingress"]["port"]
    head = f"Host: 127.0.0.1:{port}\r\nAuthorization: Bearer {client.token}\r\n"
    read = f"GET /workspace/document HTTP/1.1\r\n{head}\r\n".encode()

    def answer(sock: socket.socket) -> bytes:
        seen = b""
        while b"two" not in seen and b"201 Created" not in seen:
            chunk = sock.recv(65536)
            if not chunk:
                break
            seen += chunk
        return seen

    idle = socket.create_connection(("127.0.0.1", port), timeout=10)
    idle.sendall(read)
    assert answer(idle).startswith(b"HTTP/1.1 200")  # now kept alive, between requests
    partial = socket.create_connection(("127.0.0.1", port), timeout=10)
    partial.sendall(b"GET /workspace/document HTTP/1.1\r\n")
    fresh = socket.create_connection(("127.0.0.1", port), timeout=10)
    body = json.dumps({"region": {"lines": [3, 3]}, "ttl_seconds": 60}).encode()
    flight = socket.create_connection(("127.0.0.1", port), timeout=10)
    flight.sendall(f"POST /workspace/leases HTTP/1.1\r\n{head}Content-Type: application/json\r\n"
                   f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:10])
    time.sleep(0.3)  # the head has arrived: the request is in flight
    started = time.monotonic()
    room.proc.send_signal(signal.SIGTERM)
    assert idle.recv(1) == b"", "a connection between requests is closed at once"
    assert time.monotonic() - started < 0.9
    fresh.sendall(read)
    assert answer(fresh).startswith(b"HTTP/1.1 200"), "a head sent within the grace is answered"
    flight.sendall(body[10:])
    landed = answer(flight)
    assert landed.startswith(b"HTTP/1.1 201"), landed[:200]
    assert partial.recv(1) == b"", "half a head is closed after the grace"
    assert room.proc.wait(10) == 0
    assert time.monotonic() - started < 3
    for sock in (idle, partial, fresh, flight):
        sock.close()


# ----------------------------------------------------------- announcement


def test_serve_prints_and_records_its_addresses(shared_room: Room):
    room = shared_room
    log = room.document.with_name(room.document.name + ".serve.log").read_text()
    state = room.state
    assert f"http://127.0.0.1:{state['owner_port']}" in log
    assert f"http://{state['ingress']['host']}:{state['ingress']['port']}" in log
    assert str(files_of(room.document)["owner"]) in log
    assert state["document"] == str(room.document)
    assert state["pid"] == room.proc.pid
    assert "token" not in json.dumps({k: v for k, v in state.items() if k != "owner_token_file"})


def environ_of(pid: int) -> dict[str, str]:
    pairs = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(p.decode().split("=", 1) for p in pairs if b"=" in p)


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc")
def test_the_room_runs_under_glibc_malloc_unless_the_operator_chose(shared_room: Room, tmp_path: Path):
    """``ce serve`` re-executes itself under PYTHONMALLOC=malloc (commonroom/memory.py): the
    same pid (the state file's), the worker inherits it; an operator's own choice is kept."""
    from tests.bench.fanout import worker_pid

    room = shared_room
    assert os.environ.get("PYTHONMALLOC") is None  # else this test proves nothing
    assert room.state["pid"] == room.proc.pid
    assert environ_of(room.proc.pid).get("PYTHONMALLOC") == "malloc"
    assert environ_of(worker_pid(room.proc.pid)).get("PYTHONMALLOC") == "malloc"
    own = start_room(tmp_path, text="# own\n", env={"PYTHONMALLOC": "pymalloc"})
    try:
        assert environ_of(worker_pid(own.proc.pid)).get("PYTHONMALLOC") == "pymalloc"
    finally:
        own.stop()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_the_worker_runs_on_one_cpu(shared_room: Room, tmp_path: Path):
    """COMMONROOM_CPU=auto (default): every thread of the worker on the same single CPU, the
    arbiter free (commonroom/affinity.py); a bad value is a one-line refusal before anything starts."""
    from tests.bench.fanout import worker_pid

    worker = worker_pid(shared_room.proc.pid)
    pinned = {frozenset(os.sched_getaffinity(int(t))) for t in os.listdir(f"/proc/{worker}/task")}
    assert len(pinned) == 1 and len(next(iter(pinned))) == 1, pinned
    assert os.sched_getaffinity(shared_room.proc.pid) == os.sched_getaffinity(0)
    document = tmp_path / "doc.md"
    document.write_text("# doc\n")
    done = subprocess.run([ce_path(), "serve", str(document), "--port", "0", "--owner-port", "0"],
                          capture_output=True, text=True, timeout=20, env={**os.environ, "COMMONROOM_CPU": "fast"})
    assert_one_line_error(done, "COMMONROOM_CPU='fast'")


# ----------------------------------------------------------------- sidecar


def test_sidecar_is_wal_versioned_and_holds_version_one(shared_room: Room):
    room = shared_room
    db = files_of(room.document)["db"]
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"meta", "participant", "session", "invitation", "version", "event"} <= tables
        meta = dict(con.execute("SELECT key, value FROM meta"))
        assert int(meta["schema_version"]) >= 1
        assert meta["workspace_id"] == room.state["workspace_id"]
        assert con.execute("SELECT MIN(number) FROM version").fetchone()[0] == 1
    finally:
        con.close()
    reader = room.join("v1", "read")
    assert reader.get("/workspace/document").json()["text"].encode() == room.document.read_bytes()


# ---------------------------------------------------------- local transport


def test_local_transport_over_the_unix_socket(tmp_path: Path):
    room = start_room(tmp_path, text="# over a socket\n", args=("--socket",))
    sock = room.document.with_name(room.document.name + ".commonroom.sock")
    try:
        assert sock.is_socket() and stat.S_IMODE(sock.stat().st_mode) == 0o600
        invited = ce("invite", str(room.document), "--participant", "local", "--cap", "read",
                     "--transport", "local")
        assert invited.returncode == 0, invited.stderr
        session_file = tmp_path / "s.json"
        joined = ce("join", invited.stdout.strip(), "--session-file", str(session_file))
        assert joined.returncode == 0, joined.stderr
        assert json.loads(session_file.read_text())["transport"] == {
            "type": "local", "address": str(sock), "port": None, "encrypted": False, "mode": "local"}
        called = ce("call", "GET", "/workspace/document", "--session-file", str(session_file))
        assert called.returncode == 0, called.stderr
        assert json.loads(called.stdout)["text"] == "# over a socket\n"
    finally:
        assert room.stop() == 0
    assert not sock.exists(), "the socket is removed at shutdown"


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc")
def test_a_burst_of_connects_waits_in_the_backlog(tmp_path: Path):
    """A listener holds 2048 pending connections (commonroom/worker.py, LISTEN_BACKLOG): gasgi's
    ``create_server(sock=...)`` re-listened it with asyncio's default of 100, and connects beyond
    that had their SYNs dropped (a 1 s retransmit). With the worker stopped, nothing is accepted:
    every one of 300 connects completes only if the backlog holds them."""
    from tests.bench.fanout import worker_pid

    room = start_room(tmp_path, text="# doc\n")
    worker = worker_pid(room.proc.pid)
    address = ("127.0.0.1", room.state["ingress"]["port"])
    pending: list[socket.socket] = []
    os.kill(worker, signal.SIGSTOP)
    try:
        for _ in range(300):
            sock = socket.socket()
            sock.setblocking(False)
            sock.connect_ex(address)
            pending.append(sock)
        _, connected, _ = select.select([], pending, [], 0.5)
        errors = {sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) for sock in connected}
    finally:
        os.kill(worker, signal.SIGCONT)
        for sock in pending:
            sock.close()
        room.stop()
    assert (len(connected), errors) == (300, {0})
