"""Request and response plumbing shared by both adapters (HTTP routes and ``/mcp``).

- :func:`read_body` reads a body with a hard size cap, refusing an
  oversized body (``limit_exceeded`` 413) from its Content-Length or as soon
  as the streamed bytes pass the cap, without buffering it whole;
  :func:`parse_json` parses it.
- :func:`bearer_of` reads the token of an ``Authorization`` value (the
  room's edge reads it once) and :func:`retry_after` sets ``Retry-After``
  from a refusal.
- :func:`send` writes a JSON body; :func:`send_error` renders the catalogue.
"""

from __future__ import annotations

import json
from typing import Any

import falcon

from . import jsontext
from .errors import CommonroomError, InvalidRequest, LimitExceeded, body_too_large
from .protocol import MAX_BODY_BYTES  # largest request body accepted, in bytes


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON (non-ASCII kept as is)."""
    return jsontext.dumps(value).encode("utf-8")


def send(resp: Any, value: Any, status: int = 200) -> None:
    """Set a JSON response on ``resp`` (a Falcon response, or a :class:`Rendered`)."""
    resp.status = status
    resp.content_type = "application/json"
    resp.data = dumps(value)


class Rendered:
    """A response as :func:`send` and :func:`send_error` set it, for an answer given outside Falcon.

    ``status`` (int), ``content_type``, ``data`` (bytes) and the headers
    :meth:`set_header` was given, in order; :meth:`asgi_headers` gives them
    as Falcon sends them (``tests/unit/test_front_writes.py`` compares).
    """

    __slots__ = ("status", "content_type", "data", "headers")

    def __init__(self) -> None:
        self.status = 200
        self.content_type = "application/json"
        self.data = b""
        self.headers: list[tuple[bytes, bytes]] = []

    def set_header(self, name: str, value: str) -> None:
        """Add ``name: value`` (latin-1, the name in lower case as ASGI carries it)."""
        self.headers.append((name.lower().encode("latin-1"), value.encode("latin-1")))

    def asgi_headers(self) -> list[tuple[bytes, bytes]]:
        """``Content-Type``, the headers set, then ``Content-Length``."""
        return [(b"content-type", self.content_type.encode("latin-1")), *self.headers,
                (b"content-length", str(len(self.data)).encode("latin-1"))]


def send_error(resp: Any, error: CommonroomError) -> None:
    """Render ``error`` as the seed's envelope with its status (and Retry-After)."""
    send(resp, error.to_dict(), error.status)
    retry_after(resp, error)
    allowed = error.details.get("allowed") if error.code == "method_not_allowed" else None
    if isinstance(allowed, list):
        resp.set_header("Allow", ", ".join(allowed))


#: The body of the answer to a failure that is a bug (no error of the catalogue): Falcon's own JSON 500.
INTERNAL_ERROR = falcon.HTTPInternalServerError().to_json()


def send_internal_error(resp: Any) -> None:
    """Set the 500 answer to a bug (:data:`INTERNAL_ERROR`); the caller logs the traceback."""
    resp.status = 500
    resp.content_type = "application/json"
    resp.data = INTERNAL_ERROR


def retry_after(resp: Any, error: CommonroomError) -> None:
    """Set ``Retry-After`` (whole seconds) when ``error`` carries ``retry_after_seconds``."""
    retry = error.recovery.get("retry_after_seconds")
    if retry is not None:
        resp.set_header("Retry-After", str(int(retry)))


async def read_body(req: falcon.asgi.Request, *, limit: int = MAX_BODY_BYTES) -> bytes:
    """The request's body bytes; ``LimitExceeded`` (413) past ``limit`` bytes."""
    length = req.content_length
    if length is not None and length > limit:
        raise body_too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in req.stream:
        size += len(chunk)
        if size > limit:
            raise body_too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def parse_json(raw: bytes) -> Any:
    """A request body's JSON value: ``{}`` for no bytes at all, else the JSON text's (``InvalidRequest`` if not JSON).

    A body of only whitespace is not JSON (RFC 8259 needs a value).
    """
    if not raw:
        return {}
    try:
        return jsontext.loads(raw)
    except jsontext.NotJson as exc:
        raise InvalidRequest(f"request body is not JSON: {exc}", details={"pointer": ""}) from None


def bearer_of(header: str | None) -> str | None:
    """The token of an ``Authorization`` header value ``Bearer <token>``, else None."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()
