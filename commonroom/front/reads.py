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
from ..http.edge import NOSNIFF
from ..operations import Operation
from .request import Answer, Request

__all__ = ["CachedRead"]

_JSON = (b"content-type", b"application/json")
#: Answers kept for the head's entry, by the request's two headers as sent (all forgotten when
#: full): a client sends the same ones every time, so a few cover every reader.
ANSWERS = 16


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
        #: the entry last answered, and its answers by ``(Accept-Encoding, If-None-Match)`` as sent:
        #: ``(status, head, body, the head with nosniff)``, never changed once made; a new entry
        #: (a new head) starts them again, so no entry the answer cache let go is held
        self._made: tuple[Entry | None, dict[tuple[bytes | None, bytes | None], tuple]] = (None, {})

    def admit(self, request: Request) -> Operation:  # noqa: D102 - Door
        return self.op

    def ready(self, request: Request) -> Entry | None:
        """The head's cached answer, or None (a miss: the route answers and fills the cache)."""
        return self.answers.get_head(self.key, self.engine.head().number)

    async def answer(self, request: Request, ticket: Entry) -> Answer:  # noqa: D102 - Door
        status, head, body, _ = self._made_for(ticket, request.headers)
        return status, head, body

    def at_once(self, headers: dict[bytes, bytes]) -> Answer | None:
        """The answer from the head's cached entry for a request with ``headers`` (the edge's reading),
        its head carrying the edge's ``nosniff``; None on a miss (the route answers and fills the cache).

        The entry answered last is used again while the head is the one it was built at, without asking
        the answer cache (which may have let it go since: the door then holds this one entry beside it)."""
        number = self.engine.head().number
        ticket = self._made[0]
        if ticket is None or ticket.head != number:  # the entry answered last is the head's: no lookup
            ticket = self.answers.get_head(self.key, number)
            if ticket is None:
                return None
        status, _, body, head = self._made_for(ticket, headers)
        return status, head, body

    def _made_for(self, ticket: Entry, headers: dict[bytes, bytes]) -> tuple:
        """``(status, head, body, head with nosniff)`` of ``ticket`` for these request headers, made once:
        304 when ``If-None-Match`` names it, gzip when accepted (:func:`~commonroom.http.answers.representation`),
        with the route's ``Content-Type``, ``Vary``, ``ETag`` and ``Content-Length``."""
        kept, made = self._made
        if kept is not ticket:
            made = {}
            self._made = (ticket, made)
        asked = (headers.get(b"accept-encoding"), headers.get(b"if-none-match"))
        out = made.get(asked)
        if out is None:
            status, named, body = representation(self.answers, self.key, ticket, _text(asked[0]), _text(asked[1]),
                                                 self.status)
            head = [_JSON, *((name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in named)]
            if status != 304:
                head.append((b"content-length", str(len(body)).encode("latin-1")))
            out = (status, head, body, [*head, NOSNIFF])
            if len(made) >= ANSWERS:
                made.clear()
            made[asked] = out
        return out
