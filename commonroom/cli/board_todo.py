"""What ``ce board complete`` and ``ce board ack`` do beyond one call: the fence and key read for you, the ACK.

``ce board complete BOARD MESSAGE ANSWER`` without ``--fence`` reads the
todo's assignment itself and completes it with that ``assignment_fence``
(:func:`complete`); without ``--key`` the completion key is derived from
the board, the todo and the answer (:func:`derived_key`), so running the
exact same command again is the same completion. A rerun that finds the
todo already resolved by that very answer of this session prints that
completion again (``replayed``) instead of failing on the new fence.

``ce board ack MESSAGE`` acknowledges a ``requires_ack`` message of your
own board (:func:`acknowledge`), or one a peer sent you (:func:`acknowledge_peer`). An ACK exists only on MCP (the message
ids echoed in a tool call's ``params._meta.ack_session_message_ids``,
docs/boards.md, *ACK*), so ``ce`` makes one MCP tool call with the stored
session, reading that message (``list_session_messages``) and echoing its
id, then reads it back to show when it was first acknowledged.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ..errors import InvalidRequest, MessageNotFound, from_dict
from ..protocol import MCP_VERSION, META_CAPABILITIES, META_VERSION
from .ids import bare
from .sessions import load_session, session_call

#: The ``_meta`` member of a tools/call that ACKs messages (the room's :data:`commonroom.mcp.dispatch.META_ACK_IDS`).
ACK_META = "ack_session_message_ids"


def derived_key(board: str, message_id: str, answer: str) -> str:
    """A completion key for completing ``message_id`` of ``board`` with ``answer``: the same for the same three."""
    digest = hashlib.sha256("\0".join((board, message_id, answer)).encode("utf-8")).hexdigest()
    return f"ce-{digest[:40]}"


def complete(session_file: Path | None, board: str, message_id: str, answer: str, key: str | None,
             fence: str | None, extra: dict[str, Any]) -> dict[str, Any]:
    """Complete the todo ``message_id`` of ``board`` with ``answer``: the ``boards#Completion``.

    ``fence`` None: read the assignment and use its fence; when the todo is
    already resolved by this session's answer with this very text, that
    completion is answered again (``replayed: true``), nothing is sent.
    ``key`` None: :func:`derived_key`. ``extra``: priority, tags,
    recording session. The room's errors are raised as it answered them.
    """
    if fence is None:
        assignment = session_call(session_file, "get_session_assignment",
                                  {"session_id": board, "message_id": message_id})
        done = _already_answered(assignment, answer, load_session(session_file))
        if done is not None:
            return done
        fence = str(assignment["assignment_fence"])
    payload = {"session_id": board, "message_id": message_id, "answer": answer,
               "completion_key": key or derived_key(board, message_id, answer),
               "expected_assignment_fence": fence, **extra}
    answer_json: dict[str, Any] = session_call(session_file, "complete_session_message", payload)
    return answer_json


def acknowledge_peer(session_file: Path | None, given: str) -> dict[str, Any]:
    """ACK the ``requires_ack`` peer message ``given`` (an id or a unique start, among the peer messages kept for
    the caller, ``list_session_peers``): that message (``ReceivedPeerMessage``), after the ACK.

    The ACK rides on one MCP call of ``workspace_status`` (any tool call carries it). ``MessageNotFound`` when
    no kept peer message has that id; ``InvalidRequest`` when several start so, or it asks for no ACK.
    """
    session = load_session(session_file)
    text = bare(given)

    def kept() -> list[dict[str, Any]]:
        messages = session_call(session_file, "list_session_peers").get("messages") or []
        return [m for m in messages if str(m.get("message_id", "")).startswith(text)]

    found = kept()
    if not found:
        raise MessageNotFound(f"no peer message {given} is kept for you (ce board peers lists them; they are kept "
                              "24 h)", details={"message_id": given, "peer_messages": True})
    if len(found) > 1:
        raise InvalidRequest(f"{given!r} is the start of more than one peer message id "
                             f"({', '.join(m['message_id'] for m in found[:5])}); give more of it",
                             details={"message_id": given})
    message = found[0]
    if not message.get("requires_ack"):
        raise InvalidRequest(f"peer message {message['message_id']} does not ask for an acknowledgement "
                             "(requires_ack is false)", details={"message_id": message["message_id"]})
    if message.get("first_acked_at") is None:
        _mcp_call(session, "workspace_status", {}, {ACK_META: [message["message_id"]]})
        found = kept() or [message]
    acked: dict[str, Any] = found[0]
    return acked


def _already_answered(assignment: dict[str, Any], answer: str, session: dict[str, Any]) -> dict[str, Any] | None:
    """The completion a resolved todo records, when its answer is ``answer`` by this session; else None."""
    todo = assignment.get("todo") or {}
    if todo.get("status") != "resolved" or not todo.get("resolved_by_message_id"):
        return None
    for reply in assignment.get("replies") or []:
        if reply.get("message_id") != todo["resolved_by_message_id"] or reply.get("body") != answer:
            continue
        by = (reply.get("author") or {}).get("name")
        if by == session.get("participant") and reply.get("author_session_id") in (session.get("session_id"), None):
            return {"session_id": assignment.get("session_id"), "todo": todo, "answer": reply, "replayed": True}
    return None


def _mcp_call(session: dict[str, Any], name: str, arguments: dict[str, Any], meta: dict[str, Any]) -> Any:
    """One MCP ``tools/call`` with the stored session (its ``structuredContent``; a refusal raised)."""
    from .. import client
    from ..mcp_bridge import mcp_headers

    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": name, "arguments": arguments,
                          "_meta": {META_VERSION: MCP_VERSION, META_CAPABILITIES: {}, **meta}}}
    response = client.request(session["transport"], "POST", "/mcp", token=session["token"],
                              raw_body=json.dumps(message).encode("utf-8"), headers=mcp_headers(message))
    body = response.json() if response.body.strip() else {}
    if not isinstance(body, dict) or "result" not in body:
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict) and isinstance(error.get("data"), dict) and "error" in error["data"]:
            raise from_dict(error["data"])  # the room's own refusal (a 401 of an expired session)
        if isinstance(body, dict) and "error" in body and "message" in body:
            raise from_dict(body)
        raise InvalidRequest(f"the room answered the ACK with HTTP {response.status}", details={"status": response.status})
    result = body["result"]
    if result.get("isError"):
        raise from_dict(result.get("structuredContent") or {})
    return result.get("structuredContent")


def acknowledge(session_file: Path | None, message_id: str) -> dict[str, Any]:
    """ACK the ``requires_ack`` message ``message_id`` of the caller's own board: that message, after the ACK.

    ``MessageNotFound`` when the board holds no such message;
    ``InvalidRequest`` when it asks for no ACK (or is resolved already:
    only open ones are acknowledged).
    """
    session = load_session(session_file)
    board = str(session.get("session_id") or "")
    if not board:
        raise InvalidRequest("this session file names no session id: join again to acknowledge messages",
                             details={"session_file": str(session_file or "")})
    values = {"session_id": board, "message_id": message_id, "limit": 1}
    found = (session_call(session_file, "list_session_messages", values).get("messages") or [])
    if not found:
        raise MessageNotFound(f"your board has no message {message_id}",
                              details={"session_id": board, "message_id": message_id})
    message = found[0]
    if not message.get("requires_ack"):
        raise InvalidRequest(f"message {message_id} does not ask for an acknowledgement (requires_ack is false)",
                             details={"message_id": message_id})
    if message.get("status") != "open":
        raise InvalidRequest(f"message {message_id} is {message.get('status')}: only open messages are "
                             "acknowledged", details={"message_id": message_id})
    if message.get("first_acked_at") is None:
        _mcp_call(session, "list_session_messages", values, {ACK_META: [message_id]})
        found = session_call(session_file, "list_session_messages", values).get("messages") or [message]
    acked: dict[str, Any] = found[0]
    return acked
