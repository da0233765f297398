"""``ce invite``, ``ce revoke``, ``ce join``, ``ce invitation decode``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from .. import invitation
from ..errors import InvalidRequest, TransportUnavailable
from ..roomfiles import RoomFiles
from ..vocabulary import CAPABILITIES, words
from . import ids
from .common import handled, operator_read, operator_write, parse_duration, require_document
from .options import CursorOpt, FileArg, LimitOpt, SessionOpt
from .printing import clock
from .routes import request
from .sessions import default_session_file, live, room_session_file, save_session, session_call
from .render import JSON_OUTPUT, show
from .usage import CeTyper

invitation_app = CeTyper(help="Inspect invitation tokens.", no_args_is_help=True, rich_markup_mode=None)


@handled
def invite_command(
    file: Annotated[Path, typer.Argument(help="The room's markdown file.")],
    participant: Annotated[str, typer.Option("--participant", "-p", help="Who the invitation admits.")],
    cap: Annotated[str, typer.Option("--cap", help=f"Capabilities, comma separated, from {words(CAPABILITIES)}.")] = "read,observe",
    expires: Annotated[str, typer.Option(help="How long the invitation is valid: 90s, 30m, 1h, 7d.")] = "24h",
    session_ttl: Annotated[str, typer.Option(help="How long the session lasts once joined.")] = "30d",
    transport: Annotated[str, typer.Option(help="loopback, local, or a plugin such as tailcat.")] = "loopback",
    address: Annotated[Optional[str], typer.Option(
        help="With a plugin transport: the name the invitation carries instead of the listener's address "
             "(one the room answers to: ce serve --allow-host NAME).")] = None,
    link: Annotated[bool, typer.Option("--link", help="Print a link to the room's page for a browser instead of "
                                       "the token (the invitation rides in the link's #fragment).")] = False,
) -> None:
    """Print an invitation token for PARTICIPANT (through the owner port if the room runs).

    stdout is the token alone (``TOKEN=$(ce invite …)``), a line about it
    goes to stderr; ``--json`` prints the whole answer instead. With
    ``--link`` stdout is ``http://ADDR:PORT/#join=…`` instead: the room's
    participant page, which redeems the invitation in the tab (the
    fragment never reaches a server); a ``local`` (Unix socket)
    invitation has no link (``invalid_request``).

    With no room running it writes the sidecar itself, holding the room's
    writer lock; if a room holds the lock but cannot be reached it fails
    (``transport_unavailable``) and changes nothing.
    """
    document = require_document(file)
    if link and transport == "local":  # refused before an invitation is made for nothing
        raise InvalidRequest("a browser link needs a TCP transport (loopback or a plugin such as tailcat); "
                             "a local (Unix socket) invitation is given as a token: drop --link",
                             details={"reason": "transport", "transport": transport})
    body: dict[str, Any] = {
        "participant": participant,
        "capabilities": [c.strip() for c in cap.split(",") if c.strip()],
        "expires_in_seconds": parse_duration(expires, "--expires"),
        "session_ttl_seconds": parse_duration(session_ttl, "--session-ttl"),
        "transport": transport,
    }
    if address is not None:
        body["address"] = address

    result = operator_write(document, "invitation_create", body)
    if JSON_OUTPUT.get():
        show(result, "owner#InviteResult")
        return
    print(invitation.page_link(result["token"]) if link else result["token"])
    print(f"invitation {result['invitation_id']} for {result['participant']} "
          f"({','.join(result['capabilities'])}), good until {clock(result['expires_at'])}", file=sys.stderr)


@handled
def revoke_command(
    file: Annotated[Path, typer.Argument(help="The room's markdown file.")],
    invitation_ref: Annotated[Optional[str], typer.Option("--invitation", help="Invitation id or token.")] = None,
    session: Annotated[Optional[str], typer.Option(
        "--session", help="Session id, or a unique start of it as ce sessions prints it.")] = None,
) -> None:
    """Revoke an invitation or a session (a revoked session stops at once).

    Through the owner port if the room runs, else offline under the writer
    lock (as ``ce invite``).
    """
    document = require_document(file)
    body = {k: v for k, v in (("invitation", invitation_ref), ("session", session)) if v is not None}
    if len(body) != 1:
        raise InvalidRequest("give exactly one of --invitation ID_OR_TOKEN or --session ID",
                             details={"option": "--invitation/--session"})
    RoomFiles.of(document).require_room()  # revoking never makes a room of a plain file
    if session is not None:
        body["session"] = ids.operator_session(document, session)

    show(operator_write(document, "revoke", body), "owner#RevokeResult")


@handled
def sessions_command(file: FileArg = None, limit: LimitOpt = 50, cursor: CursorOpt = None,
                     session_file: SessionOpt = None) -> None:
    """List one page of the live sessions (who, capabilities, expiry, their boards), in join order.

    With a session (``workspace_sessions``, ``GET /workspace/sessions``,
    needs read) from any machine; the local operator may give the room's
    FILE (``sessions_list``, read from its sidecar). Both print the same
    page: a session's whole id addresses its board (``ce board post ID``).
    """
    values = {"limit": limit, "cursor": cursor}
    page = operator_read(file, "sessions_list", values) if file is not None else \
        session_call(session_file, "workspace_sessions", values)
    show(page, "owner#SessionsPage")


@handled
def join_command(
    token: Annotated[Optional[str], typer.Argument(help="The commonroom://join/… token.")] = None,
    session_file: Annotated[Optional[Path], typer.Option(help="Where to store the session (0600); default: one "
                                                         "file per room, so no other room's session is replaced.")] = None,
    client_name: Annotated[str, typer.Option("--client", help="Name this client.")] = "ce",
    address: Annotated[Optional[str], typer.Option(
        help="Without TOKEN: re-point the stored session at the room's new address (HOST or HOST:PORT), "
             "when the room's overlay address moved.")] = None,
) -> None:
    """Redeem TOKEN at the room it names and store the session (it prints the session id and where it is).

    Without ``--session-file`` the session goes to the room's own file
    (``~/.config/commonroom/sessions/WORKSPACE_ID.json``, or
    ``$COMMONROOM_SESSION`` when set); a live session already in the file
    it writes is replaced, and said so on stderr.

    ``ce join --address NEW [--session-file F]`` (no TOKEN) re-points an
    existing session instead: it asks the room at NEW, through the
    session's transport and its checks, for the session (``GET
    /workspace/session``) and stores NEW only when that room knows it.
    """
    from .. import client

    if token is None or address is not None:
        if token is not None or address is None:
            raise InvalidRequest("give the commonroom://join/… token, or --address NEW alone to re-point a "
                                 "stored session at the room's new address", details={"option": "--address"})
        repoint(session_file, address)
        return
    payload = invitation.decode(token)
    method, route, body = request("join", {"invitation": token.strip(), "client": client_name})
    try:
        result = client.call_json(payload["transport"], method, route, body=body)
    except TransportUnavailable as exc:
        from .sessions import participant_next

        raise TransportUnavailable(exc.message, details={
            **exc.details, "next": participant_next(client.where(payload["transport"]))}) from None
    path = session_file or (Path(os.environ["COMMONROOM_SESSION"]) if os.environ.get("COMMONROOM_SESSION")
                            else room_session_file(result["workspace_id"]))
    replaced = _replaced(path)
    save_session(path, {
        "token": result["token"],
        "session_id": result["session"]["id"],
        "participant": result["session"]["participant"]["name"],
        "capabilities": result["session"]["capabilities"],
        "expires_at": result["session"]["expires_at"],
        "workspace_id": result["workspace_id"],
        "file_name": result["file_name"],
        "transport": payload["transport"],
    })
    if replaced is not None:
        room = "this room" if replaced.get("workspace_id") == result["workspace_id"] else \
            f"room {replaced.get('file_name', '?')} ({replaced.get('workspace_id', '?')})"
        print(f"ce join: replaced {replaced.get('participant', '?')}'s live session {replaced.get('session_id', '?')} "
              f"of {room} in {path}", file=sys.stderr)
    show({"session": result["session"], "workspace_id": result["workspace_id"],
          "file_name": result["file_name"], "session_file": str(path)}, "cli#Joined")


def _replaced(path: Path) -> dict[str, Any] | None:
    """The live session stored in ``path`` that writing it would replace, or None."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("token"), str) and live(data) else None


