"""What every ``ce`` command shares: output, errors, finding the room (sessions: :mod:`commonroom.cli.sessions`).

Answers print through :mod:`commonroom.cli.render` (readable, or JSON
with ``--json``); errors print one line on stderr (their JSON envelope with
``--json``) and exit with the code's own status
(:data:`commonroom.errors.EXIT_CODES`).
"""

from __future__ import annotations

import inspect
import json
import re
import time
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable

import typer

from . import render
from ..errors import CommonroomError, InvalidRequest, TransportUnavailable
from ..roomfiles import RoomFiles, RoomNotVerified, private_umask
from .outcome import invoke
from .routes import request
from .sessions import ADDRESS, ROOM

if TYPE_CHECKING:
    from ..engine import Engine


def emit(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout, whatever ``--json`` says (``ce call``)."""
    render.emit_json(value)


JsonOpt = Annotated[bool, typer.Option("--json", help="Print the answer as JSON (the schema'd answer, unchanged).")]


IdOnlyOpt = Annotated[bool, typer.Option("--id-only", "-q", help="Print only the id of what the command made, "
                                          "for scripts: ID=$(ce … -q).")]


def handled(fn: Callable | None = None, *, json_only: bool = False, made: str | None = None,
            fields: dict[str, str] | None = None) -> Callable:
    """Decorator of a ``ce`` command: ``--json``, and a ``CommonroomError`` printed and turned into its exit status.

    The command gains a ``--json`` option (with ``json_only`` it always
    prints JSON, errors included, and ``--json`` changes nothing); it runs
    through :func:`commonroom.cli.outcome.invoke` (shared with the fast
    path), so :func:`render.show` and :func:`render.error` print JSON or text.
    A command that makes something names where its answer holds the new id
    (``made``, a dotted path such as ``handoff.id``) and gains ``--id-only``
    / ``-q``: then :func:`render.show` prints that id alone. ``fields`` names
    the input fields the command fills from an option or argument of another
    name (``{"ttl_seconds": "--ttl"}``): the room's refusal of one is said
    with that name (:func:`render.readable`).
    """
    if fn is None:
        return lambda f: handled(f, json_only=json_only, made=made, fields=fields)
    command = fn

    @wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        wants_json = bool(kwargs.pop("json_output", False)) or json_only
        token = render.MADE.set(made if kwargs.pop("id_only", False) else None)
        named = render.FIELDS.set(fields or {})
        try:
            status = invoke(command, wants_json, *args, **kwargs)
        finally:
            render.FIELDS.reset(named)
            render.MADE.reset(token)
        if status:
            raise typer.Exit(status)

    signature = inspect.signature(command, eval_str=True)  # the annotations evaluated once, here
    option = inspect.Parameter("json_output", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=JsonOpt)
    parameters = [*signature.parameters.values(), option]
    if made is not None:
        parameters.append(inspect.Parameter("id_only", inspect.Parameter.KEYWORD_ONLY, default=False,
                                            annotation=IdOnlyOpt))
    wrapper.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in parameters if p.annotation is not p.empty}
    if signature.return_annotation is not signature.empty:
        wrapper.__annotations__["return"] = signature.return_annotation
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


def owner_call(hint: dict[str, Any], token: str, operation: str, values: dict[str, Any] | None = None) -> Any:
    """Call ``operation`` (its route in the operation table) with the input ``values`` on the owner port
    ``hint`` with the owner ``token``: the answer's JSON (the room's error raised)."""
    from .. import client

    method, path, body = request(operation, values)
    return client.call_json(hint, method, path, body=body, token=token)


def operator_write(document: Path, operation: str, values: dict[str, Any], *, wait: float = LOCK_WAIT_SECONDS,
                   offline: "Callable[[Engine], Any] | None" = None, upgrade: bool = False) -> Any:
    """One operator write, the operation ``operation`` with the input ``values``: through the running
    room's owner port, or offline under the lock.

    There is only ever one writer of the sidecar. The writer lock ``ce
    serve`` takes (:meth:`RoomFiles.try_lock`) is tried first: when it is
    free no room runs, so the operation runs as the local operator on an
    engine opened on the sidecar (under the private umask, files made
    0600; ``values`` validated against its input schema first), its result
    is returned and the lock is released. When it is held, the room holding
    it is verified (:func:`owner_endpoint`) and the operation is called on
    its owner port (its route in the operation table) with the owner
    token; the answer's JSON is returned. While the lock is held and no
    room is announced yet, it retries for up to ``wait`` seconds.
    ``offline(engine)``, when given, runs instead of the operation offline.
    Offline, a sidecar of an older schema is upgraded only with ``upgrade``
    (``ce sidecar compact``); else it is ``InvalidRequest`` (the room
    upgrades it when it starts).

    Raises the owner port's ``CommonroomError`` as it answered, and
    ``TransportUnavailable`` (exit 23) when the lock is held but the room
    holding it cannot be reached or verified (its owner port refuses, its
    state or owner-token file is missing, unreadable or writable by others,
    its pid or port do not match): then nothing was written or sent.
    """
    from .. import client, schemas
    from ..engine import OPERATOR, Engine
    from ..operations import OPERATIONS

    files = RoomFiles.of(document)
    ROOM.set(files.document.name)
    ADDRESS.set(("file", str(document)))
    deadline = time.monotonic() + wait
    while True:
        with private_umask():
            fd = files.try_lock()
        if fd is not None:
            try:
                with private_umask():
                    engine = Engine.open(files.document, upgrade=upgrade)
                    try:
                        if offline is not None:
                            return offline(engine)
                        op = OPERATIONS[operation]
                        schemas.validate(op.input, values)
                        return op.bind(engine, OPERATOR, values)
                    finally:
                        engine.close()
                        files.make_private()
            finally:
                files.release_lock(fd)
        endpoint = owner_endpoint(document)  # the lock is held: verify who holds it
        if endpoint is not None:
            hint, token = endpoint
            method, path, body = request(operation, values)
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


def operator_read(file: Path, operation: str, values: dict[str, Any], engine: "Engine | None" = None) -> Any:
    """Run a read-only operation as the local operator on the sidecar (validated like the route).

    ``values`` that are None are left out. Works whether or not the room
    runs. Opens (and closes) the sidecar unless ``engine`` is given.
    """
    from .. import schemas
    from ..engine import OPERATOR, Engine
    from ..operations import OPERATIONS

    op = OPERATIONS[operation]
    body = {k: v for k, v in values.items() if v is not None}
    schemas.validate_parameters(op.input, body, {name: name for name in values})  # worded as over HTTP
    ROOM.set(Path(file).name)
    ADDRESS.set(("file", str(file)))
    if engine is not None:
        return op.bind(engine, OPERATOR, body)
    opened = Engine.open(require_document(file), readonly=True)
    try:
        return op.bind(opened, OPERATOR, body)
    finally:
        opened.close()
