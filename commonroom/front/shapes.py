"""Checked MCP calls kept by their headers, less their id: a repeated call is checked once.

A client that reads repeats one ``tools/call`` with a new id and the same
headers (``Content-Length`` and ``Authorization`` aside). :class:`Shape`
keeps such a call once every check on its bytes passed, as its body around
the id's token (:func:`template`); a body that is the same bytes around
another plain id token is, token for token, the same message with another
id, so the same checks pass: only what depends on the room's state (the
session, its capability, the cache, the piggyback, the rate limit) is
asked again (:mod:`commonroom.front.toolcalls`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..mcp.dispatch import dumps
from ..mcp.jsonrpc import JsonRpcError
from ..mcp.registry import Tool
from ..mcp.endpoint import parse_message
from ..operations import Operation

__all__ = ["Shape", "template", "SHAPES", "SHAPE_BYTES"]

#: An id put in place of a shape's: an integer literal of at most 20 characters (a
#: 64-bit integer fits; ``commonroom.jsontext``) or a string of printable ASCII without
#: quote or backslash, so the token means what it reads and its echo is itself.
ID_TOKEN = re.compile(rb'-?(?:0|[1-9][0-9]{0,18})|"[ !#-\[\]-~]{0,128}"')
#: The ids :func:`template` puts where it looks for the id's token (a string and an integer;
#: a call whose own id is one of them is never kept).
PROBES = (b'"commonroom-id-probe"', b"-7337")
#: Places :func:`template` tries before giving up (each is up to two parses of the body).
TEMPLATE_TRIES = 8
#: Shapes kept (all dropped when full), of requests of at most SHAPE_BYTES of body and headers:
#: at most ~2.5 MB.
SHAPES = 256
SHAPE_BYTES = 2048


@dataclass(frozen=True)
class Shape:
    """A call that passed every check on its bytes, less its id (see the module docstring).

    ``prefix`` and ``suffix``: its body around the id's token (empty: the
    token was not found, the shape is not kept). ``headers``: those the
    checks read (``Origin``, ``Mcp-…``), decoded; no ``Authorization`` (the
    bearer is read from each request). ``op``, ``tool``: the operation and
    its MCP tool; ``params``, ``arguments``: the call's, checked.
    """

    prefix: bytes
    suffix: bytes
    headers: dict[str, str]
    params: dict[str, Any]
    op: Operation
    tool: Tool
    arguments: dict[str, Any]

    def id_in(self, body: bytes) -> int | str | None:
        """The id of ``body`` when it is this call with a plain id token (:data:`ID_TOKEN`), else None."""
        prefix, suffix = self.prefix, self.suffix
        if len(body) <= len(prefix) + len(suffix) or not body.startswith(prefix) or not body.endswith(suffix):
            return None
        token = body[len(prefix):len(body) - len(suffix)]
        if not ID_TOKEN.fullmatch(token):
            return None
        return token[1:-1].decode("ascii") if token[:1] == b'"' else int(token)


def template(body: bytes, message: dict[str, Any]) -> tuple[bytes, bytes]:
    """``body`` around the token of ``message``'s id: ``(prefix, suffix)``, or ``(b"", b"")``.

    The token is where putting another id (:data:`PROBES`) parses to the same
    message with that id and nothing else changed; at most
    :data:`TEMPLATE_TRIES` places are tried, and only a plain token
    (:data:`ID_TOKEN`, as the client wrote it) is looked for.
    """
    text = dumps(message["id"]).encode("utf-8")
    if not ID_TOKEN.fullmatch(text) or text in PROBES:
        return b"", b""
    start = 0
    for _ in range(TEMPLATE_TRIES):
        at = body.find(text, start)
        if at == -1:
            break
        prefix, suffix = body[:at], body[at + len(text):]
        try:
            if all(parse_message(prefix + probe + suffix) == {**message, "id": json.loads(probe)} for probe in PROBES):
                return prefix, suffix
        except JsonRpcError:
            pass
        start = at + 1
    return b"", b""
