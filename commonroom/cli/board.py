"""``ce board …``: session message boards over the stored session (the byte client).

``ce board post BOARD KIND BODY``, ``ce board list BOARD``, ``ce board
observe BOARD [--token T] [--wait S] [--follow]``, ``ce board assignment
BOARD MESSAGE``, ``ce board complete BOARD MESSAGE ANSWER [--key K] [--fence F]``, ``ce board ack
[BOARD] MESSAGE`` (:mod:`commonroom.cli.board_todo`);
peers: ``ce board peers``, ``ce board peer-post PEER KIND BODY``; the
summaries: ``ce board summary discussion|handoff SESSION``. Each
calls the route its operation declares in the operation table.
``BOARD`` is the public id of the session whose board it is (``ce board``
commands default to the stored session's own board with ``-``). A message
id may be given as the tables print it, a unique start of it
(:mod:`commonroom.cli.ids`).
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any, Optional

import typer

from . import board_todo, ids
from ..errors import InvalidRequest, TransportUnavailable
from ..vocabulary import MESSAGE_KINDS, PRIORITIES, words
from .board_summary import summary_app
from .board_target import BoardArg, board_id as _board
from .common import handled
from .outage import Outage, status_line
from .options import SessionOpt
from .sessions import load_session, session_call
from .printing import outcome, renders, short, table, when
from .render import JSON_OUTPUT, show
from .render_shapes import ack
from .usage import CeTyper

board_app = CeTyper(help="Session message boards: post, list, observe, read and complete todos.",
                        no_args_is_help=True, rich_markup_mode=None)

MessageArg = Annotated[str, typer.Argument(help="The message id (msg_…), or a unique start of it as the tables "
                                           "print it.")]
TagsOpt = Annotated[Optional[list[str]], typer.Option("--tag", help="A tag (repeatable; at most 16).")]
PriorityOpt = Annotated[Optional[str], typer.Option(help=words(PRIORITIES) + ".")]
#: The message fields a board command fills from its own argument and options (a refusal names them so).
MESSAGE_FIELDS = {"kind": "KIND", "priority": "--priority", "tags": "--tag"}
KindArg = Annotated[str, typer.Argument(help=f"The message's kind: {words(MESSAGE_KINDS)} (a todo is work someone "
                                        "completes).")]
BodyArg = Annotated[str, typer.Argument(help="The message text (markdown; at most 16 KiB of UTF-8).")]
RecordingOpt = Annotated[Optional[str], typer.Option("--recording-session", help="Which of your own sessions to "
                                                     "record as author_session_id: a session id, - (or left out) "
                                                     "for the one this command uses, none to record none.")]


def recording(session_file: Any, given: str | None) -> str | None:
    """The ``recording_session_id`` to send: the caller's own session unless ``given`` names another one;
    none for ``none`` (provenance is recorded unless declined)."""
    if given is not None and given.strip().lower() == "none":
        return None
    if given is None or given.strip() == "-":
        return str(load_session(session_file).get("session_id") or "") or None
    return given


@board_app.command("post")
@handled(made="message_id", fields=MESSAGE_FIELDS)
def post_command(board: BoardArg, kind: KindArg, body: BodyArg, priority: PriorityOpt = None, tag: TagsOpt = None,
                 reply_to: Annotated[Optional[str], typer.Option(help="A message of the same board.")] = None,
                 requires_ack: Annotated[bool, typer.Option("--requires-ack", help="Ask the board's session to "
                                                            "acknowledge it: repeated on that session's MCP tool results "
                                                            "until it ACKs (ce board list shows when it did).")] = False,
                 recording_session: RecordingOpt = None, session_file: SessionOpt = None) -> None:
    """Post a message on a board (its kind: see KIND)."""
    payload: dict[str, Any] = {"kind": kind, "body": body}
    board_id = _board(session_file, board)
    if reply_to:
        reply_to = ids.message(session_file, board_id, reply_to, "reply_to")
    for key, value in (("priority", priority), ("tags", tag), ("reply_to", reply_to),
                       ("recording_session_id", recording(session_file, recording_session))):
        if value:
            payload[key] = value
    if requires_ack:
        payload["requires_ack"] = True
    show(session_call(session_file, "post_session_message", {"session_id": board_id, **payload}), "boards#Message")


@board_app.command("list")
@handled
def list_command(board: BoardArg,
                 message_id: Annotated[Optional[str], typer.Option(help="Exactly this message.")] = None,
                 reply_to: Annotated[Optional[str], typer.Option(help="Direct replies of this message.")] = None,
                 kind: Annotated[Optional[str], typer.Option(help="Only this kind.")] = None,
                 status: Annotated[Optional[str], typer.Option(help="open or resolved.")] = None,
                 limit: Annotated[int, typer.Option(help="Items per page, 1 to 200.")] = 50,
                 cursor: Annotated[Optional[str], typer.Option(help="next_cursor of the previous page.")] = None,
                 session_file: SessionOpt = None) -> None:
    """One page of the board's retained messages, oldest first; every filter given applies (AND)."""
    board_id = _board(session_file, board)
    if message_id:
        message_id = ids.message(session_file, board_id, message_id)
    if reply_to:
        reply_to = ids.message(session_file, board_id, reply_to, "reply_to")
    values = {"session_id": board_id, "message_id": message_id or None, "reply_to": reply_to or None,
              "kind": kind or None, "status": status or None, "limit": limit, "cursor": cursor or None}
    show(session_call(session_file, "list_session_messages", values), "boards#MessagesPage")


