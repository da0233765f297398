"""The cached read: ``GET`` of an operation declared ``Http(cache="head")``, from the answer cache.

The route (:mod:`commonroom.http.operations`) fills the room's answer
cache (:mod:`commonroom.http.answers`); once the answer for the head is
encoded, :class:`CachedRead` gives it with the headers the route gives
(``ETag``, ``Vary``, gzip when accepted, 304 for a matching
``If-None-Match``). A request with a query string, path parameters or a
body is the route's (:mod:`commonroom.front.door`), as is a cache miss.
"""

from __future__ import annotations

from typing import Any

from ..http.answers import Answer as Entry
from ..http.answers import AnswerCache, representation
from ..operations import Operation
from .request import Answer, Request

__all__ = ["CachedRead"]

_JSON = (b"content-type", b"application/json")
#: Encoded answer heads kept (all forgotten when full): a few per version (plain, gzip, 304).
HEADS = 16


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("latin-1")


class CachedRead:
    """The door of one cached read (:class:`~commonroom.front.request.Door`).

    ``op``: the operation (``Http(cache="head")``, ``GET``, no path
    parameters); ``engine``: the room's engine (its head); ``answers``: the
    answer cache its route fills.
    """

    has_body = False
    reads_body = False
    body_limit = 0

    def __init__(self, op: Operation, engine: Any, answers: AnswerCache):
        assert op.http is not None
        self.op = op
        self.engine = engine
        self.answers = answers
        self.status = op.http.status
        #: the route's key for no query and no path parameters
        self.key = (op.name, "", ())
        #: encoded heads of the answers given (see :meth:`answer`); never changed once made
        self._heads: dict[tuple[int, str, int, int], list[tuple[bytes, bytes]]] = {}

    def admit(self, request: Request) -> Operation:  # noqa: D102 - Door
        return self.op

    def ready(self, request: Request) -> Entry | None:
        """The head's cached answer, or None (a miss: the route answers and fills the cache)."""
        return self.answers.get_head(self.key, self.engine.head().number)

    async def answer(self, request: Request, ticket: Entry) -> Answer:  # noqa: D102 - Door
        headers = request.headers
        status, named, body = representation(self.answers, self.key, ticket, _text(headers.get(b"accept-encoding")),
                                             _text(headers.get(b"if-none-match")), self.status)
        # the same answer's head is encoded once: by its status, ETag (the entry, plain or gzip) and body length
        key = (status, named[1][1], len(named), len(body))
        out = self._heads.get(key)
        if out is None:
            out = [_JSON, *((name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in named)]
            if status != 304:
                out.append((b"content-length", str(len(body)).encode("latin-1")))
            if len(self._heads) >= HEADS:
                self._heads.clear()
            self._heads[key] = out
        return status, out, body
