"""``ce``'s stored sessions: where they live, reading and writing them, calling the room with one.

A session file is JSON, mode 0600: ``{"transport": ..., "token": ...}``
and what ``ce join`` adds (``session_id``, ``participant``,
``workspace_id``, ``file_name``, ``expires_at``, ...). ``ce join`` stores
one per room: ``$XDG_CONFIG_HOME/commonroom/sessions/WORKSPACE_ID.json``
(``~/.config`` when unset), so joining a second room never replaces the
first room's session. A command without ``--session-file`` uses
``$COMMONROOM_SESSION`` when set, else the one stored session (the live
ones first; ``session.json`` beside ``sessions/`` counts too, where older
``ce`` stored it); several are refused with their list, never guessed
(:func:`default_session_file`). docs/operator.md, *Session files*.
This module imports no Typer: :mod:`commonroom.cli.quickread` runs
``ce read`` with it.
"""

from __future__ import annotations

import json
import os
import sys
from contextvars import ContextVar
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, TypeVar

from ..clock import parse_rfc3339
from ..errors import InvalidRequest, TransportUnavailable, Unauthorized
from ..roomfiles import find_room, write_private
from .routes import request

T = TypeVar("T")


#: The room a command acts on, as its one-line outputs name it (the session's ``file_name``, or the
#: operator's FILE): set by :func:`load_session` and :func:`commonroom.cli.common.operator_read`.
ROOM: ContextVar[str | None] = ContextVar("ce_room", default=None)

#: How the running command reached the room, so a hint names a command the caller can run
#: (:func:`commonroom.cli.render.next_step`): ``("file", FILE)`` as the local operator, ``("session", PATH)``
#: with a session file given by path, ``("session", "")`` with the default session (``ce`` finds it again, so
#: no hint spells its path out), None before the command reached for either. Set by :func:`load_session` and
#: :func:`commonroom.cli.common.operator_read` / ``operator_write``.
ADDRESS: ContextVar[tuple[str, str] | None] = ContextVar("ce_address", default=None)


def session_option() -> str | None:
    """How a command printed for the caller to run next reaches the room as the running one did, for a command
    that takes a session only: ``" --session-file PATH"`` (shell-quoted) when one was given, ``""`` with the
    default session, None for the local operator's FILE (who has no session to run it with)."""
    import shlex

    kind, where = ADDRESS.get() or ("", "")
    if kind == "file":
        return None
    return f" --session-file {shlex.quote(where)}" if kind == "session" and where else ""


def config_dir() -> Path:
    """``$XDG_CONFIG_HOME/commonroom`` (``~/.config/commonroom`` when unset)."""
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "commonroom"


def room_session_file(workspace_id: str) -> Path:
    """Where ``ce join`` stores the session of the room ``workspace_id`` unless told otherwise."""
    name = "".join(c for c in workspace_id if c.isalnum() or c in "_-") or "room"
    return config_dir() / "sessions" / f"{name}.json"


def _stored() -> list[tuple[Path, dict[str, Any]]]:
    """Every session file in :func:`config_dir` (``sessions/*.json``, and ``session.json``), read."""
    found = []
    for path in [config_dir() / "session.json", *sorted((config_dir() / "sessions").glob("*.json"))]:
        try:
            data = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("token"), str):
            found.append((path, data))
    return found


def live(data: dict[str, Any]) -> bool:
    """Whether a stored session has not expired by this machine's clock (one without ``expires_at``, or whose
    ``expires_at`` is not an RFC 3339 timestamp with an offset, has not: the room judges it)."""
    expires = data.get("expires_at")
    if not isinstance(expires, str):
        return True
    try:
        return parse_rfc3339(expires) > datetime.now(timezone.utc)
    except ValueError:  # not a timestamp, or one without an offset: the room judges it
        return True


