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
from functools import wraps
from pathlib import Path
from typing import Any, Callable

import typer

from .. import client
from ..errors import CommonroomError, InvalidRequest, TransportUnavailable
from ..roomfiles import RoomFiles, write_private


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


_DURATION = re.compile(r"^\s*(\d+)\s*([smhdw]?)\s*$")
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
    """``(transport, owner_token)`` of the room running on ``document``, or None."""
    files = RoomFiles.of(document)
    state = files.read_state()
    if state is None:
        return None
    token = files.read_owner_token()
    if token is None:
        return None
    hint = {"type": "loopback", "address": "127.0.0.1", "port": state["owner_port"],
            "encrypted": False, "mode": "private"}
    return hint, token


def owner_call(document: Path, method: str, path: str, body: Any = None) -> Any | None:
    """Call the running room's owner port; None when no room runs on ``document``."""
    endpoint = owner_endpoint(document)
    if endpoint is None:
        return None
    hint, token = endpoint
    try:
        return client.call_json(hint, method, path, body=body, token=token)
    except TransportUnavailable:
        return None


def require_document(document: Path) -> Path:
    """``document`` resolved; ``InvalidRequest`` unless it is a file or has a sidecar."""
    path = document.expanduser().resolve()
    if not path.is_file() and not RoomFiles.of(path).sidecar.exists():
        raise InvalidRequest(f"{document}: no such file", details={"file": str(document)})
    return path
