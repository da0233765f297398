"""Segments: a checkpoint and the hunks after it, kept in memory, so an old version is a few replacements.

Checkpoints are spaced by bytes (:mod:`commonroom.engine.versions`: up to
:data:`~commonroom.engine.versions.CHECKPOINT_HUNKS` one-line versions
apart), so version N may be hundreds of hunks past the checkpoint below it.
Replaying them all per read, each hunk a pass over the pieces, would cost
milliseconds; a :class:`Segment` instead keeps, for one checkpoint, the
hunks after it (their text lines, their JSON escapes, their spans) and an
*anchor* every :data:`ANCHOR_EVERY` hunks: the :class:`~commonroom.engine.pieces.Pieces`
of that version, made once. Reading version N copies the anchor at or
below it and applies at most ``ANCHOR_EVERY - 1`` hunks.

:class:`Segments` holds the sorted numbers of the stored checkpoints and
the segments read so far (at most :data:`SEGMENTS_KEPT`, least recent
dropped). It only ever loads committed versions: the engine asks it for a
version at or below the committed head (a version staged in a group commit
is read on the slow path of ``versions``, never kept).
"""

from __future__ import annotations

import json
import threading
from bisect import bisect_right
from collections import OrderedDict
from typing import Any, Callable, Iterable

from .checkpoints import json_lines
from .pieces import Frozen, Pieces

#: Hunks between two anchors of a segment: a read applies at most this many minus one.
ANCHOR_EVERY = 16
#: Most segments kept (each ~1 MB at most for a 1 MB document's 1,024 one-line hunks).
SEGMENTS_KEPT = 128
#: SQL: the numbers of the stored checkpoints (a text ``content`` or a compressed ``packed``).
CHECKPOINTS_SQL = ('SELECT "number" FROM "version" WHERE "content" IS NOT NULL OR "packed" IS NOT NULL '
                   'ORDER BY "number"')
#: SQL: the hunks of versions ``? < number <= ?``, in order.
_HUNKS_SQL = 'SELECT "number", "delta" FROM "version" WHERE "number" > ? AND "number" <= ? ORDER BY "number"'

#: Runs one SQL statement on the calling thread's connection: ``(sql, params) -> rows``.
Query = Callable[[str, tuple], list[tuple]]


class Segment:
    """Checkpoint ``base`` (of ``lines`` lines) and the hunks of versions ``base + 1 .. last``.

    ``texts[i]`` and ``escaped[i]`` are hunk ``i``'s lines (text, JSON
    escapes), the sources :meth:`Pieces.join_text` and :meth:`Pieces.join`
    take; the lists only grow (append under the lock), so what a reader got
    stays valid. Anchors are kept frozen (:meth:`Pieces.freeze`).
    """

    def __init__(self, base: int, lines: int):
        self.base = base
        self.texts: list[tuple[str, ...]] = []
        self.escaped: list[tuple[bytes, ...]] = []
        self._spans: list[tuple[int, int]] = []
        # tuples throughout (of str, bytes, ints): the garbage collector stops tracking them after its
        # first look, so a full collection does not walk 10,000 hunks and their anchors (24 → 9 ms)
        self._anchors: list[Frozen] = [Pieces(lines).freeze()]
        self._lock = threading.Lock()

    @property
    def last(self) -> int:
        """The newest version this segment can make."""
        return self.base + len(self._spans)

    def extend(self, first: int, deltas: Iterable[dict[str, Any]]) -> None:
        """Append the hunks of versions ``first, first + 1, ...`` (those already held are skipped)."""
        with self._lock:
            skip = self.last + 1 - first
            for i, delta in enumerate(deltas):
                if i < skip:
                    continue
                self._spans.append((delta["start"] - 1, delta["end"]))
                self.texts.append(tuple(delta["lines"]))
                self.escaped.append(tuple(json_lines(delta["lines"])))

    def pieces(self, number: int) -> Pieces:
        """The pieces of version ``number`` (``base <= number <= last``): a copy, the caller's to edit.

        Anchors up to ``number`` missing so far are made on the way.
        """
        k = number - self.base
        with self._lock:
            anchors = self._anchors
            a = min(k // ANCHOR_EVERY, len(anchors) - 1)
            pieces = Pieces.thaw(anchors[a])
            for i in range(a * ANCHOR_EVERY, k):
                start, end = self._spans[i]
                pieces.replace(start, end, i, len(self.texts[i]))
                if (i + 1) % ANCHOR_EVERY == 0 and (i + 1) // ANCHOR_EVERY == len(anchors):
                    anchors.append(pieces.freeze())
        return pieces


class Segments:
    """The stored checkpoints' numbers and the segments read so far (bounded; safe from any thread).

    ``query`` runs SQL on the calling thread's connection.
    """

    def __init__(self, query: Query, limit: int = SEGMENTS_KEPT):
        self._query = query
        self.limit = limit
        self._bases: list[int] | None = None
        self._segments: OrderedDict[int, Segment] = OrderedDict()
        self._lock = threading.Lock()

    def base_of(self, number: int) -> int:
        """The newest stored checkpoint at or below version ``number`` (a committed version)."""
        with self._lock:
            if self._bases is None:
                self._bases = [n for (n,) in self._query(CHECKPOINTS_SQL, ())]
            return self._bases[bisect_right(self._bases, number) - 1]

    def bases(self) -> list[int]:
        """Every stored checkpoint's number, oldest first (a copy)."""
        self.base_of(1)
        with self._lock:
            return list(self._bases or [])

    def committed(self, number: int) -> None:
        """Checkpoint ``number`` was committed (call after the commit, before the head moves to it)."""
        with self._lock:
            if self._bases is not None and (not self._bases or self._bases[-1] < number):
                self._bases.append(number)

    def segment(self, base: int, lines: int, number: int) -> Segment:
        """The segment of checkpoint ``base`` (``lines`` lines), holding the hunks up to version ``number``."""
        with self._lock:
            segment = self._segments.get(base)
            if segment is None:
                segment = self._segments[base] = Segment(base, lines)
                while len(self._segments) > self.limit:
                    self._segments.popitem(last=False)
            self._segments.move_to_end(base)
        if segment.last < number:
            first = segment.last + 1
            raws = [raw for _, raw in self._query(_HUNKS_SQL, (segment.last, number))]
            if None in raws:  # a checkpoint among them: the caller's base is wrong (never, for committed versions)
                raise LookupError(f"a checkpoint among the hunks after {base}")
            segment.extend(first, json.loads("[" + ",".join(raws) + "]"))  # one parse, not one a row
        return segment

    def held(self, base: int) -> bool:
        """True when checkpoint ``base``'s segment is kept."""
        with self._lock:
            return base in self._segments

    def reset(self) -> None:
        """Forget everything (the stored versions were rewritten: ``sidecar_compact``)."""
        with self._lock:
            self._bases = None
            self._segments.clear()
