"""Wire constants shared by the room, ``ce`` (``ce mcp``, ``ce observe``) and the tests.

This module is the one place each of these values is written down; the
server (``http/``, ``mcp/``, ``live/``), the clients and the tests import
them from here. It is a leaf: it imports nothing from ``commonroom`` (and
nothing from ``http/`` or ``mcp/``), so every layer may import it.

- the commonroom HTTP protocol (name and version of the join payload and
  ``GET /workspace/room``), the byte client's ``Host``, the body-size limit;
- MCP: the revision spoken, the ``_meta`` keys, the JSON-RPC error codes,
  the standard header names, which params field ``Mcp-Name`` mirrors, and
  the ``=?base64?…?=`` header value codec (:func:`encode_header_value`,
  :func:`decode_header_value`);
- server-sent events: the media type, event names, the heartbeat comment and
  the retry hint.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Final

# -- the commonroom HTTP protocol ------------------------------------------------

#: ``protocol`` of join payloads and of ``GET /workspace/room`` (seed protocol.txt).
COMMONROOM_PROTOCOL: Final = "commonroom"
#: ``version`` of the commonroom protocol.
COMMONROOM_PROTOCOL_VERSION: Final = "1"
#: The ``Host`` header the byte client sends (the room accepts it on any port).
BYTE_CLIENT_HOST = "commonroom"
#: Largest request body the room accepts, in bytes (HTTP and ``POST /mcp``);
#: ``ce mcp`` refuses a longer line itself.
MAX_BODY_BYTES = 8 * 1024 * 1024
#: Header carrying the SSE resume cursor (``/workspace/observe``).
LAST_EVENT_ID_HEADER = "Last-Event-ID"

# -- media types --------------------------------------------------------------

JSON_TYPE = "application/json"
EVENT_STREAM_TYPE = "text/event-stream"
#: ``Accept`` of an MCP client's ``POST /mcp`` (a JSON answer or an event stream).
MCP_POST_ACCEPT = f"{JSON_TYPE}, {EVENT_STREAM_TYPE}"

# -- MCP ------------------------------------------------------------------------

#: The only MCP revision the room speaks (seed protocol.txt, MCP).
MCP_VERSION = "2026-07-28"
#: ``supportedVersions`` of ``server/discover`` and of -32022 errors.
MCP_SUPPORTED_VERSIONS: tuple[str, ...] = (MCP_VERSION,)

#: ``_meta`` keys of the core protocol.
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

#: JSON-RPC 2.0 and MCP error codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
HEADER_MISMATCH = -32020
MISSING_CAPABILITY = -32021
UNSUPPORTED_VERSION = -32022
#: A room refusal (bearer, rate limit, permission) carrying the room's error object.
ROOM_ERROR = -31000

#: Standard MCP headers (Streamable HTTP), as a client spells them. Header
#: names are case-insensitive: the room looks them up lower-cased
#: (:func:`header_key`).
VERSION_HEADER = "MCP-Protocol-Version"
METHOD_HEADER = "Mcp-Method"
NAME_HEADER = "Mcp-Name"
#: ``Mcp-Param-{Name}`` mirrors a tool argument annotated ``x-mcp-header: Name``.
PARAM_HEADER_PREFIX = "Mcp-Param-"
#: Sent by some clients; the room has no MCP sessions and ignores it.
SESSION_ID_HEADER = "Mcp-Session-Id"
#: The JSON Schema keyword (in a tool's ``inputSchema``) naming an argument's header.
X_MCP_HEADER = "x-mcp-header"

#: method → the params field ``Mcp-Name`` mirrors (core revision; required).
NAME_PARAMS: dict[str, str] = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
}
#: The same for the tasks extension (registered by it with ``name_param=``).
TASK_NAME_PARAMS: dict[str, str] = {
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
#: Every method a client mirrors into ``Mcp-Name`` (``ce mcp``).
CLIENT_NAME_PARAMS: dict[str, str] = {**NAME_PARAMS, **TASK_NAME_PARAMS}

#: Extension identifiers the room advertises in ``server/discover``.
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
SKILLS_EXTENSION = "io.modelcontextprotocol/skills"

#: The LoggingLevel values a ``_meta`` logLevel may take.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def header_key(name: str) -> str:
    """``name`` as the room looks it up (lower case)."""
    return name.lower()


def param_header(name: str) -> str:
    """The header mirroring an argument annotated ``x-mcp-header: name``."""
    return PARAM_HEADER_PREFIX + name


def mirrored_arguments(input_schema: Any) -> dict[str, str]:
    """argument → header name, for top-level properties annotated ``x-mcp-header``."""
    props = input_schema.get("properties") if isinstance(input_schema, dict) else None
    out: dict[str, str] = {}
    for prop, schema in (props if isinstance(props, dict) else {}).items():
        if isinstance(schema, dict) and isinstance(schema.get(X_MCP_HEADER), str):
            out[prop] = schema[X_MCP_HEADER]
    return out


# -- the =?base64?…?= header value codec ---------------------------------------------

BASE64_HEAD = "=?base64?"
BASE64_TAIL = "?="
#: A character an MCP header value may not carry: anything but visible ASCII, space and tab.
_ILLEGAL = re.compile(r"[^\x20-\x7e\t]")


class HeaderValueError(ValueError):
    """A header value with illegal characters or a broken ``=?base64?…?=`` form."""


def _is_wrapped(value: str) -> bool:
    return value.startswith(BASE64_HEAD) and value.endswith(BASE64_TAIL) and \
        len(value) >= len(BASE64_HEAD) + len(BASE64_TAIL)


def encode_header_value(value: str) -> str:
    """``value`` as an MCP header value: plain when header-safe, else ``=?base64?…?=``.

    Plain means visible ASCII and inner spaces only, no leading or trailing
    blank, and not itself looking like the base64 form. The empty string
    stays empty. The wrapped form is standard base64 of the UTF-8 bytes,
    with its padding.
    """
    plain = (
        all(0x20 <= ord(ch) < 0x7F for ch in value)
        and value == value.strip(" ")
        and not (value.startswith(BASE64_HEAD) and value.endswith(BASE64_TAIL))
    )
    if plain or value == "":
        return value
    return BASE64_HEAD + base64.b64encode(value.encode("utf-8")).decode("ascii") + BASE64_TAIL


def decode_header_value(raw: str) -> str:
    """The value an MCP header carries: blanks stripped, ``=?base64?…?=`` decoded.

    Leading and trailing spaces and tabs (OWS) are ignored. The sentinel is
    case-sensitive (``=?BASE64?…`` is a plain value). Raises
    :class:`HeaderValueError` for characters outside visible ASCII, space and
    tab, and for a wrapped value that is not standard base64 with its padding
    (SEP-2243: ``=?base64?w6k?=`` is refused) or not UTF-8.
    """
    value = raw.strip(" \t")
    if _ILLEGAL.search(value):
        raise HeaderValueError("illegal characters in the header value")
    if _is_wrapped(value):
        inner = value[len(BASE64_HEAD):-len(BASE64_TAIL)]
        try:
            # standard base64 with its padding; anything else is malformed
            return base64.b64decode(inner, validate=True).decode("utf-8")
        except (binascii.Error, ValueError, UnicodeDecodeError):
            raise HeaderValueError("malformed =?base64?...?= value") from None
    return value


# -- server-sent events ---------------------------------------------------------------

#: ``event:`` of an observe frame that ends the stream because the cursor is gone.
SSE_EVENT_RESYNC = "resync"
#: ``event:`` of each JSON-RPC message on an MCP stream (also the SSE default type).
SSE_EVENT_MESSAGE = "message"
#: The comment line sent when a stream has been idle (``: heartbeat``).
SSE_HEARTBEAT = "heartbeat"
#: The reconnection hint (``retry:``) the observe stream sends first, in ms.
SSE_RETRY_MS = 5000
#: ``reason`` values of a resync frame.
RESYNC_CURSOR_LOST = "cursor_lost"
RESYNC_LAGGED = "lagged"
