"""``ce observe`` as a real subprocess against a real room."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest

from commonroom.engine import Engine
from commonroom.errors import EXIT_CODES
from tests.conftest import SAMPLE
from tests.roomproc import ce, ce_path, start_room
from tests.ssekit import wait_until

#: A line for people: the local time, two spaces, one sentence (ids only in --json).
LINE = re.compile(r"^(\d\d:\d\d:\d\d)  (\S.*)$")


class Observer:
    """``ce observe`` running, its stdout and stderr collected line by line."""

    def __init__(self, *args: str):
        self.proc = subprocess.Popen([ce_path(), "observe", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.out: list[str] = []
        self.err: list[str] = []
        for stream, sink in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=self._pump, args=(stream, sink), daemon=True).start()

    @staticmethod
    def _pump(stream, sink: list[str]) -> None:
        for line in stream:
            sink.append(line.rstrip("\n"))

    def ids(self) -> list[int]:
        """The event ids printed (``--json`` lines)."""
        return [json.loads(line)["id"] for line in self.out if line.startswith("{")]

    def saw(self, text: str, where: str = "out", timeout: float = 10.0) -> bool:
        lines = self.out if where == "out" else self.err
        return wait_until(lambda: any(text in line for line in lines), timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def join(room, tmp_path: Path, name: str, caps: str = "read,observe") -> Path:
    session_file = tmp_path / f"{name}.session.json"
    token = room.invite(name, caps)
    done = ce("join", token, "--session-file", str(session_file))
    assert done.returncode == 0, done.stderr
    return session_file


def test_prints_one_line_per_event_and_resumes_after_a_restart(tmp_path: Path):
    room = start_room(tmp_path, SAMPLE)
    observer = None
    try:
        session_file = join(room, tmp_path, "ann")
        observer = Observer("--session-file", str(session_file), "--since", "0", "--json")
        assert observer.saw('"type": "session.opened"')
        first = json.loads(observer.out[0])
        assert first["type"] == "version.committed" and first["actor"] == {"participant_id": None, "session_id": None}
        room.invite("bob", "read")
        assert observer.saw('"participant": "bob"')

        room = room.restart(between=lambda: observer.saw("the room went away at ", "err"))
        assert observer.saw("the room went away at ", "err")
        room.invite("carol", "read")
        assert observer.saw('"participant": "carol"', timeout=30)
        assert observer.saw("the room is back at ", "err") and observer.saw("s); resuming after #", "err")
        ids = observer.ids()
        assert ids == sorted(set(ids)) == list(range(1, ids[-1] + 1))  # nothing twice, nothing skipped
        assert observer.proc.poll() is None
    finally:
        if observer:
            observer.stop()
        room.stop()


def test_without_since_a_drop_before_the_first_event_loses_nothing(tmp_path: Path):
    room = start_room(tmp_path, SAMPLE)
    observer = None
    try:
        session_file = join(room, tmp_path, "dora")
        observer = Observer("--session-file", str(session_file))
        time.sleep(1.0)  # connected, nothing printed yet
        assert observer.out == []
        downtime: list = []

        def while_down():
            downtime.append(observer.saw("the room went away at ", "err"))
            # an event made while the room is down (the operator on the sidecar) ...
            downtime.append(ce("invite", str(room.document), "--participant", "erin", "--cap", "read"))

        room = room.restart(between=while_down)
        assert downtime[0] and downtime[1].returncode == 0, downtime[1].stderr
        # ... is replayed after the reconnection
        assert observer.saw("invited erin (read)", timeout=30)
    finally:
        if observer:
            observer.stop()
        room.stop()


def test_says_resync_and_continues_from_the_current_end(tmp_path: Path):
    document = tmp_path / "doc.md"
    document.write_bytes(SAMPLE.read_bytes())
    engine = Engine.open(document)
    engine.store.write(lambda ctx: [
        ctx.emit("invitation.created", {"invitation_id": f"inv_{i}", "participant": f"bulk{i}",
                                        "capabilities": ["read"], "expires_at": "2030-01-01T00:00:00.000000+00:00"})
        for i in range(2100)
    ])
    engine.close()
    room = start_room(tmp_path)
    observer = None
    try:
        session_file = join(room, tmp_path, "dan")
        observer = Observer("--session-file", str(session_file), "--since", "1")
        assert observer.saw("resync (cursor_lost)", "err")
        assert observer.saw("continuing from #", "err")
        assert observer.out == []
        room.invite("erin", "read")
        assert observer.saw("invited erin (read)")
        assert len(observer.out) == 1
    finally:
        if observer:
            observer.stop()
        room.stop()


def test_a_revoked_session_ends_the_command_with_its_error(tmp_path: Path):
    room = start_room(tmp_path, SAMPLE)
    observer = None
    try:
        session_file = join(room, tmp_path, "fay")
        observer = Observer("--session-file", str(session_file))
        session_id = json.loads(session_file.read_text())["session_id"]
        time.sleep(0.5)  # let it connect (a refusal at connect time ends it the same way)
        r = room.operator().post("/owner/revoke", {"session": session_id})
        assert r.status_code == 200
        assert observer.proc.wait(10) == EXIT_CODES["unauthorized"]
        assert observer.saw("ce: unauthorized:", "err")  # one readable line (the envelope with --json)
    finally:
        if observer:
            observer.stop()
        room.stop()


def test_needs_observe(tmp_path: Path):
    room = start_room(tmp_path, SAMPLE)
    try:
        session_file = join(room, tmp_path, "gil", "read")
        done = ce("observe", "--session-file", str(session_file), timeout=20)
        assert done.returncode == EXIT_CODES["permission_denied"]
        assert "permission_denied" in done.stderr
    finally:
        room.stop()


@pytest.mark.parametrize("event,expected", [
    ({"id": 3, "type": "lease.acquired", "time": "2026-12-07T10:00:00+00:00",
      "actor": {"participant_id": "p_1", "session_id": "s_1"},
      "payload": {"lease_id": "l_1", "lines": [2, 4], "expires_at": "x"}}, "ann leased lines 2–4 until x"),
    ({"id": 4, "type": "brand.new", "time": "2026-12-07T10:00:00+00:00",
      "actor": {"participant_id": None, "session_id": None}, "payload": {"a": 1, "b": None}},
     "brand.new by the operator"),
])
def test_line_format(event, expected):
    from commonroom.cli.event_lines import Lookup, Memory
    from commonroom.cli.observe import format_event

    line = format_event(event, Memory(participants={"p_1": "ann"}), Lookup(lambda operation, values: None))
    assert line.endswith(expected)
    assert LINE.match(line) and "p_1" not in line and "l_1" not in line and "#3" not in line
