"""What every ``ce`` command shares: output, errors, sessions, finding the room.

Errors print their JSON envelope on stderr and exit with the code's own
status (:data:`commonroom.errors.EXIT_CODES`). Session files are JSON, mode
0600, default ``$COMMONROOM_SESSION`` or
``$XDG_CONFIG_HOME/commonroom/session.json``.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from functools import wraps
from pathlib import Path
from typing import Any, Callable

import typer

from .. import client
from ..errors import CommonroomError, InvalidRequest, TransportUnavailable
from ..roomfiles import RoomFiles, RoomNotVerified, private_umask, write_private


def emit(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout."""
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def fail(error: CommonroomError) -> None:
    """Print the error envelope on stderr; exit with the code's status."""
    sys.stderr.write(json.dumps(error.to_dict(), indent=2, ensure_ascii=False) + "\n")
    raise typer.Exit(error.exit_code)


def handled(fn: Callable) -> Callable:
    """Decorator: turn a ``CommonroomError`` into :func:`fail`."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except CommonroomError as error:
            fail(error)

    return wrapper


_DURATION = re.compile(r"^\s*([0-9]{1,9})\s*([smhdw]?)\s*$")  # ASCII digits only
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str, option: str) -> int:
    """``"90"``, ``"45s"``, ``"30m"``, ``"1h"``, ``"7d"``, ``"2w"`` → seconds (> 0)."""
    match = _DURATION.match(text or "")
    if not match or int(match.group(1)) <= 0:
        raise InvalidRequest(f"{option}: {text!r} is not a duration like 90s, 30m, 1h or 7d",
                             details={"option": option})
    return int(match.group(1)) * _UNITS[match.group(2)]


def default_session_file() -> Path:
    """Where ``ce join`` stores the session unless ``--session-file`` says otherwise."""
    if os.environ.get("COMMONROOM_SESSION"):
        return Path(os.environ["COMMONROOM_SESSION"])
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "commonroom" / "session.json"


def save_session(path: Path, data: dict[str, Any]) -> None:
    """Write the session file (0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_private(path, json.dumps(data, indent=2) + "\n")


def load_session(path: Path | None) -> dict[str, Any]:
    """The stored session; ``InvalidRequest`` when there is none."""
    path = path or default_session_file()
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise InvalidRequest(f"no session at {path}; run ce join TOKEN first",
                             details={"session_file": str(path)}) from None
    except (OSError, ValueError) as exc:
        raise InvalidRequest(f"cannot read the session file {path}: {exc}",
                             details={"session_file": str(path)}) from None
    if not isinstance(data, dict) or "token" not in data or "transport" not in data:
        raise InvalidRequest(f"{path} is not a commonroom session file", details={"session_file": str(path)})
    return data


def owner_endpoint(document: Path) -> tuple[dict[str, Any], str] | None:
    """``(transport, owner_token)`` of the verified room running on ``document``, or None.

    None when no room is announced. Raises ``TransportUnavailable`` (and
    sends nothing) when one is announced but fails a check of
    :meth:`RoomFiles.verified_owner`: a state file others can write, a pid
    that does not hold the writer lock, an owner port that is not that
    pid's listener on 127.0.0.1. The owner token goes nowhere else.
    """
    files = RoomFiles.of(document)
    try:
        verified = files.verified_owner()
    except RoomNotVerified as exc:
        raise _room_unreachable(files, reason=str(exc)) from None
    if verified is None:
        return None
    state, token = verified
    hint = {"type": "loopback", "address": "127.0.0.1", "port": state["owner_port"],
            "encrypted": False, "mode": "private"}
    return hint, token


#: How long an offline ``ce invite`` / ``ce revoke`` waits for the writer lock
#: while no running room can be found (another offline command, or a room
#: still starting up); a room that is found but cannot be reached fails at once.
LOCK_WAIT_SECONDS = 5.0


def operator_write(document: Path, method: str, path: str, body: Any,
                   offline: Callable[[Any], Any], *, wait: float = LOCK_WAIT_SECONDS) -> Any:
    """One operator write: through the running room's owner port, or offline under the lock.

    There is only ever one writer of the sidecar. The writer lock ``ce
    serve`` takes (:meth:`RoomFiles.try_lock`) is tried first: when it is
    free no room runs, so ``offline(engine)`` runs on an engine opened on
    the sidecar (under the private umask, files made 0600), its result is
    returned and the lock is released. When it is held, the room holding it
    is verified (:func:`owner_endpoint`) and the write is ``method path``
    with ``body`` on its owner port, with the owner token; the answer's JSON
    is returned. While the lock is held and no room is announced yet, it
    retries for up to ``wait`` seconds.

    Raises the owner port's ``CommonroomError`` as it answered, and
    ``TransportUnavailable`` (exit 23) when the lock is held but the room
    holding it cannot be reached or verified (its owner port refuses, its
    state or owner-token file is missing, unreadable or writable by others,
    its pid or port do not match): then nothing was written or sent.
    """
    from ..engine import Engine

    files = RoomFiles.of(document)
    deadline = time.monotonic() + wait
    while True:
        with private_umask():
            fd = files.try_lock()
        if fd is not None:
            try:
                with private_umask():
                    engine = Engine.open(files.document)
                    try:
                        return offline(engine)
                    finally:
                        engine.close()
                        files.make_private()
            finally:
                files.release_lock(fd)
        endpoint = owner_endpoint(document)  # the lock is held: verify who holds it
        if endpoint is not None:
            hint, token = endpoint
            try:
                response = client.request(hint, method, path, body=body, token=token)
            except TransportUnavailable as exc:  # not dialled, or no answer: the room did not answer
                raise _room_unreachable(files, cause=exc) from None
            return client.answer_json(response)  # the room's own errors are raised as they are
        if time.monotonic() >= deadline:
            raise _room_unreachable(files)
        time.sleep(0.05)


def _room_unreachable(files: RoomFiles, cause: TransportUnavailable | None = None,
                      reason: str | None = None) -> TransportUnavailable:
    state = files.read_state() or {}
    where = state.get("owner_url")
    if reason is not None:
        why = f"it cannot be verified, so its owner token was not sent: {reason}"
    elif cause is not None:
        why = f"its owner port {where} cannot be reached ({cause.message})"
    elif state and files.read_owner_token() is None:
        why = f"its owner token {files.owner_token} cannot be read by this user"
    else:
        why = f"another process holds the writer lock {files.lock} and no running room answers"
    details = {"file": str(files.document), "pid": state.get("pid"), "owner_url": where,
               "lock": str(files.lock)}
    if reason is not None:
        details["reason"] = reason
    return TransportUnavailable(
        f"a room is running for {files.document} but {why}; nothing was changed. "
        "Run this as the user who started the room, or stop the room and try again.",
        details=details,
    )


def require_document(document: Path) -> Path:
    """``document`` resolved; ``InvalidRequest`` unless it is a file or has a sidecar."""
    path = document.expanduser().resolve()
    if not path.is_file() and not RoomFiles.of(path).sidecar.exists():
        raise InvalidRequest(f"{document}: no such file", details={"file": str(document)})
    return path
