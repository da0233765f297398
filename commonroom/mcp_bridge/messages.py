"""The pure parts of ``ce mcp``: the headers of a message, JSON-RPC errors, an event stream's messages.

Nothing here holds state or opens a connection: :mod:`.forwarding` and
:mod:`.notifications` build on these, and ``ce board todo`` borrows
:func:`mcp_headers` (docs/ce-mcp.md).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Callable, Iterable, Iterator

from ..protocol import (
    CLIENT_NAME_PARAMS,
    JSON_TYPE,
    MCP_POST_ACCEPT,
    MCP_VERSION,
    META_VERSION,
    METHOD_HEADER,
    NAME_HEADER,
    VERSION_HEADER,
    encode_header_value,
    param_header,
)
from ..sse_client import Frame

log = logging.getLogger("commonroom.mcp_bridge")


def _scalar_text(value: Any) -> str | None:
    """A tool argument as its ``Mcp-Param-*`` text (None: not mirrored)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, str)):
        return str(value)
    return None


def as_object(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def mcp_headers(message: dict[str, Any], param_headers: dict[str, str] | None = None) -> dict[str, str]:
    """The standard MCP headers for one outgoing message.

    ``MCP-Protocol-Version`` comes from ``params._meta`` (the revision we
    speak when the message has none, so that the room reports the missing
    ``_meta`` field itself); ``Mcp-Method`` is the method; ``Mcp-Name``
    mirrors the field the method names
    (:data:`commonroom.protocol.CLIENT_NAME_PARAMS`); ``param_headers``
    (argument → header name, from the tool's ``x-mcp-header`` annotations)
    adds ``Mcp-Param-*``. Values are encoded with
    :func:`commonroom.protocol.encode_header_value`.
    """
    params = as_object(message.get("params"))
    meta = as_object(params.get("_meta"))
    version = meta.get(META_VERSION)
    headers = {
        "Content-Type": JSON_TYPE,
        "Accept": MCP_POST_ACCEPT,
        VERSION_HEADER: encode_header_value(version if isinstance(version, str) else MCP_VERSION),
    }
    method = message.get("method")
    if isinstance(method, str):
        headers[METHOD_HEADER] = encode_header_value(method)
        field_name = CLIENT_NAME_PARAMS.get(method)
        if field_name and isinstance(params.get(field_name), str):
            headers[NAME_HEADER] = encode_header_value(params[field_name])
    if param_headers and method == "tools/call":
        arguments = as_object(params.get("arguments"))
        for argument, name in param_headers.items():
            text = _scalar_text(arguments.get(argument))
            if text is not None:
                headers[param_header(name)] = encode_header_value(text)
    return headers


def error_message(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response (``id`` omitted when there is none)."""
    out: dict[str, Any] = {"jsonrpc": "2.0"}
    if request_id is not None:
        out["id"] = request_id
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    out["error"] = error
    return out


def sse_messages(frames: Iterable[Frame], on_retry: Callable[[int], None] | None = None) -> Iterator[Any]:
    """The JSON payloads of a server-sent event stream's frames, one per event.

    ``frames`` come from :func:`commonroom.client.stream` (or
    :func:`commonroom.sse_client.iter_frames`). Blocks without data
    (heartbeats) and events whose data is not JSON are skipped; a ``retry``
    hint is passed to ``on_retry``.
    """
    for frame in frames:
        if frame.retry is not None and on_retry is not None:
            on_retry(frame.retry)
        if not frame.is_event:
            continue
        try:
            yield frame.json()
        except ValueError:
            log.warning("skipping an event that is not JSON: %.200s", frame.data)


def is_jsonrpc(value: Any) -> bool:
    """True when ``value`` is a JSON-RPC message (a response, an error or a request/notification)."""
    return isinstance(value, dict) and value.get("jsonrpc") == "2.0" and ("result" in value or "error" in value
                                                                          or "method" in value)


def request_key(request_id: Any) -> str:
    """A JSON-RPC id as a dictionary key (``1`` and ``"1"`` are different ids)."""
    return json.dumps(request_id)
