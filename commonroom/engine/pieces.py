"""Old versions as pieces: a checkpoint's lines kept as one blob, hunks applied as spans.

Reading an old version applies the hunks after the checkpoint below it to
that checkpoint's lines, from the nearest anchor of its segment
(:mod:`commonroom.engine.versions`, :mod:`commonroom.engine.segments`). For
the HTTP answer the lines are JSON-escaped UTF-8 bytes; joining the ~25,000
separate line objects of a 1 MB document took most of such a read (each
object is touched twice, scattered over the heap). Here a checkpoint's
escaped lines are one ``bytes`` blob with the offset of each line
(:class:`EncodedLines`), and a version is a short list of pieces
(:class:`Pieces`): spans of that blob and the hunks' own lines. The answer
is one ``join`` of a few hundred buffers at most.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate
from typing import Sequence

#: Bytes an offset costs in :attr:`EncodedLines.offsets` (``array("q")``).
OFFSET_BYTES = 8

#: One piece: ``(source, lo, hi)`` is lines ``lo..hi-1`` (0-based, end excluded) of
#: ``source``: :data:`BASE` (the checkpoint's lines) or the index of a hunk in the
#: list of hunks :meth:`Pieces.join` is given (so one :class:`Pieces` serves the
#: text lines and their JSON escapes alike).
Piece = tuple[int, int, int]
#: The source of a piece of the base (the checkpoint's own lines).
BASE = -1
#: Pieces as :meth:`Pieces.freeze` keeps them: ``(pieces, ends)``, tuples of ints only.
Frozen = tuple[tuple[Piece, ...], tuple[int, ...]]

@dataclass(frozen=True, eq=True)
class EncodedLines:
    """A checkpoint's JSON-escaped lines (:func:`~commonroom.engine.checkpoints.json_line`) as one blob.

    ``blob``: the lines joined (UTF-8 bytes, no quotes); ``offsets``: line
    ``i`` is ``blob[offsets[i]:offsets[i + 1]]`` (``len(offsets)`` is the
    line count plus one, the first offset 0).
    """

    blob: bytes
    offsets: array

    @classmethod
    def of(cls, lines: list[bytes]) -> "EncodedLines":
        """The blob and offsets of ``lines`` (each a line's escaped bytes)."""
        offsets = array("q", [0])
        offsets.extend(accumulate(map(len, lines)))
        return cls(b"".join(lines), offsets)

    def __len__(self) -> int:
        """The number of lines."""
        return len(self.offsets) - 1

    @property
    def size(self) -> int:
        """Bytes held: the blob plus :data:`OFFSET_BYTES` per offset."""
        return len(self.blob) + OFFSET_BYTES * len(self.offsets)


class Pieces:
    """A document as pieces of a base of ``lines`` lines and of hunks' lines, edited by :meth:`replace`.

    Each replacement costs a pass over the pieces (a few per hunk), not
    over the lines; :meth:`join` copies each byte once. A hunk is named by
    its index; :meth:`join` and :meth:`join_text` take the hunks' lines
    (escaped bytes, or text), so one set of pieces (and its :meth:`copy`,
    kept as an anchor by :mod:`commonroom.engine.segments`) serves both.
    """

    __slots__ = ("_pieces", "_ends")

    def __init__(self, lines: int):
        self._pieces: list[Piece] = [(BASE, 0, lines)] if lines else []
        #: ``_ends[i]``: the line count of pieces ``0..i`` (so a line's piece is one bisection)
        self._ends: list[int] = [lines] if lines else []

    def copy(self) -> "Pieces":
        """An independent copy (the pieces are immutable tuples: two list copies)."""
        return Pieces.thaw(self.freeze())

    def freeze(self) -> "Frozen":
        """The pieces as tuples of ints: kept as an anchor, they are untracked by the garbage
        collector after its first look (a full collection does not walk them again)."""
        return tuple(self._pieces), tuple(self._ends)

    @classmethod
    def thaw(cls, frozen: "Frozen") -> "Pieces":
        """Pieces to edit, from :meth:`freeze`'s tuples."""
        twin = cls(0)
        twin._pieces = list(frozen[0])
        twin._ends = list(frozen[1])
        return twin

    def __len__(self) -> int:
        """The number of pieces."""
        return len(self._pieces)

    def replace(self, start: int, end: int, source: int, count: int) -> None:
        """Replace lines ``start..end-1`` (0-based, ``start <= end <= line count``) with hunk ``source``'s ``count`` lines.

        ``start == end`` inserts before line ``start``. Costs a bisection and
        a splice; the pieces after it are renumbered only when the line
        count changes.
        """
        ends = self._ends
        total = len(self._pieces)
        first = bisect_right(ends, start)  # the piece holding line `start` (total: past the end)
        last = bisect_right(ends, end)  # the piece holding line `end`, the first kept after
        before = ends[first - 1] if first else 0
        new: list[Piece] = []
        if first < total:
            kind, lo, _ = self._pieces[first]
            if start > before:
                new.append((kind, lo, lo + start - before))
        if count:
            new.append((source, 0, count))
        if last < total:
            kind, lo, hi = self._pieces[last]
            cut = lo + end - (ends[last - 1] if last else 0)
            if cut < hi:
                new.append((kind, cut, hi))
        self._pieces[first : last + 1] = new
        ends[first : last + 1] = list(accumulate((hi - lo for _, lo, hi in new), initial=before))[1:]
        shift = count - (end - start)
        if shift:
            tail = first + len(new)
            ends[tail:] = [e + shift for e in ends[tail:]]

    def join(self, base: EncodedLines, hunks: Sequence[Sequence[bytes]], prefix: bytes = b"",
             suffix: bytes = b"") -> bytes:
        """``prefix``, the document's bytes (base spans and hunk lines), then ``suffix``: one copy."""
        view = memoryview(base.blob)
        offsets = base.offsets
        parts: list[bytes | memoryview] = [prefix]
        for source, lo, hi in self._pieces:
            if source == BASE:
                parts.append(view[offsets[lo] : offsets[hi]])
            else:
                parts.extend(hunks[source][lo:hi])
        parts.append(suffix)
        return b"".join(parts)

    def join_text(self, base: Sequence[str], hunks: Sequence[Sequence[str]]) -> str:
        """The document's text: the base's lines and the hunks' lines, in order."""
        parts: list[str] = []
        for source, lo, hi in self._pieces:
            parts.extend((base if source == BASE else hunks[source])[lo:hi])
        return "".join(parts)
