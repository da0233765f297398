"""The checkpoints old versions are read from: bounded caches of their lines.

Reading version N replays at most ``CHECKPOINT_EVERY - 1`` hunks on the
lines of the checkpoint below it (:mod:`commonroom.engine.versions`). Two
:class:`CheckpointLines` keep those lines: the text lines (``version_text``)
and their JSON escapes (``version_encoded``, the HTTP answer of an old
version). Building them costs about 2 ms (split) and 10 ms (escape) for a
1 MB checkpoint.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from json.encoder import encode_basestring
from typing import Any

#: Most memory the checkpoints' text lines kept for reconstruction may take
#: (estimated: text bytes plus :data:`LINE_OVERHEAD` per line).
CHECKPOINT_CACHE_BYTES = 32 * 1024 * 1024
#: The same bound for their JSON-escaped lines (old versions answered over HTTP):
#: 64 MB holds every checkpoint of a 1 MB document's first ~1,500 versions.
CHECKPOINT_JSON_CACHE_BYTES = 64 * 1024 * 1024
#: Estimated bytes a line costs beyond its text (a str object and a list slot).
LINE_OVERHEAD = 64


def json_line(line: str) -> bytes:
    """``line`` as it appears inside a JSON string (``jsontext.dumps``: non-ASCII kept), UTF-8."""
    return encode_basestring(line)[1:-1].encode("utf-8")


def json_lines(lines: list[str]) -> list[bytes]:
    """:func:`json_line` of each of ``lines`` (line by line: faster than one pass over 1 MB)."""
    return [json_line(line) for line in lines]


def entry_size(text_bytes: int, lines: int) -> int:
    """The estimated bytes of a cached checkpoint: its text plus :data:`LINE_OVERHEAD` per line."""
    return text_bytes + LINE_OVERHEAD * lines


class CheckpointLines:
    """A bounded LRU of checkpoints' line lists (never mutated; callers copy).

    Reading an old version replays at most ``CHECKPOINT_EVERY - 1`` hunks
    on its checkpoint's lines; keeping those lines avoids reading and
    splitting a whole text per read. Bounded by ``limit`` bytes estimated by
    :func:`entry_size` (a list larger than that is used once and not kept).
    Safe from any thread: an entry is a whole list, put once it is built.
    """

    def __init__(self, limit: int = CHECKPOINT_CACHE_BYTES):
        self.limit = limit
        self.held = 0
        self._entries: OrderedDict[int, tuple[list[Any], int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, number: int) -> list[Any] | None:
        """The lines of checkpoint ``number`` (made most recent), or None."""
        with self._lock:
            entry = self._entries.get(number)
            if entry is None:
                return None
            self._entries.move_to_end(number)
            return entry[0]

    def put(self, number: int, lines: list[Any], text_bytes: int) -> list[Any]:
        """Keep ``lines`` of checkpoint ``number`` if they fit (least recent dropped); returns them."""
        size = entry_size(text_bytes, len(lines))
        if size > self.limit:
            return lines
        with self._lock:
            if number not in self._entries:
                self._entries[number] = (lines, size)
                self.held += size
            while self.held > self.limit:
                _, (_, dropped) = self._entries.popitem(last=False)
                self.held -= dropped
        return lines