@board_app.command("assignment")
@handled
def assignment_command(board: BoardArg, message_id: MessageArg, session_file: SessionOpt = None) -> None:
    """The todo, its retained direct replies and the assignment_fence to complete it with."""
    board_id = _board(session_file, board)
    values = {"session_id": board_id, "message_id": ids.message(session_file, board_id, message_id)}
    show(session_call(session_file, "get_session_assignment", values), "boards#Assignment")


@board_app.command("complete")
@handled(fields=MESSAGE_FIELDS)
def complete_command(board: BoardArg, message_id: MessageArg, answer: str,
                     key: Annotated[Optional[str], typer.Option("--key", help="Your completion key (reuse it on "
                                                                "retry); default: derived from the board, the todo "
                                                                "and ANSWER.")] = None,
                     fence: Annotated[Optional[str], typer.Option("--fence", help="The assignment_fence you read; "
                                                                  "default: read the assignment now.")] = None,
                     priority: PriorityOpt = None, tag: TagsOpt = None, recording_session: RecordingOpt = None,
                     session_file: SessionOpt = None) -> None:
    """Complete a todo: one answer, the todo resolved, if the fence is still current.

    Without --fence the assignment is read first and its fence used; without --key the key is derived, so
    on completion_persistence_uncertain (or a lost answer) run the exact same command again.
    """
    extra: dict[str, Any] = {}
    for name, value in (("priority", priority), ("tags", tag),
                        ("recording_session_id", recording(session_file, recording_session))):
        if value:
            extra[name] = value
    board_id = _board(session_file, board)
    show(board_todo.complete(session_file, board_id, ids.message(session_file, board_id, message_id), answer, key,
                             fence, extra), "boards#Completion")


@board_app.command("ack")
@handled
def ack_command(first: Annotated[str, typer.Argument(
                    metavar="[BOARD] MESSAGE_ID", help="The message to acknowledge (msg_…, or a peer message pmsg_… "
                    "of ce board peers), or a unique start of it; BOARD before it, if given, is - or your own "
                    "session's id: only the session a message is addressed to acknowledges it.")],
                second: Annotated[Optional[str], typer.Argument(metavar="", hidden=True, show_default=False)] = None,
                session_file: SessionOpt = None) -> None:
    """Acknowledge a requires_ack message addressed to you (on your own board, or from a peer): you saw it.

    It then leaves the piggyback of your MCP tool results; it is neither
    an answer nor a resolution (a todo is finished with ce board complete).
    """
    board, message_id = ("-", first) if second is None else (first, second)
    own = _board(session_file, "-")
    board_id = _board(session_file, board)
    if board_id != own:
        raise InvalidRequest(f"only the session a message is addressed to acknowledges it: board {board_id} is not "
                             f"yours ({own}); leave BOARD out, or give -", details={"session_id": board_id})
    if ids.bare(message_id).startswith("pmsg_"):
        show(board_todo.acknowledge_peer(session_file, message_id), "boards#ReceivedPeerMessage")
        return
    show(board_todo.acknowledge(session_file, ids.message(session_file, board_id, message_id)), "boards#Message")


