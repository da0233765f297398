"""Encoded answers of the document reads, built once per version and reused.

``GET /workspace/document`` (the head, or a region of it) and ``GET
/workspace/versions/{n}`` answer the same bytes for as long as the version
they name is the same. An operation whose :class:`~commonroom.operations.Http`
binding sets ``cache`` keeps its encoded answers here:

- ``cache="head"``: the answer depends on the input and on the head version
  (one entry per input, stamped with the head it answers: an entry of an
  older head is a miss and is replaced, so superseded heads are not kept);
- ``cache="version"``: the answer depends on the input only (a committed
  version never changes).

Each entry holds the JSON bytes (identical to :func:`commonroom.wire.dumps`
of the answer), its strong ``ETag`` (the answer's ``content_hash``, quoted)
and, once a client asked for it, the gzip-encoded bytes (``ETag`` with
``-gzip`` inside the quotes: a strong validator names one representation).
``If-None-Match`` naming either tag is answered ``304 Not Modified``. Every
answer of such an operation says ``Vary: Accept-Encoding``.

The cache is bounded by the bytes it holds (:data:`CACHE_BYTES`, identity
plus gzip bytes; an answer larger than a quarter of it is served but not
kept). Authentication, the rate limit and the capability check run before
the cache is consulted; errors are never cached.
"""

from __future__ import annotations

import gzip
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import falcon

from ..wire import dumps

#: Most bytes of encoded answers kept (identity plus gzip), per room.
CACHE_BYTES = 64 * 1024 * 1024
#: gzip level of the cached compressed answers (built once per version).
GZIP_LEVEL = 6


@dataclass
class Answer:
    """One encoded answer: its JSON bytes, validator and (lazily) gzip bytes."""

    data: bytes
    etag: str
    gzipped: bytes | None = None
    #: The head version a ``cache="head"`` answer was built at (None: a committed version's answer).
    head: int | None = None

    @property
    def gzip_etag(self) -> str:
        """The validator of the gzip representation."""
        return self.etag[:-1] + '-gzip"'

    @property
    def size(self) -> int:
        """Bytes held by this entry."""
        return len(self.data) + len(self.gzipped or b"")


class AnswerCache:
    """A byte-bounded LRU of :class:`Answer` (safe to use from any thread)."""

    def __init__(self, limit: int = CACHE_BYTES):
        self.limit = limit
        self.held = 0
        self._entries: OrderedDict[Any, Answer] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Answer | None:
        """The entry for ``key`` (made most recent), or None."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def get_head(self, key: Any, head: int) -> Answer | None:
        """The entry for ``key`` if it was built at ``head``, else None."""
        entry = self.get(key)
        return entry if entry is not None and entry.head == head else None

    def put(self, key: Any, answer: dict[str, Any], head: int | None = None) -> Answer:
        """Encode ``answer`` (which has a ``content_hash``), keep it if it fits, return it.

        ``head``: the head version the answer was built at (a ``cache="head"``
        answer); it replaces whatever ``key`` held, an older head's answer included.
        """
        entry = Answer(dumps(answer), f'"{answer["content_hash"]}"', head=head)
        self._keep(key, entry)
        return entry

    def put_encoded(self, key: Any, data: bytes, content_hash: str) -> Answer:
        """Keep already encoded answer bytes (``data``) whose validator is ``content_hash``."""
        entry = Answer(data, f'"{content_hash}"')
        self._keep(key, entry)
        return entry

    def gzipped(self, key: Any, entry: Answer) -> bytes:
        """``entry``'s gzip bytes, compressed the first time they are asked for."""
        if entry.gzipped is None:
            compressed = gzip.compress(entry.data, compresslevel=GZIP_LEVEL, mtime=0)
            with self._lock:
                if self._entries.get(key) is entry:
                    self.held += len(compressed)
                entry.gzipped = compressed
            self._trim()
        return entry.gzipped

    def _keep(self, key: Any, entry: Answer) -> None:
        if entry.size * 4 > self.limit:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.held -= old.size
            self._entries[key] = entry
            self.held += entry.size
        self._trim()

    def _trim(self) -> None:
        with self._lock:
            while self.held > self.limit and self._entries:
                _, dropped = self._entries.popitem(last=False)
                self.held -= dropped.size


def _tags(header: str) -> list[str]:
    """The entity tags of an ``If-None-Match`` value (weak ``W/`` prefixes dropped)."""
    out = []
    for part in header.split(","):
        tag = part.strip()
        if tag.startswith("W/"):
            tag = tag[2:]
        if tag:
            out.append(tag)
    return out


def accepts_gzip(header: str | None) -> bool:
    """True when an ``Accept-Encoding`` value accepts ``gzip`` (``q`` above 0)."""
    if not header:
        return False
    for part in header.split(","):
        coding, _, params = part.strip().partition(";")
        if coding.strip().lower() not in ("gzip", "x-gzip"):
            continue
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    return float(value.strip()) > 0
                except ValueError:
                    return False
        return True
    return False


def representation(cache: AnswerCache, key: Any, entry: Answer, accept_encoding: str | None,
                   if_none_match: str | None, status: int = 200) -> tuple[int, list[tuple[str, str]], bytes]:
    """``(status, headers, body)`` of ``entry`` for a request with these two headers.

    304 (no body) when ``If-None-Match`` names it, gzip when accepted; the
    headers are ``Vary``, ``ETag`` and, for gzip, ``Content-Encoding``
    (the content type is always ``application/json``).
    """
    compressed = accepts_gzip(accept_encoding)
    headers = [("Vary", "Accept-Encoding"), ("ETag", entry.gzip_etag if compressed else entry.etag)]
    if if_none_match is not None:
        tags = _tags(if_none_match)
        if "*" in tags or entry.etag in tags or entry.gzip_etag in tags:
            return 304, headers, b""
    if compressed:
        headers.append(("Content-Encoding", "gzip"))
        return status, headers, cache.gzipped(key, entry)
    return status, headers, entry.data


def respond(req: falcon.asgi.Request, resp: falcon.asgi.Response, cache: AnswerCache, key: Any,
            entry: Answer, status: int = 200) -> None:
    """Answer ``entry`` on ``resp``: 304 when ``If-None-Match`` names it, gzip when accepted."""
    code, headers, body = representation(cache, key, entry, req.get_header("Accept-Encoding"),
                                         req.get_header("If-None-Match"), status)
    resp.content_type = "application/json"
    for name, value in headers:
        resp.set_header(name, value)
    resp.status = code
    if code != 304:
        resp.data = body
