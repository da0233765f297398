"""``ce observe``: follow the room's event stream and print one line per event.

It opens ``GET /workspace/observe`` with the stored session through the
byte client (seed ``protocol.txt``: HTTP/1.1, ``Host: commonroom``) and
prints, on stdout, one line per event: its local time and one sentence
(:mod:`commonroom.cli.event_lines`)::

    08:10:23  ann proposed a change to lines 3–7 of v2: “fix typo”
    08:11:02  bob leased lines 10–14 until 08:41 (in 30m)

Names, never ids; the ids, the event's number and its exact time are in
``--json``.

With ``--json`` each line is instead the event itself, one JSON object
(schema ``events#Event``). Status lines (connecting, reconnecting, resync) go to stderr, prefixed
``ce observe:``. After a dropped connection it says that the room went
away, reconnects with backoff (0.5 s doubling to 10 s), says when the room
is back (:mod:`commonroom.cli.outage`) and resumes after the last id it printed
(``Last-Event-ID``), so nothing is printed twice or skipped while the ring
still holds it. A room that restarted on another port of this machine is
followed there (its state file; :func:`commonroom.cli.sessions.moved_transport`),
and the session file is pointed at it. On ``event: resync`` it says so, rereads ``/workspace/room``
and continues from that ``last_event_id`` (the events in between are not
printed: read ``/workspace/history`` or the document for them). A refused
stream (revoked or expired session, missing ``observe``) ends the command
with that error's exit status. Ctrl-C ends it with status 0.
"""

from __future__ import annotations

import json
import os
import unicodedata
from datetime import datetime
import sys
from pathlib import Path
from typing import IO, Annotated, Any, Callable, Optional

import typer

from .. import errors
from ..protocol import LAST_EVENT_ID_HEADER, SSE_EVENT_RESYNC
from .common import handled
from .outage import Outage
from .routes import request
from .sessions import default_session_file, follow_room, load_session, moved_transport
from .event_lines import Lookup, Memory, sentence
from .render import JSON_OUTPUT

#: The room's heartbeat on an idle stream (seconds): its default, or ``COMMONROOM_HEARTBEAT_SECONDS`` as set
#: for the room (``commonroom.live.sse``) when this machine's environment says so too.
HEARTBEAT_SECONDS = 15.0


def silence_limit() -> float:
    """No byte for two heartbeats means the link is dead (a tunnel that died quietly): seconds."""
    try:
        heartbeat = float(os.environ.get("COMMONROOM_HEARTBEAT_SECONDS") or HEARTBEAT_SECONDS)
    except ValueError:
        heartbeat = HEARTBEAT_SECONDS
    return 2 * (heartbeat if heartbeat > 0 else HEARTBEAT_SECONDS)


def clock(timestamp: Any) -> str:
    """``16:24:07`` (local time) of an ISO timestamp; the text itself when it is not one."""
    try:
        return datetime.fromisoformat(str(timestamp)).astimezone().strftime("%H:%M:%S")
    except ValueError:
        return str(timestamp)


def format_event(event: dict[str, Any], memory: Memory, lookup: Lookup) -> str:
    """The printed line of one event: its local time, then its sentence (:mod:`commonroom.cli.event_lines`)."""
    return f"{clock(event.get('time'))}  {sentence(event, memory, lookup)}"


def _status(message: str) -> None:
    print(f"ce observe: {message}", file=sys.stderr, flush=True)


def printable(line: str) -> str:
    """``line`` with control and invisible characters escaped: one event, one line."""
    return "".join(
        c if c == " " or unicodedata.category(c)[0] not in "CZ" else c.encode("unicode_escape").decode("ascii")
        for c in line
    )