@board_app.command("observe")
@handled
def observe_command(board: BoardArg,
                    token: Annotated[Optional[str], typer.Option("--token", help="after_observation_token.")] = None,
                    wait: Annotated[int, typer.Option(help="Seconds to wait when nothing changed, 0 to 30.")] = 0,
                    follow: Annotated[bool, typer.Option("--follow", help="Keep long-polling; one line "
                                                         "per changed message (JSON with --json).")] = False,
                    session_file: SessionOpt = None) -> None:
    """The board's changes after --token (without one: a baseline token).

    With --follow: a baseline (unless --token), then long-polls of --wait
    seconds (30 when 0) forever, printing each changed message as one line
    (with --json: one JSON line) and draining has_more before the next wait;
    history_lost is said (with --json: {"history_lost": true, ...}) and
    following continues from the new token. When the room goes away it says
    so on stderr, reconnects with backoff and says when the room is back.
    """
    board_id = _board(session_file, board)

    def once(after: str | None, seconds: int) -> Any:
        values = {"session_id": board_id, "wait_seconds": seconds, "after_observation_token": after or None}
        return session_call(session_file, "observe_session_messages", values, timeout=seconds + 30.0,
                            idle=seconds + 30.0)

    if not follow:
        show(once(token, wait), "boards#Observation")
        return
    seconds = wait or 30
    outage = Outage(status_line("ce board observe"))

    def following(after: str | None, seconds: int) -> Any:
        """One long-poll; while the room is away, say so once and retry with backoff until it is back."""
        while True:
            try:
                page = once(after, seconds)
            except TransportUnavailable as exc:
                outage.lost(exc.message, f"following board {board_id} on")
                continue
            outage.back(f"following board {board_id} on")
            return page

    try:
        _follow(following, token, seconds, board_id)
    except KeyboardInterrupt:  # Ctrl-C ends following, as for ce observe
        raise typer.Exit(0) from None


def _follow(following: Any, token: str | None, seconds: int, board_id: str) -> None:
    """The --follow loop: each changed message as one line (JSON with --json), for ever."""
    current = token or following(None, 0)["observation_token"]
    while True:
        page = following(current, seconds)
        if not JSON_OUTPUT.get():  # one readable line per changed message
            if page["history_lost"]:
                print(f"history lost on board {board_id}: some changes were dropped; following on", flush=True)
            for message in page["messages"]:
                show(message, "boards#Message")
        else:
            if page["history_lost"]:
                sys.stdout.write(json.dumps({"history_lost": True, "session_id": board_id}) + "\n")
            for message in page["messages"]:
                sys.stdout.write(json.dumps(message, ensure_ascii=False) + "\n")
            sys.stdout.flush()
        current = page["observation_token"]


@board_app.command("peers")
@handled
def peers_command(session_file: SessionOpt = None) -> None:
    """Your peers (your participant's other live sessions) with activity in the last 10 minutes, and the
    peer messages kept for you (24 h), oldest first. Reading records no ACK."""
    show(session_call(session_file, "list_session_peers"), "boards#PeersView")


@board_app.command("peer-post")
@handled(made="message_id", fields=MESSAGE_FIELDS)
def peer_post_command(peer: Annotated[str, typer.Argument(help="The peer id (peer_…), from ce board peers.")],
                      kind: str, body: str, priority: PriorityOpt = None, tag: TagsOpt = None,
                      requires_ack: Annotated[bool, typer.Option("--requires-ack", help="Repeat it on the peer's "
                                                                 "tool results until it ACKs (while kept).")] = False,
                      session_file: SessionOpt = None) -> None:
    """Send a message to a peer: a conversation, not a task (use a board todo for work)."""
    payload: dict[str, Any] = {"kind": kind, "body": body}
    for key, value in (("priority", priority), ("tags", tag)):
        if value:
            payload[key] = value
    if requires_ack:
        payload["requires_ack"] = True
    show(session_call(session_file, "post_peer_message", {"peer_id": peer, **payload}), "boards#PeerMessage")


@renders("boards#PeerMessage")
def _peer_message(answer: dict[str, Any]) -> None:
    """``sample.md: question msg_… to peer_… (normal, not acked): body``."""
    state = ack(answer)
    outcome(f"{answer['kind']} {answer['message_id']} to {answer['peer_id']} "
            f"({answer.get('priority')}{'' if state == '-' else ', ' + state}): {answer.get('body', '')}")


@renders("boards#ReceivedPeerMessage")
def _received_peer_message(answer: dict[str, Any]) -> None:
    """``sample.md: question pmsg_… from peer_… (normal, acked 10:18): body``."""
    state = ack(answer)
    outcome(f"{answer['kind']} {answer['message_id']} from {answer.get('from_peer_id')} "
            f"({answer.get('priority')}{'' if state == '-' else ', ' + state}): {answer.get('body', '')}")


@renders("boards#PeersView")
def _peers_view(answer: dict[str, Any]) -> None:
    """Your active peers (whole ids: ce board peer-post takes them), then the peer messages kept for you."""
    table(answer["peers"], [("peer", lambda p: p["peer_id"]), ("active", lambda p: when(p.get("last_activity_at")))],
          "no peer (another live session of yours) active in the last 10 minutes")
    table(answer["messages"], [
        ("id", lambda m: short(m["message_id"])),
        ("from", lambda m: m.get("from_peer_id")),
        ("kind", lambda m: m["kind"]),
        ("priority", lambda m: m.get("priority")),
        ("when", lambda m: when(m.get("created_at"))),
        ("ack", ack),
        ("body", lambda m: m.get("body") or ""),
    ], "no peer messages kept for you")


board_app.add_typer(summary_app, name="summary")  # ``ce board summary discussion|handoff``
