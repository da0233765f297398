"""Cached reads answered before Falcon: the hot read at the cost of a lookup.

Issue 13 (reads at the stack's ceiling): ``GET /workspace/document`` is the
read every client repeats; once its answer for the head is encoded
(:mod:`commonroom.http.answers`), what is left per request is the stack:
Falcon's request and response objects, the middleware, the router. That
was more than half of our Python per read.

:class:`CachedReads` wraps the ingress app and answers such a request
itself when everything it needs is already known, with exactly the
answer the Falcon route would give (``tests/unit/test_cached_reads.py``
compares them byte for byte):

- the operation's binding is ``GET`` with ``cache="head"`` and no path
  parameters (from the operation table; today ``document_read``), and the
  request has no query string and no body;
- the bearer is one live session the engine already knows
  (``Engine.authenticate``, the session cache), holding the operation's
  capability (``Operation.authorize``);
- the answer for the head is in the answer cache;
- then the request is counted against the bearer's rate limit, as the
  middleware would count it.

Anything else, every error included (no bearer, unknown or expired session,
missing capability, over the limit, a cache miss, a sidecar that cannot
answer), goes to the Falcon app untouched, which answers it as always; nothing was counted for it here
(the limiter records no refused request), so nothing is counted twice.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

from .. import tokens
from ..operations import Operation, Table
from ..wire import bearer_of, counted
from .answers import AnswerCache, representation

__all__ = ["CachedReads", "bearer_actor", "fast_reads"]

_JSON = (b"content-type", b"application/json")
#: Request headers that mean a body follows (the fast path takes none).
_BODY_HEADERS = (b"content-length", b"transfer-encoding")


def fast_reads(table: Table, listener: str) -> dict[str, Operation]:
    """path → operation for the reads :class:`CachedReads` may answer on ``listener``."""
    return {op.http.path: op for op in table.http(listener)
            if op.http is not None and op.http.method == "GET" and op.http.cache == "head"
            and not op.http.path_params() and not op.http.public}


def bearer_actor(engine: Any, op: Operation, authorization: bytes | None) -> tuple[Any, str] | None:
    """``(actor, token digest)`` of an ``Authorization: Bearer`` value naming a live session that holds
    ``op``'s capability, else None (any refusal, or a sidecar that cannot answer: the app's to answer).

    Shared by the paths answered before Falcon (:class:`CachedReads`,
    ``commonroom.http.directwrites.DirectWrites``); nothing is counted here.
    """
    token = None if authorization is None else bearer_of(authorization.decode("latin-1"))
    if not token:
        return None
    digest = tokens.digest(token)
    try:
        actor = engine.authenticate(token, digest)
        op.authorize(actor)
    except Exception:
        return None
    return actor, digest


class CachedReads:
    """ASGI wrapper of the ingress app (see the module docstring).

    ``app``: the Falcon app; ``engine``: the room's engine (authenticate,
    head); ``answers``: the answer cache its cached responders fill;
    ``limiter``: the ingress rate limiter (or None); ``reads``: from
    :func:`fast_reads`. ``served`` counts the requests answered here.
    """

    def __init__(self, app: Callable, engine: Any, answers: AnswerCache, limiter: Any,
                 reads: dict[str, Operation]):
        self.app = app
        self.engine = engine
        self.answers = answers
        self.limiter = limiter
        self.reads = reads
        self.served = 0

    async def __call__(self, scope: dict[str, Any], receive: Callable[[], Awaitable[dict[str, Any]]],
                       send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:  # noqa: D102 - ASGI
        if scope["type"] == "http" and scope["method"] == "GET" and not scope["query_string"]:
            op = self.reads.get(scope["path"])
            if op is not None:
                answer = self._answer(op, scope["headers"])
                if answer is not None:
                    status, headers, body = answer
                    self.served += 1
                    await send({"type": "http.response.start", "status": status, "headers": headers})
                    await send({"type": "http.response.body", "body": body} if body else
                               {"type": "http.response.body"})
                    return
        await self.app(scope, receive, send)

    def _answer(self, op: Operation, raw: list[tuple[bytes, bytes]]) -> tuple[int, list, bytes] | None:
        """``(status, ASGI headers, body)``, or None to leave the request to the app."""
        authorization = accept_encoding = if_none_match = None
        for name, value in raw:
            if name == b"authorization":
                if authorization is not None:
                    return None  # repeated: the app says what that means
                authorization = value
            elif name == b"accept-encoding":
                if accept_encoding is not None:
                    return None
                accept_encoding = value
            elif name == b"if-none-match":
                if if_none_match is not None:
                    return None
                if_none_match = value
            elif name in _BODY_HEADERS:
                return None
        engine = self.engine
        found = bearer_actor(engine, op, authorization)
        if found is None:
            return None
        actor, digest = found
        key = (op.name, "", ())  # the cached responder's key for no query and no path parameters
        entry = self.answers.get_head(key, engine.head().number)
        if entry is None:
            return None
        if not counted(self.limiter, digest):
            return None  # the app counts it and answers 429
        status, headers, body = representation(
            self.answers, key, entry,
            None if accept_encoding is None else accept_encoding.decode("latin-1"),
            None if if_none_match is None else if_none_match.decode("latin-1"), op.http.status if op.http else 200)
        out = [_JSON, *((name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers)]
        if status != 304:
            out.append((b"content-length", str(len(body)).encode("latin-1")))
        return status, out, body