def default_session_file() -> Path:
    """The session a command uses without ``--session-file``.

    ``$COMMONROOM_SESSION`` when set; else the one session stored in
    :func:`config_dir` (counting the live ones when any is live); with none
    stored, ``session.json`` there (whose absence :func:`load_session`
    words as "join first"). Several rooms' sessions: ``InvalidRequest``
    naming each room and its file, since picking one could act on the
    wrong room.
    """
    if os.environ.get("COMMONROOM_SESSION"):
        return Path(os.environ["COMMONROOM_SESSION"])
    stored = _stored()
    candidates = [entry for entry in stored if live(entry[1])] or stored
    if len(candidates) == 1:
        return candidates[0][0]
    if not candidates:
        return config_dir() / "session.json"
    rooms = "; ".join(f"{data.get('file_name', '?')} as {data.get('participant', '?')}: {path}"
                      for path, data in candidates)
    raise InvalidRequest(f"sessions of {len(candidates)} rooms are stored ({rooms}); say which with "
                         "--session-file F (or COMMONROOM_SESSION=F)",
                         details={"option": "--session-file", "session_files": [str(p) for p, _ in candidates]})


def save_session(path: Path, data: dict[str, Any]) -> None:
    """Write the session file (0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_private(path, json.dumps(data, indent=2) + "\n")


def load_session(path: Path | None, default: Path | None = None) -> dict[str, Any]:
    """The stored session (``path``, else ``default`` if found already, else :func:`default_session_file`);
    ``InvalidRequest`` when there is none.

    A ``path`` given is the address a hint repeats (:data:`ADDRESS`); the
    default is found again by ``ce`` itself, so no hint spells its path out.
    """
    if path is not None:
        ADDRESS.set(("session", str(path)))
        return _read_session(path, given=True)
    ADDRESS.set(("session", ""))
    return _read_session(default or default_session_file(), given=bool(os.environ.get("COMMONROOM_SESSION")))


def _read_session(path: Path, given: bool) -> dict[str, Any]:
    """The session file ``path``, checked; ``given``: the caller named it (else it is ``ce``'s default)."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        if not given:
            raise InvalidRequest("no session stored: join the room first with ce join TOKEN (the token "
                                 "the room's operator gave you), or name a session with --session-file F",
                                 details={"session_file": str(path)}) from None
        raise InvalidRequest(f"no session at {path}; join first: ce join TOKEN --session-file {path}",
                             details={"session_file": str(path)}) from None
    except (OSError, ValueError) as exc:
        raise InvalidRequest(f"cannot read the session file {path}: {exc}",
                             details={"session_file": str(path)}) from None
    if not isinstance(data, dict) or not isinstance(data.get("token"), str) or not isinstance(data.get("transport"), dict):
        raise InvalidRequest(f"{path} is not a commonroom session file", details={"session_file": str(path)})
    if not isinstance(data["transport"].get("type"), str):  # hand-edited: no transport ce could name or dial
        raise InvalidRequest(f"{path} is not a commonroom session file (its transport names no type); join again "
                             "with a new invitation", details={"session_file": str(path)})
    if isinstance(data.get("file_name"), str):
        ROOM.set(data["file_name"])
    return data


def session_call(session_file: Path | None, operation: str, values: dict[str, Any] | None = None,
                 *, timeout: float = 60.0, idle: float | None = None) -> Any:
    """Call ``operation`` (its route in the operation table, :func:`commonroom.cli.routes.request`) with the
    input ``values`` and the stored session: the answer's JSON (the room's error raised). ``idle``: the
    longest silence of a long-poll (``commonroom.client.request``)."""
    from .. import client  # the byte client: only the commands that call a room import it

    method, path, body = request(operation, values)
    return reach(session_file, lambda transport, token: client.call_json(
        transport, method, path, body=body, token=token, timeout=timeout, idle=idle))


def reach(session_file: Path | None, call: Callable[[dict[str, Any], str], T]) -> T:
    """``call(transport, token)`` with the stored session, following its room to a new port.

    When the room does not answer where the session says
    (``TransportUnavailable``), or another process there does not know the
    session (``Unauthorized``) or answers no room's error (``InvalidRequest``
    with the ``status`` it answered), and the room of the session's workspace
    runs on this machine on another port (its state file,
    :func:`moved_transport`), the session file is pointed at that port (a
    line on stderr says so) and ``call`` runs again there: it cannot have
    reached the room before. Otherwise the error is raised, a
    ``TransportUnavailable`` saying how to give the session the room's new port
    (also for another process's answer: it is not the room).
    """
    path = session_file or default_session_file()  # found once: it reads every stored session file
    session = load_session(session_file, path)
    try:
        return call(session["transport"], session["token"])
    except (TransportUnavailable, Unauthorized, InvalidRequest) as exc:
        if isinstance(exc, InvalidRequest) and "status" not in exc.details:
            raise  # not an answer of another process: our own request, refused here or by the room
        moved = moved_transport(session)
        if moved is None:
            if isinstance(exc, TransportUnavailable):
                raise unreachable(exc, session, path, session_file is not None) from None
            if isinstance(exc, InvalidRequest):  # another process answered where the room was
                from ..client import where

                other = TransportUnavailable(
                    f"{where(session.get('transport') or {})} answered {exc.details['status']}, not as a "
                    "commonroom room", details={"status": exc.details["status"]})
                raise unreachable(other, session, path, session_file is not None) from None
            raise
    follow_room(path, session, moved)
    return call(moved, session["token"])


def moved_transport(session: dict[str, Any]) -> dict[str, Any] | None:
    """The session's loopback transport at the port its room listens on now, when that room runs on this
    machine on another port (found by workspace id, :func:`commonroom.roomfiles.find_room`); else None."""
    transport = session.get("transport") or {}
    workspace_id = session.get("workspace_id")
    if transport.get("type") != "loopback" or not isinstance(workspace_id, str):
        return None
    state = find_room(workspace_id)
    if state is None or state["ingress"]["port"] == transport.get("port"):
        return None
    return {**transport, "port": state["ingress"]["port"]}


def follow_room(path: Path, session: dict[str, Any], transport: dict[str, Any]) -> None:
    """Point the session file ``path`` at ``transport`` (the room's new port) and say so on stderr."""
    old = session["transport"].get("port")
    session["transport"] = transport
    try:
        save_session(path, session)
        kept = f"; {path} now names it"
    except OSError as exc:
        kept = f" (cannot update {path}: {exc.strerror or exc})"
    print(f"ce: the room moved from port {old} to {transport['port']} (found by its state file on this "
          f"machine){kept}", file=sys.stderr, flush=True)


def unreachable(exc: TransportUnavailable, session: dict[str, Any], path: Path,
                given: bool = True) -> TransportUnavailable:
    """``exc`` saying what a session whose room is not found on this machine can do: ask for the new port.
    ``given``: the caller named ``path`` (else ``ce join --address`` finds the default session itself)."""
    transport = session.get("transport") or {}
    if transport.get("type") == "local":
        return exc
    from ..client import where

    room = where(transport)
    if transport.get("type") == "loopback":
        then = f"put the port it gives as the transport's \"port\" in {path}"
    else:
        named = f" --session-file {path}" if given else ""
        then = f"ce join --address HOST:PORT{named} points this session there"
    return TransportUnavailable(
        f"{exc.message}. This session dials the room at {room}; the room may be stopped, or listen at "
        f"another address or port now", details={**exc.details, "session_file": str(path),
                                                  "next": participant_next(room, then)})


def participant_next(room: str, then: str = "") -> str:
    """The next step of a colleague whose room does not answer at ``room``: what to ask its operator."""
    return (f"ask the room's operator whether the room is running and where it listens for you (you tried "
            f"{room})" + (f"; {then}" if then else ""))
