"""``ce``'s stored session: where it lives, reading and writing it, calling the room with it.

A session file is JSON, mode 0600: ``{"transport": ..., "token": ...}``
and what ``ce join`` adds. The default is ``$COMMONROOM_SESSION``, else
``$XDG_CONFIG_HOME/commonroom/session.json`` (``~/.config`` when unset).
This module imports no Typer: :mod:`commonroom.cli.quickread` runs
``ce read`` with it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..errors import InvalidRequest
from ..roomfiles import write_private
from .routes import request


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
        raise InvalidRequest(f"no session at {path}; join first: ce join TOKEN --session-file {path}",
                             details={"session_file": str(path)}) from None
    except (OSError, ValueError) as exc:
        raise InvalidRequest(f"cannot read the session file {path}: {exc}",
                             details={"session_file": str(path)}) from None
    if not isinstance(data, dict) or not isinstance(data.get("token"), str) or not isinstance(data.get("transport"), dict):
        raise InvalidRequest(f"{path} is not a commonroom session file", details={"session_file": str(path)})
    return data


def session_call(session_file: Path | None, operation: str, values: dict[str, Any] | None = None,
                 *, timeout: float = 60.0) -> Any:
    """Call ``operation`` (its route in the operation table, :func:`commonroom.cli.routes.request`) with the
    input ``values`` and the stored session: the answer's JSON (the room's error raised)."""
    from .. import client  # the byte client: only the commands that call a room import it

    session = load_session(session_file)
    method, path, body = request(operation, values)
    return client.call_json(session["transport"], method, path, body=body, token=session["token"], timeout=timeout)