class Follower:
    """The reconnecting loop of ``ce observe`` (one session, one room)."""

    def __init__(self, session: dict[str, Any], since: int | None, out: IO[str] = sys.stdout, raw: bool = False,
                 session_file: Path | None = None):
        self.session = session
        self.session_file = session_file or default_session_file()
        self.transport = session["transport"]
        self.token = session["token"]
        self.last = since
        self.out = out
        self.memory = Memory(own_session=session.get("session_id"))
        self.lookup = Lookup(self._call)
        self.outage = Outage(_status)
        self.raw = raw
        self.why = "connection lost"  # what the next "went away" line says

    def _call(self, operation: str, values: dict[str, Any] | None = None) -> Any:
        """Call ``operation`` (its route in the operation table) with this session."""
        from .. import client  # the byte client: imported when the command runs (ce --help stays light)

        method, path, body = request(operation, values)
        return client.call_json(self.transport, method, path, body=body, token=self.token)

    def load_names(self) -> None:
        """Participant names from ``/workspace/participants`` (skipped without ``read``)."""
        cursor = None
        try:
            for _ in range(50):
                page = self._call("participants_list", {"limit": 200, "cursor": cursor})
                for p in page["participants"]:
                    self.memory.participants[p["id"]] = p["name"]
                cursor = page.get("next_cursor")
                if not cursor:
                    return
        except errors.CommonroomError:
            return

    def current_end(self) -> int | None:
        """``last_event_id`` of ``/workspace/room``; None without ``read``."""
        try:
            return int(self._call("workspace_status")["last_event_id"])
        except errors.PermissionDenied:
            return None

    def stream_once(self) -> str:
        """Follow one connection; returns ``"resync"``, ``"ended"``, ``"dropped"`` or ``"moved"`` (the room
        restarted on another port of this machine: :meth:`relocate` followed it).

        Raises the room's error for a refused stream (401/403/400/429).
        """
        from .. import client

        headers = {LAST_EVENT_ID_HEADER: str(self.last)} if self.last is not None else {}
        _, path, _ = request("workspace_observe")
        try:
            response, frames = client.stream(self.transport, path, token=self.token,
                                            headers=headers, timeout=silence_limit())
        except (OSError, ConnectionError, errors.TransportUnavailable):
            return "moved" if self.relocate() else "dropped"
        if response.status == 401 and self.relocate():  # another process holds the old port
            return "moved"
        if response.status == 200:
            self.outage.back(self._resuming())
        if response.status != 200:
            try:
                body = response.json() if response.body.strip() else {}
            except ValueError:
                body = None
            if isinstance(body, dict) and "error" in body:
                raise errors.from_dict(body)
            # no room's answer: another process holds the port; the room may still be starting elsewhere
            if self.relocate():
                return "moved"
            self.why = f"{client.where(self.transport)} answered {response.status}, not as a commonroom room"
            return "dropped"
        got_anything = False
        for frame in frames:
            got_anything = True
            if frame.event == SSE_EVENT_RESYNC:
                data = json.loads(frame.data or "{}")
                _status(f"resync ({data.get('reason', '?')}): events after #{self.last} are gone "
                        f"from this stream; rereading the room")
                return "resync"
            if frame.data is None or frame.id is None:
                continue
            event = json.loads(frame.data)
            shown = json.dumps(event, ensure_ascii=False) if self.raw else \
                printable(format_event(event, self.memory, self.lookup))
            print(shown, file=self.out, flush=True)
            self.last = int(frame.id)
        if response.ended == "silent":
            return "silent"
        return "ended" if got_anything else "dropped"

    def run(self) -> None:
        """Follow until interrupted; refused streams raise their error."""
        self.load_names()
        if self.last is None:
            # start from the room's end now, so a drop before the first event loses nothing
            try:
                self.last = self.current_end()
            except errors.TransportUnavailable:
                pass
        first, retried = True, False
        while True:
            if not first:
                self.outage.lost(self.why, self._resuming())
                self.why = "connection lost"
            first = False
            outcome = self.stream_once()
            if outcome == "moved":
                first = True  # straight to the room where it listens now
                continue
            if outcome == "silent":
                from ..client import where

                _status(f"no byte from the room at {where(self.transport)} for {silence_limit():g} s (it sends a "
                        "heartbeat every "f"{silence_limit() / 2:g} s): the overlay may be down; reconnecting, "
                        f"{self._resuming()}")
            if outcome in ("silent", "ended") and not retried:
                # once at once, before saying the room went away: a revoked session hears so, not an outage
                first, retried = True, True
                continue
            retried = False
            if outcome == "resync":
                end = None
                while True:
                    try:
                        end = self.current_end()
                        break
                    except errors.TransportUnavailable as exc:
                        if not self.relocate():  # moved to another port of this machine: reread it there at once
                            self.outage.lost(exc.message, "then rereading the room")
                self.outage.back("rereading the room")
                self.last = end
                _status(f"continuing from #{end}" if end is not None else "continuing with new events only")
                first = True
                continue

    def relocate(self) -> bool:
        """Follow the room to its new port when it restarted on another one on this machine (its state
        file, :func:`commonroom.cli.sessions.moved_transport`; the session file is updated); False when not."""
        moved = moved_transport(self.session)
        if moved is None:
            return False
        follow_room(self.session_file, self.session, moved)
        self.transport = moved
        return True

    def _resuming(self) -> str:
        return f"resuming after #{self.last}" if self.last is not None else "with new events only"


def event_id(text: str) -> int:
    """An event id as ``ce observe`` prints it (``#42``) or its number: the parser of ``--since``."""
    return int(text.strip().removeprefix("#"))


@handled
def observe_command(
    session_file: Annotated[Optional[Path], typer.Option(help="The session to use (needs observe).")] = None,
    since: Annotated[Optional[int], typer.Option(help="Replay the events after this event id first (still in the "
                                                 "ring): an id of --json, or #42 as the status lines print it.",
                                                 min=0, parser=event_id)] = None,
) -> None:
    """Follow the room's events, one sentence each (time, who did what); reconnects and resumes by itself.

    With ``--json`` each line is the raw event (schema ``events#Event``) as one JSON object.
    """
    session = load_session(session_file)
    try:
        Follower(session, since, raw=JSON_OUTPUT.get(), session_file=session_file).run()
    except KeyboardInterrupt:
        raise typer.Exit(0) from None
    except errors.Unauthorized as exc:
        if exc.details.get("reason") == "revoked":
            raise errors.Unauthorized("your session was revoked by the room's operator: it can no longer observe "
                                      "or do anything in the room", details=exc.details) from None
        raise
