"""Old versions as pieces: a checkpoint's lines kept as one blob, hunks applied as spans.

Reading an old version replays up to ``CHECKPOINT_EVERY - 1`` hunks on the
lines of the checkpoint below it (:mod:`commonroom.engine.versions`). For
the HTTP answer the lines are JSON-escaped UTF-8 bytes; joining tens of
thousands of separate line objects (a 1 MB document) would be most of such
a read (each object touched twice, scattered over the heap). Here a checkpoint's
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
from typing import Union

#: Bytes an offset costs in :attr:`EncodedLines.offsets` (``array("q")``).
OFFSET_BYTES = 8

#: One piece: ``(None, lo, hi)`` is lines ``lo..hi-1`` (0-based, end excluded) of
#: the base; ``(lines, lo, hi)`` is ``lines[lo:hi]`` of a hunk.
Piece = tuple[Union[list[bytes], None], int, int]


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
    over the lines; :meth:`join` copies each byte once.
    """

    def __init__(self, lines: int):
        self._pieces: list[Piece] = [(None, 0, lines)] if lines else []
        self._lengths: list[int] = [lines] if lines else []

    def replace(self, start: int, end: int, lines: list[bytes]) -> None:
        """Replace lines ``start..end-1`` (0-based, ``start <= end <= line count``) with ``lines``.

        ``start == end`` inserts before line ``start``. ``lines`` is kept, not copied.
        """
        ends = list(accumulate(self._lengths))
        count = len(self._pieces)
        first = bisect_right(ends, start)  # the piece holding line `start` (count: past the end)
        last = bisect_right(ends, end)  # the piece holding line `end`, the first kept after
        new: list[Piece] = []
        if first < count:
            source, lo, _ = self._pieces[first]
            keep = start - (ends[first - 1] if first else 0)
            if keep:
                new.append((source, lo, lo + keep))
        if lines:
            new.append((lines, 0, len(lines)))
        if last < count:
            source, lo, hi = self._pieces[last]
            cut = lo + end - (ends[last - 1] if last else 0)
            if cut < hi:
                new.append((source, cut, hi))
        self._pieces[first : last + 1] = new
        self._lengths[first : last + 1] = [hi - lo for _, lo, hi in new]

    def join(self, base: EncodedLines, prefix: bytes = b"", suffix: bytes = b"") -> bytes:
        """``prefix``, the document's bytes (base spans and hunk lines), then ``suffix``: one copy."""
        view = memoryview(base.blob)
        offsets = base.offsets
        parts: list[bytes | memoryview] = [prefix]
        for source, lo, hi in self._pieces:
            if source is None:
                parts.append(view[offsets[lo] : offsets[hi]])
            else:
                parts.extend(source[lo:hi])
        parts.append(suffix)
        return b"".join(parts)