def repoint(session_file: Path | None, address: str) -> None:
    """Point the session stored at ``session_file`` (else the default one) at ``address`` (``HOST``,
    ``HOST:PORT``, ``[v6]:PORT``).

    Only a plugin transport's session moves (a loopback or local one has
    nowhere else to be). The new place must answer for the same session:
    else nothing is stored (``InvalidRequest``, or the room's error).
    """
    from .. import client
    from ..transport_hints import BUILTIN
    from .sessions import load_session

    data = load_session(session_file)
    path = session_file or default_session_file()
    hint = dict(data.get("transport") or {})
    if hint.get("type") in BUILTIN:
        raise InvalidRequest(f"a {hint.get('type')} session cannot move; --address re-points a session of a "
                             "transport plugin (tailcat)", details={"option": "--address"})
    host, port = address.strip(), hint.get("port")
    if host.startswith("[") and "]" in host:
        host, _, rest = host[1:].partition("]")
        port = int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else port
    elif host.count(":") == 1:
        host, _, text = host.partition(":")
        if not text.isdigit():
            raise InvalidRequest(f"--address {address}: HOST or HOST:PORT", details={"option": "--address"})
        port = int(text)
    moved = {**hint, "address": host, "port": port}
    method, route, body = request("session_get", {})
    session = client.call_json(moved, method, route, body=body, token=data["token"])
    if session.get("id") != data.get("session_id"):
        raise InvalidRequest(f"the room at {address} answered for another session ({session.get('id')}); "
                             "nothing changed", details={"option": "--address"})
    save_session(path, {**data, "transport": moved})
    show({"session": session, "workspace_id": data.get("workspace_id"), "file_name": data.get("file_name"),
          "session_file": str(path)}, "cli#Joined")


@invitation_app.command("decode")
@handled
def decode_command(token: Annotated[str, typer.Argument(help="The commonroom://join/… token.")]) -> None:
    """Print the invitation's payload with its secret masked, and whether it has expired.

    The JSON gains ``"expired": true|false`` (checked against this machine's
    clock); an expired invitation is also said on stderr, since the room
    refuses it (``invitation_expired``). Decoding still succeeds (exit 0).
    """
    payload = invitation.decode(token)
    shown = invitation.masked(payload)
    shown["expired"] = invitation.expired(payload)
    show(shown, "invitation")
    if shown["expired"]:
        print(f"ce invitation decode: this invitation expired at {payload['expires_at']}; "
              "the room refuses it (invitation_expired). Ask for a new one.", file=sys.stderr)
