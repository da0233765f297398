"""The stdio side of ``ce mcp``: newline-delimited JSON-RPC ⇄ the room's ``/mcp``.

A desktop MCP client starts ``ce mcp`` and speaks JSON-RPC on its stdin and
stdout, one message per line. The bridge holds no protocol logic of its own:

- each message read from stdin is POSTed as is to the room's ``POST /mcp``
  with the stored session's bearer, through the byte client
  (:mod:`commonroom.client`: HTTP/1.1, ``Host: commonroom``,
  ``Connection: close``, body read until ``Content-Length``), with the
  standard headers derived from the message (:func:`mcp_headers`);
- the answer goes to stdout: a JSON body as one line, an event-stream body
  event by event; a 202 (the answer to a notification) writes nothing;
- a request the room cannot be asked (transport error) or that it answers
  with something that is not JSON-RPC (a 401, a 429) is answered on stdout
  with a JSON-RPC error carrying that request's id;
- a ``GET /mcp`` event stream stays open beside the requests (reconnecting
  when it drops) and its notifications go to stdout too.

Stdout carries protocol messages only; everything else goes to stderr through
:mod:`logging`. Requests run concurrently (one thread each), so a slow tool
call does not hold the others back; answers may come out of order, as
JSON-RPC allows. On ``notifications/cancelled`` the
bridge stops forwarding anything for that request, releases its room
connection and passes the notification on to the room.

The parts, one concern each: :mod:`.messages` (pure: a message's headers,
JSON-RPC errors, an event stream's messages), :mod:`.base` (the session,
the request table and the one writer of stdout), :mod:`.forwarding`
(``POST /mcp`` and its answer), :mod:`.notifications` (``GET /mcp``) and
:mod:`.bridge` (stdin and the end of stdin: :class:`Bridge`).
"""

from __future__ import annotations

from .bridge import Bridge
from .messages import error_message, mcp_headers, sse_messages

__all__ = ["Bridge", "error_message", "mcp_headers", "sse_messages"]
