"""A room restarted without explicit ports keeps its place: it comes back on the ports it had; when one
of them is taken it listens on another and ``ce`` on this machine follows it there (the session file
is pointed at the new port, ``ce observe`` goes on); a session whose room is not on this machine is
told to ask for the new port."""

from __future__ import annotations

import json
import signal
import socket
import threading
from pathlib import Path

from tests.e2e.test_live_ce_observe import Observer, join
from tests.roomproc import Room, ce, start_room

TEXT = "# Place\n\nfirst line\n"


def restart(room: Room) -> Room:
    """Ctrl-C, then ``ce serve FILE --port 0 --owner-port 0`` again (as start_room always runs it)."""
    assert room.stop(signal.SIGINT) == 0
    return start_room(room.document.parent, name=room.document.name)


def commit(room: Room, line: str) -> int:
    """A region write of line 3 by a fresh writer; the new head's number."""
    writer = room.join(f"w{line[-1]}", "read,write")
    head = writer.get("/workspace/room").json()["head_version"]
    done = writer.request("PUT", "/workspace/document",
                          json={"expected_version": head, "text": line + "\n", "region": {"lines": [3, 3]}})
    assert done.status_code == 200, done.text
    return head + 1


class Squatter:
    """Another process's listener on ``port``: it takes every connection and closes it at once, or, with
    ``answer``, reads the request and sends those bytes first (a web server that is not the room)."""

    def __init__(self, port: int, answer: bytes = b""):
        self.answer = answer
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past the room's TIME_WAITs
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(16)
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            if self.answer:
                try:
                    conn.recv(65536)
                    conn.sendall(self.answer)
                except OSError:
                    pass
            conn.close()

    def close(self) -> None:
        self.sock.close()


def test_a_restart_with_port_0_comes_back_on_the_same_ports_and_sessions_work(tmp_path: Path):
    room = start_room(tmp_path, text=TEXT)
    ports = (room.state["owner_port"], room.state["ingress"]["port"])
    session = join(room, tmp_path, "ann", "read,observe")
    observer = Observer("--session-file", str(session), "--since", "0")
    try:
        first = commit(room, "before the restart")
        assert observer.saw(f"committed v{first} ")
        room = restart(room)
        assert (room.state["owner_port"], room.state["ingress"]["port"]) == ports
        read = ce("read", "--session-file", str(session))
        assert read.returncode == 0 and "before the restart" in read.stdout, read.stderr
        assert "moved" not in read.stderr
        second = commit(room, "after the restart")
        assert observer.saw(f"committed v{second} ", timeout=30), (observer.out, observer.err)
        assert observer.saw("the room is back", "err")
        status = ce("status", str(room.document), "--json")
        assert json.loads(status.stdout)["owner_port"] == ports[0]
    finally:
        observer.stop()
        room.stop()


def test_a_taken_port_moves_the_room_and_ce_follows_it_by_its_state_file(tmp_path: Path):
    room = start_room(tmp_path, text=TEXT)
    owner_port, port = room.state["owner_port"], room.state["ingress"]["port"]
    session = join(room, tmp_path, "bob", "read,observe")
    far = tmp_path / "far.session.json"  # a session on another machine: no state file of its room here
    far_data = json.loads(session.read_text())
    far.write_text(json.dumps({**far_data, "workspace_id": "w_elsewhere"}))
    watching = tmp_path / "watching.session.json"  # its own copy: the observer moves it when it follows
    watching.write_text(session.read_text())
    observer = Observer("--session-file", str(watching), "--since", "0")
    squatters: list[Squatter] = []
    try:
        assert room.stop(signal.SIGINT) == 0
        squatters = [Squatter(owner_port), Squatter(port)]
        room = start_room(room.document.parent, name=room.document.name)
        moved_to = room.state["ingress"]["port"]
        assert moved_to != port and room.state["owner_port"] != owner_port
        log = (tmp_path / "doc.md.serve.log").read_text()
        assert f"was on port {port} when this room last ran" in log and f"listens on {moved_to} now" in log

        read = ce("read", "--session-file", str(session))
        assert read.returncode == 0 and "first line" in read.stdout, read.stderr
        assert f"the room moved from port {port} to {moved_to}" in read.stderr
        assert json.loads(session.read_text())["transport"]["port"] == moved_to  # the session follows
        again = ce("read", "--session-file", str(session))
        assert again.returncode == 0 and again.stderr == "", again.stderr

        remote = ce("read", "--session-file", str(far))
        assert remote.returncode != 0 and "transport_unavailable" in remote.stderr, remote.stderr
        assert "ask the room's operator whether the room is running and where it listens for you" in remote.stderr
        assert "ce status" not in remote.stderr, remote.stderr  # a command of the room's machine is no hint here

        status = ce("status", str(room.document), "--json")  # the operator's commands find it by the state file
        assert status.returncode == 0 and json.loads(status.stdout)["ingress"]["port"] == moved_to, status.stderr
        version = commit(room, "on the new port")
        assert observer.saw(f"committed v{version} ", timeout=30), (observer.out, observer.err)
        assert json.loads(watching.read_text())["transport"]["port"] == moved_to
    finally:
        observer.stop()
        for squatter in squatters:
            squatter.close()
        room.stop()

    room = start_room(tmp_path, text=TEXT)  # the ports it had last time: the ones it moved to
    try:
        assert room.state["ingress"]["port"] == moved_to
    finally:
        room.stop()


NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: 22\r\nConnection: close\r\n\r\n<h1>Not Found</h1>\n\n\n\n"


def test_a_web_server_on_the_old_port_is_no_room_observe_follows_and_a_far_session_is_told(tmp_path: Path):
    room = start_room(tmp_path, text=TEXT)
    port = room.state["ingress"]["port"]
    session = join(room, tmp_path, "cy", "read,observe")
    far = tmp_path / "far.session.json"  # a session on another machine: no state file of its room here
    far.write_text(json.dumps({**json.loads(session.read_text()), "workspace_id": "w_elsewhere"}))
    observer = Observer("--session-file", str(session), "--since", "0")
    squatter = None
    try:
        assert observer.saw("opened a session")
        assert room.stop(signal.SIGINT) == 0
        squatter = Squatter(port, NOT_FOUND)
        room = start_room(room.document.parent, name=room.document.name)
        moved_to = room.state["ingress"]["port"]
        assert moved_to != port
        version = commit(room, "past the web server")
        assert observer.saw(f"committed v{version} ", timeout=30), (observer.out, observer.err)
        assert not any("Traceback" in line for line in observer.err), observer.err
        assert json.loads(session.read_text())["transport"]["port"] == moved_to

        remote = ce("read", "--session-file", str(far))
        assert remote.returncode != 0 and "transport_unavailable" in remote.stderr, remote.stderr
        assert f"127.0.0.1:{port}" in remote.stderr and "ask the room's operator" in remote.stderr, remote.stderr
        far_observer = Observer("--session-file", str(far), "--since", "0")  # waits for its room, says why
        try:
            assert far_observer.saw(f"127.0.0.1:{port} answered 404, not as a commonroom room", "err"), \
                far_observer.err
        finally:
            far_observer.stop()
        assert not any("Traceback" in line for line in far_observer.err), far_observer.err
    finally:
        observer.stop()
        if squatter:
            squatter.close()
        room.stop()
